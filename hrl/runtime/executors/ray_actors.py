"""The distributed-actors executor (Ape-X, Horgan et al. 2018): N actor workers, each a Ray
actor placed anywhere in the Ray cluster, feed one learner that owns the replay and the SGD step.

Each worker builds the run's env, agent and actors' primitives from the config (as the
pipelined executor's actors' process does: `actors.actor_calls_of`) and keeps its own actors'
state (M envs, their n-step window, exploration state; a host env's simulators). The learner
asks worker `w` for iteration t with `act(t, j, weights, key, env_steps)`; the worker runs the
same actors' program as every executor (`actors.act_chunk`, one iteration) and returns the
iteration's transitions and its new state. The learner inserts them, runs its learning round,
and every `weight_sync_period` iterations puts the weights inference reads into Ray's object
store once (`ray.put`); each request names the sync point j it must act with, and a worker
fetches each j once.

Two schedules (`train.actor_schedule`):

* **fixed** (default): iteration t is worker t mod N's, acting with the weights after learner
  iteration j*(t) (`actors.agent_iteration`, the pipelined executor's rule) with the keys of
  the run's key chain; the learner takes the iterations in order. Which worker runs what, with
  which weights and keys, follows from iteration counts alone, so a run gives the same results
  bit for bit every time, and with N = 1 those of the pipelined executor with process actors
  (same depth and period). `train.pipeline_depth` bounds how far the requests run ahead of the
  learner: at depth >= N - 1 every worker has one in flight.
* **free**: as fast as the workers go. Each worker has `FREE_QUEUED` (2) requests in flight,
  each acting with the newest weights published when it was sent, so a worker starts its next
  iteration as soon as it returns one instead of idling through the learner's round trip; the
  learner takes whichever worker's batch arrives first (a worker's own in the order it ran
  them). What may vary
  from run to run: which worker's batch fills iteration t, and so which env states and
  exploration keys produced it, and which weights (any sync point published before its
  request) acted. What does not: the keys of the learner's SGD steps and of each request
  (iteration t's, from the key chain), the schedule of learning rounds, weight syncs and
  counters, and the replay's semantics.

Initial priorities (`train.actor_priorities`, off by default): as in Ape-X, each worker
computes the priorities of the transitions it sends, |TD error| + replay.eps
(`hrl.replay.buffer.raw_priorities`, what the learner's `update` writes) from the weights it
acted with (`agent.td_errors`, the TD errors of the agent's own loss), and the learner inserts
the transitions with them instead of the largest priority seen; alpha and the tree's format
(fixed point included) apply in the buffer as for every priority. The workers then receive the
leaves that function reads as well (the target networks). Off, every executor runs one
algorithm (N = 1 is the pipelined executor bit for bit); on, a fixed-schedule run is still the
same bit for bit every time.

Both honour the samples-per-insert limiter: a request is only sent once its inserts keep the
limiter's error within the tolerance, given the learner's samples so far.

Faults: a worker that dies is restarted by Ray (`max_restarts`); the learner warns, loads the
worker's state after its last consumed iteration back into it (the results carry it, a host
env's simulators included) and sends its lost requests again, so the run goes on with the same
results. Workers never outlive the learner: each one watches the learner's pid
(`lifetime.exit_with_pid`).

Checkpoints: the learner's state holds the actors' state of the last iteration it took, and
`actors_state` the state of every worker at the chunk's end (each worker's envs, observations,
n-step window, exploration carry and a host env's simulators), which the driver saves beside
the checkpoint (`hrl.runtime.checkpoint`). A resume loads each worker from its own state: the
keys come from the learner's key chain and the weights each request acts with from the
iteration counts, and no request is in flight at a chunk's end, so with the fixed schedule a
resumed run is the uninterrupted one bit for bit for any N. A checkpoint without the workers'
states (an older one) starts every worker from the learner's actors' state, with a warning.

Ray is an optional dependency (the `distributed` extra, installed by `make setup`). Local by
default: `start_ray` starts Ray on this machine, quietly; `--ray-address` or `RAY_ADDRESS`
joins a cluster.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from hrl.config import config_from_dict, to_dict
from hrl.replay.buffer import raw_priorities
from hrl.runtime import rate_limit as rl
from hrl.runtime.cpu_backend import running_cpu_dispatch
from hrl.runtime.executors.actors import (
    act_chunk,
    actor_calls_of,
    agent_iteration,
    leaves_read,
    policy_leaves,
)
from hrl.runtime.executors.pipelined import PipelinedLoop
from hrl.runtime.iteration import ActorState, ChunkOut, TrainState, actor_of
from hrl.runtime.lifetime import children_named, exit_with_pid, parent_of
from hrl.runtime.rate_limit import LimiterState

try:
    import ray
    from ray.exceptions import RayActorError
except ImportError:  # the optional extra is not installed: `start_ray` says so
    ray, RayActorError = None, None

SCHEDULES = ("fixed", "free")
# Free schedule: requests queued on each worker. One leaves the worker idle from the moment it
# returns a batch until the learner has taken it and sent the next; two keep it stepping.
FREE_QUEUED = 2
MAX_RESTARTS = 3  # per worker
RESTART_WAIT_S = 120.0


def initial_priorities(agent, eps: float) -> Callable:
    """(agent state, transitions) -> their raw priorities |td| + eps (before alpha, as the
    replay's `add` takes them): the TD errors of the agent's own loss (`agent.td_errors`) and
    the replay's one definition of a priority (`raw_priorities`)."""

    def priorities(agent_state, transitions):
        return raw_priorities(agent.td_errors(agent_state, transitions), eps)

    return priorities


class RayUnavailable(RuntimeError):
    """Ray is not installed, or cannot start or be reached (one line)."""


def start_ray(address: str | None = None) -> None:
    """Join Ray: the running cluster when this process already did, else `address` or
    RAY_ADDRESS, else a new local instance (no dashboard, errors only). A one-line
    `RayUnavailable` when Ray is missing or cannot start (a port, the object store's memory)."""
    if ray is None:
        raise RayUnavailable("train.executor=distributed needs Ray: `make setup` installs it "
                           "(or pip install 'hrl[distributed]')")
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    check_reachable(address)
    try:
        with warnings.catch_warnings():
            # Ray starts its processes with fork + exec, which the warning about forking a
            # process that runs JAX's threads does not concern.
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
            # No address: a new local Ray ("local"), never the cluster Ray's default (None)
            # joins from <RAY_TMPDIR>/ray/ray_current_cluster, which a dead cluster leaves.
            ray.init(address=address or "local", include_dashboard=False, logging_level="ERROR",
                     log_to_driver=False, configure_logging=True)
    except Exception as err:  # Ray raises many kinds; the user needs one line
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RayUnavailable(f"could not start {where}: {first[:200]}") from None


def check_reachable(address: str | None) -> None:
    """A one-line `RayUnavailable` unless `address` (HOST:PORT; None or "auto": nothing to
    check) answers within 5 s: Ray itself retries an address that does not answer for
    minutes, logging as it goes."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as err:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address} (--ray-address or "
                             f"RAY_ADDRESS, HOST:PORT): {err}") from None


class ActorWorker:
    """One actor worker (a Ray actor): the run's actors' calls and its own actors' state."""

    def __init__(self, cfg_dict: dict, learner_pid: int, learner_host: str):
        if learner_host == os.uname().nodename:  # never outlive the learner (same host only)
            raylet = os.getppid()
            # A Ray the learner started here: its agents outlive a killed raylet, so they go too.
            agents = (children_named(raylet, "ray::DashboardAgent")
                      + children_named(raylet, "ray::RuntimeEnvAgent")
                      if parent_of(raylet) == learner_pid else [])
            exit_with_pid(learner_pid, also=tuple(agents))
        self.calls, self.env, agent = actor_calls_of(cfg_dict)
        cfg = config_from_dict(cfg_dict)
        self.priorities = (jax.jit(initial_priorities(agent, cfg.replay.eps))
                           if cfg.train.actor_priorities else None)
        self.actor = None
        self.agents: dict[int, Any] = {}  # sync point -> agent on this worker's device
        self.template = None  # (treedef, full leaves): the leaves inference does not read

    def load(self, actor, host_state, template) -> bool:
        """Start from `actor` (the actors' state as numpy) and a host env's simulators."""
        self.actor = jax.device_put(actor)
        if host_state is not None:
            self.env.load_state(host_state)
        if template is not None:
            treedef, leaves = template
            self.template = (treedef, [jax.device_put(x) for x in leaves])
            self.agents = {}
        return True

    def pid(self) -> int:
        return os.getpid()

    def cpu_dispatch(self) -> str:
        """The dispatch this worker's JAX CPU backend runs in: "sync" when `actor_calls_of`
        started it (JAX's default is "async")."""
        return running_cpu_dispatch()

    def cpu_seconds(self) -> float:
        """The CPU seconds this worker's process has run so far (all its threads)."""
        return time.process_time()

    def _agent(self, j: int, weights: list):
        if j not in self.agents:
            treedef, full = self.template
            leaves = ray.get(weights[0])  # the sync point's leaves, fetched once
            # j never decreases from one request of a worker to the next (either schedule)
            self.agents = {k: a for k, a in self.agents.items() if k >= j}
            self.agents[j] = jax.tree.unflatten(treedef, [
                old if new is None else jax.device_put(new)
                for new, old in zip(leaves, full, strict=True)])
        return self.agents[j]

    def act(self, t: int, j: int, weights: list, key, env_steps: int):
        """Iteration t with the weights of sync point j (`weights`: [its object ref]), from
        the key before it: (actors' state, transitions, episode ends (L, M), their returns
        (L, M), the transitions' priorities or None, env steps, host env state), as numpy: few
        arrays, since Ray pickles each one on this side and the learner unpickles it."""
        agent = self._agent(j, weights)
        out = []
        act_chunk(self.calls, self.actor, key, env_steps, t, 1, 0, 1, lambda: True,
                  lambda _: agent, out.append)
        _, actor, batch, completed, returns, steps = out[0]
        self.actor = actor
        # Ape-X's initial priorities: the weights that acted, on the transitions they made.
        priorities = None if self.priorities is None else self.priorities(agent, batch)
        host_state = None if self.env.spec.is_jax else self.env.save_state()
        actor, batch, completed, returns, priorities = jax.device_get(
            (actor, batch, completed, returns, priorities))
        return (actor, batch, np.stack(completed), np.stack(returns), priorities, steps,
                host_state)


class _Request:
    """One iteration asked of a worker."""

    def __init__(self, t, worker, args):
        self.t, self.worker, self.args, self.ref = t, worker, args, None


class DistributedLoop(PipelinedLoop):
    """The distributed-actors executor (see the module docstring)."""

    name = "distributed"
    # Its Ray workers' batches interleave: an item's successor is rarely `stride` inserts later.
    inserts_in_order = False

    @classmethod
    def from_parts(cls, parts) -> DistributedLoop:
        """The distributed executor of a run's `registry.Parts`."""
        t = parts.cfg.train
        return cls(parts.prims, parts.schedule, **cls._pipeline_settings(parts),
                   num_actors=t.num_actors, actor_schedule=t.actor_schedule,
                   priorities=(initial_priorities(parts.agent, parts.cfg.replay.eps)
                               if t.actor_priorities else None),
                   example_transition=parts.example_transition)

    def __init__(self, *args, num_actors: int = 1, actor_schedule: str = "fixed",
                 priorities: Callable | None = None, example_transition=None, **kwargs):
        """`priorities`: `initial_priorities` of the run's agent when the workers compute
        them (`train.actor_priorities`), with `example_transition` (one transition, no batch
        dimension) to find the agent leaves it reads; None: the learner's largest priority."""
        super().__init__(*args, actors="process", **kwargs)
        if num_actors < 1:
            raise ValueError(f"config key 'train.num_actors': must be >= 1, got {num_actors}")
        if actor_schedule not in SCHEDULES:
            raise ValueError(f"config key 'train.actor_schedule': one of {SCHEDULES}, got "
                             f"{actor_schedule!r}")
        # The workers read train.actor_priorities from the config; the learner must send them
        # the leaves that function reads (else they would compute with stale target networks).
        wanted = bool(self._config.train.actor_priorities)
        if (priorities is not None) != wanted or (wanted and example_transition is None):
            raise ValueError(f"distributed loop: config key 'train.actor_priorities' is "
                             f"{wanted} but the loop was given priorities={priorities!r} and "
                             f"example_transition={'set' if example_transition else None}")
        self.num_actors, self.actor_schedule = num_actors, actor_schedule
        self.priorities, self._example = priorities, example_transition
        start_ray()  # at build, so a Ray that cannot start stops the run before it starts
        self.restarts = 0  # workers restarted so far
        self._workers: list | None = None
        self._last: list = []  # per worker: (actors' state, host env state) after its last take
        # (iteration, `_last`) at the end of the last chunk that finished, or loaded from a
        # checkpoint (`load_actors_state`): where the workers start when they (re)start there.
        self._chunk_end: tuple[int, list] | None = None
        self._leaves = None

    # --- workers ---------------------------------------------------------------------------
    def _start_workers(self, state: TrainState) -> None:
        remote = ray.remote(num_cpus=0, max_restarts=MAX_RESTARTS, max_task_retries=0)(
            ActorWorker)
        cfg = to_dict(self._config)
        self._workers = [remote.options(name=None).remote(cfg, os.getpid(), os.uname().nodename)
                         for _ in range(self.num_actors)]
        self._leaves = policy_leaves(self.prims.infer, state)
        if self.priorities is not None:  # and what the TD errors read (the target networks)
            m = self.schedule.inserts_per_iter
            batch = jax.tree.map(lambda x: jax.ShapeDtypeStruct((m, *np.shape(x)),
                                                                np.asarray(x).dtype),
                                 self._example)
            self._leaves = [a or b for a, b in zip(
                self._leaves, leaves_read(self.priorities, state.agent, batch), strict=True)]
        leaves, treedef = jax.tree.flatten(state.agent)
        self._template = (treedef, jax.device_get(leaves))
        first = int(jax.device_get(state.iteration))
        if self._chunk_end is not None and self._chunk_end[0] == first:
            self._last = list(self._chunk_end[1])  # each worker where it was
        else:
            host = None if self._host_env is None else self._host_env.save_state()
            self._last = [(jax.device_get(actor_of(state)), host)] * self.num_actors
        ray.get([w.load.remote(*last, self._template)
                 for w, last in zip(self._workers, self._last, strict=True)])

    def _publish(self, agent) -> Any:
        """The leaves inference reads, into the object store once."""
        leaves = jax.tree.leaves(agent)
        return ray.put(jax.device_get([leaf if used else None
                                       for leaf, used in zip(leaves, self._leaves, strict=True)]))

    def _send(self, request: _Request) -> None:
        request.ref = self._workers[request.worker].act.remote(*request.args)

    def _take(self, request: _Request, in_flight: list[_Request]):
        """The request's result; a dead worker is restarted and its lost requests sent again."""
        while True:
            try:
                return ray.get(request.ref)
            except RayActorError as err:
                self._recover(request.worker, in_flight, err)

    def _recover(self, w: int, in_flight: list[_Request], err) -> None:
        self.restarts += 1
        print(f"warning: actor worker {w} died ({type(err).__name__}); restarting it "
              f"(restart {self.restarts})", file=sys.stderr, flush=True)
        lost = [r for r in in_flight if r.worker == w]
        for r in lost:  # every request still queued on the dead worker is lost
            try:
                ray.get(r.ref)
            except RayActorError:
                pass
        deadline = time.monotonic() + RESTART_WAIT_S
        while True:
            try:
                ray.get(self._workers[w].load.remote(*self._last[w], self._template))
                break
            except RayActorError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"actor worker {w} did not come back after "
                                       f"{RESTART_WAIT_S:g} s") from None
                time.sleep(0.5)
        for r in lost:
            self._send(r)

    # --- the loop ----------------------------------------------------------------------------
    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations: requests sent ahead as the schedule and the limiter allow,
        results taken in order (fixed) or as they come (free), the learner's round after each."""
        if self._workers is None:
            self._start_workers(state)
        c, sch, limit = self.calls, self.schedule, self.rate_limit
        n, free = self.num_actors, self.actor_schedule == "free"
        first = int(jax.device_get(state.iteration))
        updates = int(jax.device_get(state.updates))
        steps0 = int(jax.device_get(state.env_steps))
        end = first + num_iters
        limiter = LimiterState(first * sch.inserts_per_iter, updates * sch.batch_size)
        asked = limiter  # the limiter's counters with every request sent counted as inserted
        published = {first - 1: self._publish(state.agent)}
        newest = first - 1
        key, u = state.key, first  # the key chain before iteration u, the next one to send
        chain: dict[int, Any] = {}  # iteration -> its inputs (the learner's keys)
        in_flight: list[_Request] = []
        idle = deque(list(range(n)) * FREE_QUEUED)  # free: a worker per request it may take
        agent, replay, pending = state.agent, c.own(state.replay), state.pending
        rows, low, high = [], float("inf"), None

        def send_upto(done: int) -> None:
            nonlocal key, u, asked, high
            while u < end and (u <= done + 1 + self.depth if not free else idle):
                if limit is not None:
                    if not rl.can_insert(limit, asked, sch.inserts_per_iter):
                        return
                    asked, _ = rl.insert(limit, asked, sch.inserts_per_iter)
                    high = rl.error(limit, asked) if high is None else max(
                        high, rl.error(limit, asked))
                j = newest if free else agent_iteration(u, first, self.depth,
                                                        self.weight_sync_period)
                w = idle.popleft() if free else u % n
                steps = steps0 + (u - first) * sch.env_steps_per_iter
                # the key as numpy: Ray pickles a jax.Array through a device transfer
                request = _Request(u, w, (u, j, [published[j]], np.asarray(key), steps))
                self._send(request)
                in_flight.append(request)
                chain[u] = c.inputs_from(key, steps, u)
                key, u = chain[u].key, u + 1

        try:
            send_upto(first - 1)
            for t in range(first, end):
                if free:
                    ready, _ = ray.wait([r.ref for r in in_flight], num_returns=1)
                    w = next(r.worker for r in in_flight if r.ref == ready[0])
                    # that worker's oldest request: it ran first (a worker runs them in order)
                    request = next(r for r in in_flight if r.worker == w)
                else:
                    request = next(r for r in in_flight if r.t == t)
                result = self._take(request, in_flight)
                in_flight.remove(request)
                actor, batch, completed, returns, priorities, _, host_state = result
                self._last[request.worker] = (actor, host_state)
                if free:
                    idle.append(request.worker)
                inputs = chain.pop(t)
                (agent, replay, pending, do_learn, td_abs, metric_rows, limiter,
                 low) = self._learner_step(agent, replay, pending, batch, inputs, t, limiter, low,
                                           priorities)
                if do_learn and limit is not None:
                    asked = asked._replace(samples=limiter.samples)
                if (t + 1) % self.weight_sync_period == 0:
                    published[t] = self._publish(agent)
                    newest = t
                oldest = newest if free else agent_iteration(u, first, self.depth,
                                                             self.weight_sync_period)
                for old in [k for k in published if k < oldest]:
                    del published[old]  # no request still to be sent names it
                steps = steps0 + (t - first + 1) * sch.env_steps_per_iter
                state, row = c.finish(state, inputs._replace(updates=updates),
                                      ActorState(*actor), agent, replay, pending, steps,
                                      do_learn, completed, returns, td_abs, metric_rows)
                updates += sch.updates_per_round if do_learn else 0
                rows.append(row)
                send_upto(t)
        except BaseException:
            # Mid-chunk (Ctrl-C, an error): the workers may have acted past the state the
            # learner keeps, so they go; the next chunk starts new ones from its state.
            for w in self._workers:
                ray.kill(w, no_restart=True)
            self._workers = None
            raise
        if self._host_env is not None and rows:
            self._host_env.load_state(host_state)  # the simulators the state's actors hold
        if limit is not None:
            self.limiter_band = (None if low == float("inf") else low, high)
        # No request is in flight at a chunk's end: each worker is where `_last` says.
        self._chunk_end = (end, list(self._last))
        return c.settle(state), c.stack(rows)

    # --- checkpoints ---------------------------------------------------------------------------
    def actors_state(self, iteration: int) -> bytes | None:
        """Every worker's actors' state after learner iteration `iteration` (a chunk's end),
        for the checkpoint of the state there; None when no chunk ended there (a chunk that
        stopped midway: its workers acted past it)."""
        if self._chunk_end is None or self._chunk_end[0] != iteration:
            return None
        return pickle.dumps({"iteration": iteration, "num_actors": self.num_actors,
                             "workers": self._chunk_end[1]})

    def load_actors_state(self, blob: bytes | None, iteration: int) -> None:
        """The workers' states a checkpoint at `iteration` saved (`actors_state`): the next
        chunk starts each worker from its own. None (a checkpoint without them): every worker
        starts from the learner's actors' state, with a warning when N > 1."""
        # A pickle, like the host envs' state beside it: resume only run directories you trust.
        saved = None if blob is None else pickle.loads(blob)
        if saved is None or saved["iteration"] != iteration or \
                saved["num_actors"] != self.num_actors:
            if self.num_actors > 1:
                print(f"warning: the checkpoint holds no state of the {self.num_actors} actor "
                      "workers; each starts from the learner's actors' state, so the resumed "
                      "run differs from an uninterrupted one", file=sys.stderr, flush=True)
            self._chunk_end = None
            return
        self._chunk_end = (iteration, saved["workers"])

    def actor_pids(self) -> list[int]:
        """The workers' process ids (for tests and tools)."""
        return ray.get([w.pid.remote() for w in self._workers])

    def actor_cpu_seconds(self) -> list[float]:
        """Each worker's CPU seconds so far (for benchmarks and tools)."""
        return ray.get([w.cpu_seconds.remote() for w in self._workers])

    def close(self) -> None:
        super().close()
        if self._workers is not None:
            for w in self._workers:
                ray.kill(w, no_restart=True)
            self._workers = None

