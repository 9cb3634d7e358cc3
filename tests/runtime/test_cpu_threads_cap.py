"""`train.cpu_threads` above the machine's usable cores is capped to them with a one-line
warning naming the key and the core count (a config written on a larger machine still runs)."""

from __future__ import annotations

import warnings

import pytest

from hrl.config import load_config
from hrl.runtime import cpu_backend
from hrl.runtime.cpu_backend import cpu_threads_of, usable_cores

CONFIG = "experiments/configs/dqn_cartpole.yaml"


def test_more_threads_than_cores_are_capped_with_one_line(monkeypatch):
    monkeypatch.setattr(cpu_backend, "usable_cores", lambda: 4)
    cfg = load_config(CONFIG, ["train.cpu_threads=64"])
    with pytest.warns(UserWarning) as got:
        assert cpu_threads_of(cfg) == 4
    (w,) = got
    text = str(w.message)
    assert "\n" not in text and "train.cpu_threads=64" in text and "4 usable cores" in text


def test_threads_within_the_cores_pass_unchanged():
    cfg = load_config(CONFIG, [f"train.cpu_threads={usable_cores()}"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cpu_threads_of(cfg) == usable_cores()
