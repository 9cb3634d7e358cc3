"""`hrl train --mapping auto`: pick the best mapping the runtime can run here, and run it.

The exploration ranks every mapping, including devices that are only modelled; training can
only use what is present and what the runtime can instantiate (`validate.runnable_mappings`:
the fused loop, the host loop, the replay tree on an OpenCL device or the RTL simulation). The
chosen mapping is the predicted-fastest of those, in the config's dependency mode.
"""

from __future__ import annotations

import dataclasses

from hrl.mapping.plan import Plan, plan
from hrl.mapping.validate import RunnableMapping, mode_overrides, runnable_mappings
from hrl.mapping.workload import workload_from_config


@dataclasses.dataclass
class Choice:
    mapping: RunnableMapping
    predicted_s: float  # seconds per iteration
    env_steps_per_iter: int
    sgd_per_iter: float
    ranking: list[tuple[str, float]]  # (label, predicted seconds) of every runnable mapping
    plan: Plan

    @property
    def predicted_env_steps_per_s(self) -> float:
        return self.env_steps_per_iter / self.predicted_s

    @property
    def predicted_updates_per_s(self) -> float:
        return self.sgd_per_iter / self.predicted_s


def choose(cfg, profile: dict, metric: str = "wall") -> Choice:
    """The predicted-fastest runnable mapping for run config `cfg` on `profile`."""
    workload = workload_from_config(cfg)
    mode = cfg.train.dependency
    staleness = max(cfg.train.staleness, 1)
    measured = {r["placement"].removesuffix("-fused") for r in profile["rows"]
                if r["placement"] not in ("loop", "host", "rtl-cycles", "rtl-resources")}
    candidates = [m for m in runnable_mappings()
                  if {p.removesuffix("-fused") for p in m.mapping.values()} <= measured]
    if workload.env_kind not in ("gymnax", "brax"):
        candidates = [m for m in candidates if m.label != "cpu-fused"]
    if not candidates:
        raise ValueError(f"the profile measures {sorted(measured)}; no runnable mapping uses "
                         "only those placements (profile this machine with `hrl profile`)")
    devices = sorted({p.removesuffix("-fused") for m in candidates for p in m.mapping.values()})
    result = plan(workload, profile, devices, staleness=staleness, metric=metric)
    e = result.exploration
    ranking = sorted(((m.label, float(e.times(mode, m.executor)[e.row_of(m.mapping)]))
                      for m in candidates), key=lambda x: x[1])
    best = next(m for m in candidates if m.label == ranking[0][0])
    return Choice(best, ranking[0][1], workload.num_envs * workload.rollout_length,
                  workload.sgd_steps, ranking, result)


def overrides_for(choice: Choice, cfg) -> list[str]:
    """Config overrides that make the runtime run the chosen mapping (keeps the mode)."""
    mode = cfg.train.dependency
    return [*choice.mapping.overrides, *mode_overrides(mode, cfg.train.staleness)]


# ----------------------------------------------------------------------------- CLI hooks
def add_cli_arguments(parser) -> None:
    """`hrl train` options of the mapping framework."""
    parser.add_argument("--mapping", choices=["auto"],
                        help="auto: run the predicted-fastest mapping runnable here "
                             "(needs --profile from `hrl profile`)")
    parser.add_argument("--profile", help="profile directory for --mapping auto")


def apply_cli(args, cfg, console):
    """Returns (cfg, choice): cfg rewritten to the chosen mapping, or unchanged (choice None)."""
    if not getattr(args, "mapping", None):
        return cfg, None
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile

    if not args.profile:
        raise ValueError("--mapping auto needs --profile DIR (run `hrl profile CONFIG` first)")
    if args.resume:
        raise ValueError("--mapping auto cannot be combined with --resume (the run keeps the "
                         "mapping it was started with)")
    choice = choose(cfg, load_profile(args.profile))
    for label, t in choice.ranking:
        mark = "  <- chosen" if label == choice.mapping.label else ""
        console.print(f"mapping {label:>18}: predicted {t * 1e3:8.3f} ms/iteration{mark}")
    cfg = load_config(args.config, [*args.overrides, *overrides_for(choice, cfg)])
    return cfg, choice


def print_comparison(console, choice, summary: dict) -> None:
    """Predicted against measured throughput, side by side, after `hrl train --mapping auto`.

    The measured figure is the whole session's (compilation and the pre-learning phase, when
    the learner does not run yet, included), so it differs from the steady state the model
    predicts; `experiments/validate_mapping.py` compares steady states."""
    if choice is None:
        return
    console.print(
        f"mapping {choice.mapping.label}: predicted {choice.predicted_env_steps_per_s:,.0f} "
        f"env steps/s, {choice.predicted_updates_per_s:,.0f} updates/s (steady state); "
        f"measured {summary['env_steps_per_s']:,.0f} env steps/s, "
        f"{summary['updates_per_s']:,.0f} updates/s (whole run, incl. compilation and "
        f"learning_starts)")
