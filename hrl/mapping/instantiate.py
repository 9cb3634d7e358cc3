"""`hrl train --mapping auto`: pick the best mapping the runtime can run here, and run it.

The exploration ranks every mapping, including devices that are only modelled; training can
only use what is present and what the runtime can instantiate (`validate.runnable_mappings`:
the fused loop, the host loop, the replay tree on an OpenCL device or the RTL simulation). The
chosen mapping is the predicted-fastest of those, in the config's dependency mode, by
predicted env steps per second.

With `--mapping-devices N`, the fused loop on D = 2..N devices of this machine's JAX backend
(`train.devices: D`, `hrl.mapping.parallel`) competes too: the config's own work split D
ways (strong scaling: no hyperparameter changes; the config's `replay.sampling` is kept), so
D must divide env.num_envs, train.batch_size and replay.capacity, and the runtime must see D
devices (on a CPU, `hrl train` makes N virtual ones before JAX starts, as `--devices` does).
A D that cannot run here is left out, and why is said in one line.
"""

from __future__ import annotations

import dataclasses

import jax

from hrl.config import ConfigError, apply_override, config_from_dict, load_config, to_dict
from hrl.mapping import parallel
from hrl.mapping.plan import Plan, plan
from hrl.mapping.profile.io import load_profile
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.validate import RunnableMapping, mode_overrides, runnable_mappings
from hrl.mapping.workload import PRIMITIVES, workload_from_config
from hrl.replay.backends import format_for


@dataclasses.dataclass
class Choice:
    mapping: RunnableMapping
    predicted_s: float  # seconds per iteration
    env_steps_per_iter: int
    sgd_per_iter: float
    ranking: list[tuple[str, float]]  # (label, predicted seconds) of every runnable mapping
    plan: Plan
    notes: list[str] = dataclasses.field(default_factory=list)  # why a D was left out

    @property
    def predicted_env_steps_per_s(self) -> float:
        return self.env_steps_per_iter / self.predicted_s

    @property
    def predicted_updates_per_s(self) -> float:
        return self.sgd_per_iter / self.predicted_s


def choose(cfg, profile: dict, metric: str = "wall", max_devices: int = 1,
           available_devices: int | None = None) -> Choice:
    """The predicted-fastest runnable mapping for run config `cfg` on `profile`, by env steps
    per second. `max_devices` > 1 adds the data-parallel fused loop on D = 2..max_devices
    devices of the JAX backend's kind, where `available_devices` (default: what JAX sees)
    and the config allow it. `ranking` holds (label, predicted seconds per iteration of the
    config's env steps) for all, best first."""
    workload = workload_from_config(cfg)
    mode = cfg.train.dependency
    staleness = max(cfg.train.staleness, 1)
    measured = {r.placement.removesuffix("-fused") for r in profile_rows(profile)
                if r.placement not in ("loop", "host", "rtl-cycles", "rtl-resources")}
    candidates = [m for m in runnable_mappings()
                  if {p.removesuffix("-fused") for p in m.mapping.values()} <= measured]
    if workload.env_kind not in ("gymnax", "brax"):
        candidates = [m for m in candidates if m.label != "cpu-fused"]
    if not candidates:
        raise ValueError(f"the profile measures {sorted(measured)}; no runnable mapping uses "
                         "only those placements (profile this machine with `hrl profile`)")
    devices = sorted({p.removesuffix("-fused") for m in candidates for p in m.mapping.values()})
    notes: list[str] = []
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
    ranking = [(m.label, float(e.times(mode, m.executor)[e.row_of(m.mapping)]))
               for m in candidates]
    runnable: dict[str, RunnableMapping] = {m.label: m for m in candidates}
    if kind is not None:
        dp, why = _runnable_data_parallel(cfg, result, mode, kind, max_devices,
                                          available_devices)
        notes += why
        for c in dp:
            runnable[c.label] = RunnableMapping(c.label, {p: c.placement for p in PRIMITIVES},
                                                c.overrides(cfg))
            ranking.append((c.label, c.iteration_s))  # strong: same env steps/iteration
    ranking.sort(key=lambda x: x[1])
    best = runnable[ranking[0][0]]
    return Choice(best, ranking[0][1], workload.num_envs * workload.rollout_length,
                  workload.sgd_steps, ranking, result, notes)


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


def _runnable_data_parallel(cfg, result: Plan, mode: str, kind: str, max_devices: int,
                            available: int | None) -> tuple[list, list[str]]:
    """The strong-scaling candidates D > 1 in the config's sampling mode that the runtime
    can run here, and one line saying which D were left out and why."""
    if available is None:
        available = len(jax.devices())
    out, dropped = [], []
    cands = [c for c in result.data_parallel.get(mode, [])
             if c.kind == kind and c.devices > 1 and c.sampling == cfg.replay.sampling]
    offered = {c.devices for c in cands}
    for d in range(2, max_devices + 1):
        if d not in offered:
            dropped.append(f"D={d}: does not divide env.num_envs ({cfg.env.num_envs}), "
                           f"train.batch_size ({cfg.train.batch_size}) and replay.capacity "
                           f"({cfg.replay.capacity})")
    for c in cands:
        if c.devices > available:
            dropped.append(f"D={c.devices}: JAX sees {available} {kind} device(s) (on a CPU, "
                           "--mapping-devices makes virtual ones unless XLA_FLAGS sets their "
                           "number)")
            continue
        data = to_dict(cfg)
        try:
            for o in c.overrides(cfg):
                apply_override(data, o)
            config_from_dict(data)
        except ConfigError as err:
            dropped.append(f"D={c.devices}: {err}")
            continue
        out.append(c)
    notes = []
    if dropped:
        notes.append("data parallel not runnable here for " + "; ".join(dropped))
    return out, notes


def overrides_for(choice: Choice, cfg) -> list[str]:
    """Config overrides that make the runtime run the chosen mapping (keeps the mode, and a
    fixed-point format the config already has where the mapping needs fixed point)."""
    mode = cfg.train.dependency
    backend = dict(o.split("=", 1) for o in choice.mapping.overrides).get(
        "replay.backend", cfg.replay.backend)
    fmt = format_for(backend, cfg.replay.fmt)
    mapping = [o if not o.startswith("replay.fmt=") else f"replay.fmt={fmt}"
               for o in choice.mapping.overrides]
    return [*mapping, *mode_overrides(mode, cfg.train.staleness)]


# ----------------------------------------------------------------------------- CLI hooks
def add_cli_arguments(parser) -> None:
    """`hrl train` options of the mapping framework."""
    parser.add_argument("--mapping", choices=["auto"],
                        help="auto: run the predicted-fastest mapping runnable here "
                             "(needs --profile from `hrl profile`)")
    parser.add_argument("--profile", help="profile directory for --mapping auto")
    parser.add_argument("--mapping-devices", type=int, default=1, metavar="N",
                        help="with --mapping auto: also consider the data-parallel fused loop "
                             "on D = 2..N devices (train.devices: D, the config's work split "
                             "D ways); on a CPU, N virtual devices are made when XLA_FLAGS "
                             "does not set their number")


def apply_cli(args, cfg, console):
    """Returns (cfg, choice): cfg rewritten to the chosen mapping, or unchanged (choice None)."""
    if not getattr(args, "mapping", None):
        return cfg, None
    if not args.profile:
        raise ValueError("--mapping auto needs --profile DIR (run `hrl profile CONFIG` first)")
    if args.resume:
        raise ValueError("--mapping auto cannot be combined with --resume (the run keeps the "
                         "mapping it was started with)")
    if args.mapping_devices < 1:
        raise ValueError(f"--mapping-devices must be >= 1, got {args.mapping_devices}")
    choice = choose(cfg, load_profile(args.profile), max_devices=args.mapping_devices)
    for note in choice.notes:
        console.print(f"mapping: {note}")
    for label, t in choice.ranking:
        mark = "  <- chosen" if label == choice.mapping.label else ""
        console.print(f"mapping {label:>18}: predicted {t * 1e3:8.3f} ms/iteration{mark}")
    cfg = load_config(args.config, [*args.overrides, *overrides_for(choice, cfg)])
    return cfg, choice


def print_comparison(console, choice, summary: dict) -> None:
    """Predicted against measured throughput, side by side, after `hrl train --mapping auto`.

    The measured figure is the whole session's (compilation and the pre-learning phase, when
    the learner does not run yet, included), so it differs from the steady state the model
    predicts; `experiments/mapping/validate_mapping.py` compares steady states."""
    if choice is None:
        return
    console.print(
        f"mapping {choice.mapping.label}: predicted {choice.predicted_env_steps_per_s:,.0f} "
        f"env steps/s, {choice.predicted_updates_per_s:,.0f} updates/s (steady state); "
        f"measured {summary['env_steps_per_s']:,.0f} env steps/s, "
        f"{summary['updates_per_s']:,.0f} updates/s (whole run, incl. compilation and "
        f"learning_starts)")
