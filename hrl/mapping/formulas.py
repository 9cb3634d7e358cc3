"""The executors' formulas (`hrl.mapping.dse`'s module docstring states them), one function
per executor, evaluated for every mapping at once in one jitted call (`evaluate`).

Each function takes the problem (`Inputs`, from `dse.Problem.inputs`) and what every executor
reads per mapping (`Priced`, from `price`: the calls' and the hops' seconds, feasibility) and
returns its named times, arrays over the M = P**5 mappings:

* `sequential_times`: the host loop, strict and relaxed (`SequentialTimes`);
* `fused_times`: the fused loop on an exclusive placement (`FusedTimes`);
* `pipelined_times`: the pipelined executor with process actors (`Pipelined`: per mode its
  actor side, learner side and shared-CPU bound);
* `thread_times`: the same with thread actors, and the GIL's bound.

Cost: O(P**5 * (calls + edges + resources)) floats per call, compiled once per
(number of placements, number of resources).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from hrl.mapping.workload import CALLS, PRIMITIVES

ACTOR_CALLS = ("env", "infer")
LEARNER_CALLS = ("sample", "train", "update")


def enumerate_assignments(n_placements: int, n_primitives: int = len(PRIMITIVES)) -> jax.Array:
    """All n_placements**n_primitives assignments, (M, n_primitives) int32; digit i of the
    row number in base n_placements is primitive i's placement."""
    total = n_placements ** n_primitives
    rows = jnp.arange(total, dtype=jnp.int32)
    powers = n_placements ** jnp.arange(n_primitives, dtype=jnp.int32)
    return (rows[:, None] // powers[None, :]) % n_placements


class Inputs(NamedTuple):
    """`Problem.inputs`: the jitted evaluation's one argument (scalars are 0-d arrays)."""

    latency: jax.Array
    counts: jax.Array
    call_prim: jax.Array
    edge_src: jax.Array
    edge_dst: jax.Array
    edge_bytes: jax.Array
    edge_count: jax.Array
    hop_latency: jax.Array
    hop_bandwidth: jax.Array
    hop_resource: jax.Array
    compute_resource: jax.Array
    exclusive: jax.Array
    queue: jax.Array
    sgd_steps: jax.Array
    staleness: jax.Array
    host_resource: jax.Array
    host_cores: jax.Array
    env_holds_gil: jax.Array
    ipc_seconds: jax.Array
    host: jax.Array  # the loops' constants (`LoopConstants`)
    host_actor: jax.Array
    host_relaxed: jax.Array
    host_actor_relaxed: jax.Array
    pipelined_wait: jax.Array
    replay_handoff: jax.Array
    fused_bookkeeping: jax.Array  # (P,) each placement's fused loop (`constants.FusedLoopCosts`)
    fused_unpaid: jax.Array
    overlap: jax.Array  # (P,) the replay thread's share, sequential executor
    overlap_pipelined: jax.Array  # (P,) pipelined executor


class Priced(NamedTuple):
    """What every executor's formula reads, per mapping (M of them)."""

    assign: jax.Array  # (M, 5) placement per primitive
    feasible: jax.Array  # (M,)
    exclusive: jax.Array  # (M,) whether an exclusive placement (the fused loop) holds it
    call_time: jax.Array  # (M, C) seconds per iteration of each call on its placement
    edge_time: jax.Array  # (M, E) seconds per iteration of each edge's hops (both ends)
    hop_src: jax.Array  # (M, E) the source end's share of edge_time
    hop_dst: jax.Array
    src: jax.Array  # (M, E) placement of each edge's ends
    dst: jax.Array
    res_onehot: jax.Array  # (M, C, R) each call's compute resource
    capacity: jax.Array  # (R,) the host CPU's cores, 1 for every other resource
    host_cpu: jax.Array  # (R,) one-hot of the host CPU


def price(x: Inputs, n_placements: int, n_resources: int, tree_shared: bool) -> Priced:
    """Every mapping's calls, hops and feasibility (module docstring)."""
    assign = enumerate_assignments(n_placements)  # (M, 5)
    call_place = assign[:, x.call_prim]  # (M, C)
    n_calls = x.latency.shape[0]
    call_lat = x.latency[jnp.arange(n_calls)[None, :], call_place]  # (M, C)
    feasible = jnp.all(jnp.isfinite(call_lat), axis=1)
    if tree_shared:
        feasible &= assign[:, _prim("sample")] == assign[:, _prim("update")]
    exclusive = jnp.any(x.exclusive[assign], axis=1)
    feasible &= ~exclusive | jnp.all(assign == assign[:, :1], axis=1)
    call_time = jnp.where(jnp.isfinite(call_lat), call_lat, 0.0) * x.counts[None, :]
    src, dst = assign[:, x.edge_src], assign[:, x.edge_dst]  # (M, E)

    def hop(p):  # seconds for each edge's bytes over placement p's hop
        t = x.hop_latency[p] + x.edge_bytes[None, :] / x.hop_bandwidth[p]
        return jnp.where((x.hop_resource[p] >= 0) & (x.edge_bytes[None, :] > 0), t, 0.0)

    crosses = (src != dst) & (x.edge_count[None, :] > 0)
    hop_src = jnp.where(crosses, hop(src), 0.0) * x.edge_count[None, :]
    hop_dst = jnp.where(crosses, hop(dst), 0.0) * x.edge_count[None, :]
    host_cpu = jax.nn.one_hot(x.host_resource, n_resources)
    return Priced(assign, feasible, exclusive, call_time, hop_src + hop_dst, hop_src, hop_dst,
                   src, dst, jax.nn.one_hot(x.compute_resource[call_place], n_resources),
                   jnp.where(host_cpu > 0, x.host_cores, 1.0), host_cpu)


def _prim(name: str) -> int:
    return PRIMITIVES.index(name)


def _call_is(names) -> jax.Array:
    return jnp.array([c in names for c in CALLS])


def _calls_of(m: Priced, names) -> jax.Array:
    return jnp.where(_call_is(names)[None, :], m.call_time, 0.0).sum(1)


def _edges_of(m: Priced, mask) -> jax.Array:
    return jnp.where(mask[None, :], m.edge_time, 0.0).sum(1)


def _edge_between(x: Inputs, a: str, b: str) -> jax.Array:
    return (((x.edge_src == _prim(a)) & (x.edge_dst == _prim(b)))
            | ((x.edge_src == _prim(b)) & (x.edge_dst == _prim(a))))


def _hops_busy(x: Inputs, m: Priced, n_resources: int, mask=None) -> jax.Array:
    """(M, R) seconds each resource spends on the hops (of the edges in `mask`)."""
    hop_src = m.hop_src if mask is None else jnp.where(mask[None, :], m.hop_src, 0.0)
    hop_dst = m.hop_dst if mask is None else jnp.where(mask[None, :], m.hop_dst, 0.0)
    return (jnp.einsum("me,mer->mr", hop_src, jax.nn.one_hot(x.hop_resource[m.src],
                                                             n_resources))
            + jnp.einsum("me,mer->mr", hop_dst, jax.nn.one_hot(x.hop_resource[m.dst],
                                                               n_resources)))


def _busiest(busy: jax.Array, m: Priced) -> jax.Array:
    """The busiest resource's seconds over what it can run at once (the host CPU's cores)."""
    return jnp.max(busy / m.capacity[None, :], axis=1)


def _replay_saving(x: Inputs, m: Priced, overlap: jax.Array) -> jax.Array:
    """What the relaxed dependency's replay thread saves per iteration (module docstring):
    overlap * min(train side, replay side) - SGD steps * hand-off, where the tree's calls are
    off train's call queue, else nothing."""
    train_side = _calls_of(m, ("train",)) + _edges_of(m, _edge_between(x, "sample", "train"))
    replay_side = _calls_of(m, ("sample", "update")) + _edges_of(
        m, _edge_between(x, "train", "update"))
    tree = m.assign[:, _prim("sample")]
    overlaps = (x.queue[tree] != x.queue[m.assign[:, _prim("train")]]) & (x.staleness > 0)
    shorter = jnp.minimum(train_side, replay_side)
    return jnp.where(overlaps, overlap[tree] * shorter - x.sgd_steps * x.replay_handoff, 0.0)


class SequentialTimes(NamedTuple):
    """The sequential executor's seconds per iteration, and each resource's busy seconds."""

    strict: jax.Array
    relaxed: jax.Array
    busy_strict: jax.Array  # (M, R)
    busy_relaxed: jax.Array


def sequential_times(x: Inputs, m: Priced, n_resources: int) -> SequentialTimes:
    """The host loop: strict = calls + links + host; relaxed = max(calls + links +
    host_relaxed - replay saving, busiest resource / its cores) (module docstring)."""
    busy = jnp.einsum("mc,mcr->mr", m.call_time, m.res_onehot) + _hops_busy(x, m, n_resources)
    in_order = m.call_time.sum(1) + m.edge_time.sum(1)
    busy_relaxed = busy + x.host_relaxed * m.host_cpu[None, :]
    relaxed = jnp.maximum(in_order + x.host_relaxed - _replay_saving(x, m, x.overlap),
                          _busiest(busy_relaxed, m))
    return SequentialTimes(in_order + x.host, relaxed, busy + x.host * m.host_cpu[None, :],
                           busy_relaxed)


class FusedTimes(NamedTuple):
    """The fused executor's seconds per iteration (either dependency: one scan runs its
    calls in order) and each resource's busy seconds."""

    seconds: jax.Array
    busy: jax.Array  # (M, R)


def fused_times(x: Inputs, m: Priced, n_resources: int) -> FusedTimes:
    """The fused loop on the exclusive placement p that holds every primitive:
    calls - unpaid(p) + bookkeeping(p) (`constants.FusedLoopCosts`), all on p's device."""
    p = m.assign[:, 0]
    loop = x.fused_bookkeeping[p] - x.fused_unpaid[p]
    seconds = m.call_time.sum(1) + m.edge_time.sum(1) + loop
    busy = (jnp.einsum("mc,mcr->mr", m.call_time, m.res_onehot) + _hops_busy(x, m, n_resources)
            + loop[:, None] * jax.nn.one_hot(x.compute_resource[p], n_resources))
    return FusedTimes(seconds, busy)


class PipelinedSides(NamedTuple):
    """One pipelined executor's bounds on an iteration in one dependency mode, seconds: its
    actor side, its learner side, the shared host CPU (and the GIL for thread actors; 0 for
    process actors, which hold none of each other's); the iteration is their max."""

    actor: jax.Array
    learner: jax.Array
    shared_cpu: jax.Array
    gil: jax.Array
    seconds: jax.Array


class Pipelined(NamedTuple):
    strict: PipelinedSides
    relaxed: PipelinedSides


def _learner(x: Inputs, m: Priced, n_resources: int):
    """The learner side's calls and links in order, and the same with the replay thread in
    relaxed dependency (bounded by the learner's busiest resource)."""
    names = ("insert",) + LEARNER_CALLS
    edges = ~_edge_between(x, "env", "infer")
    in_order = _calls_of(m, names) + _edges_of(m, edges)
    busy = jnp.einsum("mc,mcr->mr", m.call_time, m.res_onehot * _call_is(names)[None, :, None])
    busy += _hops_busy(x, m, n_resources, edges)
    relaxed = jnp.maximum(in_order - _replay_saving(x, m, x.overlap_pipelined),
                          _busiest(busy, m))
    return in_order, relaxed


def pipelined_times(x: Inputs, m: Priced, seq: SequentialTimes, n_resources: int) -> Pipelined:
    """Process actors (module docstring): max(actor side, learner side, host CPU busy /
    cores); each side pays the process link (`ipc_seconds`) and the wait; the host loop's
    bookkeeping splits into the actors' part (host_actor) and the learner's (the rest)."""
    actor_cycle = _calls_of(m, ACTOR_CALLS) + _edges_of(m, _edge_between(x, "env", "infer"))
    learner_in_order, learner_relaxed = _learner(x, m, n_resources)
    link_ends = (2.0 * x.ipc_seconds)[None] * m.host_cpu[None, :]
    zero = jnp.zeros_like(actor_cycle)

    def sides(host, actor_part, learner_calls, busy):
        actor = actor_cycle + actor_part + x.ipc_seconds + x.pipelined_wait
        learner = learner_calls + host - actor_part + x.ipc_seconds + x.pipelined_wait
        shared = _busiest(busy + link_ends, m)
        return PipelinedSides(actor, learner, shared, zero,
                              jnp.maximum(jnp.maximum(actor, learner), shared))

    return Pipelined(
        sides(x.host, x.host_actor, learner_in_order, seq.busy_strict),
        sides(x.host_relaxed, x.host_actor_relaxed, learner_relaxed, seq.busy_relaxed))


def thread_times(x: Inputs, m: Priced, seq: SequentialTimes,
                      n_resources: int) -> Pipelined:
    """Thread actors (module docstring): the process actors' sides with a thread hand-off
    (`replay_handoff`) per iteration instead of the process link and no wait, and the GIL:
    max(actor side, learner side, host CPU busy / cores, host-loop bookkeeping + host env
    calls + both ends of the hand-off)."""
    actor_cycle = _calls_of(m, ACTOR_CALLS) + _edges_of(m, _edge_between(x, "env", "infer"))
    learner_in_order, learner_relaxed = _learner(x, m, n_resources)
    handoff = x.replay_handoff
    env_gil = _calls_of(m, ("env",)) * x.env_holds_gil
    ends = (2.0 * handoff)[None] * m.host_cpu[None, :]

    def sides(host, actor_part, learner_calls, busy):
        actor = actor_cycle + actor_part + handoff
        learner = learner_calls + host - actor_part + handoff
        shared = _busiest(busy + ends, m)
        gil = host + env_gil + 2.0 * handoff
        return PipelinedSides(actor, learner, shared, gil, jnp.maximum(
            jnp.maximum(actor, learner), jnp.maximum(shared, gil)))

    return Pipelined(
        sides(x.host, x.host_actor, learner_in_order, seq.busy_strict),
        sides(x.host_relaxed, x.host_actor_relaxed, learner_relaxed, seq.busy_relaxed))


class Evaluated(NamedTuple):
    assign: jax.Array
    feasible: jax.Array
    strict: jax.Array  # the fused or the sequential executor, as the mapping implies
    relaxed: jax.Array
    busy: jax.Array  # (M, R) relaxed dependency's
    pipelined: Pipelined
    thread: Pipelined


@functools.partial(jax.jit, static_argnames=("n_placements", "n_resources", "tree_shared"))
def evaluate(x: Inputs, n_placements: int, n_resources: int,
              tree_shared: bool) -> Evaluated:
    """Every mapping in every executor; inf where the executor cannot run the mapping."""
    m = price(x, n_placements, n_resources, tree_shared)
    seq = sequential_times(x, m, n_resources)
    fused = fused_times(x, m, n_resources)
    inf = jnp.float32(jnp.inf)
    host_loop = m.feasible & ~m.exclusive  # the pipelined executors run host loops only

    def only(ok, p: Pipelined) -> Pipelined:
        return Pipelined(*(s._replace(seconds=jnp.where(ok, s.seconds, inf)) for s in p))

    return Evaluated(
        m.assign, m.feasible,
        jnp.where(m.feasible, jnp.where(m.exclusive, fused.seconds, seq.strict), inf),
        jnp.where(m.feasible, jnp.where(m.exclusive, fused.seconds, seq.relaxed), inf),
        jnp.where(m.exclusive[:, None], fused.busy, seq.busy_relaxed),
        only(host_loop, pipelined_times(x, m, seq, n_resources)),
        only(host_loop, thread_times(x, m, seq, n_resources)))
