"""Where the pipelined executor's actors run: a thread beside the learner, or a process of their
own. Both follow one schedule, so they give the same results bit for bit.

The actors' program (infer -> env step -> n-step window, `HostLoop._act`) is the same code in
either place. Which weights actor iteration t uses is fixed by the schedule, never by timing:
the learner's agent after learner iteration

    j*(t) = the last j <= t - 1 - depth with (j + 1) % weight_sync_period == 0,

or the chunk's first agent if this chunk has no such j. The actors therefore run at most
`depth` iterations ahead of the learner and wait for j*(t) otherwise.

With a samples-per-insert limiter (`hrl.runtime.rate_limit`), actor iteration t also waits
until the learner has sampled enough that its L*M inserts keep the limiter's error within the
tolerance: the learner reports its sample count after each learning round. That wait depends
on timing, but it only delays the iteration; the weights it uses are still j*(t), so the
results do not change. It cannot stall: a tolerance of at least one learning round's samples
(enforced) admits iteration t once the learner has finished iteration t - 1, which needs
nothing from iteration t.

A thread shares the learner's interpreter: a host env (gymnasium, numpy) and every primitive
call hold the GIL, so on a small machine the two sides barely overlap. A process has its own
interpreter and its own XLA runtime: the actors' weights cross to it as numpy arrays at each
sync point, their transitions come back the same way, and a host env's simulator state
travels with the chunk (out at its start, back at its end), so the learner's process keeps
the copy that checkpoints save.
"""

from __future__ import annotations

import atexit
import multiprocessing
import queue
import threading
import traceback
from typing import Any

import jax

from hrl.runtime import rate_limit as rl


def agent_iteration(t: int, first: int, depth: int, period: int) -> int:
    """j*(t) of the module docstring; `first - 1` stands for the chunk's first agent."""
    need = t - 1 - depth
    j = need - (need + 1) % period  # the last j <= need with (j + 1) % period == 0
    return j if j >= first else first - 1


class ThreadActors:
    """The actors' program in a worker thread of this process, for one chunk."""

    def __init__(self, loop, state, first: int, num_iters: int, limit=None, limiter=None):
        from hrl.runtime.loop import actor_of

        self._first, self._loop = first, loop
        # The limiter: the actors' inserts and the learner's samples, both under `_ready`.
        self._limit, self._limiter = limit, limiter
        self.max_error = None  # the highest limiter error at the actors' inserts
        self._published = {first - 1: state.agent}  # learner iteration -> agent after it
        self._ready = threading.Condition()
        self._stop = threading.Event()
        self._acted: queue.Queue = queue.Queue()
        env_steps = int(jax.device_get(state.env_steps))
        self._worker = threading.Thread(
            target=self._act_all, args=(actor_of(state), state.key, env_steps, num_iters),
            name="hrl-actors", daemon=True,
        )
        self._worker.start()

    def _agent_for(self, t: int):
        loop = self._loop
        j = agent_iteration(t, self._first, loop.depth, loop.weight_sync_period)
        with self._ready:
            self._ready.wait_for(lambda: j in self._published or self._stop.is_set())
            # j*(t) never decreases with t: older agents are never asked for again.
            for old in [k for k in self._published if k < j]:
                del self._published[old]
            return self._published.get(j)

    def _admit(self) -> None:
        """Wait until the limiter lets this iteration's inserts in (or the chunk stops)."""
        limit, n = self._limit, self._loop.schedule.inserts_per_iter
        with self._ready:
            self._ready.wait_for(lambda: rl.can_insert(limit, self._limiter, n)
                                 or self._stop.is_set())
            if self._stop.is_set():
                return
            self._limiter, _ = rl.insert(limit, self._limiter, n)
            self.max_error = max_error(self.max_error, limit, self._limiter)

    def _act_all(self, actor, key, env_steps: int, num_iters: int):
        try:
            for i in range(num_iters):
                inputs = self._loop._inputs_from(key, env_steps, self._first + i)
                if self._limit is not None:
                    self._admit()
                agent = self._agent_for(self._first + i)
                if self._stop.is_set():
                    return
                actor, batch, completed, returns, env_steps = self._loop._act(
                    agent, actor, inputs.act_env, env_steps
                )
                key = inputs.key
                self._acted.put((inputs, actor, batch, completed, returns, env_steps))
        except BaseException as err:  # surfaces in the learner's thread
            self._acted.put(err)

    def get(self):
        item = self._acted.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def publish(self, j: int, agent) -> None:
        """The learner's agent after iteration j (a sync point)."""
        with self._ready:
            self._published[j] = agent
            self._ready.notify_all()

    def progress(self, samples: int) -> None:
        """The learner's samples so far (after a learning round), for the limiter."""
        with self._ready:
            self._limiter = self._limiter._replace(samples=samples)
            self._ready.notify_all()

    def finish(self) -> dict[str, float]:
        """End of a chunk (or of a failed one: `abandon`): the worker stops and is joined. Its
        primitive seconds went straight into the loop's timings, so none are returned."""
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        self._worker.join()
        return {}

    abandon = finish


def max_error(current, limit, limiter) -> float:
    """The running maximum of the limiter's error (None: nothing inserted yet)."""
    value = rl.error(limit, limiter)
    return value if current is None else max(current, value)


def policy_leaves(infer, state) -> list[bool]:
    """For each leaf of `state.agent`: does `infer` read it? Found on infer's jaxpr (a leaf
    no equation uses cannot change an action), so the actors' process is sent only those."""
    from jax.extend.core import Var

    from hrl.runtime.loop import actor_of

    actor = actor_of(state)
    closed = jax.make_jaxpr(infer)(state.agent, actor.actor_carry, actor.obs, state.key,
                                   state.env_steps, actor.episode_start)
    jaxpr = closed.jaxpr
    used = {v for eqn in jaxpr.eqns for v in eqn.invars if isinstance(v, Var)}
    used |= {v for v in jaxpr.outvars if isinstance(v, Var)}
    n_agent = len(jax.tree.leaves(state.agent))
    return [v in used for v in jaxpr.invars[:n_agent]]


class ProcessActors:
    """The actors' program in a process of its own (spawned once, kept across chunks).

    The process builds the run's env and agent from the config (the replay stays here) and
    then serves chunks: for each it receives the actors' state, key, counters and the first
    agent, acts, and streams each iteration back; the weights of every sync point follow as
    the learner produces them. Queues, not a pipe: their feeder threads never block the
    sender, so neither side can deadlock on a full buffer."""

    def __init__(self, cfg, host_env=None):
        from hrl.config import to_dict

        ctx = multiprocessing.get_context("spawn")  # fork would copy XLA's threads
        self._to_actors = ctx.Queue()
        self._from_actors = ctx.Queue()
        self._host_env = host_env
        self._policy_leaves = None  # which agent leaves inference reads (found once)
        self.max_error = None  # the chunk's highest limiter error at the actors' inserts
        self._process = ctx.Process(
            target=_serve, args=(to_dict(cfg), self._to_actors, self._from_actors),
            name="hrl-actors", daemon=True,
        )
        self._process.start()
        atexit.register(self.close)
        self._receive("ready")

    def start_chunk(self, loop, state, first: int, num_iters: int, limit=None,
                    limiter=None) -> None:
        from hrl.runtime.loop import actor_of

        if self._policy_leaves is None:
            self._policy_leaves = policy_leaves(loop.prims.infer, state)
        host_env_state = None if self._host_env is None else self._host_env.save_state()
        self._to_actors.put(("chunk", jax.device_get((
            actor_of(state), state.key, state.env_steps, state.agent,
        )), first, num_iters, loop.depth, loop.weight_sync_period, host_env_state, limit,
            limiter))

    def get(self):
        """The next iteration's (inputs, actors' state, transitions, episode ends, returns,
        env steps)."""
        return self._receive("acted")

    def publish(self, j: int, agent) -> None:
        """The leaves inference reads cross (the parameters, not the optimizer's moments or
        the target networks); the actors keep the chunk's first agent for the rest."""
        leaves = jax.tree.leaves(agent)
        self._to_actors.put(("agent", j, jax.device_get(
            [leaf if used else None for leaf, used in zip(leaves, self._policy_leaves,
                                                          strict=True)])))

    def progress(self, samples: int) -> None:
        """The learner's samples so far (after a learning round), for the limiter."""
        self._to_actors.put(("progress", samples))

    def finish(self) -> dict[str, float]:
        """End of a chunk: the host env's state back into this process's copy; the actors'
        primitive seconds of the chunk."""
        host_env_state, timings, self.max_error = self._receive("chunk_done")
        if self._host_env is not None:
            self._host_env.load_state(host_env_state)
        return timings

    def abandon(self) -> None:
        """A chunk that failed on the learner's side: the process cannot be resynchronised."""
        self.close()

    def _receive(self, kind: str):
        while True:
            try:
                message = self._from_actors.get(timeout=1.0)
            except queue.Empty:
                if not self._process.is_alive():
                    raise RuntimeError(
                        f"the actors' process exited (code {self._process.exitcode})"
                    ) from None
                continue
            if message[0] == "error":
                self.close()
                raise RuntimeError(f"the actors' process failed:\n{message[1]}")
            if message[0] != kind:
                raise RuntimeError(f"actors' process: expected {kind!r}, got {message[0]!r}")
            return message[1]

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def close(self) -> None:
        if self._process.is_alive():
            self._to_actors.put(("stop",))
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()


def _serve(cfg_dict: dict, inbox, outbox) -> None:
    """The actors' process: build once, then act chunk by chunk until told to stop."""
    import signal

    # Ctrl-C reaches the whole process group: the learner's process handles it (it stops at
    # the chunk's end and checkpoints), so the actors must finish their chunk, not die.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        loop, env = _build_actors(cfg_dict)
        outbox.put(("ready", None))
        while True:
            message = inbox.get()
            if message[0] == "stop":
                return
            if message[0] == "progress":  # the previous chunk's, after its actors were done
                continue
            _act_chunk(loop, env, inbox, outbox, *message[1:])
    except _Stopped:
        return
    except BaseException:
        outbox.put(("error", traceback.format_exc()))


def _build_actors(cfg_dict: dict):
    """The run's env and agent inside a sequential loop; the replay is not used here (it
    stays in the learner's process), so a JAX one is built whatever the run's backend."""
    from hrl.config import config_from_dict
    from hrl.runtime.run import build

    cfg_dict = {**cfg_dict, "replay": {**cfg_dict["replay"], "backend": "jax"},
                # This process waits for every call it makes (infer, then the env on the
                # host), so asynchronous dispatch would only add a hand-off to XLA's worker
                # thread and back per call: with it, inference took 4 ms instead of 2.5 ms per
                # 16 steps (M=16, learner beside), whatever the run's dependency.
                "train": {**cfg_dict["train"], "executor": "sequential", "fused": False,
                          "actors": "thread", "cpu_dispatch": "sync"},
                "placement": {k: v for k, v in cfg_dict.get("placement", {}).items()
                              if k in ("env", "infer")}}
    built = build(config_from_dict(cfg_dict))
    return built.loop, built.env


class _Stopped(Exception):
    """The learner's process closed the actors' process in the middle of a chunk."""


def _act_chunk(loop, env, inbox, outbox, start, first, num_iters, depth, period,
               host_env_state, limit, limiter) -> None:
    actor, key, env_steps, agent = start
    if host_env_state is not None:
        env.load_state(host_env_state)
    # On the device once per sync point, not at every inference call.
    agents: dict[int, Any] = {first - 1: jax.device_put(agent)}
    received = set()  # sync points whose agent has arrived

    template = jax.tree.structure(agent)
    full = jax.tree.leaves(agents[first - 1])

    def receive():
        """The learner's next message. An agent of a sync point: the leaves inference reads,
        the chunk's first agent's for the others (which no action depends on). Progress: its
        samples so far (a late one from an earlier round changes nothing)."""
        nonlocal limiter
        message = inbox.get()
        if message[0] == "stop":
            raise _Stopped
        if message[0] == "progress":
            limiter = limiter._replace(samples=max(limiter.samples, message[1]))
            return
        kind, j, leaves = message
        if kind != "agent":
            raise RuntimeError(f"actors' process: unexpected message {kind!r}")
        leaves = [old if new is None else jax.device_put(new)
                  for new, old in zip(leaves, full, strict=True)]
        agents[j] = jax.tree.unflatten(template, leaves)
        received.add(j)

    env_steps = int(env_steps)
    loop.timings = dict.fromkeys(loop.timings, 0.0)
    n_inserts = loop.schedule.inserts_per_iter
    highest = None  # the limiter's highest error at the actors' inserts
    for i in range(num_iters):
        t = first + i
        inputs = loop._inputs_from(key, env_steps, t)
        if limit is not None:
            while not rl.can_insert(limit, limiter, n_inserts):
                receive()
            limiter, _ = rl.insert(limit, limiter, n_inserts)
            highest = max_error(highest, limit, limiter)
        j = agent_iteration(t, first, depth, period)
        while j not in agents:
            receive()
        for old in [k for k in agents if k < j]:  # j*(t) never decreases with t
            del agents[old]
        actor, batch, completed, returns, env_steps = loop._act(
            agents[j], actor, inputs.act_env, env_steps
        )
        key = inputs.key
        outbox.put(("acted", (*jax.device_get((inputs, actor, batch, completed, returns)),
                              env_steps)))
    # The learner publishes every sync point of the chunk, also those no actor iteration of
    # this chunk needed: take them off the queue so the next chunk starts clean.
    sync_points = [j for j in range(first, first + num_iters) if (j + 1) % period == 0]
    while not received.issuperset(sync_points):
        receive()
    host_state = None if env.spec.is_jax else env.save_state()
    outbox.put(("chunk_done", (host_state, dict(loop.timings), highest)))
