"""The examples of examples/ run as the guides show them, at a small size."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from hrl import cli

REPO = Path(__file__).resolve().parents[1]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jax_loop_learns_on_every_seed():
    """Prioritized SGD inside one jitted scan: the weighted loss falls on every seed."""
    out = _example("jax_loop").main(["--steps", "400", "--seeds", "3"])
    assert out["last_loss"] < 0.1 * out["first_loss"]


@pytest.mark.parametrize("seed", [0, 1])
def test_numpy_learner_on_replay_handle_finds_the_goal(seed):
    out = _example("numpy_dqn").main(["--steps", "1500", "--seed", str(seed)])
    assert out["greedy_right"] >= out["states"] - 1
    assert out["path"] in ("direct", "jit")


# Half a minute in a subprocess; the same env trains from Python in make test.
@pytest.mark.long
def test_custom_gymnasium_env_trains_from_the_cli(tmp_path, monkeypatch):
    """`hrl train examples/corridor.yaml`: the env named as gymnasium:<module>:<id> is
    imported from the directory hrl runs in."""
    monkeypatch.chdir(REPO)
    run_dir = tmp_path / "corridor"
    status = cli.main(["train", "examples/corridor.yaml", "--set", "train.total_env_steps=1024",
                       "--run-dir", str(run_dir), "--no-progress"])
    assert status == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] >= 1024 and summary["executor"] == "sequential"


def test_custom_gymnasium_env_trains_from_python(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    summary = _example("corridor_env").main(["--steps", "512", "--run-dir",
                                             str(tmp_path / "py")])
    assert summary["env_steps"] >= 512


@pytest.mark.slow  # about a minute: it profiles every primitive (test_profiler covers it)
def test_profile_and_map_writes_a_report(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    report = _example("profile_and_map").main(["--out", str(tmp_path / "prof")])
    assert (report / "report.md").exists() and (report / "mapping.json").exists()


def test_callbacks_example_stops_on_its_own_rule(tmp_path):
    """examples/callbacks.py: a callback keeps every chunk's row, another stops the run at
    the first chunk whose recent return reaches the bar (0 here: the first chunk)."""
    out = _example("callbacks").main([
        "--bar", "0", "--run-dir", str(tmp_path / "cb"), "--set", "env.num_envs=4",
        "agent.hidden_sizes=[16,16]", "train.batch_size=16", "replay.capacity=512",
        "train.learning_starts=32", "train.chunk_env_steps=256"])
    assert out["summary"]["stopped_by"] == "callback" and len(out["history"]) == 1
    assert (tmp_path / "cb" / "checkpoints").is_dir()
