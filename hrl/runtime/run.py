"""`train(cfg)`: build a run from its config and drive it chunk by chunk.

Between chunks (never inside one) the driver updates the progress bar, appends metrics,
writes checkpoints, and honours Ctrl-C: the first SIGINT finishes the running chunk, writes a
checkpoint and stops; a second one stops at once, checkpointing the state of the last finished
chunk. Either way `hrl train --resume RUN_DIR` continues the run exactly.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl.config import RunConfig, dump_config, load_config
from hrl.replay.buffer import make_prioritized_replay
from hrl.runtime.checkpoint import latest_checkpoint, restore_checkpoint, save_checkpoint
from hrl.runtime.loop import FusedLoop, HostLoop, Schedule, TrainState, init_train_state
from hrl.runtime.metrics import MetricsLog, plot_learning_curve, read_episodes
from hrl.runtime.primitives import make_primitives


@dataclasses.dataclass
class Built:
    """Everything static about a run: the objects the loop closes over."""

    cfg: RunConfig
    env: Any
    agent: Any
    replay: Any
    schedule: Schedule
    loop: FusedLoop | HostLoop
    example_transition: dict


def build(cfg: RunConfig, placement: dict | None = None) -> Built:
    """Environment, agent, replay buffer and the loop (fused when everything is JAX)."""
    from hrl import agents, envs

    env = envs.make_env(cfg.env.name, cfg.env.num_envs, **cfg.env.kwargs)
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
    r = cfg.replay
    replay_is_jax = r.backend == "jax"
    if replay_is_jax:
        replay = make_prioritized_replay(
            r.capacity, alpha=r.alpha, eps=r.eps, fanout=r.fanout, fmt=r.fmt, weights=r.weights
        )
    else:
        from hrl.runtime.host_replay import make_host_replay

        replay = make_host_replay(r)
    schedule = Schedule.from_config(cfg)
    prims = make_primitives(env, agent, replay, cfg.train.batch_size)
    fused = cfg.train.fused
    can_fuse = spec.is_jax and replay_is_jax and not placement
    if fused is None:
        fused = can_fuse
    if fused and not can_fuse:
        raise ValueError(
            "config key 'train.fused': the fused loop needs a JAX environment and replay.backend "
            f"'jax' (got env {cfg.env.name}, backend {r.backend!r}); set train.fused: false"
        )
    if fused:
        loop = FusedLoop(prims, schedule)
    else:
        loop = HostLoop(prims, schedule, spec.is_jax, replay_is_jax, placement)
    return Built(cfg, env, agent, replay, schedule, loop, envs.example_transition(spec))


def initial_state(built: Built) -> TrainState:
    prims = built.loop.prims
    return init_train_state(
        prims, built.replay, built.agent, built.env.spec, built.schedule,
        built.example_transition, built.cfg.seed,
    )


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

    def update(self, done: int, env_rate: float, sgd_rate: float, recent: float | None):
        if self.enabled:
            ret = "-" if recent is None else f"{recent:.1f}"
            rates = f"{env_rate:,.0f} env/s {sgd_rate:,.0f} sgd/s"
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
    the last `log.return_window` episodes reaches `solved_return`). Returns a summary dict
    (also written to RUN_DIR/summary.json)."""
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

    built = build(cfg, placement)
    state = initial_state(built)
    run_dir.mkdir(parents=True, exist_ok=True)
    wall_before = 0.0
    if resume:
        found = latest_checkpoint(run_dir)
        if found is None:
            raise FileNotFoundError(f"--resume {run_dir}: no checkpoint in {run_dir}/checkpoints")
        path, info = found
        state = restore_checkpoint(path, state)
        wall_before = float(info.get("wall_s", 0.0))
        if hasattr(built.replay, "sync_backend"):
            # Host replay: writable numpy arrays again, and the backend's tree rebuilt.
            state = state.replace(replay=jax.tree.map(np.array, state.replay))
            built.replay.sync_backend(state.replay)
        if not built.env.spec.is_jax:
            state = _restart_host_envs(built, state)
    else:
        (run_dir / "config.yaml").write_text(dump_config(cfg))
    start_steps = int(state.env_steps)
    log = MetricsLog(run_dir, cfg.log.metrics_format, resume_at=start_steps if resume else None)
    recent = collections.deque(read_episodes(run_dir)[1].tolist(), maxlen=cfg.log.return_window)

    sch = built.schedule
    # Every chunk has the same length, so the jitted loop compiles once; the run therefore
    # ends on the first chunk boundary at or past total_env_steps (likewise stops and
    # checkpoints fall on chunk boundaries, which keeps resumed runs on the same chunking).
    chunk_iters = max(1, cfg.train.chunk_env_steps // sch.env_steps_per_iter)
    total = cfg.train.total_env_steps
    target = total if stop_at_env_steps is None else min(total, stop_at_env_steps)
    next_ckpt = (
        (start_steps // checkpoint_every + 1) * checkpoint_every if checkpoint_every else None
    )
    t_start = time.perf_counter()
    steps_at_start, updates_at_start = start_steps, int(state.updates)
    interrupted = False
    solved_at = None
    last_saved = start_steps if resume else None

    def checkpoint(st):
        nonlocal last_saved
        info = {
            "env_steps": int(st.env_steps),
            "updates": int(st.updates),
            "iteration": int(st.iteration),
            "wall_s": wall_before + time.perf_counter() - t_start,
        }
        save_checkpoint(run_dir, st, info)
        last_saved = int(st.env_steps)

    title = f"{cfg.algo} {cfg.env.name.split(':')[-1]}"
    with _Interrupt() as stop, _Progress(progress, total, start_steps, title) as bar:
        try:
            while int(state.env_steps) < target and not stop.requested:
                steps_now = int(state.env_steps)
                t0 = time.perf_counter()
                new_state, out = built.loop.run(state, chunk_iters)
                jax.block_until_ready(new_state)
                dt = time.perf_counter() - t0
                steps, returns = _episodes_of(out, steps_now, sch.num_envs)
                state = new_state
                log.episodes(steps, returns)
                recent.extend(returns.tolist())
                _log_chunk(log, state, out, dt, steps_now, recent, t_start, wall_before)
                elapsed = time.perf_counter() - t_start
                bar.update(
                    int(state.env_steps),
                    (int(state.env_steps) - steps_at_start) / max(elapsed, 1e-9),
                    (int(state.updates) - updates_at_start) / max(elapsed, 1e-9),
                    float(np.mean(recent)) if recent else None,
                )
                if next_ckpt is not None and int(state.env_steps) >= next_ckpt:
                    checkpoint(state)
                    next_ckpt = (int(state.env_steps) // checkpoint_every + 1) * checkpoint_every
                if (
                    solved_return is not None
                    and len(recent) == recent.maxlen
                    and float(np.mean(recent)) >= solved_return
                ):
                    solved_at = int(state.env_steps)
                    break
            interrupted = solved_at is None and (stop.requested or int(state.env_steps) < total)
        except KeyboardInterrupt:
            interrupted = True  # `state` is still the last finished chunk's state
        finally:
            if last_saved != int(state.env_steps):
                checkpoint(state)
    wall = time.perf_counter() - t_start
    summary = _summary(cfg, run_dir, state, recent, wall, wall_before, steps_at_start,
                       updates_at_start, interrupted, built.loop)
    summary["solved_at_env_steps"] = solved_at
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_learning_curve(run_dir, f"{cfg.algo.upper()} + PER, {cfg.env.name}", cfg.log.return_window)
    return summary


def _restart_host_envs(built: Built, state: TrainState) -> TrainState:
    """Host (gymnasium) simulators cannot be checkpointed: restart their episodes, and mark
    the newest n-step entry as a (bootstrapping) episode end so no return spans the restart."""
    env_state, obs = built.env.reset(state.key)
    acc = state.nstep
    acc = acc.replace(done=acc.done.at[-1].set(True))
    start = jnp.ones((built.schedule.num_envs,), bool)
    return state.replace(env=env_state, obs=obs, nstep=acc, episode_start=start)


def _log_chunk(log, state, out, dt, steps_before, recent, t_start, wall_before) -> None:
    trained = np.asarray(out.trained)
    row = {
        "env_steps": int(state.env_steps),
        "updates": int(state.updates),
        "wall_s": round(wall_before + time.perf_counter() - t_start, 3),
        "env_steps_per_s": (int(state.env_steps) - steps_before) / max(dt, 1e-9),
        "recent_return": float(np.mean(recent)) if recent else float("nan"),
        "episodes": int(np.asarray(out.completed).sum()),
        "td_abs": float(np.asarray(out.td_abs)[trained].mean()) if trained.any() else float("nan"),
    }
    for name, values in (out.metrics or {}).items():
        values = np.asarray(values)
        row[name] = float(values[trained].mean()) if trained.any() else float("nan")
    log.row(row)


def _summary(cfg, run_dir, state, recent, wall, wall_before, steps0, updates0, interrupted, loop):
    env_steps, updates = int(state.env_steps), int(state.updates)
    summary = {
        "run_dir": str(run_dir),
        "config": cfg.name,
        "env_steps": env_steps,
        "updates": updates,
        "iterations": int(state.iteration),
        "wall_s_this_session": round(wall, 3),
        "wall_s_total": round(wall + wall_before, 3),
        "env_steps_per_s": (env_steps - steps0) / max(wall, 1e-9),
        "updates_per_s": (updates - updates0) / max(wall, 1e-9),
        "recent_return": float(np.mean(recent)) if recent else None,
        "return_window": cfg.log.return_window,
        "interrupted": interrupted,
        "fused": loop.fused,
    }
    if not loop.fused:
        summary["primitive_seconds"] = {k: round(v, 4) for k, v in loop.timings.items()}
    return summary


def resume_config(run_dir: str | Path, overrides=()) -> RunConfig:
    """The config a run was started with (RUN_DIR/config.yaml), plus `--set` overrides."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"--resume {run_dir}: {path} not found (not a run directory?)")
    return load_config(path, overrides)
