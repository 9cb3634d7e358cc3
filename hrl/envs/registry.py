"""`make_env(name, num_envs, **kwargs)`: one entry point for every environment hrl knows."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import jax

from hrl.envs.gymnasium_env import GymnasiumVecEnv
from hrl.envs.jax_envs import (
    BRAX_ENVS,
    GYMNAX_ENVS,
    JaxVecEnv,
    gymnax_api_env,
    make_brax,
    make_gymnax,
)
from hrl.envs.spec import random_actions

VecEnv = JaxVecEnv | GymnasiumVecEnv

KNOWN_ENVS = (
    *(f"gymnax:{n}" for n in GYMNAX_ENVS),
    *(f"brax:{n}" for n in BRAX_ENVS),
    "gymnasium:<any registered id>",
    "gymnasium:<module>:<id> (the module registers id)",
    "jax:<module>:<factory> (a gymnax-API env)",
    "jax:<name> (hrl.envs.register_env)",
)

# Options of every gymnax-API env, taken by hrl; the rest go to the env's factory.
JAX_ENV_OPTIONS = ("max_episode_steps", "obs_dtype")
# jax:<name> -> factory, for this process (`register_env`).
_REGISTERED: dict[str, Callable[..., Any]] = {}


def register_env(name: str, factory: Callable[..., Any]) -> str:
    """Make a gymnax-API env known to this process as `jax:<name>`: `factory(**kwargs)`
    returns the env or a pair (env, params). Returns the full name. Other processes (a
    pipelined actor, a Ray worker, a later `hrl eval`) do not see it: name an importable
    factory there, `jax:<module>:<factory>`."""
    if not name or ":" in name:
        raise ValueError(f"register_env: name must be non-empty and have no ':', got {name!r}")
    _REGISTERED[name] = factory
    return f"jax:{name}"


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
    if library == "jax":
        return _make_jax(name, env_id, num_envs, kwargs)
    raise ValueError(f"unknown env library {library!r} in {name!r}; known: {KNOWN_ENVS}")


def _make_jax(name: str, env_id: str, num_envs: int, kwargs: dict) -> JaxVecEnv:
    """A gymnax-API env named `jax:<module>:<factory>` or `jax:<registered name>`; the
    factory may also be the env itself (an instance with reset and step)."""
    module, colon, attr = env_id.rpartition(":")
    if colon:
        _import_env_module(name, module)
        factory = getattr(sys.modules[module], attr, None)
        if factory is None:
            raise ValueError(f"env {name!r}: module {module!r} has no attribute {attr!r}")
    elif attr in _REGISTERED:
        factory = _REGISTERED[attr]
    else:
        raise ValueError(
            f"env {name!r}: {attr!r} is not registered in this process "
            f"(hrl.envs.register_env); registered: {sorted(_REGISTERED)}; or name a factory "
            "as jax:<module>:<factory>")
    options = {k: kwargs[k] for k in JAX_ENV_OPTIONS if k in kwargs}
    rest = {k: v for k, v in kwargs.items() if k not in JAX_ENV_OPTIONS}
    if _is_env(factory):
        if rest:
            raise ValueError(f"env {name!r} is an env, not a factory: it takes no options "
                             f"{sorted(rest)}; allowed: {list(JAX_ENV_OPTIONS)}")
        made = factory
    elif callable(factory):
        try:
            inspect.signature(factory).bind(**rest)
        except TypeError as err:
            given = f"options {sorted(rest)}" if rest else "no options"
            raise ValueError(f"env {name!r}: the factory cannot be called with {given} "
                             f"(env.kwargs; {err})") from None
        except ValueError:  # no signature to read (a builtin): let the call tell
            pass
        made = factory(**rest)
    else:
        raise ValueError(f"env {name!r}: {attr!r} is a {type(factory).__name__}, not a "
                         "factory or an env with reset and step")
    env, params = made if isinstance(made, tuple) and len(made) == 2 else (made, None)
    if not _is_env(env) or not hasattr(env, "action_space"):
        raise ValueError(
            f"env {name!r}: the factory returned a {type(env).__name__}, not a gymnax-API env "
            "(needs reset(key, params), step(key, state, action, params), action_space(params))")
    if params is None:
        params = getattr(env, "default_params", None)
    try:
        vec = gymnax_api_env(env, params, name, num_envs, **options)
        # Trace one reset and one step now: a wrong signature is this one line, not a
        # traceback from inside the first jitted chunk.
        key = jax.random.PRNGKey(0)
        state, _ = jax.eval_shape(vec.reset, key)
        jax.eval_shape(vec.step, state, random_actions(vec.spec, key), key)
        return vec
    except (TypeError, AttributeError, ValueError, IndexError, KeyError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"env {name!r}: not the gymnax API ({first})") from None


def _is_env(x) -> bool:
    return not isinstance(x, type) and all(callable(getattr(x, m, None)) for m in ("reset", "step"))


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
