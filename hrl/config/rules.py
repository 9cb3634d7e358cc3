"""Rules that tie several config keys together, shared by the schema (which checks them at
load time) and the runtime (which runs by them): the learning schedule a train ratio implies,
and what makes a samples-per-insert limit workable. Pure functions of numbers; O(1).
"""

from __future__ import annotations

import math


def updates_schedule(train_ratio: float, env_steps_per_iter: int) -> tuple[int, int]:
    """(SGD steps per learning round, iterations between rounds) for a train ratio.

    An iteration makes `env_steps_per_iter` env steps. The ratio must come out whole one way or
    the other: 0.25 with 8 env steps -> 2 SGD steps every iteration; 1/64 with 16 env steps ->
    1 SGD step every 4 iterations.
    """
    per_iter = train_ratio * env_steps_per_iter
    if per_iter >= 1.0 - 1e-9:
        rounded = round(per_iter)
        if abs(per_iter - rounded) > 1e-6 * per_iter:
            raise ValueError(
                f"train_ratio {train_ratio} x {env_steps_per_iter} env steps per iteration = "
                f"{per_iter:g} SGD steps, which is not a whole number"
            )
        return int(rounded), 1
    period = 1.0 / per_iter
    rounded = round(period)
    if abs(period - rounded) > 1e-6 * period:
        raise ValueError(
            f"train_ratio {train_ratio} x {env_steps_per_iter} env steps per iteration = "
            f"{per_iter:g} SGD steps: 1/{per_iter:g} must be a whole number of iterations"
        )
    return 1, int(rounded)


def _bad(key: str, what: str, value) -> ValueError:
    return ValueError(f"config key '{key}': {what}, got {value!r}")


def check_limit(samples_per_insert: float, tolerance: float, min_size: int) -> None:
    """ValueError naming the key, the value and the range for an impossible setting."""
    if not (isinstance(samples_per_insert, int | float) and math.isfinite(samples_per_insert)
            and samples_per_insert > 0):
        raise _bad("train.samples_per_insert", "must be a finite number > 0 (or null: off)",
                   samples_per_insert)
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance >= 0):
        raise _bad("train.samples_per_insert_tolerance", "must be a finite number >= 0",
                   tolerance)
    if not (isinstance(min_size, int) and min_size >= 0):
        raise _bad("train.learning_starts", "must be an int >= 0", min_size)


def round_samples(batch_size: int, updates_per_round: int) -> int:
    """Samples of one learning round (U SGD steps of B): the smallest workable tolerance."""
    return batch_size * updates_per_round


def check_tolerance(tolerance: float, batch_size: int, updates_per_round: int) -> None:
    """A tolerance below one learning round's samples would stop both sides of a pipelined
    run for good: the learner samples a whole round at once, after the round's inserts."""
    need = round_samples(batch_size, updates_per_round)
    if tolerance < need:
        raise _bad("train.samples_per_insert_tolerance",
                   f"must be >= one learning round's samples, train.batch_size x SGD steps per "
                   f"round = {batch_size} x {updates_per_round} = {need} (below that the "
                   "learner and the limited actors wait on each other)", tolerance)
