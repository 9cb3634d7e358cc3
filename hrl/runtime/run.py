"""`train(cfg)`: build a run from its config and drive it chunk by chunk.

The driver reads like a training script in four parts: decide (`_Plan`, from the config and
the arguments, before anything is built: one seed, a stack of seeds in one program, or seeds
one after another), build (`build_run.build`, and the run's directories: a fresh config or a
resumed checkpoint, `_Run.open`), loop (`_Run.chunk`, one chunk at a time) and summarize
(`_summary`). It never asks which executor it holds: the executor answers through its protocol
(`hrl.runtime.executors.base.Executor`).

Between chunks (never inside one) the driver updates the progress bar, appends metrics,
evaluates and writes checkpoints on their cadences, hands each callback the chunk's rows, and
honours Ctrl-C: the first SIGINT finishes the running chunk, writes a checkpoint and stops; a
second one stops at once, checkpointing the state of the last finished chunk. A callback that
asks to stop stops the run the same way. Either way `hrl train --resume RUN_DIR` continues the
run exactly.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

from hrl.config import ConfigError, RunConfig, dump_config, to_dict
from hrl.replay.factory import (
    next_obs_layout,
    next_obs_lost,
    next_obs_lost_warning,
    replay_bytes_per_item,
)
from hrl.runtime.build_run import Built, build, executor_of, initial_state, seed_list
from hrl.runtime.checkpoint import latest_checkpoint, restore_newest, save_checkpoint
from hrl.runtime.chunk_log import Cadence, ChunkEnd, SeedLog
from hrl.runtime.evaluation import make_evaluator
from hrl.runtime.executors import executor_class
from hrl.runtime.log_sinks import make_sinks
from hrl.runtime.metrics import plot_learning_curve
from hrl.runtime.progress import Interrupt, ProgressBar
from hrl.runtime.rate_limit import LimiterState, live_ratio
from hrl.runtime.resume import (
    check_resume_changes,
    record_resume,
    resume_changes,
    resume_config,
    with_checkpoint_every,
)
from hrl.runtime.run_summary import (
    best_eval,
    finish,
    last_eval_step,
    steady_rates,
    summary_over_seeds,
)

__all__ = ["ChunkEnd", "default_run_dir", "resume_changes", "resume_config", "train"]

# callback(chunk_end) -> a true value to stop the run (with a checkpoint), else None or False.
Callback = Callable[[ChunkEnd], object]


def default_run_dir(cfg: RunConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{cfg.name}-{stamp}"


def train(
    cfg: RunConfig,
    run_dir: str | Path | None = None,
    resume: bool = False,
    checkpoint_every: int | None = None,
    progress: bool | None = None,
    stop_at_env_steps: int | None = None,
    placement: dict | None = None,
    solved_return: float | None = None,
    callbacks: Sequence[Callback] = (),
) -> dict:
    """Train to `cfg.train.total_env_steps` (or stop early at `stop_at_env_steps`, leaving a
    checkpoint: the programmatic twin of Ctrl-C; or, with `solved_return`, at the end of the
    chunk in which every seed has solved by `aggregate.first_solved`, the rule checked at
    every episode end; the summary then names the solving episode, not the chunk's end).
    Returns a summary dict (also written to RUN_DIR/summary.json); its `stopped_by` says why
    the run ended before its budget: "solved", "callback", "interrupt", "stop_at_env_steps"
    (None: it ran to its budget).

    `callbacks`: each is called at every chunk's end with a `ChunkEnd` (the run's counters and
    the metrics rows just logged, one per seed). One that returns a true value stops the run
    there: a checkpoint is written and the summary says `stopped_by: "callback"`, so
    `resume=True` continues it exactly.

    `cfg.seeds` > 1 trains that many independent runs (seeds `seed`, `seed + 1`, ...): a fused
    loop vmaps them in one jitted program, a host loop runs them one after another. Each
    seed logs into RUN_DIR/seed-<s>/; RUN_DIR/aggregate.{csv,png} hold the median,
    interquartile band and IQM (with its 95% bootstrap interval) over seeds."""
    plan = _Plan.of(cfg, run_dir, resume, checkpoint_every, progress, stop_at_env_steps,
                    solved_return, callbacks, placement)
    if plan.one_after_another:
        return _train_one_after_another(plan, placement)
    t_start = time.perf_counter()
    built = build(cfg, placement)
    if jax.process_count() > 1 and not built.loop.spans_processes:
        raise ValueError(
            f"config key 'train.devices': {jax.process_count()} processes run one data-parallel "
            f"learner over train.devices devices (a multiple of the processes), got "
            f"{cfg.train.devices}")
    state = initial_state(built, plan.seeds if plan.batched else None)
    jax.block_until_ready(state)
    run = _Run(plan, built, state, t_start)
    if not run.open():
        built.loop.close()
        return _already_finished(run.log_dir, run.steps, cfg.train.total_env_steps)
    run.loop()
    summary = _summary(run)
    if run.primary:
        for log in run.logs:
            plot_learning_curve(log.dir, f"{cfg.algo.upper()} + PER, {cfg.env.name}, seed "
                                f"{log.seed}", cfg.log.return_window)
    finish(summary, [log.dir for log in run.logs], run.log_dir, cfg)
    return summary


# --- decide -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Plan:
    """What the driver decides from the config and its arguments, before anything is built."""

    cfg: RunConfig
    run_dir: Path
    resume: bool
    checkpoint_every: int
    progress: bool
    stop_at_env_steps: int | None
    target: int  # the env steps this session runs to
    solved_return: float | None  # stop once every seed has solved (the argument)
    threshold: float | None  # the bar the summary reports (the argument, else the config's)
    callbacks: tuple
    seeds: list[int]
    one_after_another: bool  # several seeds, an executor that runs one at a time

    @classmethod
    def of(cls, cfg, run_dir, resume, checkpoint_every, progress, stop_at_env_steps,
           solved_return, callbacks, placement) -> _Plan:
        run_dir = Path(run_dir) if run_dir is not None else default_run_dir(cfg)
        if not resume and latest_checkpoint(run_dir) is not None:
            raise ValueError(
                f"{run_dir} already holds a run with checkpoints; continue it with --resume "
                f"{run_dir} or choose another run directory"
            )
        every = cfg.log.checkpoint_every if checkpoint_every is None else checkpoint_every
        if every < 0:
            raise ValueError(f"--checkpoint-every must be >= 0, got {every}")
        callbacks = tuple(callbacks)
        for callback in callbacks:
            if not callable(callback):
                raise TypeError(f"train(callbacks=...): {callback!r} is not callable")
        total = cfg.train.total_env_steps
        return cls(
            cfg=cfg, run_dir=run_dir, resume=resume, checkpoint_every=every,
            progress=cfg.log.progress if progress is None else progress,
            stop_at_env_steps=stop_at_env_steps,
            target=total if stop_at_env_steps is None else min(total, stop_at_env_steps),
            solved_return=solved_return,
            threshold=solved_return if solved_return is not None else cfg.train.solved_return,
            callbacks=callbacks, seeds=seed_list(cfg),
            one_after_another=cfg.seeds > 1 and not executor_class(
                executor_of(cfg, placement)).runs_seeds_at_once,
        )

    @property
    def batched(self) -> bool:
        """Several seeds stacked in one program."""
        return len(self.seeds) > 1


def _start_config(read_dir: Path, write_dir: Path, plan: _Plan) -> dict:
    """A fresh run writes WRITE_DIR/config.yaml (with the checkpoint period it runs at); a
    resumed one returns the changes to READ_DIR/config.yaml it makes (refusing any that may
    not change), for `record_resume`."""
    if plan.resume:
        return check_resume_changes(read_dir, plan.cfg, plan.checkpoint_every)
    (write_dir / "config.yaml").write_text(
        dump_config(with_checkpoint_every(plan.cfg, plan.checkpoint_every)))
    return {}


# --- build and loop -----------------------------------------------------------------------
class _Run:
    """One training session of a built run: its state, logs and cadences. `open` readies the
    run directory, `loop` runs the chunks, `_summary` reads the result."""

    def __init__(self, plan: _Plan, built: Built, state, t_start: float):
        self.plan, self.built, self.state, self.t_start = plan, built, state, t_start
        self.init_s = time.perf_counter() - t_start  # build + initial state (compilation)
        # Several processes (`hrl launch`): every process writes its part of each checkpoint
        # into RUN_DIR (orbax multi-host); the run's logs, curves and progress bar are
        # process 0's, the others log into RUN_DIR/process-<i>/ (nothing there is needed to
        # resume).
        self.primary = jax.process_index() == 0
        self.log_dir = (plan.run_dir if self.primary
                        else plan.run_dir / f"process-{jax.process_index()}")
        self.wall_before = 0.0  # wall seconds of the sessions before this one
        self.first_chunk_s: float | None = None
        # Chunks after the session's first that start past learning_starts: (seconds, env
        # steps, updates), the steady state a mapping's prediction is compared with.
        self.steady: list[tuple[float, int, int]] = []
        self.solved_at: int | None = None
        self.stop_asked = False  # by a callback
        self.stopped_by: str | None = None
        self.logs: list[SeedLog] = []

    @property
    def steps(self) -> int:
        return _count(self.state.env_steps)

    @property
    def updates(self) -> int:
        return _count(self.state.updates)

    def wall_now(self) -> float:
        return self.wall_before + time.perf_counter() - self.t_start

    def open(self) -> bool:
        """The run directory: a fresh config, or the newest checkpoint restored; then the
        seeds' logs, the evaluator and the cadences. False: a resumed run that already met
        its budget (nothing more is opened)."""
        p, cfg, loop = self.plan, self.plan.cfg, self.built.loop
        p.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        changed = _start_config(p.run_dir, self.log_dir, p)
        if p.resume:
            found = restore_newest(p.run_dir, self.state,
                                   warn=lambda line: print(line, file=sys.stderr))
            if found is None:
                raise ConfigError(f"--resume {p.run_dir}: no checkpoint in "
                                  f"{p.run_dir / 'checkpoints'}")
            state, info, path = found
            self.wall_before = float(info.get("wall_s", 0.0))
            record_resume(self.log_dir, cfg, p.checkpoint_every, changed, path.name,
                          _count(state.env_steps))
            self.state = loop.restore(state, path)
        start = self.steps
        if p.resume and p.stop_at_env_steps is None and start >= cfg.train.total_env_steps:
            return False
        seed_dirs = ([self.log_dir / f"seed-{s}" for s in p.seeds] if p.batched
                     else [self.log_dir])
        every = cfg.train.eval_every
        self.logs = [
            SeedLog.open(seed, d, cfg.log.metrics_format, start if p.resume else None,
                         make_sinks(cfg.log, d, p.run_dir.name, to_dict(cfg))
                         if self.primary else None,
                         cfg.log.return_window, p.threshold, bool(every))
            for seed, d in zip(p.seeds, seed_dirs, strict=True)
        ]
        self.evaluator = make_evaluator(cfg, self.built.agent) if every else None
        self.best = best_eval(p.run_dir)
        self.checkpoints = Cadence.after(start, p.checkpoint_every)
        self.evaluations = Cadence.after(start, every)
        self.last_saved = start if p.resume else None
        self.lost = next_obs_lost(self.state.replay)  # a next_slot side store's overflow
        self.at_start = (start, self.updates)
        self.run_chunk = loop.run_seeds if p.batched else loop.run
        # Every chunk has the same length, so the jitted loop compiles once; the run therefore
        # ends on the first chunk boundary at or past total_env_steps (likewise stops and
        # checkpoints fall on chunk boundaries, which keeps resumed runs on the same chunking).
        sch = self.built.schedule
        self.chunk_iters = max(1, cfg.train.chunk_env_steps // sch.env_steps_per_iter)
        if self.primary:
            _say_rounding(start, p.target, self.chunk_iters * sch.env_steps_per_iter, cfg,
                          p.resume)
        return True

    def loop(self) -> None:
        """Chunks until the budget, a stop (Ctrl-C, a callback, `stop_at_env_steps`) or every
        seed solved; then the final evaluation of a run that was not stopped; a checkpoint of
        the last finished chunk whatever happens."""
        p = self.plan
        title = (f"{p.cfg.algo} {p.cfg.env.name.split(':')[-1]}"
                 + (f" x{len(p.seeds)} seeds" * p.batched))
        with (Interrupt() as stop,
              ProgressBar(p.progress and self.primary, p.cfg.train.total_env_steps,
                          self.steps, title) as bar):
            try:
                while (self.steps < p.target
                       and not _stop_agreed(stop.requested or self.stop_asked)):
                    self.chunk(bar)
                    if self.solved_at is not None:
                        break
                self.stopped_by = self._stop_reason(stop.requested)
                if (self.evaluator is not None and self.stopped_by in (None, "solved")
                        and last_eval_step(self.logs[0].dir) != self.steps):
                    self.evaluate()  # the final evaluation
            except KeyboardInterrupt:
                self.stopped_by = "interrupt"  # `state` is still the last finished chunk's
            finally:
                if self.last_saved != self.steps:
                    self.checkpoint()
                self.built.loop.close()  # e.g. the pipelined executor's actors' process
                for log in self.logs:
                    log.close()

    def chunk(self, bar: ProgressBar) -> None:
        """One chunk: run it; log each seed's row (and evaluate when due); update the bar;
        checkpoint when due; hand the callbacks the rows."""
        p, loop = self.plan, self.built.loop
        before = (self.steps, self.updates)
        t0 = time.perf_counter()
        state, out = self.run_chunk(self.state, self.chunk_iters)
        jax.block_until_ready(state)
        dt = time.perf_counter() - t0
        self.state = state
        now = (self.steps, self.updates)
        self._note_chunk(dt, before, now)
        tail = loop.log_fields()
        if self.evaluator is not None:
            tail["eval_return"] = (self.evaluate() if self.evaluations.due(now[0])
                                   else float("nan"))
        live = _samples_per_insert(now, p.cfg)
        head = {
            "env_steps": now[0],
            "updates": now[1],
            "samples_per_insert": float("nan") if live is None else round(live, 4),
            "wall_s": round(self.wall_now(), 3),
            # this chunk's env steps over its own wall time (summary.json's env_steps_per_s
            # is the whole session's, compile and set-up included)
            "chunk_env_steps_per_s": (now[0] - before[0]) / max(dt, 1e-9),
        }
        rows = tuple(
            log.record(jax.tree.map(lambda x, i=i: x[i], out) if p.batched else out,
                       before[0], self.built.schedule.total_envs, head, tail)
            for i, log in enumerate(self.logs))
        self._update_bar(bar, now, loop.samples_per_insert_note(live))
        if self.checkpoints.due(now[0]):
            self.checkpoint()
        if p.solved_return is not None and all(log.watch.hit is not None for log in self.logs):
            self.solved_at = max(log.watch.solved_at for log in self.logs)
        end = ChunkEnd(now[0], now[1], _count(self.state.iteration), self.wall_now(),
                       tuple(p.seeds), rows)
        self.stop_asked |= any([bool(callback(end)) for callback in p.callbacks])

    def _note_chunk(self, dt: float, before, now) -> None:
        """The chunk's time (first, or steady), and a warning when next_obs items were lost."""
        lost_before, self.lost = self.lost, next_obs_lost(self.state.replay)
        warning = next_obs_lost_warning(self.lost, lost_before, now[0])
        if warning and self.primary:
            print(warning, file=sys.stderr, flush=True)
        if self.first_chunk_s is None:
            self.first_chunk_s = dt
        elif before[0] >= self.built.schedule.learning_starts:
            self.steady.append((dt, now[0] - before[0], now[1] - before[1]))

    def _update_bar(self, bar: ProgressBar, now, note: str) -> None:
        seeds, elapsed = len(self.plan.seeds), max(time.perf_counter() - self.t_start, 1e-9)
        means = [float(np.mean(log.recent)) for log in self.logs if log.recent]
        bar.update(
            now[0],
            seeds * (now[0] - self.at_start[0]) / elapsed,
            seeds * (now[1] - self.at_start[1]) / elapsed,
            float(np.median(means)) if means else None,
            note,
            None if self.plan.threshold is None else
            f"solved {sum(log.watch.hit is not None for log in self.logs)}/{len(self.logs)}",
        )

    def _stop_reason(self, interrupted: bool) -> str | None:
        if self.solved_at is not None:
            return "solved"
        if self.stop_asked and self.steps < self.plan.target:
            return "callback"
        if interrupted or self.steps < self.plan.target:  # here, or in another process
            return "interrupt"
        if self.steps < self.plan.cfg.train.total_env_steps:
            return "stop_at_env_steps"
        return None

    def _info(self, **more) -> dict:
        st = self.state
        return {"env_steps": _count(st.env_steps), "updates": _count(st.updates),
                "iteration": _count(st.iteration), "wall_s": self.wall_now(), **more}

    def checkpoint(self) -> None:
        info = self._info()
        save_checkpoint(self.plan.run_dir, self.state, info,
                        **self.built.loop.checkpoint_extras(info["iteration"]))
        self.last_saved = info["env_steps"]

    def evaluate(self) -> float:
        """Evaluate every seed at this env step, log it, keep the best checkpoint; returns
        the eval return (the mean over seeds of each seed's mean over episodes)."""
        p, steps = self.plan, self.steps
        agent = jax.tree.map(_local_copy, self.state.agent)
        returns = self.evaluator.returns(
            agent, np.asarray(p.seeds) if p.batched else p.seeds[0], steps)
        returns = np.asarray(returns).reshape(len(p.seeds), -1)
        score = float(np.mean([log.evals.add(steps, r)["eval_return"]
                               for log, r in zip(self.logs, returns, strict=True)]))
        if self.best is None or score > self.best:
            info = self._info(eval_return=score)
            save_checkpoint(p.run_dir / "best", self.state, info,
                            **self.built.loop.checkpoint_extras(info["iteration"]))
            self.best = score
        return score


# --- summarize ----------------------------------------------------------------------------
def _summary(run: _Run) -> dict:
    """summary.json of a session (before `finish` adds the per-seed results)."""
    p, built, state = run.plan, run.built, run.state
    wall = time.perf_counter() - run.t_start
    seeds, (steps_at_start, updates_at_start) = len(p.seeds), run.at_start
    env_steps, updates = run.steps, run.updates
    watches = [log.watch for log in run.logs]
    return {
        "run_dir": str(p.run_dir),
        "config": p.cfg.name,
        "seeds": p.seeds,
        "env_steps": env_steps,  # per seed
        "updates": updates,  # per seed
        "iterations": _count(state.iteration),
        "wall_s_this_session": round(wall, 3),
        "wall_s_total": round(wall + run.wall_before, 3),
        "init_s": round(run.init_s, 3),  # build + initial state (compilation included)
        "first_chunk_s": None if run.first_chunk_s is None else round(run.first_chunk_s, 3),
        # The steady state (chunks after the session's first, past learning_starts), summed
        # over seeds; None when the session ran no such chunk. What a mapping's prediction
        # compares with; the whole session's rates below include compilation and start-up.
        **steady_rates(run.steady, seeds),
        # Summed over seeds: every env step / SGD step simulated per wall second.
        "env_steps_per_s": seeds * (env_steps - steps_at_start) / max(wall, 1e-9),
        "updates_per_s": seeds * (updates - updates_at_start) / max(wall, 1e-9),
        "env_steps_per_s_per_seed": (env_steps - steps_at_start) / max(wall, 1e-9),
        "recent_return": float(np.median([np.mean(log.recent) for log in run.logs]))
        if all(log.recent for log in run.logs) else None,
        "return_window": p.cfg.log.return_window,
        "solved_return": p.threshold,
        "interrupted": run.stopped_by not in (None, "solved"),
        "stopped_by": run.stopped_by,
        "executor": built.loop.name,
        # Replay memory one transition takes (a packed row: observations in their own dtype;
        # with replay.next_obs next_slot, without next_obs plus its share of the side store).
        "replay_bytes_per_transition": round(
            replay_bytes_per_item(built.replay, built.example_transition), 2),
        "replay_next_obs": next_obs_layout(built.replay),  # replay.next_obs as resolved
        "replay_next_obs_lost": next_obs_lost(state.replay),
        "obs_dtype": str(built.env.spec.obs_dtype),
        "fused": built.loop.fused,
        "devices": p.cfg.train.devices,
        # With `solved_return`: the env step of the episode at which the last seed to solve
        # solved, and the median over seeds of the window mean at each seed's solving episode.
        "solved_at_env_steps": run.solved_at,
        "solved_window_return": None if run.solved_at is None
        else float(np.median([w.hit[1] for w in watches])),
        **built.loop.summary_fields(state),  # primitive seconds, replica checks
        # placement infer/train: fpga: the kernel's launches, SGD steps, saturations, cycles
        **({"fpga_learner": built.fpga.summary()} if built.fpga is not None else {}),
    }


def _train_one_after_another(plan: _Plan, placement) -> dict:
    """Several seeds of a host-loop config: one run per seed, in RUN_DIR/seed-<s>/, then the
    aggregate. On resume, finished seeds are kept and the interrupted one continues."""
    cfg, run_dir = plan.cfg, plan.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    changed = _start_config(run_dir, run_dir, plan)
    if plan.resume:
        record_resume(run_dir, cfg, plan.checkpoint_every, changed, None, None)
    summaries, seed_dirs = [], []
    t_start = time.perf_counter()
    for seed in plan.seeds:
        seed_dir = run_dir / f"seed-{seed}"
        seed_dirs.append(seed_dir)
        done = seed_dir / "summary.json"
        if plan.resume and done.exists() and not json.loads(done.read_text())["interrupted"]:
            summaries.append(json.loads(done.read_text()))
            continue
        summaries.append(train(
            dataclasses.replace(cfg, seed=seed, seeds=1), seed_dir,
            resume=plan.resume and latest_checkpoint(seed_dir) is not None,
            checkpoint_every=plan.checkpoint_every, progress=plan.progress,
            stop_at_env_steps=plan.stop_at_env_steps, placement=placement,
            solved_return=plan.solved_return, callbacks=plan.callbacks,
        ))
        if summaries[-1]["interrupted"]:
            break
    summary = summary_over_seeds(str(run_dir), plan.seeds, summaries,
                                 time.perf_counter() - t_start)
    finish(summary, seed_dirs, run_dir, cfg)
    return summary


# --- small parts --------------------------------------------------------------------------
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


def _count(x) -> int:
    """A counter of the state (equal across stacked seeds: the schedule does not depend on
    the seed)."""
    return int(_local_copy(x).reshape(-1)[0])


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
    """The progress bar's samples per insert, as the executor words it
    (`Executor.samples_per_insert_note`)."""
    return loop.samples_per_insert_note(_samples_per_insert(counters, cfg))
