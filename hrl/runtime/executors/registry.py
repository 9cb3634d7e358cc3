"""The executor registry: every executor built the same way, from its name and one `Parts`.

`executor_class(name)` answers what the driver plans from the config alone (does it run seeds
at once? does it insert in the actors' order?) before anything is built; `make_executor(name,
parts)` builds it through the class's own `from_parts`, so adding an executor is one class and
one row here, and the builder never asks which one it holds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jax.sharding import Mesh

from hrl.config import RunConfig
from hrl.runtime.executor_choice import EXECUTORS
from hrl.runtime.executors.base import Executor
from hrl.runtime.executors.data_parallel import DataParallelLoop
from hrl.runtime.executors.fused import FusedLoop
from hrl.runtime.executors.pipelined import PipelinedLoop
from hrl.runtime.executors.ray_actors import DistributedLoop
from hrl.runtime.executors.sequential import SequentialLoop
from hrl.runtime.iteration import Schedule
from hrl.runtime.primitives import Primitives


@dataclasses.dataclass(frozen=True)
class Parts:
    """What an executor is built from: the run's static pieces (`build_run.build`).
    `placement`: primitive -> `jax.Device` (resolved); `mesh`: the data-parallel mesh, None
    on one device."""

    cfg: RunConfig
    env: Any
    agent: Any
    replay: Any
    schedule: Schedule
    prims: Primitives
    placement: dict
    mesh: Mesh | None
    example_transition: dict


# executor_choice.EXECUTORS -> its class, row for row.
EXECUTOR_CLASSES: dict[str, type] = {
    "fused": FusedLoop,
    "data-parallel": DataParallelLoop,
    "sequential": SequentialLoop,
    "pipelined": PipelinedLoop,
    "distributed": DistributedLoop,
}


def executor_class(name: str) -> type:
    """The class of executor `name` (one of `EXECUTORS`); its class attributes say what the
    driver may plan before building it."""
    if name not in EXECUTOR_CLASSES:
        raise ValueError(f"config key 'train.executor': one of {EXECUTORS}, got {name!r}")
    return EXECUTOR_CLASSES[name]


def make_executor(name: str, parts: Parts) -> Executor:
    """Executor `name` built from the run's `parts` (each class reads what it needs)."""
    return executor_class(name).from_parts(parts)
