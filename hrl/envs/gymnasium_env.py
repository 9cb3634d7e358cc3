"""Any registered gymnasium environment as a host-side vectorized env (`is_jax=False`).

Same method names and outputs as `JaxVecEnv`, but:
* everything runs on the host with numpy arrays (CPU actors), nothing here jits;
* the simulator state lives inside this object (M copies made by `gymnasium.make`), so
  `EnvState.inner` is None and only the episode bookkeeping travels in the returned `EnvState`;
  calls must therefore be made in order on one object (`step` after `reset`, each state used
  once) -- the object is not a pure function and cannot be replayed from an old state;
* `reset(key)` seeds the M copies deterministically from the JAX key; `step` ignores its key
  (gymnasium envs draw from their own seeded generators).

Auto-reset is gymnasium's SAME_STEP mode, so the conventions match the JAX envs exactly:
`out.obs` is the first observation of the next episode and `out.next_obs_true` the real final
observation of the one that ended. The copies are stepped here in a loop, as gymnasium's
`SyncVectorEnv(autoreset_mode=SAME_STEP)` steps them (copy i reset with seed + i, reset again
right after its episode ends, observations batched in the observation space's dtype), and the
outputs are that vector env's bit for bit (tests/envs/test_envs.py); the loop skips what this
adapter never reads: the vector env's info dicts and its copy of the batch.

Checkpoints: `save_state()` pickles what the M simulators hold (every wrapper layer's own
attributes: physics state, seeded generators, step counters), and `load_state()` puts it back,
so a resumed host-loop run continues bit for bit. Envs holding something pickle cannot copy (a
render window, a handle into a C library) raise `HostEnvStateError` and are restarted instead.
"""

from __future__ import annotations

import pickle
from typing import Any

import jax
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


class HostEnvStateError(RuntimeError):
    """A host env's state cannot be saved or put back (unpicklable, or another env's)."""


def _layers(env) -> list:
    """The wrapper chain of one gymnasium env, outermost first, down to the unwrapped env."""
    layers = [env]
    while hasattr(layers[-1], "env"):
        layers.append(layers[-1].env)
    return layers


def _own_attributes(layer) -> dict:
    """A layer's attributes without the layer it wraps (saved as its own entry)."""
    return {k: v for k, v in vars(layer).items() if k != "env"}


class GymnasiumVecEnv:
    """M copies of a gymnasium env, stepped on the host. See the module docstring."""

    def __init__(self, env_id: str, num_envs: int, **make_kwargs: Any):
        # gymnasium: optional, loaded only when a gymnasium env is made
        import gymnasium as gym

        self._env_id = env_id
        self.envs = [gym.make(env_id, **make_kwargs) for _ in range(num_envs)]
        obs_space = self.envs[0].observation_space
        act_space = self.envs[0].action_space
        for env in self.envs[1:]:
            if env.observation_space != obs_space or env.action_space != act_space:
                raise ValueError(f"gymnasium:{env_id}: its copies have different spaces")
        self._obs_dtype = obs_space.dtype
        if not isinstance(obs_space, gym.spaces.Box):
            raise ValueError(
                f"gymnasium:{env_id}: only Box observation spaces are supported, got {obs_space}"
            )
        if isinstance(act_space, gym.spaces.Discrete):
            self._action_offset = int(act_space.start)
            action = DiscreteActions(int(act_space.n))
        elif isinstance(act_space, gym.spaces.Box):
            shape = tuple(act_space.shape)
            action = ContinuousActions(
                shape,
                tuple(map(float, np.asarray(act_space.low, np.float32).ravel())),
                tuple(map(float, np.asarray(act_space.high, np.float32).ravel())),
            )
        else:
            raise ValueError(
                f"gymnasium:{env_id}: only Discrete or Box action spaces are supported, "
                f"got {act_space}"
            )
        self.spec = EnvSpec(
            name=f"gymnasium:{env_id}",
            num_envs=num_envs,
            obs_shape=tuple(obs_space.shape),
            obs_dtype=np.dtype(np.float32),
            action=action,
            is_jax=False,
            max_episode_steps=gym.spec(env_id).max_episode_steps,
        )

    def reset(self, key) -> tuple[EnvState, np.ndarray]:
        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)]
        ret, length = init_bookkeeping(self.spec.num_envs, np)
        return EnvState(None, ret, length), self._batch(obs)

    def _batch(self, obs: list) -> np.ndarray:
        """The copies' observations as one float32 array, stacked into the space's dtype first
        as the vector env stacks them, so an observation of another dtype rounds the same."""
        stacked = np.empty((len(obs), *self.spec.obs_shape), self._obs_dtype)
        return np.asarray(np.stack(obs, axis=0, out=stacked), np.float32)

    def step(self, env_state: EnvState, actions, key=None) -> tuple[EnvState, StepOut]:
        del key  # gymnasium envs use their own generators, seeded in reset
        m, a = self.spec.num_envs, self.spec.action
        actions = np.asarray(actions)
        if isinstance(a, DiscreteActions):
            if actions.shape != (m,):
                raise ValueError(
                    f"{self.spec.name}: actions must have shape ({m},), got {actions.shape}"
                )
            env_actions = actions.astype(np.int64)
            if self._action_offset:
                env_actions += self._action_offset
        else:
            if actions.shape != (m, *a.shape):
                raise ValueError(
                    f"{self.spec.name}: actions must have shape {(m, *a.shape)}, "
                    f"got {actions.shape}"
                )
            env_actions = np.clip(actions.astype(np.float32), a.low_array(), a.high_array())
        obs, final = [None] * m, {}
        reward = np.zeros(m, np.float64)  # the vector env's reward dtype, then float32 below
        terminated, truncated = np.zeros(m, bool), np.zeros(m, bool)
        for i, env in enumerate(self.envs):
            obs[i], reward[i], terminated[i], truncated[i], _ = env.step(env_actions[i])
            if terminated[i] or truncated[i]:
                final[i] = obs[i]
                obs[i], _ = env.reset()
        obs = self._batch(obs)
        reward = reward.astype(np.float32)
        truncated &= ~terminated
        next_obs_true = obs.copy()
        for i, last in final.items():
            next_obs_true[i] = last
        # The bookkeeping may come back as jax arrays (a state that went through a jitted call
        # or `jax.device_put`); on numpy it costs microseconds, eagerly on jax a dispatch per op.
        ret, length, fields = book_step(
            np.asarray(env_state.episode_return),
            np.asarray(env_state.episode_length),
            reward,
            terminated,
            truncated,
        )
        out = StepOut(
            obs=obs,
            reward=reward,
            next_obs_true=next_obs_true,
            **fields,
        )
        return EnvState(None, ret, length), out

    def save_state(self) -> bytes:
        """The M simulators' whole state as bytes (see the module docstring)."""
        snapshot = {
            "env_id": self._env_id,
            "layers": [
                [(type(layer).__qualname__, _own_attributes(layer)) for layer in _layers(env)]
                for env in self.envs
            ],
        }
        try:
            return pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # pickle raises TypeError, AttributeError, PicklingError
            raise HostEnvStateError(
                f"{self.spec.name}: the env state cannot be saved ({type(err).__name__}: {err})"
            ) from err

    def load_state(self, blob: bytes) -> None:
        """Put back a state from `save_state()` of an env with the same id and count."""
        try:
            snapshot = pickle.loads(blob)
        except Exception as err:
            raise HostEnvStateError(f"{self.spec.name}: saved env state is unreadable "
                                    f"({type(err).__name__}: {err})") from err
        if not isinstance(snapshot, dict):
            raise HostEnvStateError(f"{self.spec.name}: saved env state is not an env "
                                    f"snapshot ({type(snapshot).__name__})")
        saved_layers = snapshot.get("layers", [])
        if snapshot.get("env_id") != self._env_id or len(saved_layers) != len(self.envs):
            raise HostEnvStateError(
                f"{self.spec.name} x{self.spec.num_envs}: saved env state is of "
                f"{snapshot.get('env_id')} x{len(saved_layers)}"
            )
        for env, saved in zip(self.envs, saved_layers, strict=True):
            layers = _layers(env)
            kinds = [type(layer).__qualname__ for layer in layers]
            if kinds != [kind for kind, _ in saved]:
                raise HostEnvStateError(f"{self.spec.name}: saved wrapper chain "
                                        f"{[k for k, _ in saved]} differs from {kinds}")
            for layer, (_, attributes) in zip(layers, saved, strict=True):
                vars(layer).update(attributes)
        # A snapshot written on SyncVectorEnv also holds its "autoreset" flags, which SAME_STEP
        # stepping never reads: they are ignored.

    def close(self) -> None:
        for env in self.envs:
            env.close()
