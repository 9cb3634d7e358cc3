"""Run-directory logs: per-chunk metrics (CSV or JSONL), per-episode returns, evaluations,
a PNG curve."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from hrl.runtime.log_sinks import scalars

EPISODE_FIELDS = ("env_steps", "episode_return")
EVAL_FIELDS = ("env_steps", "eval_return", "eval_return_min", "eval_return_max", "episodes")


class MetricsLog:
    """Appends rows to RUN_DIR/metrics.{csv,jsonl} and RUN_DIR/episodes.csv.

    On resume, rows logged after the checkpoint's env step (work that was lost) are dropped
    first, so the logs describe exactly the resumed trajectory.
    """

    def __init__(self, run_dir: str | Path, fmt: str = "csv", resume_at: int | None = None,
                 sinks: list | None = None):
        self.run_dir = Path(run_dir)
        # further writers of every row and episode (`log_sinks`: TensorBoard, W&B)
        self.sinks = list(sinks or [])
        self.fmt = fmt
        self.metrics_path = self.run_dir / f"metrics.{fmt}"
        self.episodes_path = self.run_dir / "episodes.csv"
        self._fields: list[str] | None = None
        if resume_at is not None:
            self._truncate(resume_at)
        elif self.metrics_path.exists() or self.episodes_path.exists():
            self.metrics_path.unlink(missing_ok=True)
            self.episodes_path.unlink(missing_ok=True)
        if not self.episodes_path.exists():
            with self.episodes_path.open("w", newline="") as f:
                csv.writer(f).writerow(EPISODE_FIELDS)

    def _truncate(self, env_steps: int) -> None:
        if self.episodes_path.exists():
            rows = list(csv.reader(self.episodes_path.read_text().splitlines()))
            kept = [rows[0]] + [r for r in rows[1:] if int(r[0]) <= env_steps]
            with self.episodes_path.open("w", newline="") as f:
                csv.writer(f).writerows(kept)
        if self.metrics_path.exists():
            if self.fmt == "csv":
                rows = list(csv.reader(self.metrics_path.read_text().splitlines()))
                if rows:
                    self._fields = rows[0]
                    col = rows[0].index("env_steps")
                    kept = [rows[0]] + [r for r in rows[1:] if int(float(r[col])) <= env_steps]
                    with self.metrics_path.open("w", newline="") as f:
                        csv.writer(f).writerows(kept)
            else:
                lines = self.metrics_path.read_text().splitlines()
                kept = [ln for ln in lines if json.loads(ln)["env_steps"] <= env_steps]
                self.metrics_path.write_text("".join(ln + "\n" for ln in kept))

    def episodes(self, env_steps: np.ndarray, returns: np.ndarray) -> None:
        if len(env_steps) == 0:
            return
        for sink in self.sinks:
            sink.episodes(env_steps, returns)
        with self.episodes_path.open("a", newline="") as f:
            writer = csv.writer(f)
            for step, ret in zip(env_steps, returns, strict=True):
                writer.writerow((int(step), f"{float(ret):.6g}"))

    def row(self, values: dict) -> None:
        values = {k: (float(v) if isinstance(v, np.floating | float) else v)
                  for k, v in values.items()}
        if self.sinks:
            numbers = scalars(values)
            for sink in self.sinks:
                sink.row(int(values["env_steps"]), numbers)
        if self.fmt == "jsonl":
            with self.metrics_path.open("a") as f:
                f.write(json.dumps(values) + "\n")
            return
        new_file = not self.metrics_path.exists()
        if self._fields is None:
            self._fields = list(values)
        with self.metrics_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._fields, extrasaction="ignore")
            if new_file:
                writer.writeheader()
            writer.writerow(values)

    def close(self) -> None:
        """Close the further writers (flushes their files); the CSV files need nothing."""
        for sink in self.sinks:
            sink.close()
        self.sinks = []


def read_episodes(run_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    path = Path(run_dir) / "episodes.csv"
    rows = list(csv.reader(path.read_text().splitlines()))[1:]
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    data = np.asarray(rows, np.float64)
    return data[:, 0].astype(np.int64), data[:, 1].astype(np.float32)


class EvalLog:
    """RUN_DIR/eval.csv: one row per evaluation (env step, mean, min and max of the episode
    returns, episodes). On resume, rows after the checkpoint's env step are dropped."""

    def __init__(self, run_dir: str | Path, resume_at: int | None = None):
        self.path = Path(run_dir) / "eval.csv"
        if resume_at is not None and self.path.exists():
            rows = read_eval_rows(self.path.parent)
            rows = [r for r in rows if r["env_steps"] <= resume_at]
            self._write(rows)
        elif resume_at is None or not self.path.exists():
            self._write([])

    def _write(self, rows: list[dict]) -> None:
        with self.path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
            writer.writeheader()
            writer.writerows(rows)

    def add(self, env_steps: int, returns: np.ndarray) -> dict:
        row = eval_row(env_steps, returns)
        with self.path.open("a", newline="") as f:
            csv.DictWriter(f, fieldnames=EVAL_FIELDS).writerow(row)
        return row


def eval_row(env_steps: int, returns) -> dict:
    returns = np.asarray(returns, np.float64)
    return {"env_steps": int(env_steps), "eval_return": float(np.mean(returns)),
            "eval_return_min": float(np.min(returns)),
            "eval_return_max": float(np.max(returns)), "episodes": len(returns)}


def read_eval_rows(run_dir: str | Path) -> list[dict]:
    """The rows of RUN_DIR/eval.csv (empty when the run evaluated nothing)."""
    path = Path(run_dir) / "eval.csv"
    if not path.exists():
        return []
    rows = list(csv.DictReader(path.read_text().splitlines()))
    return [{"env_steps": int(r["env_steps"]), "eval_return": float(r["eval_return"]),
             "eval_return_min": float(r["eval_return_min"]),
             "eval_return_max": float(r["eval_return_max"]), "episodes": int(r["episodes"])}
            for r in rows]


def plot_learning_curve(run_dir: str | Path, title: str, window: int = 10) -> Path | None:
    """RUN_DIR/learning_curve.png: episode returns and their running mean vs env steps, and
    the evaluations of RUN_DIR/eval.csv if the run has any."""
    steps, returns = read_episodes(run_dir)
    if len(steps) == 0:
        return None
    fig = Figure(figsize=(7, 4), dpi=110)  # no pyplot: no global backend, nothing to close
    ax = fig.subplots()
    ax.plot(steps, returns, ".", ms=2, alpha=0.35, color="tab:blue", label="episode return")
    if len(returns) >= window:
        kernel = np.ones(window) / window
        smooth = np.convolve(returns, kernel, mode="valid")
        ax.plot(steps[window - 1 :], smooth, color="tab:red", lw=1.8,
                label=f"mean of last {window}")
    evals = read_eval_rows(run_dir)
    if evals:
        x = [r["env_steps"] for r in evals]
        ax.errorbar(x, [r["eval_return"] for r in evals],
                    yerr=[[r["eval_return"] - r["eval_return_min"] for r in evals],
                          [r["eval_return_max"] - r["eval_return"] for r in evals]],
                    fmt="o-", ms=3, lw=1.0, capsize=2, color="tab:green",
                    label=f"eval, {evals[-1]['episodes']} episodes (mean, min-max)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = Path(run_dir) / "learning_curve.png"
    fig.savefig(path)
    return path
