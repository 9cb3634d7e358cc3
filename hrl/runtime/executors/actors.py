"""Where the pipelined executor's actors run: a thread beside the learner, or a process of their
own. Both run `act_chunk`, so they give the same results bit for bit.

Which weights actor iteration t uses is fixed by the schedule, never by timing: the learner's
agent after learner iteration

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
call hold the GIL, so the two sides overlap little. A process has its own interpreter and XLA
runtime and builds only what the actors run (env, agent, primitives: `components`): the
actors' weights cross to it as numpy arrays at each sync point, their transitions come back
the same way, and a host env's simulator state travels with the chunk (out at its start, back
at its end), so the learner's process keeps the copy that checkpoints save. The actors' process
ends with the learner's, a SIGKILL of it included (`hrl.runtime.lifetime.exit_with_parent`).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import queue
import signal
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import jax
from jax._src import xla_bridge  # the one way to ask whether the backends have started

from hrl.config import config_from_dict, to_dict
from hrl.runtime import rate_limit as rl
from hrl.runtime.components import make_env_agent, resolve_placement
from hrl.runtime.cpu_backend import running_cpu_dispatch, start_cpu_backend
from hrl.runtime.executor_choice import env_is_jax
from hrl.runtime.executors.host_calls import HostCalls, leaves_read
from hrl.runtime.iteration import Schedule, actor_of
from hrl.runtime.lifetime import exit_with_parent
from hrl.runtime.primitives import make_primitives


def agent_iteration(t: int, first: int, depth: int, period: int) -> int:
    """j*(t) of the module docstring; `first - 1` stands for the chunk's first agent."""
    need = t - 1 - depth
    j = need - (need + 1) % period  # the last j <= need with (j + 1) % period == 0
    return j if j >= first else first - 1


def act_chunk(calls: HostCalls, actor, key, env_steps: int, first: int, num_iters: int,
              depth: int, period: int, admit: Callable[[], bool],
              agent_for: Callable[[int], Any], emit: Callable[[tuple], None]) -> None:
    """The actors' side of a chunk, wherever it runs: for each iteration t, its inputs from the
    key chain, `admit()` (the limiter's wait; False: the chunk stopped), the agent j*(t)
    (`agent_for`; None: the chunk stopped), the actors' program, and `emit` of (inputs, actors'
    state, transitions, episode ends, returns, env steps)."""
    for t in range(first, first + num_iters):
        inputs = calls.inputs_from(key, env_steps, t)
        if not admit():
            return
        agent = agent_for(agent_iteration(t, first, depth, period))
        if agent is None:
            return
        actor, batch, completed, returns, env_steps = calls.act(agent, actor, inputs.act_env,
                                                                env_steps)
        key = inputs.key
        emit((inputs, actor, batch, completed, returns, env_steps))


def max_error(current, limit, limiter) -> float:
    """The running maximum of the limiter's error (None: nothing inserted yet)."""
    value = rl.error(limit, limiter)
    return value if current is None else max(current, value)


class ThreadActors:
    """`act_chunk` in a worker thread of this process, for one chunk."""

    def __init__(self, loop, state, first: int, num_iters: int, limit=None, limiter=None):
        self._limit, self._limiter = limit, limiter  # both under `_ready`
        self.max_error = None  # the highest limiter error at the actors' inserts
        self._published = {first - 1: state.agent}  # learner iteration -> agent after it
        self._ready = threading.Condition()
        self._stop = threading.Event()
        self._acted: queue.Queue = queue.Queue()
        self._inserts = loop.schedule.inserts_per_iter
        args = (loop.calls, actor_of(state), state.key, int(jax.device_get(state.env_steps)),
                first, num_iters, loop.depth, loop.weight_sync_period, self._admit,
                self._agent_for, self._acted.put)
        self._worker = threading.Thread(target=self._act, args=args, name="hrl-actors",
                                        daemon=True)
        self._worker.start()

    def _act(self, *args) -> None:
        try:
            act_chunk(*args)
        except BaseException as err:  # surfaces in the learner's thread
            self._acted.put(err)

    def _agent_for(self, j: int):
        with self._ready:
            self._ready.wait_for(lambda: j in self._published or self._stop.is_set())
            for old in [k for k in self._published if k < j]:  # j*(t) never decreases
                del self._published[old]
            return None if self._stop.is_set() else self._published[j]

    def _admit(self) -> bool:
        if self._limit is None:
            return not self._stop.is_set()
        limit, n = self._limit, self._inserts
        with self._ready:
            self._ready.wait_for(lambda: rl.can_insert(limit, self._limiter, n)
                                 or self._stop.is_set())
            if self._stop.is_set():
                return False
            self._limiter, _ = rl.insert(limit, self._limiter, n)
            self.max_error = max_error(self.max_error, limit, self._limiter)
            return True

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
        primitive seconds went straight into the executor's timings, so none are returned."""
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        self._worker.join()
        return {}

    abandon = finish


def policy_leaves(infer, state) -> list[bool]:
    """For each leaf of `state.agent`: does `infer` read it? A leaf inference does not read
    cannot change an action, so the actors' process is sent only those."""
    actor = actor_of(state)
    return leaves_read(infer, state.agent, actor.actor_carry, actor.obs, state.key,
                       state.env_steps, actor.episode_start)


class ProcessActors:
    """`act_chunk` in a process of its own (spawned once, kept across chunks).

    The process builds the run's env, agent and actor primitives from the config (the replay
    stays here) and then serves chunks: for each it receives the actors' state, key, counters
    and the first agent, acts, and streams each iteration back; the weights of every sync point
    follow as the learner produces them. Queues, not a pipe: their feeder threads never block
    the sender, so neither side can deadlock on a full buffer."""

    def __init__(self, cfg, host_env=None):
        ctx = multiprocessing.get_context("spawn")  # fork would copy XLA's threads
        self._to_actors = ctx.Queue()
        self._from_actors = ctx.Queue()
        self._host_env = host_env
        self._policy_leaves = None  # which agent leaves inference reads (found once)
        self.max_error = None  # the chunk's highest limiter error at the actors' inserts
        self._process = ctx.Process(
            target=_serve, args=(to_dict(cfg), self._to_actors, self._from_actors, os.getpid()),
            name="hrl-actors", daemon=True,
        )
        self._process.start()
        atexit.register(self.close)
        self._receive("ready")

    def start_chunk(self, loop, state, first: int, num_iters: int, limit=None,
                    limiter=None) -> None:
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


# --- the actors' process -----------------------------------------------------------------------
def _serve(cfg_dict: dict, inbox, outbox, parent: int | None = None) -> None:
    """The actors' process: build once, then act chunk by chunk until told to stop."""
    if parent is not None:
        exit_with_parent(parent)
    # Ctrl-C reaches the whole process group: the learner's process handles it (it stops at
    # the chunk's end and checkpoints), so the actors must finish their chunk, not die.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        calls, env, _ = actor_calls_of(cfg_dict)
        outbox.put(("ready", None))
        while True:
            message = inbox.get()
            if message[0] == "stop":
                return
            if message[0] == "progress":  # the previous chunk's, after its actors were done
                continue
            _ProcessChunk(calls, env, inbox, outbox).run(*message[1:])
    except _Stopped:
        return
    except BaseException:
        outbox.put(("error", traceback.format_exc()))


def actor_calls_of(cfg_dict: dict) -> tuple[HostCalls, Any, Any]:
    """The actors' calls of a run (env, agent and the actors' primitives; no replay), its env
    and its agent.
    This process waits for every call it makes (infer, then the env on the host), so its CPU
    dispatch is synchronous: asynchronous dispatch would only add a hand-off to XLA's worker
    thread and back per call. Its CPU per env step bounds how fast it acts, so a host env's
    steps are lean (`HostCalls` with `lean_act`: the n-step windows once per iteration). Meant as
    the process's first use of JAX (`start_cpu_backend`); after it, a warning, and the backend
    stays as it started (the same results, at its dispatch and XLA threads)."""
    cfg = config_from_dict({**cfg_dict, "placement": {
        k: v for k, v in cfg_dict.get("placement", {}).items() if k in ("env", "infer")}})
    _share_the_gpu(cfg)
    if not start_cpu_backend(cfg, dispatch="sync"):
        warnings.warn("the actors' process started JAX before its CPU backend was set; it keeps "
                      f"{running_cpu_dispatch()} dispatch and its XLA threads", stacklevel=2)
    env, agent = make_env_agent(cfg)
    schedule = Schedule.from_config(cfg)
    prims = make_primitives(env, agent, None, schedule.batch_size)
    placement = resolve_placement(cfg, env.spec.is_jax, replay_is_jax=True)
    return (HostCalls(prims, schedule, env.spec.is_jax, True, placement,
                      lean_act=True), env, agent)


def _share_the_gpu(cfg) -> None:
    """Before this process starts JAX: keep it off the GPU the learner's process holds. Where
    inference and the env run on the CPU (placed there, or a host env) it starts the CPU
    backend alone; otherwise it takes GPU memory as it needs it instead of XLA's default
    share of the card, most of which the learner's process has taken already. No effect on
    a machine without a GPU."""
    if xla_bridge.backends_are_initialized():
        return
    on_cpu = lambda name: cfg.placement.get(name, "").startswith("cpu")  # noqa: E731
    env_on_host = not env_is_jax(cfg) or cfg.placement.get("env", "").startswith("host")
    if on_cpu("infer") and (env_on_host or on_cpu("env")):
        jax.config.update("jax_platforms", "cpu")
    else:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


class _Stopped(Exception):
    """The learner's process closed the actors' process in the middle of a chunk."""


class _ProcessChunk:
    """One chunk in the actors' process: `act_chunk` fed from the learner's messages."""

    def __init__(self, calls: HostCalls, env, inbox, outbox):
        self.calls, self.env, self.inbox, self.outbox = calls, env, inbox, outbox

    def run(self, start, first, num_iters, depth, period, host_env_state, limit,
            limiter) -> None:
        actor, key, env_steps, agent = start
        if host_env_state is not None:
            self.env.load_state(host_env_state)
        # On the device once per sync point, not at every inference call.
        self.agents: dict[int, Any] = {first - 1: jax.device_put(agent)}
        self.received = set()  # sync points whose agent has arrived
        self.template = jax.tree.structure(agent)
        self.full = jax.tree.leaves(self.agents[first - 1])
        self.limit, self.limiter, self.highest = limit, limiter, None
        self.calls.timings.update(dict.fromkeys(self.calls.timings, 0.0))
        act_chunk(self.calls, actor, key, int(env_steps), first, num_iters, depth, period,
                  self._admit, self._agent_for, self._emit)
        # The learner publishes every sync point of the chunk, also those no actor iteration
        # of this chunk needed: take them off the queue so the next chunk starts clean.
        sync_points = [j for j in range(first, first + num_iters) if (j + 1) % period == 0]
        while not self.received.issuperset(sync_points):
            self._receive()
        host_state = None if self.env.spec.is_jax else self.env.save_state()
        self.outbox.put(("chunk_done", (host_state, dict(self.calls.timings), self.highest)))

    def _receive(self) -> None:
        """The learner's next message. An agent of a sync point: the leaves inference reads,
        the chunk's first agent's for the others (which no action depends on). Progress: its
        samples so far (a late one from an earlier round changes nothing)."""
        message = self.inbox.get()
        if message[0] == "stop":
            raise _Stopped
        if message[0] == "progress":
            self.limiter = self.limiter._replace(samples=max(self.limiter.samples, message[1]))
            return
        kind, j, leaves = message
        if kind != "agent":
            raise RuntimeError(f"actors' process: unexpected message {kind!r}")
        leaves = [old if new is None else jax.device_put(new)
                  for new, old in zip(leaves, self.full, strict=True)]
        self.agents[j] = jax.tree.unflatten(self.template, leaves)
        self.received.add(j)

    def _admit(self) -> bool:
        if self.limit is None:
            return True
        n = self.calls.schedule.inserts_per_iter
        while not rl.can_insert(self.limit, self.limiter, n):
            self._receive()
        self.limiter, _ = rl.insert(self.limit, self.limiter, n)
        self.highest = max_error(self.highest, self.limit, self.limiter)
        return True

    def _agent_for(self, j: int):
        while j not in self.agents:
            self._receive()
        for old in [k for k in self.agents if k < j]:  # j*(t) never decreases with t
            del self.agents[old]
        return self.agents[j]

    def _emit(self, acted: tuple) -> None:
        *arrays, env_steps = acted
        self.outbox.put(("acted", (*jax.device_get(tuple(arrays)), env_steps)))
