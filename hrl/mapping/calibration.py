"""The executor model's constants, fitted from a saved profile: `calibrate(profile)` returns a
`Calibration`, a frozen dataclass of named constants, each fitted on profile rows of its own
(`Calibration.ROWS` names them; each constant's `source` says how many and how well it fits).
Nothing is fitted to validation runs. `Calibration.constants(workload)` evaluates the loops'
constants at a workload for the exploration (`constants.LoopConstants`).

* per-call models `a + b * work`: one call of a primitive on a placement (rows `env`,
  `infer`, `insert`, `sample`, `train`, `update`);
* host loop c0, c_step, c_sgd: the sequential loop's Python and dispatch per iteration, per
  actor step and per SGD step (`loop:host`; their leave-one-out error is kept);
* fused loop (`loop:fused`, timed at several chunk lengths): c0 per iteration and c_call per
  call of it, and either c_step, c_sgd per actor and SGD step beyond its profiled calls, or,
  where that fit says the loop runs faster than its calls timed apart (a step's bookkeeping
  below zero: XLA shares work across one program's calls), its calls' work plus the shares
  it pays of their fixed per-call costs, the intercepts of their models
  (`constants.FusedLoopCosts`, `fit_loop`); no constant that stands for a time is negative;
* process link (latency, bandwidth): a batch through the pipelined executor's queue, both
  ends (`link:process`); host link and cpu-device link: a copy to a host backend, a move
  between XLA CPU devices (`link:host`, `link:cpu-device`);
* thread hand-off: the relaxed dependency's replay thread, per SGD step (`link:thread`);
* overlap share per tree placement: what relaxed dependency hides of the shorter side
  (`overlap:loop`);
* cores: how many cores the pipelined executor's two processes share (`machine.cpus`);
* pipelined wait: what the pipelined executor's two processes lose per iteration waking each
  other (`loop:pipelined`, `hrl.mapping.pipelined_wait`).

Each executor's leave-one-out error on its own loop rows (`executor_errors`) gives each
mapping's uncertainty (`ranking.uncertainty_of`); thread actors have no rows of their own.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import ClassVar

import numpy as np

from hrl.mapping.constants import FusedLoopCosts, LoopConstants
from hrl.mapping.devices import SECOND_CPU
from hrl.mapping.links import Link
from hrl.mapping.model import METRICS, LinearModel, fit_models
from hrl.mapping.pipelined_wait import PipelinedWait, fit_wait
from hrl.mapping.platform import call_key, measured_placement
from hrl.mapping.profile.grids import (
    GPU_CALL,
    GPU_LOOP,
    HANDOFF_CALL,
    LEGACY_OVERLAP_CALL,
    OVERLAP_CALL,
)
from hrl.mapping.profile.rows import ProfileRow, profile_rows
from hrl.mapping.scaling import COLLECTIVE_LINK
from hrl.mapping.workload import KNOWN_ENVS, Workload, env_obs_itemsize, env_shape
from hrl.runtime.cpu_backend import HOST_LOOP_DISPATCH

# How each measured placement sits in the machine.
MEASURED_KINDS = {
    "cpu": dict(kind="jax", resource="cpu", link="local"),
    "cpu-fused": dict(kind="jax", resource="cpu", link="local", exclusive=True),
    "gpu": dict(kind="jax", resource="gpu", link="pcie4x16"),
    "gpu-fused": dict(kind="jax", resource="gpu", link="pcie4x16", exclusive=True),
    # A virtual device sharing the host's cores; its arrays cross to cpu:0 as the host loop
    # moves them (`link:cpu-device` in the profile).
    SECOND_CPU: dict(kind="jax", resource="cpu", link="cpu-device"),
    # The JAX buffer with its tree in plain XLA ops (`replay.impl: xla`) instead of the native
    # kernels, on the learner's device: no transfer, and in the same call queue as train.
    "cpu-xla": dict(kind="jax", resource="cpu", link="local", queue="cpu"),
    "pocl": dict(kind="opencl", resource="cpu", link="host"),
    "rtl": dict(kind="rtl-sim", resource="cpu", link="host"),
}


def models_from_profile(profile: dict, metric: str = "wall") -> dict[tuple, LinearModel]:
    rows = [r for r in profile_rows(profile)
            if not r.call.startswith(("link:", "loop:", "rtl-"))]
    return fit_models(rows, metric=metric)


_LINK_WHAT = {"link:host": "host memory copy",
              "link:process": "process link (queues, pickle)",
              "link:cpu-device": "move between two XLA CPU devices (a host view the call "
                                 "copies in)",
              GPU_CALL: "move of a batch from the CPU into a call on the GPU",
              "link:cpu-collective": "ring step of a psum between 2 virtual CPU devices, "
                                     "rendezvous included"}


def host_link_from_profile(profile: dict, metric: str = "wall",
                           call: str = "link:host") -> Link | None:
    """The host memory copy (`link:host`), the process link of the pipelined executor
    (`link:process`) or a ring step of a collective between virtual CPU devices
    (`link:cpu-collective`) fitted on the profile's rows; None when the profile lacks them."""
    rows = [r for r in profile_rows(profile) if r.call == call]
    if len(rows) < 2:
        return None
    m = fit_models(rows, metric=metric)[(call, "host")]
    if m.slope <= 0:
        return None
    what = _LINK_WHAT.get(call, call)
    return Link(call.removeprefix("link:"), 1.0 / m.slope, m.intercept,
                f"measured {what} ({m.n_points} sizes, median rel. error "
                f"{m.rel_err_median:.0%})")


def cpu_device_link_from_profile(profile: dict | None, metric: str = "wall",
                                call: str = "link:cpu-device") -> Link | None:
    """The move of a batch between two XLA CPU devices (`link:cpu-device`), or from the CPU
    to the GPU (`call` `link:gpu`): fitted on its rows like the host link, or, where the time
    does not grow with the bytes (a jitted call aliases the host memory it is given), their
    median per transfer at unbounded bandwidth; None when the profile has no such rows."""
    fitted = host_link_from_profile(profile, metric, call) if profile else None
    if fitted is not None:
        return fitted
    times = [getattr(r, METRICS[metric]) for r in profile_rows(profile) if r.call == call]
    if not times:
        return None
    return Link(call.removeprefix("link:"), float("inf"), statistics.median(times),
                f"measured {_LINK_WHAT.get(call, call)} ({len(times)} batch sizes; no growth "
                "with the bytes: the median per transfer, no per-byte cost)")


def thread_handoff_from_profile(profile: dict | None, metric: str = "wall") -> float | None:
    """Seconds for one hand-off to a second thread and back (`link:thread`, the relaxed
    dependency's replay thread), the median of the profile's rows; None when it has none."""
    key = METRICS[metric]
    times = [getattr(r, key) for r in profile_rows(profile) if r.call == HANDOFF_CALL]
    return statistics.median(times) if times else None


def replay_overlap_from_profile(profile: dict | None, workload: Workload,
                                metric: str = "wall", executor: str = "sequential",
                                handoff: float = 0.0
                                ) -> dict[str, tuple[float, str]]:
    """Per placement of the tree, the share of the shorter side that relaxed dependency hides
    in `executor`'s loop, at the measured (width, batch) nearest the workload's (on log
    scales), and where it was measured. At most 1: a side cannot hide more than itself (a
    figure above 1 is noise).

    From an `overlap:loop` row (`hrl.mapping.profile.overlap.overlap_rows`): what relaxed saved
    per SGD step in the loop (the pipelined executor's own figure where the row has one, else
    the sequential one's), hand-off put back, over the shorter of the strict loop's two sides:
    (saved + handoff) / min(train, replay). `handoff` is the figure the model takes back off
    per SGD step (`link:thread`, `thread_handoff_from_profile`), so the model's saving at
    the measured point is the measured one. Rows that hold only an overlap (an older
    profile's `overlap:thread`, the thread timed out of the loop) are read as stored, and
    only where a placement has no `overlap:loop` row. No entry for a placement the profile
    did not measure (the model then assumes 1)."""
    if executor not in ("sequential", "pipelined"):
        raise ValueError(f"executor must be 'sequential' or 'pipelined', got {executor!r}")
    cpu = metric == "cpu"
    stored = ["overlap_cpu" if cpu else "overlap"]
    saved_keys = ["saved_cpu_s" if cpu else "saved_s"]
    if executor == "pipelined" and not cpu:
        stored.insert(0, "overlap_pipelined")
        saved_keys.insert(0, "pipelined_saved_s")
    width = max(workload.hidden) if workload.hidden else 1

    def first(r: ProfileRow, fields) -> float | None:  # the first of `fields` the row has
        return next((getattr(r, k) for k in fields if getattr(r, k) is not None), None)

    def measured(r: ProfileRow) -> bool:  # a loop row: what relaxed saved and the two sides
        return (r.train_s is not None and r.replay_s is not None
                and first(r, saved_keys) is not None)

    def share(r: ProfileRow) -> float:
        if not measured(r):
            return float(first(r, stored))
        shorter = min(r.train_s, r.replay_s)
        return (first(r, saved_keys) + handoff) / shorter if shorter > 0 else 0.0

    out: dict[str, tuple[float, str]] = {}
    rows = [r for r in profile_rows(profile)
            if r.call in (OVERLAP_CALL, LEGACY_OVERLAP_CALL)
            and (measured(r) or first(r, stored) is not None)]
    for place in sorted({r.placement for r in rows}):
        here = [r for r in rows if r.placement == place]
        call = OVERLAP_CALL if any(r.call == OVERLAP_CALL for r in here) else \
            LEGACY_OVERLAP_CALL

        def distance(r: ProfileRow) -> float:
            return math.hypot(math.log(r.width / width),
                              math.log(r.batch / workload.batch_size))

        r = min((r for r in here if r.call == call), key=distance)
        out[place] = (min(share(r), 1.0), f"{call} at width {r.width}, batch {r.batch}")
    return out


@dataclasses.dataclass(frozen=True)
class LoopOverhead:
    """Seconds per iteration the runtime's loop spends beyond its primitives:
    c0 + c_step * L + c_sgd * U + c_call / N (L actor steps, U SGD steps per iteration, N
    iterations per call of the loop: `Workload.iterations_per_call`, no c_call where 0), every
    constant >= 0. A fused loop that runs faster than its calls timed apart (`fit_loop`)
    pays instead only the shares `keep_actor`, `keep_sgd` (>= 0; 1 otherwise, and for the
    host loop always) of its calls' fixed per-call costs (their models' intercepts: per actor
    step `fixed_step`, per iteration `fixed_insert`, per SGD step `fixed_sgd`, seconds); a
    share above 1 is bookkeeping beyond them, below 1 what the fused program does not pay
    (`unpaid`)."""

    c0: float = 0.0
    c_step: float = 0.0
    c_sgd: float = 0.0
    source: str = "none measured"
    c_call: float = 0.0
    # Median relative error of the whole iteration at each loop row, predicted from a fit
    # without that row (None: too few rows to tell).
    loo_error: float | None = None
    keep_actor: float = 1.0
    keep_sgd: float = 1.0
    fixed_step: float = 0.0
    fixed_insert: float = 0.0
    fixed_sgd: float = 0.0

    def __post_init__(self):
        for name in ("c0", "c_step", "c_sgd", "c_call", "keep_actor", "keep_sgd",
                     "fixed_step", "fixed_insert", "fixed_sgd"):
            x = getattr(self, name)
            if not math.isfinite(x) or x < 0.0:
                raise ValueError(f"loop constant {name} must be finite and >= 0, got {x!r}")

    @property
    def whole(self) -> bool:
        """Whether the loop pays shares of its calls' fixed costs (`fit_loop`)."""
        return (self.keep_actor, self.keep_sgd) != (1.0, 1.0)

    def _fixed(self, workload: Workload) -> tuple[float, float]:
        """The calls' fixed costs per iteration: (actor side, SGD steps), seconds."""
        return (self.fixed_step * workload.rollout_length + self.fixed_insert,
                self.fixed_sgd * workload.sgd_steps)

    def __call__(self, workload: Workload) -> float:
        """Bookkeeping seconds per iteration (>= 0)."""
        n = workload.iterations_per_call
        actor, sgd = self._fixed(workload)
        return (self.c0 + self.c_step * workload.rollout_length
                + self.c_sgd * workload.sgd_steps + (self.c_call / n if n else 0.0)
                + max(self.keep_actor - 1.0, 0.0) * actor
                + max(self.keep_sgd - 1.0, 0.0) * sgd)

    def unpaid(self, workload: Workload) -> float:
        """Seconds per iteration of the calls' fixed costs the loop does not pay (>= 0)."""
        actor, sgd = self._fixed(workload)
        return max(1.0 - self.keep_actor, 0.0) * actor + max(1.0 - self.keep_sgd, 0.0) * sgd

    def actor_part(self, workload: Workload) -> float:
        """The per-actor-step share, which the actors' side pays when pipelined."""
        return self.c_step * workload.rollout_length

    def fused_at(self, workload: Workload) -> FusedLoopCosts:
        """The fused loop's constants at `workload` (what the exploration reads)."""
        return FusedLoopCosts(self(workload), self.unpaid(workload))


def _loop_rows(profile: dict, kind: str, dispatch: str,
               placement: str = "loop") -> list[ProfileRow]:
    """The profile's rows of loop `kind` measured in CPU `dispatch`, on the CPU (placement
    "loop", or none in a hand-built row) or on the GPU (`GPU_LOOP`). Rows without the
    dispatch field come from profiles taken before there was a choice, all in JAX's default
    (async)."""
    return [r for r in profile_rows(profile) if r.call == f"loop:{kind}"
            and (r.placement or "loop") == placement and (r.dispatch or "async") == dispatch]


def loop_overheads(profile: dict | None, models: dict, metric: str = "wall",
                   dispatch: str = "async") -> dict:
    """Fit LoopOverhead for the host loop and the fused loop from the profile's loop rows:
    measured seconds per iteration minus the profiled primitives' predicted time there. The
    constants and their meaning: c0 per iteration (the loop's Python and dispatch around its
    calls), c_step per actor step (the host loop's transition bookkeeping), c_sgd per SGD step
    (its learner bookkeeping), c_call per call of the fused loop (dispatch of the scan, the
    chunk's outputs) where the rows were timed at several chunk lengths. The host loop's from
    its rows in CPU `dispatch` (async where the profile has none in it); the fused loop's
    always from async rows, the dispatch it runs in. The pipelined executor has no constants
    of its own (`dse`): its rows check it (`executor_errors`)."""
    out = {"host": LoopOverhead(), "fused": LoopOverhead()}
    if not profile:
        return out
    if not _loop_rows(profile, "host", dispatch):
        dispatch = "async"
    # The GPU's fused loop from its own rows where the profile has them (`GPU_LOOP`); else
    # it is charged the CPU's (`constants.LoopConstants.fused_on`).
    gpu = [("gpu-fused", "gpu-fused", GPU_LOOP)] if "gpu-fused" in {p for _, p in models} \
        else []
    for name, place, where in (("host", "cpu", "loop"), ("fused", "cpu-fused", "loop"), *gpu):
        kind = "host" if name == "host" else "fused"
        mode = dispatch if kind == "host" else "async"
        rows = _loop_rows(profile, kind, mode, where)
        if len(rows) < 3:
            continue
        placement = measured_placement(place, models, **MEASURED_KINDS[place])
        fit = fit_loop(rows, placement, kind, metric, models,
                       f"{kind} loop{' on the GPU' if where == GPU_LOOP else ''} at "
                       f"{len(rows)} small settings ({mode} dispatch)")
        if fit is not None:
            out[name] = fit
    return out


def fit_loop(rows: list[ProfileRow], placement, kind: str, metric: str, models: dict,
             what: str) -> LoopOverhead | None:
    """`LoopOverhead` of loop `kind` from its `rows` (whole iterations), with the calls priced
    on `placement` by `models`; None where the fit fails. First as bookkeeping beyond the
    profiled calls, c0 + c_step * L + c_sgd * U (+ c_call / N where the rows were timed at
    several chunk lengths: the fused loop's, `FUSED_CALL_SETTINGS`; else it stays folded into
    c0, as measured). The host loop's constants are kept >= 0 (a term fitted below zero is
    dropped and the rest fitted again). The fused loop's c_step and c_sgd are fitted free: in
    the scan an SGD step's sample, train and update are one program, and the actor step's
    calls another, so XLA shares work the calls timed apart each pay. Where either comes out
    below zero (the loop runs faster than its calls), a bookkeeping time would be negative:
    the loop is then fitted as its calls' work plus the shares keep_actor, keep_sgd >= 0 of
    their fixed per-call costs (the models' intercepts, which is what a fused program can
    save), + c0 (+ c_call / N), every constant >= 0, and its source says so. The two forms
    span the same rows, so they price alike where no share is held at 0."""
    per_call = all(r.iterations for r in rows) and len({r.iterations for r in rows}) > 1
    a, prims, fixed, total = [], [], [], []
    for r in rows:
        w = _loop_row_workload(r)
        counts = w.counts()
        prims.append(sum(counts[c] * placement.seconds(c, w) for c in counts))
        fixed.append(_fixed_costs(models, placement.name, w))
        a.append([1.0, w.rollout_length, w.sgd_steps]
                 + ([1.0 / w.iterations_per_call] if per_call else []))
        total.append(float(getattr(r, METRICS[metric])))
    a, prims, total = map(np.array, (a, prims, total))
    free = (1, 2) if kind == "fused" else ()
    coef = _relative_fit(a, total - prims, total, free)
    if coef is None:
        return None
    # A free term that is zero but for rounding is zero.
    coef[(coef < 0) & (np.abs(coef) * np.abs(a).max(0) < 1e-6 * total.min())] = 0.0
    c0, c_step, c_sgd, *c_call = map(float, coef)
    per_call_text = (lambda c: f", {c * 1e6:.0f} us per call") if per_call else (lambda c: "")
    if min(c_step, c_sgd) >= 0.0:
        loo = _leave_one_out(a, total - prims, total, free)
        return LoopOverhead(c0, c_step, c_sgd, c_call=c_call[0] if c_call else 0.0, source=(
            f"{what} minus its profiled primitives" + per_call_text(c_call[0] if c_call else 0)
            + _loo_text(loo)), loo_error=loo)
    w0 = _loop_row_workload(rows[0])
    step, insert, sgd = _fixed_costs(models, placement.name, dataclasses.replace(
        w0, rollout_length=1, sgd_steps=1.0))
    actor_fixed = np.array([f[0] + f[1] for f in fixed])
    sgd_fixed = np.array([f[2] for f in fixed])
    work = prims - actor_fixed - sgd_fixed
    b = np.column_stack([actor_fixed, sgd_fixed, a[:, 0], *a[:, 3:].T])
    keep = _relative_fit(b, total - work, total)
    if keep is None:
        return None
    loo = _leave_one_out(b, total - work, total)
    keep_actor, keep_sgd, c0, *c_call = map(float, keep)
    return LoopOverhead(c0, c_call=c_call[0] if c_call else 0.0, keep_actor=keep_actor,
                        keep_sgd=keep_sgd, fixed_step=step,
                        fixed_insert=insert, fixed_sgd=sgd, loo_error=loo, source=(
        f"{what}: its calls' work and {keep_actor:.0%} (actor side) and {keep_sgd:.0%} (SGD "
        "steps) of their fixed per-call costs, "
        f"{c0 * 1e6:.1f} us per iteration" + per_call_text(c_call[0] if c_call else 0)
        + f"; as bookkeeping beyond its profiled primitives the fit gave {c_step * 1e6:+.1f} us "
        f"per actor step and {c_sgd * 1e6:+.1f} us per SGD step, a negative time"
        + _loo_text(loo)))


def _fixed_costs(models: dict, place: str, w: Workload) -> tuple[float, float, float]:
    """Seconds per iteration of the fixed per-call costs (the models' intercepts) of the
    calls on `place` at `w`: (env and infer, insert, sample, train and update)."""
    def fixed(call: str) -> float:
        model = models.get((call_key(call, w), place))
        if model is None and call == "insert":  # as `platform.measured_placement` prices it
            model = models.get(("update", place))
        return 0.0 if model is None else float(model.intercept)

    counts = w.counts()
    return (sum(counts[c] * fixed(c) for c in ("env", "infer")), counts["insert"] * fixed(
        "insert"), sum(counts[c] * fixed(c) for c in ("sample", "train", "update")))


def _loo_text(loo: float | None) -> str:
    return f"; leave-one-out error of the iteration {loo:.0%} median" if loo is not None else ""


def pipelined_wait_from_profile(profile: dict | None, models: dict, host: LoopOverhead,
                                metric: str = "wall", dispatch: str = "sync"
                                ) -> PipelinedWait | None:
    """The pipelined executor's wait per iteration (`pipelined_wait`), from the profile's
    `loop:pipelined` rows measured in CPU `dispatch`; None without them (or without the
    host loop's placement)."""
    rows = _loop_rows(profile, "pipelined", dispatch) if profile else []
    if not rows or not any(place == "cpu" for _, place in models):
        return None
    return fit_wait([(_loop_row_workload(r), float(getattr(r, METRICS[metric]))) for r in rows],
                    measured_placement("cpu", models, **MEASURED_KINDS["cpu"]), host,
                    host_link_from_profile(profile, metric, "link:process"),
                    host_cores(profile), f"loop:pipelined rows ({dispatch} dispatch)")


def _relative_fit(a, y, total, free=()):
    """c minimising the squared relative error of each row's iteration time (total =
    primitives + a @ c), so that the small settings count as much as the large ones; c >= 0
    but for the columns in `free` (a term fitted below zero is dropped and the rest fitted
    again: bookkeeping cannot save time, but a fused loop's calls can share work)."""
    scale = 1.0 / np.maximum(total, 1e-12)
    cols = list(range(a.shape[1]))
    while True:
        coef = np.zeros(a.shape[1])
        coef[cols] = np.linalg.lstsq((a * scale[:, None])[:, cols], y * scale, rcond=None)[0]
        negative = [i for i in cols if coef[i] < 0 and i not in free]
        if not negative:
            return coef if np.all(np.isfinite(coef)) else None
        cols = [i for i in cols if i not in negative]


def _leave_one_out(a, y, total, free=()) -> float | None:
    """Median relative error of each row's iteration time predicted from a fit without it."""
    if len(y) <= a.shape[1]:
        return None
    errs = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        coef = _relative_fit(a[keep], y[keep], total[keep], free)
        if coef is None:
            return None
        errs.append(abs(a[i] @ coef - y[i]) / total[i])  # predicted - measured iteration
    return float(np.median(errs))


def executor_errors(profile: dict | None, models: dict, overheads: dict,
                    metric: str = "wall", dispatch: str = "async") -> dict[str, float | None]:
    """How far off each executor's formula is on whole iterations the profiler measured: the
    leave-one-out error of each on its own loop rows (the fused and sequential loops'
    bookkeeping and the pipelined executor's wait are fitted on them). What `ranking` turns
    into each mapping's uncertainty."""
    wait = pipelined_wait_from_profile(profile, models, overheads["host"], metric, dispatch)
    return {"fused": overheads["fused"].loo_error, "sequential": overheads["host"].loo_error,
            "pipelined": wait.loo_error if wait is not None else None}


def host_cores(profile: dict | None) -> int:
    """The profiled machine's cores (the pipelined executor's two processes share them)."""
    return int(((profile or {}).get("machine") or {}).get("cpus") or 1)


def _loop_row_workload(r: ProfileRow | dict) -> Workload:
    """The workload of one of the profiler's loop rows (a ProfileRow or its dict)."""
    r = profile_rows({"rows": [r]})[0]
    env_kind, _, env_id = r.env.partition(":")
    obs, act = KNOWN_ENVS.get(env_id, (1, 1))
    # A conv net's loop row carries its convolutions and head depth (`Target.network_fields`).
    conv = tuple(tuple(int(v) for v in c) for c in r.extra.get("conv_layers", ()))
    head = int(r.extra.get("head_layers", 2))
    return Workload(algo=r.algo, env_kind=env_kind, env_id=env_id, obs_dim=obs,
                    act_dim=act, hidden=(int(r.width),) * head, num_envs=int(r.num_envs),
                    obs_shape=env_shape(r.env) if conv else (), conv_layers=conv,
                    batch_size=int(r.batch), capacity=int(r.capacity),
                    fanout=int(r.fanout), sgd_steps=float(r.sgd),
                    rollout_length=int(r.rollout),
                    iterations_per_call=int(r.iterations or 0),
                    # unknown envs as their sizes above: the default (float32)
                    **({"obs_itemsize": env_obs_itemsize(r.env)} if env_id in KNOWN_ENVS
                       else {}))


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The executor model's constants fitted from one profile (`calibrate`), by name; each
    fitted on the profile rows `ROWS` names for it, and carrying its own `source` (how many
    rows, how well the fit holds)."""

    metric: str  # the profile's times fitted: wall or cpu (`model.METRICS`)
    models: dict  # (call, placement) -> LinearModel
    links: dict  # link name -> Link, measured (what replaces data-sheet figures)
    process_link: Link | None  # the pipelined executor's two processes
    loops: dict  # "host", "fused" (and "gpu-fused") -> LoopOverhead, strict's dispatch
    host_relaxed: LoopOverhead  # the host loop in relaxed dependency's dispatch
    pipelined_wait: PipelinedWait | None
    thread_handoff: float | None  # seconds, one hand-off to a thread and back
    cores: int
    executor_errors: dict  # executor -> leave-one-out error of its iteration (or None)
    profile: dict | None = dataclasses.field(default=None, repr=False)  # for `overlap`

    # The profile rows each constant is fitted on.
    ROWS: ClassVar[dict[str, str]] = {
        "models": "env, infer, insert, sample, train, update (a conv net's infer and "
                  "train: infer:<algo>:conv, train:<algo>:conv)",
        "links": "link:host, link:cpu-collective, link:cpu-device, link:gpu",
        "process_link": "link:process",
        "loops": "loop:host (strict dependency's dispatch), loop:fused (placements loop "
                 "and gpu-loop)",
        "host_relaxed": "loop:host (relaxed dependency's dispatch)",
        "pipelined_wait": "loop:pipelined",
        "thread_handoff": "link:thread",
        "cores": "machine.cpus",
        "executor_errors": "loop:fused, loop:host, loop:pipelined",
        "overlap": "overlap:loop (overlap:thread in older profiles)",
    }

    def overlap(self, workload: Workload, executor: str = "sequential"
                ) -> dict[str, tuple[float, str]]:
        """Per tree placement, the replay thread's share at `workload` in `executor`, and
        the row it is read from (`replay_overlap_from_profile`)."""
        return replay_overlap_from_profile(self.profile, workload, self.metric, executor,
                                           handoff=self.thread_handoff or 0.0)

    def constants(self, workload: Workload) -> LoopConstants:
        """The loops' constants at `workload`, as the exploration reads them."""
        host = self.loops["host"]
        return LoopConstants(
            host=host(workload), host_actor=host.actor_part(workload),
            host_relaxed=self.host_relaxed(workload),
            host_actor_relaxed=self.host_relaxed.actor_part(workload),
            fused=self.loops["fused"].fused_at(workload),
            fused_by_placement={k: v.fused_at(workload) for k, v in self.loops.items()
                                if k not in ("host", "fused")},
            pipelined_wait=self.pipelined_wait.seconds if self.pipelined_wait else 0.0,
            replay_handoff=self.thread_handoff or 0.0,
            replay_overlap={p: eta for p, (eta, _) in self.overlap(workload).items()},
            replay_overlap_pipelined={p: eta for p, (eta, _) in
                                      self.overlap(workload, "pipelined").items()})


def calibrate(profile: dict | None, metric: str = "wall",
              models: dict | None = None) -> Calibration:
    """Every constant of the executor model from `profile` (module docstring); `models`: the
    per-call models where the caller has fitted them already. Without a profile: no
    measured link and loops that cost nothing beyond their calls."""
    if models is None:
        models = models_from_profile(profile, metric) if profile else {}
    links = {}
    if profile:
        for name, link in (("host", host_link_from_profile(profile, metric)),
                           (COLLECTIVE_LINK,
                            host_link_from_profile(profile, metric, "link:cpu-collective"))):
            if link is not None:
                links[name] = link
    between = cpu_device_link_from_profile(profile, metric)
    if between is not None:
        links["cpu-device"] = between
    to_gpu = cpu_device_link_from_profile(profile, metric, GPU_CALL)
    if to_gpu is not None:  # the measured move replaces the bus's data-sheet figures
        links[MEASURED_KINDS["gpu"]["link"]] = to_gpu
    # A host loop pays per call, differently in each CPU dispatch: its bookkeeping is priced
    # with the rows in the dispatch `train.cpu_dispatch: auto` gives it in each mode.
    # (Fitted once per dispatch: both modes run sync today.)
    by_dispatch = {d: loop_overheads(profile, models, metric, dispatch=d)
                   for d in set(HOST_LOOP_DISPATCH.values())}
    loops = by_dispatch[HOST_LOOP_DISPATCH["strict"]]
    strict = HOST_LOOP_DISPATCH["strict"]
    return Calibration(
        metric, models, links,
        host_link_from_profile(profile, metric, "link:process") if profile else None,
        loops, by_dispatch[HOST_LOOP_DISPATCH["relaxed"]]["host"],
        pipelined_wait_from_profile(profile, models, loops["host"], metric, strict),
        thread_handoff_from_profile(profile, metric), host_cores(profile),
        executor_errors(profile, models, loops, metric, dispatch=strict), profile)
