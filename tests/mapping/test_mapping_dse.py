"""Design-space exploration: hand-computed iteration times, completeness, infeasibility."""

import dataclasses
import itertools
import math

import numpy as np
import pytest

from hrl.mapping import dse
from hrl.mapping.links import Link
from hrl.mapping.platform import Placement, default_gpu_spec, fpga_placement, gpu_spec_placement
from hrl.mapping.workload import CALL_PRIMITIVE, CALLS, PRIMITIVES, Workload

NAN = float("nan")
MS = 1e-3


def fixed_placement(name, table, resource=None, link="local", kind="jax"):
    prims = frozenset(CALL_PRIMITIVE[c] for c, v in table.items() if not math.isnan(v))
    return Placement(name, kind, resource or name, link, prims, "measured",
                     lambda call, w: table.get(call, NAN))


CPU = {"env": 1 * MS, "infer": 2 * MS, "insert": 0.5 * MS, "sample": 3 * MS, "train": 4 * MS,
       "update": 1 * MS}
ACC = {"env": NAN, "infer": 1 * MS, "insert": 0.1 * MS, "sample": 0.2 * MS, "train": 0.5 * MS,
       "update": 0.1 * MS}
LINK = {"testlink": Link("testlink", bandwidth=1e9, latency=1e-6)}
WORK = Workload(num_envs=4, obs_dim=4, act_dim=2, hidden=(8,), batch_size=8, sgd_steps=1)


def two_device_exploration(staleness=1):
    places = [fixed_placement("cpu", CPU), fixed_placement("acc", ACC, link="testlink")]
    return dse.explore(places, WORK, staleness=staleness, link_overrides=LINK)


def test_all_cpu_is_the_sum_of_calls():
    exp = two_device_exploration()
    row = exp.row_of({p: "cpu" for p in PRIMITIVES})
    assert exp.strict[row] == pytest.approx(11.5 * MS, rel=1e-6)
    assert exp.relaxed[row] == pytest.approx(11.5 * MS, rel=1e-6)  # one resource does it all


def test_hand_computed_split_mapping():
    exp = two_device_exploration(staleness=1)
    mapping = {"env": "cpu", "infer": "acc", "sample": "acc", "update": "acc", "train": "acc"}
    row = exp.row_of(mapping)
    assert exp.mapping(row) == mapping
    # crossing edges: observations 4*4*4 = 64 B, actions 4*4 = 16 B, transitions
    # 4 * (4*(2*4+2) + 4) = 176 B; each one hop of 1 us + bytes / 1 GB/s on the acc side.
    links = 3 * 1e-6 + (64 + 16 + 176) / 1e9
    calls = (1 + 1 + 0.1 + 0.2 + 0.5 + 0.1) * MS
    assert exp.strict[row] == pytest.approx(calls + links, rel=1e-5)
    # relaxed: sample, train and update share the accelerator, so the host loop runs them in
    # order, and the actors run before the learner in any mode: nothing overlaps
    assert exp.relaxed[row] == pytest.approx(exp.strict[row], rel=1e-6)
    busy = dict(zip(exp.problem.resources, exp.busy[row], strict=True))
    assert busy["cpu"] == pytest.approx(1 * MS, rel=1e-5)
    assert busy["acc"] == pytest.approx(1.9 * MS, rel=1e-5)
    assert busy["link:acc"] == pytest.approx(links, rel=1e-5)


def test_relaxed_overlaps_train_with_a_tree_on_another_placement():
    """The host loop's relaxed step: train(t) beside update(t-s) + sample(t+1) when the tree is
    off train's placement; the shorter side is saved, less a thread hand-off per SGD step."""
    cpu = dict(CPU, train=40 * MS)  # a long train step on the CPU
    places = [fixed_placement("cpu", cpu), fixed_placement("acc", ACC, link="testlink")]
    w = Workload(num_envs=4, obs_dim=4, act_dim=2, hidden=(8,), batch_size=8, sgd_steps=2)
    mapping = {"env": "cpu", "infer": "cpu", "sample": "acc", "update": "acc", "train": "cpu"}
    # Per SGD step the batch (8*(44+4) = 384 B) crosses to train and the TD errors (32 B) back,
    # one 1 us hop each: train side 40 ms + 1.384 us, replay side 0.3 ms + 1.032 us.
    replay_side = 2 * (0.3 * MS + 1.032e-6)
    handoff = 50e-6
    strict = dse.explore(places, w, staleness=0, link_overrides=LINK,
                         loop_overhead={"replay_handoff": handoff})
    row = strict.row_of(mapping)
    assert strict.relaxed[row] == pytest.approx(strict.strict[row], rel=1e-6)  # s = 0: strict
    for s in (1, 3):  # the host loop overlaps one step whatever the depth
        exp = dse.explore(places, w, staleness=s, link_overrides=LINK,
                          loop_overhead={"replay_handoff": handoff})
        assert exp.relaxed[row] == pytest.approx(
            exp.strict[row] - replay_side + 2 * handoff, rel=1e-5)
    # Two cores of one CPU hold both sides: the overlap cannot beat half the busy time.
    shared = [fixed_placement("cpu", cpu), fixed_placement("pocl", ACC, resource="cpu")]
    exp = dse.explore(shared, w, staleness=1, host_cores=2)
    row = exp.row_of({**mapping, "sample": "pocl", "update": "pocl"})
    saved = 2 * 0.3 * MS
    assert exp.relaxed[row] == pytest.approx(exp.strict[row] - saved, rel=1e-5)
    one_core = dse.explore(shared, w, staleness=1, host_cores=1)
    assert one_core.relaxed[row] == pytest.approx(one_core.strict[row], rel=1e-5)
    # A measured overlap scales the saving; below 0 the relaxed step costs more than strict.
    for eta in (0.25, -0.5):
        exp = dse.explore(places, w, staleness=1, link_overrides=LINK,
                          loop_overhead={"replay_handoff": handoff,
                                         "replay_overlap": {"acc": eta}})
        row = exp.row_of(mapping)
        assert exp.relaxed[row] == pytest.approx(
            exp.strict[row] - eta * replay_side + 2 * handoff, rel=1e-5)


def test_relaxed_runs_in_order_for_a_tree_in_train_s_call_queue():
    """The XLA tree on the learner's device (`cpu-xla`) is its own placement but joins train's
    call queue (`Placement.queue`): XLA runs that device's calls in issue order and the host
    loop runs no replay thread, so relaxed costs what strict does; the same tree in a queue
    of its own is overlapped with train."""
    cpu = dict(CPU, train=40 * MS)
    w = Workload(num_envs=4, obs_dim=4, act_dim=2, hidden=(8,), batch_size=8, sgd_steps=2)
    mapping = {"env": "cpu", "infer": "cpu", "sample": "tree", "update": "tree",
               "train": "cpu"}
    tree = {"insert": 0.5 * MS, "sample": 0.2 * MS, "update": 0.1 * MS}

    def explore(queue):
        places = [fixed_placement("cpu", cpu),
                  dataclasses.replace(fixed_placement("tree", tree, resource="cpu"),
                                      queue=queue)]
        return dse.explore(places, w, staleness=1, host_cores=2,
                           loop_overhead={"replay_handoff": 10e-6})

    same = explore("cpu")
    row = same.row_of(mapping)
    assert same.relaxed[row] == pytest.approx(same.strict[row], rel=1e-6)
    assert same.pipelined_relaxed[row] == pytest.approx(same.pipelined_strict[row], rel=1e-6)
    own = explore(None)
    saved = 2 * (0.2 + 0.1) * MS - 2 * 10e-6
    assert own.relaxed[row] == pytest.approx(own.strict[row] - saved, rel=1e-5)


def naive_times(exp, w, staleness, link, overhead=0.0, overhead_actor=0.0, ipc=0.0, cores=1,
                handoff=0.0, overlap=None, overlap_pipelined=None):
    """Per-mapping reference computed with Python loops, straight from the definitions:
    (strict, relaxed, pipelined strict, pipelined relaxed)."""
    prob = exp.problem
    names = prob.placements
    lat = {c: dict(zip(names, prob.latency[i], strict=True)) for i, c in enumerate(CALLS)}
    counts = w.counts()
    hop_of = {"cpu": 0.0}
    out = {}
    for assign in itertools.product(names, repeat=5):
        m = dict(zip(PRIMITIVES, assign, strict=True))
        calls = {c: lat[c][m[CALL_PRIMITIVE[c]]] * counts[c] for c in CALLS}
        if any(math.isnan(v) for v in calls.values()) or m["sample"] != m["update"]:
            out[assign] = (math.inf,) * 4
            continue
        busy = {}
        for c, t in calls.items():
            busy[m[CALL_PRIMITIVE[c]]] = busy.get(m[CALL_PRIMITIVE[c]], 0.0) + t
        edge_t = {}
        for src, dst, nbytes, cnt in w.edges():
            if m[src] == m[dst] or cnt == 0:
                edge_t[(src, dst)] = 0.0
                continue
            total = 0.0
            for end in (m[src], m[dst]):
                if end not in hop_of:
                    h = (link.latency + nbytes / link.bandwidth) * cnt
                    total += h
                    busy["link:" + end] = busy.get("link:" + end, 0.0) + h
            edge_t[(src, dst)] = total
        busy["cpu"] = busy.get("cpu", 0.0) + overhead
        strict = sum(calls.values()) + sum(edge_t.values()) + overhead
        actor_edges = (("env", "infer"), ("infer", "env"))
        actor = calls["env"] + calls["infer"] + sum(edge_t[e] for e in actor_edges)
        # relaxed: train beside update + sample when the tree is off train's placement
        train_side = calls["train"] + edge_t[("sample", "train")]
        replay_side = calls["sample"] + calls["update"] + edge_t[("train", "update")]
        overlaps = staleness > 0 and m["sample"] != m["train"]
        shorter = min(train_side, replay_side)
        saved, saved_pipelined = (
            (measured or {}).get(m["sample"], 1.0) * shorter - w.sgd_steps * handoff
            if overlaps else 0.0 for measured in (overlap, overlap_pipelined or overlap))
        per_core = max(v / (cores if r == "cpu" else 1) for r, v in busy.items())
        relaxed = max(strict - saved, per_core)
        # pipelined: the two sides at once, the host CPU shared by `cores`
        learner_calls = ("insert", "sample", "train", "update")
        learner_busy = {}
        for c in learner_calls:
            where = m[CALL_PRIMITIVE[c]]
            learner_busy[where] = learner_busy.get(where, 0.0) + calls[c]
        for src, dst, nbytes, cnt in w.edges():
            if (src, dst) in actor_edges or m[src] == m[dst] or cnt == 0:
                continue
            for end in (m[src], m[dst]):
                if end not in hop_of:
                    h = (link.latency + nbytes / link.bandwidth) * cnt
                    learner_busy["link:" + end] = learner_busy.get("link:" + end, 0.0) + h
        fixed = overhead - overhead_actor + ipc
        learner_edges = sum(t for e, t in edge_t.items() if e not in actor_edges)
        side_strict = sum(calls[c] for c in learner_calls) + learner_edges + fixed
        side_relaxed = max(side_strict - fixed - saved_pipelined,
                           max(v / (cores if r == "cpu" else 1)
                               for r, v in learner_busy.items())) + fixed
        shared = dict(busy)
        shared["cpu"] = (shared["cpu"] + 2 * ipc) / cores
        bound = max(actor + overhead_actor + ipc, max(shared.values()))
        out[assign] = (strict, relaxed, max(bound, side_strict), max(bound, side_relaxed))
    return out


def test_vectorized_matches_naive_reference_on_every_mapping():
    rng = np.random.default_rng(0)
    tables = []
    for _ in range(3):
        t = {c: float(rng.uniform(0.1, 5)) * MS for c in CALLS}
        tables.append(t)
    tables[2]["env"] = NAN  # an accelerator that cannot run the env
    tables[1]["train"] = NAN
    places = [fixed_placement("cpu", tables[0]), fixed_placement("a", tables[1], link="testlink"),
              fixed_placement("b", tables[2], link="testlink")]
    w = Workload(num_envs=16, obs_dim=3, act_dim=1, algo="ddpg", hidden=(32, 32),
                 batch_size=64, sgd_steps=4, weight_sync_period=2)
    ipc = Link("process", bandwidth=2e9, latency=40e-6)
    # A tree on "a" hides 40% of the shorter side, on "b" it slows train down (below 0);
    # "cpu" has no measurement (1). The pipelined executor hides less beside its actors.
    overlap = {"a": 0.4, "b": -0.7}
    overlap_pipelined = {"a": -0.2, "b": -0.9}
    exp = dse.explore(places, w, staleness=2, link_overrides=LINK, process_link=ipc,
                      host_cores=2, loop_overhead={"host": 0.7 * MS, "host_actor": 0.3 * MS,
                                                   "replay_handoff": 0.04 * MS,
                                                   "replay_overlap": overlap,
                                                   "replay_overlap_pipelined": overlap_pipelined})
    ipc_s = dse._ipc_seconds(w, ipc)
    assert ipc_s > 0
    ref = naive_times(exp, w, 2, LINK["testlink"], 0.7 * MS, 0.3 * MS, ipc_s, 2, 0.04 * MS,
                      overlap, overlap_pipelined)
    for row in range(len(exp.assignments)):
        key = tuple(exp.problem.placements[i] for i in exp.assignments[row])
        strict, relaxed, pip_strict, pip_relaxed = ref[key]
        if math.isinf(strict):
            assert not exp.feasible[row] and math.isinf(exp.strict[row])
            assert math.isinf(exp.times("relaxed", "pipelined")[row])
        else:
            assert exp.strict[row] == pytest.approx(strict, rel=1e-5)
            assert exp.relaxed[row] == pytest.approx(relaxed, rel=1e-5)
            assert exp.times("strict", "pipelined")[row] == pytest.approx(pip_strict, rel=1e-5)
            assert exp.times("relaxed", "pipelined")[row] == pytest.approx(pip_relaxed,
                                                                          rel=1e-5)


def test_enumeration_is_complete_and_counts_feasible_choices():
    places = [fixed_placement("cpu", CPU), fixed_placement("acc", ACC, link="testlink"),
              fixed_placement("acc2", ACC, link="testlink")]
    exp = dse.explore(places, WORK, link_overrides=LINK, tree_shared=False)
    assert len(exp.assignments) == 3**5
    assert len({tuple(r) for r in exp.assignments}) == 3**5
    # env only on cpu (1 choice), every other primitive on all 3
    assert exp.feasible.sum() == 1 * 3 * 3 * 3 * 3
    shared = dse.explore(places, WORK, link_overrides=LINK, tree_shared=True)
    assert shared.feasible.sum() == 1 * 3 * 3 * 3  # sample and update choose together


def test_gymnasium_env_never_leaves_the_host():
    w = Workload(env_kind="gymnasium", env_id="CartPole-v1", num_envs=8, batch_size=32)
    places = [fixed_placement("cpu", CPU), gpu_spec_placement(default_gpu_spec()),
              fpga_placement("u250")]
    exp = dse.explore(places, w)
    env_place = exp.assignments[:, PRIMITIVES.index("env")]
    cpu = exp.problem.placements.index("cpu")
    assert exp.feasible.any()
    assert not exp.feasible[env_place != cpu].any()
    for mode in ("strict", "relaxed"):
        assert exp.mapping(exp.best(mode))["env"] == "cpu"
    # JAX envs may go to the GPU but never to the FPGA
    wj = Workload(env_kind="gymnax", num_envs=8, batch_size=32)
    expj = dse.explore(places, wj)
    gpu = expj.problem.placements.index("gpu")
    fpga = expj.problem.placements.index("fpga:u250")
    envj = expj.assignments[:, PRIMITIVES.index("env")]
    assert expj.feasible[envj == gpu].any()
    assert not expj.feasible[envj == fpga].any()


def test_no_feasible_mapping_is_a_clear_error():
    acc_only = [fixed_placement("acc", ACC, link="testlink")]
    exp = dse.explore(acc_only, WORK, link_overrides=LINK)
    with pytest.raises(ValueError, match="no feasible mapping"):
        exp.best("strict")
    with pytest.raises(ValueError, match="dependency mode"):
        exp.times("sideways")
    with pytest.raises(ValueError, match="staleness"):
        dse.explore(acc_only, WORK, staleness=-1, link_overrides=LINK)


def test_baselines_exist_for_present_devices():
    places = [fixed_placement("cpu", CPU), gpu_spec_placement(default_gpu_spec())]
    exp = dse.explore(places, WORK)
    base = dse.baselines(exp, WORK)
    assert base["all-cpu"] == {p: "cpu" for p in PRIMITIVES}
    assert base["all-gpu"]["train"] == "gpu"
    assert base["framework"] == {"env": "cpu", "infer": "cpu", "sample": "cpu",
                                 "update": "cpu", "train": "gpu"}
    for m in base.values():
        assert np.isfinite(exp.strict[exp.row_of(m)])


def test_exclusive_placement_takes_all_or_nothing_and_loop_overhead_is_charged():
    fused = Placement("cpu-fused", "jax", "cpu", "local",
                      frozenset(PRIMITIVES), "measured", lambda c, w: 0.1 * MS, exclusive=True)
    places = [fixed_placement("cpu", CPU), fused]
    exp = dse.explore(places, WORK, loop_overhead={"host": 2 * MS, "fused": 0.5 * MS})
    ex = exp.problem.placements.index("cpu-fused")
    uses = (exp.assignments == ex).any(axis=1)
    alls = (exp.assignments == ex).all(axis=1)
    assert not exp.feasible[uses & ~alls].any()
    assert exp.feasible[alls].all()
    row = exp.row_of({p: "cpu-fused" for p in PRIMITIVES})
    assert exp.strict[row] == pytest.approx(6 * 0.1 * MS + 0.5 * MS, rel=1e-5)
    # the fused loop's bookkeeping runs on its own device: nothing overlaps it
    assert exp.relaxed[row] == pytest.approx(exp.strict[row], rel=1e-5)
    row = exp.row_of({p: "cpu" for p in PRIMITIVES})
    assert exp.strict[row] == pytest.approx(11.5 * MS + 2 * MS, rel=1e-5)
    assert exp.relaxed[row] == pytest.approx(13.5 * MS, rel=1e-5)  # the host CPU does both


def test_pipelined_executor_hand_computed():
    """All on the CPU, two cores, the actors in their own process: the actor side (env + infer
    + its bookkeeping + the process link) and the learner side (insert, sample, train, update +
    the rest of the bookkeeping + the link) run at the same time; the shared CPU's busy time
    over its two cores bounds them too. One core: no gain over the sequential loop."""
    ipc = Link("process", bandwidth=1e9, latency=50e-6)
    overhead = {"host": 0.6 * MS, "host_actor": 0.2 * MS}
    places = [fixed_placement("cpu", CPU), fixed_placement("acc", ACC, link="testlink")]
    all_cpu = {p: "cpu" for p in PRIMITIVES}
    edges = {(s, d): (b, c) for s, d, b, c in WORK.edges()}
    link_s = ipc.time(edges[("env", "update")][0]) + ipc.time(edges[("train", "infer")][0])
    actor = (1 + 2 + 0.2) * MS + link_s
    learner = (0.5 + 3 + 4 + 1 + 0.4) * MS + link_s
    sequential = 11.5 * MS + 0.6 * MS
    # The hand-offs are the process link's, on both sides: nothing fitted on top.
    for cores, want in ((2, max(actor, learner, (sequential + 2 * link_s) / 2)),
                        (1, sequential + 2 * link_s)):
        exp = dse.explore(places, WORK, link_overrides=LINK, loop_overhead=overhead,
                          process_link=ipc, host_cores=cores)
        row = exp.row_of(all_cpu)
        assert exp.times("strict", "pipelined")[row] == pytest.approx(want, rel=1e-5), cores
        assert exp.times("strict")[row] == pytest.approx(sequential, rel=1e-5)
    # The learner on the accelerator: the learner side shrinks, the actors' side bounds it.
    split = {**all_cpu, "sample": "acc", "update": "acc", "train": "acc"}
    exp = dse.explore(places, WORK, link_overrides=LINK, loop_overhead=overhead,
                      process_link=ipc, host_cores=2)
    t = exp.times("strict", "pipelined")[exp.row_of(split)]
    assert t == pytest.approx(actor, rel=1e-5)
    assert exp.pipelined_bounds(exp.row_of(split), "strict")[0] == pytest.approx(actor, rel=1e-5)
    # A fused (exclusive) placement has no pipelined form.
    fused = dataclasses.replace(fixed_placement("cpu-fused", CPU, resource="cpu"),
                                exclusive=True)
    exp = dse.explore([fixed_placement("cpu", CPU), fused], WORK, process_link=ipc,
                      host_cores=2)
    assert math.isinf(exp.times("relaxed", "pipelined")[exp.row_of(
        {p: "cpu-fused" for p in PRIMITIVES})])
    with pytest.raises(ValueError, match="executor must be"):
        exp.times("strict", "threads")


def test_thread_actors_hand_computed():
    """Thread actors: the pipelined executor's two sides with a thread hand-off (`link:thread`)
    per iteration instead of the process link, bounded by the shared CPU and by the GIL, which
    both sides' bookkeeping and a host env's steps hold and a compiled call does not."""
    slow_env = {"env": 6 * MS, "infer": 0.1 * MS, "insert": 0.1 * MS, "sample": 0.1 * MS,
                "train": 0.1 * MS, "update": 0.1 * MS}
    h = 0.1 * MS
    overhead = {"host": 4 * MS, "host_actor": 2 * MS, "replay_handoff": h}
    all_cpu = {p: "cpu" for p in PRIMITIVES}
    actor = (6 + 0.1 + 2) * MS + h
    learner = (0.4 + 2) * MS + h
    shared = (6.5 * MS + 4 * MS + 2 * h) / 2
    for kind, gil in (("gymnasium", 4 * MS + 6 * MS + 2 * h), ("gymnax", 4 * MS + 2 * h)):
        w = Workload(env_kind=kind, num_envs=4, batch_size=8)
        exp = dse.explore([fixed_placement("cpu", slow_env)], w, loop_overhead=overhead,
                          host_cores=2)
        row = exp.row_of(all_cpu)
        want = max(actor, learner, shared, gil)
        assert exp.times("strict", "pipelined-thread")[row] == pytest.approx(want, rel=1e-5)
    # A gymnasium env's steps hold the GIL, so there it binds, above the actors' side.
    assert 4 * MS + 6 * MS + 2 * h > actor
    # With no bookkeeping and no hand-off, thread actors are the process actors over a free
    # link: the same max of the two sides and the shared CPU.
    exp = dse.explore([fixed_placement("cpu", CPU)], WORK, host_cores=2)
    row = exp.row_of(all_cpu)
    for mode in ("strict", "relaxed"):
        assert exp.times(mode, "pipelined-thread")[row] == pytest.approx(
            exp.times(mode, "pipelined")[row], rel=1e-6)
