"""What every vectorized environment in hrl looks like: its static spec, its state, its step output.

A `VecEnv` holds M copies of one environment and has two functions:

    env_state, obs = env.reset(key)
    env_state, out = env.step(env_state, actions, key)

For JAX environments (gymnax, brax) both are pure and jit/scan/vmap-able; the M copies are
vmapped and reset automatically. For gymnasium environments the same two calls run on the host
with numpy arrays (see `hrl.envs.gymnasium_env`).

Auto-reset convention (the one the replay transition needs): after a step that ends an episode,
`out.obs` is the first observation of the next episode, `out.next_obs_true` the real last
observation of the finished one, so the stored transition is (obs, action, reward,
next_obs_true, discount = gamma * (1 - terminated)). `done = terminated | truncated`; only
`terminated` stops bootstrapping -- a time-limit truncation still bootstraps.

Episode bookkeeping lives in `EnvState` (running return and length per env), so returns are
counted correctly across auto-resets: on the step where env i finishes, `out.completed[i]` is
True and `out.completed_return[i]` / `out.completed_length[i]` hold that episode's totals
(zero elsewhere). Mean of finished episodes:
`sum(out.completed_return) / max(sum(out.completed), 1)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


@dataclasses.dataclass(frozen=True)
class DiscreteActions:
    """Actions are int32 in [0, n)."""

    n: int


@dataclasses.dataclass(frozen=True)
class ContinuousActions:
    """Actions are float32 arrays of `shape`, each component in [low, high]."""

    shape: tuple[int, ...]
    low: tuple[float, ...]  # one bound per component (flattened), so the spec stays hashable
    high: tuple[float, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def low_array(self) -> np.ndarray:
        return np.asarray(self.low, np.float32).reshape(self.shape)

    def high_array(self) -> np.ndarray:
        return np.asarray(self.high, np.float32).reshape(self.shape)


ActionSpec = DiscreteActions | ContinuousActions


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of a vectorized environment (hashable: usable as a jit static)."""

    name: str
    num_envs: int
    obs_shape: tuple[int, ...]  # of one observation, without the env dimension
    obs_dtype: Any  # numpy dtype: float32, or bool/uint8 where the env's values fit exactly
    action: ActionSpec
    is_jax: bool  # True: reset/step are pure JAX functions; False: host-side numpy
    max_episode_steps: int | None = None  # time limit (truncation), if known

    @property
    def discrete(self) -> bool:
        return isinstance(self.action, DiscreteActions)


@struct.dataclass
class EnvState:
    """State of M environment copies plus the per-env episode bookkeeping.

    `inner` is the wrapped library's (batched) state; None for gymnasium envs, whose simulator
    state lives inside the host object.
    """

    inner: Any
    episode_return: Any  # float32 (M,): return so far of the running episode
    episode_length: Any  # int32 (M,): steps so far of the running episode


@struct.dataclass
class StepOut:
    """Everything one step of M envs produces. All fields have leading dimension M."""

    obs: Any  # (M, *obs_shape) of spec.obs_dtype: observation to act on next (after auto-reset)
    reward: Any  # float32 (M,)
    done: Any  # bool (M,): terminated | truncated -- the episode ended on this step
    terminated: Any  # bool (M,): ended in a terminal state (do not bootstrap)
    truncated: Any  # bool (M,): ended by a time limit (bootstrap)
    next_obs_true: Any  # (M, *obs_shape), spec.obs_dtype: real next obs, before auto-reset
    completed: Any  # bool (M,): same as done; named for the episode statistics below
    completed_return: Any  # float32 (M,): return of the episode finished here, else 0
    completed_length: Any  # int32 (M,): length of the episode finished here, else 0


def _xp(x):
    return np if isinstance(x, np.ndarray) else jnp


def init_bookkeeping(num_envs: int, xp=jnp) -> tuple[Any, Any]:
    return xp.zeros((num_envs,), xp.float32), xp.zeros((num_envs,), xp.int32)


def book_step(
    episode_return, episode_length, reward, terminated, truncated
) -> tuple[Any, Any, dict[str, Any]]:
    """Advance the running returns by one step and cut them where an episode ended.

    Works on jax and numpy arrays alike (the gymnasium adapter uses numpy).
    Returns (new_return, new_length, fields for StepOut).
    """
    xp = _xp(episode_return)
    done = xp.logical_or(terminated, truncated)
    ret = episode_return + reward.astype(xp.float32)
    length = episode_length + 1
    zero_f = xp.zeros_like(ret)
    zero_i = xp.zeros_like(length)
    fields = dict(
        done=done,
        terminated=terminated,
        truncated=truncated,
        completed=done,
        completed_return=xp.where(done, ret, zero_f),
        completed_length=xp.where(done, length, zero_i),
    )
    return xp.where(done, zero_f, ret), xp.where(done, zero_i, length), fields


def random_actions(spec: EnvSpec, key) -> jax.Array:
    """Uniformly random actions for all M envs (warm-up, baselines, tests)."""
    if isinstance(spec.action, DiscreteActions):
        return jax.random.randint(key, (spec.num_envs,), 0, spec.action.n, jnp.int32)
    a = spec.action
    return jax.random.uniform(
        key,
        (spec.num_envs, *a.shape),
        jnp.float32,
        jnp.asarray(a.low_array()),
        jnp.asarray(a.high_array()),
    )


def example_transition(spec: EnvSpec) -> dict[str, np.ndarray]:
    """One replay transition (no batch dimension) in the layout hrl.agents train on.

    {'obs', 'action', 'reward', 'next_obs', 'discount'} with discount = gamma**n * (1 - terminated).
    Pass it to `PrioritizedReplay.init`.
    """
    obs = np.zeros(spec.obs_shape, spec.obs_dtype)  # stored in the env's own dtype
    if isinstance(spec.action, DiscreteActions):
        action = np.zeros((), np.int32)
    else:
        action = np.zeros(spec.action.shape, np.float32)
    return {
        "obs": obs,
        "action": action,
        "reward": np.zeros((), np.float32),
        "next_obs": obs.copy(),
        "discount": np.zeros((), np.float32),
    }
