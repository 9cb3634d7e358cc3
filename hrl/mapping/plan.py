"""From a saved profile and a device list to placements, an exploration and a chosen mapping.

    profile = load_profile("runs/profile-cartpole")
    result = plan(cfg, profile, devices=["cpu", "pocl", "gpu", "fpga:u250"])
    result.exploration.best("strict")

Device names for `--devices`:
* `cpu`  -- JAX on the host CPU: the host loop (`cpu`) and the fused loop (`cpu-fused`);
* `gpu`  -- JAX on a GPU: measured if the profile holds GPU rows, else modelled from
  `specs/gpu_h100_sxm.yaml` (public specs + assumptions, labelled as such everywhere);
* `cpu:1` -- the JAX replay tree alone on a second XLA CPU device (`placement.sample/update:
  cpu:1`; the learner stays on cpu:0), measured where the profile has it (the older
  spelling `cpu1` is read as `cpu:1`);
* `pocl`, `opencl<i>` -- the OpenCL replay backend on that device (measured);
* `rtl`  -- the RTL replay manager in simulation (measured, if the profile has it);
* `fpga:<board>` -- the RMM and MLP learner modelled on a board (u200, u250, u280) from the
  RTL's cycle counts (if profiled) and the board's resources;
* `cpu*N`, `gpu*N` -- N devices of that kind (virtual CPU devices sharing the machine's cores,
  or GPUs): the placements of one, plus the data-parallel candidates of the fused loop on
  D = 1..N of them (`hrl.mapping.parallel`, `Plan.data_parallel`).

The executor model's constants: each is read from profile rows of its own, named here, and
nothing is fitted to validation runs.

* per-call models `a + b * work`: one call of a primitive on a placement (rows `env`,
  `infer`, `insert`, `sample`, `train`, `update`);
* host loop c0, c_step, c_sgd: the sequential loop's Python and dispatch per iteration, per
  actor step and per SGD step (`loop:host`; their leave-one-out error is kept);
* fused loop c0, c_step, c_sgd, c_call: the same inside the fused scan (c_step and c_sgd
  may be negative: what fusing an actor step's or an SGD step's calls saves against timing
  them apart), and per call of it (`loop:fused`, timed at several chunk lengths);
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
from pathlib import Path

import numpy as np

from hrl.mapping import dse, parallel
from hrl.mapping import fpga as fpga_model
from hrl.mapping.devices import SECOND_CPU, normalize_placement
from hrl.mapping.links import Link
from hrl.mapping.model import METRICS, LinearModel, fit_models
from hrl.mapping.pipelined_wait import PipelinedWait, fit_wait
from hrl.mapping.platform import (
    GpuSpec,
    Placement,
    default_gpu_spec,
    fpga_placement,
    gpu_spec_placement,
    measured_placement,
)
from hrl.mapping.profile.grids import (
    GPU_CALL,
    GPU_LOOP,
    HANDOFF_CALL,
    LEGACY_OVERLAP_CALL,
    OVERLAP_CALL,
)
from hrl.mapping.profile.rows import ProfileRow, profile_rows
from hrl.mapping.rtl_tables import logic_from_profile, rmm_timing_from_profile
from hrl.mapping.scaling import COLLECTIVE_LINK, UNMEASURED_RENDEZVOUS
from hrl.mapping.uncertainty import profiled_box
from hrl.mapping.workload import CALLS, KNOWN_ENVS, Workload
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


@dataclasses.dataclass
class Plan:
    workload: Workload
    placements: list[Placement]
    models: dict[tuple, LinearModel]
    links: dict[str, Link]
    exploration: dse.Exploration
    notes: list[str]
    rmm_timing: fpga_model.RmmTiming
    overheads: dict
    # Data-parallel candidates per dependency mode (empty without a `KIND*N` device).
    data_parallel: dict = dataclasses.field(default_factory=dict)
    device_counts: dict = dataclasses.field(default_factory=dict)
    scaling: str = "weak"
    cores: int = 1
    # Per executor (fused, sequential, pipelined): the median relative error of its predicted
    # iteration on the profile's own loop rows, out of sample (`executor_errors`); None where
    # the profile has no such rows.
    executor_errors: dict = dataclasses.field(default_factory=dict)
    # Per workload size (num_envs, batch, width): the (lowest, highest) the profile measured.
    box: dict = dataclasses.field(default_factory=dict)

    def ranked(self, mode: str, k: int = 10) -> list[tuple[str, float, object]]:
        """The top-k single-device mappings and every data-parallel candidate with D > 1,
        best first by predicted env steps per second: (label, env steps/s, row or
        candidate)."""
        e = self.exploration
        w = self.workload
        times = e.times(mode)
        out = [(dse.format_mapping(e.mapping(r)), w.num_envs * w.rollout_length / times[r], r)
               for r in e.top(mode, k)]
        out += [(c.label, c.env_steps_per_s, c) for c in self.data_parallel.get(mode, [])
                if c.devices > 1]
        return sorted(out, key=lambda x: -x[1])


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
    iterations per call of the loop: `Workload.iterations_per_call`, no c_call where 0)."""

    c0: float = 0.0
    c_step: float = 0.0
    c_sgd: float = 0.0
    source: str = "none measured"
    c_call: float = 0.0
    # Median relative error of the whole iteration at each loop row, predicted from a fit
    # without that row (None: too few rows to tell).
    loo_error: float | None = None

    def __call__(self, workload: Workload) -> float:
        n = workload.iterations_per_call
        return (self.c0 + self.c_step * workload.rollout_length
                + self.c_sgd * workload.sgd_steps + (self.c_call / n if n else 0.0))

    def actor_part(self, workload: Workload) -> float:
        """The per-actor-step share, which the actors' side pays when pipelined."""
        return self.c_step * workload.rollout_length


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
    # it is charged the CPU's (`dse.build_problem`).
    gpu = [("gpu-fused", "gpu-fused", GPU_LOOP)] if "gpu-fused" in {p for _, p in models} \
        else []
    for name, place, where in (("host", "cpu", "loop"), ("fused", "cpu-fused", "loop"), *gpu):
        kind = "host" if name == "host" else "fused"
        mode = dispatch if kind == "host" else "async"
        rows = _loop_rows(profile, kind, mode, where)
        if len(rows) < 3:
            continue
        placement = measured_placement(place, models, **MEASURED_KINDS[place])
        # A cost per call of the loop where the rows were timed at several chunk lengths (the
        # fused loop's, `FUSED_CALL_SETTINGS`); else it stays folded into c0, as measured.
        per_call = (all(r.iterations for r in rows)
                    and len({r.iterations for r in rows}) > 1)
        a, y, total = [], [], []
        for r in rows:
            w = _loop_row_workload(r)
            counts = w.counts()
            prims = sum(counts[c] * placement.seconds(c, w) for c in counts)
            a.append([1.0, w.rollout_length, w.sgd_steps]
                     + ([1.0 / w.iterations_per_call] if per_call else []))
            total.append(float(getattr(r, METRICS[metric])))
            y.append(total[-1] - prims)
        # In the fused scan an SGD step's sample, train and update are one program, and the
        # actor step's calls another: XLA shares work the primitives timed apart each pay,
        # so the fused loop's c_step and c_sgd may come out below zero.
        free = (1, 2) if kind == "fused" else ()
        coef = _relative_fit(np.array(a), np.array(y), np.array(total), free)
        if coef is None:
            continue
        loo = _leave_one_out(np.array(a), np.array(y), np.array(total), free)
        c0, c_step, c_sgd, *c_call = map(float, coef)
        out[name] = LoopOverhead(c0, c_step, c_sgd, c_call=c_call[0] if c_call else 0.0, source=(
            f"{kind} loop{' on the GPU' if where == GPU_LOOP else ''} at {len(rows)} small "
            f"settings ({mode} dispatch) minus its profiled primitives"
            + (f", {c_call[0] * 1e6:.0f} us per call" if c_call else "")
            + (f"; leave-one-out error of the iteration {loo:.0%} median" if loo is not None
               else "")), loo_error=loo)
    return out


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
    return Workload(algo=r.algo, env_kind=env_kind, env_id=env_id, obs_dim=obs,
                    act_dim=act, hidden=(int(r.width),) * 2, num_envs=int(r.num_envs),
                    batch_size=int(r.batch), capacity=int(r.capacity),
                    fanout=int(r.fanout), sgd_steps=float(r.sgd),
                    rollout_length=int(r.rollout),
                    iterations_per_call=int(r.iterations or 0))


def placements_for(profile: dict | None, devices: list[str] | None,
                   gpu_spec: GpuSpec | None = None,
                   metric: str = "wall") -> tuple[list[Placement], list[str], dict]:
    """Placements for the requested devices (default: every measured one)."""
    notes: list[str] = []
    models = models_from_profile(profile, metric) if profile else {}
    measured = sorted({p for (_, p) in models})
    if devices is None:
        devices = sorted({p.removesuffix("-fused") for p in measured})
    devices = [normalize_placement(d) for d in devices]  # `cpu1` reads as `cpu:1`
    out: list[Placement] = []
    timing = rmm_timing_from_profile(profile)
    logic = logic_from_profile(profile)
    for dev in devices:
        if dev.startswith("fpga:"):
            out.append(fpga_placement(dev.split(":", 1)[1], timing=timing, logic=logic))
            clock = ("the RTL's yosys estimate per (K, P) (fpga_rtl/syn/timing.csv)"
                     if timing.clock_table else f"{timing.clock_hz / 1e6:.0f} MHz")
            notes.append(f"{dev}: modelled (RMM timing: {timing.source}; clock "
                         f"{clock}; logic: {logic.source}; board "
                         "resources from its data sheet; learner: MLP engine bounded by DSPs)")
            continue
        names = [p for p in measured if p == dev or p == f"{dev}-fused"]
        if names:
            for name in names:
                kw = MEASURED_KINDS.get(name, dict(kind="opencl", resource="cpu", link="host"))
                out.append(measured_placement(name, models, **kw))
            continue
        if dev == "gpu":
            spec = gpu_spec or default_gpu_spec()
            out += [gpu_spec_placement(spec), gpu_spec_placement(spec, fused=True)]
            notes.append(f"gpu, gpu-fused: MODELLED from public specs ({spec.device}), not "
                         "measured; gpu-fused is charged the fused-loop bookkeeping measured "
                         "on the CPU (an assumption)")
            continue
        raise ValueError(f"device {dev!r} is neither in the profile (measured: {measured}) nor "
                         "modelled (gpu, fpga:u200, fpga:u250, fpga:u280)")
    return out, notes, models


def plan(workload: Workload, profile: dict | None, devices: list[str] | None = None,
         staleness: int = 1, gpu_spec: GpuSpec | None = None, metric: str = "wall",
         scaling: str = "weak") -> Plan:
    """Explore every mapping of `workload` onto `devices`. `metric`: fit the profile's wall
    times (`wall`, what a quiet machine delivers) or its CPU times (`cpu`, comparable across
    loads on a shared machine; see `hrl.mapping.profile`). A device `KIND*N` adds the
    data-parallel candidates on 1..N devices of KIND, under `scaling` (weak or strong,
    `hrl.mapping.parallel`)."""
    counts: dict[str, int] = {}
    if devices is not None:
        devices, counts = parallel.parse_devices(devices)
    if scaling not in parallel.SCALINGS:
        raise ValueError(f"scaling must be one of {parallel.SCALINGS}, got {scaling!r}")
    placements, notes, models = placements_for(profile, devices, gpu_spec, metric)
    links = {}
    host = host_link_from_profile(profile, metric) if profile else None
    if host is not None:
        links["host"] = host
    collective = (host_link_from_profile(profile, metric, "link:cpu-collective")
                  if profile else None)
    if collective is not None:
        links[COLLECTIVE_LINK] = collective
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
    overheads = by_dispatch[HOST_LOOP_DISPATCH["strict"]]
    relaxed = by_dispatch[HOST_LOOP_DISPATCH["relaxed"]]
    process = host_link_from_profile(profile, metric, "link:process") if profile else None
    cores = host_cores(profile)
    loop_overhead = {k: v(workload) for k, v in overheads.items() if k in ("host", "fused")}
    loop_overhead["fused_by_placement"] = {k: v(workload) for k, v in overheads.items()
                                           if k not in ("host", "fused")}
    loop_overhead["host_actor"] = overheads["host"].actor_part(workload)  # pipelined: per side
    loop_overhead.update({"host_relaxed": relaxed["host"](workload),
                          "host_actor_relaxed": relaxed["host"].actor_part(workload)})
    wait = pipelined_wait_from_profile(profile, models, overheads["host"], metric,
                                       HOST_LOOP_DISPATCH["strict"])
    loop_overhead["pipelined_wait"] = wait.seconds if wait is not None else 0.0
    handoff = thread_handoff_from_profile(profile, metric)
    loop_overhead["replay_handoff"] = handoff or 0.0
    overlap = replay_overlap_from_profile(profile, workload, metric,
                                          handoff=loop_overhead["replay_handoff"])
    loop_overhead["replay_overlap"] = {p: eta for p, (eta, _) in overlap.items()}
    overlap_pipelined = replay_overlap_from_profile(profile, workload, metric, "pipelined",
                                                    handoff=loop_overhead["replay_handoff"])
    loop_overhead["replay_overlap_pipelined"] = {p: eta for p, (eta, _) in
                                                 overlap_pipelined.items()}
    exp = dse.explore(placements, workload, staleness=staleness, link_overrides=links,
                      loop_overhead=loop_overhead, process_link=process, host_cores=cores)
    if process is None:
        notes.append("pipelined executor: no process link in the profile (re-profile); its "
                     "transfers are not costed")
    else:
        notes.append(f"pipelined executor: {cores} host cores shared; {process.source}; "
                     + (f"wait {wait.source}" if wait is not None else
                        "no loop:pipelined rows: the wait per iteration is not costed"))
    _check_every_call_has_a_placement(exp, workload, models)
    notes.append("relaxed dependency: update and sample beside train when the tree is on "
                 "another placement than train, "
                 + (f"{handoff * 1e6:.0f} us a thread hand-off per SGD step (link:thread)"
                    if handoff is not None else
                    "thread hand-offs not costed (no link:thread in the profile: re-profile)"))
    for place, (eta, where) in overlap.items():
        notes.append(f"relaxed dependency, tree on {place}: the replay thread hides "
                     f"{eta:.0%} of the shorter side in the sequential executor, "
                     f"{overlap_pipelined[place][0]:.0%} in the pipelined ({where}; below 0: "
                     "the two sides slow each other down more than they overlap)")
    unit = "CPU seconds of this process" if metric == "cpu" else "wall-clock seconds"
    notes.append(f"metric: {metric} time ({unit})")
    what = {"host": "host-loop bookkeeping", "fused": "fused-loop bookkeeping",
            "gpu-fused": "the GPU's fused-loop bookkeeping"}
    for k, v in overheads.items():
        notes.append(f"{what[k]}: {v(workload) * 1e6:.1f} us per iteration ({v.source})")
    for k in ("host",):
        if relaxed[k].source != overheads[k].source:
            notes.append(f"{what[k]}, relaxed: {relaxed[k](workload) * 1e6:.1f} us "
                         f"per iteration ({relaxed[k].source})")
    data_parallel = {}
    if counts:
        data_parallel = {mode: parallel.candidates(
            placements, workload, counts, mode, staleness, links, overheads["fused"], cores,
            scaling) for mode in ("strict", "relaxed")}
        for kind, n in counts.items():
            link = parallel.device_link(kind, links)
            notes.append(
                f"{kind}*{n}: data-parallel candidates on D of {n} {kind} devices "
                f"({scaling} scaling; T_1 = the {kind}-fused prediction; "
                + (f"{cores} cores shared by the virtual devices" if kind == "cpu"
                   else "own compute per device")
                + f"; collectives over {link.name}: {link.source})"
                + ("; " + UNMEASURED_RENDEZVOUS + ": that link prices a message by its "
                   "bytes, while a collective between virtual CPU devices also waits on a "
                   "rendezvous of their threads (re-profile to measure link:cpu-collective; "
                   "experiments/bench/bench_scaling.py fits it on its measured points): read this "
                   "curve as an upper bound"
                   if kind == "cpu" and link.name != COLLECTIVE_LINK else "")
                + ("; the measured rendezvous is that of two otherwise idle devices: the "
                   "data-parallel loop's devices also wait on each other's compute, which "
                   "experiments/bench/bench_scaling.py measures"
                   if kind == "cpu" and link.name == COLLECTIVE_LINK else ""))
            if not any(c.kind == kind for c in data_parallel["strict"]):
                notes.append(f"{kind}*{n}: no data-parallel candidate: no {kind}-fused "
                             "placement for this workload (the fused loop needs a JAX env)"
                             if f"{kind}-fused" not in {p.name for p in placements} else
                             f"{kind}*{n}: no D > 1 divides env.num_envs, train.batch_size "
                             "and replay.capacity (strong scaling)")
    errors = executor_errors(profile, models, overheads, metric,
                             dispatch=HOST_LOOP_DISPATCH["strict"])
    for name, err in errors.items():
        notes.append(f"{name} executor: "
                     + (f"{err:.0%} median error on the profile's own {name} loop rows "
                        "(out of sample)" if err is not None else
                        "no loop rows in the profile to check it on"))
    return Plan(workload, placements, models, links, exp, notes, rmm_timing_from_profile(profile),
                overheads, data_parallel, counts, scaling, cores, errors, profiled_box(profile))


def _check_every_call_has_a_placement(exp, workload: Workload, models: dict) -> None:
    """A call no placement can run (a profile of another algorithm or env, say) leaves no
    feasible mapping: say which, and what the profile holds, instead of ranking nothing."""
    missing = [c for c, row in zip(CALLS, exp.problem.latency, strict=True)
               if not np.isfinite(row).any()]
    if missing:
        measured = sorted({call for call, _ in models})
        raise ValueError(
            f"no placement can run {', '.join(missing)} of this workload ({workload.algo} on "
            f"{workload.env_kind}:{workload.env_id}); the profile measures {measured}: "
            "profile this config with `hrl profile CONFIG`, or add --devices it can model"
        )


def profile_path_for(run_dir: str | Path) -> Path:
    return Path(run_dir) / "profile.json"
