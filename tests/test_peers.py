"""experiments/peers: the orchestrator's parsing, aggregation and reports, and the in-repo peer
scripts (hrl, the jitted JAX DQN with flashbax) for a tiny budget. The PyTorch peers need their
own venvs (`make peers`), which CI does not build: those tests skip without them. No timing is
asserted anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PEERS_DIR = ROOT / "experiments" / "peers"
sys.path.insert(0, str(PEERS_DIR))

import common  # noqa: E402
import run_peers  # noqa: E402


def _row(peer, task="dqn", m=1, rnd=0, rate=100.0, solved=None, **kw):
    row = {"round": rnd, "peer": peer, "task": task, "num_envs": m, "env_steps_per_s": rate,
           "updates_per_s": rate, "gflops_per_s": rate * 1e-3, "peak_gflops": 50.0,
           "solved_s": solved, "solved_env_steps": None if solved is None else 20000,
           "budget_s": 60.0, "env_impl": "e", "replay": "r", "loop": "l", "load_avg_1min": 1.0,
           "versions": {peer: "1.0"}, "error": ""}
    row.update(kw)
    return row


def test_parse_results_reads_only_marked_lines():
    text = ("warning: noise\nPEER_RESULT {\"peer\": \"a\", \"x\": 1}\n"
            "[progress] PEER_RESULT {\"peer\": \"b\"}\nlast line\n")
    assert run_peers.parse_results(text) == [{"peer": "a", "x": 1}, {"peer": "b"}]
    assert run_peers.parse_results("") == []


def test_schedule_interleaves_and_rotates():
    class A:
        peers = ["hrl-gymnax", "sb3", "rllib"]
        rounds, envs, ddpg_seconds, skip_replay = 2, [1, 8], 5.0, False
        parts = ("dqn", "ddpg", "replay")

    runs = run_peers.schedule(A())
    first = [r["peer"] for r in runs if r["round"] == 0 and r["task"] == "dqn"]
    second = [r["peer"] for r in runs if r["round"] == 1 and r["task"] == "dqn"]
    assert first[:3] == ["hrl-gymnax", "sb3", "rllib"] and second[:3] == ["sb3", "rllib",
                                                                          "hrl-gymnax"]
    # rllib has no DDPG; every replay library once per round
    assert {r["peer"] for r in runs if r["task"] == "ddpg"} == {"hrl-gymnax", "sb3"}
    assert sorted(r["peer"] for r in runs if r["task"] == "replay" and r["round"] == 1) == [
        "cpprb", "flashbax", "hrl"]


def test_aggregate_medians_and_solved_counts(tmp_path):
    rows = [
        _row("hrl-gymnax", rate=100, solved=10.0, rnd=0),
        _row("hrl-gymnax", rate=300, solved=None, rnd=1),
        _row("hrl-gymnax", rate=200, solved=14.0, rnd=2),
        _row("sb3", rate=50, rnd=0),
        _row("sb3", rnd=1, error="timed out"),
        _row("sb3", task="ddpg", rate=40),
        {"round": 0, "peer": "hrl", "task": "replay", "op": "sample+update", "mode": "scan",
         "median_us": 60.0, "path": "native", "load_avg_1min": 1.0, "versions": {}, "error": ""},
        {"round": 1, "peer": "hrl", "task": "replay", "op": "sample+update", "mode": "scan",
         "median_us": 80.0, "path": "native", "load_avg_1min": 2.0, "versions": {}, "error": ""},
    ]
    agg = run_peers.aggregate(rows)
    a = agg["train"][("dqn", "hrl-gymnax", 1)]
    assert a["runs"] == 3 and a["env_steps_per_s"] == 200
    assert a["solved_runs"] == 2 and a["solved_s"] == 12.0
    assert agg["train"][("dqn", "sb3", 1)]["runs"] == 1  # the failed run is left out
    assert agg["train"][("ddpg", "sb3", 1)]["peak_fraction"] == pytest.approx(0.04 / 50)
    r = agg["replay"][("hrl", "sample+update", "scan")]
    assert (r["median_us"], r["min_us"], r["max_us"]) == (70.0, 60.0, 80.0)

    # CSV round trip, then the reports and the README rows from it
    run_peers.write_csv(rows, tmp_path / "peers.csv")
    back = run_peers.read_csv(tmp_path / "peers.csv")
    assert run_peers.aggregate(back)["train"][("dqn", "hrl-gymnax", 1)]["solved_s"] == 12.0
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{run_peers.README_BEGIN}\nold\n{run_peers.README_END}\nrest\n")
    run_peers.report(back, {"rounds": 3, "seconds": 60}, tmp_path, readme)
    md = (tmp_path / "peers.md").read_text()
    assert "| hrl-gymnax |" in md and "12.0 s (2/3)" in md and "timed out" in md
    assert (tmp_path / "peers.png").stat().st_size > 0
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "old" not in text
    assert "hrl (gymnax, fused)" in text and "> 60 s" in text  # sb3 never solved


def test_flop_count():
    # DQN 4-64-64-2: F = 2 (4*64 + 64*64 + 64*2) = 8,960; act F, train 32 x 5 F
    f = common.flops_per_env_step("dqn")
    assert f["act"] == 8960 and f["per_env_step"] == 8960 + 32 * 5 * 8960
    d = common.flops_per_env_step("ddpg")
    fa, fc = 2 * (3 * 64 + 64 * 64 + 64), 2 * (4 * 64 + 64 * 64 + 64)
    assert d["per_env_step"] == fa + 128 * (4 * fa + 7 * fc)


def _run_script(python, script, *args, timeout=240):
    proc = subprocess.run([str(python), str(PEERS_DIR / script), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "RAY_AUTH_MODE": "disabled"})
    rows = run_peers.parse_results(proc.stdout)
    assert proc.returncode == 0 and len(rows) == 1, proc.stderr[-2000:]
    return rows[0]


def _check_training_row(row, peer, m):
    assert row["peer"] == peer and row["num_envs"] == m and row["env_steps"] > 0
    assert row["flops_per_env_step"] == common.flops_per_env_step(row["task"])["per_env_step"]
    json.dumps(row)


# Two peers' training runs (benchmark scripts, `make peers`); their rows' checks above stay.
@pytest.mark.long
def test_hrl_and_jax_flashbax_peers_tiny_budget(capsys):
    import peer_hrl
    import peer_jax_flashbax

    row = peer_hrl.main(["--task", "dqn", "--envs", "2", "--seconds", "0.1"])
    _check_training_row(row, "hrl", 2)
    assert row["loop"] == "fused lax.scan" and row["env_steps"] % 2 == 0
    row = peer_jax_flashbax.main(["--task", "dqn", "--envs", "2", "--seconds", "0.1"])
    _check_training_row(row, "jax-flashbax", 2)
    assert row["updates"] == 0 or row["updates"] <= row["env_steps"]
    assert capsys.readouterr().out.count(run_peers.MARK) == 2


@pytest.mark.parametrize("peer", [
    "sb3",
    # Tianshou compiles its numba kernels (~20 s) and RLlib starts Ray (~30 s) on every start.
    pytest.param("tianshou", marks=pytest.mark.slow),
    pytest.param("rllib", marks=pytest.mark.slow),
])
def test_torch_peer_tiny_budget(peer):
    python = ROOT / ".peers" / peer / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{peer}'s venv .peers/{peer} is not built (make peers builds it; CI "
                    "does not)")
    row = _run_script(python, f"peer_{peer}.py", "--task", "dqn", "--envs", "2",
                      "--seconds", "1")
    _check_training_row(row, peer, 2)


def test_docs_minatar_table_is_the_committed_runs(tmp_path, monkeypatch):
    """docs/index.md's MinAtar table is what minatar_summary.py writes from the committed
    2-core runs (so a rerun that was not summarized, or a hand edit, fails here)."""
    import minatar_summary

    docs = ROOT / "docs" / "index.md"
    copy = tmp_path / "index.md"
    copy.write_text(docs.read_text())
    monkeypatch.setattr(minatar_summary, "DOCS", copy)
    runs = [minatar_summary.summarize(minatar_summary.OUT / f)
            for f in minatar_summary.DOCS_RUNS]
    assert all(runs), "a 2-core MinAtar run folder is missing"
    minatar_summary.write_docs_table(runs)
    assert copy.read_text() == docs.read_text()
    assert "<!-- minatar:start -->\n| game |" in docs.read_text()
