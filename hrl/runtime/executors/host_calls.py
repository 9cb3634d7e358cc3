"""The primitives as a host executor calls them: jitted one by one, placed on devices, timed.

`HostCalls` binds a run's primitives, schedule and placement once and gives the host
executors (`sequential.py`, `pipelined.py`, the actors in `actors.py`) everything they call:

* `inputs` / `inputs_from`: an iteration's keys and beta, one jitted call and one transfer;
* `act`: the actors' program, L x `iteration.actor_step` with timed, placed calls (with
  `lean_act`, fewer and smaller calls per env step for a host env);
* `learner_calls`: the `iteration.LearnerCalls` of one learning round (strict or relaxed);
* `finish`: the state after an iteration and its log row, one transfer each way;
* `stack`, `settle`: a chunk's report and its state at the chunk's end.

Why the glue between primitives is jitted into few calls and crosses to the host once per
iteration: on XLA:CPU a call costs microseconds of dispatch per argument and result, far more
than the glue's arithmetic (`experiments/bench/bench_call_overhead.py`). Results are bit for
bit those of the fused executor (tests/runtime).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Var
from jax.sharding import SingleDeviceSharding

from hrl.runtime.iteration import (
    ActorCalls,
    ActorState,
    ChunkOut,
    EnvSteps,
    IterationInputs,
    LearnerCalls,
    Schedule,
    TrainState,
    actor_step,
    after_env,
    iteration_inputs,
    next_state,
    windows_after,
)
from hrl.runtime.packing import TreePacking
from hrl.runtime.pending import HostPendingQueue
from hrl.runtime.primitives import PRIMITIVES, Primitives


def _on_cpu(sharding) -> bool:
    return all(d.platform == "cpu" for d in sharding.device_set)


def put_for_call(tree, sharding):
    """`tree`'s leaves ready for a jitted call on `sharding`'s device, moved the cheapest way.

    Leaves already there are passed as they are (`jax.device_put` costs a dispatch even then,
    comparing shardings almost nothing). So are host values (NumPy arrays, scalars) when an
    argument already sits there: a jitted call runs where its placed arguments are and copies
    host values there itself, while each `device_put` is a Python-level call. Between two CPU
    devices an array crosses as a view of its host memory, which the call copies in or aliases
    (`hrl profile` times that move: `link:cpu-device`). The rest goes through one `device_put`.
    O(leaves)."""
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


def leaves_read(fn, agent, *args) -> list[bool]:
    """For each leaf of `agent`: does `fn(agent, *args)` read it? Found on fn's jaxpr (a leaf
    no equation uses cannot change its result)."""
    jaxpr = jax.make_jaxpr(fn)(agent, *args).jaxpr
    used = {v for eqn in jaxpr.eqns for v in eqn.invars if isinstance(v, Var)}
    used |= {v for v in jaxpr.outvars if isinstance(v, Var)}
    n_agent = len(jax.tree.leaves(agent))
    return [v in used for v in jaxpr.invars[:n_agent]]


class HostTrain(NamedTuple):
    """The SGD step as the host calls it (the host executors, and `hrl profile`, which times
    it so): the agent packed into one vector per dtype and the metrics into one
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


def _passed_through(pending, indices, td):
    """Strict dependency's queue of depth 0: the update leaves at once."""
    return pending, (indices, td, True)


def _host_queue_push(queue: HostPendingQueue, indices, td):
    leaving = queue.leaving()
    queue.push(indices, td)
    return queue, leaving


class HostCalls:
    """A run's primitives as jitted (or host) calls, each on the device `placement` names.

    `placement` maps a primitive (`env`, `infer`, `sample`, `update`, `train`) to a
    `jax.Device`; a call's inputs are moved there first (that move is the link the mapping
    framework costs). Unplaced primitives run where their inputs are. Host primitives
    (gymnasium envs, host replay backends) are called as they are. `timings` adds up the
    seconds spent in each primitive's calls. `prims` may lack the replay's primitives (the
    actors' process): then only the actors' calls are usable.

    `lean_act` (host envs; ignored for a JAX env): `act` spends less CPU per env step, for the
    actors' processes, whose CPU per env step bounds how fast they act. It steps infer and the
    env L times, then runs the L n-step window updates in one call (`iteration.windows_after`)
    instead of one per step; each infer call is sent only the agent's leaves inference reads
    (`leaves_read`, found once per agent structure; a call costs per argument). The same
    values, so the same results bit for bit, with L - 1 device calls fewer per iteration.
    Off, `act` makes the calls one by one, as the mapping model's loop (`hrl profile`) times
    them."""

    def __init__(self, prims: Primitives, schedule: Schedule, env_is_jax: bool,
                 replay_is_jax: bool = True, placement: dict[str, Any] | None = None,
                 lean_act: bool = False):
        placement = dict(placement or {})
        unknown = set(placement) - set(PRIMITIVES)
        if unknown:
            raise ValueError(f"placement: unknown primitives {sorted(unknown)}; use {PRIMITIVES}")
        if not replay_is_jax:  # a host backend places itself (its own device option)
            for name in ("sample", "update"):
                if name in placement:
                    raise ValueError(
                        f"placement: {name!r} runs on the host replay backend; choose its "
                        "device through the backend, not the placement")
        self.prims, self.schedule, self.env_is_jax = prims, schedule, env_is_jax
        self.placement = placement
        self._shardings = {name: SingleDeviceSharding(device)
                           for name, device in placement.items()}
        self.timings = {name: 0.0 for name in PRIMITIVES}
        self._infer = jax.jit(prims.infer)
        self._env_step = jax.jit(prims.env_step) if env_is_jax else prims.env_step
        if prims.insert is None:
            self.own = self.insert = self.sample = self.update = None
        elif replay_is_jax:
            # The executor owns the replay state it threads through a chunk (`own` copies the
            # caller's once at its start), so insert and update write in place: without
            # donation every call would copy the whole buffer.
            self.own = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
            self.insert = jax.jit(prims.insert, donate_argnums=0)
            self.sample = jax.jit(prims.sample)
            self.update = jax.jit(prims.update, donate_argnums=0)
        else:
            self.own = lambda tree: tree
            self.insert, self.sample, self.update = prims.insert, prims.sample, prims.update
        sch = schedule
        self._iteration_inputs = jax.jit(lambda key, steps: iteration_inputs(sch, key, steps))
        self._after_env = jax.jit(lambda *a: after_env(sch.gamma, *a))
        self.lean_act = lean_act and not env_is_jax
        self._lean_infer = None  # (agent treedef, leaves read, jitted infer on them)
        # (window, L*M transitions, the episode starts after the last step)
        self._windows = jax.jit(lambda acc, steps: (
            *windows_after(sch.gamma, acc, steps), jnp.asarray(steps.done[-1], bool)))
        self._concat = jax.jit(
            lambda steps: jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=0), *steps))
        self.train: HostTrain | None = None  # built for the agent's structure at the first round

    # --- calling ---------------------------------------------------------------------------
    def put(self, name, tree):
        """`tree` as the call placed for `name` takes it (`put_for_call`)."""
        sharding = self._shardings.get(name)
        return tree if sharding is None else put_for_call(tree, sharding)

    def timed(self, name, fn, *args, wait: bool = True):
        """`fn(*args)` on `name`'s device; its seconds (to completion unless `wait` is False)
        go to `timings[name]`."""
        start = time.perf_counter()
        result = fn(*self.put(name, args))
        if wait:
            jax.block_until_ready(result)
        self.timings[name] += time.perf_counter() - start
        return result

    # --- an iteration's inputs ---------------------------------------------------------------
    def inputs(self, state: TrainState) -> IterationInputs:
        """Every key and scalar of the iteration after `state`, on the host in one transfer."""
        key, act_env, learn_keys, beta = self._iteration_inputs(state.key, state.env_steps)
        act_env, learn_keys, beta, env_steps, iteration, updates = jax.device_get(
            (act_env, learn_keys, beta, state.env_steps, state.iteration, state.updates))
        return IterationInputs(key, act_env, learn_keys, beta, int(env_steps), int(iteration),
                               int(updates))

    def inputs_from(self, key, env_steps: int, iteration: int) -> IterationInputs:
        """`inputs` from the key chain alone (the actors' side has no TrainState)."""
        key, act_env, learn_keys, beta = self._iteration_inputs(key, np.int32(env_steps))
        act_env, learn_keys, beta = jax.device_get((act_env, learn_keys, beta))
        return IterationInputs(key, act_env, learn_keys, beta, env_steps, iteration, 0)

    # --- the actors' program -----------------------------------------------------------------
    def actor_calls(self) -> ActorCalls:
        """The actors' primitives as this executor calls them: placed, timed, host actions
        for a host env."""
        def infer(agent, carry, obs, key, env_steps, start):
            return self.timed("infer", self._infer, agent, carry, obs, key, np.int32(env_steps),
                              start)

        def env_step(env_state, actions, key):
            if self.env_is_jax:
                return self.timed("env", self._env_step, env_state, actions, key)
            # a host env returns host arrays, complete when it returns: nothing to wait for
            return self.timed("env", self._env_step, env_state, np.asarray(actions), key,
                              wait=False)

        return ActorCalls(infer, env_step, self._after_env)

    def act(self, agent, actor: ActorState, act_env, env_steps: int):
        """The actors' program: L x `actor_step` with `agent`'s weights. Returns the actors'
        new state, the L*M transitions as one batch, the episode ends, their returns, and the
        env steps after it. With `lean_act`, L + 1 device calls instead of 2L + 1."""
        if self.lean_act:
            return self._act_lean(agent, actor, act_env, env_steps)
        calls = self.actor_calls()
        transitions, completed, returns = [], [], []
        for k_act, k_env in act_env:
            actor, transition, out = actor_step(calls, agent, actor, k_act, k_env, env_steps)
            env_steps += self.schedule.num_envs
            transitions.append(transition)
            completed.append(out.completed)
            returns.append(out.completed_return)
        return actor, self._concat(transitions), completed, returns, env_steps

    def _act_lean(self, agent, actor: ActorState, act_env, env_steps: int):
        """`act` for a host env (`lean_act`): L x (infer, env step), each step's inputs to the
        window kept on the host, then `windows_after` over the L steps in one call."""
        m, length = self.schedule.num_envs, len(act_env)
        infer, read = self._infer_reading(agent, actor, act_env[0][0], env_steps)
        env_step = self.actor_calls().env_step
        env_state, obs, start, carry = actor.env, actor.obs, actor.episode_start, actor.actor_carry
        steps, completed, returns = [], [], []
        for i, (k_act, k_env) in enumerate(act_env):
            carry, actions = self.timed("infer", infer, read, carry, obs, k_act,
                                        np.int32(env_steps + i * m), start)
            actions = np.asarray(actions)  # what the env takes, and the window stores
            env_state, out = env_step(env_state, actions, k_env)
            steps.append(EnvSteps(obs, actions, out.reward, out.next_obs_true, out.terminated,
                                  out.done))
            obs, start = out.obs, out.done
            completed.append(out.completed)
            returns.append(out.completed_return)
        stacked = EnvSteps(*(np.stack([np.asarray(x) for x in field])
                             for field in zip(*steps, strict=True)))
        acc, batch, start = self._windows(actor.nstep, stacked)
        return (ActorState(env_state, obs, start, carry, acc), batch, completed, returns,
                env_steps + length * m)

    def _infer_reading(self, agent, actor: ActorState, key, env_steps: int):
        """(infer jitted on the leaves of `agent` it reads, those leaves). Which leaves it reads
        is found on its jaxpr once per agent structure; the others (target networks,
        optimizer moments) enter the traced call as zeros, which it never reads."""
        leaves, treedef = jax.tree.flatten(agent)
        if self._lean_infer is None or self._lean_infer[0] != treedef:
            read = leaves_read(self.prims.infer, agent, actor.actor_carry, actor.obs, key,
                               np.int32(env_steps), actor.episode_start)
            shapes = [jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves]

            def infer(read_leaves, *args):
                given = iter(read_leaves)
                full = [next(given) if r else jnp.zeros(s.shape, s.dtype)
                        for r, s in zip(read, shapes, strict=True)]
                return self.prims.infer(jax.tree.unflatten(treedef, full), *args)

            self._lean_infer = (treedef, read, jax.jit(infer))
        _, read, infer = self._lean_infer
        return infer, [x for x, r in zip(leaves, read, strict=True) if r]

    # --- the learner's calls -------------------------------------------------------------------
    def learner_calls(self, queue: HostPendingQueue | None, wait_train: bool) -> LearnerCalls:
        """The calls of one learning round: train on the packed agent (`HostTrain`), the
        relaxed queue on the host (`queue`; None: strict, depth 0), an update
        only of a valid slot. `wait_train`: time train to completion (strict), or only its
        dispatch (relaxed: the update and sample after it need nothing from it)."""

        def sample(replay, key, beta):
            return self.timed("sample", self.sample, replay, key, beta)

        packed = False

        def train(agent, items, weights):
            # The round's first step takes the agent as the state holds it and packs it (the
            # packing is built for its structure at the run's first round); the others take
            # and return it packed, which the executor unpacks at the round's end.
            nonlocal packed
            if not packed:
                if self.train is None:
                    self.train = HostTrain.build(self.prims.train, agent, items, weights)
                agent = self.timed("train", self.train.pack_agent, agent)
                packed = True
            agent, td, metrics, td_mean = self.timed("train", self.train.step, agent, items,
                                                     weights, wait=wait_train)
            return agent, td, (metrics, td_mean)

        def update(replay, indices, td, valid):
            return self.timed("update", self.update, replay, indices, td) if valid else replay

        push = _passed_through if queue is None else _host_queue_push
        return LearnerCalls(sample, train, push, update)

    # --- an iteration's end, a chunk's end ---------------------------------------------------
    def finish(self, state: TrainState, inputs: IterationInputs, actor: ActorState, agent,
               replay, pending, env_steps: int, do_learn: bool, completed, returns, td_abs,
               metric_rows):
        """The iteration's new state and its log row (host values, one transfer each way)."""
        sch = self.schedule
        completed, returns, td_abs, metric_rows = jax.device_get(
            (completed, returns, td_abs, metric_rows))
        iteration, env_steps_now, updates = jax.device_put((
            np.int32(inputs.iteration + 1),
            np.int32(env_steps),
            np.int32(inputs.updates + (sch.updates_per_round if do_learn else 0)),
        ))
        new_state = next_state(state, actor, agent, replay, pending, inputs.key, iteration,
                               env_steps_now, updates)
        if do_learn:  # each metric's mean over the round's SGD steps
            metrics = jax.tree.map(lambda x: np.float32(np.mean(np.asarray(x, np.float32))),
                                   self.train.metrics.unpack(metric_rows))
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

    def settle(self, state: TrainState) -> TrainState:
        """`state` with its relaxed queue as `PendingUpdates` again (a chunk's end), on the
        update's device, where it lives with the tree."""
        if not isinstance(state.pending, HostPendingQueue):
            return state
        return state.replace(pending=jax.device_put(state.pending.to_pending(),
                                                    self._shardings.get("update")))

    @staticmethod
    def stack(rows) -> ChunkOut:
        """A chunk's report from its iterations' rows (`finish`)."""
        completed, returns, env_steps, trained, td_abs, metrics = zip(*rows, strict=True)
        template = next((m for m in metrics if m is not None), None)
        if template is None:
            stacked = {}
        else:
            zero = jax.tree.map(lambda _: np.float32(0), template)
            stacked = jax.tree.map(lambda *xs: np.asarray(xs, np.float32),
                                   *[m if m is not None else zero for m in metrics])
        return ChunkOut(
            completed=np.stack(completed),
            completed_return=np.stack(returns),
            env_steps=np.asarray(env_steps, np.int32),
            trained=np.asarray(trained),
            td_abs=np.asarray(td_abs, np.float32),
            metrics=stacked,
        )
