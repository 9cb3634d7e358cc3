"""Environments behind one interface: gymnax and brax (pure JAX, vmapped) and gymnasium (host).

    env = make_env("gymnax:CartPole-v1", num_envs=64)
    env_state, obs = env.reset(key)
    env_state, out = env.step(env_state, actions, key)   # out: StepOut

See `hrl.envs.spec` for the auto-reset and episode-bookkeeping conventions.
"""

from hrl.envs.jax_envs import BRAX_BACKENDS, BRAX_ENVS, DEFAULT_BRAX_BACKEND, GYMNAX_ENVS, JaxVecEnv
from hrl.envs.registry import KNOWN_ENVS, VecEnv, make_env, register_env
from hrl.envs.spec import (
    ActionSpec,
    ContinuousActions,
    DiscreteActions,
    EnvSpec,
    EnvState,
    StepOut,
    example_transition,
    random_actions,
)

__all__ = [
    "BRAX_BACKENDS",
    "BRAX_ENVS",
    "DEFAULT_BRAX_BACKEND",
    "GYMNAX_ENVS",
    "KNOWN_ENVS",
    "ActionSpec",
    "ContinuousActions",
    "DiscreteActions",
    "EnvSpec",
    "EnvState",
    "JaxVecEnv",
    "StepOut",
    "VecEnv",
    "example_transition",
    "make_env",
    "random_actions",
    "register_env",
]
