"""What the `train` driver keeps and writes at each chunk's end: one `SeedLog` per seed (its
metrics, evaluations, recent returns and solved watch), the chunk's metrics row, the `Cadence`
of checkpoints and evaluations, and the `ChunkEnd` a callback is handed."""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import numpy as np

from hrl.runtime.aggregate import SolvedWatch
from hrl.runtime.metrics import EvalLog, MetricsLog, read_episodes


@dataclasses.dataclass
class Cadence:
    """Something done every `every` env steps (0: never), at the first chunk end at or past
    each multiple of `every`: `due(steps)` says whether it is due now and, if so, moves on to
    the next multiple after `steps` (so a chunk that spans several multiples does it once)."""

    every: int
    next: int | None

    @classmethod
    def after(cls, steps: int, every: int) -> Cadence:
        """The cadence whose first multiple is the first one past `steps`."""
        return cls(every, next_multiple(steps, every) if every else None)

    def due(self, steps: int) -> bool:
        if self.next is None or steps < self.next:
            return False
        self.next = next_multiple(steps, self.every)
        return True


def next_multiple(x: int, every: int) -> int:
    """The smallest multiple of `every` greater than `x`."""
    return (x // every + 1) * every


@dataclasses.dataclass(frozen=True)
class ChunkEnd:
    """What each callback of `train(..., callbacks=...)` is handed at a chunk's end: the run's
    counters after the chunk (per seed: every seed runs the same schedule), the session's wall
    seconds, and the rows just logged to metrics.csv, one per seed (`row`: the first seed's).
    A callback that returns a true value stops the run there, with a checkpoint."""

    env_steps: int
    updates: int
    iteration: int
    wall_s: float
    seeds: tuple[int, ...]
    rows: tuple[dict, ...]

    @property
    def row(self) -> dict:
        return self.rows[0]


@dataclasses.dataclass
class SeedLog:
    """One seed's logs in its directory: metrics.csv and episodes (`metrics`), eval.csv
    (`evals`, None without evaluation), the returns of its last `window` episodes (`recent`)
    and the watch for the solved rule (`watch`), the last two read back from the episodes
    already logged (a resume continues them)."""

    seed: int
    dir: Path
    metrics: MetricsLog
    evals: EvalLog | None
    recent: collections.deque
    watch: SolvedWatch

    @classmethod
    def open(cls, seed: int, seed_dir: Path, fmt: str, resume_at: int | None, sinks,
             window: int, threshold: float | None, evaluates: bool) -> SeedLog:
        seed_dir.mkdir(parents=True, exist_ok=True)
        metrics = MetricsLog(seed_dir, fmt, resume_at=resume_at, sinks=sinks)
        steps, returns = read_episodes(seed_dir)
        return cls(seed, seed_dir, metrics, EvalLog(seed_dir, resume_at) if evaluates else None,
                   collections.deque(returns.tolist(), maxlen=window),
                   SolvedWatch(window, threshold, steps, returns))

    def record(self, out, steps_before: int, num_envs: int, head: dict, tail: dict) -> dict:
        """Log the chunk's episodes (from its output `out`) and its metrics row: `head` (the
        run's counters and rates), this seed's recent return, episodes and mean |td|, `tail`
        (the executor's fields, the eval return), then the learner's metrics, the columns in
        that order. Returns the row written."""
        steps, returns = episodes_of(out, steps_before, num_envs)
        self.metrics.episodes(steps, returns)
        self.watch.feed(steps, returns)
        self.recent.extend(returns.tolist())
        trained = np.asarray(out.trained)

        def mean_trained(values) -> float:
            return float(np.asarray(values)[trained].mean()) if trained.any() else float("nan")

        row = {
            **head,
            "recent_return": float(np.mean(self.recent)) if self.recent else float("nan"),
            "episodes": int(np.asarray(out.completed).sum()),
            "td_abs": mean_trained(out.td_abs),
            **tail,
            **{name: mean_trained(values) for name, values in (out.metrics or {}).items()},
        }
        self.metrics.row(row)
        return row

    def close(self) -> None:
        self.metrics.close()


def episodes_of(out, env_steps_before: int, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """(env step at which each finished episode ended, its return) from a chunk's output."""
    completed = np.asarray(out.completed)  # (T, L, M)
    t_idx, l_idx, m_idx = np.nonzero(completed)
    iter_start = np.concatenate([[env_steps_before], np.asarray(out.env_steps)[:-1]])
    steps = iter_start[t_idx] + (l_idx + 1) * num_envs
    order = np.lexsort((m_idx, steps))
    return steps[order], np.asarray(out.completed_return)[t_idx, l_idx, m_idx][order]
