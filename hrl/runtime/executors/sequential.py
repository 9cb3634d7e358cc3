"""The sequential executor: the iteration one primitive call at a time, each on its own device.

Each primitive is its own jitted call (or host call: gymnasium envs, host replay backends) on
the device the run's `placement` names (`HostCalls`); the actors' program and the learner's
run one after the other. It is the template the mapping framework instantiates: the same keys,
calls and order as the fused executor, so the same results bit for bit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hrl.runtime.executors.host_calls import HostCalls
from hrl.runtime.iteration import ChunkOut, Schedule, TrainState, actor_of, learns, sgd_step
from hrl.runtime.pending import HostPendingQueue
from hrl.runtime.primitives import Primitives


class HostLoop:
    """The sequential executor (see the module docstring).

    `overlap_replay`: in relaxed dependency, run the tree's update(t-s) and sample(t+1) in a
    second thread while train(t) runs (`_overlapped_round`). That pays only where the tree's
    calls are off the learner's XLA device and slower than a hand-off between threads: on one
    XLA:CPU device the calls run in the order they were issued anyway, so a call issued beside
    train(t) would wait for it (`experiments/bench/bench_relaxed.py` measures both)."""

    name = "sequential"
    runs_seeds_at_once = False

    def __init__(self, prims: Primitives, schedule: Schedule, env_is_jax: bool,
                 replay_is_jax: bool = True, placement: dict[str, Any] | None = None,
                 overlap_replay: bool = False):
        self.calls = HostCalls(prims, schedule, env_is_jax, replay_is_jax, placement)
        self.prims, self.schedule, self.placement = prims, schedule, self.calls.placement
        self.overlap_replay = overlap_replay
        self._relaxed = schedule.staleness > 0
        self._replay_thread: ThreadPoolExecutor | None = None  # started at the first round

    @property
    def timings(self) -> dict[str, float]:
        """Seconds spent in each primitive's calls so far."""
        return self.calls.timings

    # --- the learner's program -------------------------------------------------------------
    def _learn(self, agent, replay, pending, batch, learn_keys, beta, iteration: int,
               priorities=None):
        """Insert the actors' batch (with `priorities`, raw, if the actors computed them;
        else at the largest priority seen), then (on a learning iteration) U x `sgd_step`.
        Returns (agent, replay, pending, learned, mean |td| per step, packed metrics per
        step). `replay` is consumed (a JAX replay is updated in place)."""
        c = self.calls
        if priorities is None:
            replay = c.timed("update", c.insert, replay, batch)
        else:
            replay = c.timed("update", c.insert, replay, batch, priorities)
        do_learn = bool(learns(int(replay.size), int(iteration), self.schedule))
        if not do_learn:
            return agent, replay, pending, False, [], []
        # The relaxed queue stays on the host from round to round; `settle` turns it back into
        # the state's `PendingUpdates` at a chunk's end.
        queue = None
        if self._relaxed:
            queue = pending if isinstance(pending, HostPendingQueue) else HostPendingQueue(pending)
        if self._relaxed and self.overlap_replay:
            agent, replay, logs = self._overlapped_round(agent, replay, queue, learn_keys, beta)
        else:
            calls = c.learner_calls(queue, wait_train=not self._relaxed)
            logs = []
            for key in learn_keys:
                agent, replay, queue, _, step_logs = sgd_step(calls, agent, replay, queue, key,
                                                              beta)
                logs.append(step_logs)
        if self._relaxed:
            pending = queue
        agent = c.timed("train", c.train.unpack_agent, agent)
        metric_rows, td_abs = zip(*logs, strict=True)
        # The round's logs as two arrays, so they cross to the host in one transfer.
        td_abs, metric_rows = c.train.stack_logs(list(td_abs), list(metric_rows))
        return agent, replay, pending, True, td_abs, metric_rows

    def _overlapped_round(self, agent, replay, queue: HostPendingQueue, learn_keys, beta):
        """The SGD steps of a relaxed round with the tree in a second thread: train(t) here
        while the thread writes update(t-s) and draws sample(t+1), which need nothing from
        train(t). The same calls on the same values as `sgd_step`, so the same results."""
        calls = self.calls.learner_calls(queue, wait_train=True)
        if self._replay_thread is None:
            self._replay_thread = ThreadPoolExecutor(1, thread_name_prefix="hrl-replay")

        def update_then_sample(replay, indices, td, valid, key):
            replay = calls.update(replay, indices, td, valid)
            return replay, None if key is None else calls.sample(replay, key, beta)

        batch, logs = calls.sample(replay, learn_keys[0], beta), []
        for step in range(len(learn_keys)):
            key = learn_keys[step + 1] if step + 1 < len(learn_keys) else None
            job = self._replay_thread.submit(update_then_sample, replay, *queue.leaving(), key)
            try:
                agent, td, step_logs = calls.train(agent, batch.items, batch.weights)
            finally:
                replay, following = job.result()  # never leave the replay thread mid-call
            queue.push(batch.indices, td)
            logs.append(step_logs)
            batch = following
        return agent, replay, logs

    # --- the executor protocol ---------------------------------------------------------------
    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations, the actors' program then the learner's, call by call."""
        c, rows = self.calls, []
        state = state.replace(replay=c.own(state.replay))  # the caller's stays valid
        for _ in range(num_iters):
            inputs = c.inputs(state)
            actor, batch, completed, returns, env_steps = c.act(
                state.agent, actor_of(state), inputs.act_env, inputs.env_steps)
            agent, replay, pending, do_learn, td_abs, metric_rows = self._learn(
                state.agent, state.replay, state.pending, batch, inputs.learn_keys, inputs.beta,
                inputs.iteration)
            state, row = c.finish(state, inputs, actor, agent, replay, pending, env_steps,
                                  do_learn, completed, returns, td_abs, metric_rows)
            rows.append(row)
        return c.settle(state), c.stack(rows)

    def primitive_seconds(self) -> dict[str, float]:
        return dict(self.calls.timings)

    def actors_state(self, iteration: int) -> bytes | None:
        """None: the `TrainState` holds every actor's state (see `Executor`)."""
        return None

    def load_actors_state(self, blob: bytes | None, iteration: int) -> None:
        """Nothing to take: the `TrainState` holds every actor's state."""

    def close(self) -> None:
        """Stop the relaxed round's replay thread (a later round starts a new one)."""
        if self._replay_thread is not None:
            self._replay_thread.shutdown()
            self._replay_thread = None
