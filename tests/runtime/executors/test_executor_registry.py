"""The executor registry and protocol (hrl/runtime/executors/registry.py, base.py): one class
per executor name, each built from one `Parts` and answering every question the driver asks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hrl.config import load_config
from hrl.runtime import build, initial_state
from hrl.runtime.build_run import executor_of
from hrl.runtime.executors import EXECUTORS, executor_class
from hrl.runtime.executors.base import Executor, fixed_samples_per_insert
from hrl.runtime.executors.registry import EXECUTOR_CLASSES

CONFIGS = Path(__file__).resolve().parents[3] / "experiments" / "configs"
SMALL = [
    "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
    "replay.capacity=512", "train.learning_starts=32", "train.train_ratio=0.25",
    "train.total_env_steps=2000",
]
ATTRIBUTES = ("name", "runs_seeds_at_once", "fused", "inserts_in_order", "spans_processes")


def test_one_class_per_executor_name_answering_the_whole_protocol():
    assert tuple(EXECUTOR_CLASSES) == EXECUTORS
    methods = [m for m in dir(Executor) if not m.startswith("_")]
    for name in EXECUTORS:
        cls = executor_class(name)
        assert cls.name == name
        for attribute in ATTRIBUTES:
            assert isinstance(getattr(cls, attribute), str if attribute == "name" else bool)
        for method in methods:
            assert callable(getattr(cls, method, None)), (name, method)
        assert callable(cls.from_parts)
    assert [n for n in EXECUTORS if executor_class(n).runs_seeds_at_once] == [
        "fused", "data-parallel"]
    assert [n for n in EXECUTORS if not executor_class(n).inserts_in_order] == ["distributed"]
    with pytest.raises(ValueError, match=r"'train.executor': one of .* got 'warp'"):
        executor_class("warp")


@pytest.mark.parametrize(("config", "overrides", "name"), [
    ("dqn_cartpole", [], "fused"),
    ("dqn_cartpole", ["train.executor=sequential"], "sequential"),
    ("dqn_cartpole_gymnasium", ["train.executor=pipelined", "train.samples_per_insert=4"],
     "pipelined"),
])
def test_built_executor_answers_from_its_parts(config, overrides, name):
    """The registry builds the executor the config names; it gives its own initial state,
    checkpoint extras, log fields and progress note."""
    cfg = load_config(CONFIGS / f"{config}.yaml", SMALL + overrides)
    assert executor_of(cfg) == name
    built = build(cfg)
    loop = built.loop
    assert loop.name == name and loop.schedule is built.schedule
    state = initial_state(built)
    assert int(np.asarray(state.env_steps)) == 8  # the 3-step window's warm-up, 4 envs
    extras = loop.checkpoint_extras(0)
    assert set(extras) == {"host_state", "actors_state"} and extras["actors_state"] is None
    assert (extras["host_state"] is None) == built.env.spec.is_jax
    assert fixed_samples_per_insert(built.schedule) == pytest.approx(4.0)
    if name == "pipelined":
        assert set(loop.log_fields()) == {"spi_error_low", "spi_error_high"}
        assert loop.samples_per_insert_note(None) == "- samples/insert"
    else:
        assert loop.log_fields() == {}
        assert loop.samples_per_insert_note(3.0) == "4 samples/insert (fixed)"
    assert ("primitive_seconds" in loop.summary_fields(state)) == (not loop.fused)
    loop.close()


def test_stacked_seeds_need_a_traced_initial_state():
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL)
    built = build(cfg)
    with pytest.raises(ValueError, match="stacked seeds need a JAX environment"):
        initial_state(built, [0, 1])
    built.loop.close()
