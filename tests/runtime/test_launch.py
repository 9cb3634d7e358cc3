"""`hrl launch`: several processes joined by jax.distributed on this machine run one
data-parallel run; parameters agree across processes, and a killed run resumes exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_actor_lifetime import alive, children_of
from tiny_runs import tiny_config

from hrl import cli
from hrl.commands._errors import LIMIT, error_line
from hrl.config import dump_config
from hrl.runtime.progress import ProgressBar

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, **overrides) -> Path:
    cfg = tiny_config(**{"train.devices": 2, "replay.impl": "xla", "train.total_env_steps": 1024,
                         "log.checkpoint_every": 512, **overrides})
    path = tmp_path / "tiny.yaml"
    path.write_text(dump_config(cfg))
    return path


def _env() -> dict:
    # The suite's compilation cache comes in os.environ (conftest.py): the second launch of
    # the same program loads it.
    return dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")


def _hrl(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "hrl.cli", *args], env=_env(),
                          capture_output=True, text=True, timeout=600, **kwargs)


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.long
def test_two_processes_keep_one_set_of_parameters(tmp_path):
    run_dir = tmp_path / "run"
    proc = _hrl("launch", "--num-processes", "2", "--", "train", str(_config(tmp_path)),
                "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = _summary(run_dir)
    assert s["processes"] == 2 and s["devices"] == 2 and s["env_steps"] == 1024, s
    assert s["params_agree"] and len(set(s["params_digests"])) == 1, s
    # Process 0 writes the run's logs and its progress; process 1 only its own files.
    assert proc.stdout.count("finished:") == 1
    assert (run_dir / "metrics.csv").is_file() and (run_dir / "process-1").is_dir()
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("step_*")) == [
        "step_000000000512", "step_000000001024"]


@pytest.mark.slow
def test_killed_two_process_run_resumes_to_the_same_parameters(tmp_path):
    config = _config(tmp_path, **{"train.total_env_steps": 1536})
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    # One process with two (virtual) devices: the reference the processes must reproduce.
    proc = _hrl("train", str(config), "--run-dir", str(whole))
    assert proc.returncode == 0, proc.stderr[-3000:]
    launch = [sys.executable, "-m", "hrl.cli", "launch", "--num-processes", "2", "--", "train"]
    run = subprocess.Popen([*launch, str(config), "--run-dir", str(killed)], env=_env(),
                           start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    latest = killed / "checkpoints" / "latest.json"
    deadline = time.monotonic() + 600
    while not latest.exists():
        assert run.poll() is None and time.monotonic() < deadline, "no checkpoint written"
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGKILL)  # the launcher and both processes, mid-run
    run.wait()
    assert not (killed / "summary.json").exists()
    proc = _hrl("launch", "--num-processes", "2", "--", "train", "--resume", str(killed))
    assert proc.returncode == 0, proc.stderr[-3000:]
    s, ref = _summary(killed), _summary(whole)
    assert s["env_steps"] == ref["env_steps"] == 1536
    assert s["params_agree"] and ref["params_agree"]
    assert set(s["params_digests"]) == set(ref["params_digests"])  # bit for bit
    resumes = (killed / "resumes.jsonl").read_text().splitlines()
    assert len(resumes) == 1 and json.loads(resumes[0])["env_steps"] < 1536


@pytest.mark.parametrize(
    "args, message",
    [
        (["--num-processes", "2"], "missing the command to run after --"),
        (["--num-processes", "0", "--", "train", "x.yaml"], "--num-processes must be >= 1, got 0"),
        (["--num-processes", "2", "--process-id", "0", "--", "train", "x.yaml"],
         "--process-id needs --coordinator HOST:PORT"),
        (["--num-processes", "2", "--coordinator", "localhost:1", "--process-id", "2", "--",
          "train", "x.yaml"], "--process-id must be in [0, 2), got 2"),
    ],
)
def test_launch_mistakes_are_one_line(args, message, capsys):
    assert cli.main(["launch", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err


def test_a_malformed_process_setting_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HRL_COORDINATOR", "localhost:1")
    monkeypatch.setenv("HRL_NUM_PROCESSES", "two")
    monkeypatch.setenv("HRL_PROCESS_ID", "0")
    assert cli.main(["train", str(_config(tmp_path))]) == 2
    err = capsys.readouterr().err.strip()
    assert "HRL_NUM_PROCESSES='two': an integer is needed" in err and "\n" not in err, err


def test_a_config_the_launch_cannot_run_is_refused_in_one_line(tmp_path, capsys):
    config = _config(tmp_path, **{"train.devices": 1})
    assert cli.main(["launch", "--num-processes", "2", "--", "train", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'train.devices'" in err and "--devices 2" in err, err
    gym = _config(tmp_path, **{"env.name": "gymnasium:CartPole-v1"})
    assert cli.main(["launch", "--num-processes", "2", "--", "train", str(gym)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'env.name'" in err, err


def test_error_lines_never_show_an_array():
    big = np.arange(4000, dtype=np.float32).reshape(40, 100)
    for text in (f"Cannot serialize host local jax.Array ({big!r})", f"bad value {big}",
                 f"x: Array({big.tolist()}, dtype=float32)"):
        line = error_line(ValueError(text))
        assert "\n" not in line and len(line) <= LIMIT and "12" not in line, line
    assert error_line(ValueError("config key 'a': must be > 0")) == "config key 'a': must be > 0"


@pytest.mark.slow
def test_sigterm_to_the_launcher_checkpoints_and_stops_every_process(tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "stderr.txt"
    config = _config(tmp_path, **{"train.total_env_steps": 10_000_000})
    with log.open("w") as err:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "hrl.cli", "launch", "--num-processes", "2", "--", "train",
             str(config), "--run-dir", str(run_dir), "--no-progress"], env=_env(),
            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 300
        while not (run_dir / "metrics.csv").exists():
            assert launcher.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no chunk finished"
            time.sleep(0.1)
        processes = children_of(launcher.pid)
        assert len(processes) == 2, processes
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=120) == 130, log.read_text()[-3000:]
        assert not [p for p in processes if alive(p)]
        s = _summary(run_dir)
        assert s["interrupted"] and s["processes"] == 2, s
        latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
        assert str(s["env_steps"]) in json.dumps(latest), (latest, s["env_steps"])
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_progress_off_a_terminal_is_plain_lines(capsys):
    """A launch's process 0 writing to a file or a scheduler's log: no live bar, lines."""
    with ProgressBar(True, 1000, 0, "dqn CartPole") as bar:
        bar.update(500, 100.0, 25.0, 12.5, "16 samples/insert (fixed)")
    out = capsys.readouterr().out
    assert "dqn CartPole: 500/1,000 env steps" in out and "return 12.5" in out, out
