"""Runtime: the five primitives, the fused and host training loops, the `train` driver.

    from hrl.config import load_config
    from hrl.runtime import train
    summary = train(load_config("experiments/configs/dqn_cartpole.yaml"), run_dir="runs/x")
"""

from hrl.replay import HOST_BACKENDS, HostPrioritizedReplay, HostReplayState, make_host_replay
from hrl.runtime.checkpoint import latest_checkpoint, restore_checkpoint, save_checkpoint
from hrl.runtime.data_parallel import DataParallelLoop, make_mesh
from hrl.runtime.loop import (
    ChunkOut,
    FusedLoop,
    HostLoop,
    PipelinedLoop,
    Schedule,
    TrainState,
    init_train_state,
)
from hrl.runtime.pending import PendingUpdates, pending_init, pending_push
from hrl.runtime.primitives import PRIMITIVES, Primitives, beta_at, make_primitives
from hrl.runtime.run import Built, build, initial_state, resume_config, train

__all__ = [
    "HOST_BACKENDS",
    "PRIMITIVES",
    "Built",
    "ChunkOut",
    "DataParallelLoop",
    "FusedLoop",
    "HostLoop",
    "PipelinedLoop",
    "HostPrioritizedReplay",
    "HostReplayState",
    "PendingUpdates",
    "Primitives",
    "Schedule",
    "TrainState",
    "beta_at",
    "build",
    "init_train_state",
    "initial_state",
    "latest_checkpoint",
    "make_host_replay",
    "make_mesh",
    "make_primitives",
    "pending_init",
    "pending_push",
    "restore_checkpoint",
    "resume_config",
    "save_checkpoint",
    "train",
]
