"""Runtime: n-step window, relaxed-dependency queue, fused vs host loop, strict == relaxed(0),
seeded reproducibility, interrupted-and-resumed == uninterrupted, Ctrl-C, learning."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.config import config_from_dict
from hrl.replay.nstep import nstep_init, nstep_push
from hrl.runtime import (
    build,
    initial_state,
    latest_checkpoint,
    pending_init,
    pending_push,
    restore_checkpoint,
    train,
)
from hrl.runtime.pending import HostPendingQueue

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "experiments" / "configs"

# The `hrl train` subprocesses below: unbuffered output, and JAX's persistent compilation
# cache through the environment conftest.py sets (a run and its resumed twin compile once).
SUBPROCESS_ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def tiny_config(**overrides):
    """A CartPole run small enough to compile and run in seconds."""
    data = {
        "algo": "dqn",
        "seed": 3,
        "name": "tiny",
        "env": {"name": "gymnax:CartPole-v1", "num_envs": 4},
        "agent": {"hidden_sizes": [16, 16], "eps_decay_steps": 500},
        "replay": {"capacity": 1000, "fanout": 4},
        "train": {
            "total_env_steps": 1536,
            "batch_size": 16,
            "train_ratio": 0.25,
            "rollout_length": 4,
            "learning_starts": 64,
            "chunk_env_steps": 256,
        },
        "log": {"progress": False},
    }
    for dotted, value in overrides.items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return config_from_dict(data)


def assert_trees_equal(a, b):
    leaves_a = jax.tree_util.tree_leaves_with_path(a)
    leaves_b = jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for (path, x), y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(
            np.asarray(x), np.asarray(y), err_msg=jax.tree_util.keystr(path)
        )


# --------------------------------------------------------------------------- n-step


def naive_nstep(obs, act, rew, next_obs, term, done, n, gamma):
    """Per env and start step t: cut the return at the first episode end in t..t+n-1."""
    steps, envs = rew.shape
    out = []
    for t in range(steps - n + 1):
        row = []
        for m in range(envs):
            ret, k = 0.0, t
            for j in range(n):
                k = t + j
                ret += gamma**j * rew[k, m]
                if done[k, m]:
                    break
            disc = gamma ** (k - t + 1) * (0.0 if term[k, m] else 1.0)
            row.append((obs[t, m], act[t, m], ret, next_obs[k, m], disc))
        out.append(row)
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_nstep_matches_naive_reference(n):
    rng = np.random.default_rng(n)
    steps, envs, gamma = 40, 3, 0.9
    obs = rng.normal(size=(steps, envs, 2)).astype(np.float32)
    next_obs = rng.normal(size=(steps, envs, 2)).astype(np.float32)
    act = rng.integers(0, 4, size=(steps, envs)).astype(np.int32)
    rew = rng.normal(size=(steps, envs)).astype(np.float32)
    done = rng.random((steps, envs)) < 0.2
    term = done & (rng.random((steps, envs)) < 0.5)  # the rest are truncations
    example = {"obs": obs[0, 0], "action": act[0, 0], "reward": np.float32(0),
               "next_obs": obs[0, 0], "discount": np.float32(0)}
    acc = nstep_init(example, n, envs)
    push = jax.jit(nstep_push, static_argnums=7)
    emitted = []
    for t in range(steps):
        acc, tr = push(acc, obs[t], act[t], rew[t], next_obs[t], term[t], done[t], gamma)
        if t >= n - 1:
            emitted.append(jax.device_get(tr))
    expected = naive_nstep(obs, act, rew, next_obs, term, done, n, gamma)
    assert len(emitted) == len(expected)
    for got, want in zip(emitted, expected, strict=True):
        for m, (o, a, r, no, d) in enumerate(want):
            np.testing.assert_array_equal(got["obs"][m], o)
            assert got["action"][m] == a
            np.testing.assert_allclose(got["reward"][m], r, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(got["next_obs"][m], no)
            np.testing.assert_allclose(got["discount"][m], d, rtol=1e-6)


# --------------------------------------------------------------------------- relaxed queue


@pytest.mark.parametrize("staleness", [0, 1, 4])
def test_pending_releases_updates_exactly_s_steps_late(staleness):
    batch = 3
    pending = pending_init(staleness, batch)
    push = jax.jit(pending_push)
    for t in range(12):
        idx = jnp.full((batch,), t, jnp.int32)
        td = jnp.full((batch,), 10.0 * t, jnp.float32)
        pending, (out_idx, out_td, valid) = push(pending, idx, td)
        if t < staleness:
            assert not bool(valid)
        else:
            assert bool(valid)
            assert np.all(np.asarray(out_idx) == t - staleness)
            assert np.all(np.asarray(out_td) == 10.0 * (t - staleness))


# --------------------------------------------------------------------------- loops


def run_iterations(cfg, iterations: int, fused: bool | None = None):
    built = build(cfg) if fused is None else build(
        config_from_dict({**_as_dict(cfg), "train": {
            **_as_dict(cfg)["train"], "executor": "fused" if fused else "sequential"}})
    )
    state = initial_state(built)
    state, out = built.loop.run(state, iterations)
    return jax.device_get(state), out


def _as_dict(cfg):
    from hrl.config import to_dict

    return to_dict(cfg)


ITERATIONS = 30  # one scan length for every test here, so their programs are shared


def test_relaxed_with_zero_staleness_equals_strict_bit_for_bit():
    strict, out_s = run_iterations(tiny_config(), ITERATIONS)
    relaxed, out_r = run_iterations(
        tiny_config(**{"train.dependency": "relaxed", "train.staleness": 0}), ITERATIONS
    )
    assert int(strict.updates) > 0
    assert_trees_equal(strict, relaxed)
    assert_trees_equal(out_s, out_r)


def test_fused_loop_matches_host_loop():
    """The same iteration run as one lax.scan and as separate jitted primitive calls (with
    two priority updates in flight, so both drivers' relaxed queues are exercised)."""
    deps = {"train.dependency": "relaxed", "train.staleness": 2}
    fused, out_f = run_iterations(tiny_config(**deps), ITERATIONS, fused=True)
    host, out_h = run_iterations(tiny_config(**deps), ITERATIONS, fused=False)
    # Integer state (counters, indices, ring position, actions taken) must agree exactly; the
    # float state to XLA's fusion-dependent rounding.
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(fused),
                            jax.tree.leaves(host), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        name = jax.tree_util.keystr(path)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(out_f.completed, out_h.completed)
    # Staleness 2 really does change the trajectory (the strict run is the same program as
    # in the test above, so it comes from the compilation cache).
    strict, _ = run_iterations(tiny_config(), ITERATIONS, fused=True)
    assert int(strict.updates) == int(fused.updates) > 0
    assert not np.array_equal(np.asarray(strict.replay.tree.levels[-1]),
                              np.asarray(fused.replay.tree.levels[-1]))


def test_seeded_run_is_reproducible_and_resume_is_exact(tmp_path):
    """Interrupted at a chunk boundary and resumed == uninterrupted, bit for bit; and two runs
    with one seed are identical."""
    cfg = tiny_config()
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    assert not full["interrupted"] and full["updates"] > 0
    part = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=768)
    assert part["interrupted"] and part["env_steps"] == 768
    resumed = train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    assert not resumed["interrupted"]
    assert resumed["env_steps"] == full["env_steps"] and resumed["updates"] == full["updates"]

    like = initial_state(build(cfg))
    state_full = restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like)
    state_split = restore_checkpoint(latest_checkpoint(tmp_path / "split")[0], like)
    assert_trees_equal(state_full, state_split)
    episodes_full = (tmp_path / "full" / "episodes.csv").read_text()
    assert episodes_full == (tmp_path / "split" / "episodes.csv").read_text()
    assert episodes_full.count("\n") > 10
    for name in ("metrics.csv", "learning_curve.png", "config.yaml", "summary.json"):
        assert (tmp_path / "split" / name).is_file(), name

    again = train(cfg, run_dir=tmp_path / "again", progress=False)
    assert again["recent_return"] == full["recent_return"]
    state_again = restore_checkpoint(latest_checkpoint(tmp_path / "again")[0], like)
    assert_trees_equal(state_full, state_again)


def test_checkpoint_every_and_jsonl(tmp_path):
    cfg = tiny_config(**{"log.metrics_format": "jsonl"})
    train(cfg, run_dir=tmp_path, progress=False, checkpoint_every=512)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["env_steps"] for r in rows] == [256 * (i + 1) for i in range(6)]
    assert all(r["chunk_env_steps_per_s"] > 0 for r in rows)
    kept = sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*"))
    assert kept == ["step_000000001024", "step_000000001536"]  # newest two of 512/1024/1536
    info = json.loads((tmp_path / "checkpoints" / "latest.json").read_text())
    assert info["env_steps"] == 1536


def test_ctrl_c_leaves_a_resumable_checkpoint(tmp_path):
    """SIGINT to `hrl train` stops at the next chunk boundary with a checkpoint; `--resume`
    continues from it."""
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "hrl.cli", "train", str(CONFIGS / "dqn_cartpole.yaml"),
           "--run-dir", str(run_dir), "--no-progress",
           "--set", "train.total_env_steps=100000000", "--set", "train.chunk_env_steps=512",
           "--set", "train.rollout_length=64", "--set", "agent.hidden_sizes=[16]"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=SUBPROCESS_ENV)
    metrics = run_dir / "metrics.csv"
    deadline = time.monotonic() + 240
    while not (metrics.exists() and metrics.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no chunk finished in time"
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "resume with" in output
    found = latest_checkpoint(run_dir)
    assert found is not None
    stopped_at = found[1]["env_steps"]
    logged = [int(r["env_steps"]) for r in csv.DictReader(metrics.read_text().splitlines())]
    # At the end of a finished chunk: the one running when the signal came, or, when it came
    # between two chunks (after a row was written), the one just finished.
    assert stopped_at == logged[-1] >= logged[0] > 0

    resumed = subprocess.run(
        [sys.executable, "-m", "hrl.cli", "train", "--resume", str(run_dir), "--no-progress",
         "--set", f"train.total_env_steps={stopped_at + 1024}"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env=SUBPROCESS_ENV,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == stopped_at + 1024
    steps = [int(r["env_steps"]) for r in csv.DictReader(metrics.read_text().splitlines())]
    assert steps == sorted(steps) and steps[-1] == stopped_at + 1024


def test_host_loop_with_gymnasium_env_and_host_replay_backend(tmp_path):
    """gymnasium actors on the host + the sum tree on a host-driven backend: trains; a resume
    rebuilds the backend tree word for word from the checkpointed leaves and puts the host
    simulators' saved state back, so the resumed run equals the uninterrupted one bit for bit."""
    cfg = tiny_config(**{"env.name": "gymnasium:CartPole-v1", "replay.backend": "jax_host",
                         "train.total_env_steps": 512})
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    summary = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=256)
    assert summary["interrupted"] and not summary["fused"]
    assert summary["updates"] > 0 and all(v > 0 for v in summary["primitive_seconds"].values())
    found = latest_checkpoint(tmp_path / "split")[0]
    assert (found.parent / f"host_envs_{found.name}.pkl").is_file()
    built = build(cfg)
    state = restore_checkpoint(found, initial_state(built))
    state = state.replace(replay=jax.tree.map(np.array, state.replay))
    built.replay.sync_backend(state.replay)
    leaves = np.asarray(built.replay.backend.level_words()[-1]).reshape(-1)[: cfg.replay.capacity]
    np.testing.assert_array_equal(leaves, state.replay.leaves)
    assert int(state.replay.size) == 256
    resumed = train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    assert resumed["env_steps"] == 512 and not resumed["interrupted"]
    assert resumed["updates"] == full["updates"]
    like = initial_state(build(cfg))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "split")[0], like))
    episodes = (tmp_path / "full" / "episodes.csv").read_text()
    assert episodes == (tmp_path / "split" / "episodes.csv").read_text()
    assert episodes.count("\n") > 5


def test_public_names_import():
    import hrl.runtime

    for name in hrl.runtime.__all__:
        assert getattr(hrl.runtime, name) is not None, name


# ----------------------------------------------------------------------------- placement

SMALL = [
    "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
    "replay.capacity=512", "train.learning_starts=32", "train.train_ratio=0.25",
    "train.total_env_steps=2000",
]


def _small_run(config, overrides, iterations=30):
    """A shipped config shrunk to seconds, `iterations` iterations from a fresh state."""
    from hrl.config import load_config

    cfg = load_config(CONFIGS / f"{config}.yaml", SMALL + list(overrides))
    built = build(cfg)
    state, out = built.loop.run(initial_state(built), iterations)
    return built, jax.device_get(state), out


def _host_run(overrides, iterations=40):
    """DQN CartPole on the host loop (the loop a placement runs)."""
    built, state, _ = _small_run("dqn_cartpole", ["train.executor=sequential", *overrides],
                                 iterations)
    return built, state


def test_config_placement_runs_each_primitive_on_its_device_with_the_same_result():
    """`placement:` in the config reaches the host loop; on the same device it changes nothing."""
    placed = [f"placement.{p}=cpu:0" for p in ("env", "infer", "sample", "update", "train")]
    built, state = _host_run(placed)
    assert set(built.loop.placement) == {"env", "infer", "sample", "update", "train"}
    _, plain = _host_run([])
    assert_trees_equal(state, plain)


@pytest.mark.parametrize("override,message", [
    ("placement.learner=cpu:0", "placement.learner.*not a primitive"),
    ("placement.infer=tpu", "placement.infer.*host, cpu, gpu"),
    ("placement.infer=cpu:7", "placement.infer.*'cpu:7'.*1 cpu device.*JAX had started"),
    ("placement.env=host", "placement.env.*only for a host primitive"),
])
def test_bad_placement_names_the_key(override, message):
    import jax

    jax.devices()  # started: a run can no longer ask for the devices its placement names
    with pytest.raises(ValueError, match=message):
        _host_run([override], iterations=1)


def test_placement_on_two_cpu_devices_equals_one(tmp_path):
    """infer on cpu:0 and train/sample/update on cpu:1 (two XLA CPU devices in one process):
    bit for bit the run with everything on one device."""
    script = tmp_path / "two_devices.py"
    script.write_text(textwrap.dedent(f"""
        import jax, sys
        sys.path.insert(0, {str(ROOT / "tests" / "runtime")!r})
        from test_runtime import _host_run, assert_trees_equal
        assert len(jax.devices("cpu")) == 2
        _, placed = _host_run(["placement.infer=cpu:0", "placement.env=cpu:0",
                               "placement.sample=cpu:1", "placement.update=cpu:1",
                               "placement.train=cpu:1"])
        _, plain = _host_run([])
        assert_trees_equal(placed, plain)
        print("equal")
    """))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "equal" in proc.stdout


# ----------------------------------------------------------------------------- executors

@pytest.mark.parametrize("config", ["dqn_cartpole_gymnasium", "dqn_cartpole"])
def test_pipelined_depth_0_equals_sequential_bit_for_bit(config):
    """Strict, depth 0, weights every iteration: the pipelined executor (actors in a thread) is
    the sequential host loop exactly, with a host env and with a JAX env."""
    seq_built, seq, seq_out = _small_run(config, ["train.executor=sequential"])
    pip_built, pip, pip_out = _small_run(
        config, ["train.executor=pipelined", "train.pipeline_depth=0"])
    assert type(seq_built.loop).__name__ == "HostLoop"
    assert type(pip_built.loop).__name__ == "PipelinedLoop"
    assert int(seq.updates) > 0
    assert_trees_equal(seq, pip)
    np.testing.assert_array_equal(seq_out.completed_return, pip_out.completed_return)


@pytest.mark.parametrize(("config", "executor"), [("dqn_cartpole", "sequential"),
                                                ("dqn_cartpole_gymnasium", "pipelined")])
def test_host_executors_store_next_obs_once_by_default_and_train_as_stored(config, executor):
    """The default `replay.next_obs: auto` is next_slot under the host loop and the pipelined
    executor (a JAX env; a gymnasium env, whose final observations come from its auto-reset
    info, with the actors a step ahead): fewer bytes per transition, and the stored layout's
    run bit for bit, with the configs' 3-step windows: the items one episode end cuts share
    its side entry, so an untrained policy's short episodes fit the default side store.
    (dqn_cartpole adds 4 x 64 items at once: 1024 slots give the side store room for them,
    512 would resolve to stored.)"""
    from hrl.replay.factory import replay_bytes_per_item

    sets = [f"train.executor={executor}", "replay.capacity=1024"]
    built, slot, out = _small_run(config, sets)
    stored_built, stored, out_s = _small_run(config, [*sets, "replay.next_obs=stored"])
    assert type(built.replay).__name__ == "NextSlotReplay"
    assert type(stored_built.replay).__name__ == "PrioritizedReplay"
    assert int(slot.updates) > 0 and int(slot.replay.lost) == 0
    assert_trees_equal(stored.agent, slot.agent)
    assert_trees_equal(stored.replay.tree, slot.replay.tree)
    assert_trees_equal(out_s, out)
    assert replay_bytes_per_item(built.replay, built.example_transition) < \
        replay_bytes_per_item(stored_built.replay, stored_built.example_transition)


def test_pipelined_with_lagging_weights_is_reproducible():
    """depth 2, weights every 3 iterations, relaxed s=2: two runs give the same state (the
    weights each actor iteration uses follow from the schedule, not from thread timing), and
    that state differs from the sequential run's (the actors did act with older weights)."""
    lag = ["train.executor=pipelined", "train.pipeline_depth=2", "train.weight_sync_period=3",
           "train.dependency=relaxed", "train.staleness=2"]
    _, first, _ = _small_run("dqn_cartpole_gymnasium", lag)
    _, again, _ = _small_run("dqn_cartpole_gymnasium", lag)
    assert_trees_equal(first, again)
    _, seq, _ = _small_run("dqn_cartpole_gymnasium", ["train.executor=sequential",
                                                         "train.dependency=relaxed",
                                                         "train.staleness=2"])
    assert int(first.updates) == int(seq.updates) > 0
    differs = [not np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(first.agent), jax.tree.leaves(seq.agent),
                               strict=True)]
    assert any(differs)


def test_process_actors_equal_thread_actors_bit_for_bit():
    """Lagging weights (depth 2, weights every 3 iterations, relaxed s=2) over two chunks with
    gymnasium envs: actors in their own process give the thread actors' state exactly (the
    process is kept across chunks; the host envs' state crosses at each chunk's ends)."""
    lag = ["train.executor=pipelined", "train.pipeline_depth=2", "train.weight_sync_period=3",
           "train.dependency=relaxed", "train.staleness=2"]
    finals = {}
    for actors in ("thread", "process"):
        from hrl.config import load_config

        cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                          SMALL + lag + [f"train.actors={actors}"])
        built = build(cfg)
        state = initial_state(built)
        for _ in range(2):
            state, out = built.loop.run(state, 14)
        built.loop.close()
        sims = [(e.unwrapped.state.tolist(), e.unwrapped.np_random.bit_generator.state,
                 e._elapsed_steps) for e in built.env.envs]
        finals[actors] = (jax.device_get(state), out, sims)
    (thread, thread_out, thread_env), (process, process_out, process_env) = finals.values()
    assert int(thread.updates) > 0
    assert_trees_equal(thread, process)
    np.testing.assert_array_equal(thread_out.completed_return, process_out.completed_return)
    assert thread_env == process_env  # the envs' simulators came back to this process


@pytest.mark.parametrize("overrides,message", [
    (["train.executor=fused"], "train.executor.*needs a JAX environment"),
    (["train.actors=process"], "train.actors.*set train.executor: pipelined"),
    (["train.pipeline_depth=-1"], "train.pipeline_depth.*>= 0"),
    (["train.weight_sync_period=0"], "train.weight_sync_period.*>= 1"),
])
def test_bad_executor_settings_name_the_key(overrides, message):
    with pytest.raises(ValueError, match=message):
        _small_run("dqn_cartpole_gymnasium", overrides, iterations=1)


def test_host_pending_queue_is_pending_push():
    """The host loops' relaxed queue (slots on the host, so reading the update that leaves
    needs no device call behind train(t)) gives pending_push's outputs step after step, and
    hands back its queue bit for bit, from an empty queue and from one restored part full."""
    rng = np.random.default_rng(0)

    def row():
        return (jnp.asarray(rng.integers(0, 100, 4), jnp.int32),
                jnp.asarray(rng.normal(size=4), jnp.float32))

    pending = pending_init(3, 4)
    for start in range(3):  # 0: empty; then restored from a queue with 1, 2 slots filled
        if start:
            pending, _ = pending_push(pending, *row())
        queue = HostPendingQueue(pending)
        for _ in range(5):
            idx, td = row()
            pending, (want_idx, want_td, want_valid) = pending_push(pending, idx, td)
            got_idx, got_td, got_valid = queue.leaving()
            queue.push(idx, td)
            assert got_valid == bool(want_valid)
            if got_valid:
                np.testing.assert_array_equal(got_idx, want_idx)
                np.testing.assert_array_equal(got_td, want_td)
        assert_trees_equal(jax.device_put(queue.to_pending()), pending)



def test_metrics_report_samples_per_insert(tmp_path):
    """The data producer's throughput control, as logged: samples drawn per transition inserted
    since the buffer passed learning_starts (the ratio the limiter holds) is train_ratio x
    batch_size (0.25 x 16 = 4), give or take one learning round's samples (4 x 16)."""
    train(tiny_config(), run_dir=tmp_path, progress=False)
    rows = list(csv.DictReader((tmp_path / "metrics.csv").read_text().splitlines()))
    for row in rows:
        samples, past = float(row["updates"]) * 16, float(row["env_steps"]) - 64
        assert float(row["samples_per_insert"]) == pytest.approx(samples / past, abs=1e-3)
        assert abs(4 * past - samples) <= 4 * 16
    assert float(rows[-1]["samples_per_insert"]) == pytest.approx(4.0, rel=0.05)


def test_every_kernel_of_the_fused_program_is_attributed_to_its_primitive():
    """The `hrl.<primitive>` name scopes reach the compiled program's metadata, and the
    profiler script (experiments/bench/profile_fused_step.py) reads them back per kernel."""
    sys.path.insert(0, str(ROOT / "experiments" / "bench"))
    try:
        from profile_fused_step import PRIMITIVES, kernel_owners
    finally:
        sys.path.pop(0)
    built = build(tiny_config())
    hlo = built.loop._run.lower(initial_state(built), 2).compile().as_text()
    owners = set(kernel_owners(hlo).values())
    assert set(PRIMITIVES) <= owners
    # Control flow is not a kernel of its own; tuple-typed custom calls are.
    fake = (
        '  %ffi_call.7 = (s32[2]{0}, /*index=1*/f32[2]{0}) custom-call(%a), '
        'metadata={op_name="jit(f)/hrl.sample/ffi_call"}\n'
        '  %cond.3 = f32[] conditional(%p, %a, %b), metadata={op_name="jit(f)/hrl.train/cond"}\n'
        '  %copy.1 = f32[] copy(%x)\n'
    )
    assert kernel_owners(fake) == {"ffi_call.7": "sample", "copy.1": "loop (carry, keys, counters)"}


def test_relaxed_overlaps_the_replay_only_off_the_learners_device():
    """The replay thread of relaxed dependency is for trees off the learner's device (where a
    hand-off costs less than it hides); the relaxed runs of both kinds are tested bit for bit
    (here and tests/runtime/test_runtime_host.py)."""
    from hrl.runtime.build_run import replay_off_learner

    cpu = jax.devices()[0]
    assert replay_off_learner("opencl", {}) and replay_off_learner("rtl", {})
    assert not replay_off_learner("jax", {}) and not replay_off_learner("native_host", {})
    assert not replay_off_learner("jax", {"sample": cpu, "update": cpu})
    assert not replay_off_learner("jax", {"sample": cpu, "train": cpu})
    other = jax.devices()[-1]
    if other != cpu:
        assert replay_off_learner("jax", {"sample": other, "update": other})
    loop = build(tiny_config(**{"train.dependency": "relaxed", "train.staleness": 2,
                                "train.executor": "sequential"})).loop
    assert not loop.overlap_replay


def test_summary_reports_the_steady_state_apart_from_the_start_up(tmp_path):
    """The steady state (chunks after the session's first, starting past learning_starts) is
    what a mapping's prediction is compared with: 1536 env steps in chunks of 256 with
    learning_starts 300 give 6 chunks, of which the first is start-up and the second starts
    at 256 < 300, so 4 are steady; their rates count only their own steps."""
    from hrl.runtime.run import train

    cfg = tiny_config(**{"train.learning_starts": 300})
    s = train(cfg, run_dir=tmp_path, progress=False)
    assert s["env_steps"] == 1536 and s["steady_chunks"] == 4
    assert s["steady_env_steps_per_s"] > 0
    # Every steady chunk learns at the config's ratio: updates / env steps = 0.25.
    assert s["steady_updates_per_s"] == pytest.approx(0.25 * s["steady_env_steps_per_s"])
    short = train(tiny_config(**{"train.total_env_steps": 256}), run_dir=tmp_path / "short",
                  progress=False)
    assert short["steady_chunks"] == 0 and short["steady_env_steps_per_s"] is None


STORED = {"replay.next_obs": "stored"}  # next_obs in every row, as before `auto`


@pytest.mark.parametrize("n_step", [1, pytest.param(3, marks=pytest.mark.long)])
def test_next_obs_from_the_next_slot_trains_exactly_as_stored(n_step):
    """The default `replay.next_obs: auto` is next_slot in a fused run (next_obs rebuilt from
    the next slot, the tail and the side store) and gives the stored layout's training run:
    the same networks, priorities and episodes, bit for bit, through the ring's wrap-around
    (203 slots < 30 iterations x 16)."""
    base = {"replay.n_step": n_step, "replay.capacity": 203}  # wraps; no multiple of M
    stored, out_s = run_iterations(tiny_config(**base, **STORED), ITERATIONS)
    default = tiny_config(**base)
    assert type(build(default).replay).__name__ == "NextSlotReplay"
    slot, out_n = run_iterations(default, ITERATIONS)
    assert int(slot.updates) > 0 and int(slot.replay.lost) == 0
    assert int(slot.replay.added) > 203
    assert_trees_equal(stored.agent, slot.agent)
    assert_trees_equal(stored.replay.tree, slot.replay.tree)
    assert_trees_equal(out_s, out_n)


def _metrics_but_timing(run_dir):
    """metrics.csv's rows without the wall-clock columns (what two runs share bit for bit)."""
    with (run_dir / "metrics.csv").open() as f:
        rows = [{k: v for k, v in r.items() if k not in ("wall_s", "chunk_env_steps_per_s")}
                for r in csv.DictReader(f)]
    assert len(rows) > 1 and "td_abs" in rows[0]
    return rows


def test_a_default_run_stores_next_obs_once_resumes_exactly_and_equals_stored(tmp_path):
    """`replay.next_obs: auto` (next_slot here): interrupted and resumed == uninterrupted; the
    episodes and metrics of the explicit stored run, bit for bit, in fewer bytes."""
    cfg = tiny_config()  # replay.next_obs auto: next_slot
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    part = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=768)
    assert part["interrupted"]
    train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    like = initial_state(build(cfg))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "split")[0], like))
    stored = train(tiny_config(**STORED), run_dir=tmp_path / "stored", progress=False)
    assert full["recent_return"] == stored["recent_return"]
    episodes = (tmp_path / "stored" / "episodes.csv").read_text()
    assert episodes == (tmp_path / "full" / "episodes.csv").read_text()
    assert _metrics_but_timing(tmp_path / "stored") == _metrics_but_timing(tmp_path / "full")
    assert full["replay_next_obs"] == "next_slot" and full["replay_next_obs_lost"] == 0
    assert stored["replay_next_obs"] == "stored" and stored["replay_next_obs_lost"] is None
    obs_bytes = 4 * 4  # CartPole: 4 float32
    assert stored["replay_bytes_per_transition"] - full["replay_bytes_per_transition"] == \
        obs_bytes - 5 - 0.25 * obs_bytes  # the link (int32) and the target flag (bool)


def test_a_run_directory_older_than_the_key_resumes_with_next_obs_stored(tmp_path):
    """A config.yaml written before `replay.next_obs` existed has no line for it; its run kept
    next_obs in every row, so `--resume` (`resume_config`) reads it as stored, not as today's
    default, and continues exactly as the uninterrupted stored run."""
    from hrl.config import load_config
    from hrl.runtime import resume_config

    cfg = tiny_config(**STORED)
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    train(cfg, run_dir=tmp_path / "old", progress=False, stop_at_env_steps=768)
    saved = tmp_path / "old" / "config.yaml"
    text = saved.read_text()
    saved.write_text(text.replace("  next_obs: stored\n", ""))
    assert "next_obs:" not in saved.read_text()
    assert load_config(saved).replay.next_obs == "auto"  # what plain loading would give
    resumed_cfg = resume_config(tmp_path / "old")
    assert resumed_cfg.replay.next_obs == "stored"
    resumed = train(resumed_cfg, run_dir=tmp_path / "old", resume=True, progress=False)
    assert resumed["replay_next_obs"] == "stored" and resumed["env_steps"] == full["env_steps"]
    like = initial_state(build(cfg))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "old")[0], like))
    assert (tmp_path / "full" / "episodes.csv").read_text() == \
        (tmp_path / "old" / "episodes.csv").read_text()


def test_a_side_store_overflow_is_warned_of_while_the_run_runs(tmp_path, capsys):
    """A side store of 16 entries (the least an add of 16 items takes) for 1000 slots:
    CartPole's episode ends overflow it within three chunks; the run says so at that chunk's
    end (one line naming the remedies), and the summary counts the dropped items."""
    cfg = tiny_config(**{"replay.next_obs_side": 0.016, "train.total_env_steps": 768})
    summary = train(cfg, run_dir=tmp_path, progress=False)
    assert summary["replay_next_obs"] == "next_slot"
    lines = [line for line in capsys.readouterr().err.splitlines()
             if "replay.next_obs next_slot dropped" in line]
    assert len(lines) >= 1 and re.search(r"by env step (256|512|768);", lines[0])
    assert "replay.next_obs_side" in lines[0] and "replay.next_obs: stored" in lines[0]
    assert summary["replay_next_obs_lost"] > 0
