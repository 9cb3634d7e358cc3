"""hrl.agents: DQN and DDPG losses against hand computations, target updates, exploration,
config validation, and short learning checks with a minimal jitted loop over hrl.replay."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hrl.agents
from hrl.agents import DDPGConfig, DQNConfig, OUNoise, make_ddpg, make_dqn
from hrl.agents.dqn.losses import dqn_loss, td_errors
from hrl.envs import make_env

CARTPOLE = make_env("gymnax:CartPole-v1", 4).spec
PENDULUM = make_env("gymnax:Pendulum-v1", 4).spec


def test_public_names_import():
    for name in hrl.agents.__all__:
        assert getattr(hrl.agents, name) is not None


def _batch(spec, b, key, discrete):
    k = jax.random.split(key, 5)
    obs_shape = (b, *spec.obs_shape)
    if discrete:
        action = jax.random.randint(k[1], (b,), 0, spec.action.n, jnp.int32)
    else:
        action = jax.random.uniform(k[1], (b, *spec.action.shape), minval=-2.0, maxval=2.0)
    return {
        "obs": jax.random.normal(k[0], obs_shape),
        "action": action,
        "reward": jax.random.normal(k[2], (b,)),
        "next_obs": jax.random.normal(k[3], obs_shape),
        "discount": jnp.where(jax.random.uniform(k[4], (b,)) < 0.3, 0.0, 0.99),
    }


# ------------------------------------------------------------------ DQN
def test_dqn_td_errors_and_loss_by_hand():
    q_obs = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    q_next_online = jnp.array([[0.0, 5.0], [2.0, 1.0]])
    q_next_target = jnp.array([[7.0, 1.0], [3.0, 9.0]])
    action = jnp.array([1, 0])
    reward = jnp.array([1.0, 0.5])
    discount = jnp.array([0.99, 0.0])
    # double: a* from online = [1, 0]; Q_target(s', a*) = [1, 3]; targets [1.99, 0.5]
    td = td_errors(q_obs, q_next_online, q_next_target, action, reward, discount, double=True)
    np.testing.assert_allclose(td, [1.99 - 2.0, 0.5 - 3.0], rtol=1e-6)
    # plain: a* from target = [0, 1]; Q_target = [7, 9]; targets [7.93, 0.5]
    td = td_errors(q_obs, q_next_online, q_next_target, action, reward, discount, double=False)
    np.testing.assert_allclose(td, [7.93 - 2.0, 0.5 - 3.0], rtol=1e-6)

    # Huber(delta=1) weighted: 0.5 * 0.01^2 and 2.5 - 0.5 = 2.0 with weights 1 and 0.5.
    tables = {"o": q_obs, "n": q_next_online}
    apply_fn = lambda params, obs: tables[params] if params != "t" else q_next_target
    batch = {"obs": "o", "next_obs": "n", "action": action, "reward": reward, "discount": discount}
    fake_apply = lambda params, which: apply_fn(which if params == "online" else "t", None)
    loss, (td, _) = dqn_loss(
        "online", "target", batch, jnp.array([1.0, 0.5]), fake_apply, double=True, huber_delta=1.0
    )
    np.testing.assert_allclose(loss, (0.5 * 0.01**2 + 0.5 * 2.0) / 2, rtol=1e-4)


def test_dqn_train_step_td_matches_numpy_and_descends():
    agent = make_dqn(DQNConfig(hidden_sizes=(16,), learning_rate=1e-2, tau=1.0), CARTPOLE)
    state = agent.init(jax.random.key(0))
    batch = _batch(CARTPOLE, 32, jax.random.key(1), discrete=True)
    weights = jnp.linspace(0.1, 1.0, 32)
    q = np.asarray(agent.q_values(state, batch["obs"]))
    q_next = np.asarray(agent.q_values(state, batch["next_obs"]))  # target == online at init
    a = np.asarray(batch["action"])
    expected_td = (
        np.asarray(batch["reward"])
        + np.asarray(batch["discount"]) * q_next[np.arange(32), q_next.argmax(1)]
        - q[np.arange(32), a]
    )
    step = jax.jit(agent.train_step)
    new_state, td, metrics = step(state, batch, weights)
    np.testing.assert_allclose(td, expected_td, rtol=1e-5, atol=1e-5)
    # td_errors (an Ape-X actor's priorities): train_step's TD errors, with no step taken
    np.testing.assert_allclose(jax.jit(agent.td_errors)(state, batch), td, rtol=1e-6,
                               atol=1e-6)
    assert set(metrics) == {"loss", "q_mean", "td_abs_mean", "grad_norm"}
    assert int(new_state.train_steps) == 1
    losses = [float(metrics["loss"])]
    for _ in range(20):
        new_state, td, metrics = step(new_state, batch, weights)
        losses.append(float(metrics["loss"]))
    assert losses[-1] < losses[0]
    assert step._cache_size() == 1


def _flat(params):
    return np.concatenate([np.ravel(x) for x in jax.tree.leaves(params)])


def test_dqn_target_hard_update_every_period():
    agent = make_dqn(DQNConfig(hidden_sizes=(8,), target_update_period=3, tau=1.0), CARTPOLE)
    state = agent.init(jax.random.key(0))
    batch = _batch(CARTPOLE, 8, jax.random.key(1), discrete=True)
    initial = _flat(state.params)
    step = jax.jit(agent.train_step)
    for i in range(1, 7):
        state, _, _ = step(state, batch, jnp.ones(8))
        if i % 3 == 0:
            np.testing.assert_array_equal(_flat(state.target_params), _flat(state.params))
        else:
            assert not np.array_equal(_flat(state.target_params), _flat(state.params))
        if i < 3:
            np.testing.assert_array_equal(_flat(state.target_params), initial)


def test_dqn_target_polyak_update():
    agent = make_dqn(DQNConfig(hidden_sizes=(8,), target_update_period=1, tau=0.1), CARTPOLE)
    state = agent.init(jax.random.key(0))
    old_target = _flat(state.target_params)
    batch = _batch(CARTPOLE, 8, jax.random.key(1), True)
    state, _, _ = jax.jit(agent.train_step)(state, batch, jnp.ones(8))
    np.testing.assert_allclose(
        _flat(state.target_params),
        0.1 * _flat(state.params) + 0.9 * old_target,
        rtol=1e-5,
        atol=1e-7,
    )


def test_dqn_epsilon_schedule_and_greedy_act():
    agent = make_dqn(DQNConfig(eps_start=1.0, eps_end=0.1, eps_decay_steps=1000), CARTPOLE)
    np.testing.assert_allclose(
        [agent.epsilon(0), agent.epsilon(500), agent.epsilon(10**6)], [1.0, 0.55, 0.1], rtol=1e-6
    )
    state = agent.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (256, 4))
    greedy = np.asarray(agent.q_values(state, obs)).argmax(1)
    act = jax.jit(agent.act)
    np.testing.assert_array_equal(act(state, obs, jax.random.key(2), 0, False), greedy)
    explored = np.asarray(act(state, obs, jax.random.key(2), 0, True))  # epsilon 1: uniform
    assert explored.dtype == np.int32 and set(explored.tolist()) == {0, 1}
    assert 0.3 < (explored != greedy).mean() < 0.7
    late = np.asarray(act(state, obs, jax.random.key(3), 10**6, True))  # epsilon 0.1
    assert (late != greedy).mean() < 0.15


# ------------------------------------------------------------------ DDPG
def test_ddpg_shapes_bounds_and_td():
    cfg = DDPGConfig(actor_hidden_sizes=(16,), critic_hidden_sizes=(16,), noise_scale=5.0)
    agent = make_ddpg(cfg, PENDULUM)
    state = agent.init(jax.random.key(0))
    assert set(state.params) == {"actor", "critic"} == set(state.opt_state)
    obs = 10 * jax.random.normal(jax.random.key(1), (64, 3))
    actions = jax.jit(agent.act)(state, obs, jax.random.key(2), 0, True)
    assert actions.shape == (64, 1) and actions.dtype == jnp.float32
    assert float(actions.min()) >= -2.0 and float(actions.max()) <= 2.0
    assert float(actions.min()) == -2.0 and float(actions.max()) == 2.0  # big noise: clipped
    mean_action = agent.actor.apply(state.params["actor"], obs)
    np.testing.assert_array_equal(agent.act(state, obs, jax.random.key(2), 0, False), mean_action)

    batch = _batch(PENDULUM, 32, jax.random.key(3), discrete=False)
    critic = lambda p, o, a: np.asarray(agent.critic.apply(p["critic"], o, a))
    next_a = agent.actor.apply(state.params["actor"], batch["next_obs"])
    expected_td = (
        np.asarray(batch["reward"])
        + np.asarray(batch["discount"]) * critic(state.params, batch["next_obs"], next_a)
        - critic(state.params, batch["obs"], batch["action"])
    )
    new_state, td, metrics = jax.jit(agent.train_step)(state, batch, jnp.ones(32))
    np.testing.assert_allclose(td, expected_td, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jax.jit(agent.td_errors)(state, batch), td, rtol=1e-6,
                               atol=1e-6)
    assert td.shape == (32,) and int(new_state.train_steps) == 1
    assert {"critic_loss", "actor_loss", "q_mean", "td_abs_mean"} <= set(metrics)
    for part in ("actor", "critic"):  # Polyak, tau = 0.005
        np.testing.assert_allclose(
            _flat(new_state.target_params[part]),
            0.005 * _flat(new_state.params[part]) + 0.995 * _flat(state.params[part]),
            rtol=1e-5,
            atol=1e-7,
        )


def test_ddpg_twin_critics_target_the_smaller_q():
    cfg = DDPGConfig(actor_hidden_sizes=(16,), critic_hidden_sizes=(16,), twin_critics=True)
    agent = make_ddpg(cfg, PENDULUM)
    state = agent.init(jax.random.key(0))
    batch = _batch(PENDULUM, 32, jax.random.key(3), discrete=False)
    q = lambda o, a: np.asarray(agent.critic.apply(state.params["critic"], o, a))
    next_a = agent.actor.apply(state.params["actor"], batch["next_obs"])
    q_next, q_now = q(batch["next_obs"], next_a), q(batch["obs"], batch["action"])
    assert q_next.shape == (2, 32) and not np.array_equal(q_next[0], q_next[1])
    target = np.asarray(batch["reward"]) + np.asarray(batch["discount"]) * q_next.min(axis=0)
    new_state, td, _ = jax.jit(agent.train_step)(state, batch, jnp.ones(32))
    np.testing.assert_allclose(td, target - q_now[0], rtol=1e-5, atol=1e-5)  # first critic's
    for head in (0, 1):  # both critics learn
        before = state.params["critic"]["params"][f"MLP_{head}"]
        after = new_state.params["critic"]["params"][f"MLP_{head}"]
        assert not np.array_equal(_flat(before), _flat(after))


def test_ddpg_random_warmup_and_ou_noise_carry():
    agent = make_ddpg(
        DDPGConfig(
            actor_hidden_sizes=(8,),
            critic_hidden_sizes=(8,),
            random_steps=100,
            noise="ou",
            noise_scale=0.3,
        ),
        PENDULUM,
    )
    state = agent.init(jax.random.key(0))
    obs = jnp.zeros((512, 3))
    with pytest.raises(ValueError, match="act_with_carry"):
        agent.act(state, obs, jax.random.key(1), 0, True)
    carry = agent.init_carry(512)
    assert isinstance(carry, OUNoise) and carry.x.shape == (512, 1)
    step = jax.jit(agent.act_with_carry)
    no_start = jnp.zeros((512,), bool)
    carry, warm = step(state, carry, obs, jax.random.key(2), 0, True, no_start)
    assert float(jnp.std(warm)) > 1.0  # uniform on [-2, 2]: std 1.15
    carry, a1 = step(state, carry, obs, jax.random.key(3), 100, True, no_start)
    carry, a2 = step(state, carry, obs, jax.random.key(4), 100, True, no_start)
    # OU noise is correlated in time: consecutive deviations agree far more than independent.
    corr = np.corrcoef(np.asarray(a1).ravel(), np.asarray(a2).ravel())[0, 1]
    assert corr > 0.5
    restarted, _ = step(state, carry, obs, jax.random.key(5), 100, True, jnp.ones((512,), bool))
    # After a reset the state is one fresh innovation: std = sigma, not the grown OU std.
    np.testing.assert_allclose(float(jnp.std(restarted.x)), 0.3, rtol=0.15)


def test_ddpg_noise_and_learning_rate_schedules_decay_linearly_then_hold():
    """noise_decay_steps N: the noise scale falls linearly over N env steps to noise_end_scale;
    lr_decay_steps N: both networks' step sizes fall linearly over N SGD steps to
    learning_rate * lr_end_factor (plain SGD on a gradient of ones shows the step size)."""
    agent = make_ddpg(DDPGConfig(actor_hidden_sizes=(8,), critic_hidden_sizes=(8,),
                                 noise_scale=0.4, noise_decay_steps=100, noise_end_scale=0.1,
                                 optimizer="sgd", actor_learning_rate=0.1,
                                 critic_learning_rate=0.2, lr_decay_steps=4,
                                 lr_end_factor=0.5), PENDULUM)
    np.testing.assert_allclose([float(agent.noise_std(s)) for s in (0, 50, 100, 500)],
                               [0.4, 0.25, 0.1, 0.1], rtol=1e-6)
    state = agent.init(jax.random.key(0))
    actions = agent.act(state, jnp.zeros((4096, 3)), jax.random.key(1), 500, True)
    mean = agent.policy(state, jnp.zeros((1, 3)))
    # std 0.1 of the half-range 2 (mean near 0, so the box clips nothing)
    np.testing.assert_allclose(float(jnp.std(actions - mean)), 0.2, rtol=0.05)
    assert float(make_ddpg(DDPGConfig(noise_scale=0.3), PENDULUM).noise_std(10**6)) == \
        pytest.approx(0.3)
    for opt, lr in ((agent.actor_optimizer, 0.1), (agent.critic_optimizer, 0.2)):
        params = {"w": jnp.zeros(3)}
        opt_state = opt.init(params)
        steps = []
        for _ in range(6):
            updates, opt_state = opt.update({"w": jnp.ones(3)}, opt_state, params)
            steps.append(float(-updates["w"][0]))
        np.testing.assert_allclose(
            steps, lr * np.array([1, 0.875, 0.75, 0.625, 0.5, 0.5]), rtol=1e-6)


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "cls, field, value",
    [
        (DQNConfig, "hidden_sizes", (64, 0)),
        (DQNConfig, "learning_rate", -1e-3),
        (DQNConfig, "tau", 0.0),
        (DQNConfig, "target_update_period", 0),
        (DQNConfig, "eps_end", 1.5),
        (DQNConfig, "optimizer", "adagrad"),
        (DQNConfig, "max_grad_norm", 0.0),
        (DQNConfig, "activation", "sigmoidal"),
        (DDPGConfig, "noise", "pink"),
        (DDPGConfig, "actor_learning_rate", float("nan")),
        (DDPGConfig, "critic_hidden_sizes", [256, 256]),
        (DDPGConfig, "random_steps", -1),
        (DDPGConfig, "tau", 1.5),
        (DDPGConfig, "lr_end_factor", 2.0),
        (DDPGConfig, "noise_decay_steps", -5),
        (DDPGConfig, "noise_end_scale", -0.1),
    ],
)
def test_impossible_config_values_name_the_field(cls, field, value):
    with pytest.raises(ValueError, match=f"{cls.__name__}.{field}"):
        cls(**{field: value})


def test_wrong_action_kind_and_bad_batches_are_rejected():
    with pytest.raises(ValueError, match="discrete"):
        make_dqn(DQNConfig(), PENDULUM)
    with pytest.raises(ValueError, match="continuous"):
        make_ddpg(DDPGConfig(), CARTPOLE)
    agent = make_dqn(DQNConfig(hidden_sizes=(8,)), CARTPOLE)
    state = agent.init(jax.random.key(0))
    batch = _batch(CARTPOLE, 8, jax.random.key(1), discrete=True)
    with pytest.raises(ValueError, match=r"batch\['next_obs'\]"):
        agent.train_step(state, {**batch, "next_obs": batch["next_obs"][:, :3]}, jnp.ones(8))
    with pytest.raises(ValueError, match="keys"):
        agent.train_step(state, {k: v for k, v in batch.items() if k != "discount"}, jnp.ones(8))
    with pytest.raises(ValueError, match="weights"):
        agent.train_step(state, batch, jnp.ones(7))
    assert dataclasses.is_dataclass(agent) and agent.spec is CARTPOLE
