"""hrl's one rule for "solved" (`aggregate.first_solved`): checked at every episode end, the
same in the driver's stop, the summary, the progress bar and the learning table."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_runs import tiny_config

from hrl.runtime import train
from hrl.runtime.aggregate import SolvedWatch, first_solved, running_mean, steps_to_threshold
from hrl.runtime.metrics import read_episodes


def _naive_first_solved(steps, returns, window, bar):
    for i in range(window - 1, len(returns)):
        mean = float(np.mean(np.asarray(returns[i - window + 1 : i + 1], np.float64)))
        if mean >= bar:
            return int(steps[i]), mean
    return None


@pytest.mark.parametrize("window", [1, 3, 10])
def test_first_solved_matches_a_naive_scan_and_pieces_find_the_same_episode(window):
    rng = np.random.default_rng(window)
    for trial in range(30):
        n = int(rng.integers(0, 60))
        returns = rng.normal(0, 1, n).cumsum().astype(np.float32)
        steps = np.cumsum(rng.integers(1, 30, n))
        bar = float(rng.normal(2, 2))
        want = _naive_first_solved(steps, returns, window, bar)
        got = first_solved(steps, returns, window, bar)
        assert (got is None) == (want is None), (trial, got, want)
        if want is not None:
            assert got[0] == want[0] and got[1] == pytest.approx(want[1], rel=1e-6)
            assert steps_to_threshold(steps, returns, window, bar) == want[0]
        # The same log in random pieces (some empty), as chunks deliver it.
        cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 6))))
        watch = SolvedWatch(window, bar)
        for s, r in zip(np.split(steps, cuts), np.split(returns, cuts), strict=True):
            watch.feed(s, r)
        assert watch.hit == got


def test_a_bar_reached_and_lost_inside_a_piece_still_counts():
    """The issue's seed 29: the mean reached the bar mid-chunk and had fallen by its end."""
    returns = np.array([100.0] * 5 + [500.0] * 10 + [50.0] * 5)
    steps = np.arange(1, 21) * 100
    watch = SolvedWatch(10, 475.0, steps[:3], returns[:3])
    assert watch.hit is None
    watch.feed(steps[3:], returns[3:])
    assert watch.solved_at == 1500 and watch.hit[1] == 500.0
    assert running_mean(returns, 10)[-1] < 475.0  # a chunk-end check would have missed it
    watch.feed([2100], [0.0])
    assert watch.solved_at == 1500  # the first episode that solved, kept


def test_no_bar_never_solves():
    watch = SolvedWatch(2, None, [1, 2], [1e9, 1e9])
    assert watch.hit is None


def test_train_stops_in_the_chunk_of_the_solving_episode_and_reports_that_episode(tmp_path):
    """Random CartPole play scores about 22: a bar of 18 is reached within the first chunks.
    The run stops at the end of the chunk holding the solving episode, and the summary names
    that episode, as `first_solved` over the whole log does."""
    cfg = tiny_config(**{"train.total_env_steps": 8192})
    summary = train(cfg, run_dir=tmp_path, progress=False, solved_return=18.0)
    steps, returns = read_episodes(tmp_path)
    hit = first_solved(steps, returns, 10, 18.0)
    assert hit is not None
    assert summary["solved_at_env_steps"] == hit[0] == summary["per_seed"][0]["steps_to_solved"]
    assert summary["solved_window_return"] == pytest.approx(hit[1])
    assert hit[0] <= summary["env_steps"] < hit[0] + cfg.train.chunk_env_steps
    assert not summary["interrupted"]


def test_seeds_stop_when_every_seed_has_solved(tmp_path):
    cfg = tiny_config(seeds=3, **{"train.total_env_steps": 8192})
    summary = train(cfg, run_dir=tmp_path, progress=False, solved_return=18.0)
    reached = [r["steps_to_solved"] for r in summary["per_seed"]]
    assert None not in reached
    assert summary["solved_at_env_steps"] == max(reached)
    assert max(reached) <= summary["env_steps"] < max(reached) + cfg.train.chunk_env_steps
