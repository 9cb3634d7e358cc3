"""What a newcomer reads: a budget that is not a whole number of chunks says how it rounds
before training, and resuming a finished run says so instead of running nothing."""

from __future__ import annotations

import json

from hrl import cli

CONFIG = """\
algo: dqn
seed: 5
name: budget
env: {name: "gymnax:CartPole-v1", num_envs: 4}
agent: {hidden_sizes: [16, 16], eps_decay_steps: 500}
replay: {capacity: 1000, fanout: 4}
train: {batch_size: 16, train_ratio: 0.25, rollout_length: 4, learning_starts: 64,
        chunk_env_steps: 256}
"""


def test_a_rounded_budget_is_announced_and_a_finished_run_says_it_is_finished(
        tmp_path, capsys):
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(CONFIG)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(cfg_path), "--set", "train.total_env_steps=600",
                     "--run-dir", str(run_dir), "--no-progress"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("hrl: train.total_env_steps=600 runs 768 env steps")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == 768

    assert cli.main(["train", "--resume", str(run_dir), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "already finished: 768 env steps of train.total_env_steps=600" in out
    assert "env steps/s" not in out
    assert json.loads((run_dir / "summary.json").read_text()) == summary  # not rewritten
