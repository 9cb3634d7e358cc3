"""Evaluation (`hrl.runtime.evaluation`, `train.eval_every`, `hrl eval`): the greedy or
deterministic policy, on env copies and keys of its own, that never changes training; its
best checkpoint; exact resume with evaluation on."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_runs import assert_trees_equal, tiny_config

from hrl import agents, envs
from hrl.cli import main as cli_main
from hrl.commands.eval import evaluate_run
from hrl.config import ConfigError
from hrl.runtime import build, initial_state, train
from hrl.runtime.build_run import seed_list
from hrl.runtime.checkpoint import latest_checkpoint, restore_checkpoint
from hrl.runtime.evaluation import Evaluator, eval_key, make_evaluator
from hrl.runtime.metrics import read_episodes, read_eval_rows

EVAL = {"train.eval_every": 512, "train.eval_episodes": 3}


def test_policies_are_greedy_and_deterministic():
    key = jax.random.PRNGKey(0)
    env = envs.make_env("gymnax:CartPole-v1", 8)
    dqn = agents.make_dqn(agents.DQNConfig(eval_epsilon=0.0), env.spec)
    state = dqn.init(key)
    _, obs = env.reset(key)
    greedy = jnp.argmax(dqn.q_values(state, obs), axis=-1)
    np.testing.assert_array_equal(dqn.policy(state, obs), greedy)
    np.testing.assert_array_equal(dqn.act(state, obs, key, 0, explore=False), greedy)
    pend = envs.make_env("gymnax:Pendulum-v1", 8)
    ddpg = agents.make_ddpg(agents.DDPGConfig(), pend.spec)
    dstate = ddpg.init(key)
    _, pobs = pend.reset(key)
    mean = ddpg.actor.apply(dstate.params["actor"], pobs)
    np.testing.assert_array_equal(ddpg.policy(dstate, pobs), mean)
    assert np.all(np.abs(np.asarray(mean)) <= 2.0)


def test_eval_keys_are_not_the_training_keys_and_depend_on_seed_and_step():
    root = jax.random.PRNGKey(3)
    training = {tuple(np.asarray(k).tolist()) for k in jax.random.split(root, 4)}
    training.add(tuple(np.asarray(root).tolist()))
    evals = {tuple(np.asarray(eval_key(s, t)).tolist()) for s in (3, 4) for t in (0, 512)}
    assert len(evals) == 4 and not evals & training


def test_jax_and_host_evaluators_play_one_episode_per_copy():
    """E copies, one episode each, ended by the env's own end (CartPole: <= 500 steps); the
    same key gives the same returns; a stacked pair of seeds gives each seed's own."""
    cfg = tiny_config()
    built = build(cfg)
    agent_state = initial_state(built).agent
    ev = make_evaluator(cfg, built.agent, 5)
    one = ev.returns(agent_state, 3, 512)
    assert one.shape == (5,) and np.all((one >= 1) & (one <= 500))
    np.testing.assert_array_equal(one, ev.returns(agent_state, 3, 512))
    stacked = jax.tree.map(lambda x: jnp.stack([x, x]), agent_state)
    both = ev.returns(stacked, np.array([3, 4]), 512)
    np.testing.assert_array_equal(both[0], one)
    np.testing.assert_array_equal(both[1], ev.returns(agent_state, 4, 512))
    host = Evaluator(envs.make_env("gymnasium:CartPole-v1", 4), built.agent, 4)
    h = host.returns(agent_state, 3, 512)
    assert h.shape == (4,) and np.all((h >= 1) & (h <= 500))
    np.testing.assert_array_equal(h, host.returns(agent_state, 3, 512))


def test_eval_config_is_validated():
    with pytest.raises(ConfigError, match="'train.eval_every': must be >= 0"):
        tiny_config(**{"train.eval_every": -1})
    with pytest.raises(ConfigError, match="'train.eval_episodes': must be >= 1"):
        tiny_config(**{"train.eval_episodes": 0})


def test_evaluation_changes_nothing_in_training_and_keeps_the_best(tmp_path):
    """Two vmapped seeds with evaluation on train bit for bit as without it; eval rows at
    every eval_every crossing and at the end; the best checkpoint holds the best score."""
    plain, evald = tiny_config(seeds=2), tiny_config(seeds=2, **EVAL)
    train(plain, run_dir=tmp_path / "plain", progress=False)
    summary = train(evald, run_dir=tmp_path / "eval", progress=False)
    like = initial_state(build(plain), seed_list(plain))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "plain")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "eval")[0], like))
    for seed in seed_list(evald):
        a = read_episodes(tmp_path / "plain" / f"seed-{seed}")
        b = read_episodes(tmp_path / "eval" / f"seed-{seed}")
        np.testing.assert_array_equal(a[1], b[1])
        rows = read_eval_rows(tmp_path / "eval" / f"seed-{seed}")
        assert [r["env_steps"] for r in rows] == [512, 1024, 1536]
        assert all(r["episodes"] == 3 for r in rows)
    scores = [np.mean([read_eval_rows(tmp_path / "eval" / f"seed-{s}")[i]["eval_return"]
                       for s in seed_list(evald)]) for i in range(3)]
    best_path, best_info = latest_checkpoint(tmp_path / "eval" / "best")
    assert best_info["eval_return"] == pytest.approx(max(scores))
    assert best_info["env_steps"] == [512, 1024, 1536][int(np.argmax(scores))]
    assert summary["final_eval_return"]["runs"] == 2
    assert [r["final_eval_return"] for r in summary["per_seed"]] == [
        read_eval_rows(tmp_path / "eval" / f"seed-{s}")[-1]["eval_return"]
        for s in seed_list(evald)]
    # hrl eval on the latest checkpoint repeats the run's final evaluation exactly.
    again = evaluate_run(tmp_path / "eval")
    assert [r["eval_return"] for r in again["per_seed"]] == [
        r["final_eval_return"] for r in summary["per_seed"]]
    best = evaluate_run(tmp_path / "eval", best=True)
    assert np.mean([r["eval_return"] for r in best["per_seed"]]) == pytest.approx(max(scores))
    assert cli_main(["eval", str(tmp_path / "eval"), "--episodes", "2"]) == 0
    written = json.loads((tmp_path / "eval" / "eval_latest.json").read_text())
    assert [r["episodes"] for r in written["per_seed"]] == [2, 2]


def test_resume_with_evaluation_is_exact(tmp_path):
    """Interrupted + resumed == uninterrupted, with evaluation on: episodes, eval rows and
    the best checkpoint."""
    cfg = tiny_config(**{**EVAL, "train.eval_every": 384})
    train(cfg, run_dir=tmp_path / "full", progress=False)
    train(cfg, run_dir=tmp_path / "cut", progress=False, stop_at_env_steps=768)
    train(cfg, run_dir=tmp_path / "cut", progress=False, resume=True)
    for a, b in zip(read_episodes(tmp_path / "full"), read_episodes(tmp_path / "cut"),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    assert read_eval_rows(tmp_path / "full") == read_eval_rows(tmp_path / "cut")
    assert len(read_eval_rows(tmp_path / "full")) >= 4
    full, cut = latest_checkpoint(tmp_path / "full" / "best"), latest_checkpoint(
        tmp_path / "cut" / "best")
    assert full[0].name == cut[0].name and full[1]["eval_return"] == cut[1]["eval_return"]


def test_hrl_eval_errors_are_one_line(tmp_path, capsys):
    assert cli_main(["eval", str(tmp_path)]) == 2
    assert "config.yaml not found" in capsys.readouterr().err
