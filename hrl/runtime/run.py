"""`train(cfg)`: build a run from its config and drive it chunk by chunk.

Between chunks (never inside one) the driver updates the progress bar, appends metrics,
writes checkpoints, and honours Ctrl-C: the first SIGINT finishes the running chunk, writes a
checkpoint and stops; a second one stops at once, checkpointing the state of the last finished
chunk. Either way `hrl train --resume RUN_DIR` continues the run exactly.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from hrl.config import ConfigError, RunConfig, dump_config, to_dict
from hrl.envs.gymnasium_env import HostEnvStateError
from hrl.replay.factory import (
    next_obs_layout,
    next_obs_lost,
    next_obs_lost_warning,
    replay_bytes_per_item,
)
from hrl.replay.interface import HostReplay
from hrl.runtime.aggregate import SolvedWatch
from hrl.runtime.build_run import Built, build, initial_state, seed_list
from hrl.runtime.checkpoint import (
    latest_checkpoint,
    read_actors_state,
    read_host_state,
    restore_newest,
    save_checkpoint,
)
from hrl.runtime.evaluation import make_evaluator
from hrl.runtime.executors import PipelinedLoop
from hrl.runtime.iteration import TrainState
from hrl.runtime.log_sinks import make_sinks
from hrl.runtime.metrics import (
    EvalLog,
    MetricsLog,
    plot_learning_curve,
    read_episodes,
)
from hrl.runtime.progress import Interrupt, ProgressBar
from hrl.runtime.rate_limit import LimiterState, live_ratio
from hrl.runtime.resume import (
    check_resume_changes,
    record_resume,
    resume_changes,
    resume_config,
    with_checkpoint_every,
)
from hrl.runtime.run_summary import best_eval, finish, last_eval_step

__all__ = ["default_run_dir", "resume_changes", "resume_config", "train"]


def default_run_dir(cfg: RunConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{cfg.name}-{stamp}"


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
    checkpoint: the programmatic twin of Ctrl-C; or, with `solved_return`, at the end of the
    chunk in which every seed has solved by `aggregate.first_solved`, the rule checked at
    every episode end; the summary then names the solving episode, not the chunk's end).
    Returns a summary dict (also written to RUN_DIR/summary.json).

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
    if jax.process_count() > 1 and built.loop.name != "data-parallel":
        raise ValueError(
            f"config key 'train.devices': {jax.process_count()} processes run one data-parallel "
            f"learner over train.devices devices (a multiple of the processes), got "
            f"{cfg.train.devices}")
    if cfg.seeds > 1 and not built.loop.runs_seeds_at_once:
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
        changed = check_resume_changes(run_dir, cfg, checkpoint_every)
        found = restore_newest(run_dir, state, warn=lambda line: print(line, file=sys.stderr))
        if found is None:
            raise ConfigError(f"--resume {run_dir}: no checkpoint in {run_dir / 'checkpoints'}")
        state, info, path = found
        wall_before = float(info.get("wall_s", 0.0))
        record_resume(log_dir, cfg, checkpoint_every, changed, path.name,
                       _count(state.env_steps))
        if isinstance(built.replay, HostReplay):
            # Host replay: writable numpy arrays again, and the backend's tree rebuilt.
            state = state.replace(replay=jax.tree.map(np.array, state.replay))
            built.replay.sync_backend(state.replay)
        if not built.env.spec.is_jax:
            state = _resume_host_envs(built, state, path)
        built.loop.load_actors_state(read_actors_state(path), _count(state.iteration))
    else:
        (log_dir / "config.yaml").write_text(dump_config(with_checkpoint_every(cfg,
                                                                              checkpoint_every)))
    seed_dirs = [log_dir / f"seed-{s}" for s in seeds] if batched else [log_dir]
    for d in seed_dirs:
        d.mkdir(parents=True, exist_ok=True)
    start_steps = _count(state.env_steps)
    if resume and stop_at_env_steps is None and start_steps >= cfg.train.total_env_steps:
        built.loop.close()
        return _already_finished(log_dir, start_steps, cfg.train.total_env_steps)
    logs = [
        MetricsLog(d, cfg.log.metrics_format, resume_at=start_steps if resume else None,
                   sinks=make_sinks(cfg.log, d, run_dir.name, to_dict(cfg)) if primary else None)
        for d in seed_dirs
    ]
    window = cfg.log.return_window
    threshold = solved_return if solved_return is not None else cfg.train.solved_return
    logged = [read_episodes(d) for d in seed_dirs]
    recents = [collections.deque(r.tolist(), maxlen=window) for _, r in logged]
    watches = [SolvedWatch(window, threshold, s, r) for s, r in logged]
    every = cfg.train.eval_every
    evaluator = make_evaluator(cfg, built.agent) if every else None
    eval_logs = [EvalLog(d, start_steps if resume else None) for d in seed_dirs] if every else []
    best = best_eval(run_dir)

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
    if primary:
        _say_rounding(start_steps, target, chunk_iters * sch.env_steps_per_iter, cfg,
                      resume)
    next_eval = (start_steps // every + 1) * every if every else None
    interrupted = False
    solved_at = None
    first_chunk_s = None
    # Chunks after the session's first that start past learning_starts: (seconds, env steps,
    # updates), the steady state a mapping's prediction is compared with.
    steady = []
    last_saved = start_steps if resume else None
    lost = next_obs_lost(state.replay)  # a next_slot side store's overflow, warned of as it grows

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
        save_checkpoint(run_dir, st, info, host_state=_host_env_state(built),
                        actors_state=built.loop.actors_state(info["iteration"]))
        last_saved = _count(st.env_steps)

    def evaluate(st) -> float:
        """Evaluate every seed at this env step, log it, keep the best checkpoint; returns
        the eval return (the mean over seeds of each seed's mean over episodes)."""
        nonlocal best
        steps = _count(st.env_steps)
        agent = jax.tree.map(_local_copy, st.agent)
        returns = evaluator.returns(agent, np.asarray(seeds) if batched else seeds[0], steps)
        returns = np.asarray(returns).reshape(len(seeds), -1)
        score = float(np.mean([log.add(steps, r)["eval_return"]
                               for log, r in zip(eval_logs, returns, strict=True)]))
        if best is None or score > best:
            info = {"env_steps": steps, "updates": _count(st.updates),
                    "iteration": _count(st.iteration), "wall_s": wall_now(),
                    "eval_return": score}
            save_checkpoint(run_dir / "best", st, info, host_state=_host_env_state(built),
                            actors_state=built.loop.actors_state(_count(st.iteration)))
            best = score
        return score

    def all_solved():
        return solved_return is not None and all(w.hit is not None for w in watches)

    title = f"{cfg.algo} {cfg.env.name.split(':')[-1]}" + (f" x{len(seeds)} seeds" * batched)
    with Interrupt() as stop, ProgressBar(progress, total, start_steps, title) as bar:
        try:
            while _count(state.env_steps) < target and not _stop_agreed(stop.requested):
                steps_now, updates_now = _count(state.env_steps), _count(state.updates)
                t0 = time.perf_counter()
                new_state, out = run_chunk(state, chunk_iters)
                jax.block_until_ready(new_state)
                dt = time.perf_counter() - t0
                state = new_state
                counters = (_count(state.env_steps), _count(state.updates))
                lost_before, lost = lost, next_obs_lost(state.replay)
                warning = next_obs_lost_warning(lost, lost_before, counters[0])
                if warning and primary:
                    print(warning, file=sys.stderr, flush=True)
                if first_chunk_s is None:
                    first_chunk_s = dt
                elif steps_now >= sch.learning_starts:
                    steady.append((dt, counters[0] - steps_now, counters[1] - updates_now))
                extra = {}
                if every:
                    extra["eval_return"] = float("nan")
                    if counters[0] >= next_eval:
                        extra["eval_return"] = evaluate(state)
                        next_eval = (counters[0] // every + 1) * every
                for i, (log, recent) in enumerate(zip(logs, recents, strict=True)):
                    seed_out = jax.tree.map(lambda x, i=i: x[i], out) if batched else out
                    steps, returns = _episodes_of(seed_out, steps_now, sch.total_envs)
                    log.episodes(steps, returns)
                    watches[i].feed(steps, returns)
                    recent.extend(returns.tolist())
                    _log_chunk(log, counters, seed_out, dt, steps_now, recent, wall_now(),
                               cfg, built.loop, extra)
                elapsed = time.perf_counter() - t_start
                means = [float(np.mean(r)) for r in recents if r]
                bar.update(
                    counters[0],
                    len(seeds) * (counters[0] - steps_at_start) / max(elapsed, 1e-9),
                    len(seeds) * (counters[1] - updates_at_start) / max(elapsed, 1e-9),
                    float(np.median(means)) if means else None,
                    _samples_per_insert_text(counters, cfg, built.loop),
                    None if threshold is None else
                    f"solved {sum(w.hit is not None for w in watches)}/{len(watches)}",
                )
                if next_ckpt is not None and counters[0] >= next_ckpt:
                    checkpoint(state)
                    next_ckpt = (counters[0] // checkpoint_every + 1) * checkpoint_every
                if all_solved():
                    solved_at = max(w.solved_at for w in watches)
                    break
            interrupted = solved_at is None and (stop.requested or _count(state.env_steps) < total)
            if every and not interrupted and last_eval_step(seed_dirs[0]) != _count(
                    state.env_steps):
                evaluate(state)  # the final evaluation
        except KeyboardInterrupt:
            interrupted = True  # `state` is still the last finished chunk's state
        finally:
            if last_saved != _count(state.env_steps):
                checkpoint(state)
            built.loop.close()  # e.g. the pipelined executor's actors' process
            for log in logs:
                log.close()
    wall = time.perf_counter() - t_start
    env_steps, updates = _count(state.env_steps), _count(state.updates)
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
        # The steady state (chunks after the session's first, past learning_starts), summed
        # over seeds; None when the session ran no such chunk. What a mapping's prediction
        # compares with; the whole session's rates below include compilation and start-up.
        **_steady_rates(steady, len(seeds)),
        # Summed over seeds: every env step / SGD step simulated per wall second.
        "env_steps_per_s": len(seeds) * (env_steps - steps_at_start) / max(wall, 1e-9),
        "updates_per_s": len(seeds) * (updates - updates_at_start) / max(wall, 1e-9),
        "env_steps_per_s_per_seed": (env_steps - steps_at_start) / max(wall, 1e-9),
        "recent_return": float(np.median([np.mean(r) for r in recents])) if all(recents)
        else None,
        "return_window": window,
        "solved_return": threshold,
        "interrupted": interrupted,
        "executor": built.loop.name,
        # Replay memory one transition takes (a packed row: observations in their own dtype;
        # with replay.next_obs next_slot, without next_obs plus its share of the side store).
        "replay_bytes_per_transition": round(
            replay_bytes_per_item(built.replay, built.example_transition), 2),
        "replay_next_obs": next_obs_layout(built.replay),  # replay.next_obs as resolved
        "replay_next_obs_lost": next_obs_lost(state.replay),
        "obs_dtype": str(built.env.spec.obs_dtype),
        "fused": built.loop.name in ("fused", "data-parallel"),
        "devices": cfg.train.devices,
        # With `solved_return`: the env step of the episode at which the last seed to solve
        # solved, and the median over seeds of the window mean at each seed's solving episode.
        "solved_at_env_steps": solved_at,
        "solved_window_return": None if solved_at is None
        else float(np.median([w.hit[1] for w in watches])),
    }
    if built.loop.name == "data-parallel":
        summary.update(replicas_agree(state.agent))
    seconds = built.loop.primitive_seconds()
    if seconds is not None:
        summary["primitive_seconds"] = {k: round(v, 4) for k, v in seconds.items()}
    if primary:
        for seed, d in zip(seeds, seed_dirs, strict=True):
            plot_learning_curve(d, f"{cfg.algo.upper()} + PER, {cfg.env.name}, seed {seed}",
                                window)
    finish(summary, seed_dirs, log_dir, cfg)
    return summary


def _say_rounding(start: int, target: int, chunk_steps: int, cfg: RunConfig,
                  resumed: bool) -> None:
    """One line, before training, when the run will not end on its budget exactly: it stops
    at a chunk's end (every chunk has the same length, so the loop compiles once), counting
    from where it starts (the n-step warm-up's steps, or a checkpoint's)."""
    end = start + -(-(target - start) // chunk_steps) * chunk_steps
    if end == target:
        return
    if start and resumed:
        first = f"{start:,} done before this session, then "
    elif start and cfg.replay.n_step > 1:
        first = f"{start:,} fill the {cfg.replay.n_step}-step return window, then "
    elif start:
        first = f"{start:,} before the first chunk, then "
    else:
        first = ""
    print(f"hrl: train.total_env_steps={target:,} runs {end:,} env steps: {first}whole chunks "
          f"of {chunk_steps:,} (train.chunk_env_steps rounded to whole iterations of "
          f"{cfg.env_steps_per_iter:,}), as a run stops at a chunk's end", flush=True)


def _already_finished(log_dir: Path, env_steps: int, total: int) -> dict:
    """A resume of a run that already met its budget: nothing runs and nothing is
    rewritten; the run's summary.json, marked `already_finished`."""
    path = log_dir / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {"run_dir": str(log_dir)}
    summary.update(already_finished=True, env_steps=env_steps, total_env_steps=total,
                   interrupted=False)
    return summary


def _stop_agreed(requested: bool) -> bool:
    """Across processes, stop when any of them was asked to: every process must run the same
    chunks and then the same checkpoint (their collectives wait for one another)."""
    if jax.process_count() == 1:
        return requested
    return bool(np.any(multihost_utils.process_allgather(np.int32(requested))))


def _local_copy(x) -> np.ndarray:
    """A replicated array as numpy; across processes, this process's own copy."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return np.asarray(x.addressable_data(0))
    return np.asarray(x)


def _steady_rates(steady: list[tuple[float, int, int]], seeds: int) -> dict:
    """Env steps and updates per second over the steady chunks (seconds, env steps, updates
    per seed), summed over seeds, and how many chunks that is."""
    seconds = sum(dt for dt, _, _ in steady)
    if not steady or seconds <= 0:
        return {"steady_env_steps_per_s": None, "steady_updates_per_s": None,
                "steady_chunks": 0}
    return {"steady_env_steps_per_s": seeds * sum(n for _, n, _ in steady) / seconds,
            "steady_updates_per_s": seeds * sum(u for _, _, u in steady) / seconds,
            "steady_chunks": len(steady)}


def _mean_of(values) -> float | None:
    """The mean of the values that are not None; None when all are."""
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def _count(x) -> int:
    """A counter of the state (equal across stacked seeds: the schedule does not depend on
    the seed)."""
    return int(_local_copy(x).reshape(-1)[0])


def replicas_agree(agent_state) -> dict:
    """Whether every device of every process holds the same networks and optimizer state (the
    data-parallel invariant): each process compares its devices' copies and hashes one; the
    digests are gathered from all processes (one per process)."""
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


def _train_one_after_another(
    cfg, run_dir, resume, checkpoint_every, progress, stop_at_env_steps, placement, solved_return
) -> dict:
    """Several seeds of a host-loop config: one run per seed, in RUN_DIR/seed-<s>/, then the
    aggregate. On resume, finished seeds are kept and the interrupted one continues."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        changed = check_resume_changes(run_dir, cfg, checkpoint_every)
        record_resume(run_dir, cfg, checkpoint_every, changed, None, None)
    else:
        (run_dir / "config.yaml").write_text(dump_config(with_checkpoint_every(cfg,
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
        **{k: _mean_of(s.get(k) for s in summaries)
           for k in ("steady_env_steps_per_s", "steady_updates_per_s")},
        "steady_chunks": sum(s.get("steady_chunks", 0) for s in summaries),
        "recent_return": float(np.median([s["recent_return"] for s in summaries
                                          if s["recent_return"] is not None] or [np.nan])),
        "interrupted": len(summaries) < cfg.seeds or last["interrupted"],
        "solved_at_env_steps": None,
    }
    finish(summary, seed_dirs, run_dir, cfg)
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
    band = loop.limiter_band
    if band is not None and loop.rate_limit is not None:
        low, high = ("-" if v is None else f"{v:+.0f}" for v in band)
        text += f" (error {low}..{high} of ±{loop.rate_limit.tolerance:g})"
    return text


def _log_chunk(log, counters, out, dt, steps_before, recent, wall_s, cfg: RunConfig,
               loop, extra: dict) -> None:
    trained = np.asarray(out.trained)
    env_steps, updates = counters
    live = _samples_per_insert(counters, cfg)
    row = {
        "env_steps": env_steps,
        "updates": updates,
        "samples_per_insert": float("nan") if live is None else round(live, 4),
        "wall_s": round(wall_s, 3),
        # this chunk's env steps over its own wall time (summary.json's env_steps_per_s is the
        # whole session's, compile and set-up included)
        "chunk_env_steps_per_s": (env_steps - steps_before) / max(dt, 1e-9),
        "recent_return": float(np.mean(recent)) if recent else float("nan"),
        "episodes": int(np.asarray(out.completed).sum()),
        "td_abs": float(np.asarray(out.td_abs)[trained].mean()) if trained.any() else float("nan"),
    }
    if isinstance(loop, PipelinedLoop) and loop.rate_limit is not None:
        # The chunk's limiter error, lowest and highest (samples; within +-tolerance).
        low, high = loop.limiter_band or (None, None)
        row["spi_error_low"] = float("nan") if low is None else low
        row["spi_error_high"] = float("nan") if high is None else high
    row.update(extra)  # e.g. the chunk's eval return (NaN in chunks without an evaluation)
    for name, values in (out.metrics or {}).items():
        values = np.asarray(values)
        row[name] = float(values[trained].mean()) if trained.any() else float("nan")
    log.row(row)

