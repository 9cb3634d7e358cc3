"""The fixed-point learner (hrl.fixed_point, `agent.numerics: fixed`) over 10 vmapped seeds,
beside the float32 learner, on the float learner's configs.

    .venv/bin/python experiments/learning/fixed_point_learning.py [--configs dqn_cartpole ...]
                [--seeds 10] [--variant NAME] [--report-only]

Each variant is a config plus the overrides that select the fixed-point learner (its formats
and its optimizer, momentum SGD; see VARIANTS). Runs train into experiments/results/
fixed_point/runs/<variant>/ (not committed: the per-seed logs are regenerated), and the
report reads them back:

* <variant>.csv / .png: the aggregate curve (median and IQR of the last-10-episode return over
  seeds) beside the float32 learner's curve of the same config
  (experiments/results/learning/<config>.csv, from learning_quality.py);
* <variant>_seeds.csv: per seed, env steps to the bar, final return, final greedy eval return,
  whether it ends at the bar;
* fixed_point_learning.{csv,md}: one row per variant with the issue's criteria: final eval
  at the bar on >= 8/10 seeds, and the median env steps to the bar within 1.5x the float
  learner's (from learning_quality.csv).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from hrl.config import load_config
from hrl.runtime import train
from hrl.runtime.aggregate import aggregate_curve, plot_curves, write_curve_csv
from hrl.runtime.metrics import read_episodes

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "fixed_point"
FLOAT = ROOT / "results" / "learning"

FIXED = ["agent.numerics=fixed", "agent.optimizer=sgd", "agent.max_grad_norm=null"]
# variant -> (config, overrides). The formats are the defaults of agent.fixed_point unless a
# variant names others.
VARIANTS = {
    "dqn_cartpole_fixed": ("dqn_cartpole", [*FIXED, "agent.learning_rate=0.005",
                                            "agent.fixed_point.lr_frac=28"]),
    "dqn_cartpole_fixed_lr2e-3": ("dqn_cartpole", [*FIXED, "agent.learning_rate=0.002"]),
    "dqn_cartpole_fixed_w12": ("dqn_cartpole", [
        *FIXED, "agent.learning_rate=0.005", "agent.fixed_point.act=[12,6]",
        "agent.fixed_point.weight=[12,9]"]),
    "ddpg_pendulum_fixed": ("ddpg_pendulum", [
        *FIXED, "agent.actor_learning_rate=0.0005", "agent.critic_learning_rate=0.002"]),
    "ddpg_pendulum_fixed_lr1e-3": ("ddpg_pendulum", [
        *FIXED, "agent.actor_learning_rate=0.0002", "agent.critic_learning_rate=0.001"]),
}

FIELDS = ("variant", "config", "seeds", "solved", "ended_at_bar", "threshold",
          "budget_env_steps", "median_steps_to_solved", "float_median_steps_to_solved",
          "steps_ratio", "final_eval_iqm", "final_eval_median", "saturations_per_step",
          "wall_s", "overrides", "meets_issue")


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", nargs="+", default=["dqn_cartpole_fixed", "ddpg_pendulum_fixed"])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--report-only", action="store_true",
                   help="read the runs already under results/fixed_point/runs")
    return p.parse_args()


def run(variant: str, seeds: int) -> None:
    name, overrides = VARIANTS[variant]
    base = [f"seeds={seeds}", "log.progress=false", *overrides]
    cfg = load_config(ROOT / "configs" / f"{name}.yaml", base)
    cfg = load_config(ROOT / "configs" / f"{name}.yaml",
                      [*base, f"train.eval_every={cfg.train.total_env_steps}"])
    t0 = time.perf_counter()
    train(cfg, run_dir=OUT / "runs" / variant, progress=True)
    (OUT / "runs" / variant / "wall_s.txt").write_text(f"{time.perf_counter() - t0:.1f}\n")


def _float_row(config: str) -> dict:
    path = FLOAT / "learning_quality.csv"
    for r in csv.DictReader(path.read_text().splitlines()):
        if r["config"] == config:
            return r
    return {}


def _saturations(seed_dir: Path) -> float:
    """Mean saturation count per SGD step over the run's logged chunks."""
    rows = list(csv.DictReader((seed_dir / "metrics.csv").read_text().splitlines()))
    values = [float(r["saturations"]) for r in rows if r.get("saturations") not in (None, "")]
    return float(np.mean(values)) if values else float("nan")


def report(variant: str) -> dict:
    name, overrides = VARIANTS[variant]
    run_dir = OUT / "runs" / variant
    summary = json.loads((run_dir / "summary.json").read_text())
    per_seed = summary["per_seed"]
    seed_dirs = [run_dir / f"seed-{r['seed']}" for r in per_seed]
    logs = [read_episodes(d) for d in seed_dirs]
    window = 10
    grid = np.linspace(0, summary["env_steps"], 201)[1:].astype(np.int64)
    curve = aggregate_curve(logs, window, grid)
    write_curve_csv(OUT / f"{variant}.csv", curve)
    curves = {f"fixed point, {len(per_seed)} seeds": curve}
    float_csv = FLOAT / f"{name}.csv"
    if float_csv.exists():
        rows = list(csv.DictReader(float_csv.read_text().splitlines()))
        curves["float32 (learning_quality)"] = {
            k: np.asarray([float(r[k]) if r[k] != "" else np.nan for r in rows])
            for k in rows[0]}
    threshold = summary.get("solved_return") or _float_row(name).get("threshold")
    plot_curves(OUT / f"{variant}.png", curves, f"{variant}: fixed point beside float32",
                window, float(threshold))
    with (OUT / f"{variant}_seeds.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("seed", "steps_to_solved", "final_return", "final_eval_return",
                    "ends_at_bar", "saturations_per_step"))
        for r, d in zip(per_seed, seed_dirs, strict=True):
            w.writerow((r["seed"], r["steps_to_solved"] or "", r["recent_return"],
                        r["final_eval_return"], int(r["ends_at_bar"]), _saturations(d)))
    reached = [r["steps_to_solved"] for r in per_seed if r["steps_to_solved"] is not None]
    fl = _float_row(name)
    med = int(np.median(reached)) if reached else None
    fmed = int(fl["median_steps_to_solved"]) if fl.get("median_steps_to_solved") else None
    ratio = round(med / fmed, 2) if med and fmed else None
    evals = [r["final_eval_return"] for r in per_seed if r["final_eval_return"] is not None]
    ended = summary["seeds_ending_at_bar"]
    wall = (run_dir / "wall_s.txt").read_text().strip() if (run_dir / "wall_s.txt").exists() \
        else ""
    return {
        "variant": variant, "config": name, "seeds": len(per_seed), "solved": len(reached),
        "ended_at_bar": ended, "threshold": threshold,
        "budget_env_steps": summary["env_steps"],
        "median_steps_to_solved": med or "", "float_median_steps_to_solved": fmed or "",
        "steps_ratio": ratio or "",
        "final_eval_iqm": round(summary["final_eval_return"]["iqm"], 1),
        "final_eval_median": round(float(np.median(evals)), 1) if evals else "",
        "saturations_per_step": round(float(np.mean([_saturations(d) for d in seed_dirs])), 3),
        "wall_s": wall, "overrides": " ".join(overrides),
        "meets_issue": bool(ended >= 0.8 * len(per_seed) and ratio is not None and ratio <= 1.5),
    }


def write_tables(rows: list[dict]) -> None:
    path = OUT / "fixed_point_learning.csv"
    old = []
    if path.exists():
        names = {r["variant"] for r in rows}
        old = [r for r in csv.DictReader(path.read_text().splitlines())
               if r["variant"] not in names]
    rows = old + rows
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# The fixed-point learner beside float32",
        "",
        f"{os.cpu_count()} cores. Regenerate: `python experiments/learning/"
        "fixed_point_learning.py --variants <names>` (runs, then this table); the float32 "
        "columns are experiments/results/learning/learning_quality.csv. The issue's bar: final "
        "greedy eval at the bar on >= 8/10 seeds, median env steps to the bar within 1.5x the "
        "float learner's.",
        "",
        "| variant | solved | end at the bar (eval) | median steps to bar | float32 median | "
        "ratio | final eval IQM | saturations / SGD step | meets the issue | wall s | "
        "overrides |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['solved']}/{r['seeds']} | {r['ended_at_bar']}/{r['seeds']} "
            f"| {r['median_steps_to_solved']} | {r['float_median_steps_to_solved']} | "
            f"{r['steps_ratio']} | {r['final_eval_iqm']} | {r['saturations_per_step']} | "
            f"{r['meets_issue']} | {r['wall_s']} | `{r['overrides']}` |")
    (OUT / "fixed_point_learning.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    args = _parse()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for variant in args.variants:
        if not args.report_only:
            run(variant, args.seeds)
        rows.append(report(variant))
        print(rows[-1], flush=True)
        write_tables([rows[-1]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
