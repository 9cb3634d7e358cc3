"""The run's summary (`hrl.runtime.run_summary`): the steady state apart from the start-up."""

from __future__ import annotations

import pytest
from tiny_runs import tiny_config


def test_summary_reports_the_steady_state_apart_from_the_start_up(tmp_path):
    """The steady state (chunks after the session's first, starting past learning_starts) is
    what a mapping's prediction is compared with: 1536 env steps in chunks of 256 with
    learning_starts 300 give 6 chunks, of which the first is start-up and the second starts
    at 256 < 300, so 4 are steady; their rates count only their own steps."""
    from hrl.runtime.run import train

    cfg = tiny_config(**{"train.learning_starts": 300})
    s = train(cfg, run_dir=tmp_path, progress=False)
    assert s["env_steps"] == 1536 and s["steady_chunks"] == 4
    assert s["steady_env_steps_per_s"] > 0
    # Every steady chunk learns at the config's ratio: updates / env steps = 0.25.
    assert s["steady_updates_per_s"] == pytest.approx(0.25 * s["steady_env_steps_per_s"])
    short = train(tiny_config(**{"train.total_env_steps": 256}), run_dir=tmp_path / "short",
                  progress=False)
    assert short["steady_chunks"] == 0 and short["steady_env_steps_per_s"] is None
