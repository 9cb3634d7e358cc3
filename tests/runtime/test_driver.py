"""The `train` driver (hrl/runtime/run.py): its cadence rule, its callbacks (each chunk's rows,
a clean stop that a resume continues), and that it never asks which executor it holds."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from hrl.config import load_config
from hrl.runtime import train
from hrl.runtime.chunk_log import Cadence, ChunkEnd, next_multiple

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "experiments" / "configs"
# CartPole shrunk to seconds: 256 env steps a chunk (64 iterations of 4 envs), 2,056 in all.
TINY = [
    "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
    "replay.capacity=512", "train.learning_starts=32", "train.train_ratio=0.25",
    "train.total_env_steps=2000", "train.chunk_env_steps=256", "log.checkpoint_every=0",
]


def test_cadence_is_due_once_at_or_past_each_multiple():
    assert [next_multiple(x, 100) for x in (0, 99, 100, 250)] == [100, 100, 200, 300]
    cadence = Cadence.after(8, 100)
    assert [cadence.due(s) for s in (72, 136, 264, 270, 300, 460)] == [
        False, True, True, False, True, True]
    assert cadence.next == 500  # a chunk spanning 400 and 500 went on past both
    never = Cadence.after(8, 0)
    assert not any(never.due(s) for s in (0, 10**9))


@pytest.mark.long  # two sessions of a fused run: their compiles take tens of seconds
def test_callbacks_see_each_logged_row_and_one_stops_the_run_resumably(tmp_path):
    """One callback records the rows; another stops the run at its third chunk. The stop
    writes a checkpoint there, the summary says why it stopped, and a resume runs on from
    that checkpoint to the budget with the rows of an unstopped run's schedule."""
    cfg = load_config(CONFIGS / "dqn_cartpole.yaml", TINY)
    seen: list[ChunkEnd] = []

    def stop_at_third_chunk(end: ChunkEnd):
        return end.env_steps >= 776  # 8 warm-up steps + 3 chunks of 256

    summary = train(cfg, tmp_path, progress=False, callbacks=[seen.append, stop_at_third_chunk])
    assert summary["stopped_by"] == "callback" and summary["interrupted"]
    assert summary["env_steps"] == 776
    assert [end.env_steps for end in seen] == [264, 520, 776]
    logged = (tmp_path / "metrics.csv").read_text().splitlines()
    assert len(logged) == 1 + len(seen)
    header = logged[0].split(",")
    for end, line in zip(seen, logged[1:], strict=True):
        assert list(end.row) == header and end.rows == (end.row,) and end.seeds == (cfg.seed,)
        assert float(line.split(",")[header.index("td_abs")]) == pytest.approx(
            end.row["td_abs"], rel=1e-6, nan_ok=True)
        assert end.updates == end.row["updates"] and end.iteration * 256 + 8 == end.env_steps

    resumed = train(cfg, tmp_path, resume=True, progress=False)
    record = json.loads((tmp_path / "resumes.jsonl").read_text().splitlines()[-1])
    assert record["env_steps"] == 776 and record["checkpoint"] == "step_000000000776"
    assert resumed["stopped_by"] is None and not resumed["interrupted"]
    assert resumed["env_steps"] == 2056
    steps = [int(line.split(",")[0]) for line in
             (tmp_path / "metrics.csv").read_text().splitlines()[1:]]
    assert steps == [264 + 256 * i for i in range(8)]


def test_a_callback_that_is_not_callable_is_refused_before_anything_is_built(tmp_path):
    cfg = load_config(CONFIGS / "dqn_cartpole.yaml", TINY)
    with pytest.raises(TypeError, match=r"train\(callbacks=...\): 3 is not callable"):
        train(cfg, tmp_path, callbacks=[3])
    assert not any(tmp_path.iterdir())


def test_the_driver_never_asks_which_executor_it_holds():
    """No `isinstance` against an executor or replay class, no comparison of an executor's
    name: the executor answers through its protocol (`executors.base.Executor`)."""
    tree = ast.parse((ROOT / "hrl" / "runtime" / "run.py").read_text())
    asks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            asks.append(ast.unparse(node))
        if isinstance(node, ast.Compare):
            text = ast.unparse(node)
            if ".name" in text or any(k in text for k in ("Loop", "HostReplay", "fused")):
                asks.append(text)
    assert [a for a in asks if "jax.Array" not in a] == []


def test_chunk_end_row_is_the_first_seeds():
    end = ChunkEnd(10, 2, 1, 0.5, (3, 4), ({"a": 1.0}, {"a": math.nan}))
    assert end.row == {"a": 1.0}
