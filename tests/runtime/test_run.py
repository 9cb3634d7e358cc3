"""The driver (`hrl.runtime.run.train`): seeded reproducibility, interrupted-and-resumed ==
uninterrupted, checkpoint cadence, Ctrl-C, a host backend's resume, next_obs stored once
through a resume, and a side-store overflow warned of."""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import sys
import time

import jax
import numpy as np
from tiny_runs import CONFIGS, ROOT, STORED, SUBPROCESS_ENV, assert_trees_equal, tiny_config

from hrl.runtime import (
    build,
    initial_state,
    latest_checkpoint,
    restore_checkpoint,
    train,
)


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
