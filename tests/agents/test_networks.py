"""Network specs (`agent.network`): the MLP, a conv stack with an MLP head, MinAtar's
published torso, and a user's own flax module; MinAtar observations kept as bools."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_runs import tiny_config

from hrl import agents, envs
from hrl.agents.networks import ConvMLP
from hrl.config import ConfigError
from hrl.runtime import train


def _shapes(params):
    return sorted(tuple(x.shape) for x in jax.tree.leaves(params))


def test_minatar_preset_is_the_published_torso():
    """One 3x3 conv of 16 filters (stride 1) over the C channels, then 128 hidden units."""
    env = envs.make_env("gymnax:Breakout-MinAtar", 2)
    assert env.spec.obs_shape == (10, 10, 4) and env.spec.obs_dtype == np.bool_
    dqn = agents.make_dqn(agents.DQNConfig(network="minatar", hidden_sizes=(7,)), env.spec)
    assert isinstance(dqn.network, ConvMLP)
    assert _shapes(dqn.init(jax.random.PRNGKey(0)).params) == sorted(
        [(3, 3, 4, 16), (16,), (1600, 128), (128,), (128, 3), (3,)])


def test_conv_spec_and_mlp_spec():
    spec = envs.make_env("gymnax:SpaceInvaders-MinAtar", 1).spec
    dqn = agents.make_dqn(agents.DQNConfig(network="conv", conv_layers=((8, 3, 2), (4, 1, 1)),
                                           hidden_sizes=(32,)), spec)
    state = dqn.init(jax.random.PRNGKey(0))
    assert _shapes(state.params) == sorted(
        [(3, 3, 6, 8), (8,), (1, 1, 8, 4), (4,), (100, 32), (32,), (32, 4), (4,)])
    obs = jnp.zeros((5, *spec.obs_shape), bool)
    assert dqn.policy(state, obs).shape == (5,)
    mlp = agents.make_dqn(agents.DQNConfig(hidden_sizes=(9,)), spec)
    assert _shapes(mlp.init(jax.random.PRNGKey(0)).params) == sorted(
        [(600, 9), (9,), (9, 4), (4,)])


def test_bad_network_specs_name_the_key():
    with pytest.raises(ConfigError, match="agent.*network"):
        tiny_config(**{"agent.network": "resnet"})
    with pytest.raises(ConfigError, match="conv_layers"):
        tiny_config(**{"agent.conv_layers": [[16, 3]]})
    with pytest.raises(ValueError, match="built in"):
        agents.register_network("mlp", lambda n: None)


class _Linear(nn.Module):
    out: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.out, name="only")(x.reshape(x.shape[0], -1).astype(jnp.float32))


def test_a_users_flax_module_trains_through_the_config(tmp_path):
    agents.register_network("test_linear", _Linear)
    cfg = tiny_config(**{"agent.network": "test_linear", "train.total_env_steps": 512})
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert summary["updates"] > 0
    dqn = agents.make_dqn(cfg.agent, envs.make_env("gymnax:CartPole-v1", 1).spec)
    assert _shapes(dqn.init(jax.random.PRNGKey(0)).params) == [(2,), (4, 2)]


def test_minatar_run_stores_bools_and_reports_bytes_per_transition(tmp_path):
    """10x10x4 bool obs and next_obs: 2 x 400 bytes + action, reward, discount = 812 bytes a
    row, against 3212 as float32 (next_obs in the row: `replay.next_obs: stored`; the default
    stores it once, tests/replay/test_next_slot.py)."""
    cfg = tiny_config(**{"env.name": "gymnax:Breakout-MinAtar", "env.num_envs": 2,
                         "agent.network": "minatar", "train.total_env_steps": 256,
                         "train.learning_starts": 64, "train.chunk_env_steps": 128,
                         "replay.next_obs": "stored"})
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert summary["obs_dtype"] == "bool" and summary["replay_bytes_per_transition"] == 812
    float_spec = envs.make_env("gymnax:Breakout-MinAtar", 1, obs_dtype="float32").spec
    example = envs.example_transition(float_spec)
    assert sum(v.nbytes for v in example.values()) == 3212


def test_learning_rate_schedule_decays_linearly_then_holds():
    """lr_decay_steps N: the step size falls linearly to learning_rate * lr_end_factor over N
    SGD steps (plain SGD on a gradient of ones shows the step size itself)."""
    spec = envs.make_env("gymnax:CartPole-v1", 1).spec
    cfg = agents.DQNConfig(optimizer="sgd", learning_rate=0.1, lr_decay_steps=4,
                           lr_end_factor=0.5, max_grad_norm=None)
    opt = agents.make_dqn(cfg, spec).optimizer
    params = {"w": jnp.zeros(3)}
    state = opt.init(params)
    steps = []
    for _ in range(6):
        updates, state = opt.update({"w": jnp.ones(3)}, state, params)
        steps.append(float(-updates["w"][0]))
    np.testing.assert_allclose(steps, [0.1, 0.0875, 0.075, 0.0625, 0.05, 0.05], rtol=1e-6)
    with pytest.raises(ConfigError, match="lr_end_factor"):
        tiny_config(**{"agent.lr_end_factor": 2.0})
