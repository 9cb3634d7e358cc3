"""Does the relaxed priority-update dependency cost reward? Strict vs relaxed s in {1, 4, 16}.

    .venv/bin/python experiments/learning/relaxed_reward.py [--tasks dqn_cartpole ...] [--seeds 10]
                                                   [--staleness 1 4 16]

The paper (Zhang, Meng, Prasanna, TPDS 2023) lets sampling run ahead of the priority updates
by up to s SGD steps, so the update's transfer hides behind the next steps, and reports the
reward loss as negligible. Here every task runs its config's budget with `--seeds` seeds
(vmapped in one jitted program) for the strict dependency and for each staleness s; per run:

* final return: mean of the last 10 episodes at the end of the budget;
* AUC: the mean, over 200 evenly spaced points of the budget, of the last-10-episode mean
  (the area under the learning curve divided by its length: learning speed and level);

and per setting the IQM of each over seeds with its 95% bootstrap interval. Each relaxed
setting is compared with strict by the difference of IQMs and its 95% bootstrap interval
(seeds resampled within each setting): "no measurable difference" when that interval holds 0.

Writes experiments/results/relaxed/relaxed_reward.{csv,md} and <task>.png (IQM curves with
95% bands per setting).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

from hrl.config import load_config
from hrl.mapping.profile import cpu_name
from hrl.runtime import train
from hrl.runtime.aggregate import aggregate_curve, curve_on_grid, iqm, plot_curves, summarize
from hrl.runtime.metrics import read_episodes

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "relaxed"
TASKS = ("dqn_cartpole", "ddpg_pendulum", "ddpg_brax_inverted_pendulum")
FIELDS = ("task", "setting", "seeds", "metric", "iqm", "iqm_ci_low", "iqm_ci_high", "median",
          "diff_vs_strict", "diff_ci_low", "diff_ci_high", "verdict")


def run_setting(task: str, staleness: int, seeds: int, work: Path):
    overrides = [f"seeds={seeds}", "log.progress=false"]
    if staleness:
        overrides += ["train.dependency=relaxed", f"train.staleness={staleness}"]
    cfg = load_config(ROOT / "configs" / f"{task}.yaml", overrides)
    run_dir = work / f"{task}-s{staleness}"
    summary = train(cfg, run_dir=run_dir, progress=True)
    dirs = [run_dir / f"seed-{s}" for s in summary["seeds"]] if seeds > 1 else [run_dir]
    return cfg, [read_episodes(d) for d in dirs]


def scores(logs, window: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """(final return, AUC) per run."""
    grid = np.linspace(0, budget, 201)[1:].astype(np.int64)
    finals = np.array([np.mean(r[-window:]) for _, r in logs])
    aucs = np.array([np.nanmean(curve_on_grid(s, r, window, grid)) for s, r in logs])
    return finals, aucs


def diff_ci(a, b, reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """IQM(a) - IQM(b) and its percentile bootstrap interval (each group resampled)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    da = a[rng.integers(0, len(a), (reps, len(a)))]
    db = b[rng.integers(0, len(b), (reps, len(b)))]
    stats = iqm(da, axis=1) - iqm(db, axis=1)
    return float(iqm(a) - iqm(b)), float(np.percentile(stats, 2.5)), float(
        np.percentile(stats, 97.5))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--staleness", nargs="+", type=int, default=[1, 4, 16])
    args = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows, statements = [], []
    settings = [0, *args.staleness]
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            curves, results = {}, {}
            for s in settings:
                cfg, logs = run_setting(task, s, args.seeds, Path(tmp))
                window, budget = cfg.log.return_window, cfg.train.total_env_steps
                results[s] = scores(logs, window, budget)
                grid = np.linspace(0, budget, 201)[1:].astype(np.int64)
                curves["strict" if s == 0 else f"relaxed s={s}"] = aggregate_curve(
                    logs, window, grid)
            plot_curves(OUT / f"{task}.png", curves, f"strict vs relaxed: {task}", window,
                        cfg.train.solved_return)
            statements.append(_rows_and_statement(task, settings, results, rows))
            print(statements[-1], flush=True)
            _write(rows, statements, args)  # after every task: a long run keeps what it did
    return 0


def _write(rows, statements, args) -> None:
    with (OUT / "relaxed_reward.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    _write_md(rows, statements, args)


def _rows_and_statement(task, settings, results, rows) -> str:
    verdicts = []
    for s in settings:
        label = "strict" if s == 0 else f"relaxed s={s}"
        for m, metric in enumerate(("final", "auc")):
            values = results[s][m]
            stat = summarize(values)
            row = {"task": task, "setting": label, "seeds": len(values), "metric": metric,
                   "iqm": round(stat["iqm"], 2), "iqm_ci_low": round(stat["iqm_ci_low"], 2),
                   "iqm_ci_high": round(stat["iqm_ci_high"], 2),
                   "median": round(stat["median"], 2)}
            if s:
                d, lo, hi = diff_ci(values, results[0][m])
                verdict = "no measurable difference" if lo <= 0 <= hi else (
                    f"{'higher' if d > 0 else 'lower'} by {abs(d):.1f}")
                row.update(diff_vs_strict=round(d, 2), diff_ci_low=round(lo, 2),
                           diff_ci_high=round(hi, 2), verdict=verdict)
                verdicts.append(f"s={s} {metric}: {verdict} ({d:+.1f} [{lo:+.1f}, {hi:+.1f}])")
            rows.append(row)
    return f"{task}: " + "; ".join(verdicts)


def _write_md(rows, statements, args) -> None:
    lines = [
        "# Strict vs relaxed priority-update dependency: reward over seeds",
        "",
        f"{cpu_name()}, {os.cpu_count()} cores, jax "
        f"{jax.__version__}; {args.seeds} seeds per setting, each config's full budget. "
        "Regenerate: `python experiments/learning/relaxed_reward.py`.",
        "Final: mean of the last 10 episodes at the end; AUC: mean of that running mean over "
        "the budget. IQM over seeds [95% bootstrap CI]; difference to strict [95% CI].",
        "",
        "| task | setting | final IQM [CI] | final diff [CI] | AUC IQM [CI] | AUC diff [CI] |",
        "|---|---|---|---|---|---|",
    ]
    by = {(r["task"], r["setting"], r["metric"]): r for r in rows}
    for task, setting in dict.fromkeys((r["task"], r["setting"]) for r in rows):
        cells = []
        for metric in ("final", "auc"):
            r = by[(task, setting, metric)]
            cells.append(f"{r['iqm']:.1f} [{r['iqm_ci_low']:.1f}, {r['iqm_ci_high']:.1f}]")
            cells.append("" if setting == "strict" else
                         f"{r['diff_vs_strict']:+.1f} [{r['diff_ci_low']:+.1f}, "
                         f"{r['diff_ci_high']:+.1f}]")
        lines.append(f"| {task} | {setting} | " + " | ".join(cells) + " |")
    lines += ["", "## Per task", ""] + [f"- {s}" for s in statements]
    (OUT / "relaxed_reward.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
