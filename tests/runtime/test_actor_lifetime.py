"""Actors never outlive their learner: a learner killed with SIGKILL (no handler runs, no
`close`) takes its actors' processes with it (`hrl.runtime.lifetime`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_runs import tiny_config

from hrl.config import dump_config

ROOT = Path(__file__).resolve().parents[2]


def children_of(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def descendants_of(pid: int) -> list[int]:
    """Every live process below `pid`."""
    found, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        found += kids
        todo += kids
    return found


@pytest.mark.parametrize("executor", [
    {"train.executor": "pipelined", "train.actors": "process"},
    # Ray's workers, raylet, GCS and agents (a local Ray started by the learner)
    pytest.param({"train.executor": "distributed", "train.num_actors": 2},
                 marks=pytest.mark.slow),
], ids=["pipelined-process", "distributed"])
def test_sigkill_of_the_learner_leaves_no_actor_process(tmp_path, executor):
    cfg = tiny_config(**{"env.name": "gymnasium:CartPole-v1", **executor,
                         "train.total_env_steps": 10_000_000})
    config = tmp_path / "tiny.yaml"
    config.write_text(dump_config(cfg))
    run_dir, log = tmp_path / "run", tmp_path / "stderr.txt"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    with log.open("w") as err:
        learner = subprocess.Popen(
            [sys.executable, "-m", "hrl.cli", "train", str(config), "--run-dir", str(run_dir),
             "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "metrics.csv").exists():  # a chunk done: the actors are serving
            assert learner.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no chunk finished"
            time.sleep(0.1)
        actors = descendants_of(learner.pid)
        assert actors, "the learner started no process"
        learner.kill()
        learner.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in actors) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in actors if alive(p)], "actor processes outlived their learner"
    finally:
        if learner.poll() is None:
            learner.kill()
        for p in descendants_of(learner.pid):
            os.kill(p, signal.SIGKILL)
