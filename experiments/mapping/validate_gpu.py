"""The paper's mixed CPU+GPU mappings, measured end to end and set beside the model's prediction.

On a machine with one GPU (minutes of it), then anywhere:

    python experiments/mapping/validate_gpu.py measure --out DIR [--budget SECONDS]
    .venv/bin/python experiments/mapping/validate_gpu.py report --out DIR

`measure` (the GPU machine) runs the mappings of JOBS, most wanted first, each in a fresh
process as `hrl train` would start it, and appends each run's seconds per iteration to
DIR/measured.csv as it ends: a run cut short by the budget or a failure keeps every run before
it. After the first FIRST_RUNS jobs it profiles the DQN CartPole config on GPU_GRID into
DIR/profile/ (`hrl profile`'s rows: every primitive on the CPU and on the GPU, dispatched and
fused; the link rows, the move from the CPU to the GPU among them; the loops' rows, in CPU-only
children), leaving PROFILE_RESERVE seconds of the budget to the other jobs. The GPU's mappings
(`hrl.mapping.validate.gpu_mappings`) run where JAX's default device is the GPU; the CPU's run
in a CPU-only process (JAX_PLATFORMS=cpu), as on a machine without a GPU.

`report` (no GPU needed) predicts every measured run from DIR/profile with the model as it is
now (`hrl.mapping.ranking.predicted_seconds`, the one ranking `hrl map` and `hrl train
--mapping auto` use) and writes DIR/validation.csv, validation.md and validation.png: per run
the predicted and the measured time, and per setting and mode the mapping the model ranks
first against the one measured fastest.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_mapping import (  # noqa: E402  (beside this script)
    CONFIGS,
    ROOT,
    overrides_for,
    plot_predicted_vs_measured,
)

CONFIG = CONFIGS["gymnax"]
OUT = ROOT / "experiments" / "results" / "mapping" / "gpu"
# Two settings with the learner active every iteration (4 SGD steps of the batch per
# iteration of M env steps): a mid-sized net, and a larger one where the GPU's learner has
# more to win.
SETTINGS = {
    "M64-B256-w256": dict(num_envs=64, rollout=1, batch=256, width=256, ratio=1 / 16),
    "M256-B512-w512": dict(num_envs=256, rollout=1, batch=512, width=512, ratio=1 / 64),
}
# Brackets both settings on every size the model fits; the loops' rows at its smallest point,
# in the dispatch runs use and one build each: a profile of a few minutes.
GPU_GRID = {"num_envs": (64, 256), "width": (256, 512), "batch": (256, 512),
            "capacity": (1 << 14,), "fanout": (16,), "repeats": 5, "scan": 20, "rounds": 1,
            "merge": "min", "loop_dispatch": "auto", "loop_builds": 1}
ITERATIONS = 20  # per timed call; three calls per run, the median kept
# (setting, mapping label, mode), most wanted first: the four mappings the paper's claim turns
# on (all on the GPU, fused; the env and inference on the CPU with the learner on the GPU and
# the tree on the CPU's native kernels or on the GPU), strict and relaxed, the CPU's best beside
# them, then the pipelined executor and the all-GPU host loop. The fused loop runs relaxed
# exactly as strict, so only strict.
MIXED = ("train-on-gpu", "train+replay-on-gpu")
JOBS = [
    *[(s, m, mode) for s in ("M256-B512-w512", "M64-B256-w256")
      for m, mode in (("gpu-fused", "strict"), *((m, mode) for m in MIXED
                                                 for mode in ("strict", "relaxed")),
                      ("cpu-fused", "strict"))],
    *[(s, f"{m} pipelined", mode) for s in ("M256-B512-w512", "M64-B256-w256")
      for m in MIXED for mode in ("strict", "relaxed")],
    *[(s, m, mode) for s in ("M256-B512-w512", "M64-B256-w256")
      for m, mode in (("gpu", "strict"), ("cpu", "strict"))],
]
# The jobs run before the profile (the four mappings and the CPU's best, at the larger
# setting), and the seconds the profile leaves the jobs after it.
FIRST_RUNS = 6
PROFILE_RESERVE = 100.0
MEASURED_FIELDS = ("setting", "mapping", "mode", "wall_s", "cpu_s", "env_steps_per_iter",
                   "sgd_per_iter", "run_s", "error")


def catalogue() -> dict:
    """Label -> `RunnableMapping` of every mapping the jobs name (the CPU's and the GPU's)."""
    from hrl.mapping.validate import runnable_mappings

    return {m.label: m for m in runnable_mappings(backends=("jax",), gpu=True)}


def run_overrides(setting: str, label: str, mode: str) -> list[str]:
    from hrl.mapping.validate import mode_overrides

    return [*overrides_for(SETTINGS[setting], ITERATIONS), f"replay.capacity={1 << 14}",
            "train.learning_starts=2048", *catalogue()[label].overrides,
            *mode_overrides(mode, 0 if mode == "strict" else 1)]


def measure(out: Path, budget: float, env: dict, jobs=JOBS, profile_tasks: str = "") -> None:
    """The runs of `jobs` and the profile, within `budget` seconds: the first FIRST_RUNS jobs,
    then the profile (tasks not started by PROFILE_RESERVE seconds before the budget's end are
    left out, and its `skipped` says which), then the other jobs while the budget lasts.
    `profile_tasks`: only the profile's tasks whose label holds it ("none": no profile)."""
    start = time.monotonic()
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import Profiler, start_profiling_backend, write_profile
    from hrl.mapping.profile.io import GRID_SIZES

    cfg = load_config(CONFIG)
    start_profiling_backend(cfg, second_cpu=False)
    import jax

    from hrl.replay import native

    print(f"jax {jax.__version__}, devices {jax.devices()}; native tree: "
          f"{native.unavailable_reason() or 'built'}", flush=True)
    path = out / "measured.csv"
    with open(path, "w", newline="") as f:
        csv.DictWriter(f, MEASURED_FIELDS).writeheader()
    deadline = start + budget
    _run_jobs(jobs[:FIRST_RUNS], path, deadline, env)
    prof = Profiler(cfg, grid=GPU_GRID, backends=("jax",), progress=False)
    if profile_tasks:
        every = prof.tasks
        prof.tasks = lambda: [t for t in every() if profile_tasks in t[0]]
    try:
        rows = prof.run(deadline=deadline - PROFILE_RESERVE)
        write_profile(rows, out / "profile", to_dict(cfg), prof.skipped, prof.speed,
                      prof.rounds, prof.merge, {k: GPU_GRID[k] for k in GRID_SIZES})
        print(f"profile: {len(rows)} rows at {time.monotonic() - start:.0f} s; skipped: "
              f"{prof.skipped}", flush=True)
    except Exception:  # the runs are worth having without it: they do not read it
        traceback.print_exc()
        print("profile FAILED; the runs go on", flush=True)
    _run_jobs(jobs[FIRST_RUNS:], path, deadline, env)


def _run_jobs(jobs, path: Path, deadline: float, env: dict) -> None:
    """Each job in a fresh process (a CPU mapping's without the GPU), its row appended to
    `path` as it ends; none started within 20 s of `deadline`, none run past it."""
    from hrl.mapping.validate import uses_gpu
    from hrl.runtime.cpu_backend import run_json_child

    by_label = catalogue()
    for setting, label, mode in jobs:
        left = deadline - time.monotonic()
        if left < 20:
            print(f"budget spent: {setting} {label} {mode} and the rest not run", flush=True)
            return
        child_env = dict(env)
        if not uses_gpu(by_label[label].mapping):
            child_env["JAX_PLATFORMS"] = "cpu"  # the CPU's mappings as on a CPU-only machine
        t0 = time.monotonic()
        row = {"setting": setting, "mapping": label, "mode": mode, "error": ""}
        try:
            m = run_json_child([str(Path(__file__).parent / "validate_mapping.py"), "--measure",
                                json.dumps([str(CONFIG), run_overrides(setting, label, mode),
                                            ITERATIONS])],
                               f"{setting} {label} {mode}", min(300.0, left), cwd=ROOT,
                               env=child_env, tail=600)
            row.update({k: m[k] for k in ("wall_s", "cpu_s", "env_steps_per_iter",
                                          "sgd_per_iter")})
        except RuntimeError as err:
            row["error"] = " ".join(str(err).split())[-400:]
        row["run_s"] = round(time.monotonic() - t0, 1)
        with open(path, "a", newline="") as f:
            csv.DictWriter(f, MEASURED_FIELDS).writerow(row)
        shown = (f"{row['wall_s'] * 1e3:.3f} ms/iteration" if not row["error"]
                 else f"FAILED {row['error'][-200:]}")
        print(f"{setting} {label} {mode}: {shown} ({row['run_s']} s)", flush=True)


def report(out: Path) -> str:
    """validation.csv / .md / .png from DIR/measured.csv and DIR/profile (module docstring)."""
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import rank_mappings

    profile = load_profile(out / "profile")
    with open(out / "measured.csv", newline="") as f:
        runs = [r for r in csv.DictReader(f)]
    results = []
    for r in runs:
        cfg = load_config(CONFIG, run_overrides(r["setting"], r["mapping"], r["mode"]))
        ranking = rank_mappings(cfg, profile, backends=("jax",), staleness=1)
        pred = ranking.get(r["mapping"])
        row = {"setting": r["setting"], "mapping": r["mapping"], "mode": r["mode"],
               "predicted_s": pred.seconds, "uncertainty": pred.uncertainty,
               "measured_s": float(r["wall_s"]) if not r["error"] else "",
               "env_steps_per_iter": r["env_steps_per_iter"],
               "predicted_rank": [m.label for m in ranking.mappings].index(r["mapping"]) + 1,
               "ranked_first": ranking.mappings[0].label, "error": r["error"]}
        if row["measured_s"]:
            row["prediction_error"] = pred.seconds / row["measured_s"] - 1.0
            row["measured_env_steps_per_s"] = int(r["env_steps_per_iter"]) / row["measured_s"]
        results.append(row)
    fields = ["setting", "mapping", "mode", "predicted_s", "measured_s", "prediction_error",
              "uncertainty", "measured_env_steps_per_s", "env_steps_per_iter",
              "predicted_rank", "ranked_first", "error"]
    with open(out / "validation.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(results)
    text = _markdown(results, profile)
    (out / "validation.md").write_text(text)
    measured = [r for r in results if r["measured_s"]]
    if measured:
        plot_predicted_vs_measured(measured, out / "validation.png", band=0.20,
                                   title="CPU+GPU mappings")
    return text


def _markdown(results: list[dict], profile: dict) -> str:
    ok = [r for r in results if r["measured_s"]]
    machine = profile.get("machine", {})
    lines = ["# Mixed CPU+GPU mappings: predicted against measured", "",
             f"Machine: {machine.get('cpu_model', '?')}, {machine.get('cpus', '?')} CPUs, "
             f"{', '.join(machine.get('accelerators') or ['a GPU'])}; jax "
             f"{machine.get('jax', '?')}.", "",
             "Regenerate: `.venv/bin/python experiments/mapping/validate_gpu.py report` (the "
             "predictions, this table and validation.png, from the profile in `profile/` and "
             "the runs in `measured.csv`, anywhere). Both were measured on that machine by "
             "`python experiments/mapping/validate_gpu.py measure` "
             "(`experiments/bench/gpu_all.sh mixed`). Each run: the median of three timed "
             "calls of the runtime's loop in a fresh process, in seconds per iteration of the "
             "setting's env steps; a CPU mapping's run in a CPU-only process.", "",
             "| setting | mapping | mode | predicted [ms/iter] | measured [ms/iter] | error | "
             "measured env steps/s |", "|---|---|---|---|---|---|---|"]
    for r in results:
        if r["measured_s"]:
            lines.append(f"| {r['setting']} | {r['mapping']} | {r['mode']} | "
                         f"{r['predicted_s'] * 1e3:.3f} | {r['measured_s'] * 1e3:.3f} | "
                         f"{r['prediction_error']:+.0%} | "
                         f"{r['measured_env_steps_per_s']:,.0f} |")
        else:
            lines.append(f"| {r['setting']} | {r['mapping']} | {r['mode']} | "
                         f"{r['predicted_s'] * 1e3:.3f} | failed: {r['error'][-120:]} | | |")
    if ok:
        errors = [abs(r["prediction_error"]) for r in ok]
        lines += ["", f"Median absolute error {statistics.median(errors):.0%} over {len(ok)} "
                  f"runs (worst {max(errors):.0%}).", "",
                  "| setting | mode | predicted fastest (of the measured) | measured fastest | "
                  "its time / the fastest's |", "|---|---|---|---|---|"]
        for setting in SETTINGS:
            for mode in ("strict", "relaxed"):
                # The fused loops run relaxed as strict: they compete in both modes.
                rs = [r for r in ok if r["setting"] == setting
                      and (r["mode"] == mode or "fused" in r["mapping"])]
                if len(rs) < 2:
                    continue
                pick = min(rs, key=lambda r: r["predicted_s"])
                best = min(rs, key=lambda r: r["measured_s"])
                lines.append(f"| {setting} | {mode} | {pick['mapping']} | {best['mapping']} | "
                             f"{pick['measured_s'] / best['measured_s']:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["measure", "report"])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--budget", type=float, default=420.0,
                    help="measure: seconds for the profile and the runs together; the jobs "
                         "not started by then are left out (default 420)")
    ap.add_argument("--jobs", default="",
                    help="measure: only the jobs of these mappings, comma separated labels "
                         "(default: every job)")
    ap.add_argument("--profile-tasks", default="",
                    help="measure: only the profile's tasks whose label holds this text, e.g. "
                         "'on cpu' ('none': no profile)")
    ap.add_argument("--skip", help="measure: a measured.csv whose runs (those without an "
                                   "error) are not run again")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.step == "report":
        print(report(out))
        return 0
    env = dict(os.environ)  # the runs' own: each takes the GPU memory a run takes
    # This process profiles the GPU and then only waits for its children: it takes GPU memory
    # as it needs it, not XLA's default share of the card.
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    wanted = set(filter(None, args.jobs.split(",")))
    done = set()
    if args.skip:
        with open(args.skip, newline="") as f:
            done = {(r["setting"], r["mapping"], r["mode"]) for r in csv.DictReader(f)
                    if not r["error"]}
    measure(out, args.budget, env,
            [j for j in JOBS if (not wanted or j[1] in wanted) and j not in done],
            args.profile_tasks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
