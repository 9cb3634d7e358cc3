"""One ranking of the mappings the runtime can run: what `hrl map` reports, what
`hrl train --mapping auto` picks from and what the validation predicts, all from
`rank_mappings`.

    ranking = rank_mappings(cfg, profile)
    ranking.best()            # the mapping `--mapping auto` runs
    ranking.mappings          # every runnable-kind mapping, fastest first

The catalogue of mappings the runtime can instantiate is `validate.runnable_mappings` (the
fused loop, the sequential host loop, the replay tree on another backend or device, each host
loop again in the pipelined executor, with process actors and with thread actors); with
`max_devices` > 1 the data-parallel fused loop on D = 2..max_devices devices of the JAX
backend's kind joins it (strong scaling, `hrl.mapping.parallel`). Each is priced by one
exploration (`plan.plan`) on the profile, in the config's dependency mode, and flagged
runnable here or not, with the reason.
"""

from __future__ import annotations

import dataclasses
import math

import jax

from hrl.config import ConfigError, apply_override, config_from_dict, to_dict
from hrl.mapping import parallel
from hrl.mapping.devices import RANKED_EXECUTORS, SECOND_CPU, SECOND_CPU_LABEL, XLA_TREE
from hrl.mapping.plan import Plan, plan
from hrl.mapping.platform import call_key
from hrl.mapping.profile.grids import GPU_LOOP, RTL_TABLE_CALLS
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.uncertainty import UNKNOWN_UNCERTAINTY, uncertainty_of
from hrl.mapping.validate import (
    BACKENDS,
    gpu_mappings,
    runnable_mappings,
    uses_gpu,
)
from hrl.mapping.workload import PRIMITIVES, workload_from_config
from hrl.runtime.executor_choice import choose_executor, env_is_jax

# Profile rows whose placement names a loop, a link or an RTL table, not where a call ran.
_NOT_PLACEMENTS = ("loop", GPU_LOOP, "host", *RTL_TABLE_CALLS)
@dataclasses.dataclass(frozen=True)
class RankedMapping:
    """One mapping the runtime can instantiate, with its predicted iteration time."""

    label: str
    mapping: dict  # primitive -> placement name (as in the exploration)
    executor: str  # one of devices.RANKED_EXECUTORS
    overrides: tuple[str, ...]  # config overrides that make the runtime run it
    seconds: float  # predicted seconds per iteration of the config's env steps
    runnable: bool  # whether the runtime can run it here (else `why_not` says why)
    why_not: str = ""
    devices: int = 1  # train.devices
    # Relative uncertainty of `seconds` (`uncertainty_of`): how far off the model has been
    # on whole iterations of this executor, widened where the setting lies outside the sizes
    # the profile measured.
    uncertainty: float = UNKNOWN_UNCERTAINTY

    def __post_init__(self):
        if self.executor not in RANKED_EXECUTORS:
            raise ValueError(f"executor must be one of {RANKED_EXECUTORS}, got "
                             f"{self.executor!r}")



def combined_uncertainty(u_a: float, u_b: float) -> float:
    """The relative uncertainty of the ratio of two predictions whose own are `u_a` and `u_b`:
    sqrt(u_a ** 2 + u_b ** 2). Why in quadrature and not their sum: where the two mappings'
    executors differ, their formulas were fitted to different loop rows of the profile
    (`uncertainty.uncertainty_of`) and their errors are independent; where they share one,
    its error moves both predictions the same way and cancels in the ratio. The sum is the
    bound for errors that always fall on opposite sides, which nothing here makes."""
    return math.hypot(u_a, u_b)


@dataclasses.dataclass
class Ranking:
    """`mappings`: fastest first (ties keep the catalogue's order); `plan`: the exploration
    that priced them; `notes` and `unranked`: which data-parallel D and which catalogue
    entries were left out, and why (one line each)."""

    mappings: list[RankedMapping]
    plan: Plan
    mode: str
    staleness: int
    env_steps_per_iter: int
    sgd_per_iter: float
    # data parallel left out: why it was not considered, or "D=d: why" per D not ranked
    notes: list[str] = dataclasses.field(default_factory=list)
    unranked: list[str] = dataclasses.field(default_factory=list)  # catalogue entries left out
    # The label of the mapping the config runs as it stands (`config_label`; None: not in the
    # catalogue).
    default_label: str | None = None

    def runnable(self) -> list[RankedMapping]:
        return [m for m in self.mappings if m.runnable]

    def best(self) -> RankedMapping:
        """The predicted-fastest mapping runnable here (ValueError when there is none)."""
        ok = self.runnable()
        if not ok:
            raise ValueError("no ranked mapping is runnable here: "
                             + "; ".join(f"{m.label}: {m.why_not}" for m in self.mappings))
        return ok[0]

    def default(self) -> RankedMapping | None:
        """The config's own mapping among the runnable ones (None: not ranked)."""
        return next((m for m in self.runnable() if m.label == self.default_label), None)

    def pick(self) -> tuple[RankedMapping, bool, str]:
        """What `hrl train --mapping auto` runs: (mapping, kept_default, why). Among the
        mappings whose gain over the config's own mapping clears the two predictions'
        uncertainties combined (`combined_uncertainty`),

            t_default / t_m - 1 > sqrt(u_m ** 2 + u_default ** 2),

        the one with the highest throughput its uncertainty still vouches for, the smallest
        t_m * (1 + u_m); the config's own mapping when none clears. Each mapping is weighed on
        its own, so an uncertain prediction at the top (an executor no profile row checks)
        neither holds back a sure gain below it nor wins against it on its optimism alone.
        Where the default is not ranked, the fastest. ValueError when nothing is runnable."""
        best, default = self.best(), self.default()
        if default is None:
            own = self.default_label or "not in the catalogue"
            return best, False, (f"the config's own mapping ({own}) is not ranked: the "
                                 "fastest prediction runs")
        if default is best:
            return best, False, "the config's own mapping is the fastest prediction"

        def gain(m: RankedMapping) -> float:
            return default.seconds / m.seconds - 1.0

        def within(m: RankedMapping) -> str:
            both = combined_uncertainty(m.uncertainty, default.uncertainty)
            return (f"{both:.0%}: {m.uncertainty:.0%} and {default.uncertainty:.0%} "
                    "in quadrature")

        clears = [m for m in self.runnable() if m is not default
                  and gain(m) > combined_uncertainty(m.uncertainty, default.uncertainty)]
        if not clears:
            return default, True, (
                f"kept the config's own mapping ({default.label}): {best.label} is predicted "
                f"{gain(best):.0%} faster, within the predictions' uncertainty "
                f"({within(best)}), and no other mapping clears its own")
        pick = min(clears, key=lambda m: m.seconds * (1.0 + m.uncertainty))  # stable: ties
        passed = "" if pick is best else (
            f"; {best.label}, predicted faster still, is less certain ({best.uncertainty:.0%})")
        return pick, False, (
            f"{pick.label} is predicted {gain(pick):.0%} faster than the config's own mapping "
            f"({default.label}), beyond the uncertainty ({within(pick)}){passed}")

    def get(self, label: str) -> RankedMapping:
        for m in self.mappings:
            if m.label == label:
                return m
        raise KeyError(f"{label!r} is not ranked (ranked: {[m.label for m in self.mappings]})")


def rank_mappings(cfg, profile: dict, *, staleness: int | None = None, metric: str = "wall",
                  mode: str | None = None, max_devices: int = 1,
                  available_devices: int | None = None,
                  backends=BACKENDS) -> Ranking:
    """Every mapping of `validate.runnable_mappings(backends)` whose placements `profile`
    measured (and whose loop the config's env can drive), plus with `max_devices` > 1 the
    data-parallel fused loop on D = 2..max_devices devices, ranked by predicted seconds per
    iteration of the config's env steps in dependency `mode` (default the config's) at
    `staleness` (default the config's, at least 1), on the profile's `metric` times.

    Guarantees: the list is sorted by `seconds` (stable); each entry's `overrides` make the
    runtime run it (with `mode_overrides` for the mode); `runnable` is False only for a
    data-parallel D this process cannot run (too few devices, a config the D rejects), with
    the reason in `why_not`. A catalogue entry the profile did not measure is left out (it
    cannot be predicted), and so is a D that does not divide the config's sizes; `notes` says
    which (`notes`, `unranked`). ValueError when no catalogue entry can be priced.

    Cost: one `plan.plan` on the measured devices (fits the profile's models and evaluates
    P**5 mappings in one jitted call), no runs, no profiling."""
    workload = workload_from_config(cfg)
    if workload.network != "mlp":  # priced only from rows that timed its kind of network
        key = call_key("train", workload)
        if not any(r.call == key for r in profile_rows(profile)):
            raise ValueError(f"agent.network {cfg.agent.network!r} is a conv net and the "
                             f"profile has no {key} rows: profile this config (`hrl profile "
                             "--config` it) to price it")
    mode = mode or cfg.train.dependency
    staleness = max(cfg.train.staleness, 1) if staleness is None else staleness
    measured = {r.placement.removesuffix("-fused") for r in profile_rows(profile)
                if r.placement not in _NOT_PLACEMENTS}
    candidates, notes, unranked = [], [], []
    for m in runnable_mappings(backends, gpu="gpu" in measured):
        used = {p.removesuffix("-fused") for p in m.mapping.values()}
        if not used <= measured:
            unranked.append(f"{m.label}: not ranked, the profile does not measure "
                         f"{', '.join(sorted(used - measured))}")
        elif m.executor == "fused" and workload.env_kind not in ("gymnax", "brax"):
            unranked.append(f"{m.label}: not ranked, the env ({workload.env_kind}) cannot run "
                         "in the fused loop")
        else:
            candidates.append(m)
    if not candidates:
        raise ValueError(f"the profile measures {sorted(measured)}; no runnable mapping uses "
                         "only those placements (profile this machine with `hrl profile`)")
    devices = sorted({p.removesuffix("-fused") for m in candidates for p in m.mapping.values()})
    kind = None
    if max_devices > 1:
        kind, why = _data_parallel_kind(cfg, workload, measured)
        if why:
            notes.append(f"data parallel (train.devices > 1) not considered: {why}")
            kind = None
        else:
            devices = [d for d in devices if d != kind] + [f"{kind}*{max_devices}"]
    result = plan(workload, profile, devices, staleness=staleness, metric=metric,
                  scaling="strong")
    e = result.exploration
    ranked = [RankedMapping(m.label, m.mapping, m.executor, m.overrides,
                            float(e.times(mode, m.executor)[e.row_of(m.mapping)]),
                            not _why_not_here(m), _why_not_here(m),
                            uncertainty=uncertainty_of(result, m.executor, m.mapping))
              for m in candidates]
    if kind is not None:
        ranked += _data_parallel(cfg, result, mode, kind, max_devices, available_devices,
                                 notes)
    ranked.sort(key=lambda m: m.seconds)
    return Ranking(ranked, result, mode, staleness, workload.num_envs * workload.rollout_length,
                   workload.sgd_steps, notes, unranked, config_label(cfg))


def _why_not_here(m) -> str:
    """Why this process cannot run catalogue mapping `m` ("" where it can): a GPU mapping
    needs JAX's default backend to be a GPU, and where it is one the CPU mappings' unplaced
    primitives would run on it."""
    gpu_here = jax.default_backend() == "gpu"
    if uses_gpu(m.mapping) and not gpu_here:
        return "JAX sees no GPU in this process"
    if gpu_here and not uses_gpu(m.mapping):
        return ("JAX's default device here is a GPU, where its unplaced primitives would run; "
                "run it in a CPU-only process (JAX_PLATFORMS=cpu)")
    return ""


def _gpu_label(cfg) -> str | None:
    """The GPU catalogue entry (`validate.gpu_mappings`) `cfg` runs in a process whose default
    backend is a GPU, or None: its primitives' devices (an unplaced one runs on the GPU, a
    host env on the CPU) compared with each entry's."""
    if choose_executor(cfg) == "fused":
        return "gpu-fused"
    where = {p: cfg.placement.get(p, "gpu").partition(":")[0] for p in PRIMITIVES}
    where = {p: "cpu" if d == "host" else d for p, d in where.items()}
    if not env_is_jax(cfg):
        where["env"] = "cpu"
    return next((m.label for m in gpu_mappings() if m.mapping == where), None)


def config_label(cfg) -> str | None:
    """The catalogue label of the mapping `cfg` runs as it stands (no --mapping), or None
    when the catalogue has no entry for it (data parallel, a placement it does not list)."""
    executor = choose_executor(cfg)
    if executor in ("sequential", "pipelined", "fused") and (
            jax.default_backend() == "gpu"
            or any(v.startswith("gpu") for v in cfg.placement.values())):
        label = _gpu_label(cfg)
        if label is None or executor != "pipelined":
            return label
        return f"{label} pipelined" if cfg.train.actors == "process" else \
            f"{label} pipelined-thread"
    if executor == "fused":
        return "cpu-fused"
    if executor == "data-parallel":
        return None
    placed = {cfg.placement.get(p) for p in ("sample", "update")} if cfg.placement else set()
    if cfg.replay.backend == "opencl":
        label = "replay-on-pocl"
    elif cfg.replay.backend == "rtl":
        label = "replay-on-rtl"
    elif cfg.replay.backend == "jax" and cfg.replay.impl == "xla":
        label = f"replay-on-{XLA_TREE}"
    elif SECOND_CPU in placed:
        label = SECOND_CPU_LABEL
    elif cfg.replay.backend == "jax" and not placed - {None}:
        label = "cpu"
    else:
        return None
    if executor != "pipelined":
        return label
    return f"{label} pipelined" if cfg.train.actors == "process" else f"{label} pipelined-thread"


def _data_parallel_kind(cfg, workload, measured) -> tuple[str | None, str]:
    """The device kind the data-parallel loop would run on here, or why it cannot."""
    kind = jax.default_backend()
    if kind not in parallel.KINDS:
        return None, f"the JAX backend is {kind!r}, not one of {parallel.KINDS}"
    if workload.env_kind not in ("gymnax", "brax"):
        return None, f"the env ({workload.env_kind}) cannot run in the fused loop"
    if kind not in measured:
        return None, f"the profile has no {kind}-fused rows (profile on this machine)"
    if cfg.replay.backend != "jax" or cfg.placement:
        return None, "it needs replay.backend: jax and no placement"
    return kind, ""


def _data_parallel(cfg, result: Plan, mode: str, kind: str, max_devices: int,
                   available: int | None, notes: list[str]) -> list[RankedMapping]:
    """The strong-scaling candidates D > 1 in the config's sampling mode, each flagged
    runnable here or not (JAX sees too few devices, the config rejects the D); appends to
    `notes` one "D=d: ..." entry per D that does not divide the config's sizes."""
    if available is None:
        available = len(jax.devices())
    cands = [c for c in result.data_parallel.get(mode, [])
             if c.kind == kind and c.devices > 1 and c.sampling == cfg.replay.sampling]
    offered = {c.devices for c in cands}
    notes += [f"D={d}: does not divide env.num_envs ({cfg.env.num_envs}), train.batch_size "
              f"({cfg.train.batch_size}) and replay.capacity ({cfg.replay.capacity})"
              for d in range(2, max_devices + 1) if d not in offered]
    out = []
    for c in cands:
        overrides = tuple(c.overrides(cfg))
        why = ""
        if c.devices > available:
            why = (f"JAX sees {available} {kind} device(s) (on a CPU, --mapping-devices makes "
                   "virtual ones unless XLA_FLAGS sets their number)")
        else:
            data = to_dict(cfg)
            try:
                for o in overrides:
                    apply_override(data, o)
                config_from_dict(data)
            except ConfigError as err:
                why = str(err)
        out.append(RankedMapping(c.label, {p: c.placement for p in PRIMITIVES},
                                 "data-parallel", overrides, c.iteration_s, not why, why,
                                 c.devices))
    return out


def predicted_seconds(cfg, profile: dict, label: str, metric: str = "wall",
                      staleness: int | None = None) -> float:
    """The predicted seconds per iteration of mapping `label` for `cfg` (in its dependency
    mode), read off the one ranking `hrl map` and `hrl train --mapping auto` use
    (`ranking.rank_mappings`), never from a run. KeyError when the ranking lacks `label` (the
    profile did not measure its placements). Costs one `rank_mappings`."""
    return rank_mappings(cfg, profile, staleness=staleness, metric=metric).get(label).seconds
