"""`hrl train --mapping auto`: pick the best mapping the runtime can run here, and run it.

The mappings come from `ranking.rank_mappings`, the same ranking `hrl map` reports: what the
runtime can instantiate (`validate.runnable_mappings`: the fused loop, the host loop, the
replay tree on another backend or device, the pipelined executor) on the placements the
profile measured. The chosen mapping is the first of those runnable here, in the config's
dependency mode (the config's env steps per iteration are the same for all, so fastest
iteration = most env steps per second).

With `--mapping-devices N`, the fused loop on D = 2..N devices of this machine's JAX backend
(`train.devices: D`, `hrl.mapping.parallel`) competes too: the config's own work split D
ways (strong scaling: no hyperparameter changes; the config's `replay.sampling` is kept), so
D must divide env.num_envs, train.batch_size and replay.capacity, and the runtime must see D
devices (on a CPU, the mapping step's child and then the run make N virtual ones before JAX
starts, as `--devices` does).
A D that cannot run here is left out, and why is said in one line.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import pickle
from pathlib import Path

from hrl.config import load_config
from hrl.mapping.devices import SECOND_CPU
from hrl.mapping.plan import Plan
from hrl.mapping.profile.io import load_profile
from hrl.mapping.profile.profiler import start_profiling_backend
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.ranking import RankedMapping, rank_mappings
from hrl.mapping.speed import speed_check
from hrl.mapping.validate import BACKENDS, mode_overrides
from hrl.replay.backends import format_for
from hrl.runtime.cpu_backend import ensure_cpu_devices, run_json_child

# The checkout this module was imported from, first on the child's PYTHONPATH.
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class Choice:
    mapping: RankedMapping
    predicted_s: float  # seconds per iteration
    env_steps_per_iter: int
    sgd_per_iter: float
    ranking: list[tuple[str, float]]  # (label, predicted seconds) of every runnable mapping
    plan: Plan | None  # None in the training process (`choose_in_child` leaves it)
    notes: list[str] = dataclasses.field(default_factory=list)  # D left out; why the pick
    ranked: list[RankedMapping] = dataclasses.field(default_factory=list)  # runnable, best first
    default: RankedMapping | None = None  # what the config runs without --mapping (if ranked)
    kept_default: bool = False  # the fastest prediction did not clear the uncertainty

    @property
    def predicted_env_steps_per_s(self) -> float:
        return self.env_steps_per_iter / self.predicted_s

    @property
    def predicted_updates_per_s(self) -> float:
        return self.sgd_per_iter / self.predicted_s


def choose(cfg, profile: dict, metric: str = "wall", max_devices: int = 1,
           available_devices: int | None = None,
           backends=BACKENDS) -> Choice:
    """The mapping `hrl train --mapping auto` runs for `cfg` on `profile`: `Ranking.pick` of
    `ranking.rank_mappings` (the one ranking `hrl map` reports), in the config's dependency
    mode: the fastest prediction whose gain over the config's own mapping clears the two
    predictions' uncertainties combined (`ranking.combined_uncertainty`; none does: the
    config's own, `kept_default`; `notes` says which and why). `max_devices` > 1 adds the
    data-parallel fused loop on D = 2..max_devices devices of the JAX backend's kind, where
    `available_devices` (default: what JAX sees) and the config allow it. Costs one
    `rank_mappings`."""
    ranked = rank_mappings(cfg, profile, metric=metric, max_devices=max_devices,
                           available_devices=available_devices, backends=backends)
    notes = [n for n in ranked.notes if not n.startswith("D=")]
    dropped = [n for n in ranked.notes if n.startswith("D=")]
    dropped += [f"D={m.devices}: {m.why_not}" for m in ranked.mappings if not m.runnable]
    if dropped:
        notes.append("data parallel not runnable here for " + "; ".join(dropped))
    chosen, kept, why = ranked.pick()
    notes.append(why)
    return Choice(chosen, chosen.seconds, ranked.env_steps_per_iter, ranked.sgd_per_iter,
                  [(m.label, m.seconds) for m in ranked.runnable()], ranked.plan, notes,
                  ranked.runnable(), ranked.default(), kept)


def choose_in_child(config, overrides, profile_dir, max_devices: int = 1,
                    timeout: float = 900.0) -> tuple[Choice, float, str | None]:
    """`choose` and the speed check (`speed.speed_check`) of `hrl train --mapping auto`, in a
    fresh Python (`python -m hrl.mapping.choose_child`): (choice, scale, warning).

    Why a child: the mapping step uses JAX (the model fits its lines in XLA, the speed check
    times jitted work), and JAX's CPU backend starts once per process with its dispatch,
    intra-op threads and devices fixed (`hrl.runtime.cpu_backend`). Run in the training
    process, it started the backend with JAX's defaults (a thread per core, async dispatch,
    the virtual devices asked for the exploration) before the run's `start_cpu_backend`,
    so the chosen mapping ran under other settings than the same run without --mapping
    auto, and the speed check timed the reference under settings the profile was not taken
    in. The child starts its backend as the profiler does (`start_profiling_backend`: the
    config's threads, the profile's dispatch, a second CPU device where the profile has rows
    there, and `max_devices` CPU devices to consider), so the reference is timed as it was
    profiled; the training process starts none. Costs a Python start and JAX's import, a
    few seconds, beside the ranking."""
    payload = {"config": str(config), "overrides": list(overrides), "profile": str(profile_dir),
               "max_devices": int(max_devices)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        got = run_json_child(["-m", "hrl.mapping.choose_child", json.dumps(payload)],
                             "the mapping step (--mapping auto)", timeout, env=env, tail=600)
    except RuntimeError as err:
        # The child's own one-line errors (a bad profile, a machine too far from it).
        raise ValueError(str(err).splitlines()[-1]) from err
    return pickle.loads(base64.b64decode(got["pickle"]))


def _child_main(payload: dict) -> dict:
    """The child of `choose_in_child`: starts the backend, chooses, checks the speed."""
    cfg = load_config(payload["config"], payload["overrides"])
    profile = load_profile(payload["profile"])
    max_devices = payload["max_devices"]
    ensure_cpu_devices(max_devices)
    start_profiling_backend(cfg, second_cpu=any(r.placement == SECOND_CPU
                                                for r in profile_rows(profile)))
    choice = choose(cfg, profile, max_devices=max_devices)
    scale, warning = speed_check(profile)
    # What the training process reads of the choice (the pick, its overrides, the ranking,
    # the notes); the plan holds the model's closures, which do not cross processes.
    choice = dataclasses.replace(choice, plan=None)
    return {"pickle": base64.b64encode(pickle.dumps((choice, scale, warning))).decode()}


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
    choice, scale, warning = choose_in_child(args.config, args.overrides, args.profile,
                                             args.mapping_devices)
    if warning:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    choice = dataclasses.replace(choice, predicted_s=choice.predicted_s * scale,
                                 ranking=[(label, t * scale) for label, t in choice.ranking])
    for note in choice.notes:
        console.print(f"mapping: {note}")
    for label, t in choice.ranking:
        mark = "  <- chosen" if label == choice.mapping.label else ""
        console.print(f"mapping {label:>26}: predicted {t * 1e3:8.3f} ms/iteration{mark}")
    cfg = load_config(args.config, [*args.overrides, *overrides_for(choice, cfg)])
    return cfg, choice


def print_comparison(console, choice, summary: dict) -> None:
    """Predicted against measured throughput, like with like, after `hrl train --mapping
    auto`: the prediction is a steady state, so it is set beside the run's steady state
    (chunks after the first, past learning_starts: `summary["steady_*"]`), and the start-up
    (build, compilation, the chunks before it) is given apart."""
    if choice is None:
        return
    steady = summary.get("steady_env_steps_per_s")
    line = (f"mapping {choice.mapping.label}: predicted {choice.predicted_env_steps_per_s:,.0f} "
            f"env steps/s, {choice.predicted_updates_per_s:,.0f} updates/s (steady state); ")
    if steady:
        error = choice.predicted_env_steps_per_s / steady - 1.0
        line += (f"measured {steady:,.0f} env steps/s, "
                 f"{summary['steady_updates_per_s']:,.0f} updates/s (steady state, "
                 f"{summary['steady_chunks']} chunks; prediction {error:+.0%})")
    else:
        line += ("no steady state measured (the run ended within its first chunk or before "
                 "learning_starts; raise train.total_env_steps to compare)")
    console.print(line)
    console.print(f"start-up: {summary.get('init_s', 0.0):.1f} s build and compile, "
                  f"{summary.get('first_chunk_s') or 0.0:.1f} s first chunk; whole session "
                  f"{summary['env_steps_per_s']:,.0f} env steps/s")
