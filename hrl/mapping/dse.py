"""Design-space exploration: every mapping of the five primitives onto the placements, in one
jitted, vectorized evaluation.

A mapping assigns each primitive (env, infer, sample, update, train) a placement; with P
placements there are P**5 of them, enumerated as base-P digits of 0 .. P**5 - 1 inside jit.

Iteration time of a mapping (one iteration = `workload.Workload`'s loop body):

* calls: `sum_c count_c * latency[c, placement(c)]`;
* the loop's own bookkeeping per iteration (host loop or fused loop, measured by the profiler),
  charged to the host CPU (the host loop) or to the fused loop's device; a host loop's per
  dependency mode, in the CPU dispatch `train.cpu_dispatch: auto` gives it in that mode;
* links: every edge (src -> dst, bytes, count) whose ends sit on different placements costs
  `count * (hop(src) + hop(dst))`, where a placement's hop is its way to host memory: none for
  the host CPU itself, a memcpy for another host backend, a PCIe transfer for an accelerator
  (`links.Link.time`: latency + bytes / bandwidth). Two accelerators talk through the host.
* strict dependency: everything on the critical path, in order -> the sum of calls and links;
* relaxed dependency (staleness s > 0), as the host loops run it
  (`HostLoop._overlapped_round`): with the
  tree on another placement than train and off its call queue, a thread writes update(t-s)
  and draws sample(t+1) while train(t) runs, one thread hand-off per SGD step (`link:thread`
  in the profile); in train's queue (its placement, or the XLA tree `cpu-xla` on the same
  device: `Placement.queue`) the calls run in order, as in strict. Per iteration that saves
  the share `overlap` of the shorter of the two sides that the thread hides where the tree sits
  (measured in the runtime's own loops, strict against relaxed: profile rows `overlap:loop`,
  1 where none; below 0 where the two sides slow each other down by more than they overlap,
  as two CPU-bound sides can on a machine with few cores at small sizes), less the hand-off,
  and no resource can do more than its busy time allows (the host CPU on its cores):
  relaxed = max(strict - (overlap * min(train side, replay side) - sgd_steps * hand-off),
                busiest resource / its cores),
  train side = train + the batch's link from sample, replay side = sample + update + the TD
  errors' link to update. Nothing else overlaps in the sequential executor: the actors run
  before the learner in every mode. (Deeper overlap, s + 1 learner chains in flight, is what
  a relaxed dependency would allow; no executor here runs it, so the model does not price
  it.) The fused loop runs in order in one scan: relaxed = strict.
* the pipelined executor (actors in a process of their own beside the learner's, both driven
  by host loops): the two sides run at the same time, so an iteration is bounded by the slower
  side and by what the shared host CPU can do on its cores:
  pipelined = max(actor side, learner side, host CPU busy / cores, any other resource's busy),
  actor side = env and infer calls + their links + the host loop's per-actor-step bookkeeping
  + the process link for the transitions and the weights (sent by one side, read by the other:
  both pay); learner side = insert, sample, train, update + their links + the rest of the
  bookkeeping + the same process link; strict: the learner side in sequence; relaxed: the
  same less the overlap above (the pipelined executor's own, measured with the actors'
  process beside the learner), bounded by its busiest resource. Its hand-offs are the process
  link's (measured by its own profile rows, `link:process`: a batch through the executor's
  queue, both ends), and each side adds the wait its process loses per iteration to being
  woken by the other (`hrl.mapping.pipelined_wait`, measured by the profiler's
  `loop:pipelined` rows). Fused
  mappings have no pipelined form (infinite). A samples-per-insert limiter
  (`train.samples_per_insert`) changes nothing here: it pins the two sides to the iteration's
  ratio, L*M inserts per U*B samples, which is what this max already assumes
  (time = max(actor seconds per insert x L*M, learner seconds per sample x r x L*M)); what it
  does change, how much of one side's jitter the other can absorb, is not modelled.
* the pipelined executor with thread actors (`train.actors: thread`): the same two sides in
  one interpreter. The batch and the weights change hands by reference: each side pays one
  thread hand-off per iteration (`link:thread`, to the other thread and back, the relaxed
  dependency's hand-off) instead of the process link, and one more bound joins the max: the
  GIL, which one thread holds at a time. Both sides' host-loop bookkeeping holds it (the
  loop's Python and dispatch, all of the host loop's per-iteration overhead), and so does a
  host env's step (gymnasium: Python); a compiled call does not while it runs (JAX releases
  it):
  thread = max(actor side, learner side, host CPU busy / cores,
               host-loop bookkeeping + host env calls + both ends of the hand-off).
  It adds no constant: every term is one the other executors already use. No profile row
  checks it (`plan.executor_errors` has no entry), so its predictions carry the uncertainty
  of an unchecked executor (`hrl.mapping.uncertainty.UNKNOWN_UNCERTAINTY`).

Feasible mappings: an exclusive placement (the fused loop) hosts all primitives or none; every
call has a finite latency on its placement (a gymnasium env cannot
run on a GPU or an FPGA; an OpenCL replay backend has no MLP), and sample and update share a
placement, because they read and write one tree (a tree split over two devices would have to be
mirrored on both). Infeasible mappings get time +inf and are never chosen.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping.links import Link, get_link
from hrl.mapping.platform import Placement, latency_table
from hrl.mapping.workload import CALL_PRIMITIVE, CALLS, PRIMITIVES, Workload

ACTOR_CALLS = ("env", "infer")
# The executors an exploration prices (`Exploration.times`).
EXECUTORS = ("auto", "sequential", "fused", "pipelined", "pipelined-thread")
LEARNER_CALLS = ("sample", "train", "update")


@dataclasses.dataclass(frozen=True)
class Problem:
    """Everything the jitted evaluation needs, as numpy arrays (built by `build_problem`)."""

    placements: tuple[str, ...]
    resources: tuple[str, ...]
    latency: np.ndarray  # (calls, P) seconds, NaN = cannot
    counts: np.ndarray  # (calls,)
    call_prim: np.ndarray  # (calls,) index into PRIMITIVES
    edge_src: np.ndarray  # (E,) primitive index
    edge_dst: np.ndarray
    edge_bytes: np.ndarray
    edge_count: np.ndarray
    hop_latency: np.ndarray  # (P,)
    hop_bandwidth: np.ndarray  # (P,) inf where no hop
    hop_resource: np.ndarray  # (P,) resource index, -1 where no hop
    compute_resource: np.ndarray  # (P,) resource index
    exclusive: np.ndarray  # (P,) bool: the placement takes all primitives or none
    sgd_steps: float
    host_resource: int  # index of the host CPU among resources (drives both loops)
    overhead_host: float  # seconds per iteration of the host loop's own bookkeeping
    # (P,) the same for the fused loop on each exclusive placement (where its own loop rows
    # were not measured, the CPU's fused loop's)
    overhead_fused: np.ndarray
    tree_shared: bool = True
    overhead_actor: float = 0.0  # the host loop's bookkeeping that belongs to the actors
    ipc_seconds: float = 0.0  # process link per iteration: transitions + weights, one way
    # Seconds per iteration each side of the pipelined executor (process actors) waits to be
    # woken by the other (`hrl.mapping.pipelined_wait`; 0 when the profile has no rows).
    pipelined_wait: float = 0.0
    host_cores: int = 1
    # The host loop's bookkeeping (all of it, and the actors' part) in relaxed dependency,
    # where the host loops run with another CPU dispatch (None: as in strict).
    overhead_host_relaxed: float | None = None
    overhead_actor_relaxed: float | None = None
    # Seconds per SGD step to hand update and sample to the relaxed dependency's thread and
    # take them back (profile row `link:thread`; 0 when the profile has none).
    replay_handoff: float = 0.0
    # (P,) the share of the shorter side the replay thread hides with the tree on each
    # placement (profile rows `overlap:loop`; 1 where none was measured), in the sequential
    # executor and in the pipelined one (None: as in the sequential).
    replay_overlap: np.ndarray | None = None
    replay_overlap_pipelined: np.ndarray | None = None
    # (P,) the call queue each placement's calls join (`Placement.queue`): the relaxed
    # dependency overlaps the tree with train only where the two queues differ.
    queue: np.ndarray | None = None
    # Whether the env's step holds the GIL (a host env, gymnasium): the thread-actor bound.
    env_holds_gil: bool = False

    def queue_per_placement(self) -> np.ndarray:
        """`queue`, each placement its own where the problem has none."""
        if self.queue is None:
            return np.arange(len(self.placements))
        return np.asarray(self.queue, int)

    def overlap_per_placement(self, executor: str = "sequential") -> np.ndarray:
        """`replay_overlap` (`executor` "pipelined": `replay_overlap_pipelined` where the
        problem has it), ones where the problem has none."""
        if executor == "pipelined" and self.replay_overlap_pipelined is not None:
            return np.asarray(self.replay_overlap_pipelined, float)
        if self.replay_overlap is None:
            return np.ones(len(self.placements))
        return np.asarray(self.replay_overlap, float)

    def relaxed_overheads(self) -> tuple[float, float]:
        """(host, actor) bookkeeping in relaxed dependency."""
        pick = lambda r, s: s if r is None else r  # noqa: E731
        return (pick(self.overhead_host_relaxed, self.overhead_host),
                pick(self.overhead_actor_relaxed, self.overhead_actor))


def build_problem(placements: list[Placement], workload: Workload,
                  link_overrides: dict[str, Link] | None = None,
                  tree_shared: bool = True, loop_overhead: dict | None = None,
                  process_link: Link | None = None, host_cores: int = 1) -> Problem:
    if not placements:
        raise ValueError("no placements to map onto")
    names = [p.name for p in placements]
    if len(set(names)) != len(names):
        raise ValueError(f"placement names must be unique, got {names}")
    resources: list[str] = []

    def res_index(r: str) -> int:
        if r not in resources:
            resources.append(r)
        return resources.index(r)

    compute = np.array([res_index(p.resource) for p in placements])
    hop_lat, hop_bw, hop_res = [], [], []
    for p in placements:
        if p.link == "local":
            hop_lat.append(0.0)
            hop_bw.append(np.inf)
            hop_res.append(-1)
        else:
            link = get_link(p.link, link_overrides)
            hop_lat.append(link.latency)
            hop_bw.append(link.bandwidth)
            # A host memcpy keeps the CPU busy; a PCIe DMA occupies that board's link.
            hop_res.append(res_index("cpu" if p.link == "host" else f"link:{p.name}"))
    host = res_index("cpu")
    queues = list(dict.fromkeys(p.queue_name for p in placements))
    edges = workload.edges()
    counts = workload.counts()
    overhead = loop_overhead or {}
    sequential = overhead.get("replay_overlap", {})  # measured overlap per placement
    pipelined = overhead.get("replay_overlap_pipelined", {})
    return Problem(
        placements=tuple(names), resources=tuple(resources),
        latency=np.array(latency_table(placements, workload, CALLS), float),
        counts=np.array([counts[c] for c in CALLS], float),
        call_prim=np.array([PRIMITIVES.index(CALL_PRIMITIVE[c]) for c in CALLS]),
        edge_src=np.array([PRIMITIVES.index(e[0]) for e in edges]),
        edge_dst=np.array([PRIMITIVES.index(e[1]) for e in edges]),
        edge_bytes=np.array([e[2] for e in edges], float),
        edge_count=np.array([e[3] for e in edges], float),
        hop_latency=np.array(hop_lat, float), hop_bandwidth=np.array(hop_bw, float),
        hop_resource=np.array(hop_res), compute_resource=compute,
        exclusive=np.array([p.exclusive for p in placements], bool),
        sgd_steps=float(workload.sgd_steps), host_resource=host,
        overhead_host=float(overhead.get("host", 0.0)),
        overhead_fused=np.array([overhead.get("fused_by_placement", {}).get(
            n, overhead.get("fused", 0.0)) for n in names], float), tree_shared=tree_shared,
        overhead_actor=float(overhead.get("host_actor", 0.0)),
        ipc_seconds=_ipc_seconds(workload, process_link), host_cores=int(host_cores),
        pipelined_wait=float(overhead.get("pipelined_wait", 0.0)),
        overhead_host_relaxed=_optional(overhead.get("host_relaxed")),
        overhead_actor_relaxed=_optional(overhead.get("host_actor_relaxed")),
        replay_handoff=float(overhead.get("replay_handoff", 0.0)),
        replay_overlap=np.array([sequential.get(n, 1.0) for n in names], float),
        replay_overlap_pipelined=np.array([pipelined.get(n, sequential.get(n, 1.0))
                                           for n in names], float),
        queue=np.array([queues.index(p.queue_name) for p in placements]),
        env_holds_gil=workload.env_kind == "gymnasium",
    )


def _optional(x) -> float | None:
    return None if x is None else float(x)


def _ipc_seconds(workload: Workload, link: Link | None) -> float:
    """Seconds per iteration the process link costs one side: the transitions every
    iteration, the policy's weights every weight_sync_period iterations (only the leaves
    inference reads cross, `hrl.runtime.executors.actors.policy_leaves`)."""
    if link is None:
        return 0.0
    edges = {(src, dst): (nbytes, count) for src, dst, nbytes, count in workload.edges()}
    t_bytes, t_count = edges[("env", "update")]
    w_bytes, w_count = edges[("train", "infer")]
    return (t_count * link.time(t_bytes)
            + w_count * link.time(w_bytes))


def enumerate_assignments(n_placements: int, n_primitives: int = len(PRIMITIVES)) -> jax.Array:
    """All n_placements**n_primitives assignments, (M, n_primitives) int32; digit i of the
    row number in base n_placements is primitive i's placement."""
    total = n_placements ** n_primitives
    rows = jnp.arange(total, dtype=jnp.int32)
    powers = n_placements ** jnp.arange(n_primitives, dtype=jnp.int32)
    return (rows[:, None] // powers[None, :]) % n_placements


@functools.partial(jax.jit, static_argnames=("n_placements", "n_resources", "tree_shared"))
def _evaluate(latency, counts, call_prim, edge_src, edge_dst, edge_bytes, edge_count,
              hop_latency, hop_bandwidth, hop_resource, compute_resource, exclusive, sgd_steps,
              staleness, overhead_host, overhead_fused, host_resource, overhead_actor,
              ipc_seconds, pipelined_wait, host_cores, relaxed_overheads, replay_handoff,
              replay_overlap, replay_overlap_pipelined, queue, env_holds_gil, n_placements,
              n_resources, tree_shared):
    host_r, actor_r = relaxed_overheads  # the host loop's bookkeeping in relaxed dependency
    assign = enumerate_assignments(n_placements)  # (M, 5)
    call_place = assign[:, call_prim]  # (M, C)
    n_calls = latency.shape[0]
    call_lat = latency[jnp.arange(n_calls)[None, :], call_place]  # (M, C)
    feasible = jnp.all(jnp.isfinite(call_lat), axis=1)
    if tree_shared:
        feasible &= assign[:, PRIMITIVES.index("sample")] == assign[:, PRIMITIVES.index("update")]
    uses_exclusive = jnp.any(exclusive[assign], axis=1)
    feasible &= ~uses_exclusive | jnp.all(assign == assign[:, :1], axis=1)
    call_time = jnp.where(jnp.isfinite(call_lat), call_lat, 0.0) * counts[None, :]

    src, dst = assign[:, edge_src], assign[:, edge_dst]  # (M, E)

    def hop(p):  # seconds for each edge's bytes over placement p's hop
        t = hop_latency[p] + edge_bytes[None, :] / hop_bandwidth[p]
        return jnp.where((hop_resource[p] >= 0) & (edge_bytes[None, :] > 0), t, 0.0)

    crosses = (src != dst) & (edge_count[None, :] > 0)
    hop_src = jnp.where(crosses, hop(src), 0.0) * edge_count[None, :]
    hop_dst = jnp.where(crosses, hop(dst), 0.0) * edge_count[None, :]
    edge_time = hop_src + hop_dst  # (M, E)

    # The loop that drives the mapping: the fused scan when an exclusive placement holds
    # everything, else the host loop; its bookkeeping runs on the host CPU.
    fused = overhead_fused[assign[:, 0]]  # an exclusive placement holds every primitive
    overhead = jnp.where(uses_exclusive, fused, overhead_host)
    overhead_r = jnp.where(uses_exclusive, fused, host_r)
    strict = call_time.sum(1) + edge_time.sum(1) + overhead

    # Busy time per resource: calls on their compute resource, hops on theirs.
    res_onehot = jax.nn.one_hot(compute_resource[call_place], n_resources)  # (M, C, R)
    busy = jnp.einsum("mc,mcr->mr", call_time, res_onehot)
    busy += jnp.einsum("me,mer->mr", hop_src, jax.nn.one_hot(hop_resource[src], n_resources))
    busy += jnp.einsum("me,mer->mr", hop_dst, jax.nn.one_hot(hop_resource[dst], n_resources))
    # The fused loop's bookkeeping runs inside the scan, on its own device.
    overhead_res = jax.nn.one_hot(
        jnp.where(uses_exclusive, compute_resource[assign[:, 0]], host_resource), n_resources)
    busy_strict = busy + overhead[:, None] * overhead_res
    busy = busy + overhead_r[:, None] * overhead_res  # relaxed dependency's

    call_is = lambda names: jnp.array([c in names for c in CALLS])  # noqa: E731
    calls_of = lambda names: jnp.where(call_is(names)[None, :], call_time, 0.0).sum(1)  # noqa: E731
    edges_of = lambda mask: jnp.where(mask[None, :], edge_time, 0.0).sum(1)  # noqa: E731
    prim = lambda n: PRIMITIVES.index(n)  # noqa: E731
    edge_between = lambda a, b: ((edge_src == prim(a)) & (edge_dst == prim(b))) | (  # noqa: E731
        (edge_src == prim(b)) & (edge_dst == prim(a)))
    actor_edges = edge_between("env", "infer")
    actor_cycle = calls_of(ACTOR_CALLS) + edges_of(actor_edges)

    # Relaxed dependency (module docstring): train(t) beside update(t-s) and sample(t+1) when
    # the tree's calls are off train's call queue, in order otherwise.
    train_side = calls_of(("train",)) + edges_of(edge_between("sample", "train"))
    replay_side = calls_of(("sample", "update")) + edges_of(edge_between("train", "update"))
    overlaps = (queue[assign[:, prim("sample")]] != queue[assign[:, prim("train")]]) & (
        staleness > 0)
    shorter = jnp.minimum(train_side, replay_side)

    def saved_with(overlap):  # measured where the tree sits, per executor
        return jnp.where(overlaps, overlap[assign[:, prim("sample")]] * shorter
                         - sgd_steps * replay_handoff, 0.0)

    saved = saved_with(replay_overlap)
    host_cpu = jax.nn.one_hot(host_resource, n_resources)
    capacity = jnp.where(host_cpu > 0, host_cores, 1.0)  # the host CPU's cores, 1 elsewhere
    relaxed_order = call_time.sum(1) + edge_time.sum(1) + overhead_r
    relaxed = jnp.where(uses_exclusive, strict, jnp.maximum(
        relaxed_order - saved, jnp.max(busy / capacity[None, :], axis=1)))

    # Pipelined: the actors' process and the learner's, side by side (module docstring).
    actor_side = actor_cycle + overhead_actor + ipc_seconds + pipelined_wait
    actor_side_r = actor_cycle + actor_r + ipc_seconds + pipelined_wait
    learner_names = ("insert",) + LEARNER_CALLS
    learner_edge = ~actor_edges
    learner_in_order = calls_of(learner_names) + edges_of(learner_edge)
    learner_strict = learner_in_order + overhead_host - overhead_actor + ipc_seconds \
        + pipelined_wait
    learner_onehot = res_onehot * call_is(learner_names)[None, :, None]
    learner_busy = jnp.einsum("mc,mcr->mr", call_time, learner_onehot)
    learner_busy += jnp.einsum("me,mer->mr", jnp.where(learner_edge[None, :], hop_src, 0.0),
                               jax.nn.one_hot(hop_resource[src], n_resources))
    learner_busy += jnp.einsum("me,mer->mr", jnp.where(learner_edge[None, :], hop_dst, 0.0),
                               jax.nn.one_hot(hop_resource[dst], n_resources))
    learner_relaxed_calls = jnp.maximum(
        learner_in_order - saved_with(replay_overlap_pipelined),
        jnp.max(learner_busy / capacity[None, :], axis=1))
    learner_relaxed = learner_relaxed_calls + host_r - actor_r + ipc_seconds + pipelined_wait
    # Both processes' bookkeeping and the link's two ends keep the host CPU busy, on its cores.
    link_ends = (2.0 * ipc_seconds)[None] * host_cpu[None, :]
    shared_bound = jnp.max((busy_strict + link_ends) / capacity[None, :], axis=1)
    shared_bound_r = jnp.max((busy + link_ends) / capacity[None, :], axis=1)
    pipelined_ok = feasible & ~uses_exclusive
    pipelined_strict = jnp.maximum(jnp.maximum(actor_side, learner_strict), shared_bound)
    pipelined_relaxed = jnp.maximum(jnp.maximum(actor_side_r, learner_relaxed), shared_bound_r)
    # Thread actors (module docstring): a thread hand-off per iteration instead of the process
    # link, and the GIL: both sides' bookkeeping, a host env's steps and the hand-off's ends.
    handoff = replay_handoff
    env_gil = calls_of(("env",)) * env_holds_gil
    thread_ends = (2.0 * handoff)[None] * host_cpu[None, :]
    thread_strict = jnp.maximum(jnp.maximum(
        actor_cycle + overhead_actor + handoff,
        learner_in_order + overhead_host - overhead_actor + handoff), jnp.maximum(
        jnp.max((busy_strict + thread_ends) / capacity[None, :], axis=1),
        overhead_host + env_gil + 2.0 * handoff))
    thread_relaxed = jnp.maximum(jnp.maximum(
        actor_cycle + actor_r + handoff,
        learner_relaxed_calls + host_r - actor_r + handoff), jnp.maximum(
        jnp.max((busy + thread_ends) / capacity[None, :], axis=1),
        host_r + env_gil + 2.0 * handoff))
    inf = jnp.float32(jnp.inf)
    sides = jnp.stack([actor_side, learner_strict, shared_bound,
                       actor_side_r, learner_relaxed, shared_bound_r], axis=1)
    return (assign, feasible, jnp.where(feasible, strict, inf), jnp.where(feasible, relaxed, inf),
            busy, jnp.where(pipelined_ok, pipelined_strict, inf),
            jnp.where(pipelined_ok, pipelined_relaxed, inf), sides,
            jnp.where(pipelined_ok, thread_strict, inf),
            jnp.where(pipelined_ok, thread_relaxed, inf))


@dataclasses.dataclass(frozen=True)
class Exploration:
    """Every mapping with its predicted iteration time (seconds) in both modes."""

    problem: Problem
    assignments: np.ndarray  # (M, 5) placement index per primitive
    feasible: np.ndarray  # (M,)
    strict: np.ndarray  # (M,) seconds per iteration, inf if infeasible
    relaxed: np.ndarray
    busy: np.ndarray  # (M, R) relaxed-mode busy seconds per resource
    staleness: int
    pipelined_strict: np.ndarray | None = None  # (M,) the pipelined executor, inf if it
    pipelined_relaxed: np.ndarray | None = None  # cannot run the mapping
    # (M, 6) the pipelined executor's bounds: actor side, learner side, shared host CPU,
    # strict then relaxed.
    pipelined_sides: np.ndarray | None = None
    # (M,) the pipelined executor with thread actors, inf if it cannot run the mapping.
    thread_strict: np.ndarray | None = None
    thread_relaxed: np.ndarray | None = None

    def pipelined_bounds(self, row: int, mode: str) -> tuple[float, float, float]:
        """(actor side, learner side, shared CPU bound) of a mapping in the pipelined executor,
        seconds per iteration (the iteration is their max)."""
        first = 0 if mode == "strict" else 3
        return tuple(float(x) for x in self.pipelined_sides[row, first:first + 3])

    def times(self, mode: str, executor: str = "auto") -> np.ndarray:
        """Seconds per iteration of every mapping in dependency `mode`, run by `executor`
        ("auto": the fused loop or the sequential host loop, as the mapping implies;
        "pipelined": actors in their own process beside the learner; "pipelined-thread":
        actors in a thread beside the learner)."""
        if mode not in ("strict", "relaxed"):
            raise ValueError(f"dependency mode must be 'strict' or 'relaxed', got {mode!r}")
        if executor == "pipelined":
            return self.pipelined_strict if mode == "strict" else self.pipelined_relaxed
        if executor == "pipelined-thread":
            return self.thread_strict if mode == "strict" else self.thread_relaxed
        if executor not in ("auto", "sequential", "fused"):
            raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
        return self.strict if mode == "strict" else self.relaxed

    def mapping(self, row: int) -> dict[str, str]:
        return {p: self.problem.placements[i] for p, i in zip(PRIMITIVES, self.assignments[row],
                                                              strict=True)}

    def row_of(self, mapping: dict[str, str]) -> int:
        """Row of a mapping given as {primitive: placement name}."""
        names = self.problem.placements
        missing = set(PRIMITIVES) - set(mapping)
        if missing:
            raise ValueError(f"mapping lacks primitives {sorted(missing)}")
        for p, n in mapping.items():
            if n not in names:
                raise ValueError(f"mapping puts {p} on {n!r}, not among placements {names}")
        digits = [names.index(mapping[p]) for p in PRIMITIVES]
        return int(sum(d * len(names) ** i for i, d in enumerate(digits)))

    def top(self, mode: str, k: int = 10, executor: str = "auto") -> list[int]:
        t = self.times(mode, executor)
        order = np.argsort(t, kind="stable")
        return [int(i) for i in order[:k] if np.isfinite(t[i])]

    def best(self, mode: str) -> int:
        top = self.top(mode, 1)
        if not top:
            raise ValueError("no feasible mapping: every assignment leaves some primitive "
                             "without a placement that can run it")
        return top[0]


def explore(placements: list[Placement], workload: Workload, staleness: int = 1,
            link_overrides: dict[str, Link] | None = None,
            tree_shared: bool = True, loop_overhead: dict | None = None,
            process_link: Link | None = None, host_cores: int = 1) -> Exploration:
    """Evaluate every mapping (see the module docstring). O(P**5 * (calls + edges)).

    `loop_overhead`: {"host": s, "fused": s} seconds per iteration of the runtime loop's own
    bookkeeping (see `plan.loop_overheads`), added to every mapping driven by that loop;
    "host_actor": the part of the host loop's that the actors' side pays when pipelined;
    "host_relaxed", "host_actor_relaxed": the same in relaxed dependency (default: as in
    strict).
    `process_link`: the link between the pipelined executor's two processes (measured by the
    profiler); `host_cores`: the cores the two processes share."""
    if not isinstance(staleness, int) or staleness < 0:
        raise ValueError(f"staleness must be an int >= 0, got {staleness!r}")
    prob = build_problem(placements, workload, link_overrides, tree_shared, loop_overhead,
                         process_link, host_cores)
    if len(prob.placements) ** len(PRIMITIVES) > 2**24:
        raise ValueError(f"{len(prob.placements)} placements give too many mappings to "
                         "enumerate at once; pass fewer --devices")
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    i32 = lambda a: jnp.asarray(a, jnp.int32)  # noqa: E731
    (assign, feasible, strict, relaxed, busy, pip_strict, pip_relaxed, sides, thread_strict,
     thread_relaxed) = _evaluate(
        f32(prob.latency), f32(prob.counts), i32(prob.call_prim), i32(prob.edge_src),
        i32(prob.edge_dst), f32(prob.edge_bytes), f32(prob.edge_count), f32(prob.hop_latency),
        f32(prob.hop_bandwidth), i32(prob.hop_resource), i32(prob.compute_resource),
        jnp.asarray(prob.exclusive, bool), f32(prob.sgd_steps), f32(staleness),
        f32(prob.overhead_host), f32(prob.overhead_fused), i32(prob.host_resource),
        f32(prob.overhead_actor), f32(prob.ipc_seconds), f32(prob.pipelined_wait),
        f32(prob.host_cores),
        f32(prob.relaxed_overheads()), f32(prob.replay_handoff),
        f32(prob.overlap_per_placement()), f32(prob.overlap_per_placement("pipelined")),
        i32(prob.queue_per_placement()), f32(prob.env_holds_gil),
        n_placements=len(prob.placements),
        n_resources=len(prob.resources), tree_shared=tree_shared)
    return Exploration(prob, np.asarray(assign), np.asarray(feasible),
                       np.asarray(strict, float), np.asarray(relaxed, float),
                       np.asarray(busy, float), staleness, np.asarray(pip_strict, float),
                       np.asarray(pip_relaxed, float), np.asarray(sides),
                       np.asarray(thread_strict, float), np.asarray(thread_relaxed, float))


def baselines(exp: Exploration, workload: Workload) -> dict[str, dict[str, str]]:
    """Fixed mappings to compare against, where the placements exist:

    * all-cpu: everything on the host CPU (JAX), the faster of the fused and the host loop;
    * all-gpu: everything on the GPU, likewise (a gymnasium env stays on the CPU);
    * framework: what RLlib/Tianshou-style frameworks do: actors (env, infer) and the replay
      buffer (sample, update) on the CPU, the learner (train) on the GPU if there is one,
      driven from a Python loop (the host loop, `cpu`).
    """
    names = exp.problem.placements
    t = exp.strict

    def fastest(*candidates):
        rows = [(t[exp.row_of(m)], i) for i, m in enumerate(candidates)]
        return candidates[min(rows)[1]]

    out = {}
    for dev in ("cpu", "gpu"):
        options = []
        for name in (dev, f"{dev}-fused"):
            if name in names:
                m = {p: name for p in PRIMITIVES}
                if workload.env_kind == "gymnasium" and dev != "cpu" and "cpu" in names:
                    m["env"] = "cpu"
                options.append(m)
        if options:
            out[f"all-{dev}"] = fastest(*options)
    if "cpu" in names:
        out["framework"] = {**{p: "cpu" for p in PRIMITIVES},
                            "train": "gpu" if "gpu" in names else "cpu"}
    return out


def format_mapping(mapping: dict[str, str]) -> str:
    return " ".join(f"{p}={mapping[p]}" for p in PRIMITIVES)


def speedup(t_base: float, t_new: float) -> float:
    return t_base / t_new if (math.isfinite(t_base) and t_new > 0) else float("nan")
