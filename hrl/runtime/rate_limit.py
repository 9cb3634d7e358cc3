"""The samples-per-insert rate limiter: the data producer's throughput control.

Reverb's `SampleToInsertRatio`, counted per transition: an *insert* is one transition written
to the replay (an actor's env step, once its n-step window is full), a *sample* is one
transition drawn for an SGD step (an SGD step samples `batch_size` of them). With target ratio
`r = samples_per_insert`, the limiter's *error* after I inserts and S samples is

    error = r * (I - min_size) - S          (min_size: train.learning_starts)

i.e. how many samples the learner owes the data (positive: the actors are ahead; negative:
the learner is). The limiter keeps it in [-tolerance, +tolerance]:

* an insert of n transitions may happen when the buffer would still hold <= min_size of them
  (before learning starts nothing is limited), or when error + r * n <= tolerance;
* a sample of n transitions may happen when the buffer holds >= min_size transitions and
  error - n >= -tolerance.

Over a run, S / (I - min_size) (`live_ratio`) therefore tends to r, at most
tolerance / (I - min_size) away.

In this kit the iteration fixes the ratio: U SGD steps of B samples every `period` iterations
of L*M inserts, so r = U*B / (period*L*M) = train_ratio * batch_size, and with inserts and
samples taken in the iteration's order the error stays in [-U*B, U*B) by construction (the
first learning round comes within a period of learning_starts; each round pays off exactly
the period's inserts). `fused` and `sequential` are that order. The `pipelined` executor lets
the actors run ahead of the learner, and there the limiter blocks the actors (see
`hrl.runtime.executors.actors`); the learner cannot run ahead, since it takes the actors'
iterations in order. A tolerance below U*B would block both sides for good, so it is refused.

The settings are checked once, where the config is loaded (`hrl.config.schema`, by the rules
of `hrl.config.rules`: `check_limit`, r = train_ratio * batch_size, `check_tolerance`), so a
`RateLimit` from `rate_limit_of` is workable; one built by hand is taken as given.

State is data: `LimiterState` (two counters) and `RateLimit` (the static settings); the
functions are pure, `f(limit, state, n) -> (state, ok)`.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

__all__ = [
    "LimiterState",
    "RateLimit",
    "can_insert",
    "error",
    "insert",
    "live_ratio",
    "sample",
]


class LimiterState(NamedTuple):
    """Transitions inserted and sampled so far (the whole run's, not a chunk's)."""

    inserts: int = 0
    samples: int = 0


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """A samples-per-insert target with its tolerance (both in transitions)."""

    samples_per_insert: float  # r: samples per inserted transition
    tolerance: float  # the error band, in samples (Reverb's error_buffer)
    min_size: int  # no sample before the buffer holds this many (train.learning_starts)


def error(limit: RateLimit, state: LimiterState) -> float:
    """r * (inserts - min_size) - samples: the samples the learner owes the data."""
    return limit.samples_per_insert * (state.inserts - limit.min_size) - state.samples


def can_insert(limit: RateLimit, state: LimiterState, n: int) -> bool:
    """May n more transitions be inserted now?"""
    if n < 0:
        raise ValueError(f"rate limiter: inserts must be >= 0, got {n}")
    if state.inserts + n <= limit.min_size:
        return True
    return error(limit, state) + limit.samples_per_insert * n <= limit.tolerance


def can_sample(limit: RateLimit, state: LimiterState, n: int) -> bool:
    """May n more transitions be sampled now?"""
    if n < 0:
        raise ValueError(f"rate limiter: samples must be >= 0, got {n}")
    if state.inserts < limit.min_size:
        return False
    return error(limit, state) - n >= -limit.tolerance


def insert(limit: RateLimit, state: LimiterState, n: int) -> tuple[LimiterState, bool]:
    """Record n inserts if `can_insert`; (new state, whether they were recorded)."""
    if not can_insert(limit, state, n):
        return state, False
    return state._replace(inserts=state.inserts + n), True


def sample(limit: RateLimit, state: LimiterState, n: int) -> tuple[LimiterState, bool]:
    """Record n samples if `can_sample`; (new state, whether they were recorded)."""
    if not can_sample(limit, state, n):
        return state, False
    return state._replace(samples=state.samples + n), True


def live_ratio(min_size: int, state: LimiterState) -> float | None:
    """Samples per insert since learning could start, S / (I - min_size): the ratio the
    limiter holds. None before the buffer passes min_size."""
    past = state.inserts - min_size
    return state.samples / past if past > 0 else None


def rate_limit_of(train_cfg, updates_per_round: int) -> RateLimit | None:
    """The run's samples-per-insert limiter from its `train` config section (None: off);
    `updates_per_round`: the schedule's, which sets the default tolerance."""
    t = train_cfg
    if t.samples_per_insert is None:
        return None
    return RateLimit(t.samples_per_insert, t.rate_limit_tolerance(updates_per_round),
                     t.learning_starts)
