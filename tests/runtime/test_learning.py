"""Several seeds in one program, the statistics over them, and learning asserted on them.

Learning is statistics: XLA:CPU rounds differently on different CPUs (GEMM blocking follows
the caches), so one seed's return is a draw. Learning tests here run several seeds vmapped
in one jit and assert on the distribution, with margins measured to hold across seeds and
under XLA_FLAGS=--xla_cpu_max_isa=AVX2. Everything else is exact.
"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from tiny_runs import tiny_config

from hrl.config import ConfigError, load_config
from hrl.runtime import build, initial_state, train
from hrl.runtime.aggregate import (
    aggregate_curve,
    bootstrap_ci,
    curve_on_grid,
    iqm,
    running_mean,
    steps_to_threshold,
    summarize,
)
from hrl.runtime.build_run import seed_list
from hrl.runtime.metrics import read_episodes

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs"


# ------------------------------------------------------------------ statistics


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(np.mean([3, 4, 5, 6]))
    assert iqm([5.0] * 4) == 5.0


def test_bootstrap_ci_brackets_the_statistic_and_narrows_with_runs():
    rng = np.random.default_rng(1)
    few, many = rng.normal(0, 1, 10), rng.normal(0, 1, 400)
    lo, hi = bootstrap_ci(few)
    assert lo <= iqm(few) <= hi
    lo_many, hi_many = bootstrap_ci(many)
    assert hi_many - lo_many < hi - lo
    assert bootstrap_ci([3.0] * 6) == (3.0, 3.0)


def test_running_mean_and_steps_to_threshold():
    steps = np.array([10, 20, 30, 40, 50])
    returns = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    np.testing.assert_array_equal(running_mean(returns, 2)[1:], [2.0, 4.0, 6.0, 8.0])
    assert np.isnan(running_mean(returns, 2)[0])
    assert steps_to_threshold(steps, returns, 2, 6.0) == 40
    assert steps_to_threshold(steps, returns, 2, 8.5) is None
    # The curve at a grid step is the running mean as it stood then.
    np.testing.assert_array_equal(
        curve_on_grid(steps, returns, 2, np.array([5, 20, 45, 99])), [np.nan, 2.0, 6.0, 8.0]
    )


def test_aggregate_curve_over_runs():
    runs = [(np.array([10, 20]), np.array([float(k), float(k)])) for k in range(5)]
    curve = aggregate_curve(runs, 1, np.array([5, 10, 30]))
    np.testing.assert_array_equal(curve["env_steps"], [10, 30])  # 5: no run has an episode
    np.testing.assert_array_equal(curve["median"], [2.0, 2.0])
    assert summarize([0, 1, 2, 3, 4])["q25"] == 1.0


# ------------------------------------------------------------------ seeds in one program


def test_seeds_config_is_validated():
    with pytest.raises(ConfigError, match="'seeds': must be >= 1, got 0"):
        tiny_config(seeds=0)
    with pytest.raises(ConfigError, match="'seed'"):
        tiny_config(seed=2**31 - 2, seeds=4)


def test_vmapped_seeds_are_the_single_runs_until_the_learner_starts():
    """Slot i of the stacked state is seed i: the jitted, vmapped init equals each seed's own
    init, and a chunk of acting (no SGD yet) matches bit for bit. (After SGD the floats of a
    batched GEMM may round differently from one matrix product at a time.)"""
    cfg = tiny_config(seeds=3, **{"train.learning_starts": 512})
    built = build(cfg)
    stacked = initial_state(built, seed_list(cfg))
    stacked_after, out = built.loop.run_seeds(stacked, 20)  # 320 env steps, no SGD
    assert not np.asarray(out.trained).any()
    for i, seed in enumerate(seed_list(cfg)):
        one = build(dataclasses.replace(cfg, seed=seed, seeds=1))
        state = initial_state(one)
        for a, b in zip(jax.tree.leaves(stacked), jax.tree.leaves(state), strict=True):
            np.testing.assert_array_equal(np.asarray(a)[i], np.asarray(b))
        state, single = one.loop.run(state, 20)
        for a, b in zip(jax.tree.leaves(stacked_after), jax.tree.leaves(state), strict=True):
            np.testing.assert_array_equal(np.asarray(a)[i], np.asarray(b))
        np.testing.assert_array_equal(out.completed_return[i], single.completed_return)
    # Different seeds act differently.
    assert not np.array_equal(out.completed_return[0], out.completed_return[1])


def test_train_with_seeds_writes_each_seed_and_the_aggregate(tmp_path):
    cfg = tiny_config(seeds=3, **{"train.solved_return": 15.0})
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert summary["seeds"] == [3, 4, 5] and summary["fused"]
    assert [r["seed"] for r in summary["per_seed"]] == [3, 4, 5]
    for row in summary["per_seed"]:
        seed_dir = tmp_path / f"seed-{row['seed']}"
        steps, returns = read_episodes(seed_dir)
        assert len(returns) == row["episodes"] > 10
        assert row["recent_return"] == pytest.approx(np.mean(returns[-10:]))
        assert row["steps_to_solved"] == steps_to_threshold(steps, returns, 10, 15.0)
        assert (seed_dir / "metrics.csv").exists() and (seed_dir / "learning_curve.png").exists()
    assert summary["solved_runs"] == sum(r["steps_to_solved"] is not None
                                         for r in summary["per_seed"])
    assert summary["env_steps_per_s"] == pytest.approx(3 * summary["env_steps_per_s_per_seed"])
    header = (tmp_path / "aggregate.csv").read_text().splitlines()[0]
    assert header == "env_steps,median,q25,q75,iqm,iqm_ci_low,iqm_ci_high,runs"
    assert (tmp_path / "aggregate.png").exists()
    assert json.loads((tmp_path / "summary.json").read_text())["final_return"]["runs"] == 3


def test_seeds_resume_exactly(tmp_path):
    """A stopped multi-seed run resumes from its stacked checkpoint to the same episodes."""
    cfg = tiny_config(seeds=2)
    train(cfg, run_dir=tmp_path / "full", progress=False)
    train(cfg, run_dir=tmp_path / "cut", progress=False, stop_at_env_steps=768)
    train(cfg, run_dir=tmp_path / "cut", progress=False, resume=True)
    for seed in seed_list(cfg):
        full = read_episodes(tmp_path / "full" / f"seed-{seed}")
        cut = read_episodes(tmp_path / "cut" / f"seed-{seed}")
        np.testing.assert_array_equal(full[0], cut[0])
        np.testing.assert_array_equal(full[1], cut[1])


def test_host_loop_runs_seeds_one_after_another(tmp_path):
    cfg = tiny_config(seeds=2, **{"train.executor": "sequential", "train.total_env_steps": 512})
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert not summary["fused"] and summary["seeds"] == [3, 4]
    for seed in (3, 4):
        assert json.loads((tmp_path / f"seed-{seed}" / "summary.json").read_text())["seeds"] == [
            seed
        ]
    assert [r["seed"] for r in summary["per_seed"]] == [3, 4]


# Half a minute; test_train_with_seeds_writes_each_seed_and_the_aggregate runs the seeds.
@pytest.mark.long
def test_cli_seeds_flag(tmp_path):
    config = tmp_path / "tiny.yaml"
    from hrl.config import dump_config

    config.write_text(dump_config(tiny_config(**{"train.total_env_steps": 512})))
    done = subprocess.run(
        [sys.executable, "-m", "hrl.cli", "train", str(config), "--seeds", "2", "--no-progress",
         "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "2 seeds:" in done.stdout and "summed over seeds" in done.stdout
    assert (tmp_path / "run" / "seed-4" / "episodes.csv").exists()


# ------------------------------------------------------------------ learning, over seeds


def _finals(summary):
    return np.array([r["recent_return"] for r in summary["per_seed"]])


def test_dqn_cartpole_learns_over_seeds(tmp_path):
    """Half the config's budget, 6 seeds in one program: random play scores ~22; measured
    here the seeds' last-10 means are 200-500 by then (median well above 300)."""
    cfg = load_config(CONFIGS / "dqn_cartpole.yaml",
                      ["seeds=6", "train.total_env_steps=20480", "log.progress=false"])
    finals = _finals(train(cfg, run_dir=tmp_path, progress=False))
    assert np.median(finals) > 150, finals
    assert (finals > 75).sum() >= 5, finals


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dqn_cartpole", "dqn_acrobot", "ddpg_pendulum"])
def test_policies_reach_the_bar_and_stay_trained_on_most_seeds(tmp_path, name):
    """10 seeds of the config's whole budget in one program: most reach the bar on the way,
    and most end there by the final eval (the greedy or deterministic policy on 10 fresh
    episodes per seed at the end). The measured counts are the rows of
    experiments/results/learning/learning_quality.md; the bound leaves a margin of seeds."""
    base = ["seeds=10", "log.progress=false"]
    budget = load_config(CONFIGS / f"{name}.yaml", base).train.total_env_steps
    cfg = load_config(CONFIGS / f"{name}.yaml", [*base, f"train.eval_every={budget}"])
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert summary["solved_runs"] >= 8, summary["per_seed"]
    assert summary["seeds_ending_at_bar"] >= 8, summary["per_seed"]


@pytest.mark.slow
def test_dqn_cartpole_learns_on_two_devices_over_seeds(tmp_path):
    """The half-budget test above on 2 virtual CPU devices (global sharded sampling, gradients
    averaged), with the two actors and 32-step rollouts that split evenly: the same margins."""
    import os

    code = (
        "import json, sys; from hrl.config import load_config; from hrl.runtime import train; "
        f"cfg = load_config({str(CONFIGS / 'dqn_cartpole.yaml')!r}, ['seeds=6', "
        "'train.total_env_steps=20480', 'log.progress=false', 'env.num_envs=2', "
        "'train.rollout_length=32', 'train.devices=2']); "
        f"s = train(cfg, run_dir={str(tmp_path)!r}, progress=False); "
        "print(json.dumps({'finals': [r['recent_return'] for r in s['per_seed']], "
        "'agree': s['params_agree']}))"
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu", PYTHONPATH=str(CONFIGS.parents[1]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    finals = np.array(result["finals"])
    assert result["agree"]
    assert np.median(finals) > 150, finals
    assert (finals > 75).sum() >= 5, finals
