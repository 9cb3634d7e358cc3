"""The logged metrics (`hrl.runtime.metrics`): samples per insert as the rate limiter holds it."""

from __future__ import annotations

import csv

import pytest
from tiny_runs import tiny_config

from hrl.runtime import (
    train,
)


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
