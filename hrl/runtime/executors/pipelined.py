"""The pipelined executor: the actors' program beside the learner's, a fixed schedule between them.

The actors run in a thread of this process or in a process of their own (`actors.py`), at most
`depth` iterations ahead of the learner, with the learner's weights sent every
`weight_sync_period` iterations. Which weights an actor iteration uses follows from those two
numbers, never from timing, so a run is reproducible: depth 0 and period 1 is the sequential
executor exactly, and thread and process actors give the same results (tests/runtime).

JAX releases the GIL while a compiled call runs, but a host env (gymnasium, numpy) holds it
while it steps and every primitive call is a Python dispatch, so thread actors overlap the
learner little; process actors do not share the GIL, at the price of moving weights and
transitions between processes (`experiments/bench/bench_executors.py` compares them).

`rate_limit` (a `hrl.runtime.rate_limit.RateLimit`, or None: off; `rate_limit_of` builds it
from a config the schema checked: its ratio is the iteration's, its tolerance at least one
round's) bounds the actors' lead in samples per insert as well: an actor iteration waits until
its inserts keep the limiter's error within the tolerance. It changes when the actors run,
never which weights they use, so the results are those without it, bit for bit. The learner
needs no limit: it takes the actors' iterations in order, so it cannot sample ahead of their
inserts (checked at every round). `limiter_band` holds the chunk's (lowest, highest) error
(lowest: the learner's view after its rounds, highest: the actors' at their inserts; both
bounds of the true values), or None.
"""

from __future__ import annotations

import math

import jax

from hrl.runtime import rate_limit as rl
from hrl.runtime.executors.actors import ProcessActors, ThreadActors
from hrl.runtime.executors.sequential import SequentialLoop, host_settings
from hrl.runtime.iteration import ChunkOut, TrainState
from hrl.runtime.rate_limit import LimiterState, rate_limit_of


class PipelinedLoop(SequentialLoop):
    """The pipelined executor (see the module docstring). `actors`: "thread" or "process";
    process actors are built from `config` (env, agent and primitives only) and take a host
    env's simulator state (`host_env`) at each chunk's ends, so checkpoints keep working."""

    name = "pipelined"

    def __init__(self, *args, depth: int = 1, weight_sync_period: int = 1,
                 actors: str = "thread", config=None, rate_limit=None, **kwargs):
        super().__init__(*args, **kwargs)
        if depth < 0 or weight_sync_period < 1:
            raise ValueError(f"pipelined loop: depth {depth} must be >= 0 and "
                             f"weight_sync_period {weight_sync_period} >= 1")
        if actors not in ("thread", "process"):
            raise ValueError(f"pipelined loop: actors {actors!r} must be 'thread' or 'process'")
        if actors == "process" and config is None:
            raise ValueError("pipelined loop: process actors are built from the run's config")
        self.rate_limit, self.limiter_band = rate_limit, None
        self.depth, self.weight_sync_period, self.actors = depth, weight_sync_period, actors
        self._config = config
        self._process = None  # ProcessActors, started with the first chunk

    @classmethod
    def from_parts(cls, parts) -> PipelinedLoop:
        """The pipelined executor of a run's `registry.Parts`."""
        return cls(parts.prims, parts.schedule, **cls._pipeline_settings(parts),
                   actors=parts.cfg.train.actors)

    @staticmethod
    def _pipeline_settings(parts) -> dict:
        t = parts.cfg.train
        return dict(host_settings(parts), depth=t.pipeline_depth,
                    weight_sync_period=t.weight_sync_period, config=parts.cfg,
                    rate_limit=rate_limit_of(t, parts.schedule.updates_per_round))

    def log_fields(self) -> dict[str, float]:
        """With a limiter: the chunk's limiter error, lowest and highest (samples; within
        +-tolerance), NaN where a bound is unknown."""
        if self.rate_limit is None:
            return {}
        low, high = self.limiter_band or (None, None)
        return {"spi_error_low": float("nan") if low is None else low,
                "spi_error_high": float("nan") if high is None else high}

    def samples_per_insert_note(self, live: float | None) -> str:
        """The live ratio, and with a limiter the band of its error over the last chunk."""
        text = ("-" if live is None else f"{live:.2f}") + " samples/insert"
        band = self.limiter_band
        if band is not None and self.rate_limit is not None:
            low, high = ("-" if v is None else f"{v:+.0f}" for v in band)
            text += f" (error {low}..{high} of ±{self.rate_limit.tolerance:g})"
        return text

    def _actors_for(self, state, first: int, num_iters: int, limiter):
        if self.actors == "thread":
            return ThreadActors(self, state, first, num_iters, self.rate_limit, limiter)
        if self._process is None or not self._process.alive:
            self._process = ProcessActors(self._config, self._host_env)
        self._process.start_chunk(self, state, first, num_iters, self.rate_limit, limiter)
        return self._process

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations: the actors' come from `source` in order, the learner's run
        here, the weights published at every sync point."""
        c, sch, limit = self.calls, self.schedule, self.rate_limit
        first = int(jax.device_get(state.iteration))
        updates = int(jax.device_get(state.updates))
        # The limiter's counters: transitions in the buffer, transitions sampled.
        limiter = LimiterState(first * sch.inserts_per_iter, updates * sch.batch_size)
        source = self._actors_for(state, first, num_iters, limiter)
        agent, replay, pending = state.agent, c.own(state.replay), state.pending
        rows, low, finished, self.limiter_band = [], math.inf, False, None
        try:
            for t in range(first, first + num_iters):
                inputs, actor, batch, completed, returns, env_steps = source.get()
                (agent, replay, pending, do_learn, td_abs, metric_rows, limiter,
                 low) = self._learner_step(agent, replay, pending, batch, inputs, t, limiter, low)
                if do_learn and limit is not None:
                    source.progress(limiter.samples)
                if (t + 1) % self.weight_sync_period == 0:
                    source.publish(t, agent)
                state, row = c.finish(state, inputs._replace(updates=updates), actor, agent,
                                      replay, pending, env_steps, do_learn, completed, returns,
                                      td_abs, metric_rows)
                updates += sch.updates_per_round if do_learn else 0
                rows.append(row)
            finished = True
        finally:
            if finished:
                for name, seconds in source.finish().items():
                    c.timings[name] += seconds
                if limit is not None:
                    self.limiter_band = (None if low == math.inf else low, source.max_error)
            else:
                source.abandon()  # mid-chunk: a process's queues cannot be resynchronised
        return c.settle(state), c.stack(rows)

    def _learner_step(self, agent, replay, pending, batch, inputs, t: int, limiter, low: float,
                      priorities=None):
        """The learner's part of iteration `t` on the actors' `batch` (and their `priorities`
        of it, if they computed them): insert and learn (`_learn`), then the limiter's
        counters (the iteration's inserts, and the samples of a learning round, checked
        against the rate limit). Returns `_learn`'s six outputs, the limiter and the lowest
        limiter error so far (`low`). RuntimeError when the learner sampled ahead of the
        actors' inserts."""
        sch, limit = self.schedule, self.rate_limit
        agent, replay, pending, do_learn, td_abs, metric_rows = self._learn(
            agent, replay, pending, batch, inputs.learn_keys, inputs.beta, t, priorities)
        limiter = limiter._replace(inserts=limiter.inserts + sch.inserts_per_iter)
        if do_learn and limit is not None:
            limiter, ok = rl.sample(limit, limiter, sch.updates_per_round * sch.batch_size)
            if not ok:
                raise RuntimeError(f"rate limiter: the learner sampled ahead of the "
                                   f"actors' inserts ({limiter}, {limit})")
            low = min(low, rl.error(limit, limiter))
        return agent, replay, pending, do_learn, td_abs, metric_rows, limiter, low

    def close(self) -> None:
        super().close()
        if self._process is not None:
            self._process.close()
            self._process = None
