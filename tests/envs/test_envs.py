"""hrl.envs: the VecEnv interface, auto-reset, episode bookkeeping, every listed environment."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.envs import (
    BRAX_ENVS,
    GYMNAX_ENVS,
    KNOWN_ENVS,
    ContinuousActions,
    DiscreteActions,
    EnvSpec,
    JaxVecEnv,
    example_transition,
    make_env,
    random_actions,
)


# ------------------------------------------------------------------ hand-checked bookkeeping
def _counter_env(num_envs: int, max_steps: int) -> JaxVecEnv:
    """obs = [t], reward = t + 1 (t = steps taken before this one), action 1 terminates."""
    spec = EnvSpec(
        "test:counter",
        num_envs,
        (1,),
        np.dtype(np.float32),
        DiscreteActions(2),
        True,
        max_episode_steps=max_steps,
    )

    def reset_one(key):
        del key
        t = jnp.int32(0)
        return t, t[None].astype(jnp.float32)

    def step_one(t, action, key):
        del key
        return (
            t + 1,
            (t + 1)[None].astype(jnp.float32),
            (t + 1).astype(jnp.float32),
            action == 1,
            False,
        )

    return JaxVecEnv(spec, reset_one, step_one)


def test_bookkeeping_across_auto_resets_hand_checked():
    env = _counter_env(num_envs=2, max_steps=5)
    step = jax.jit(env.step)
    state, obs = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(obs, [[0.0], [0.0]])
    # env 0 terminates on its 3rd and 5th step (action 1), env 1 never: truncated at 5 steps.
    actions = [(0, 0), (0, 0), (1, 0), (0, 0), (1, 0), (0, 0)]
    # Per step: (reward, terminated, truncated, completed_return, completed_length, obs, true next)
    expected = [
        ((1, 1), (0, 0), (0, 0), (0, 0), (0, 0), (1, 1), (1, 1)),
        ((2, 2), (0, 0), (0, 0), (0, 0), (0, 0), (2, 2), (2, 2)),
        ((3, 3), (1, 0), (0, 0), (6, 0), (3, 0), (0, 3), (3, 3)),  # env 0: 1+2+3, reset
        ((1, 4), (0, 0), (0, 0), (0, 0), (0, 0), (1, 4), (1, 4)),
        ((2, 5), (1, 0), (0, 1), (3, 15), (2, 5), (0, 0), (2, 5)),  # env 0: 1+2; env 1: time limit
        ((1, 1), (0, 0), (0, 0), (0, 0), (0, 0), (1, 1), (1, 1)),
    ]
    for t, (a, exp) in enumerate(zip(actions, expected, strict=True)):
        state, out = step(state, jnp.array(a, jnp.int32), jax.random.key(t))
        rew, term, trunc, c_ret, c_len, next_obs, true_next = exp
        np.testing.assert_array_equal(out.reward, rew, err_msg=f"step {t}")
        np.testing.assert_array_equal(out.terminated, np.array(term, bool), err_msg=f"step {t}")
        np.testing.assert_array_equal(out.truncated, np.array(trunc, bool), err_msg=f"step {t}")
        np.testing.assert_array_equal(out.done, np.array(term, bool) | np.array(trunc, bool))
        np.testing.assert_array_equal(out.completed, out.done)
        np.testing.assert_array_equal(out.completed_return, c_ret, err_msg=f"step {t}")
        np.testing.assert_array_equal(out.completed_length, c_len, err_msg=f"step {t}")
        np.testing.assert_array_equal(out.obs[:, 0], next_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(out.next_obs_true[:, 0], true_next, err_msg=f"step {t}")
    np.testing.assert_array_equal(state.episode_return, [1, 1])
    np.testing.assert_array_equal(state.episode_length, [1, 1])


def test_cartpole_returns_are_conserved_across_resets():
    """Every reward lands in exactly one episode: sum(rewards) = finished + running returns."""
    env = make_env("gymnax:CartPole-v1", 8)

    def body(carry, key):
        state, total = carry
        a_key, s_key = jax.random.split(key)
        state, out = env.step(state, random_actions(env.spec, a_key), s_key)
        return (state, total + out.reward.sum()), out

    state, _ = env.reset(jax.random.key(1))
    (state, total), outs = jax.jit(
        lambda s: jax.lax.scan(body, (s, 0.0), jax.random.split(jax.random.key(2), 300))
    )(state)
    finished = float(outs.completed_return.sum())
    assert int(outs.completed.sum()) > 50  # random CartPole episodes last ~22 steps
    np.testing.assert_allclose(
        finished + float(state.episode_return.sum()), float(total), rtol=1e-6
    )
    # CartPole pays 1 per step, so each finished return equals its length.
    done = np.asarray(outs.completed)
    np.testing.assert_array_equal(
        np.asarray(outs.completed_return)[done], np.asarray(outs.completed_length)[done]
    )
    assert not np.asarray(outs.truncated).any()  # random play never reaches 500 steps
    # Auto-reset: at a terminal step the next obs is a fresh start, the true one is out of bounds.
    true_x = np.abs(np.asarray(outs.next_obs_true)[done])
    assert ((true_x[:, 0] > 2.4) | (true_x[:, 2] > 0.2094)).all()
    assert (np.abs(np.asarray(outs.obs)[done]) <= 0.05).all()


# ------------------------------------------------------------------ every listed environment
def _roll(env, steps: int, seed: int = 0):
    state, obs = env.reset(jax.random.key(seed))
    step = jax.jit(env.step) if env.spec.is_jax else env.step
    key = jax.random.key(seed + 1)
    outs = []
    for _ in range(steps):
        key, a_key, s_key = jax.random.split(key, 3)
        state, out = step(state, random_actions(env.spec, a_key), s_key)
        outs.append(out)
    return obs, outs, step


def _check_shapes(env, obs, out):
    m, spec = env.spec.num_envs, env.spec
    assert obs.shape == (m, *spec.obs_shape) and obs.dtype == spec.obs_dtype
    for name in ("obs", "next_obs_true"):
        arr = getattr(out, name)
        assert arr.shape == (m, *spec.obs_shape) and arr.dtype == spec.obs_dtype, name
        assert np.isfinite(np.asarray(arr)).all(), name
    for name in ("reward", "completed_return"):
        assert getattr(out, name).shape == (m,) and getattr(out, name).dtype == np.float32
    for name in ("done", "terminated", "truncated", "completed"):
        assert getattr(out, name).shape == (m,) and getattr(out, name).dtype == bool, name


# MinAtar: Breakout in every run (its observations are bools), the other games when slow.
@pytest.mark.parametrize("env_id", [
    e if not e.endswith("-MinAtar") or e == "Breakout-MinAtar"
    else pytest.param(e, marks=pytest.mark.slow) for e in GYMNAX_ENVS])
def test_gymnax_env_constructs_and_steps(env_id):
    env = make_env(f"gymnax:{env_id}", 3)
    assert env.spec.is_jax and env.spec.name == f"gymnax:{env_id}"
    obs, outs, step = _roll(env, 4)
    _check_shapes(env, obs, outs[-1])
    assert step._cache_size() == 1  # the jitted step did not retrace on later calls
    if env_id == "Pendulum-v1":
        assert env.spec.action == ContinuousActions((1,), (-2.0,), (2.0,))
    if env_id == "CartPole-v1":
        assert env.spec.action == DiscreteActions(2) and env.spec.max_episode_steps == 500


def test_gymnax_time_limit_is_truncation_not_termination():
    env = make_env("gymnax:Pendulum-v1", 2, max_episode_steps=3)
    _, outs, _ = _roll(env, 6)
    truncated = np.stack([np.asarray(o.truncated) for o in outs])
    np.testing.assert_array_equal(truncated[:, 0], [0, 0, 1, 0, 0, 1])
    assert not np.stack([np.asarray(o.terminated) for o in outs]).any()
    assert np.asarray(outs[2].completed_length).tolist() == [3, 3]


@pytest.mark.parametrize(
    "env_name",
    # A minute of brax's compile on 2 cores: in the long tier, which CI runs after make test.
    [pytest.param("inverted_pendulum", marks=pytest.mark.long)]
    + [pytest.param(n, marks=pytest.mark.slow) for n in BRAX_ENVS if n != "inverted_pendulum"],
)
def test_brax_env_constructs_and_steps(env_name):
    env = make_env(f"brax:{env_name}", 2, episode_length=3)
    assert env.spec.is_jax and isinstance(env.spec.action, ContinuousActions)
    obs, outs, _ = _roll(env, 3)
    _check_shapes(env, obs, outs[-1])
    assert np.asarray(outs[-1].done).all()  # episode_length=3 cuts every episode here
    assert np.asarray(outs[-1].completed_length).tolist() == [3, 3]


def test_gymnasium_cartpole_adapter():
    env = make_env("gymnasium:CartPole-v1", 4)
    assert not env.spec.is_jax and env.spec.action == DiscreteActions(2)
    obs, outs, _ = _roll(env, 80)
    _check_shapes(env, obs, outs[-1])
    done = np.stack([o.completed for o in outs])
    returns = np.stack([o.completed_return for o in outs])
    lengths = np.stack([o.completed_length for o in outs])
    assert done.sum() >= 4
    np.testing.assert_array_equal(returns[done], lengths[done])
    # The true final observation is kept apart from the auto-reset observation.
    last = outs[int(np.argmax(done.any(axis=1)))]
    i = int(np.argmax(last.done))
    assert not np.array_equal(last.obs[i], last.next_obs_true[i])
    assert np.abs(last.obs[i]).max() <= 0.05
    # Same key, same trajectory: reset seeds the envs from the JAX key.
    obs_again, outs_again, _ = _roll(make_env("gymnasium:CartPole-v1", 4), 80)
    np.testing.assert_array_equal(obs, obs_again)
    np.testing.assert_array_equal(outs[-1].obs, outs_again[-1].obs)
    env.close()


def test_gymnasium_bookkeeping_stays_on_the_host():
    """A state whose bookkeeping went through jax (a jitted call, `device_put`) steps to the
    same numbers, as numpy: the host env never runs eager jax ops per step."""
    env, twin = make_env("gymnasium:CartPole-v1", 3), make_env("gymnasium:CartPole-v1", 3)
    key = jax.random.PRNGKey(3)
    state, _ = env.reset(key)
    twin_state, _ = twin.reset(key)
    actions = np.array([0, 1, 1])
    for _ in range(30):
        state, out = env.step(state, actions)
        twin_state, twin_out = twin.step(jax.device_put(twin_state), actions)
        for x in (*jax.tree.leaves(twin_state), *jax.tree.leaves(twin_out)):
            assert isinstance(x, np.ndarray), type(x)
        for a, b in zip(jax.tree.leaves((state, out)), jax.tree.leaves((twin_state, twin_out)),
                        strict=True):
            np.testing.assert_array_equal(a, b)
    env.close()
    twin.close()


@pytest.mark.parametrize("env_id,m,steps", [("CartPole-v1", 3, 300), ("Pendulum-v1", 2, 450),
                                             ("Acrobot-v1", 2, 600)])
def test_gymnasium_adapter_steps_as_gymnasiums_vector_env(env_id, m, steps):
    """The adapter steps its copies itself; every output equals gymnasium's
    SyncVectorEnv(autoreset_mode=SAME_STEP) on the same seeds and actions, bit for bit, across
    terminations (CartPole), truncations (Pendulum at 200 steps) and both together."""
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    env = make_env(f"gymnasium:{env_id}", m)
    key = jax.random.PRNGKey(11)
    state, obs = env.reset(key)
    seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
    vec = SyncVectorEnv([lambda: gym.make(env_id) for _ in range(m)],
                        autoreset_mode=AutoresetMode.SAME_STEP)
    ref_obs, _ = vec.reset(seed=seed)
    np.testing.assert_array_equal(obs, np.asarray(ref_obs, np.float32))
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(steps):
        if isinstance(env.spec.action, DiscreteActions):
            actions = rng.integers(0, env.spec.action.n, m)
        else:
            actions = rng.uniform(-2.0, 2.0, (m, *env.spec.action.shape)).astype(np.float32)
        state, out = env.step(state, actions)
        o, r, term, trunc, info = vec.step(np.asarray(actions, vec.action_space.dtype))
        final = np.asarray(o, np.float32).copy()
        for i in np.flatnonzero(info.get("_final_obs", np.zeros(m, bool))):
            final[i] = info["final_obs"][i]
        np.testing.assert_array_equal(out.obs, np.asarray(o, np.float32))
        np.testing.assert_array_equal(out.reward, np.asarray(r, np.float32))
        np.testing.assert_array_equal(out.next_obs_true, final)
        np.testing.assert_array_equal(np.asarray(out.terminated), term)
        np.testing.assert_array_equal(np.asarray(out.truncated), trunc & ~term)
        np.testing.assert_array_equal(np.asarray(out.done), term | trunc)
        ends += int((term | trunc).sum())
    assert ends >= m  # episode ends were crossed
    env.close()
    vec.close()


def test_gymnasium_continuous_spec():
    env = make_env("gymnasium:Pendulum-v1", 2)
    assert env.spec.action == ContinuousActions((1,), (-2.0,), (2.0,))
    obs, outs, _ = _roll(env, 2)
    _check_shapes(env, obs, outs[-1])


# ------------------------------------------------------------------ errors and helpers
@pytest.mark.parametrize(
    "name",
    [
        "gymnax:CartPole-v9",
        "brax:ant_colony",
        "dm_control:cartpole",
        "CartPole-v1",
        "gymnasium:NoSuchEnv-v0",
    ],
)
def test_unknown_env_names_list_the_known_ones(name):
    with pytest.raises(ValueError, match="known:.*gymnax:CartPole-v1"):
        make_env(name, 2)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="num_envs"):
        make_env("gymnax:CartPole-v1", 0)
    with pytest.raises(ValueError, match="episode_lenght"):
        make_env("gymnax:CartPole-v1", 2, episode_lenght=10)
    with pytest.raises(ValueError, match="backend"):
        make_env("brax:reacher", 2, backend="bullet")
    env = make_env("gymnax:CartPole-v1", 2)
    state, _ = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        env.step(state, jnp.zeros((3,), jnp.int32), jax.random.key(1))


def test_known_envs_lists_everything_promised():
    for name in [
        "gymnax:CartPole-v1",
        "gymnax:Acrobot-v1",
        "gymnax:MountainCar-v0",
        "gymnax:Pendulum-v1",
        "gymnax:MountainCarContinuous-v0",
        "brax:inverted_pendulum",
        "brax:inverted_double_pendulum",
        "brax:reacher",
        "brax:halfcheetah",
    ]:
        assert name in KNOWN_ENVS


def test_example_transition_matches_spec():
    spec = make_env("gymnax:Pendulum-v1", 2).spec
    item = example_transition(spec)
    assert item["obs"].shape == (3,) and item["action"].shape == (1,)
    assert item["action"].dtype == np.float32 and item["discount"].shape == ()
    spec = make_env("gymnax:CartPole-v1", 2).spec
    assert example_transition(spec)["action"].dtype == np.int32
