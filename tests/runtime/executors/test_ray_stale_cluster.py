"""Ray and the files an old cluster leaves: without an address a run starts its own local Ray
even when <RAY_TMPDIR>/ray/ray_current_cluster names a cluster that has died (Ray's own
default would retry that address for minutes); with an address that does not answer, the
run stops with one line. Each in a process of its own, with a Ray temp directory of its own
holding a stale cluster file."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray")

REPO = Path(__file__).resolve().parents[3]
# A hang is what this guards against: Ray retried a dead address for over 4 minutes.
HANG_S = 120


def _dead_address() -> str:
    """127.0.0.1:<a port nothing listens on>."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture
def stale_ray_dir():
    """A Ray temp directory (short: Ray's socket paths must fit in 107 bytes) whose
    ray_current_cluster names a dead GCS; the environment of a child that uses it."""
    with tempfile.TemporaryDirectory(prefix="hrlray", dir="/tmp") as d:
        (Path(d) / "ray").mkdir()
        (Path(d) / "ray" / "ray_current_cluster").write_text(_dead_address())
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env.update(RAY_TMPDIR=d, PYTHONPATH=str(REPO))
        yield env


@pytest.mark.long  # starting a local Ray takes 15-40 s on 2 cores
def test_without_an_address_a_run_starts_its_own_ray_despite_a_stale_cluster_file(
        stale_ray_dir):
    script = ("import ray\n"
              "from hrl.runtime.executors.ray_actors import start_ray\n"
              "start_ray()\n"
              "print('got', ray.get(ray.put(7)))\n"
              "ray.shutdown()\n")
    done = subprocess.run([sys.executable, "-c", script], env=stale_ray_dir, cwd=REPO,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "got 7" in done.stdout


@pytest.mark.parametrize("how", ["flag", pytest.param("env", marks=pytest.mark.long)])
def test_an_address_that_does_not_answer_is_one_line(stale_ray_dir, how, tmp_path):
    dead = _dead_address()
    env = dict(stale_ray_dir)
    args = [sys.executable, "-m", "hrl.cli", "train", "examples/corridor_jax.yaml",
            "--set", "train.executor=distributed", "--run-dir", str(tmp_path / "r"),
            "--no-progress"]
    if how == "flag":
        args += ["--ray-address", dead]
    else:
        env["RAY_ADDRESS"] = dead
    done = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=HANG_S)
    err = done.stderr.strip()
    assert done.returncode != 0
    assert len(err.splitlines()) == 1, err[-2000:]
    assert f"cannot reach the Ray cluster at {dead}" in err
