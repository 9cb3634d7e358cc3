"""A run's parts that every process of it builds the same way: env and agent, the placement.

Kept apart from `build` (which adds the replay and the executor) so that the pipelined
executor's actors' process builds only what it runs, and imports no executor.
"""

from __future__ import annotations

from typing import Any

import jax

from hrl import agents, envs
from hrl.config import RunConfig
from hrl.fixed_point.ddpg import make_fixed_ddpg
from hrl.fixed_point.dqn import make_fixed_dqn


def make_env_agent(cfg: RunConfig) -> tuple[Any, Any]:
    """The run's env (one device's share of the actors with train.devices > 1) and its agent.
    Errors name the config key."""
    devices = cfg.train.devices
    env = envs.make_env(cfg.env.name, cfg.env.num_envs // devices, **cfg.env.kwargs)
    spec = env.spec
    if cfg.algo == "dqn":
        if not spec.discrete:
            raise ValueError(
                f"config key 'algo': dqn needs discrete actions; {cfg.env.name} is continuous")
        if cfg.agent.numerics == "fixed":
            return env, make_fixed_dqn(cfg.agent, spec, cfg.train.batch_size)
        return env, agents.make_dqn(cfg.agent, spec)
    if spec.discrete:
        raise ValueError(
            f"config key 'algo': ddpg needs continuous actions; {cfg.env.name} is discrete")
    if cfg.agent.numerics == "fixed":
        return env, make_fixed_ddpg(cfg.agent, spec, cfg.train.batch_size)
    return env, agents.make_ddpg(cfg.agent, spec)


def resolve_placement(cfg: RunConfig, env_is_jax: bool, replay_is_jax: bool) -> dict:
    """`cfg.placement` as JAX devices (primitive -> `jax.Device`); `host` entries are checked
    and dropped (a host primitive runs in this process anyway). Errors name the key."""
    devices = {}
    for name, where in cfg.placement.items():
        kind, _, index = where.partition(":")
        if kind == "fpga":  # not a JAX device: the FPGA learner's infer (build_run.build)
            continue
        if kind == "host":
            host_side = (name == "env" and not env_is_jax) or (
                name in ("sample", "update") and not replay_is_jax)
            if not host_side:
                raise ValueError(
                    f"config key 'placement.{name}': 'host' is only for a host primitive "
                    "(a gymnasium env, or sample/update on a host replay backend); "
                    f"{name} runs in JAX here, so give it a device such as cpu:0"
                )
            continue
        try:
            available = jax.devices(kind)
        except RuntimeError:
            available = []
        i = int(index or 0)
        if i >= len(available):
            hint = (" (a run asks for the CPU devices its placement names when it is the "
                    "first use of JAX in its process; here JAX had started already: build the "
                    "run first, or set XLA_FLAGS=--xla_force_host_platform_device_count=N "
                    "before JAX starts)") if kind == "cpu" else ""
            raise ValueError(
                f"config key 'placement.{name}': {where!r}, but this process has "
                f"{len(available)} {kind} device(s){hint}"
            )
        devices[name] = available[i]
    return devices
