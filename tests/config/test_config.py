"""Config loading (`hrl.config`): the shipped configs load and round-trip, overrides parse, bad
configs fail naming the key, the config is frozen."""

from __future__ import annotations

import dataclasses

import pytest
from tiny_runs import CONFIGS, write

from hrl.config import (
    ConfigError,
    RunConfig,
    config_from_dict,
    dump_config,
    load_config,
    parse_yaml,
    updates_schedule,
)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_configs_load(path):
    cfg = load_config(path)
    assert isinstance(cfg, RunConfig)
    assert cfg.name == path.stem
    # A dumped config reads back to the same config (what --resume relies on).
    assert config_from_dict(parse_yaml(dump_config(cfg))) == cfg


def test_defaults_and_overrides(tmp_path):
    path = write(tmp_path, "algo: dqn\nenv: {name: 'gymnax:CartPole-v1'}\n")
    cfg = load_config(
        path,
        [
            "train.batch_size=128",
            "agent.learning_rate=1e-4",  # YAML 1.1 would read this as a string
            "agent.hidden_sizes=[32, 16]",
            "train.dependency=relaxed",
            "train.staleness=4",
            "env.kwargs={max_episode_steps: 200}",
        ],
    )
    assert cfg.train.batch_size == 128
    assert cfg.agent.learning_rate == pytest.approx(1e-4)
    assert cfg.agent.hidden_sizes == (32, 16)
    assert cfg.train.dependency == "relaxed" and cfg.train.staleness == 4
    assert cfg.env.kwargs == {"max_episode_steps": 200}
    assert cfg.name == "cfg"


@pytest.mark.parametrize(
    "overrides, key, fragment",
    [
        (["train.batch_sise=3"], "train.batch_sise", "unknown key"),
        (["trian.batch_size=3"], "trian", "unknown key"),
        (["agent.learning_rat=0.1"], "agent.learning_rat", "unknown key"),
        (["train.batch_size=abc"], "train.batch_size", "expected int, got str"),
        (["train.batch_size=1.5"], "train.batch_size", "expected int, got float"),
        (["train.fused=true"], "train.fused", "removed; set train.executor"),
        (["agent.hidden_sizes=64"], "agent.hidden_sizes", "expected a list"),
        (["agent.hidden_sizes=[64, x]"], "agent.hidden_sizes[1]", "expected int"),
        (["train.dependency=lazy"], "train.dependency", "expected one of"),
        (["env.num_envs=0"], "env.num_envs", "must be >= 1"),
        (["replay.alpha=1.5"], "replay.alpha", "must be in [0, 1]"),
        (["replay.fanout=12"], "replay.fanout", "power of two"),
        (["replay.capacity=100", "train.batch_size=128"], "train.batch_size", "capacity"),
        (["train.staleness=2"], "train.staleness", "must be 0 when"),
        (["train.gamma=1.5"], "train.gamma", "must be in [0, 1]"),
        (["train.train_ratio=0.3", "train.rollout_length=1"], "train.train_ratio", "whole"),
        (["train.train_ratio=-1"], "train.train_ratio", "must be > 0"),
        (["train.learning_starts=10", "train.batch_size=32"], "train.learning_starts", ">="),
        (["replay.fmt=int7"], "replay.fmt", ""),
        (["agent.tau=0"], "agent", "tau"),
        (["algo=ppo"], "algo", "expected one of"),
        (["train=3"], "train", "expected a mapping"),
        (["log.metrics_format=xml"], "log.metrics_format", "expected one of"),
    ],
)
def test_bad_configs_name_the_key(tmp_path, overrides, key, fragment):
    path = write(tmp_path, "algo: dqn\nenv: {name: 'gymnax:CartPole-v1'}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, overrides)
    message = str(err.value)
    assert f"'{key}'" in message, message
    assert fragment in message, message


def test_bad_override_syntax(tmp_path):
    path = write(tmp_path, "algo: dqn\nseed: 3\n")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_config(path, ["train.batch_size"])
    with pytest.raises(ConfigError, match="is a value"):
        load_config(path, ["seed.x=1"])
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


def test_algo_must_match_action_space():
    from hrl.runtime import build

    cfg = config_from_dict({"algo": "ddpg", "env": {"name": "gymnax:CartPole-v1"}})
    with pytest.raises(ValueError, match="config key 'algo'"):
        build(cfg)


def test_updates_schedule():
    assert updates_schedule(0.25, 8) == (2, 1)
    assert updates_schedule(1 / 64, 16) == (1, 4)
    assert updates_schedule(1.0, 1) == (1, 1)
    with pytest.raises(ValueError, match="whole"):
        updates_schedule(0.3, 1)


def test_config_is_frozen():
    cfg = config_from_dict({"algo": "dqn"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3
