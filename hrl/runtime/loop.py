"""The training loop: M actors, one learner, one prioritized replay buffer.

One *iteration* is

    L times:  infer(obs) -> actions;  env_step -> transitions (through the n-step window)
    insert(the L*M transitions as one batch)                         # insert batching
    every `period` iterations, once the buffer holds `learning_starts` items, U times:
        sample(B) -> train(batch, IS weights) -> td errors -> update(priorities)
                                            (through the relaxed-dependency queue of depth s)

with U / period / (L*M) = the train ratio (SGD steps per env step). Two drivers run exactly
this iteration:

* `FusedLoop`: everything on one JAX device, the whole iteration traced into one `lax.scan`;
  `run(state, n)` is one jit call for n iterations (a *chunk*), so the host only wakes up
  between chunks for progress, logging and checkpoints.
* `HostLoop`: a Python loop calling each primitive as its own jitted function (or host
  function: gymnasium envs, host replay backends), each on the device the `placement` names.
  Same keys, same order of operations; it is the template the mapping framework instantiates.

State is one pytree (`TrainState`), so a checkpoint of it is a complete, exact resume point.
"""

from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import SingleDeviceSharding

from hrl.config import RunConfig, updates_schedule
from hrl.replay.nstep import NStepState, nstep_init, nstep_push
from hrl.runtime import rate_limit as rl
from hrl.runtime.packing import TreePacking
from hrl.runtime.pending import HostPendingQueue, PendingUpdates, pending_init, pending_push
from hrl.runtime.primitives import PRIMITIVES, Primitives, beta_at
from hrl.runtime.rate_limit import LimiterState


@struct.dataclass
class TrainState:
    """Everything that changes during training (a pytree; static settings live in the loop)."""

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
    """The part of `TrainState` the actors' program owns."""

    env: Any
    obs: Any
    episode_start: Any
    actor_carry: Any
    nstep: Any


class IterationInputs(NamedTuple):
    """An iteration's keys and scalars on the host (`HostLoop._inputs`)."""

    key: Any  # the state's key after this iteration
    act_env: Any  # (L, 2) keys: infer and env step of each actor step
    learn_keys: Any  # (U,) keys of the SGD steps
    beta: Any
    env_steps: int
    iteration: int
    updates: int


def actor_of(state: TrainState) -> ActorState:
    return ActorState(state.env, state.obs, state.episode_start, state.actor_carry, state.nstep)


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
    # Data-parallel devices (`DataParallelLoop`): `num_envs` and `batch_size` above are then
    # each device's share; env steps are counted over all devices.
    devices: int = 1

    @classmethod
    def from_config(cls, cfg: RunConfig) -> Schedule:
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


def actor_key(key: jax.Array, actor_index) -> jax.Array:
    """The key of one device's actors: device 0 keeps `key` (so one device reproduces the
    single-device run bit for bit); device d > 0 folds its index in."""
    if isinstance(actor_index, int) and actor_index == 0:
        return key
    return jnp.where(actor_index == 0, key, jax.random.fold_in(key, actor_index))


def init_train_state(
    prims: Primitives, replay, agent, spec, schedule: Schedule, example_transition, seed: int,
    actor_index=0,
) -> TrainState:
    """Fresh state: networks, empty buffer, reset envs; n-1 warm-up steps fill the n-step
    window (they count as env steps; their transitions start the buffer one step later).

    With a JAX env and replay this traces: `seed` may be a traced int32, so the whole
    function jits (one compilation instead of ~150 eager ones) and vmaps over seeds.
    `actor_index`: which device's actors (see `actor_key`); the networks and the loop key
    depend on `seed` only, so they are the same on every device."""
    root = jax.random.PRNGKey(seed)
    k_agent, k_env, k_warm, k_loop = jax.random.split(root, 4)
    k_env, k_warm = actor_key(k_env, actor_index), actor_key(k_warm, actor_index)
    agent_state = agent.init(k_agent)
    env_state, obs = prims.env_reset(k_env)
    acc = nstep_init(example_transition, schedule.n_step, schedule.num_envs)
    carry = agent.init_carry(schedule.num_envs)
    start = jnp.ones((schedule.num_envs,), bool)
    env_steps = 0
    for k in jax.random.split(k_warm, max(schedule.n_step - 1, 1))[: schedule.n_step - 1]:
        k_act, k_step = jax.random.split(k)
        carry, actions = prims.infer(agent_state, carry, obs, k_act, jnp.int32(env_steps), start)
        if not spec.is_jax:
            actions = np.asarray(actions)
        env_state, out = prims.env_step(env_state, actions, k_step)
        acc, _ = nstep_push(
            acc, obs, actions, out.reward, out.next_obs_true, out.terminated, out.done,
            schedule.gamma,
        )
        obs, start = out.obs, jnp.asarray(out.done, bool)
        env_steps += schedule.total_envs
    return TrainState(
        agent=agent_state,
        replay=replay.init(example_transition),
        env=env_state,
        obs=obs,
        episode_start=start,
        actor_carry=carry,
        nstep=acc,
        pending=pending_init(schedule.staleness, schedule.batch_size),
        key=k_loop,
        iteration=jnp.int32(0),
        env_steps=jnp.int32(env_steps),
        updates=jnp.int32(0),
    )


def _mean_metrics(metrics):
    return jax.tree.map(lambda m: jnp.mean(jnp.asarray(m, jnp.float32)), metrics)


class FusedLoop:
    """All five primitives on one JAX device, fused into one jitted `lax.scan` per chunk."""

    fused = True

    def __init__(self, prims: Primitives, schedule: Schedule):
        self.prims = prims
        self.schedule = schedule
        self._run = jax.jit(self._run_chunk, static_argnums=1)
        # Independent seeds: the same scan, vmapped over a leading axis of the state.
        self._run_seeds = jax.jit(
            lambda state, n: jax.vmap(lambda s: self._run_chunk(s, n))(state), static_argnums=1
        )

    # --- the learner: U x (sample -> train -> update) -------------------------------
    def _sgd_step(self, carry, key):
        agent, replay, pending, env_steps = carry
        sch, p = self.schedule, self.prims
        beta = beta_at(env_steps, sch.total_env_steps, sch.beta_start, sch.beta_end)
        batch = p.sample(replay, key, beta)
        agent, td_errors, metrics = p.train(agent, batch.items, batch.weights)
        pending, (indices, td_out, valid) = pending_push(pending, batch.indices, td_errors)
        # An empty queue slot (the first s steps) writes nothing: out-of-range rows are dropped.
        indices = jnp.where(valid, indices, jnp.int32(self._dropped_index(replay)))
        replay = p.update(replay, indices, td_out)
        return (agent, replay, pending, env_steps), (jnp.mean(jnp.abs(td_errors)), metrics)

    # --- what a data-parallel loop changes (`DataParallelLoop`) ------------------------
    def _dropped_index(self, replay) -> int:
        """An index every replay update ignores (past the end of the buffer)."""
        return replay.tree.capacity

    def _held(self, replay):
        """Transitions the replay holds (over all devices)."""
        return replay.size

    def _actor_index(self):
        """Which device's actors this program steps (0 on one device)."""
        return 0

    def _learn(self, agent, replay, pending, key, env_steps):
        keys = jax.random.split(key, self.schedule.updates_per_round)
        (agent, replay, pending, _), (td_abs, metrics) = jax.lax.scan(
            self._sgd_step, (agent, replay, pending, env_steps), keys
        )
        return agent, replay, pending, jnp.mean(td_abs), _mean_metrics(metrics)

    # --- one iteration ----------------------------------------------------------------
    def _iteration(self, state: TrainState, _):
        sch, p = self.schedule, self.prims
        key, k_roll, k_learn = jax.random.split(state.key, 3)
        k_roll = actor_key(k_roll, self._actor_index())

        def actor_step(carry, k):
            env_state, obs, start, actor_carry, acc, env_steps = carry
            k_act, k_env = jax.random.split(k)
            actor_carry, actions = p.infer(state.agent, actor_carry, obs, k_act, env_steps, start)
            env_state, out = p.env_step(env_state, actions, k_env)
            acc, transition = nstep_push(
                acc, obs, actions, out.reward, out.next_obs_true, out.terminated, out.done,
                sch.gamma,
            )
            carry = (env_state, out.obs, out.done, actor_carry, acc, env_steps + sch.total_envs)
            return carry, (transition, out.completed, out.completed_return)

        carry = (state.env, state.obs, state.episode_start, state.actor_carry, state.nstep,
                 state.env_steps)
        (env_state, obs, start, actor_carry, acc, env_steps), (transitions, completed, returns) = (
            jax.lax.scan(actor_step, carry, jax.random.split(k_roll, sch.rollout_length))
        )
        batch_of = lambda x: x.reshape((sch.inserts_per_iter,) + x.shape[2:])
        replay = p.insert(state.replay, jax.tree.map(batch_of, transitions))

        do_learn = (self._held(replay) >= sch.learning_starts) & (
            (state.iteration + 1) % sch.period == 0
        )
        metrics_shape = jax.eval_shape(
            lambda: self._learn(state.agent, replay, state.pending, k_learn, env_steps)
        )[-1]

        def skip():
            zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), metrics_shape)
            return state.agent, replay, state.pending, jnp.float32(0), zeros

        agent, replay, pending, td_abs, metrics = jax.lax.cond(
            do_learn,
            lambda: self._learn(state.agent, replay, state.pending, k_learn, env_steps),
            skip,
        )
        new_state = state.replace(
            agent=agent,
            replay=replay,
            env=env_state,
            obs=obs,
            episode_start=start,
            actor_carry=actor_carry,
            nstep=acc,
            pending=pending,
            key=key,
            iteration=state.iteration + 1,
            env_steps=env_steps,
            updates=state.updates + jnp.where(do_learn, sch.updates_per_round, 0),
        )
        out = ChunkOut(
            completed=completed,
            completed_return=returns,
            env_steps=env_steps,
            trained=do_learn,
            td_abs=td_abs,
            metrics=metrics,
        )
        return new_state, out

    def _run_chunk(self, state: TrainState, num_iters: int):
        return jax.lax.scan(self._iteration, state, None, length=num_iters)

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations in one jit call (compiled once per distinct chunk length)."""
        state, out = self._run(state, num_iters)
        return state, jax.device_get(out)

    def run_seeds(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`run` for a stack of independent states (leading axis: seed), in one jit call."""
        state, out = self._run_seeds(state, num_iters)
        return state, jax.device_get(out)


def _on_cpu(sharding) -> bool:
    return all(d.platform == "cpu" for d in sharding.device_set)


def put_for_call(tree, sharding):
    """`tree`'s leaves ready for a jitted call on `sharding`'s device, moved the cheapest way.

    Leaves already there are passed as they are: `jax.device_put` costs about 10 us per array
    even then (148 us for the replay state's 15: experiments/bench_call_overhead.py), against
    well under 1 us to compare shardings. So are host values (NumPy arrays, scalars) when an
    argument already sits there: a jitted call runs where its placed arguments are and copies
    host values there itself, while each `device_put` call costs tens of microseconds in
    Python (with the tree on cpu:1, a gymnasium run once spent half its iteration in them).
    Between two CPU devices an array crosses the same way, as a view of its host memory, which
    the call copies in or aliases: `hrl profile` times that move (`link:cpu-device`). The rest
    goes through one `device_put`."""
    leaves, treedef = jax.tree.flatten(tree)
    there = [isinstance(leaf, jax.Array) and leaf.sharding == sharding for leaf in leaves]
    anchored = any(there)
    to_cpu = anchored and _on_cpu(sharding)
    away = []
    for i, leaf in enumerate(leaves):
        if there[i]:
            continue
        if not isinstance(leaf, jax.Array):
            if not anchored:
                away.append(i)
        elif to_cpu and _on_cpu(leaf.sharding):
            leaves[i] = np.asarray(leaf)
        else:
            away.append(i)
    if away:
        for i, leaf in zip(away, jax.device_put([leaves[i] for i in away], sharding),
                           strict=True):
            leaves[i] = leaf
    return jax.tree.unflatten(treedef, leaves)


class HostTrain(NamedTuple):
    """The SGD step as the host calls it (`HostLoop`, and `hrl profile`, which times it so):
    the agent packed into one vector per dtype and the metrics into one
    (`hrl.runtime.packing`), so a call returns five arrays instead of the agent's every leaf;
    |td| is reduced where td lives, so only a scalar of it crosses back per step."""

    step: Any  # jitted (packed agent, items, weights) -> (packed agent, td, metrics, mean |td|)
    pack_agent: Any  # jitted agent -> packed agent
    unpack_agent: Any  # jitted packed agent -> agent
    stack_logs: Any  # jitted (U mean |td|s, U packed metrics) -> their stacks, one array each
    metrics: TreePacking  # unpacks the metrics on the host

    @classmethod
    def build(cls, train, agent, items, weights) -> HostTrain:
        agent_packing = TreePacking(agent)
        metrics = TreePacking(jax.eval_shape(train, agent, items, weights)[2])

        def step(flat_agent, batch, weights):
            agent, td, out = train(agent_packing.unpack(flat_agent), batch, weights)
            return agent_packing.pack(agent), td, metrics.pack(out), jnp.mean(jnp.abs(td))

        def stack_logs(td_means, rows):
            return jnp.stack(td_means), jax.tree.map(lambda *xs: jnp.stack(xs), *rows)

        return cls(jax.jit(step), jax.jit(agent_packing.pack), jax.jit(agent_packing.unpack),
                   jax.jit(stack_logs), metrics)


class HostLoop:
    """The same iteration, one primitive call at a time, each on its own device or backend.

    `placement` maps a primitive name (`env`, `infer`, `sample`, `update`, `train`) to a
    `jax.Device`; its inputs are moved there before the call (that move is the link the
    mapping framework costs: weights to the inference device, the batch to the trainer,
    TD errors back to the replay's device). Unplaced primitives run where their inputs are.
    Host-side primitives (gymnasium envs, host replay backends) are called as they are.

    The glue between the primitive calls is jitted (every key and the beta of an iteration in
    one call, the n-step window, the transitions' concatenation, the relaxed queue) and what the
    host needs back (episode ends, TD means, metrics) crosses in one transfer per iteration;
    the results are bit for bit those of running the same glue op by op.
    """

    fused = False

    def __init__(
        self,
        prims: Primitives,
        schedule: Schedule,
        env_is_jax: bool,
        replay_is_jax: bool = True,
        placement: dict[str, Any] | None = None,
        overlap_replay: bool = False,
    ):
        placement = dict(placement or {})
        unknown = set(placement) - set(PRIMITIVES)
        if unknown:
            raise ValueError(f"placement: unknown primitives {sorted(unknown)}; use {PRIMITIVES}")
        self.prims = prims
        self.schedule = schedule
        self.env_is_jax = env_is_jax
        self.placement = placement
        # What `_put` compares each argument's sharding with, built once rather than per call.
        self._shardings = {name: SingleDeviceSharding(device)
                           for name, device in placement.items()}
        if not replay_is_jax:  # a host backend places itself (its own device option)
            for name in ("sample", "update"):
                if name in placement:
                    raise ValueError(
                        f"placement: {name!r} runs on the host replay backend; choose its "
                        "device through the backend, not the placement"
                    )
        sch = schedule
        self._relaxed = sch.staleness > 0
        # Relaxed dependency with the tree off the learner's device: its calls run in a thread
        # of their own beside train(t) (`_relaxed_step`). On the learner's device, or for a
        # tree whose calls are a few microseconds, the hand-off costs more than it hides.
        self.overlap_replay = overlap_replay
        self._infer = jax.jit(prims.infer)
        self._env_step = jax.jit(prims.env_step) if env_is_jax else prims.env_step
        if replay_is_jax:
            # The loop owns the replay state it threads through a chunk (`_own` copies the
            # caller's once at the start), so insert and update write in place: without
            # donation every call copied the whole buffer (155 against 34 us per update at
            # capacity 50k: experiments/bench_call_overhead.py).
            self._own = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
            self._insert = jax.jit(prims.insert, donate_argnums=0)
            self._sample = jax.jit(prims.sample)
            self._update = jax.jit(prims.update, donate_argnums=0)
        else:
            self._own = lambda tree: tree
            self._insert, self._sample, self._update = prims.insert, prims.sample, prims.update

        # The glue between primitives is jitted into as few calls as possible, and what the
        # host needs from the device comes back in one transfer per iteration: eager jnp ops
        # and per-value syncs cost far more than the glue's arithmetic (measured: the host
        # loop's bookkeeping outweighed its primitives several times over).
        def iteration_inputs(key, env_steps):
            """Every key of the iteration (the same splits, in the same order, as
            `FusedLoop._iteration`) and the beta of its learner, in one call."""
            key, k_roll, k_learn = jax.random.split(key, 3)
            act_env = jax.vmap(jax.random.split)(jax.random.split(k_roll, sch.rollout_length))
            learn = jax.random.split(k_learn, sch.updates_per_round)
            end_steps = env_steps + sch.env_steps_per_iter
            beta = beta_at(end_steps, sch.total_env_steps, sch.beta_start, sch.beta_end)
            return key, act_env, learn, beta

        def after_env(acc, obs, actions, out):
            acc, transition = nstep_push(
                acc, obs, actions, out.reward, out.next_obs_true, out.terminated, out.done,
                sch.gamma,
            )
            return acc, transition, jnp.asarray(out.done, bool)

        self._iteration_inputs = jax.jit(iteration_inputs)
        self._after_env = jax.jit(after_env)
        self._concat = jax.jit(
            lambda steps: jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=0), *steps)
        )
        self._train = None  # HostTrain, built for the agent's structure at the first round
        # Relaxed dependency: the thread that writes update(t-s) and draws sample(t+1) while
        # the calling thread trains step t (started at the first relaxed round).
        self._replay_thread: ThreadPoolExecutor | None = None
        self.timings = {name: 0.0 for name in PRIMITIVES}  # seconds spent per primitive

    def _put(self, name, tree):
        """`tree` as the call placed for `name` takes it (`put_for_call`)."""
        sharding = self._shardings.get(name)
        return tree if sharding is None else put_for_call(tree, sharding)

    def _timed(self, name, fn, *args, wait: bool = True):
        start = time.perf_counter()
        result = fn(*self._put(name, args))
        if wait:
            jax.block_until_ready(result)
        self.timings[name] += time.perf_counter() - start
        return result

    # An iteration is two programs, written once: the actors' (infer -> env step -> n-step)
    # and the learner's (insert -> U x (sample -> train -> relaxed queue -> update)). This class
    # runs them one after the other; `PipelinedLoop` runs them at the same time.
    def _inputs(self, state: TrainState) -> IterationInputs:
        """Every key and scalar of the iteration after `state`, on the host in one transfer."""
        key, act_env, learn_keys, beta = self._iteration_inputs(state.key, state.env_steps)
        act_env, learn_keys, beta, env_steps, iteration, updates = jax.device_get(
            (act_env, learn_keys, beta, state.env_steps, state.iteration, state.updates)
        )
        return IterationInputs(key, act_env, learn_keys, beta, int(env_steps), int(iteration),
                               int(updates))

    def _inputs_from(self, key, env_steps: int, iteration: int) -> IterationInputs:
        """`_inputs` from the key chain alone (the actors' side has no TrainState)."""
        key, act_env, learn_keys, beta = self._iteration_inputs(key, np.int32(env_steps))
        act_env, learn_keys, beta = jax.device_get((act_env, learn_keys, beta))
        return IterationInputs(key, act_env, learn_keys, beta, env_steps, iteration, 0)

    def _act(self, agent, actor: ActorState, act_env, env_steps: int):
        """The actors' program: L x (infer -> env step -> n-step window) with `agent`'s weights.
        Returns the actors' new state, the L*M transitions as one batch, the episode ends."""
        sch = self.schedule
        env_state, obs, start, actor_carry, acc = actor
        transitions, completed, returns = [], [], []
        for k_act, k_env in act_env:
            actor_carry, actions = self._timed(
                "infer", self._infer, agent, actor_carry, obs, k_act, np.int32(env_steps), start,
            )
            if not self.env_is_jax:
                actions = np.asarray(actions)
            env_state, out = self._timed("env", self._env_step, env_state, actions, k_env)
            acc, transition, start = self._after_env(acc, obs, actions, out)
            obs = out.obs
            env_steps += sch.num_envs
            transitions.append(transition)
            completed.append(out.completed)
            returns.append(out.completed_return)
        actor = ActorState(env_state, obs, start, actor_carry, acc)
        return actor, self._concat(transitions), completed, returns, env_steps

    def _relaxed_step(self, packed, sample, replay, queue: HostPendingQueue, key, beta):
        """One SGD step in relaxed dependency: train(t) in this thread while a second thread
        writes update(t-s) and then draws sample(t+1) (none when `key` is None), which need
        nothing from train(t). The tree must be off the learner's XLA device: XLA:CPU runs a
        device's calls in the order they were issued (async dispatch), so a call on it would
        wait for train(t) anyway. A hand-off to the thread and back costs about 55 us on a
        2-core VM (experiments/bench_handoff.py), so this pays only where the tree's calls
        are slow (experiments/bench_relaxed.py). Same calls on the same values as
        `FusedLoop._sgd_step`, so the results are the same bit for bit."""
        if self._replay_thread is None:
            self._replay_thread = ThreadPoolExecutor(1, thread_name_prefix="hrl-replay")
        job = self._replay_thread.submit(self._update_then_sample, replay, *queue.leaving(),
                                         key, beta)
        try:
            trained = self._timed("train", self._train.step, packed, sample.items,
                                  sample.weights)
        finally:
            replay, following = job.result()  # never leave the replay thread mid-call
        return (*trained, replay, following)

    def _update_then_sample(self, replay, indices, td_errors, valid: bool, key, beta):
        """The replay's side of an SGD step: the update (if `valid`), then the next sample
        (none when `key` is None). Returns (replay, sample)."""
        if valid:
            replay = self._timed("update", self._update, replay, indices, td_errors)
        following = None if key is None else self._timed(
            "sample", self._sample, replay, key, beta)
        return replay, following

    def close(self) -> None:
        """Stop the relaxed dependency's replay thread (a later round starts a new one)."""
        if self._replay_thread is not None:
            self._replay_thread.shutdown()
            self._replay_thread = None

    def _learn(self, agent, replay, pending, batch, learn_keys, beta, iteration: int):
        """The learner's program: insert the batch, then (on a learning iteration) U x
        (sample -> train -> relaxed queue -> update). Returns what it changed and its logs.
        `replay` is consumed (a JAX replay is updated in place)."""
        sch = self.schedule
        replay = self._timed("update", self._insert, replay, batch)
        do_learn = (
            int(replay.size) >= sch.learning_starts and (int(iteration) + 1) % sch.period == 0
        )
        td_abs, metric_rows = [], []
        if do_learn:
            sample = self._timed("sample", self._sample, replay, learn_keys[0], beta)
            if self._train is None:
                self._train = HostTrain.build(self.prims.train, agent, sample.items,
                                              sample.weights)
            packed = self._timed("train", self._train.pack_agent, agent)
            # The queue stays on the host from round to round; `_settle` turns it back into
            # the state's `PendingUpdates` at the end of a chunk (once per round, the two
            # transfers cost relaxed runs 0.1-0.4 ms per iteration at batch 32).
            queue = None
            if self._relaxed:
                queue = (pending if isinstance(pending, HostPendingQueue)
                         else HostPendingQueue(pending))
            for step in range(len(learn_keys)):
                key = None if step + 1 == len(learn_keys) else learn_keys[step + 1]
                if self._relaxed and self.overlap_replay:
                    packed, td, metrics, td_mean, replay, following = self._relaxed_step(
                        packed, sample, replay, queue, key, beta)
                    queue.push(sample.indices, td)
                elif self._relaxed:  # the same calls in order: train, update(t-s), sample
                    packed, td, metrics, td_mean = self._timed(
                        "train", self._train.step, packed, sample.items, sample.weights,
                        wait=False)
                    replay, following = self._update_then_sample(replay, *queue.leaving(),
                                                                 key, beta)
                    queue.push(sample.indices, td)
                else:  # depth 0: pending_push passes the update straight through
                    packed, td, metrics, td_mean = self._timed(
                        "train", self._train.step, packed, sample.items, sample.weights
                    )
                    replay, following = self._update_then_sample(replay, sample.indices, td,
                                                                 True, key, beta)
                td_abs.append(td_mean)
                metric_rows.append(metrics)
                sample = following
            if self._relaxed:
                pending = queue
            agent = self._timed("train", self._train.unpack_agent, packed)
            # The round's logs as two arrays, so they cross to the host in one transfer.
            td_abs, metric_rows = self._train.stack_logs(td_abs, metric_rows)
        return agent, replay, pending, do_learn, td_abs, metric_rows

    def _settle(self, state: TrainState) -> TrainState:
        """`state` with its relaxed queue as `PendingUpdates` again (a chunk's end), on the
        update's device, where it lives with the tree."""
        if not isinstance(state.pending, HostPendingQueue):
            return state
        return state.replace(pending=jax.device_put(state.pending.to_pending(),
                                                    self._shardings.get("update")))

    def _finish(self, state: TrainState, inputs: IterationInputs, actor: ActorState, agent,
                replay, pending, env_steps: int, do_learn: bool, completed, returns, td_abs,
                metric_rows):
        """The iteration's new state and its log row (host values, one transfer each way)."""
        sch = self.schedule
        iteration, updates, key = inputs.iteration, inputs.updates, inputs.key
        completed, returns, td_abs, metric_rows = jax.device_get(
            (completed, returns, td_abs, metric_rows)
        )
        # The three counters go back to the device in one transfer.
        counters = jax.device_put((
            np.int32(iteration + 1),
            np.int32(env_steps),
            np.int32(updates + (sch.updates_per_round if do_learn else 0)),
        ))
        env_state, obs, start, actor_carry, acc = actor
        new_state = state.replace(
            agent=agent,
            replay=replay,
            env=env_state,
            obs=obs,
            episode_start=start,
            actor_carry=actor_carry,
            nstep=acc,
            pending=pending,
            key=key,
            iteration=counters[0],
            env_steps=counters[1],
            updates=counters[2],
        )
        if do_learn:  # each metric's mean over the round's SGD steps
            metrics = jax.tree.map(lambda x: np.float32(np.mean(np.asarray(x, np.float32))),
                                   self._train.metrics.unpack(metric_rows))
        else:
            metrics = None
        return new_state, (
            np.stack([np.asarray(c) for c in completed]),
            np.stack([np.asarray(r) for r in returns]),
            env_steps,
            do_learn,
            np.float32(np.mean(td_abs)) if do_learn else np.float32(0),
            metrics,
        )

    def _iteration(self, state: TrainState):
        inputs = self._inputs(state)
        actor, batch, completed, returns, env_steps = self._act(
            state.agent, actor_of(state), inputs.act_env, inputs.env_steps
        )
        agent, replay, pending, do_learn, td_abs, metric_rows = self._learn(
            state.agent, state.replay, state.pending, batch, inputs.learn_keys, inputs.beta,
            inputs.iteration,
        )
        return self._finish(state, inputs, actor, agent, replay, pending, env_steps, do_learn,
                            completed, returns, td_abs, metric_rows)

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        rows = []
        state = state.replace(replay=self._own(state.replay))  # the caller's stays valid
        for _ in range(num_iters):
            state, row = self._iteration(state)
            rows.append(row)
        return self._settle(state), self._stack(rows)

    @staticmethod
    def _stack(rows) -> ChunkOut:
        completed, returns, env_steps, trained, td_abs, metrics = zip(*rows, strict=True)
        template = next((m for m in metrics if m is not None), None)
        if template is None:
            stacked = {}
        else:
            zero = jax.tree.map(lambda _: np.float32(0), template)
            stacked = jax.tree.map(
                lambda *xs: np.asarray(xs, np.float32),
                *[m if m is not None else zero for m in metrics],
            )
        return ChunkOut(
            completed=np.stack(completed),
            completed_return=np.stack(returns),
            env_steps=np.asarray(env_steps, np.int32),
            trained=np.asarray(trained),
            td_abs=np.asarray(td_abs, np.float32),
            metrics=stacked,
        )


class PipelinedLoop(HostLoop):
    """The host loop's two programs at the same time: the actors (in a thread, or in a process
    of their own: `actors`) beside the learner in the calling thread, joined by a queue of
    iterations. The schedule of weights is in `hrl.runtime.actors`; it is fixed, never timed,
    so a run is reproducible and depends on (depth, period, chunk length) and nothing else.
    depth 0 and period 1 is the host loop exactly (tested bit for bit), and the thread and
    process actors give the same results (tested); larger depths let the env and inference of
    the next iterations overlap the learner's insert, sample, train and update.

    JAX releases the GIL while a compiled call runs, but a host env (gymnasium, numpy) holds it
    while it steps and every primitive call is a Python dispatch, so thread actors barely
    overlap the learner; process actors do not share the GIL, at the price of moving weights
    and transitions between processes. Measured on 2 cores (experiments/bench_executors.py,
    gymnasium CartPole, M = 8 and 16, depths 1 and 2): thread 0.92-1.24x, process 1.46-1.67x
    the sequential loop, against an ideal overlap bound of 1.7-1.75x.

    `rate_limit` (a `hrl.runtime.rate_limit.RateLimit`, or None: off) bounds the actors' lead
    in samples per insert as well: an actor iteration waits until its inserts keep the
    limiter's error within the tolerance. It changes when the actors run, never which weights
    they use, so the results are those without it, bit for bit (tested). The learner needs no
    limit: it takes the actors' iterations in order, so it cannot sample ahead of their
    inserts (checked at every round). `limiter_band` holds the chunk's (lowest, highest) error
    (lowest: the learner's view after its rounds, highest: the actors' at their inserts; both
    bounds of the true values), or None without a limiter.
    """

    def __init__(self, *args, depth: int = 1, weight_sync_period: int = 1,
                 actors: str = "thread", config=None, host_env=None, rate_limit=None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        if rate_limit is not None:
            from hrl.runtime.rate_limit import check_tolerance

            sch = self.schedule
            fixed = sch.updates_per_round * sch.batch_size / (sch.period * sch.inserts_per_iter)
            if abs(rate_limit.samples_per_insert - fixed) > 1e-6 * fixed:
                raise ValueError(
                    f"config key 'train.samples_per_insert': must equal the iteration's "
                    f"{fixed:g} (train_ratio x batch_size), got {rate_limit.samples_per_insert!r}")
            check_tolerance(rate_limit.tolerance, sch.batch_size, sch.updates_per_round)
        self.rate_limit = rate_limit
        self.limiter_band = None
        if depth < 0 or weight_sync_period < 1:
            raise ValueError(f"pipelined loop: depth {depth} must be >= 0 and "
                             f"weight_sync_period {weight_sync_period} >= 1")
        if actors not in ("thread", "process"):
            raise ValueError(f"pipelined loop: actors {actors!r} must be 'thread' or 'process'")
        if actors == "process" and config is None:
            raise ValueError("pipelined loop: process actors are built from the run's config")
        self.depth = depth
        self.weight_sync_period = weight_sync_period
        self.actors = actors
        self._config, self._host_env = config, host_env
        self._process = None  # ProcessActors, started with the first chunk

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        from hrl.runtime.actors import ProcessActors, ThreadActors

        first = int(jax.device_get(state.iteration))
        updates = int(jax.device_get(state.updates))
        sch, limit = self.schedule, self.rate_limit
        # The limiter's counters: transitions in the buffer, transitions sampled.
        limiter = LimiterState(first * sch.inserts_per_iter, updates * sch.batch_size)
        if self.actors == "process":
            if self._process is None or not self._process.alive:
                self._process = ProcessActors(self._config, self._host_env)
            source = self._process
            source.start_chunk(self, state, first, num_iters, limit, limiter)
        else:
            source = ThreadActors(self, state, first, num_iters, limit, limiter)
        rows = []
        agent, replay, pending = state.agent, self._own(state.replay), state.pending
        self.limiter_band = None
        low = math.inf
        finished = False
        try:
            for i in range(num_iters):
                inputs, actor, batch, completed, returns, env_steps = source.get()
                agent, replay, pending, do_learn, td_abs, metric_rows = self._learn(
                    agent, replay, pending, batch, inputs.learn_keys, inputs.beta,
                    first + i,
                )
                limiter = limiter._replace(inserts=limiter.inserts + sch.inserts_per_iter)
                if do_learn and limit is not None:
                    # The learner's side of the limit holds by the iteration's order: it only
                    # samples what the actors have already inserted.
                    limiter, ok = rl.sample(limit, limiter,
                                                    sch.updates_per_round * sch.batch_size)
                    if not ok:
                        raise RuntimeError(f"rate limiter: the learner sampled ahead of the "
                                           f"actors' inserts ({limiter}, {limit})")
                    low = min(low, rl.error(limit, limiter))
                    source.progress(limiter.samples)
                if (first + i + 1) % self.weight_sync_period == 0:
                    source.publish(first + i, agent)
                state, row = self._finish(state, inputs._replace(updates=updates), actor, agent,
                                          replay, pending, env_steps, do_learn, completed,
                                          returns, td_abs, metric_rows)
                updates += self.schedule.updates_per_round if do_learn else 0
                rows.append(row)
            finished = True
        finally:
            if finished:
                for name, seconds in source.finish().items():
                    self.timings[name] += seconds
                if limit is not None:
                    self.limiter_band = (None if low == math.inf else low, source.max_error)
            else:
                source.abandon()  # mid-chunk: a process's queues cannot be resynchronised
        return self._settle(state), self._stack(rows)

    def close(self) -> None:
        super().close()
        if self._process is not None:
            self._process.close()
            self._process = None
