"""The small runs the runtime, replay and agent tests share: a CartPole config that compiles
and runs in seconds, the shipped configs shrunk to seconds, and an exact comparison of two
pytrees (a helper module beside the tests, on the path conftest.py sets)."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import numpy as np

from hrl.config import config_from_dict, load_config, to_dict
from hrl.runtime import build, initial_state

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "experiments" / "configs"

# The `hrl train` subprocesses of the tests: unbuffered output, and JAX's persistent compilation
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


ITERATIONS = 30  # one scan length for every test that uses it, so their programs are shared

STORED = {"replay.next_obs": "stored"}  # next_obs in every row, as before `auto`


def run_iterations(cfg, iterations: int, fused: bool | None = None):
    built = build(cfg) if fused is None else build(
        config_from_dict({**_as_dict(cfg), "train": {
            **_as_dict(cfg)["train"], "executor": "fused" if fused else "sequential"}})
    )
    state = initial_state(built)
    state, out = built.loop.run(state, iterations)
    return jax.device_get(state), out


def _as_dict(cfg):
    return to_dict(cfg)


SMALL = [
    "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
    "replay.capacity=512", "train.learning_starts=32", "train.train_ratio=0.25",
    "train.total_env_steps=2000",
]


def _small_run(config, overrides, iterations=30):
    """A shipped config shrunk to seconds, `iterations` iterations from a fresh state."""
    cfg = load_config(CONFIGS / f"{config}.yaml", SMALL + list(overrides))
    built = build(cfg)
    state, out = built.loop.run(initial_state(built), iterations)
    return built, jax.device_get(state), out


def _host_run(overrides, iterations=40):
    """DQN CartPole on the host loop (the loop a placement runs)."""
    built, state, _ = _small_run("dqn_cartpole", ["train.executor=sequential", *overrides],
                                 iterations)
    return built, state


def write(tmp_path, text: str) -> Path:
    """A config file of `text` in `tmp_path` (what the config and CLI tests load)."""
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path
