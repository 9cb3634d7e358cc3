"""Training-loop speed here vs at another revision, interleaved (the machine's drift hits both).

    .venv/bin/python experiments/bench/compare_fused_speed.py REV [--envs 1 64] [--rounds 3]
        [--seconds 6] [--executor fused|sequential]

For each round and each M, the DQN CartPole setting of `experiments/bench/bench_train.py` (64x64
MLP, replay 50k, one SGD step of batch 32 per env step) is timed once with this checkout's
`hrl` and once with REV's (a temporary git worktree), in fresh processes, alternating which
goes first. Both sides run this file's copy of the benchmark, so only the library differs.
Reports env steps/s of both and the ratio here / REV per round, and the median ratio; writes
experiments/results/train/<executor>_speed_vs_<REV>.{csv,md} (`--executor sequential`: the
host loop, each primitive its own call, the same setting).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "experiments" / "bench"
OUT = ROOT / "experiments" / "results" / "train"
sys.path.insert(0, str(BENCH))
from compare_fused_program import checkout_at  # noqa: E402

from hrl.runtime.cpu_backend import run_json_child  # noqa: E402

MEASURE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench_train import bench_config, measure
cfg = bench_config(int(sys.argv[2]), "sgd_per_step")
cfg["train"]["executor"] = sys.argv[4]
row = measure(cfg, "sgd_per_step", float(sys.argv[3]))
print(json.dumps({k: row[k] for k in ("env_steps_per_s", "load_avg_1min")}))
"""


def timed(checkout: Path, num_envs: int, seconds: float, executor: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return run_json_child(["-c", MEASURE, str(BENCH), str(num_envs), str(seconds), executor],
                          f"M={num_envs} at {checkout}", 3600, cwd=checkout, env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev")
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0, help="timed seconds per point")
    ap.add_argument("--executor", choices=["fused", "sequential"], default="fused")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    rows = []
    with checkout_at(rev) as other:
        for r in range(args.rounds):
            for m in args.envs:
                sides = [("here", ROOT), (rev, other)]
                if r % 2:
                    sides.reverse()
                got = {name: timed(path, m, args.seconds, args.executor)
                       for name, path in sides}
                row = {"round": r, "num_envs": m,
                       "here_env_steps_per_s": got["here"]["env_steps_per_s"],
                       "rev_env_steps_per_s": got[rev]["env_steps_per_s"],
                       "load_avg_1min": got["here"]["load_avg_1min"]}
                row["ratio"] = row["here_env_steps_per_s"] / row["rev_env_steps_per_s"]
                rows.append(row)
                print(f"round {r} M={m}: here {row['here_env_steps_per_s']:,.0f}, {rev} "
                      f"{row['rev_env_steps_per_s']:,.0f} env steps/s: {row['ratio']:.2f}x",
                      flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"{args.executor}_speed_vs_{rev}"
    with (OUT / f"{stem}.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    loads = [r["load_avg_1min"] for r in rows]
    lines = [
        f"# DQN CartPole, {args.executor} executor: {head} (here) vs {rev}, interleaved",
        "",
        f"Command: `.venv/bin/python experiments/bench/compare_fused_speed.py {args.rev} --envs "
        f"{' '.join(map(str, args.envs))} --rounds {args.rounds} --seconds {args.seconds:g} "
        f"--executor {args.executor}`. "
        "One SGD step of batch 32 per env step, 64x64 MLP, replay 50k (K=16). "
        f"1-minute load average {min(loads):.1f} to {max(loads):.1f}.",
        "",
        f"| M envs | env steps/s here (per round) | env steps/s {rev} | ratio here / {rev} "
        "(per round) | median ratio |",
        "| ---: | --- | --- | --- | ---: |",
    ]
    for m in args.envs:
        sub = [r for r in rows if r["num_envs"] == m]
        here = ", ".join(f"{r['here_env_steps_per_s']:,.0f}" for r in sub)
        there = ", ".join(f"{r['rev_env_steps_per_s']:,.0f}" for r in sub)
        ratios = ", ".join(f"{r['ratio']:.2f}" for r in sub)
        median = statistics.median(r["ratio"] for r in sub)
        lines.append(f"| {m} | {here} | {there} | {ratios} | **{median:.2f}x** |")
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
