"""Executors: how a run schedules the iteration's two programs (`hrl.runtime.iteration`).

| executor        | class              | schedules                                                |
| --------------- | ------------------ | -------------------------------------------------------- |
| fused           | `FusedLoop`        | the whole iteration as one `lax.scan` on one JAX device  |
| data-parallel   | `DataParallelLoop` | the fused iteration under `shard_map` over D devices     |
| sequential      | `SequentialLoop`   | each primitive its own call, actors then learner         |
| pipelined       | `PipelinedLoop`    | the actors (thread or process) beside the learner        |
| distributed     | `DistributedLoop`  | N actor workers on Ray feeding the learner (Ape-X)       |

Each one runs the same step functions and nothing else, so they give the same results bit for
bit where their schedules agree (tests/runtime). `choose_executor(cfg)` is the one place that
decides which runs a config; `make_executor(name, Parts(...))` (`registry`) builds it. Every
executor satisfies `Executor` (`base`), so the driver never asks which one it holds.
"""

from __future__ import annotations

from hrl.runtime.executor_choice import EXECUTORS, choose_executor, runs_host_loop
from hrl.runtime.executors.base import Executor
from hrl.runtime.executors.data_parallel import AXIS, DataParallelLoop, make_mesh
from hrl.runtime.executors.fused import FusedLoop
from hrl.runtime.executors.host_calls import HostCalls, HostTrain, put_for_call
from hrl.runtime.executors.pipelined import PipelinedLoop
from hrl.runtime.executors.ray_actors import DistributedLoop, start_ray
from hrl.runtime.executors.registry import Parts, executor_class, make_executor
from hrl.runtime.executors.sequential import SequentialLoop

__all__ = [
    "AXIS",
    "EXECUTORS",
    "DataParallelLoop",
    "DistributedLoop",
    "Executor",
    "FusedLoop",
    "HostCalls",
    "HostTrain",
    "Parts",
    "PipelinedLoop",
    "SequentialLoop",
    "choose_executor",
    "executor_class",
    "make_executor",
    "make_mesh",
    "put_for_call",
    "runs_host_loop",
    "start_ray",
]
