"""`train(cfg)`: build a run from its config and drive it chunk by chunk.

Between chunks (never inside one) the driver updates the progress bar, appends metrics,
writes checkpoints, and honours Ctrl-C: the first SIGINT finishes the running chunk, writes a
checkpoint and stops; a second one stops at once, checkpointing the state of the last finished
chunk. Either way `hrl train --resume RUN_DIR` continues the run exactly.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import functools
import json
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl.config import ConfigError, RunConfig, dump_config, load_config, to_dict
from hrl.envs.gymnasium_env import HostEnvStateError
from hrl.replay.factory import make_replay
from hrl.runtime.aggregate import (
    aggregate_curve,
    plot_curves,
    steps_to_threshold,
    summarize,
    write_curve_csv,
)
from hrl.runtime.checkpoint import (
    latest_checkpoint,
    read_host_state,
    restore_newest,
    save_checkpoint,
)
from hrl.runtime.cpu_backend import start_cpu_backend
from hrl.runtime.loop import (
    FusedLoop,
    HostLoop,
    PipelinedLoop,
    Schedule,
    TrainState,
    init_train_state,
)
from hrl.runtime.metrics import MetricsLog, plot_learning_curve, read_episodes
from hrl.runtime.primitives import make_primitives
from hrl.runtime.rate_limit import LimiterState, RateLimit, live_ratio


@dataclasses.dataclass
class Built:
    """Everything static about a run: the objects the loop closes over."""

    cfg: RunConfig
    env: Any
    agent: Any
    replay: Any
    schedule: Schedule
    loop: FusedLoop | HostLoop  # or PipelinedLoop, a HostLoop
    example_transition: dict


def resolve_placement(cfg: RunConfig, env_is_jax: bool, replay_is_jax: bool) -> dict:
    """`cfg.placement` as JAX devices (primitive -> `jax.Device`); `host` entries are checked
    and dropped (a host primitive runs in this process anyway). Errors name the key."""
    devices = {}
    for name, where in cfg.placement.items():
        kind, _, index = where.partition(":")
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


def build(cfg: RunConfig, placement: dict | None = None) -> Built:
    """Environment, agent, replay buffer and the loop (fused when everything is JAX).
    `placement` (primitive -> `jax.Device`) adds to the config's `placement`."""
    from hrl import agents, envs

    start_cpu_backend(cfg)  # before anything else starts JAX's backend
    devices = cfg.train.devices
    mesh = None
    if devices > 1:  # before anything is built: too many devices is a config error
        from hrl.runtime.data_parallel import make_mesh

        mesh = make_mesh(devices)
    # With train.devices > 1 this is one device's share of the actors.
    env = envs.make_env(cfg.env.name, cfg.env.num_envs // devices, **cfg.env.kwargs)
    spec = env.spec
    if cfg.algo == "dqn":
        if not spec.discrete:
            raise ValueError(
                f"config key 'algo': dqn needs discrete actions; {cfg.env.name} is continuous"
            )
        agent = agents.make_dqn(cfg.agent, spec)
    else:
        if spec.discrete:
            raise ValueError(
                f"config key 'algo': ddpg needs continuous actions; {cfg.env.name} is discrete"
            )
        agent = agents.make_ddpg(cfg.agent, spec)
    if mesh is not None and not spec.is_jax:
        raise ValueError(
            f"config key 'train.devices': > 1 needs a JAX environment ({cfg.env.name} is "
            f"not one), got {devices}"
        )
    example = envs.example_transition(spec)
    check_replay_fits_in_memory(cfg, example)  # before any backend allocates its tree
    r = cfg.replay
    replay_is_jax = r.backend == "jax"
    if mesh is not None:
        from hrl.runtime.data_parallel import AXIS

        agent = dataclasses.replace(agent, grad_axis=AXIS)
    replay = make_replay(r, batch_size=cfg.train.batch_size, devices=devices,
                         axis=AXIS if mesh is not None else None)
    schedule = Schedule.from_config(cfg)
    prims = make_primitives(env, agent, replay, schedule.batch_size)
    placement = {**resolve_placement(cfg, spec.is_jax, replay_is_jax), **(placement or {})}
    executor = cfg.train.executor
    fused = cfg.train.fused if executor == "auto" else executor == "fused"
    can_fuse = spec.is_jax and replay_is_jax and not placement
    if fused is None:
        fused = can_fuse
    if fused and placement:
        raise ValueError(
            "config key 'train.fused': a placement of primitives on devices runs the host loop "
            f"(placement {sorted(placement)}); set train.fused: false or drop the placement"
        )
    if fused and not can_fuse:
        raise ValueError(
            "config key 'train.fused': the fused loop needs a JAX environment and replay.backend "
            f"'jax' (got env {cfg.env.name}, backend {r.backend!r}); set train.fused: false"
        )
    overlap_replay = replay_off_learner(cfg.replay.backend, placement)
    if mesh is not None:
        from hrl.runtime.data_parallel import DataParallelLoop

        loop = DataParallelLoop(prims, schedule, replay, mesh)
    elif fused:
        loop = FusedLoop(prims, schedule)
    elif executor == "pipelined":
        loop = PipelinedLoop(prims, schedule, spec.is_jax, replay_is_jax, placement,
                             overlap_replay=overlap_replay,
                             depth=cfg.train.pipeline_depth,
                             weight_sync_period=cfg.train.weight_sync_period,
                             actors=cfg.train.actors, config=cfg,
                             host_env=None if spec.is_jax else env,
                             rate_limit=rate_limit_of(cfg, schedule))
    else:
        loop = HostLoop(prims, schedule, spec.is_jax, replay_is_jax, placement,
                        overlap_replay=overlap_replay)
    return Built(cfg, env, agent, replay, schedule, loop, example)


def replay_off_learner(backend: str, placement: dict) -> bool:
    """Whether the tree's calls run away from the learner's device and are slow enough that
    relaxed dependency runs them in a thread beside train(t) (`HostLoop._relaxed_step`): an
    OpenCL or RTL tree, or sample and update placed on another device than train. Not the
    native host tree: its calls take microseconds, less than a hand-off between threads."""
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
    min tree for global IS weights), times the seeds trained at once."""
    from hrl.replay.formats import level_sizes
    from hrl.replay.rows import RowLayout

    r = cfg.replay
    rows = r.capacity * RowLayout.of(example_transition).row_words * 4
    trees = sum(level_sizes(r.capacity, r.fanout)) * 4 * (2 if r.weights == "global" else 1)
    return (rows + trees) * cfg.seeds


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
    axis (for `FusedLoop.run_seeds`). Jitted whenever env and replay are JAX."""
    init = functools.partial(
        init_train_state, built.loop.prims, built.replay, built.agent, built.env.spec,
        built.schedule, built.example_transition,
    )
    if getattr(built.loop, "mesh", None) is not None:  # data parallel: one state per device
        seed = np.int32(built.cfg.seed) if seeds is None else np.asarray(seeds, np.int32)
        return built.loop.init_state(lambda s, index: init(s, actor_index=index), seed)
    if seeds is not None:
        if not _init_traces(built):
            raise ValueError("stacked seeds need a JAX environment and replay.backend 'jax'")
        return jax.jit(jax.vmap(init))(jnp.asarray(seeds, jnp.int32))
    if _init_traces(built):
        return jax.jit(init)(jnp.int32(built.cfg.seed))
    return init(built.cfg.seed)


def default_run_dir(cfg: RunConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{cfg.name}-{stamp}"


class _Interrupt:
    """SIGINT handling: first press asks for a clean stop, the second raises at once."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


class _Progress:
    """rich progress bar with env steps/s, SGD updates/s and the recent return."""

    def __init__(self, enabled: bool, total: int, done: int, title: str):
        self.enabled = enabled
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rates]}"),
            TextColumn("return {task.fields[ret]}"),
            TimeElapsedColumn(),
            refresh_per_second=4,
        )
        self.task = self.bar.add_task(title, total=total, completed=done, rates="", ret="-")

    def __enter__(self):
        if self.enabled:
            self.bar.__enter__()
        return self

    def update(self, done: int, env_rate: float, sgd_rate: float, recent: float | None,
               samples_per_insert: str):
        if self.enabled:
            ret = "-" if recent is None else f"{recent:.1f}"
            rates = f"{env_rate:,.0f} env/s {sgd_rate:,.0f} sgd/s {samples_per_insert}"
            self.bar.update(self.task, completed=done, rates=rates, ret=ret)

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False


def _episodes_of(out, env_steps_before: int, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """(env step at which each finished episode ended, its return) from a chunk's output."""
    completed = np.asarray(out.completed)  # (T, L, M)
    t_idx, l_idx, m_idx = np.nonzero(completed)
    iter_start = np.concatenate([[env_steps_before], np.asarray(out.env_steps)[:-1]])
    steps = iter_start[t_idx] + (l_idx + 1) * num_envs
    order = np.lexsort((m_idx, steps))
    return steps[order], np.asarray(out.completed_return)[t_idx, l_idx, m_idx][order]


def train(
    cfg: RunConfig,
    run_dir: str | Path | None = None,
    resume: bool = False,
    checkpoint_every: int | None = None,
    progress: bool | None = None,
    stop_at_env_steps: int | None = None,
    placement: dict | None = None,
    solved_return: float | None = None,
) -> dict:
    """Train to `cfg.train.total_env_steps` (or stop early at `stop_at_env_steps`, leaving a
    checkpoint: the programmatic twin of Ctrl-C; or at the first chunk end where the mean of
    the last `log.return_window` episodes reaches `solved_return` in every seed). Returns a
    summary dict (also written to RUN_DIR/summary.json).

    `cfg.seeds` > 1 trains that many independent runs (seeds `seed`, `seed + 1`, ...): a fused
    loop vmaps them in one jitted program, a host loop runs them one after another. Each
    seed logs into RUN_DIR/seed-<s>/; RUN_DIR/aggregate.{csv,png} hold the median,
    interquartile band and IQM (with its 95% bootstrap interval) over seeds."""
    run_dir = Path(run_dir) if run_dir is not None else default_run_dir(cfg)
    if not resume and latest_checkpoint(run_dir) is not None:
        raise ValueError(
            f"{run_dir} already holds a run with checkpoints; continue it with --resume "
            f"{run_dir} or choose another run directory"
        )
    checkpoint_every = cfg.log.checkpoint_every if checkpoint_every is None else checkpoint_every
    if checkpoint_every < 0:
        raise ValueError(f"--checkpoint-every must be >= 0, got {checkpoint_every}")
    progress = cfg.log.progress if progress is None else progress
    t_start = time.perf_counter()
    built = build(cfg, placement)
    if cfg.seeds > 1 and not built.loop.fused:
        return _train_one_after_another(
            cfg, run_dir, resume, checkpoint_every, progress, stop_at_env_steps, placement,
            solved_return,
        )
    seeds = seed_list(cfg)
    batched = len(seeds) > 1
    state = initial_state(built, seeds if batched else None)
    jax.block_until_ready(state)
    init_s = time.perf_counter() - t_start
    # Several processes (`hrl launch`): every process writes its part of each checkpoint into
    # RUN_DIR (orbax multi-host); the run's logs, curves and progress bar are process 0's, the
    # others log into RUN_DIR/process-<i>/ (nothing there is needed to resume).
    primary = jax.process_index() == 0
    log_dir = run_dir if primary else run_dir / f"process-{jax.process_index()}"
    progress = progress and primary
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    wall_before = 0.0
    if resume:
        changed = _check_resume_changes(run_dir, cfg, checkpoint_every)
        found = restore_newest(run_dir, state, warn=lambda line: print(line, file=sys.stderr))
        if found is None:
            raise ConfigError(f"--resume {run_dir}: no checkpoint in {run_dir / 'checkpoints'}")
        state, info, path = found
        wall_before = float(info.get("wall_s", 0.0))
        _record_resume(log_dir, cfg, checkpoint_every, changed, path.name,
                       _count(state.env_steps))
        if hasattr(built.replay, "sync_backend"):
            # Host replay: writable numpy arrays again, and the backend's tree rebuilt.
            state = state.replace(replay=jax.tree.map(np.array, state.replay))
            built.replay.sync_backend(state.replay)
        if not built.env.spec.is_jax:
            state = _resume_host_envs(built, state, path)
    else:
        (log_dir / "config.yaml").write_text(dump_config(_with_checkpoint_every(cfg,
                                                                              checkpoint_every)))
    seed_dirs = [log_dir / f"seed-{s}" for s in seeds] if batched else [log_dir]
    for d in seed_dirs:
        d.mkdir(parents=True, exist_ok=True)
    start_steps = _count(state.env_steps)
    logs = [
        MetricsLog(d, cfg.log.metrics_format, resume_at=start_steps if resume else None)
        for d in seed_dirs
    ]
    window = cfg.log.return_window
    recents = [collections.deque(read_episodes(d)[1].tolist(), maxlen=window) for d in seed_dirs]

    sch = built.schedule
    run_chunk = built.loop.run_seeds if batched else built.loop.run
    # Every chunk has the same length, so the jitted loop compiles once; the run therefore
    # ends on the first chunk boundary at or past total_env_steps (likewise stops and
    # checkpoints fall on chunk boundaries, which keeps resumed runs on the same chunking).
    chunk_iters = max(1, cfg.train.chunk_env_steps // sch.env_steps_per_iter)
    total = cfg.train.total_env_steps
    target = total if stop_at_env_steps is None else min(total, stop_at_env_steps)
    next_ckpt = (
        (start_steps // checkpoint_every + 1) * checkpoint_every if checkpoint_every else None
    )
    steps_at_start, updates_at_start = start_steps, _count(state.updates)
    interrupted = False
    solved_at = None
    first_chunk_s = None
    last_saved = start_steps if resume else None

    def wall_now():
        return wall_before + time.perf_counter() - t_start

    def checkpoint(st):
        nonlocal last_saved
        info = {
            "env_steps": _count(st.env_steps),
            "updates": _count(st.updates),
            "iteration": _count(st.iteration),
            "wall_s": wall_now(),
        }
        save_checkpoint(run_dir, st, info, host_state=_host_env_state(built))
        last_saved = _count(st.env_steps)

    def all_solved():
        return solved_return is not None and all(
            len(r) == r.maxlen and float(np.mean(r)) >= solved_return for r in recents
        )

    title = f"{cfg.algo} {cfg.env.name.split(':')[-1]}" + (f" x{len(seeds)} seeds" * batched)
    with _Interrupt() as stop, _Progress(progress, total, start_steps, title) as bar:
        try:
            while _count(state.env_steps) < target and not _stop_agreed(stop.requested):
                steps_now = _count(state.env_steps)
                t0 = time.perf_counter()
                new_state, out = run_chunk(state, chunk_iters)
                jax.block_until_ready(new_state)
                dt = time.perf_counter() - t0
                first_chunk_s = dt if first_chunk_s is None else first_chunk_s
                state = new_state
                counters = (_count(state.env_steps), _count(state.updates))
                for i, (log, recent) in enumerate(zip(logs, recents, strict=True)):
                    seed_out = jax.tree.map(lambda x, i=i: x[i], out) if batched else out
                    steps, returns = _episodes_of(seed_out, steps_now, sch.total_envs)
                    log.episodes(steps, returns)
                    recent.extend(returns.tolist())
                    _log_chunk(log, counters, seed_out, dt, steps_now, recent, wall_now(),
                               cfg, built.loop)
                elapsed = time.perf_counter() - t_start
                means = [float(np.mean(r)) for r in recents if r]
                bar.update(
                    counters[0],
                    len(seeds) * (counters[0] - steps_at_start) / max(elapsed, 1e-9),
                    len(seeds) * (counters[1] - updates_at_start) / max(elapsed, 1e-9),
                    float(np.median(means)) if means else None,
                    _samples_per_insert_text(counters, cfg, built.loop),
                )
                if next_ckpt is not None and counters[0] >= next_ckpt:
                    checkpoint(state)
                    next_ckpt = (counters[0] // checkpoint_every + 1) * checkpoint_every
                if all_solved():
                    solved_at = counters[0]
                    break
            interrupted = solved_at is None and (stop.requested or _count(state.env_steps) < total)
        except KeyboardInterrupt:
            interrupted = True  # `state` is still the last finished chunk's state
        finally:
            if last_saved != _count(state.env_steps):
                checkpoint(state)
            if hasattr(built.loop, "close"):
                built.loop.close()  # the pipelined executor's actors' process
    wall = time.perf_counter() - t_start
    env_steps, updates = _count(state.env_steps), _count(state.updates)
    threshold = solved_return if solved_return is not None else cfg.train.solved_return
    summary = {
        "run_dir": str(run_dir),
        "config": cfg.name,
        "seeds": seeds,
        "env_steps": env_steps,  # per seed
        "updates": updates,  # per seed
        "iterations": _count(state.iteration),
        "wall_s_this_session": round(wall, 3),
        "wall_s_total": round(wall + wall_before, 3),
        "init_s": round(init_s, 3),  # build + initial state (compilation included)
        "first_chunk_s": None if first_chunk_s is None else round(first_chunk_s, 3),
        # Summed over seeds: every env step / SGD step simulated per wall second.
        "env_steps_per_s": len(seeds) * (env_steps - steps_at_start) / max(wall, 1e-9),
        "updates_per_s": len(seeds) * (updates - updates_at_start) / max(wall, 1e-9),
        "env_steps_per_s_per_seed": (env_steps - steps_at_start) / max(wall, 1e-9),
        "recent_return": float(np.median([np.mean(r) for r in recents])) if all(recents)
        else None,
        "return_window": window,
        "solved_return": threshold,
        "interrupted": interrupted,
        "fused": built.loop.fused,
        "devices": cfg.train.devices,
        "solved_at_env_steps": solved_at,
    }
    if getattr(built.loop, "mesh", None) is not None:  # data parallel
        summary.update(replicas_agree(state.agent))
    if not built.loop.fused:
        summary["primitive_seconds"] = {k: round(v, 4) for k, v in built.loop.timings.items()}
    if primary:
        for seed, d in zip(seeds, seed_dirs, strict=True):
            plot_learning_curve(d, f"{cfg.algo.upper()} + PER, {cfg.env.name}, seed {seed}",
                                window)
    _finish(summary, seed_dirs, log_dir, cfg)
    return summary


def _stop_agreed(requested: bool) -> bool:
    """Across processes, stop when any of them was asked to: every process must run the same
    chunks and then the same checkpoint (their collectives wait for one another)."""
    if jax.process_count() == 1:
        return requested
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.int32(requested))))


def _local_copy(x) -> np.ndarray:
    """A replicated array as numpy; across processes, this process's own copy."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return np.asarray(x.addressable_data(0))
    return np.asarray(x)


def _count(x) -> int:
    """A counter of the state (equal across stacked seeds: the schedule does not depend on
    the seed)."""
    return int(_local_copy(x).reshape(-1)[0])


def replicas_agree(agent_state) -> dict:
    """Whether every device of every process holds the same networks and optimizer state (the
    data-parallel invariant): each process compares its devices' copies and hashes one; the
    digests are gathered from all processes (one per process)."""
    import hashlib

    from jax.experimental import multihost_utils

    digest = hashlib.sha256()
    local_equal = True
    for leaf in jax.tree.leaves(agent_state):
        copies = [np.asarray(s.data) for s in leaf.addressable_shards]
        local_equal &= all(np.array_equal(copies[0], c) for c in copies[1:])
        digest.update(copies[0].tobytes())
    words = np.frombuffer(digest.digest()[:8], np.uint32)
    everyone = np.asarray(multihost_utils.process_allgather(
        np.append(words, np.uint32(local_equal))))
    return {
        "processes": int(jax.process_count()),
        "params_digests": [f"{int(a):08x}{int(b):08x}" for a, b, _ in everyone],
        "params_agree": bool(np.all(everyone[:, 2] == 1)
                             and np.all(everyone[:, :2] == everyone[0, :2])),
    }


def _seed_result(seed, seed_dir, episodes, window, threshold) -> dict:
    """One seed's outcome from its episodes: final return, and steps / wall seconds to the bar."""
    steps, returns = episodes
    row = {
        "seed": seed,
        "recent_return": float(np.mean(returns[-window:])) if len(returns) >= window else None,
        "episodes": len(returns),
    }
    if threshold is not None:
        reached = steps_to_threshold(steps, returns, window, threshold)
        row["steps_to_solved"] = reached
        row["wall_s_to_solved"] = None
        metrics = Path(seed_dir) / "metrics.csv"
        if reached is not None and metrics.exists():
            # The wall clock of the chunk whose end first showed the bar reached.
            rows = list(csv.DictReader(metrics.read_text().splitlines()))
            done = [float(r["wall_s"]) for r in rows if int(float(r["env_steps"])) >= reached]
            row["wall_s_to_solved"] = round(done[0], 3) if done else None
    return row


def _finish(summary, seed_dirs, run_dir, cfg) -> None:
    """Per-seed results from each seed's episodes and, for several seeds, the aggregate
    curve; summary.json last."""
    window, threshold = cfg.log.return_window, summary["solved_return"]
    logs = [read_episodes(d) for d in seed_dirs]
    seeds = summary["seeds"][: len(seed_dirs)]  # an interrupted host run stops early
    per_seed = [
        _seed_result(seed, d, episodes, window, threshold)
        for seed, d, episodes in zip(seeds, seed_dirs, logs, strict=True)
    ]
    summary["per_seed"] = per_seed
    if threshold is not None:
        summary["solved_runs"] = sum(r["steps_to_solved"] is not None for r in per_seed)
    if len(seed_dirs) > 1:
        finals = [r["recent_return"] for r in per_seed if r["recent_return"] is not None]
        if len(finals) == len(per_seed):
            summary["final_return"] = summarize(finals)
        grid = np.linspace(0, max(summary["env_steps"], 1), 201)[1:].astype(np.int64)
        if all(len(s) >= window for s, _ in logs):
            curve = aggregate_curve(logs, window, grid)
            write_curve_csv(run_dir / "aggregate.csv", curve)
            plot_curves(
                run_dir / "aggregate.png", {f"{len(seed_dirs)} seeds": curve},
                f"{cfg.algo.upper()} + PER, {cfg.env.name}", window, threshold,
            )
    (Path(run_dir) / "summary.json").write_text(json.dumps(summary, indent=1))


def _train_one_after_another(
    cfg, run_dir, resume, checkpoint_every, progress, stop_at_env_steps, placement, solved_return
) -> dict:
    """Several seeds of a host-loop config: one run per seed, in RUN_DIR/seed-<s>/, then the
    aggregate. On resume, finished seeds are kept and the interrupted one continues."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        changed = _check_resume_changes(run_dir, cfg, checkpoint_every)
        _record_resume(run_dir, cfg, checkpoint_every, changed, None, None)
    else:
        (run_dir / "config.yaml").write_text(dump_config(_with_checkpoint_every(cfg,
                                                                              checkpoint_every)))
    summaries, seed_dirs = [], []
    t_start = time.perf_counter()
    for seed in seed_list(cfg):
        one = dataclasses.replace(cfg, seed=seed, seeds=1)
        seed_dir = run_dir / f"seed-{seed}"
        seed_dirs.append(seed_dir)
        done = seed_dir / "summary.json"
        if resume and done.exists() and not json.loads(done.read_text())["interrupted"]:
            summaries.append(json.loads(done.read_text()))
            continue
        summaries.append(train(
            one, seed_dir, resume=resume and latest_checkpoint(seed_dir) is not None,
            checkpoint_every=checkpoint_every, progress=progress,
            stop_at_env_steps=stop_at_env_steps, placement=placement,
            solved_return=solved_return,
        ))
        if summaries[-1]["interrupted"]:
            break
    wall = time.perf_counter() - t_start
    last = summaries[-1]
    # One seed at a time: the rate over all seeds is the mean of the seeds' own rates.
    env_rate = sum(s["env_steps_per_s"] for s in summaries) / len(summaries)
    summary = {
        **{k: last[k] for k in ("config", "env_steps", "updates", "iterations", "fused",
                                "return_window", "solved_return")},
        "run_dir": str(run_dir),
        "seeds": seed_list(cfg),
        "wall_s_this_session": round(wall, 3),
        "wall_s_total": round(sum(s["wall_s_total"] for s in summaries), 3),
        "env_steps_per_s": env_rate,
        "updates_per_s": sum(s["updates_per_s"] for s in summaries) / len(summaries),
        "env_steps_per_s_per_seed": env_rate,
        "recent_return": float(np.median([s["recent_return"] for s in summaries
                                          if s["recent_return"] is not None] or [np.nan])),
        "interrupted": len(summaries) < cfg.seeds or last["interrupted"],
        "solved_at_env_steps": None,
    }
    _finish(summary, seed_dirs, run_dir, cfg)
    return summary


def _host_env_state(built: Built) -> bytes | None:
    """The host envs' simulator state for a checkpoint; None for JAX envs (their state is in
    the pytree) and, with a warning, for host envs whose state cannot be saved."""
    if built.env.spec.is_jax:
        return None
    try:
        return built.env.save_state()
    except HostEnvStateError as err:
        print(f"warning: {err}; a resume restarts these envs' episodes", file=sys.stderr)
        return None


def _resume_host_envs(built: Built, state: TrainState, checkpoint: Path) -> TrainState:
    """Put the host envs' saved state back, so the run continues bit for bit; restart their
    episodes when the checkpoint holds none (or one that cannot be put back)."""
    blob = read_host_state(checkpoint)
    if blob is not None:
        try:
            built.env.load_state(blob)
            return state
        except HostEnvStateError as err:
            print(f"warning: {err}", file=sys.stderr)
    print(f"warning: checkpoint {checkpoint.name} holds no usable host env state; "
          "the envs restart their episodes", file=sys.stderr)
    return _restart_host_envs(built, state)


def _restart_host_envs(built: Built, state: TrainState) -> TrainState:
    """Host simulators without a saved state: restart their episodes, and mark the newest
    n-step entry as a (bootstrapping) episode end so no return spans the restart."""
    env_state, obs = built.env.reset(state.key)
    acc = state.nstep
    acc = acc.replace(done=acc.done.at[-1].set(True))
    start = jnp.ones((built.schedule.num_envs,), bool)
    return state.replace(env=env_state, obs=obs, nstep=acc, episode_start=start)


def _samples_per_insert(counters, cfg: RunConfig) -> float | None:
    """Transitions sampled per transition inserted since the buffer passed learning_starts
    (`rate_limit.live_ratio`: the ratio the limiter holds; the iteration makes it
    train_ratio x batch_size, give or take a learning round). None before learning starts."""
    env_steps, updates = counters
    # The n-step window's first n - 1 steps of each actor insert nothing.
    inserts = env_steps - (cfg.replay.n_step - 1) * cfg.env.num_envs
    return live_ratio(cfg.train.learning_starts,
                      LimiterState(inserts, updates * cfg.train.batch_size))


def _samples_per_insert_text(counters, cfg: RunConfig, loop) -> str:
    """The progress bar's samples per insert: the fixed value of the iteration where the
    executor holds it by construction; in a pipelined run, the live ratio, and with a
    limiter the band of its error over the last chunk (`PipelinedLoop.limiter_band`)."""
    if not isinstance(loop, PipelinedLoop):
        return f"{cfg.train.train_ratio * cfg.train.batch_size:g} samples/insert (fixed)"
    live = _samples_per_insert(counters, cfg)
    text = ("-" if live is None else f"{live:.2f}") + " samples/insert"
    band = getattr(loop, "limiter_band", None)
    if band is not None and loop.rate_limit is not None:
        low, high = ("-" if v is None else f"{v:+.0f}" for v in band)
        text += f" (error {low}..{high} of ±{loop.rate_limit.tolerance:g})"
    return text


def _log_chunk(log, counters, out, dt, steps_before, recent, wall_s, cfg: RunConfig,
               loop) -> None:
    trained = np.asarray(out.trained)
    env_steps, updates = counters
    live = _samples_per_insert(counters, cfg)
    row = {
        "env_steps": env_steps,
        "updates": updates,
        "samples_per_insert": float("nan") if live is None else round(live, 4),
        "wall_s": round(wall_s, 3),
        "env_steps_per_s": (env_steps - steps_before) / max(dt, 1e-9),
        "recent_return": float(np.mean(recent)) if recent else float("nan"),
        "episodes": int(np.asarray(out.completed).sum()),
        "td_abs": float(np.asarray(out.td_abs)[trained].mean()) if trained.any() else float("nan"),
    }
    if getattr(loop, "rate_limit", None) is not None:
        # The chunk's limiter error, lowest and highest (samples; within +-tolerance).
        low, high = loop.limiter_band or (None, None)
        row["spi_error_low"] = float("nan") if low is None else low
        row["spi_error_high"] = float("nan") if high is None else high
    for name, values in (out.metrics or {}).items():
        values = np.asarray(values)
        row[name] = float(values[trained].mean()) if trained.any() else float("nan")
    log.row(row)


# What may change when a run is resumed: how long it goes on, what is reported, and how often
# it checkpoints. Every other key shapes the state in the checkpoint (formats, sizes, networks)
# or the trajectory it continues (seed, schedule, chunking), so changing it would corrupt the
# state or silently not apply.
RESUMABLE_KEYS = (
    "train.total_env_steps",
    "train.actors",  # thread and process actors give the same results bit for bit
    # The limiter changes when the actors run, never what they compute.
    "train.samples_per_insert",
    "train.samples_per_insert_tolerance",
    "train.cpu_dispatch",  # where XLA:CPU runs a call, never what it computes
    "train.solved_return",
    "log.checkpoint_every",
    "log.progress",
    "log.return_window",
)
_WHY_FIXED = {
    "replay.fmt": "the checkpoint holds that format",
    "seed": "the checkpoint continues that seed's trajectory",
    "seeds": "the checkpoint holds that many runs",
}


def _flat(tree: dict, prefix: str = "") -> dict:
    """{"train.batch_size": 64, ...} of a nested config dict (dict-valued keys such as
    env.kwargs and placement compare as a whole)."""
    flat = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted not in ("env.kwargs", "placement"):
            flat.update(_flat(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def resume_changes(saved: RunConfig, cfg: RunConfig) -> dict[str, tuple]:
    """{key: (saved value, new value)} of the keys `cfg` changes; `ConfigError` naming the
    first key that may not change at resume (see RESUMABLE_KEYS)."""
    before, after = _flat(to_dict(saved)), _flat(to_dict(cfg))
    changed = {k: (before.get(k), after.get(k)) for k in sorted(before.keys() | after.keys())
               if before.get(k) != after.get(k)}
    for key, (old, _new) in changed.items():
        if key not in RESUMABLE_KEYS:
            why = _WHY_FIXED.get(key, "the checkpoint was made with it")
            raise ConfigError(
                f"config key '{key}': cannot change at resume (the run was started with "
                f"{old!r}; {why}); only {', '.join(RESUMABLE_KEYS)} may change"
            )
    return changed


def _with_checkpoint_every(cfg: RunConfig, checkpoint_every: int) -> RunConfig:
    return dataclasses.replace(
        cfg, log=dataclasses.replace(cfg.log, checkpoint_every=checkpoint_every)
    )


def _check_resume_changes(run_dir: Path, cfg: RunConfig, checkpoint_every: int) -> dict:
    """The changes to RUN_DIR/config.yaml this resume makes (with the checkpoint period it
    runs at); refuses any that may not change. A run directory without config.yaml (a seed's
    directory written by an older version) has nothing to compare against."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    return resume_changes(load_config(path), _with_checkpoint_every(cfg, checkpoint_every))


def _record_resume(run_dir: Path, cfg: RunConfig, checkpoint_every: int, changed: dict,
                   checkpoint: str | None, env_steps: int | None) -> None:
    """RUN_DIR/config.yaml takes the accepted changes (so the next resume keeps them, the
    checkpoint period included); RUN_DIR/resumes.jsonl gets one line per resume."""
    if changed:
        text = dump_config(_with_checkpoint_every(cfg, checkpoint_every))
        (run_dir / "config.yaml.tmp").write_text(text)
        (run_dir / "config.yaml.tmp").replace(run_dir / "config.yaml")
    record = {
        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "checkpoint": checkpoint,
        "env_steps": env_steps,
        "changed": {k: {"from": old, "to": new} for k, (old, new) in changed.items()},
    }
    with (run_dir / "resumes.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


def _has_checkpoint(run_dir: Path) -> bool:
    """A checkpoint in RUN_DIR, or in one of its seed-<s>/ directories (seeds run one after
    another)."""
    return latest_checkpoint(run_dir) is not None or any(
        latest_checkpoint(d) is not None for d in run_dir.glob("seed-*") if d.is_dir()
    )


def resume_config(run_dir: str | Path, overrides=()) -> RunConfig:
    """The config a run was started with (RUN_DIR/config.yaml), plus `--set` overrides of the
    keys that may change at resume (`ConfigError` for any other, and when RUN_DIR holds no
    checkpoint: both found before anything compiles)."""
    run_dir = Path(run_dir)
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"--resume {run_dir}: {path} not found (not a run directory?)")
    saved = load_config(path)
    cfg = load_config(path, overrides)
    resume_changes(saved, cfg)
    if not _has_checkpoint(run_dir):
        raise ConfigError(
            f"--resume {run_dir}: no checkpoint in {run_dir / 'checkpoints'} (the run stopped "
            "before its first checkpoint; start it again instead)"
        )
    return cfg
