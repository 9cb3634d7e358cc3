"""The fixed-point DQN and DDPG agents: selected from the config, deterministic, jit/vmap-safe,
learning on a fixed regression batch, and refusing what they do not implement in one line."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.agents import DDPGConfig, DQNConfig
from hrl.config import load_config
from hrl.envs.spec import ContinuousActions, DiscreteActions, EnvSpec
from hrl.fixed_point.ddpg import FixedDDPG, make_fixed_ddpg
from hrl.fixed_point.dqn import FixedDQN, make_fixed_dqn
from hrl.fixed_point.formats import FixedPointConfig
from hrl.fixed_point.numerics import Fx
from hrl.runtime.components import make_env_agent

DQN_SPEC = EnvSpec(name="toy", num_envs=1, obs_shape=(4,), obs_dtype=np.float32, is_jax=True,
                   action=DiscreteActions(2))
DDPG_SPEC = EnvSpec(name="toy", num_envs=1, obs_shape=(3,), obs_dtype=np.float32, is_jax=True,
                    action=ContinuousActions((1,), (-2.0,), (2.0,)))
FIXED = dict(numerics="fixed", optimizer="sgd", max_grad_norm=None)


def test_second_moment_formats_default_per_algorithm():
    """DQN's and DDPG's gradients need different second-moment ranges (formats docstring):
    each algorithm gets its own default, a key the user sets wins for both, and each agent
    reads its algorithm's."""
    fp = FixedPointConfig()
    dqn, ddpg = fp.formats("adam", "dqn"), fp.formats("adam", "ddpg")
    assert (dqn.second, dqn.rsqrt) == (Fx(29, 22), Fx(24, 12))
    assert (ddpg.second, ddpg.rsqrt) == (Fx(29, 14), Fx(24, 18))
    set_one = FixedPointConfig(second=(29, 16))
    assert set_one.formats("adam", "ddpg").second == set_one.formats("adam", "dqn").second
    assert set_one.formats("adam", "ddpg").second == Fx(29, 16)
    assert set_one.formats("adam", "ddpg").rsqrt == Fx(24, 18)
    for name, want in (("dqn_cartpole", dqn), ("ddpg_pendulum", ddpg)):
        cfg = load_config(f"experiments/configs/{name}.yaml",
                          ["agent.numerics=fixed", "agent.max_grad_norm=null"])
        _, agent = make_env_agent(cfg)
        assert agent.fmts == want


def dqn_batch(key, b=32):
    """A regression batch: discount 0, so the TD target is the reward, a function of obs."""
    k1, k2 = jax.random.split(key)
    obs = jax.random.normal(k1, (b, 4))
    action = jax.random.randint(k2, (b,), 0, 2)
    reward = jnp.tanh(obs[:, 0] + jnp.where(action == 1, obs[:, 1], -obs[:, 1]))
    return {"obs": obs, "action": action, "reward": reward, "next_obs": obs,
            "discount": jnp.zeros(b)}


def test_config_selects_the_fixed_point_learner():
    cfg = load_config("experiments/configs/dqn_cartpole.yaml",
                      ["agent.numerics=fixed", "agent.optimizer=sgd",
                       "agent.max_grad_norm=null", "agent.learning_rate=0.005",
                       "agent.fixed_point.act=[16,9]"])
    _, agent = make_env_agent(cfg)
    assert isinstance(agent, FixedDQN) and agent.fmts.act.frac == 9
    cfg = load_config("experiments/configs/ddpg_pendulum.yaml",
                      ["agent.numerics=fixed", "agent.optimizer=sgd"])
    _, agent = make_env_agent(cfg)
    assert isinstance(agent, FixedDDPG)


@pytest.mark.parametrize("change,message", [
    (dict(network="conv"), "agent.network: the fixed-point learner"),
    (dict(optimizer="rmsprop"), "agent.optimizer: the fixed-point learner implements"),
    (dict(optimizer="adam", learning_rate=0.6), r"agent.learning_rate: 0.6 does not fit"),
    (dict(max_grad_norm=10.0), "agent.max_grad_norm"),
    (dict(activation="tanh"), "agent.activation"),
    (dict(learning_rate=1e-9), r"agent.learning_rate: 1e-09 / batch 32 does not fit"),
    (dict(learning_rate=0.5, fixed_point=FixedPointConfig(lr_frac=30)),
     r"agent.learning_rate: 0.5 / batch 32 does not fit"),
    (dict(tau=1e-6), "agent.tau: 1e-06 rounds to 0"),
    (dict(optimizer="adam", learning_rate=1e-3, fixed_point=FixedPointConfig(beta2=0.99999)),
     r"agent.fixed_point.beta2 \(as 1 - beta2\): 1e-05 rounds to 0"),
])
def test_dqn_refuses_what_it_does_not_implement(change, message):
    cfg = DQNConfig(**{**FIXED, **change})
    with pytest.raises(ValueError, match=message) as err:
        agent = make_fixed_dqn(cfg, DQN_SPEC, batch_size=32)
        agent.sgd_step(agent.init(jax.random.PRNGKey(0)), dqn_batch(jax.random.PRNGKey(1)),
                       jnp.ones(32))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("change,message", [
    (dict(twin_critics=True), "agent.twin_critics"),
    (dict(noise="ou"), "agent.noise"),
    (dict(critic_learning_rate=1e-9), "agent.critic_learning_rate"),
    (dict(fixed_point=FixedPointConfig(act=(8, 6))), r"agent.fixed_point.act: Q8.6 cannot hold"),
])
def test_ddpg_refuses_what_it_does_not_implement(change, message):
    with pytest.raises(ValueError, match=message):
        make_fixed_ddpg(DDPGConfig(**{**FIXED, **change}), DDPG_SPEC, batch_size=32)


def test_bad_formats_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"agent.fixed_point.weight: fixed-point width"):
        FixedPointConfig(weight=(40, 12))
    with pytest.raises(ValueError, match=r"agent.fixed_point.momentum must be"):
        FixedPointConfig(momentum=1.0)
    with pytest.raises(ValueError, match=r"config key 'agent'.*numerics"):
        load_config("experiments/configs/dqn_cartpole.yaml", ["agent.numerics=fp16"])


@pytest.mark.parametrize("optimizer,lr", [
    ("sgd", 0.005), pytest.param("adam", 0.003, marks=pytest.mark.long)])
def test_dqn_step_is_deterministic_jit_and_vmap_safe_and_learns(optimizer, lr):
    """A few hundred SGD steps on a regression batch, vmapped over 4 seeds: the loss falls
    by far more than its seed-to-seed spread, and a jitted single seed repeats bit for bit."""
    cfg = DQNConfig(**{**FIXED, "optimizer": optimizer}, hidden_sizes=(16, 16),
                    learning_rate=lr)
    agent = make_fixed_dqn(cfg, DQN_SPEC, batch_size=32)
    batch = dqn_batch(jax.random.PRNGKey(7))
    weights = jnp.ones(32)

    def run(key):
        state = agent.init(key)

        def body(s, _):
            s, _, m = agent.train_step(s, batch, weights)
            return s, (m["loss"], m["saturations"])

        state, (loss, sat) = jax.lax.scan(body, state, None, length=300)
        return state, loss, sat

    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    states, loss, sat = jax.jit(jax.vmap(run))(keys)
    first, last = np.asarray(loss[:, :10]).mean(1), np.asarray(loss[:, -10:]).mean(1)
    assert np.all(last < 0.5 * first), (first, last)
    # DQN's default second moment (Q29.22) saturates a batch-summed gradient over 8, which
    # this untrained net's first steps can reach: counted, and gone once the loss falls.
    sat = np.asarray(sat)
    assert int(sat[:, 50:].sum()) == 0, sat.sum(1)
    assert optimizer == "adam" or int(sat.sum()) == 0
    one, loss_one, _ = jax.jit(run)(keys[1])
    # vmapped and alone: the same words (integer arithmetic has one answer)
    for a, b in zip(jax.tree.leaves(one.params), jax.tree.leaves(states.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[1])
    np.testing.assert_array_equal(np.asarray(loss_one), np.asarray(loss)[1])


@pytest.mark.long
@pytest.mark.parametrize("optimizer,lr_actor,lr_critic", [("sgd", 0.002, 0.005),
                                                          ("adam", 0.001, 0.003)])
def test_ddpg_step_learns_the_critic_and_moves_the_actor_uphill(optimizer, lr_actor, lr_critic):
    cfg = DDPGConfig(**{**FIXED, "optimizer": optimizer}, actor_hidden_sizes=(16,),
                     critic_hidden_sizes=(16, 16), actor_learning_rate=lr_actor,
                     critic_learning_rate=lr_critic)
    agent = make_fixed_ddpg(cfg, DDPG_SPEC, batch_size=32)
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    obs = jax.random.normal(k1, (32, 3))
    action = jax.random.uniform(k2, (32, 1), minval=-2, maxval=2)
    # Q(s, a) regresses on r = -(a - 1)^2: the best action is 1.
    batch = {"obs": obs, "action": action, "reward": -jnp.square(action[:, 0] - 1.0),
             "next_obs": obs, "discount": jnp.zeros(32)}

    def run(key):
        state = agent.init(key)

        def body(s, _):
            s, _, m = agent.train_step(s, batch, jnp.ones(32))
            return s, m["critic_loss"]

        state, loss = jax.lax.scan(body, state, None, length=400)
        return state, loss

    keys = jax.random.split(jax.random.PRNGKey(1), 4)
    states, loss = jax.jit(jax.vmap(run))(keys)
    first, last = np.asarray(loss[:, :10]).mean(1), np.asarray(loss[:, -10:]).mean(1)
    assert np.all(last < 0.5 * first), (first, last)
    # The actor climbs the learned critic: the true reward of its actions, averaged over the
    # seeds, rises well above the start's (mu near 0, reward near -1). Integer arithmetic:
    # the same words on any CPU.
    def reward(mu):
        return -np.square(np.asarray(mu)[..., 0] - 1.0).mean(axis=-1)

    before = reward(jax.vmap(lambda k: agent.policy(agent.init(k), obs))(keys))
    after = reward(jax.vmap(agent.policy, in_axes=(0, None))(states, obs))
    assert after.mean() > before.mean() + 0.25, (before, after)


def test_config_reference_lists_the_new_keys():
    from hrl.config.reference import config_keys  # noqa: PLC0415

    keys = {r.key for rows in config_keys().values() for r in rows}
    assert {"agent.numerics", "agent.fixed_point.act", "agent.fixed_point.momentum",
            "agent.fixed_point.beta2", "agent.fixed_point.second"} <= keys


def test_float_learner_unchanged_by_default():
    assert DQNConfig().numerics == "float"
    assert dataclasses.asdict(DDPGConfig())["fixed_point"]["master"] == (28, 24)
