"""hrl from Python (`hrl.api`): train, load a trained policy, act with it (greedy, batched,
jittable; exploring as in training), and evaluate it to exactly `hrl eval`'s returns."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hrl
from hrl.cli import main as cli_main
from hrl.config import ConfigError

REPO = Path(__file__).resolve().parents[1]
# A training run, two loads and three evaluations: about 40 s of CPU on 2 cores. The default
# tier loads and evaluates a trained policy in tests/envs/test_custom_jax_env.py.
pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """examples/python_api.py at a small size: a config built in code, a registered network,
    the JAX corridor of examples/corridor_jax.py (fused loop), evaluations (so a best
    checkpoint), then load, act, explore and evaluate."""
    d = tmp_path_factory.mktemp("api") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)  # the config names examples.corridor_jax, found from the repository
        mp.syspath_prepend(str(REPO))
        out = importlib.import_module("examples.python_api").main(
            ["--steps", "512", "--run-dir", str(d)])
    assert out["summary"]["env_steps"] >= 512 and out["eval"]["episodes"] == 8
    assert out["greedy"].shape == (8,) and out["explore"].shape == (8,)
    return d


@pytest.fixture(scope="module")
def policy(run_dir):
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        return hrl.load(run_dir)


def _obs(n: int, length: int = 8) -> jax.Array:
    """n one-hot corridor positions, cycling over the cells."""
    return jax.nn.one_hot(jnp.arange(n) % length, length, dtype=jnp.float32)


def test_load_act_and_evaluate_give_hrl_eval_s_returns_exactly(run_dir, policy, monkeypatch):
    monkeypatch.chdir(REPO)
    assert cli_main(["eval", str(run_dir)]) == 0
    cli = json.loads((run_dir / "eval_latest.json").read_text())
    assert policy.env_steps == cli["env_steps"] and policy.seed == cli["per_seed"][0]["seed"]
    row = hrl.evaluate(policy)
    returns = row.pop("returns")
    assert row == cli["per_seed"][0]
    assert len(returns) == policy.cfg.train.eval_episodes
    assert hrl.evaluate(run_dir) == cli  # the run directory: the whole of `hrl eval`


def test_act_is_the_greedy_policy_batched_and_jittable(policy):
    for n in (1, 5):
        obs = _obs(n)
        greedy = jnp.argmax(policy.agent.q_values(policy.state, obs), axis=-1)
        np.testing.assert_array_equal(policy.act(obs), greedy)
        np.testing.assert_array_equal(jax.jit(lambda o: policy.act(o) + 0)(obs), greedy)
    assert policy.act(_obs(3)).dtype == jnp.int32


def test_explore_follows_the_training_epsilon(policy):
    """epsilon-greedy: at env step 0 (epsilon 1) half the actions of 2 differ from the greedy
    one; once decayed (eps_end 0.05), about 2.5%."""
    obs = _obs(4000)
    greedy = np.asarray(policy.act(obs))
    key = jax.random.PRNGKey(7)
    at_start = np.mean(np.asarray(policy.explore(obs, key, env_step=0)) != greedy)
    decayed = np.mean(np.asarray(policy.explore(obs, key, env_step=10**6)) != greedy)
    assert 0.4 < at_start < 0.6
    assert 0.005 < decayed < 0.06


def test_best_checkpoint_and_bad_requests(run_dir, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    best = hrl.load(run_dir, best=True)
    assert best.checkpoint.is_relative_to(run_dir / "best")
    with pytest.raises(ConfigError, match="seed 5 is not one of the run's seeds"):
        hrl.load(run_dir, seed=5)
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        hrl.load(tmp_path)
    with pytest.raises(ConfigError, match="episodes must be >= 1"):
        hrl.evaluate(best, episodes=0)
