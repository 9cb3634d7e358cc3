"""The sequential executor: the iteration one primitive call at a time, each on its own device.

Each primitive is its own jitted call (or host call: gymnasium envs, host replay backends) on
the device the run's `placement` names (`HostCalls`); the actors' program and the learner's
run one after the other. It is the template the mapping framework instantiates: the same keys,
calls and order as the fused executor, so the same results bit for bit.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl.envs.gymnasium_env import HostEnvStateError
from hrl.replay.interface import Replay
from hrl.runtime.checkpoint import read_actors_state, read_host_state
from hrl.runtime.executors.base import InitOne, StateHoldsAll
from hrl.runtime.executors.host_calls import HostCalls
from hrl.runtime.iteration import ChunkOut, Schedule, TrainState, actor_of, learns, sgd_step
from hrl.runtime.pending import HostPendingQueue
from hrl.runtime.primitives import Primitives


def replay_off_learner(backend: str, placement: dict) -> bool:
    """Whether the tree's calls run away from the learner's device and are slow enough that
    relaxed dependency runs them in a thread beside train(t)
    (`SequentialLoop._overlapped_round`): an OpenCL or RTL tree, or sample and update placed on
    another device than train. Not the native host tree: its calls are shorter than a hand-off
    between threads."""
    if backend in ("opencl", "rtl"):
        return True
    tree = {placement.get("sample"), placement.get("update")} - {None}
    return bool(tree) and tree != {placement.get("train", jax.devices()[0])}


def host_settings(parts) -> dict:
    """The keyword arguments every host-loop executor takes from a run's `registry.Parts`."""
    spec, backend = parts.env.spec, parts.cfg.replay.backend
    return dict(env_is_jax=spec.is_jax, replay_is_jax=backend == "jax",
                placement=parts.placement,
                overlap_replay=replay_off_learner(backend, parts.placement),
                replay=parts.replay, host_env=None if spec.is_jax else parts.env)


class SequentialLoop(StateHoldsAll):
    """The sequential executor (see the module docstring).

    `overlap_replay`: in relaxed dependency, run the tree's update(t-s) and sample(t+1) in a
    second thread while train(t) runs (`_overlapped_round`). That pays only where the tree's
    calls are off the learner's XLA device and slower than a hand-off between threads: on one
    XLA:CPU device the calls run in the order they were issued anyway, so a call issued beside
    train(t) would wait for it (`experiments/bench/bench_relaxed.py` measures both).

    `replay`: the buffer the primitives were built from (a static structure): the learner
    reads how many transitions the state holds through its `size`, and a host one rebuilds
    its backend's tree at a resume (`restore`). `host_env` (a gymnasium env, whose simulators
    a checkpoint saves; None for a JAX env): what `restore` and `checkpoint_extras` need
    beyond the state."""

    name = "sequential"
    runs_seeds_at_once = False
    fused = False
    inserts_in_order = True
    spans_processes = False

    def __init__(self, prims: Primitives, schedule: Schedule, env_is_jax: bool,
                 replay_is_jax: bool = True, placement: dict[str, Any] | None = None,
                 overlap_replay: bool = False, *, replay: Replay, host_env=None):
        self.calls = HostCalls(prims, schedule, env_is_jax, replay_is_jax, placement)
        self.prims, self.schedule, self.placement = prims, schedule, self.calls.placement
        self.env_is_jax, self.replay_is_jax = env_is_jax, replay_is_jax
        self.overlap_replay = overlap_replay
        self._replay, self._host_env = replay, host_env
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
        do_learn = bool(learns(int(self._replay.size(replay)), int(iteration), self.schedule))
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

    @classmethod
    def from_parts(cls, parts) -> SequentialLoop:
        """The sequential executor of a run's `registry.Parts`."""
        return cls(parts.prims, parts.schedule, **host_settings(parts))

    # --- the executor protocol ---------------------------------------------------------------
    def init_state(self, init_one: InitOne, seed) -> TrainState:
        """The fresh state, jitted where env and replay are JAX (one compilation instead of
        many eager ones); a stack of seeds (a 1-D `seed`) only there."""
        traces = self.env_is_jax and self.replay_is_jax
        if np.ndim(seed) == 1:
            if not traces:
                raise ValueError("stacked seeds need a JAX environment and replay.backend 'jax'")
            return jax.jit(jax.vmap(lambda s: init_one(s, 0)))(jnp.asarray(seed, jnp.int32))
        if traces:
            return jax.jit(lambda s: init_one(s, 0))(jnp.int32(seed))
        return init_one(int(seed), 0)

    def checkpoint_extras(self, iteration: int) -> dict:
        """The host envs' simulators (None for JAX envs, whose state is in the pytree, and,
        with a warning, for host envs whose state cannot be saved) and the actors' state."""
        host_state = None
        if self._host_env is not None:
            try:
                host_state = self._host_env.save_state()
            except HostEnvStateError as err:
                print(f"warning: {err}; a resume restarts these envs' episodes", file=sys.stderr)
        return {"host_state": host_state, "actors_state": self.actors_state(iteration)}

    def restore(self, state: TrainState, checkpoint: Path) -> TrainState:
        """A host replay's arrays writable again and its backend's tree rebuilt; the host
        envs' simulators put back (so the run continues bit for bit), or their episodes
        restarted where the checkpoint holds none; the actors' state loaded."""
        if not self.replay_is_jax:
            state = state.replace(replay=jax.tree.map(np.array, state.replay))
            self._replay.sync_backend(state.replay)
        if self._host_env is not None:
            state = self._restore_host_envs(state, checkpoint)
        self.load_actors_state(read_actors_state(checkpoint),
                               int(np.asarray(state.iteration).reshape(-1)[0]))
        return state

    def _restore_host_envs(self, state: TrainState, checkpoint: Path) -> TrainState:
        blob = read_host_state(checkpoint)
        if blob is not None:
            try:
                self._host_env.load_state(blob)
                return state
            except HostEnvStateError as err:
                print(f"warning: {err}", file=sys.stderr)
        print(f"warning: checkpoint {checkpoint.name} holds no usable host env state; "
              "the envs restart their episodes", file=sys.stderr)
        # Restart the episodes, and mark the newest n-step entry as a (bootstrapping) episode
        # end so no return spans the restart.
        env_state, obs = self._host_env.reset(state.key)
        acc = state.nstep.replace(done=state.nstep.done.at[-1].set(True))
        start = jnp.ones((self.schedule.num_envs,), bool)
        return state.replace(env=env_state, obs=obs, nstep=acc, episode_start=start)

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

    def close(self) -> None:
        """Stop the relaxed round's replay thread (a later round starts a new one)."""
        if self._replay_thread is not None:
            self._replay_thread.shutdown()
            self._replay_thread = None
