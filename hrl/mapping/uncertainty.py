"""How sure the mapping model is of a prediction: each mapping's relative uncertainty.

A prediction is trusted as far as its executor's formula has matched whole iterations the
profiler measured (the loop rows, out of sample), and less the further the setting lies
outside the sizes the profile measured, past a margin the held-out runs vouch for.
`--mapping auto` leaves the config's own mapping only for a predicted gain beyond the two
uncertainties combined in quadrature (`ranking.Ranking.pick`, `ranking.combined_uncertainty`).
"""

from __future__ import annotations

import math

from hrl.mapping.profile.grids import GPU_LOOP
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.workload import CALLS, Workload

# The uncertainty of an executor whose whole iterations the profile never measured (no loop
# rows: an older profile, the data-parallel loop): as large as the prediction itself, so that
# `--mapping auto` does not leave the default for it on the model's word alone.
UNKNOWN_UNCERTAINTY = 1.0
# Where each executor's loop rows were measured: calls placed elsewhere (a tree on another
# backend) add their own models' leave-one-out error to the executor's.
_LOOP_PLACEMENT = {"fused": "cpu-fused", "sequential": "cpu", "pipelined": "cpu"}


# The workload sizes whose profiled range bounds where the models interpolate, and the calls
# whose profile rows vary each (the other calls' rows hold it at one value).
BOX_KEYS = {"num_envs": ("env", "infer"), "batch": ("sample", "train", "update"),
            "width": ("infer", "train")}


def profiled_box(profile: dict | None) -> dict[str, tuple[float, float]]:
    """Per key of BOX_KEYS, the lowest and highest value among the profile's rows of the
    calls that vary it (where the per-call models were fitted)."""
    rows = [r for r in profile_rows(profile) if r.placement not in ("loop", GPU_LOOP, "host")]
    out = {}
    for key, calls in BOX_KEYS.items():
        values = [float(getattr(r, key)) for r in rows
                  if r.call.split(":")[0] in calls and getattr(r, key)]
        if values:
            out[key] = (min(values), max(values))
    return out


def doublings_outside(workload: Workload, box: dict) -> float:
    """How far the workload lies outside the profiled box: the largest number of doublings
    (log2) by which any of its sizes exceeds the box's range; 0 inside."""
    sizes = {"num_envs": workload.num_envs, "batch": workload.batch_size,
             "width": max(workload.hidden) if workload.hidden else 1}
    far = 0.0
    for key, (lo, hi) in box.items():
        x = float(sizes[key])
        far = max(far, math.log2(x / hi) if x > hi else math.log2(lo / x) if x < lo else 0.0)
    return far


# How far outside the profiled box a prediction is trusted as inside it, in doublings. The
# held-out draws of experiments/mapping/heldout.py (seeds 3-6) reach one doubling past the
# profiled M on either side, and their errors there were no larger than inside
# (experiments/mapping/heldout_distance.py); further out nothing has been measured.
TRUSTED_DOUBLINGS = 1.0


def uncertainty_of(result, executor: str, mapping: dict) -> float:
    """Relative uncertainty of a mapping's predicted iteration on `result` (a `plan.Plan`):
    (executor error + tree error) * (1 + doublings beyond TRUSTED_DOUBLINGS), where the
    executor error is its formula's out-of-sample error on the profile's loop rows
    (`calibration.executor_errors`; UNKNOWN_UNCERTAINTY without rows), the tree error the largest
    leave-one-out error of the models of calls placed away from where those rows ran, and the
    doublings how far the workload's M, batch or width lies outside the profiled range
    (`doublings_outside`). Within TRUSTED_DOUBLINGS of the range the error measured inside
    it stands (held-out runs showed no more there); beyond, it is taken to grow in proportion
    to the distance, one more time its size per further doubling."""
    err = result.executor_errors.get(executor)
    base = UNKNOWN_UNCERTAINTY if err is None else err
    home = _LOOP_PLACEMENT.get(executor)
    away = [m.loo_err_median for (call, place), m in result.models.items()
            if place != home and place in set(mapping.values()) and call.split(":")[0] in CALLS
            and m.loo_err_median == m.loo_err_median]  # NaN: too few points to tell
    beyond = max(0.0, doublings_outside(result.workload, result.box) - TRUSTED_DOUBLINGS)
    return (base + max(away, default=0.0)) * (1.0 + beyond)
