"""Executors: how a run schedules the iteration's two programs (`hrl.runtime.iteration`).

| executor        | class              | schedules                                                |
| --------------- | ------------------ | -------------------------------------------------------- |
| fused           | `FusedLoop`        | the whole iteration as one `lax.scan` on one JAX device  |
| data-parallel   | `DataParallelLoop` | the fused iteration under `shard_map` over D devices     |
| sequential      | `HostLoop`         | each primitive its own call, actors then learner         |
| pipelined       | `PipelinedLoop`    | the actors (thread or process) beside the learner        |
| distributed     | `DistributedLoop`  | N actor workers on Ray feeding the learner (Ape-X)       |

Each one runs the same step functions and nothing else, so they give the same results bit for
bit where their schedules agree (tests/runtime). `choose_executor(cfg)` is the one place that
decides which runs a config. Every executor satisfies `Executor`.
"""

from __future__ import annotations

from typing import Protocol

from hrl.runtime.executor_choice import EXECUTORS, choose_executor, runs_host_loop
from hrl.runtime.executors.data_parallel import AXIS, DataParallelLoop, make_mesh
from hrl.runtime.executors.fused import FusedLoop
from hrl.runtime.executors.host_calls import HostCalls, HostTrain, put_for_call
from hrl.runtime.executors.pipelined import PipelinedLoop
from hrl.runtime.executors.ray_actors import DistributedLoop, start_ray
from hrl.runtime.executors.sequential import HostLoop
from hrl.runtime.iteration import ChunkOut, TrainState


class Executor(Protocol):
    """What the `train` driver needs from an executor."""

    name: str  # one of EXECUTORS
    runs_seeds_at_once: bool  # `run_seeds` runs a stack of seeds as one program

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations from `state`: the state after them and their report."""

    def primitive_seconds(self) -> dict[str, float] | None:
        """Seconds spent in each primitive so far (None where they are not timed apart)."""

    def actors_state(self, iteration: int) -> bytes | None:
        """Actors' state the `TrainState` after `iteration` does not hold, for its checkpoint
        (the distributed executor's workers); None: the state holds it all."""

    def load_actors_state(self, blob: bytes | None, iteration: int) -> None:
        """Take what `actors_state` gave for a checkpoint at `iteration` (a resume)."""

    def close(self) -> None:
        """Release threads and processes; a later `run` starts them again."""


__all__ = [
    "AXIS",
    "EXECUTORS",
    "DataParallelLoop",
    "DistributedLoop",
    "Executor",
    "FusedLoop",
    "HostCalls",
    "HostLoop",
    "HostTrain",
    "PipelinedLoop",
    "choose_executor",
    "make_mesh",
    "put_for_call",
    "runs_host_loop",
    "start_ray",
]
