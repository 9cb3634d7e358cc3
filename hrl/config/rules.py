"""Rules that tie several config keys together, shared by the schema (which checks them at
load time) and the runtime (which runs by them): the learning schedule a train ratio implies,
what makes a samples-per-insert limit workable, and where the replay keeps next_obs. Pure
functions of numbers and names; O(1).
"""

from __future__ import annotations

import math

# Executors whose actors' transitions reach the replay in the actors' own order, M per env
# step (`replay.next_obs: auto` stores next_obs once under them; see `resolve_next_obs`).
IN_ORDER_EXECUTORS = ("fused", "sequential", "pipelined")


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


def resolve_next_obs(replay, *, devices: int, num_envs: int | None, executor: str | None,
                     rollout_length: int | None = None) -> str:
    """Where a run's replay keeps next_obs: "stored" (in each row) or "next_slot" (rebuilt
    from the row inserted n_step * num_envs later, `hrl.replay.next_slot`). `replay`: the
    config's `ReplayConfig` (read: next_obs, backend, capacity, n_step). The one place
    `replay.next_obs` is resolved; `make_replay` builds what it says, the summary reports it.

    An explicit "stored" or "next_slot" is returned as it is (`make_replay` refuses a
    next_slot it cannot build, naming the key). "auto" is "next_slot" when all of these hold,
    else "stored":

    * `replay.backend` jax: the host, OpenCL and RTL buffers keep next_obs in their rows.
    * `devices` (train.devices) 1: the sharded replay keeps it in its rows.
    * `executor` one of IN_ORDER_EXECUTORS (fused, sequential, pipelined): each inserts the
      actors' M transitions per env step in the actors' order (the pipelined learner takes
      the actors' iterations in order), so an item's successor is `stride` = n_step * M
      inserts later and only episode ends need a side entry. Not the distributed executor:
      its Ray workers' batches interleave, so nearly every item's successor would differ and
      need a side entry; the result would stay exact only while the side store held them
      all. Not data-parallel (devices > 1). None (a buffer built outside an hrl executor,
      whose insert order is unknown): stored.
    * `num_envs` and `rollout_length` given (an add inserts M = num_envs * rollout_length
      items) and the buffer takes such an add: capacity >= M + n_step * num_envs (the stride
      fits in the ring beside the add) and M <= the side store's entries (next_obs_side *
      capacity), as `NextSlotReplay.add` needs.

    `next_slot` then samples what `stored` samples, bit for bit, while its side store
    (`replay.next_obs_side`) holds every episode end in the buffer; an overflow drops items
    and the run says so. O(1)."""
    if replay.next_obs != "auto":
        return replay.next_obs
    known = all(isinstance(x, int) and x >= 1 for x in (num_envs, rollout_length))
    per_add = num_envs * rollout_length if known else 0
    fits = (known and replay.capacity >= per_add + replay.n_step * num_envs
            and per_add <= max(1, int(replay.next_obs_side * replay.capacity)))
    ok = (replay.backend == "jax" and devices == 1 and executor in IN_ORDER_EXECUTORS
          and fits)
    return "next_slot" if ok else "stored"
