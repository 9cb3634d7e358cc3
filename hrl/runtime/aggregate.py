"""Statistics over independent runs (seeds), reported the way rliable does.

Agarwal et al., "Deep RL at the Edge of the Statistical Precipice" (NeurIPS 2021): a handful
of seeds is a sample, so report the interquartile mean (the mean of the middle 50% of runs:
robust to one outlier seed, less noisy than the median) with a bootstrap confidence interval,
and show the spread (median and interquartile band) rather than one curve.

Everything here works on episode logs, `(env step at episode end, return)` per run, so it
applies alike to seeds vmapped in one program, seeds run one after another, and saved runs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy.stats import trim_mean

CURVE_FIELDS = ("env_steps", "median", "q25", "q75", "iqm", "iqm_ci_low", "iqm_ci_high", "runs")


def running_mean(returns: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last `window` episodes after each episode (NaN until `window` have ended)."""
    returns = np.asarray(returns, np.float64)
    out = np.full(len(returns), np.nan)
    if len(returns) >= window:
        sums = np.cumsum(np.concatenate([[0.0], returns]))
        out[window - 1 :] = (sums[window:] - sums[:-window]) / window
    return out


def first_solved(steps, returns, window: int, threshold: float) -> tuple[int, float] | None:
    """hrl's one rule for "solved": the first episode end at which the mean of the last
    `window` completed episodes reaches `threshold`, checked at every episode end.
    Returns (env step at that episode's end, that mean), or None: never. O(episodes)."""
    means = running_mean(returns, window)
    reached = np.nonzero(means >= threshold)[0]
    if not len(reached):
        return None
    return int(np.asarray(steps)[reached[0]]), float(means[reached[0]])


def steps_to_threshold(steps, returns, window: int, threshold: float) -> int | None:
    """Env step of the first episode end at which the mean of the last `window` returns
    reaches `threshold` (None: never); `first_solved`'s step."""
    hit = first_solved(steps, returns, window, threshold)
    return None if hit is None else hit[0]


class SolvedWatch:
    """`first_solved` applied to a log that arrives in pieces (a run's chunks): fed each
    piece's episodes in order, it finds the same episode `first_solved` finds on the whole
    log, so a driver that checks at chunk ends still stops on, and reports, the episode that
    solved. Holds the last `window - 1` returns; O(episodes of the piece) per feed."""

    def __init__(self, window: int, threshold: float | None, steps=(), returns=()):
        self.window, self.threshold = window, threshold
        self.hit: tuple[int, float] | None = None
        self._tail = np.zeros(0, np.float64)
        self.feed(steps, returns)

    @property
    def solved_at(self) -> int | None:
        """Env step of the solving episode's end (None: not solved yet)."""
        return None if self.hit is None else self.hit[0]

    def feed(self, steps, returns) -> tuple[int, float] | None:
        """Add episodes (env step at their end, return), oldest first; returns `hit`."""
        returns = np.asarray(returns, np.float64)
        if self.hit is None and self.threshold is not None and len(returns):
            # The tail's own window means were checked before; padding its steps with -1
            # cannot be picked: the running mean is NaN over the first window - 1 entries.
            pad = np.full(len(self._tail), -1, np.int64)
            self.hit = first_solved(np.concatenate([pad, np.asarray(steps, np.int64)]),
                                    np.concatenate([self._tail, returns]), self.window,
                                    self.threshold)
        keep = self.window - 1
        self._tail = np.concatenate([self._tail, returns])[-keep:] if keep else self._tail[:0]
        return self.hit


def curve_on_grid(steps, returns, window: int, grid: np.ndarray) -> np.ndarray:
    """The running mean as it stood at each grid step (NaN where fewer than `window` ended)."""
    means = running_mean(returns, window)
    idx = np.searchsorted(np.asarray(steps), grid, side="right") - 1
    return np.where(idx >= 0, means[np.maximum(idx, 0)], np.nan)


def iqm(scores, axis=None):
    """Interquartile mean: the mean of the middle half (25% trimmed off each end)."""
    return trim_mean(np.asarray(scores, np.float64), 0.25, axis=axis)


def bootstrap_ci(scores, statistic=iqm, reps: int = 2000, level: float = 0.95, seed: int = 0):
    """Percentile bootstrap interval of `statistic` over runs (resampled with replacement)."""
    scores = np.asarray(scores, np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(scores), size=(reps, len(scores)))
    stats = statistic(scores[picks], axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    return float(np.percentile(stats, tail)), float(np.percentile(stats, 100.0 - tail))


def summarize(scores) -> dict:
    """IQM with its 95% bootstrap interval, median and quartiles of one score per run."""
    scores = np.asarray(scores, np.float64)
    low, high = bootstrap_ci(scores)
    q25, med, q75 = np.percentile(scores, [25, 50, 75])
    return {"iqm": float(iqm(scores)), "iqm_ci_low": low, "iqm_ci_high": high,
            "median": float(med), "q25": float(q25), "q75": float(q75), "runs": len(scores)}


def aggregate_curve(episode_logs, window: int, grid: np.ndarray) -> dict[str, np.ndarray]:
    """Per grid step over runs: median, interquartile band, IQM and its 95% bootstrap CI.
    A grid step enters once every run has `window` finished episodes there."""
    table = np.stack([curve_on_grid(s, r, window, grid) for s, r in episode_logs])  # (runs, G)
    keep = ~np.isnan(table).any(axis=0)
    grid, table = np.asarray(grid)[keep], table[:, keep]
    rows = [summarize(table[:, j]) for j in range(table.shape[1])]
    curve = {"env_steps": grid}
    for name in CURVE_FIELDS[1:]:
        curve[name] = np.asarray([row[name] for row in rows])
    return curve


def write_curve_csv(path: str | Path, curve: dict) -> None:
    with Path(path).open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CURVE_FIELDS)
        for j in range(len(curve["env_steps"])):
            writer.writerow(
                [int(curve["env_steps"][j])]
                + [f"{float(curve[k][j]):.6g}" for k in CURVE_FIELDS[1:-1]]
                + [int(curve["runs"][j])]
            )


def plot_curves(path: str | Path, curves: dict[str, dict], title: str, window: int,
                threshold: float | None = None, ylabel: str = "return") -> Path:
    """One PNG: per labelled curve the median line with its interquartile band, and the IQM
    dashed with its 95% interval shaded lighter."""
    fig = Figure(figsize=(7, 4), dpi=110)  # no pyplot: no global backend, nothing to close
    ax = fig.subplots()
    for i, (label, c) in enumerate(curves.items()):
        color = f"C{i}"
        ax.plot(c["env_steps"], c["median"], color=color, lw=1.8, label=f"{label}: median")
        ax.fill_between(c["env_steps"], c["q25"], c["q75"], color=color, alpha=0.25)
        ax.plot(c["env_steps"], c["iqm"], color=color, lw=1.0, ls="--", label=f"{label}: IQM")
        ax.fill_between(c["env_steps"], c["iqm_ci_low"], c["iqm_ci_high"], color=color,
                        alpha=0.10)
    if threshold is not None:
        ax.axhline(threshold, color="k", lw=0.8, ls=":", label=f"threshold {threshold:g}")
    ax.set_xlabel("environment steps (per run)")
    ax.set_ylabel(f"{ylabel} (mean of last {window} episodes)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    return Path(path)
