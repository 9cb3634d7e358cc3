"""Runtime: the iteration (`iteration`), the executors that schedule it (`executors`), and the
`train` driver (`run`).

    from hrl.config import load_config
    from hrl.runtime import train
    summary = train(load_config("experiments/configs/dqn_cartpole.yaml"), run_dir="runs/x")
"""

from hrl.runtime.build_run import Built, build, initial_state
from hrl.runtime.checkpoint import latest_checkpoint, restore_checkpoint, save_checkpoint
from hrl.runtime.chunk_log import ChunkEnd
from hrl.runtime.executor_choice import choose_executor
from hrl.runtime.executors import (
    DataParallelLoop,
    Executor,
    FusedLoop,
    PipelinedLoop,
    SequentialLoop,
    make_mesh,
)
from hrl.runtime.iteration import ChunkOut, Schedule, TrainState, init_train_state
from hrl.runtime.pending import PendingUpdates, pending_init, pending_push
from hrl.runtime.primitives import PRIMITIVES, Primitives, beta_at, make_primitives
from hrl.runtime.resume import resume_config
from hrl.runtime.run import train

__all__ = [
    "PRIMITIVES",
    "Built",
    "ChunkEnd",
    "ChunkOut",
    "DataParallelLoop",
    "Executor",
    "FusedLoop",
    "PendingUpdates",
    "PipelinedLoop",
    "Primitives",
    "Schedule",
    "SequentialLoop",
    "TrainState",
    "beta_at",
    "build",
    "choose_executor",
    "init_train_state",
    "initial_state",
    "latest_checkpoint",
    "make_mesh",
    "make_primitives",
    "pending_init",
    "pending_push",
    "restore_checkpoint",
    "resume_config",
    "save_checkpoint",
    "train",
]
