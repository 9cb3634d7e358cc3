"""The executor protocol (`Executor`): what the `train` driver asks of every executor, and the
answers of an executor whose `TrainState` holds the whole run (`StateHoldsAll`).

The driver never asks which executor it holds: each one answers for itself through these
methods (its initial state, what a checkpoint keeps beside the state, its extra log fields,
its progress note, its summary fields), and the class attributes say what the driver may plan
from the config alone, before anything is built (`registry.executor_class`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hrl.runtime.iteration import ChunkOut, Schedule, TrainState

# init_one(seed, actor_index) -> TrainState: `init_train_state` with its static arguments bound.
InitOne = Callable[[Any, Any], TrainState]


class Executor(Protocol):
    """What the `train` driver needs from an executor."""

    name: str  # one of executor_choice.EXECUTORS
    runs_seeds_at_once: bool  # `run_seeds` runs a stack of seeds as one program
    fused: bool  # the whole iteration is one compiled program
    inserts_in_order: bool  # transitions reach the replay in the actors' order, M per env step
    spans_processes: bool  # may run over the processes `hrl launch` starts

    def init_state(self, init_one: InitOne, seed) -> TrainState:
        """The fresh state: `seed` an int (one run) or a 1-D array of seeds (a stack of runs,
        for `run_seeds`)."""

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations from `state`: the state after them and their report."""

    def checkpoint_extras(self, iteration: int) -> dict:
        """What a checkpoint at `iteration` keeps beside the `TrainState`: `host_state` (host
        envs' simulators) and `actors_state` (`actors_state`), each bytes or None."""

    def restore(self, state: TrainState, checkpoint: Path) -> TrainState:
        """A resume: put back what `checkpoint_extras` saved into `checkpoint` and return the
        restored `state` ready to run (host buffers made writable, their trees rebuilt)."""

    def log_fields(self) -> dict[str, float]:
        """The executor's extra columns of the last chunk's metrics row ({} for most)."""

    def samples_per_insert_note(self, live: float | None) -> str:
        """The progress bar's samples-per-insert text; `live`: the run's ratio so far
        (`rate_limit.live_ratio`), None before learning starts."""

    def summary_fields(self, state: TrainState) -> dict:
        """The executor's extra keys of summary.json: primitive seconds, replica checks."""

    def primitive_seconds(self) -> dict[str, float] | None:
        """Seconds spent in each primitive so far (None where they are not timed apart)."""

    def actors_state(self, iteration: int) -> bytes | None:
        """Actors' state the `TrainState` after `iteration` does not hold, for its checkpoint
        (the distributed executor's workers); None: the state holds it all."""

    def load_actors_state(self, blob: bytes | None, iteration: int) -> None:
        """Take what `actors_state` gave for a checkpoint at `iteration` (a resume)."""

    def close(self) -> None:
        """Release threads and processes; a later `run` starts them again."""


def fixed_samples_per_insert(schedule: Schedule) -> float:
    """The samples per insert the iteration makes by construction: U SGD steps of B samples
    every `period` iterations of L*M inserts (train_ratio x batch_size)."""
    s = schedule
    return s.updates_per_round * s.batch_size / (s.period * s.inserts_per_iter)


class StateHoldsAll:
    """The protocol's answers for an executor whose `TrainState` holds every actor's state and
    that keeps the iteration's order of inserts and samples (the fused and sequential ones)."""

    schedule: Schedule

    def checkpoint_extras(self, iteration: int) -> dict:
        return {"host_state": None, "actors_state": self.actors_state(iteration)}

    def restore(self, state: TrainState, checkpoint: Path) -> TrainState:
        return state

    def log_fields(self) -> dict[str, float]:
        return {}

    def samples_per_insert_note(self, live: float | None) -> str:
        return f"{fixed_samples_per_insert(self.schedule):g} samples/insert (fixed)"

    def summary_fields(self, state: TrainState) -> dict:
        seconds = self.primitive_seconds()
        if seconds is None:
            return {}
        return {"primitive_seconds": {k: round(v, 4) for k, v in seconds.items()}}

    def primitive_seconds(self) -> dict[str, float] | None:
        return None

    def actors_state(self, iteration: int) -> bytes | None:
        """None: the `TrainState` holds every actor's state (see `Executor`)."""
        return None

    def load_actors_state(self, blob: bytes | None, iteration: int) -> None:
        """Nothing to take: the `TrainState` holds every actor's state."""
