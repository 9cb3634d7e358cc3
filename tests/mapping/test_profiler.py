"""The profiler (`hrl.mapping.profile`) on a tiny grid, jax backend only: every primitive timed
on the CPU in its loop context, the reference workload around each round, probe children
without a GPU, the RTL tree in fixed point, the tree alone on a second CPU device and in
plain XLA ops."""

import csv
import json
import os
from pathlib import Path

import pytest
from tiny_profiles import CONFIG, TINY_GRID


def test_profile_keeps_the_reference_workload_timed_around_its_round(tiny_profile):
    """The reference (hrl.mapping.speed) is timed at the start and the end of each round and
    stored in profile.json, which a planner compares with its time at run time."""
    from hrl.mapping.profile import load_profile
    from hrl.mapping.speed import PARTS, profile_reference

    out, _ = tiny_profile
    speed = load_profile(out)["speed_reference"]
    assert [s["round"] for s in speed] == [0, 0]
    for s in speed:
        assert all(s[p] > 0 for p in PARTS)
        assert s["seconds"] == pytest.approx(sum(s[p] for p in PARTS))
    assert speed[0]["time"] < speed[1]["time"]
    assert min(s["seconds"] for s in speed) <= profile_reference(speed) <= max(
        s["seconds"] for s in speed)


def test_profile_times_every_primitive_on_cpu(tiny_profile):
    out, rows = tiny_profile
    calls = {(r["call"], r["placement"]) for r in rows}
    for place in ("cpu", "cpu-fused"):
        for call in ("env:gymnax:CartPole-v1", "infer:dqn", "train:dqn", "sample", "update",
                     "insert"):
            assert (call, place) in calls
    assert ("link:host", "host") in calls
    # The collective between two virtual CPU devices (timed in a subprocess that has them).
    assert ("link:cpu-collective", "host") in calls
    assert ("link:thread", "host") in calls  # the relaxed dependency's hand-off
    # Each primitive row says which CPU dispatch timed it (`hrl profile` starts JAX in the
    # host loops' dispatch, PROFILE_DISPATCH; this test process runs JAX's default).
    from hrl.runtime.cpu_backend import running_cpu_dispatch

    here = running_cpu_dispatch()
    primitive_rows = [r for r in rows if r["mode"] in ("dispatched", "fused")]
    assert primitive_rows and {r["dispatch"] for r in primitive_rows} == {here}
    # A dispatched call is timed between the host loop's other calls; a fused one in its scan.
    assert {r.get("context") for r in rows if r["mode"] == "dispatched"} == {"loop"}
    assert {r.get("context") for r in rows if r["mode"] == "fused"} == {None}
    timed = [r for r in rows if not r["call"].startswith("rtl-")]
    # The collective's rows are a difference of two timings (with and without the psum),
    # which may round to 0 at the smallest size; every other row is a timing.
    assert all(r["latency_s"] >= 0 and r["cpu_s"] >= 0 for r in timed)
    assert all(r["latency_s"] > 0 for r in timed if r["call"] != "link:cpu-collective")
    # the grid is covered: both batches of train and sample, both M of infer and insert
    for call, field, values in (("train:dqn", "batch", {4, 8}), ("sample", "batch", {4, 8}),
                                ("infer:dqn", "num_envs", {1, 4}), ("insert", "num_envs", {1, 4})):
        got = {r[field] for r in rows if r["call"] == call and r["placement"] == "cpu"}
        assert got == values, call
    with open(out / "profile.csv") as f:
        csv_rows = list(csv.DictReader(f))
    assert len(csv_rows) == len([r for r in timed if not r["call"].startswith("loop:")])
    data = json.loads((out / "profile.json").read_text())
    assert data["format"] == "hrl-profile-1" and data["machine"]["cpus"] >= 1


def test_a_call_is_timed_after_the_calls_that_precede_it_in_the_loop():
    from hrl.mapping.profile.context import LOOP_CYCLE, LoopContext
    from hrl.mapping.profile.timers import median_time

    made = []
    context = LoopContext({c: (lambda c=c: made.append(c)) for c in LOOP_CYCLE})
    t = median_time(lambda: made.append("timed"), 2, context.around("train"))
    between = ["update", "env", "infer", "sample"]
    assert made == ["timed", "timed", *between, "timed", *between, "timed"]  # 2 warm-ups
    assert t["context"] == "loop" and "context" not in median_time(lambda: None, 1)
    made.clear()
    context.around("insert")()  # once an iteration, where the first sample is
    assert made == ["train", "update", "env", "infer"]


def test_profiler_children_see_no_gpu_whatever_the_parent_runs_on(monkeypatch):
    """Every probe child measures CPU loops and links: on a GPU machine a child that started
    the GPU backend took GPU memory beside its parent and failed out of memory (H100)."""
    from hrl.mapping.profile.spawn import child_env

    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = child_env(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"
    assert env["PYTHONPATH"].split(os.pathsep)[-1] == "/elsewhere"
    assert (Path(env["PYTHONPATH"].split(os.pathsep)[0]) / "hrl" / "mapping").is_dir()


@pytest.mark.long
def test_the_profiler_times_the_rtl_tree_in_fixed_point_for_a_float_config():
    """A float32 config's profile once skipped the RTL ("fixed point only"); the profiler
    now runs the RTL tree in fixed point, as its runnable mapping does, and other trees in
    the config's format."""
    from hrl.config import load_config
    from hrl.mapping.profile import Profiler
    from hrl.replay.backends import format_for

    assert format_for("rtl", "float32") == "fixed"
    assert format_for("rtl", "fixed:24:10") == "fixed:24:10"
    assert format_for("opencl", "float32") == "float32"
    prof = Profiler(load_config(CONFIG), grid=TINY_GRID, backends=("rtl",), progress=False,
                    loops=False)
    assert prof._host_backends() == [("rtl", "rtl")] and prof.skipped == []


# Profiles the tree on cpu:1 in a process with two CPU devices and prints its rows' keys.
SECOND_CPU_PROFILE = """
import json, sys
from hrl.runtime.cpu_backend import ensure_cpu_devices
ensure_cpu_devices(2)
from hrl.config import load_config
from hrl.mapping.profile import Profiler
grid = json.loads(sys.argv[1])
prof = Profiler(load_config(sys.argv[2]), grid=grid, backends=("jax",), progress=False,
                loops=False)
labels = [label for label, _ in prof.tasks()]
for label, task in prof.tasks():
    if label.endswith("on cpu:1") or label == "between two CPU devices":
        task()
links = [r for r in prof.rows if r["call"] == "link:cpu-device"]
rows = sorted({(r["call"], r["placement"], r["batch"]) for r in prof.rows if r not in links})
from hrl.mapping.calibration import cpu_device_link_from_profile
link = cpu_device_link_from_profile({"rows": links})
print(json.dumps([labels, rows, [r["work"] for r in links], link.latency, link.bandwidth]))
"""


def test_the_profile_times_the_tree_alone_on_a_second_cpu_device():
    """Placement cpu:1: sample, update and insert of the JAX buffer on cpu:1, as the host loop
    calls them, and nothing else (the learner's calls stay on cpu, and no scan rows: the fused
    loop runs on one device)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SECOND_CPU_PROFILE, json.dumps(TINY_GRID),
                          CONFIG], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    labels, rows, link_bytes, latency, bandwidth = json.loads(out.stdout.strip().splitlines()[-1])
    on_cpu1 = [label for label in labels if label.endswith("on cpu:1")]
    assert on_cpu1 == ["replay N=64 K=4 on cpu:1"]
    # The batch's move from cpu:1 to the learner's call, at four sizes, priced per transfer.
    assert len(link_bytes) == 4 and link_bytes == sorted(link_bytes) and link_bytes[0] > 0
    assert latency >= 0 and bandwidth > 0
    assert {(c, p) for c, p, _ in rows} == {("sample", "cpu:1"), ("update", "cpu:1"),
                                             ("insert", "cpu:1")}
    assert {b for c, _, b in rows if c == "sample"} == set(TINY_GRID["batch"])


def test_the_xla_tree_is_timed_on_the_learner_s_device_and_runs_as_profiled():
    """Placement cpu-xla: sample, update and insert of the JAX buffer with its tree in plain
    XLA ops (`replay.impl: xla`), on the first CPU device; its mapping runs that tree, and the
    native mappings pin the kernels the profile timed whatever a config asks for."""
    from hrl.config import load_config
    from hrl.mapping.instantiate import overrides_for
    from hrl.mapping.profile import Profiler
    from hrl.mapping.validate import runnable_mappings

    prof = Profiler(load_config(CONFIG), grid=TINY_GRID, backends=("xla",), progress=False,
                    loops=False)
    tasks = dict(prof.tasks())
    assert [label for label in tasks if label.endswith("on cpu-xla")] == [
        "replay N=64 K=4 on cpu-xla"]
    tasks["replay N=64 K=4 on cpu-xla"]()
    assert {(r["call"], r["placement"]) for r in prof.rows} == {
        ("sample", "cpu-xla"), ("update", "cpu-xla"), ("insert", "cpu-xla")}
    assert {r["batch"] for r in prof.rows if r["call"] == "sample"} == set(TINY_GRID["batch"])
    by_label = {m.label: m for m in runnable_mappings()}
    for label in ("replay-on-cpu-xla", "replay-on-cpu-xla pipelined"):
        m = by_label[label]
        assert m.mapping == {"env": "cpu", "infer": "cpu", "train": "cpu",
                             "sample": "cpu-xla", "update": "cpu-xla"}
        cfg = load_config(CONFIG, list(m.overrides))
        assert (cfg.replay.backend, cfg.replay.impl, cfg.placement) == ("jax", "xla", {})
    assert "replay-on-cpu-xla" not in {m.label for m in runnable_mappings(backends=("jax",))}
    native = type("C", (), {"mapping": by_label["cpu"]})()
    cfg = load_config(CONFIG, ["replay.impl=xla"])
    assert load_config(CONFIG, ["replay.impl=xla", *overrides_for(native, cfg)]
                       ).replay.impl == "auto"
