"""The fused executor: the whole iteration traced into one `lax.scan`, one jit call per chunk.

Everything runs on one JAX device; the host wakes up only between chunks (progress, logging,
checkpoints). `DataParallelLoop` (`data_parallel.py`) runs this same program on every device
of a mesh: its sharded replay's `size` counts every shard, and `_actor_index` (below) says
which device's actors a program steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hrl.replay.interface import Replay
from hrl.runtime.executors.base import InitOne, StateHoldsAll
from hrl.runtime.iteration import (
    ChunkOut,
    LearnerCalls,
    Schedule,
    TrainState,
    actor_key,
    actor_of,
    actor_step,
    learns,
    next_state,
    rollout_keys,
    sgd_keys,
    sgd_step,
    split_iteration_key,
    step_keys,
    traced_actor_calls,
)
from hrl.runtime.pending import pending_push
from hrl.runtime.primitives import Primitives, beta_at


def _mean_metrics(metrics):
    return jax.tree.map(lambda m: jnp.mean(jnp.asarray(m, jnp.float32)), metrics)


class FusedLoop(StateHoldsAll):
    """All five primitives on one JAX device, fused into one jitted `lax.scan` per chunk.

    `run(state, n)` compiles once per distinct `n`; `run_seeds` runs a stack of independent
    states (leading axis: seed) as one vmapped program. `replay`: the buffer the primitives
    were built from (a static structure): its `size(state)` says how many transitions the
    state holds, and its capacity is the index past its end that a relaxed queue's empty
    slots write to."""

    name = "fused"
    runs_seeds_at_once = True
    fused = True
    inserts_in_order = True
    spans_processes = False

    def __init__(self, prims: Primitives, schedule: Schedule, replay: Replay):
        self.prims = prims
        self.schedule = schedule
        self.replay = replay
        capacity = replay.capacity
        self._actor_calls = traced_actor_calls(prims, schedule)
        self._learner_calls = LearnerCalls(
            sample=prims.sample,
            train=prims.train,
            push=pending_push,
            # An empty queue slot (the first s steps) writes nothing: out-of-range rows are
            # dropped by every replay's update.
            update=lambda replay, indices, td, valid: prims.update(
                replay, jnp.where(valid, indices, jnp.int32(capacity)), td),
        )
        self._run = jax.jit(self._run_chunk, static_argnums=1)
        self._run_seeds = jax.jit(
            lambda state, n: jax.vmap(lambda s: self._run_chunk(s, n))(state), static_argnums=1
        )

    @classmethod
    def from_parts(cls, parts) -> FusedLoop:
        """The fused executor of a run's `registry.Parts`."""
        return cls(parts.prims, parts.schedule, parts.replay)

    # --- what a data-parallel loop changes (`DataParallelLoop`) ------------------------
    def _actor_index(self):
        """Which device's actors this program steps (0 on one device)."""
        return 0

    # --- the iteration's two programs, scheduled as scans --------------------------------
    def _learn(self, agent, replay, pending, key, env_steps):
        sch = self.schedule

        def one_step(carry, k):
            agent, replay, pending, env_steps = carry
            beta = beta_at(env_steps, sch.total_env_steps, sch.beta_start, sch.beta_end)
            agent, replay, pending, td, metrics = sgd_step(self._learner_calls, agent, replay,
                                                           pending, k, beta)
            return (agent, replay, pending, env_steps), (jnp.mean(jnp.abs(td)), metrics)

        (agent, replay, pending, _), (td_abs, metrics) = jax.lax.scan(
            one_step, (agent, replay, pending, env_steps), sgd_keys(key, sch))
        return agent, replay, pending, jnp.mean(td_abs), _mean_metrics(metrics)

    def _iteration(self, state: TrainState, _):
        sch, p = self.schedule, self.prims
        key, k_roll, k_learn = split_iteration_key(state.key)
        k_roll = actor_key(k_roll, self._actor_index())

        def one_actor_step(carry, k):
            actor, env_steps = carry
            k_act, k_env = step_keys(k)
            actor, transition, out = actor_step(self._actor_calls, state.agent, actor, k_act,
                                                k_env, env_steps)
            return (actor, env_steps + sch.total_envs), (transition, out.completed,
                                                         out.completed_return)

        (actor, env_steps), (transitions, completed, returns) = jax.lax.scan(
            one_actor_step, (actor_of(state), state.env_steps), rollout_keys(k_roll, sch))
        batch_of = lambda x: x.reshape((sch.inserts_per_iter,) + x.shape[2:])  # noqa: E731
        replay = p.insert(state.replay, jax.tree.map(batch_of, transitions))

        do_learn = learns(self.replay.size(replay), state.iteration, sch)
        learn = lambda: self._learn(state.agent, replay, state.pending, k_learn, env_steps)  # noqa: E731
        metrics_shape = jax.eval_shape(learn)[-1]

        def skip():
            zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), metrics_shape)
            return state.agent, replay, state.pending, jnp.float32(0), zeros

        agent, replay, pending, td_abs, metrics = jax.lax.cond(do_learn, learn, skip)
        new_state = next_state(
            state, actor, agent, replay, pending, key, state.iteration + 1, env_steps,
            state.updates + jnp.where(do_learn, sch.updates_per_round, 0))
        out = ChunkOut(completed=completed, completed_return=returns, env_steps=env_steps,
                       trained=do_learn, td_abs=td_abs, metrics=metrics)
        return new_state, out

    def _run_chunk(self, state: TrainState, num_iters: int):
        return jax.lax.scan(self._iteration, state, None, length=num_iters)

    # --- the executor protocol -----------------------------------------------------------
    def init_state(self, init_one: InitOne, seed) -> TrainState:
        """The fresh state in one jitted call: `seed` an int, or a 1-D array of seeds stacked
        on a leading axis (vmapped, for `run_seeds`)."""
        if jnp.ndim(seed) == 1:
            return jax.jit(jax.vmap(lambda s: init_one(s, 0)))(jnp.asarray(seed, jnp.int32))
        return jax.jit(lambda s: init_one(s, 0))(jnp.int32(seed))

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations in one jit call (compiled once per distinct chunk length)."""
        state, out = self._run(state, num_iters)
        return state, jax.device_get(out)

    def run_seeds(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`run` for a stack of independent states (leading axis: seed), in one jit call."""
        state, out = self._run_seeds(state, num_iters)
        return state, jax.device_get(out)

    def close(self) -> None:
        """Nothing to release."""
