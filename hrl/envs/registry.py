"""`make_env(name, num_envs, **kwargs)`: one entry point for every environment hrl knows."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from hrl.envs.gymnasium_env import GymnasiumVecEnv
from hrl.envs.jax_envs import BRAX_ENVS, GYMNAX_ENVS, JaxVecEnv, make_brax, make_gymnax

VecEnv = JaxVecEnv | GymnasiumVecEnv

KNOWN_ENVS = (
    *(f"gymnax:{n}" for n in GYMNAX_ENVS),
    *(f"brax:{n}" for n in BRAX_ENVS),
    "gymnasium:<any registered id>",
    "gymnasium:<module>:<id> (the module registers id)",
)


def make_env(name: str, num_envs: int, **kwargs: Any) -> VecEnv:
    """Build `num_envs` copies of environment `name` ('library:id').

    kwargs: gymnax -- `max_episode_steps`, `obs_dtype` (float32, bool, uint8); brax --
    `backend` ('positional' default, 'generalized', 'spring', 'mjx') and `episode_length`
    (1000); gymnasium -- passed to `gymnasium.make`.
    """
    if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    library, sep, env_id = str(name).partition(":")
    if not sep or not env_id:
        raise ValueError(f"env name must look like 'library:id', got {name!r}; known: {KNOWN_ENVS}")
    if library == "gymnax":
        if env_id not in GYMNAX_ENVS:
            raise ValueError(f"unknown env {name!r}; known: {KNOWN_ENVS}")
        _check_kwargs(name, kwargs, {"max_episode_steps", "obs_dtype"})
        return make_gymnax(env_id, num_envs, **kwargs)
    if library == "brax":
        if env_id not in BRAX_ENVS:
            raise ValueError(f"unknown env {name!r}; known: {KNOWN_ENVS}")
        _check_kwargs(name, kwargs, {"backend", "episode_length"})
        return make_brax(env_id, num_envs, **kwargs)
    if library == "gymnasium":
        # gymnasium: optional, loaded only when a gymnasium env is looked up
        import gymnasium as gym

        module, colon, bare_id = env_id.rpartition(":")
        if colon:  # gymnasium's "module:Id" form: importing the module registers Id
            _import_env_module(name, module)
        if bare_id not in gym.registry:
            raise ValueError(
                f"unknown env {name!r}: {env_id!r} is not a registered gymnasium id; "
                f"known: {KNOWN_ENVS}"
            )
        return GymnasiumVecEnv(bare_id, num_envs, **kwargs)
    raise ValueError(f"unknown env library {library!r} in {name!r}; known: {KNOWN_ENVS}")


def _import_env_module(name: str, module: str) -> None:
    """Import the module of a "gymnasium:<module>:<id>" name, found on sys.path or else in the
    current directory (as `python -m` would find it: `hrl` started from a console script does
    not have the current directory on its path)."""
    try:
        importlib.import_module(module)
        return
    except ModuleNotFoundError as err:
        if os.getcwd() in sys.path or not module.startswith(err.name or "\0"):
            raise ValueError(f"env {name!r}: cannot import module {module!r} ({err})") from None
    sys.path.append(os.getcwd())
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"env {name!r}: cannot import module {module!r} ({err})") from None


def _check_kwargs(name: str, kwargs: dict, allowed: set[str]) -> None:
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; allowed: {sorted(allowed)}")
