"""Design-space exploration: every mapping of the five primitives onto the placements, in one
jitted, vectorized evaluation.

A mapping assigns each primitive (env, infer, sample, update, train) a placement; with P
placements there are P**5 of them, enumerated as base-P digits of 0 .. P**5 - 1 inside jit.

Iteration time of a mapping (one iteration = `workload.Workload`'s loop body):

* calls: `sum_c count_c * latency[c, placement(c)]`;
* the loop's own bookkeeping per iteration (host loop or fused loop, measured by the profiler),
  charged to the host CPU (the host loop) or to the fused loop's device; a host loop's per
  dependency mode, in the CPU dispatch `train.cpu_dispatch: auto` gives it in that mode; a
  fused loop that runs faster than its calls timed apart also leaves unpaid a share of their
  fixed per-call costs (`constants.FusedLoopCosts`): fused = calls + links - unpaid + bookkeeping;
* the constants are `constants.LoopConstants` (every time >= 0), fitted by
  `calibration.calibrate`; the formulas are `hrl.mapping.formulas`, one function per executor;
* links: every edge (src -> dst, bytes, count) whose ends sit on different placements costs
  `count * (hop(src) + hop(dst))`, where a placement's hop is its way to host memory: none for
  the host CPU itself, a memcpy for another host backend, a PCIe transfer for an accelerator
  (`links.Link.time`: latency + bytes / bandwidth). Two accelerators talk through the host.
* strict dependency: everything on the critical path, in order -> the sum of calls and links;
* relaxed dependency (staleness s > 0), as the host loops run it
  (`SequentialLoop._overlapped_round`): with the
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
  checks it (`calibration.executor_errors` has no entry), so its predictions carry the uncertainty
  of an unchecked executor (`hrl.mapping.uncertainty.UNKNOWN_UNCERTAINTY`).

Feasible mappings: an exclusive placement (the fused loop) hosts all primitives or none; every
call has a finite latency on its placement (a gymnasium env cannot
run on a GPU or an FPGA; an OpenCL replay backend has no MLP), and sample and update share a
placement, because they read and write one tree (a tree split over two devices would have to be
mirrored on both). Infeasible mappings get time +inf and are never chosen.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping import formulas
from hrl.mapping.constants import LoopConstants
from hrl.mapping.devices import PRICED_EXECUTORS, THREAD_ACTORS
from hrl.mapping.formulas import Inputs, Pipelined, PipelinedSides
from hrl.mapping.links import Link, get_link
from hrl.mapping.platform import Placement, latency_table
from hrl.mapping.workload import CALL_PRIMITIVE, CALLS, PRIMITIVES, Workload

# The executors an exploration prices (`Exploration.times`): "auto", the fused or the
# sequential loop as the mapping implies, and each by name (`devices.PRICED_EXECUTORS`).
EXECUTORS = ("auto", *PRICED_EXECUTORS)


@dataclasses.dataclass(frozen=True)
class Problem:
    """Everything the evaluation needs (built by `build_problem`): the placements' latencies
    and hops as numpy arrays, and the loops' constants (`constants.LoopConstants`)."""

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
    # (P,) the call queue each placement's calls join (`Placement.queue`): the relaxed
    # dependency overlaps the tree with train only where the two queues differ.
    queue: np.ndarray
    sgd_steps: float
    host_resource: int  # index of the host CPU among resources (drives both loops)
    constants: LoopConstants = LoopConstants()
    tree_shared: bool = True
    ipc_seconds: float = 0.0  # process link per iteration: transitions + weights, one way
    host_cores: int = 1
    # Whether the env's step holds the GIL (a host env, gymnasium): the thread-actor bound.
    env_holds_gil: bool = False

    def inputs(self, staleness: int) -> Inputs:
        """The problem as the jitted evaluation's argument (float32, int32)."""
        c = self.constants
        host_r, actor_r = c.relaxed()
        fused = [c.fused_on(n) for n in self.placements]
        f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
        i32 = lambda a: jnp.asarray(a, jnp.int32)  # noqa: E731
        return Inputs(
            f32(self.latency), f32(self.counts), i32(self.call_prim), i32(self.edge_src),
            i32(self.edge_dst), f32(self.edge_bytes), f32(self.edge_count),
            f32(self.hop_latency), f32(self.hop_bandwidth), i32(self.hop_resource),
            i32(self.compute_resource), jnp.asarray(self.exclusive, bool), i32(self.queue),
            f32(self.sgd_steps), f32(staleness), i32(self.host_resource),
            f32(self.host_cores), f32(self.env_holds_gil), f32(self.ipc_seconds),
            f32(c.host), f32(c.host_actor), f32(host_r), f32(actor_r), f32(c.pipelined_wait),
            f32(c.replay_handoff), f32([f.bookkeeping for f in fused]),
            f32([f.unpaid for f in fused]),
            f32([c.overlap(n) for n in self.placements]),
            f32([c.overlap(n, "pipelined") for n in self.placements]))


def build_problem(placements: list[Placement], workload: Workload,
                  link_overrides: dict[str, Link] | None = None,
                  tree_shared: bool = True,
                  loop_overhead: LoopConstants | dict | None = None,
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
        queue=np.array([queues.index(p.queue_name) for p in placements]),
        sgd_steps=float(workload.sgd_steps), host_resource=host,
        constants=LoopConstants.of(loop_overhead), tree_shared=tree_shared,
        ipc_seconds=_ipc_seconds(workload, process_link), host_cores=int(host_cores),
        env_holds_gil=workload.env_kind == "gymnasium")


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
    # The pipelined executor with process actors and with thread actors, per mode: each
    # bound and the iteration (inf where it cannot run the mapping), numpy arrays (M,).
    pipelined: Pipelined | None = None
    thread: Pipelined | None = None

    @property
    def pipelined_strict(self) -> np.ndarray:
        return self.pipelined.strict.seconds

    @property
    def pipelined_relaxed(self) -> np.ndarray:
        return self.pipelined.relaxed.seconds

    def pipelined_bounds(self, row: int, mode: str) -> tuple[float, float, float]:
        """(actor side, learner side, shared CPU bound) of a mapping in the pipelined executor,
        seconds per iteration (the iteration is their max)."""
        s = self.pipelined.strict if mode == "strict" else self.pipelined.relaxed
        return float(s.actor[row]), float(s.learner[row]), float(s.shared_cpu[row])

    def times(self, mode: str, executor: str = "auto") -> np.ndarray:
        """Seconds per iteration of every mapping in dependency `mode`, run by `executor`
        ("auto": the fused loop or the sequential host loop, as the mapping implies;
        "pipelined": actors in their own process beside the learner; "pipelined-thread":
        actors in a thread beside the learner)."""
        if mode not in ("strict", "relaxed"):
            raise ValueError(f"dependency mode must be 'strict' or 'relaxed', got {mode!r}")
        if executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
        if executor in ("pipelined", THREAD_ACTORS):
            p = self.pipelined if executor == "pipelined" else self.thread
            return getattr(p, mode).seconds
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
            tree_shared: bool = True, loop_overhead: LoopConstants | dict | None = None,
            process_link: Link | None = None, host_cores: int = 1) -> Exploration:
    """Evaluate every mapping (see the module docstring). O(P**5 * (calls + edges)), in one
    jitted call (compiled once per number of placements and resources).

    `loop_overhead`: the loops' constants at this workload (`constants.LoopConstants`, or a
    dict of its field names: a misspelt one is a ValueError; default none).
    `process_link`: the link between the pipelined executor's two processes (measured by the
    profiler); `host_cores`: the cores the two processes share."""
    if not isinstance(staleness, int) or staleness < 0:
        raise ValueError(f"staleness must be an int >= 0, got {staleness!r}")
    prob = build_problem(placements, workload, link_overrides, tree_shared, loop_overhead,
                         process_link, host_cores)
    if len(prob.placements) ** len(PRIMITIVES) > 2**24:
        raise ValueError(f"{len(prob.placements)} placements give too many mappings to "
                         "enumerate at once; pass fewer --devices")
    out = jax.device_get(formulas.evaluate(
        prob.inputs(staleness), n_placements=len(prob.placements),
        n_resources=len(prob.resources), tree_shared=tree_shared))
    as_float = lambda p: Pipelined(*(PipelinedSides(*(np.asarray(a, float) for a in s))  # noqa: E731
                                     for s in p))
    return Exploration(prob, np.asarray(out.assign), np.asarray(out.feasible),
                       np.asarray(out.strict, float), np.asarray(out.relaxed, float),
                       np.asarray(out.busy, float), staleness, as_float(out.pipelined),
                       as_float(out.thread))


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
