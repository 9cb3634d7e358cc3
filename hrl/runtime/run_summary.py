"""What a run leaves behind when it ends: per-seed results, the aggregate over seeds and
RUN_DIR/summary.json, all from the logs in the run directory (episodes, evaluations)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from hrl.runtime.aggregate import (
    aggregate_curve,
    plot_curves,
    steps_to_threshold,
    summarize,
    write_curve_csv,
)
from hrl.runtime.checkpoint import latest_checkpoint
from hrl.runtime.metrics import read_episodes, read_eval_rows


def best_eval(run_dir: Path) -> float | None:
    """The eval return of the run's best checkpoint (RUN_DIR/best/), None if it has none."""
    found = latest_checkpoint(run_dir / "best")
    return None if found is None else found[1].get("eval_return")


def last_eval_step(seed_dir: Path) -> int | None:
    """The env step of the seed's last evaluation (None: it has none)."""
    rows = read_eval_rows(seed_dir)
    return rows[-1]["env_steps"] if rows else None


def seed_result(seed, seed_dir, episodes, window, threshold) -> dict:
    """One seed's outcome from its episodes: final return, and steps / wall seconds to the bar."""
    steps, returns = episodes
    row = {
        "seed": seed,
        "recent_return": float(np.mean(returns[-window:])) if len(returns) >= window else None,
        "episodes": len(returns),
    }
    evals = read_eval_rows(seed_dir)
    if evals:  # the last evaluation is the run's final one (the end of the run, or its stop)
        row["final_eval_return"] = evals[-1]["eval_return"]
        row["best_eval_return"] = max(r["eval_return"] for r in evals)
        if threshold is not None:
            row["ends_at_bar"] = evals[-1]["eval_return"] >= threshold
    if threshold is not None:
        reached = steps_to_threshold(steps, returns, window, threshold)
        row["steps_to_solved"] = reached
        row["wall_s_to_solved"] = None
        metrics = Path(seed_dir) / "metrics.csv"
        if reached is not None and metrics.exists():
            # The wall clock of the chunk whose end first showed the bar reached.
            rows = list(csv.DictReader(metrics.read_text().splitlines()))
            done = [float(r["wall_s"]) for r in rows if int(float(r["env_steps"])) >= reached]
            row["wall_s_to_solved"] = round(done[0], 3) if done else None
    return row


def finish(summary, seed_dirs, run_dir, cfg) -> None:
    """Per-seed results from each seed's episodes and, for several seeds, the aggregate
    curve; summary.json last."""
    window, threshold = cfg.log.return_window, summary["solved_return"]
    logs = [read_episodes(d) for d in seed_dirs]
    seeds = summary["seeds"][: len(seed_dirs)]  # an interrupted host run stops early
    per_seed = [
        seed_result(seed, d, episodes, window, threshold)
        for seed, d, episodes in zip(seeds, seed_dirs, logs, strict=True)
    ]
    summary["per_seed"] = per_seed
    if threshold is not None:
        summary["solved_runs"] = sum(r["steps_to_solved"] is not None for r in per_seed)
    evals = [r["final_eval_return"] for r in per_seed if "final_eval_return" in r]
    if evals and len(evals) == len(per_seed):
        summary["final_eval_return"] = summarize(evals)
        if threshold is not None:
            summary["seeds_ending_at_bar"] = sum(r["ends_at_bar"] for r in per_seed)
        best = best_eval(Path(run_dir))
        summary["best_checkpoint_eval_return"] = best
    if len(seed_dirs) > 1:
        finals = [r["recent_return"] for r in per_seed if r["recent_return"] is not None]
        if len(finals) == len(per_seed):
            summary["final_return"] = summarize(finals)
        grid = np.linspace(0, max(summary["env_steps"], 1), 201)[1:].astype(np.int64)
        if all(len(s) >= window for s, _ in logs):
            curve = aggregate_curve(logs, window, grid)
            write_curve_csv(run_dir / "aggregate.csv", curve)
            plot_curves(
                run_dir / "aggregate.png", {f"{len(seed_dirs)} seeds": curve},
                f"{cfg.algo.upper()} + PER, {cfg.env.name}", window, threshold,
            )
    (Path(run_dir) / "summary.json").write_text(json.dumps(summary, indent=1))


def steady_rates(steady: list[tuple[float, int, int]], seeds: int) -> dict:
    """Env steps and updates per second over the steady chunks (seconds, env steps, updates
    per seed), summed over seeds, and how many chunks that is."""
    seconds = sum(dt for dt, _, _ in steady)
    if not steady or seconds <= 0:
        return {"steady_env_steps_per_s": None, "steady_updates_per_s": None,
                "steady_chunks": 0}
    return {"steady_env_steps_per_s": seeds * sum(n for _, n, _ in steady) / seconds,
            "steady_updates_per_s": seeds * sum(u for _, _, u in steady) / seconds,
            "steady_chunks": len(steady)}


def _mean_of(values) -> float | None:
    """The mean of the values that are not None; None when all are."""
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def summary_over_seeds(run_dir: str, seeds: list[int], summaries: list[dict],
                       wall: float) -> dict:
    """summary.json of `seeds` run one after another (`summaries`: the seeds' own, in order,
    those run so far), over `wall` seconds of this session."""
    last = summaries[-1]
    # One seed at a time: the rate over all seeds is the mean of the seeds' own rates.
    env_rate = sum(s["env_steps_per_s"] for s in summaries) / len(summaries)
    interrupted = len(summaries) < len(seeds) or last["interrupted"]
    return {
        **{k: last[k] for k in ("config", "env_steps", "updates", "iterations", "fused",
                                "return_window", "solved_return")},
        "run_dir": run_dir,
        "seeds": seeds,
        "wall_s_this_session": round(wall, 3),
        "wall_s_total": round(sum(s["wall_s_total"] for s in summaries), 3),
        "env_steps_per_s": env_rate,
        "updates_per_s": sum(s["updates_per_s"] for s in summaries) / len(summaries),
        "env_steps_per_s_per_seed": env_rate,
        **{k: _mean_of(s.get(k) for s in summaries)
           for k in ("steady_env_steps_per_s", "steady_updates_per_s")},
        "steady_chunks": sum(s.get("steady_chunks", 0) for s in summaries),
        "recent_return": float(np.median([s["recent_return"] for s in summaries
                                          if s["recent_return"] is not None] or [np.nan])),
        "interrupted": interrupted,
        "stopped_by": last.get("stopped_by") if interrupted else None,
        "solved_at_env_steps": None,
    }
