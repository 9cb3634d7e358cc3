"""train.cpu_dispatch: which XLA:CPU dispatch a run gets, that it is set before JAX's backend
starts (and only then), and that the results do not depend on it."""

import json
import os
import subprocess
import sys

import jax
import pytest

from hrl.config import load_config
from hrl.runtime.cpu_backend import cpu_dispatch_of

CARTPOLE = "experiments/configs/dqn_cartpole.yaml"
GYMNASIUM = "experiments/configs/dqn_cartpole_gymnasium.yaml"


@pytest.mark.parametrize("config, overrides, expected", [
    (CARTPOLE, [], "async"),  # the fused loop: one call per chunk
    (CARTPOLE, ["train.executor=sequential"], "sync"),
    (CARTPOLE, ["train.executor=pipelined", "train.actors=process"], "sync"),
    (CARTPOLE, ["train.executor=sequential", "train.dependency=relaxed", "train.staleness=2"],
     "sync"),  # its replay thread overlaps, not async dispatch
    (CARTPOLE, ["train.executor=sequential", "train.cpu_dispatch=async"], "async"),
    (CARTPOLE, ["train.cpu_dispatch=sync"], "sync"),
    (GYMNASIUM, [], "sync"),  # a host env runs the host loop
])
def test_auto_resolves_by_loop_and_dependency(config, overrides, expected):
    assert cpu_dispatch_of(load_config(config, overrides)) == expected


def test_bad_value_names_the_key():
    with pytest.raises(ValueError, match=r"train\.cpu_dispatch.*'fast'"):
        load_config(CARTPOLE, ["train.cpu_dispatch=fast"])


# Builds a short sequential run in a fresh process and prints the dispatch JAX ended up with
# and a digest of the final state (every leaf's bytes).
RUN = """
import hashlib, json, sys, jax, numpy as np
from hrl.config import load_config
from hrl.runtime import build, initial_state
overrides = json.loads(sys.argv[1])
if "--started" in sys.argv:
    jax.numpy.zeros(1)  # JAX's backend already running: the config cannot change it
cfg = load_config("experiments/configs/dqn_cartpole.yaml", [
    "train.executor=sequential", "env.num_envs=4", "agent.hidden_sizes=[16,16]",
    "train.batch_size=16", "train.learning_starts=32", "replay.capacity=256",
    "log.progress=false"] + overrides)
built = build(cfg)
state, _ = built.loop.run(initial_state(built), 12)
digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree.leaves(state)))
print(json.dumps([bool(jax.config.read("jax_cpu_enable_async_dispatch")), digest.hexdigest()]))
"""


def run_fresh(overrides, *flags):
    out = subprocess.run([sys.executable, "-c", RUN, json.dumps(overrides), *flags],
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_set_at_build_in_a_fresh_process_and_results_equal_bit_for_bit():
    sync_async, sync_digest = run_fresh(["train.cpu_dispatch=sync"])
    async_async, async_digest = run_fresh(["train.cpu_dispatch=async"])
    assert (sync_async, async_async) == (False, True)
    assert sync_digest == async_digest
    # Too late once the backend runs: JAX's default (async) stays, and so do the results.
    late_async, late_digest = run_fresh(["train.cpu_dispatch=sync"], "--started")
    assert late_async is True
    assert late_digest == sync_digest


# train.cpu_threads: XLA:CPU's intra-op pool, sized when the backend starts.

@pytest.mark.parametrize("overrides, cores, expected", [
    ([], 2, 1),  # the fused loop on a small machine: one thread
    (["env.num_envs=1024", "train.rollout_length=1"], 2, 1),  # many actors too
    (["env.num_envs=64", "train.devices=2"], 2, None),  # data-parallel: not measured
    ([], 16, None),  # elsewhere XLA's default, one per core
    (["train.cpu_threads=3"], 4, 3),  # an explicit count that fits (over the cores: capped)
    (["train.executor=sequential"], 2, 1),  # the host loops too
    (["train.executor=pipelined", "train.actors=process"], 2, 1),
    (["train.executor=sequential"], 16, None),
    (["agent.network=conv"], 2, None),  # a conv net: two threads are faster (module docstring)
])
def test_cpu_threads_auto_resolves_by_cores_and_devices(monkeypatch, overrides, cores, expected):
    from hrl.runtime import cpu_backend

    monkeypatch.setattr(cpu_backend, "usable_cores", lambda: cores)
    assert cpu_backend.cpu_threads_of(load_config(CARTPOLE, overrides)) == expected


@pytest.mark.parametrize("value", ["0", "many"])
def test_cpu_threads_bad_value_names_the_key(value):
    with pytest.raises(ValueError, match=r"train\.cpu_threads"):
        load_config(CARTPOLE, [f"train.cpu_threads={value}"])


POOL = """
import json, os, sys
from hrl.config import load_config
from hrl.runtime import build, initial_state
cfg = load_config("experiments/configs/dqn_cartpole.yaml", [
    "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
    "train.learning_starts=32", "replay.capacity=256", "log.progress=false",
    f"train.cpu_threads={sys.argv[1]}"])
built = build(cfg)
built.loop.run(initial_state(built), 4)
tasks = "/proc/self/task"
names = sorted(open(f"{tasks}/{t}/comm").read().strip() for t in os.listdir(tasks))
pool = sum(n.startswith("tf_XLAEigen") for n in names)
affinity = getattr(os, "sched_getaffinity", None)
masks = {len(affinity(int(t))) for t in os.listdir(tasks)} if affinity else set()
main_mask = len(affinity(0)) if affinity else None
print(json.dumps([pool, sorted(masks), main_mask, names, os.environ.get("NPROC")]))
"""


@pytest.mark.parametrize("threads", [1, pytest.param(3, marks=pytest.mark.long)])
def test_cpu_threads_sizes_xla_pool_and_leaves_the_environment_and_masks_as_they_were(threads):
    # One CPU device: XLA gives each device a thread at least (XLA_FLAGS could ask for more).
    env = {k: v for k, v in os.environ.items() if k not in ("NPROC", "XLA_FLAGS")}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    out = subprocess.run([sys.executable, "-c", POOL, str(threads)], capture_output=True,
                         text=True, check=True, timeout=300, env=env)
    pool, masks, main_mask, names, nproc = json.loads(out.stdout.strip().splitlines()[-1])
    # A count over the usable cores is capped to them (with a warning: test_cpu_threads_cap).
    want = min(threads, cores) if cores is not None else threads
    assert pool == want, f"XLA intra-op threads: {pool}; the process's threads: {names}"
    assert nproc is None  # the pool's size variable was set only while the backend started
    if cores is not None:
        assert masks == [cores] and main_mask == cores


def test_a_started_backend_leaves_the_environment_alone(monkeypatch):
    """Here JAX already runs: starting it for a placement on cpu:1 or for a profile on a second
    CPU device changes nothing, and writes no device count that this process's children
    (a pipelined run's actors, a measured run) would inherit."""
    from hrl.mapping.profile import start_profiling_backend
    from hrl.runtime.cpu_backend import start_cpu_backend

    jax.numpy.zeros(1)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert not start_cpu_backend(load_config(CARTPOLE, ["placement.sample=cpu:1"]))
    start_profiling_backend(load_config(CARTPOLE), second_cpu=True)
    assert "XLA_FLAGS" not in os.environ and "NPROC" not in os.environ


@pytest.mark.parametrize("placement, expected", [
    ({}, 1), ({"env": "host", "train": "cpu"}, 1), ({"sample": "cpu:1", "update": "cpu:1"}, 2),
    ({"train": "cpu:0", "sample": "cpu:3"}, 4), ({"train": "gpu:1"}, 1),
])
def test_the_placement_names_the_cpu_devices_a_run_needs(placement, expected):
    from hrl.runtime.cpu_backend import cpu_devices_of

    cfg = load_config(CARTPOLE, [f"placement.{k}={v}" for k, v in placement.items()])
    assert cpu_devices_of(cfg) == expected


@pytest.mark.parametrize("flags, expected", [
    ("", "--xla_force_host_platform_device_count=4"),
    ("--xla_cpu_max_isa=AVX2", "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=4"),
    ("--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=AVX2",
     "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=4"),
])
def test_a_device_count_in_xla_flags_is_replaced_and_other_flags_kept(flags, expected):
    from hrl.runtime.cpu_backend import with_cpu_device_count

    assert with_cpu_device_count(flags, 4) == expected


def test_ensure_cpu_devices_writes_a_child_environment_and_keeps_a_count_already_there():
    from hrl.runtime.cpu_backend import ensure_cpu_devices

    env = {"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}
    before = os.environ.get("XLA_FLAGS")
    ensure_cpu_devices(3, env)
    assert env["XLA_FLAGS"] == "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=3"
    assert os.environ.get("XLA_FLAGS") == before  # this process's environment untouched
    ensure_cpu_devices(8, env)  # a count already asked for stands
    assert env["XLA_FLAGS"].endswith("count=3")
    one = {}
    ensure_cpu_devices(1, one)
    assert one == {}


# A run whose placement names cpu:1, built in a fresh process whose XLA_FLAGS say nothing of
# CPU devices: where its replay state and its agent end up.
PLACED = """
import json, jax
from hrl.config import load_config
from hrl.runtime import build, initial_state
cfg = load_config("experiments/configs/dqn_cartpole.yaml", [
    "train.executor=sequential", "env.num_envs=4", "agent.hidden_sizes=[16,16]",
    "train.batch_size=16", "train.learning_starts=32", "replay.capacity=256",
    "log.progress=false", "placement.infer=cpu:0", "placement.train=cpu:0",
    "placement.sample=cpu:1", "placement.update=cpu:1"])
built = build(cfg)
state, _ = built.loop.run(initial_state(built), 12)
where = lambda tree: sorted({str(d) for x in jax.tree.leaves(tree) for d in x.devices()})
print(json.dumps([len(jax.devices("cpu")), where(state.replay), where(state.agent)]))
"""


def test_a_placement_on_cpu_1_makes_the_second_device_itself():
    """`placement.sample: cpu:1` needed XLA_FLAGS=--xla_force_host_platform_device_count=2 set
    by hand before JAX started; the run now asks for the devices its placement names."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", PLACED], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    devices, replay, agent = json.loads(out.stdout.strip().splitlines()[-1])
    assert devices == 2 and replay == ["cpu:1"] and agent == ["cpu:0"]
