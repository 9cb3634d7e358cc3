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
import jax.numpy as jnp
import numpy as np

from hrl import envs
from hrl.config import RunConfig
from hrl.replay.factory import make_replay, replay_memory_bytes
from hrl.runtime.components import make_env_agent, resolve_placement
from hrl.runtime.cpu_backend import start_cpu_backend
from hrl.runtime.executor_choice import choose_executor
from hrl.runtime.executors import (
    AXIS,
    DataParallelLoop,
    Executor,
    FusedLoop,
    HostLoop,
    PipelinedLoop,
    make_mesh,
)
from hrl.runtime.executors.ray_actors import DistributedLoop, initial_priorities
from hrl.runtime.iteration import Schedule, TrainState, init_train_state
from hrl.runtime.primitives import make_primitives
from hrl.runtime.rate_limit import RateLimit


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


def build(cfg: RunConfig, placement: dict | None = None) -> Built:
    """Environment, agent, replay buffer and the executor `choose_executor` names.
    `placement` (primitive -> `jax.Device`) adds to the config's `placement`."""
    start_cpu_backend(cfg)  # before anything else starts JAX's backend
    devices = cfg.train.devices
    mesh = make_mesh(devices) if devices > 1 else None  # too many devices: a config error
    env, agent = make_env_agent(cfg)
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
    kind = choose_executor(cfg, placed=bool(placement))
    # The executor is chosen first: where the replay keeps next_obs follows from the order in
    # which it inserts (`hrl.replay.factory.resolve_next_obs`).
    replay = make_replay(r, batch_size=cfg.train.batch_size, devices=devices,
                         axis=AXIS if mesh is not None else None, num_envs=cfg.env.num_envs,
                         rollout_length=cfg.train.rollout_length, executor=kind)
    schedule = Schedule.from_config(cfg)
    prims = make_primitives(env, agent, replay, schedule.batch_size)
    if kind == "data-parallel":
        loop = DataParallelLoop(prims, schedule, replay, mesh)
    elif kind == "fused":
        loop = FusedLoop(prims, schedule)
    else:
        host = dict(env_is_jax=spec.is_jax, replay_is_jax=replay_is_jax, placement=placement,
                    overlap_replay=replay_off_learner(r.backend, placement))
        t = cfg.train
        if kind == "distributed":
            loop = DistributedLoop(prims, schedule, **host, depth=t.pipeline_depth,
                                   weight_sync_period=t.weight_sync_period, config=cfg,
                                   host_env=None if spec.is_jax else env,
                                   rate_limit=rate_limit_of(cfg, schedule),
                                   num_actors=t.num_actors, actor_schedule=t.actor_schedule,
                                   priorities=(initial_priorities(agent, r.eps)
                                               if t.actor_priorities else None),
                                   example_transition=example)
        elif kind == "pipelined":
            loop = PipelinedLoop(prims, schedule, **host, depth=t.pipeline_depth,
                                 weight_sync_period=t.weight_sync_period, actors=t.actors,
                                 config=cfg, host_env=None if spec.is_jax else env,
                                 rate_limit=rate_limit_of(cfg, schedule))
        else:
            loop = HostLoop(prims, schedule, **host)
    return Built(cfg, env, agent, replay, schedule, loop, example)


def replay_off_learner(backend: str, placement: dict) -> bool:
    """Whether the tree's calls run away from the learner's device and are slow enough that
    relaxed dependency runs them in a thread beside train(t) (`HostLoop._overlapped_round`): an
    OpenCL or RTL tree, or sample and update placed on another device than train. Not the
    native host tree: its calls are shorter than a hand-off between threads."""
    if backend in ("opencl", "rtl"):
        return True
    tree = {placement.get("sample"), placement.get("update")} - {None}
    return bool(tree) and tree != {placement.get("train", jax.devices()[0])}


def rate_limit_of(cfg: RunConfig, schedule: Schedule) -> RateLimit | None:
    """The run's samples-per-insert limiter (None: off)."""
    t = cfg.train
    if t.samples_per_insert is None:
        return None
    return RateLimit(t.samples_per_insert, t.rate_limit_tolerance(schedule.updates_per_round),
                     t.learning_starts)


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


def _init_traces(built: Built) -> bool:
    return built.env.spec.is_jax and built.cfg.replay.backend == "jax"


def initial_state(built: Built, seeds: list[int] | None = None) -> TrainState:
    """The fresh state of `cfg.seed`; with `seeds`, one state per seed stacked on a leading
    axis (for an executor's `run_seeds`). Jitted whenever env and replay are JAX."""
    init = functools.partial(
        init_train_state, built.loop.prims, built.replay, built.agent, built.env.spec,
        built.schedule, built.example_transition,
    )
    if isinstance(built.loop, DataParallelLoop):  # one state per device
        seed = np.int32(built.cfg.seed) if seeds is None else np.asarray(seeds, np.int32)
        return built.loop.init_state(lambda s, index: init(s, actor_index=index), seed)
    if seeds is not None:
        if not _init_traces(built):
            raise ValueError("stacked seeds need a JAX environment and replay.backend 'jax'")
        return jax.jit(jax.vmap(init))(jnp.asarray(seeds, jnp.int32))
    if _init_traces(built):
        return jax.jit(init)(jnp.int32(built.cfg.seed))
    return init(built.cfg.seed)
