"""The training iteration, written once: its state, its keys, its two programs and its bookkeeping.

One *iteration* is

    L times:  infer(obs) -> actions;  env_step -> transitions (through the n-step window)
    insert(the L*M transitions as one batch)                         # insert batching
    every `period` iterations, once the buffer holds `learning_starts` items, U times:
        sample(B) -> train(batch, IS weights) -> td errors -> update(priorities)
                                            (through the relaxed-dependency queue of depth s)

with U / period / (L*M) = the train ratio (SGD steps per env step). Everything an executor
needs to run it is here, as functions of explicit inputs:

* `split_iteration_key`, `rollout_keys`, `step_keys`, `sgd_keys`: the key splits, in one order;
* `actor_step`: infer -> env step -> n-step window, one actor step of the M actors;
* `sgd_step`: sample -> train -> relaxed queue -> update, one SGD step of the learner;
* `learns`: whether an iteration runs the learner; `next_state`: the state after it.

The two step functions take their primitives through a small table of *calls*
(`ActorCalls`, `LearnerCalls`): the fused executor passes the primitives themselves and traces
the steps into one program; the host executors pass jitted calls placed on devices, timed, or
bound to a host backend. The order of the calls, the values they see and so the results are
the same in every executor; how they are scheduled (a `lax.scan`, a Python loop, two threads, two
processes) is the executor's only business (`hrl.runtime.executors`).

State is one pytree (`TrainState`), so a checkpoint of it is a complete, exact resume point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hrl.config import updates_schedule
from hrl.replay.nstep import NStepState, nstep_init, nstep_push
from hrl.runtime.pending import PendingUpdates, pending_init
from hrl.runtime.primitives import Primitives, beta_at


@struct.dataclass
class TrainState:
    """Everything that changes during training (a pytree; static settings live in `Schedule`)."""

    agent: Any  # AgentState: networks, target networks, optimizer states
    replay: Any  # ReplayState: items, sum tree, min tree, ring position, max priority
    env: Any  # EnvState of the M actors
    obs: Any  # (M, *obs_shape): observations the actors act on next
    episode_start: Any  # bool (M,): `obs` is the first of an episode (resets actor noise)
    actor_carry: Any  # per-actor exploration state (OU noise; () for DQN)
    nstep: NStepState  # last n steps per actor, for n-step returns
    pending: PendingUpdates  # priority updates in flight (relaxed dependency)
    key: jax.Array  # PRNG key for everything after this point
    iteration: jax.Array  # int32 iterations done
    env_steps: jax.Array  # int32 environment steps done (all actors)
    updates: jax.Array  # int32 SGD steps done


class ActorState(NamedTuple):
    """The part of `TrainState` the actors' program owns (the fields in `TrainState`'s order,
    so a scan carry of it flattens as the state's fields do)."""

    env: Any
    obs: Any
    episode_start: Any
    actor_carry: Any
    nstep: Any


def actor_of(state: TrainState) -> ActorState:
    return ActorState(state.env, state.obs, state.episode_start, state.actor_carry, state.nstep)


class IterationInputs(NamedTuple):
    """An iteration's keys and scalars as the host executors hold them (`iteration_inputs`)."""

    key: Any  # the state's key after this iteration
    act_env: Any  # (L, 2) keys: infer and env step of each actor step
    learn_keys: Any  # (U,) keys of the SGD steps
    beta: Any
    env_steps: int
    iteration: int
    updates: int


@struct.dataclass
class ChunkOut:
    """What a chunk of T iterations reports (leading dimension T)."""

    completed: Any  # bool (T, L, M): an episode ended at this actor step
    completed_return: Any  # float32 (T, L, M): its return (0 elsewhere)
    env_steps: Any  # int32 (T,): env steps after the iteration
    trained: Any  # bool (T,): the learner ran in this iteration
    td_abs: Any  # float32 (T,): mean |TD error| of its SGD steps (0 if it did not run)
    metrics: Any  # dict of float32 (T,): the agent's metrics, averaged over its SGD steps


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Static shape of an iteration, derived from the config."""

    num_envs: int
    rollout_length: int
    updates_per_round: int
    period: int
    batch_size: int
    learning_starts: int
    staleness: int
    n_step: int
    gamma: float
    total_env_steps: int
    beta_start: float
    beta_end: float
    # Data-parallel devices: `num_envs` and `batch_size` above are then each device's share;
    # env steps are counted over all devices.
    devices: int = 1

    @classmethod
    def from_config(cls, cfg) -> Schedule:
        updates, period = updates_schedule(cfg.train.train_ratio, cfg.env_steps_per_iter)
        devices = cfg.train.devices
        return cls(
            num_envs=cfg.env.num_envs // devices,
            rollout_length=cfg.train.rollout_length,
            updates_per_round=updates,
            period=period,
            batch_size=cfg.train.batch_size // devices,
            learning_starts=cfg.train.learning_starts,
            staleness=cfg.train.staleness if cfg.train.dependency == "relaxed" else 0,
            n_step=cfg.replay.n_step,
            gamma=cfg.train.gamma,
            total_env_steps=cfg.train.total_env_steps,
            beta_start=cfg.replay.beta_start,
            beta_end=cfg.replay.beta_end,
            devices=devices,
        )

    @property
    def total_envs(self) -> int:
        """Actors over all devices (env steps per actor step)."""
        return self.num_envs * self.devices

    @property
    def env_steps_per_iter(self) -> int:
        """Env steps of one iteration over all devices."""
        return self.total_envs * self.rollout_length

    @property
    def inserts_per_iter(self) -> int:
        """Transitions one device inserts per iteration."""
        return self.num_envs * self.rollout_length


# --- keys: every executor splits them in this order ------------------------------------------
def split_iteration_key(key):
    """(the state's next key, the rollout's key, the learner's key)."""
    return jax.random.split(key, 3)


def rollout_keys(k_roll, sch: Schedule):
    """One key per actor step (L)."""
    return jax.random.split(k_roll, sch.rollout_length)


def step_keys(k):
    """An actor step's (infer key, env key)."""
    return jax.random.split(k)


def sgd_keys(k_learn, sch: Schedule):
    """One key per SGD step of a learning round (U)."""
    return jax.random.split(k_learn, sch.updates_per_round)


def actor_key(key: jax.Array, actor_index) -> jax.Array:
    """The key of one device's actors: device 0 keeps `key` (so one device reproduces the
    single-device run bit for bit); device d > 0 folds its index in."""
    if isinstance(actor_index, int) and actor_index == 0:
        return key
    return jnp.where(actor_index == 0, key, jax.random.fold_in(key, actor_index))


def iteration_inputs(sch: Schedule, key, env_steps):
    """Every key of the iteration after `key` (the same splits as the fused executor's) and
    its learner's beta, as arrays: (next key, (L, 2) actor keys, (U,) SGD keys, beta).
    The host executors jit it, so an iteration's keys cost one call."""
    key, k_roll, k_learn = split_iteration_key(key)
    act_env = jax.vmap(step_keys)(rollout_keys(k_roll, sch))
    learn = sgd_keys(k_learn, sch)
    end_steps = env_steps + sch.env_steps_per_iter
    beta = beta_at(end_steps, sch.total_env_steps, sch.beta_start, sch.beta_end)
    return key, act_env, learn, beta


# --- the actors' program -----------------------------------------------------------------------
class ActorCalls(NamedTuple):
    """How an executor calls the actors' primitives (the primitives themselves when traced)."""

    infer: Callable  # (agent, carry, obs, key, env_steps, episode_start) -> (carry, actions)
    env_step: Callable  # (env_state, actions, key) -> (env_state, EnvOut)
    after_env: Callable  # (nstep, obs, actions, EnvOut) -> (nstep, transition, episode_start)


def after_env(gamma: float, acc, obs, actions, out):
    """The n-step window after an env step: (window, the transitions leaving it, the actors
    whose next observation starts an episode). O(M n)."""
    acc, transition = nstep_push(
        acc, obs, actions, out.reward, out.next_obs_true, out.terminated, out.done, gamma,
    )
    return acc, transition, jnp.asarray(out.done, bool)


class EnvSteps(NamedTuple):
    """L env steps of M actors as `windows_after` reads them, each field (L, M, ...): the
    observations acted on, the actions, and the env's outputs the n-step window takes."""

    obs: Any
    actions: Any
    reward: Any
    next_obs_true: Any
    terminated: Any
    done: Any


def windows_after(gamma: float, acc, steps: EnvSteps):
    """`after_env` of L consecutive actor steps in one program (a `lax.scan` over them): the
    window after the last and the L*M transitions leaving it, step-major as `actor_step`'s
    emit them. Nothing of the window feeds the next inference (the episode starts are the
    env's `done`), so a host executor may step the env L times first and call this once per
    iteration instead of once per step. O(L M n)."""

    def one(acc, step: EnvSteps):
        out = StepWindow(step.reward, step.next_obs_true, step.terminated, step.done)
        acc, transition, _ = after_env(gamma, acc, step.obs, step.actions, out)
        return acc, transition

    acc, transitions = jax.lax.scan(one, acc, steps)
    return acc, jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), transitions)


class StepWindow(NamedTuple):
    """The fields of an env step's output that `after_env` reads."""

    reward: Any
    next_obs_true: Any
    terminated: Any
    done: Any


def traced_actor_calls(prims: Primitives, sch: Schedule) -> ActorCalls:
    """The actors' calls of a program traced as a whole (the fused executors)."""
    return ActorCalls(prims.infer, prims.env_step, lambda *a: after_env(sch.gamma, *a))


def actor_step(calls: ActorCalls, agent, actor: ActorState, k_act, k_env, env_steps):
    """One step of the M actors with `agent`'s weights: infer -> env step -> n-step window.
    Returns (the actors' new state, the transitions leaving the window, the env's output)."""
    actor_carry, actions = calls.infer(agent, actor.actor_carry, actor.obs, k_act, env_steps,
                                       actor.episode_start)
    env_state, out = calls.env_step(actor.env, actions, k_env)
    acc, transition, start = calls.after_env(actor.nstep, actor.obs, actions, out)
    return ActorState(env_state, out.obs, start, actor_carry, acc), transition, out


# --- the learner's program ---------------------------------------------------------------------
class LearnerCalls(NamedTuple):
    """How an executor calls the learner's primitives."""

    sample: Callable  # (replay, key, beta) -> Sample
    train: Callable  # (agent, items, weights) -> (agent, td, logs)
    push: Callable  # (pending, indices, td) -> (pending, (indices, td, valid)) leaving it
    update: Callable  # (replay, indices, td, valid) -> replay; writes nothing unless valid


def sgd_step(calls: LearnerCalls, agent, replay, pending, key, beta):
    """One SGD step: sample -> train -> relaxed queue -> update of the update leaving the queue
    (this step's own at depth 0). Returns (agent, replay, pending, td errors, train's logs).
    Costs one sample of B (O(B log_K N)), one train step, one update of B."""
    batch = calls.sample(replay, key, beta)
    agent, td_errors, logs = calls.train(agent, batch.items, batch.weights)
    pending, (indices, td_out, valid) = calls.push(pending, batch.indices, td_errors)
    replay = calls.update(replay, indices, td_out, valid)
    return agent, replay, pending, td_errors, logs


def learns(held, iteration, sch: Schedule):
    """Whether the iteration after `iteration` iterations runs the learner: the buffer holds
    `learning_starts` transitions and the iteration ends a period. Works on arrays (traced)
    and on host ints alike."""
    return (held >= sch.learning_starts) & ((iteration + 1) % sch.period == 0)


def next_state(state: TrainState, actor: ActorState, agent, replay, pending, key, iteration,
               env_steps, updates) -> TrainState:
    """`state` after an iteration: everything it changed, the counters as given."""
    return state.replace(
        agent=agent,
        replay=replay,
        env=actor.env,
        obs=actor.obs,
        episode_start=actor.episode_start,
        actor_carry=actor.actor_carry,
        nstep=actor.nstep,
        pending=pending,
        key=key,
        iteration=iteration,
        env_steps=env_steps,
        updates=updates,
    )


# --- the first state ----------------------------------------------------------------------------
def init_train_state(
    prims: Primitives, replay, agent, spec, schedule: Schedule, example_transition, seed: int,
    actor_index=0,
) -> TrainState:
    """Fresh state: networks, empty buffer, reset envs; n-1 warm-up steps fill the n-step
    window (they count as env steps; their transitions start the buffer one step later).

    With a JAX env and replay this traces: `seed` may be a traced int32, so the whole
    function jits (one compilation instead of many eager ones) and vmaps over seeds.
    `actor_index`: which device's actors (see `actor_key`); the networks and the loop key
    depend on `seed` only, so they are the same on every device."""
    root = jax.random.PRNGKey(seed)
    k_agent, k_env, k_warm, k_loop = jax.random.split(root, 4)
    k_env, k_warm = actor_key(k_env, actor_index), actor_key(k_warm, actor_index)
    agent_state = agent.init(k_agent)
    env_state, obs = prims.env_reset(k_env)
    calls = traced_actor_calls(prims, schedule)
    if not spec.is_jax:  # a host env steps on host actions
        calls = calls._replace(env_step=lambda state, actions, key: prims.env_step(
            state, np.asarray(actions), key))
    actor = ActorState(env_state, obs, jnp.ones((schedule.num_envs,), bool),
                       agent.init_carry(schedule.num_envs),
                       nstep_init(example_transition, schedule.n_step, schedule.num_envs))
    env_steps = 0
    for k in jax.random.split(k_warm, max(schedule.n_step - 1, 1))[: schedule.n_step - 1]:
        k_act, k_step = step_keys(k)
        actor, _, _ = actor_step(calls, agent_state, actor, k_act, k_step, jnp.int32(env_steps))
        env_steps += schedule.total_envs
    return TrainState(
        agent=agent_state,
        replay=replay.init(example_transition),
        env=actor.env,
        obs=actor.obs,
        episode_start=actor.episode_start,
        actor_carry=actor.actor_carry,
        nstep=actor.nstep,
        pending=pending_init(schedule.staleness, schedule.batch_size),
        key=k_loop,
        iteration=jnp.int32(0),
        env_steps=jnp.int32(env_steps),
        updates=jnp.int32(0),
    )
