"""Your own JAX env in gymnax's API (`hrl.envs.make_env("jax:...")`, `register_env`,
`hrl.train(cfg, env=...)`): examples/corridor_jax.py steps, trains and evaluates; a factory
that is not there or returns something else is one line naming the env."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hrl
from hrl import envs
from hrl.cli import main as cli_main
from hrl.config import load_config

REPO = Path(__file__).resolve().parents[2]
NAME = "jax:examples.corridor_jax:make_corridor"


def _example():
    """examples/corridor_jax.py as the module its env name imports."""
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    return importlib.import_module("examples.corridor_jax")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # examples.corridor_jax is found from the repository


def test_a_named_factory_steps_with_auto_reset_and_its_kwargs():
    env = envs.make_env(NAME, 3, length=4, max_episode_steps=10)
    assert env.spec.is_jax and env.spec.discrete and env.spec.action.n == 2
    assert env.spec.obs_shape == (4,) and env.spec.max_episode_steps == 10
    state, obs = env.reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(obs, np.eye(4, dtype=np.float32)[[0, 0, 0]])
    step = jax.jit(env.step)
    rewards = []
    for t in range(3):  # all right: the goal, 3 cells on, ends every episode at step 3
        state, out = step(state, jnp.ones(3, jnp.int32), jax.random.PRNGKey(t))
        rewards.append(np.asarray(out.reward))
    assert np.asarray(out.terminated).all()
    np.testing.assert_allclose(out.completed_return, [0.98] * 3, rtol=1e-6)
    np.testing.assert_array_equal(out.obs, np.eye(4, dtype=np.float32)[[0, 0, 0]])  # reset
    np.testing.assert_array_equal(out.next_obs_true, np.eye(4, dtype=np.float32)[[3, 3, 3]])


def test_max_episode_steps_cuts_episodes():
    env = envs.make_env(NAME, 2, max_episode_steps=5)
    state, _ = env.reset(jax.random.PRNGKey(0))
    for t in range(5):  # all left: never the goal
        state, out = env.step(state, jnp.zeros(2, jnp.int32), jax.random.PRNGKey(t))
    assert np.asarray(out.truncated).all() and not np.asarray(out.terminated).any()


class _ResetWithoutParams:
    def reset(self, key):
        return jnp.zeros(3), ()

    def step(self, key, state, action, params):
        return jnp.zeros(3), state, 0.0, False, {}

    def action_space(self, params):
        return _example().Discrete(2)


@pytest.mark.parametrize("name, kwargs, message", [
    ("jax:examples.corridor_jax:nope", {}, "module 'examples.corridor_jax' has no attribute "
     "'nope'"),
    ("jax:no_such_module_here:make", {}, "cannot import module 'no_such_module_here'"),
    ("jax:unregistered", {}, "'unregistered' is not registered in this process"),
    (NAME, {"width": 3}, "the factory cannot be called with options \\['width'\\]"),
    ("jax:examples.corridor_jax:Discrete", {}, "cannot be called with no options"),
    ("jax:returns-a-dict", {}, "the factory returned a dict, not a gymnax-API env"),
    ("jax:reset-without-params", {}, "not the gymnax API \\(.*takes 2 positional"),
])
def test_a_wrong_factory_is_one_line_naming_the_env(name, kwargs, message):
    envs.register_env("returns-a-dict", lambda: {"reset": 1})
    envs.register_env("reset-without-params", _ResetWithoutParams)
    with pytest.raises(ValueError, match=message) as err:
        envs.make_env(name, 2, **kwargs)
    assert "\n" not in str(err.value) and name in str(err.value)


def test_a_bad_name_in_a_config_is_one_line_from_the_cli(tmp_path, capsys):
    status = cli_main(["train", "examples/corridor_jax.yaml", "--set",
                       "env.name=jax:examples.corridor_jax:nope", "--run-dir",
                       str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err and "has no attribute 'nope'" in err


def test_the_example_trains_through_its_config_then_loads_and_evaluates(tmp_path):
    out = _example().main(["--steps", "512", "--run-dir", str(tmp_path / "run")])
    assert out["summary"]["env_steps"] >= 512 and out["summary"]["executor"] == "fused"
    assert out["eval"]["episodes"] == 8 and out["first_action"] in (0, 1)


@pytest.mark.long  # a second training run (the example's program, compiled once for both)
def test_an_env_object_trains_through_train(tmp_path):
    """The example's program (same sizes), so it compiles once for both tests."""
    cfg = load_config(REPO / "examples" / "corridor_jax.yaml", ["train.total_env_steps=512"])
    corridor = _example().Corridor(length=8)
    summary = hrl.train(cfg, run_dir=tmp_path / "obj", env=corridor, progress=False)
    assert summary["env_steps"] >= 512
    saved = (tmp_path / "obj" / "config.yaml").read_text()
    assert "name: jax:Corridor" in saved
    policy = hrl.load(tmp_path / "obj")  # the object is registered in this process
    assert policy.agent.spec.name == "jax:Corridor"
    assert json.dumps(hrl.evaluate(policy))  # plays the object's episodes
