"""`hrl.runtime.resume`: a run directory older than a config key resumes as it ran."""

from __future__ import annotations

from tiny_runs import STORED, assert_trees_equal, tiny_config

from hrl.runtime import (
    build,
    initial_state,
    latest_checkpoint,
    restore_checkpoint,
    train,
)


def test_a_run_directory_older_than_the_key_resumes_with_next_obs_stored(tmp_path):
    """A config.yaml written before `replay.next_obs` existed has no line for it; its run kept
    next_obs in every row, so `--resume` (`resume_config`) reads it as stored, not as today's
    default, and continues exactly as the uninterrupted stored run."""
    from hrl.config import load_config
    from hrl.runtime import resume_config

    cfg = tiny_config(**STORED)
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    train(cfg, run_dir=tmp_path / "old", progress=False, stop_at_env_steps=768)
    saved = tmp_path / "old" / "config.yaml"
    text = saved.read_text()
    saved.write_text(text.replace("  next_obs: stored\n", ""))
    assert "next_obs:" not in saved.read_text()
    assert load_config(saved).replay.next_obs == "auto"  # what plain loading would give
    resumed_cfg = resume_config(tmp_path / "old")
    assert resumed_cfg.replay.next_obs == "stored"
    resumed = train(resumed_cfg, run_dir=tmp_path / "old", resume=True, progress=False)
    assert resumed["replay_next_obs"] == "stored" and resumed["env_steps"] == full["env_steps"]
    like = initial_state(build(cfg))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "old")[0], like))
    assert (tmp_path / "full" / "episodes.csv").read_text() == \
        (tmp_path / "old" / "episodes.csv").read_text()
