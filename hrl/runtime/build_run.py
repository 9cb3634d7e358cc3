"""`build(cfg)`: a run's env, agent, replay and executor, and its first state.

Importing this module starts nothing: `build` starts JAX's CPU backend with the config's
settings first (`cpu_backend.start_cpu_backend`), so it must be the process's first use of JAX
for those settings to apply.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hrl import envs
from hrl.config import RunConfig
from hrl.fixed_point import kernel_host, kernel_train, kernel_train_ddpg
from hrl.replay.factory import make_replay, replay_memory_bytes
from hrl.runtime.components import make_env_agent, resolve_placement
from hrl.runtime.cpu_backend import start_cpu_backend
from hrl.runtime.executor_choice import choose_executor
from hrl.runtime.executors import (
    AXIS,
    Executor,
    Parts,
    executor_class,
    make_executor,
    make_mesh,
)
from hrl.runtime.executors.sequential import replay_off_learner
from hrl.runtime.iteration import Schedule, TrainState, init_train_state
from hrl.runtime.primitives import make_primitives

__all__ = [
    "Built",
    "build",
    "check_replay_fits_in_memory",
    "executor_of",
    "initial_state",
    "replay_bytes",
    "replay_off_learner",
    "seed_list",
]


@dataclasses.dataclass
class Built:
    """Everything static about a run: the objects its executor closes over."""

    cfg: RunConfig
    env: Any
    agent: Any
    replay: Any
    schedule: Schedule
    loop: Executor  # the executor (`hrl.runtime.executors`)
    example_transition: dict
    fpga: Any = None  # the FPGA learner's kernel driver (placement infer/train: fpga)


def build(cfg: RunConfig, placement: dict | None = None) -> Built:
    """Environment, agent, replay buffer and the executor `choose_executor` names.
    `placement` (primitive -> `jax.Device`) adds to the config's `placement`."""
    start_cpu_backend(cfg)  # before anything else starts JAX's backend
    devices = cfg.train.devices
    mesh = make_mesh(devices) if devices > 1 else None  # too many devices: a config error
    env, agent = make_env_agent(cfg)
    infer, train, fpga = fpga_primitives(cfg, agent)  # refused or started before the replay
    spec = env.spec
    if mesh is not None and not spec.is_jax:
        raise ValueError(
            f"config key 'train.devices': > 1 needs a JAX environment ({cfg.env.name} is "
            f"not one), got {devices}")
    example = envs.example_transition(spec)
    check_replay_fits_in_memory(cfg, example)  # before any backend allocates its tree
    r = cfg.replay
    replay_is_jax = r.backend == "jax"
    if mesh is not None:
        agent = dataclasses.replace(agent, grad_axis=AXIS)
    placement = {**resolve_placement(cfg, spec.is_jax, replay_is_jax), **(placement or {})}
    kind = executor_of(cfg, placement)
    # The executor is chosen first: where the replay keeps next_obs follows from the order in
    # which it inserts (`hrl.replay.factory.resolve_next_obs`).
    replay = make_replay(r, batch_size=cfg.train.batch_size, devices=devices,
                         axis=AXIS if mesh is not None else None, num_envs=cfg.env.num_envs,
                         rollout_length=cfg.train.rollout_length,
                         in_order=executor_class(kind).inserts_in_order)
    schedule = Schedule.from_config(cfg)
    prims = make_primitives(env, agent, replay, schedule.batch_size,
                            infer=infer, train=train)
    loop = make_executor(kind, Parts(cfg, env, agent, replay, schedule, prims, placement, mesh,
                                     example))
    return Built(cfg, env, agent, replay, schedule, loop, example, fpga)


def fpga_primitives(cfg: RunConfig, agent):
    """With `placement.infer: fpga` and/or `placement.train: fpga`, those primitives on one
    FPGA learner kernel (its simulation starts here: the kernel is built, or found built,
    once): (infer or None, train or None, the driver for the run's summary); else three
    Nones. The network, the batch and the formats are checked against the kernel's
    parameters first. With train there, the kernel holds the network: infer on it reads the
    operand words its SGD steps wrote. DDPG (train only): its own kernel, DDPG's step
    (`kernel_train_ddpg`)."""
    on = {p for p in ("infer", "train") if cfg.placement.get(p) == "fpga"}
    if not on:
        return None, None, None
    if cfg.algo == "ddpg":  # the config allows train only (`schema._check_fpga_placement`)
        shape = kernel_host.DEFAULT_DDPG_SHAPE
        kernel_train_ddpg.FpgaDdpgLearner.refuse(shape, agent, cfg.train.batch_size)
        learner = kernel_train_ddpg.FpgaDdpgLearner(kernel_host.open_rtl_sim(shape), agent,
                                                    cfg.train.batch_size)
        return None, kernel_train_ddpg.make_fpga_ddpg_train(agent, learner), learner
    shape = kernel_host.DEFAULT_SHAPE
    if "train" not in on:
        dims = (int(np.prod(agent.spec.obs_shape)), *agent.cfg.hidden_sizes,
                agent.spec.action.n)
        shape.refuse(dims, cfg.env.num_envs, agent.fmts, key="agent.hidden_sizes",
                     batch_key="env.num_envs")
        q = kernel_host.FpgaQ(kernel_host.open_rtl_sim(shape), agent, cfg.env.num_envs)
        return kernel_host.make_fpga_infer(agent, q), None, q
    kernel_train.FpgaLearner.refuse(shape, agent, cfg.train.batch_size, cfg.env.num_envs)
    learner = kernel_train.FpgaLearner(kernel_host.open_rtl_sim(shape), agent,
                                       cfg.train.batch_size, cfg.env.num_envs)
    infer = kernel_train.make_fpga_learner_infer(agent, learner) if "infer" in on else None
    return infer, kernel_train.make_fpga_train(agent, learner), learner


def executor_of(cfg: RunConfig, placement: dict | None = None) -> str:
    """The executor a run of `cfg` gets (`choose_executor`), from the config alone, so the
    driver can plan before anything is built: primitives count as placed when the config
    places one on a device (a `host` entry places nothing) or `placement` adds one."""
    on_device = any(where.partition(":")[0] != "host" for where in cfg.placement.values())
    return choose_executor(cfg, placed=on_device or bool(placement))


def _available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def replay_bytes(cfg: RunConfig, example_transition) -> int:
    """Host/CPU memory the replay buffers of a run take: packed rows plus the sum tree (and the
    min tree for global IS weights), times the seeds trained at once. The rows as stored with
    next_obs, an upper bound for `replay.next_obs: next_slot`."""
    return replay_memory_bytes(cfg.replay, example_transition) * cfg.seeds


def check_replay_fits_in_memory(cfg: RunConfig, example_transition) -> None:
    """Refuse, before anything is allocated, a replay that cannot fit in this machine's
    available memory (a JAX CPU device or the host; a GPU's memory is not checked here)."""
    if jax.default_backend() != "cpu" and cfg.replay.backend == "jax":
        return
    available = _available_memory_bytes()
    need = replay_bytes(cfg, example_transition)
    if available is not None and need > 0.9 * available:
        seeds = f" x {cfg.seeds} seeds" if cfg.seeds > 1 else ""
        raise ValueError(
            f"config key 'replay.capacity': {cfg.replay.capacity:,} items{seeds} need about "
            f"{need / 2**30:.1f} GiB for the replay, but this machine has "
            f"{available / 2**30:.1f} GiB available; lower replay.capacity"
        )


def seed_list(cfg: RunConfig) -> list[int]:
    """The seeds of a run: `seed`, `seed + 1`, ..., `seed + seeds - 1`."""
    return [cfg.seed + i for i in range(cfg.seeds)]


def initial_state(built: Built, seeds: list[int] | None = None) -> TrainState:
    """The fresh state of `cfg.seed`; with `seeds`, one state per seed stacked on a leading
    axis (for an executor's `run_seeds`). The executor makes it (`Executor.init_state`):
    jitted whenever env and replay are JAX, one per device for a data-parallel one."""
    init = functools.partial(
        init_train_state, built.loop.prims, built.replay, built.agent, built.env.spec,
        built.schedule, built.example_transition,
    )
    seed = built.cfg.seed if seeds is None else np.asarray(seeds, np.int32)
    return built.loop.init_state(lambda s, index: init(s, actor_index=index), seed)
