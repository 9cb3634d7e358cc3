"""gymnax and brax environments as `JaxVecEnv`: M copies vmapped, auto-reset, episode bookkeeping.

Both adapters reduce their library to two single-env pure functions,
`reset_one(key) -> (inner, obs)` and `step_one(inner, action, key) -> (inner, obs, reward,
terminated, truncated)` (no auto-reset), and `JaxVecEnv` does the vmapping, the auto-reset with
a fresh random initial state per finished env, and the return bookkeeping in one place.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl.envs.spec import (
    ContinuousActions,
    DiscreteActions,
    EnvSpec,
    EnvState,
    StepOut,
    book_step,
    init_bookkeeping,
)


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a valid jit static
class JaxVecEnv:
    """M copies of a JAX environment. `reset` and `step` are pure and jit/scan-able.

    Cost per `step`: one vmapped env step plus one vmapped reset (selected per env where the
    episode ended), the usual price of branch-free auto-reset.
    """

    spec: EnvSpec
    reset_one: Callable[[jax.Array], tuple[Any, jax.Array]]
    step_one: Callable[..., tuple[Any, jax.Array, jax.Array, jax.Array, jax.Array]]

    def reset(self, key) -> tuple[EnvState, jax.Array]:
        keys = jax.random.split(key, self.spec.num_envs)
        inner, obs = jax.vmap(self.reset_one)(keys)
        inner = _strong(inner)
        ret, length = init_bookkeeping(self.spec.num_envs)
        return EnvState(inner, ret, length), obs.astype(self.spec.obs_dtype)

    def step(self, env_state: EnvState, actions, key) -> tuple[EnvState, StepOut]:
        m = self.spec.num_envs
        actions = self._check_actions(actions)
        step_key, reset_key = jax.random.split(key)
        inner, next_obs, reward, terminated, truncated = jax.vmap(self.step_one)(
            env_state.inner, actions, jax.random.split(step_key, m)
        )
        inner = _strong(inner)
        next_obs = next_obs.astype(self.spec.obs_dtype)
        reward = reward.reshape(m).astype(jnp.float32)
        terminated = terminated.reshape(m).astype(bool)
        truncated = truncated.reshape(m).astype(bool) & ~terminated
        if self.spec.max_episode_steps is not None:
            # The length limit is enforced from our own counter, the same for every backend.
            hit_limit = env_state.episode_length + 1 >= self.spec.max_episode_steps
            truncated = truncated | (hit_limit & ~terminated)
        ret, length, fields = book_step(
            env_state.episode_return, env_state.episode_length, reward, terminated, truncated
        )
        done = fields["done"]

        def reset_finished(inner):
            reset_inner, reset_obs = jax.vmap(self.reset_one)(jax.random.split(reset_key, m))
            reset_inner = _strong(reset_inner)
            inner = jax.tree.map(lambda r, s: _select(done, r, s), reset_inner, inner)
            return inner, _select(done, reset_obs.astype(self.spec.obs_dtype), next_obs)

        # Skip the (for brax, costly) batched reset on steps where no episode ended.
        inner, obs = jax.lax.cond(
            jnp.any(done), reset_finished, lambda inner: (inner, next_obs), inner
        )
        out = StepOut(obs=obs, reward=reward, next_obs_true=next_obs, **fields)
        return EnvState(inner, ret, length), out

    def _check_actions(self, actions):
        m, a = self.spec.num_envs, self.spec.action
        actions = jnp.asarray(actions)
        if isinstance(a, DiscreteActions):
            if actions.shape != (m,):
                raise ValueError(
                    f"{self.spec.name}: actions must have shape ({m},), got {actions.shape}"
                )
            return actions.astype(jnp.int32)
        if actions.shape != (m, *a.shape):
            raise ValueError(
                f"{self.spec.name}: actions must have shape {(m, *a.shape)}, got {actions.shape}"
            )
        return jnp.clip(actions.astype(jnp.float32), a.low_array(), a.high_array())


def _strong(tree):
    """Drop weak types (e.g. a Python 0 in a reset state) so the state's type is the same
    after reset and after step: a jitted step then never retraces and fits a scan carry."""
    return jax.tree.map(lambda x: jnp.asarray(x).astype(jnp.asarray(x).dtype), tree)


def _select(mask, on_true, on_false):
    mask = mask.reshape(mask.shape + (1,) * (on_true.ndim - mask.ndim))
    return jnp.where(mask, on_true, on_false)


# ---------------------------------------------------------------------------------- gymnax
GYMNAX_ENVS = (
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "Pendulum-v1",
    "MountainCarContinuous-v0",
    # MinAtar (Young & Tian 2019) as gymnax ships it: 10x10xC observations of 0/1 channels.
    "Asterix-MinAtar",
    "Breakout-MinAtar",
    "Freeway-MinAtar",
    "SpaceInvaders-MinAtar",
)
# The dtype observations are kept in (through the n-step window and the replay rows) when
# `obs_dtype` is not given: MinAtar's channels are 0/1 by definition, so bool holds them
# exactly in a quarter of float32's bytes; everything else stays float32.
OBS_DTYPES = ("float32", "bool", "uint8")


def default_obs_dtype(env_id: str) -> str:
    return "bool" if env_id.endswith("-MinAtar") else "float32"


def make_gymnax(env_id: str, num_envs: int, max_episode_steps: int | None = None,
                obs_dtype: str | None = None) -> JaxVecEnv:
    """A gymnax environment; `max_episode_steps` overrides gymnax's own time limit;
    `obs_dtype` (one of OBS_DTYPES; default `default_obs_dtype`) is the dtype observations
    are cast to, which must hold the env's values exactly (bool: 0/1, uint8: 0..255
    integers) for the cast to lose nothing."""
    if obs_dtype is None:
        obs_dtype = default_obs_dtype(env_id)
    if obs_dtype not in OBS_DTYPES:
        raise ValueError(f"gymnax:{env_id}: obs_dtype must be one of {OBS_DTYPES}, "
                         f"got {obs_dtype!r}")
    # gymnax: loaded only when a gymnax env is made
    import gymnax

    env, params = gymnax.make(env_id)
    return gymnax_api_env(env, params, f"gymnax:{env_id}", num_envs, max_episode_steps,
                          obs_dtype)


def gymnax_api_env(env, params, name: str, num_envs: int, max_episode_steps: int | None = None,
                   obs_dtype: str = "float32") -> JaxVecEnv:
    """M copies of any env with gymnax's API: `reset_env(key, params) -> (obs, state)` and
    `step_env(key, state, action, params) -> (obs, state, reward, done, info)` (or, where an
    env has no `*_env` methods, `reset` and `step` of the same shape: their own auto-reset, if
    any, is overridden by JaxVecEnv's), `action_space(params)` (`.n`: discrete; else `.shape`,
    `.low`, `.high`), and optionally `observation_space(params)` (else the shape of reset's
    observation), `is_truncated(state, params)` and `params.max_steps_in_episode`.
    `max_episode_steps` overrides the params' limit (or sets one: JaxVecEnv's counter)."""
    if obs_dtype not in OBS_DTYPES:
        raise ValueError(f"{name}: obs_dtype must be one of {OBS_DTYPES}, got {obs_dtype!r}")
    has_limit = hasattr(params, "max_steps_in_episode")
    if max_episode_steps is not None and has_limit:
        params = params.replace(max_steps_in_episode=int(max_episode_steps))
    if max_episode_steps is None and has_limit:
        max_episode_steps = int(params.max_steps_in_episode)
    reset = getattr(env, "reset_env", None) or env.reset
    # step_env, not step: gymnax's step auto-resets with its own key; JaxVecEnv does it.
    step = getattr(env, "step_env", None) or env.step
    truncated = getattr(env, "is_truncated", None)
    space = env.action_space(params)
    if hasattr(space, "n"):
        action = DiscreteActions(int(space.n))
    else:
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, np.float32), shape).ravel()
        high = np.broadcast_to(np.asarray(space.high, np.float32), shape).ravel()
        action = ContinuousActions(shape, tuple(map(float, low)), tuple(map(float, high)))
    try:
        obs_shape = tuple(env.observation_space(params).shape)
    except (AttributeError, NotImplementedError):  # none, or gymnax's abstract one
        obs_shape = tuple(jax.eval_shape(reset, jax.random.PRNGKey(0), params)[0].shape)
    spec = EnvSpec(
        name=name,
        num_envs=num_envs,
        obs_shape=obs_shape,
        obs_dtype=np.dtype(obs_dtype),
        action=action,
        is_jax=True,
        max_episode_steps=max_episode_steps,
    )

    def reset_one(key):
        obs, state = reset(key, params)
        return state, obs

    def step_one(state, action, key):
        obs, state, reward, terminated, _ = step(key, state, action, params)
        cut = truncated(state, params) if truncated else jnp.zeros((), bool)
        return state, obs, reward, terminated, cut

    return JaxVecEnv(spec, reset_one, step_one)


# ---------------------------------------------------------------------------------- brax
BRAX_ENVS = ("inverted_pendulum", "inverted_double_pendulum", "reacher", "halfcheetah")
BRAX_BACKENDS = ("positional", "generalized", "spring", "mjx")
DEFAULT_BRAX_BACKEND = "positional"


def make_brax(
    env_name: str,
    num_envs: int,
    backend: str = DEFAULT_BRAX_BACKEND,
    episode_length: int = 1000,
) -> JaxVecEnv:
    """A brax environment with its physics `backend`; episodes are cut at `episode_length`.

    brax actions are in [-1, 1] (each env rescales to its actuator range itself).
    """
    if backend not in BRAX_BACKENDS:
        raise ValueError(f"brax backend must be one of {BRAX_BACKENDS}, got {backend!r}")
    if not isinstance(episode_length, int) or episode_length < 1:
        raise ValueError(f"episode_length must be a positive int, got {episode_length!r}")
    # brax: optional and heavy (MuJoCo), loaded only when a brax env is made
    from brax import envs as brax_envs

    with warnings.catch_warnings():
        # brax warns on every model load that it is unmaintained; known, and not actionable here.
        warnings.filterwarnings(
            "ignore", message=".*not actively being maintained", category=UserWarning
        )
        env = brax_envs.get_environment(env_name, backend=backend)
    n = int(env.action_size)
    spec = EnvSpec(
        name=f"brax:{env_name}",
        num_envs=num_envs,
        obs_shape=(int(env.observation_size),),
        obs_dtype=np.dtype(np.float32),
        action=ContinuousActions((n,), (-1.0,) * n, (1.0,) * n),
        is_jax=True,
        max_episode_steps=episode_length,
    )

    def reset_one(key):
        state = env.reset(key)
        return state, state.obs

    def step_one(state, action, key):
        del key  # brax dynamics are deterministic
        state = env.step(state, action)
        # brax's `done` is termination only; truncation is applied by JaxVecEnv's counter.
        return state, state.obs, state.reward, state.done > 0.5, jnp.zeros((), bool)

    return JaxVecEnv(spec, reset_one, step_one)
