"""`log.tensorboard` and `log.wandb`: the metrics rows and episodes reach their writers, read
back from the files they leave (no TensorBoard or W&B server involved)."""

from __future__ import annotations

import csv
import struct

import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from hrl.config import config_from_dict
from hrl.runtime.run import train


def tiny_config(**log):
    return config_from_dict({
        "algo": "dqn", "seed": 5, "name": "sinks",
        "env": {"name": "gymnax:CartPole-v1", "num_envs": 4},
        "agent": {"hidden_sizes": [16, 16], "eps_decay_steps": 500},
        "replay": {"capacity": 1000, "fanout": 4},
        "train": {"total_env_steps": 768, "batch_size": 16, "train_ratio": 0.25,
                  "rollout_length": 4, "learning_starts": 64, "chunk_env_steps": 256},
        "log": {"progress": False, **log},
    })


def read_events(run_dir) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the run's event files: TFRecord framing (length, its CRC, the record,
    its CRC) around `Event` protos, read without TensorFlow or TensorBoard."""
    out: dict[str, list[tuple[int, float]]] = {}
    files = sorted(run_dir.glob("events.out.tfevents.*"))
    assert files, "no event file written"
    for path in files:
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            record = data[pos + 12:pos + 12 + length]
            pos += 12 + length + 4
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out


def test_tensorboard_events_hold_every_metrics_row_and_episode(tmp_path):
    summary = train(tiny_config(tensorboard=True), run_dir=tmp_path)
    events = read_events(tmp_path)
    rows = list(csv.DictReader((tmp_path / "metrics.csv").read_text().splitlines()))
    assert len(rows) == 3 and summary["env_steps"] == int(rows[-1]["env_steps"])
    for column in ("recent_return", "chunk_env_steps_per_s", "updates", "loss"):
        logged = events[f"train/{column}"]
        assert [s for s, _ in logged] == [int(r["env_steps"]) for r in rows]
        np.testing.assert_allclose([v for _, v in logged],
                                   [float(r[column]) for r in rows], rtol=1e-6)
    episodes = list(csv.DictReader((tmp_path / "episodes.csv").read_text().splitlines()))
    assert len(episodes) > 0
    assert [s for s, _ in events["episode/return"]] == [int(e["env_steps"]) for e in episodes]


def test_wandb_offline_run_is_written_into_the_run_directory(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    train(tiny_config(wandb=True, wandb_project="hrl-test"), run_dir=tmp_path)
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("run-*.wandb")), "no W&B record file"
