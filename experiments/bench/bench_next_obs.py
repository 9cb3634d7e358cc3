"""Replay bytes per transition and the fused loop's speed, next_obs stored against next_slot.

    nice -n 19 .venv/bin/python experiments/bench/bench_next_obs.py [--env-steps 30720]
        [--rounds 3] [--config experiments/configs/dqn_minatar_breakout.yaml]

Each round runs `hrl train CONFIG --set train.total_env_steps=N --set replay.next_obs=X` once
for X = stored and once for X = next_slot, in fresh processes, alternating which goes first
(the machine's drift hits both), and reads each run's summary.json: the bytes per transition,
the steady-state SGD steps/s and env steps/s (chunks past learning_starts, compilation
excluded), the side store's dropped items and the episodes' returns. Writes
experiments/results/next_obs/next_obs.{csv,md}: per round both runs' figures and the ratio
next_slot / stored, the median ratio, and whether the two runs' episodes (returns and lengths,
every one) are identical, which they are when next_slot is exact (no item dropped).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "next_obs"
LAYOUTS = ("stored", "next_slot")


def run_once(config: str, env_steps: int, layout: str, run_dir: Path) -> dict:
    cmd = [sys.executable, "-m", "hrl.cli", "train", config, "--no-progress",
           "--set", f"train.total_env_steps={env_steps}", "--set", f"replay.next_obs={layout}",
           "--run-dir", str(run_dir)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load = os.getloadavg()[0]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["episodes"] = (run_dir / "episodes.csv").read_text()
    summary["load_avg_1min"] = round(max(load, os.getloadavg()[0]), 1)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="experiments/configs/dqn_minatar_breakout.yaml")
    ap.add_argument("--env-steps", type=int, default=30720)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows, same = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = LAYOUTS if r % 2 == 0 else LAYOUTS[::-1]
            got = {x: run_once(args.config, args.env_steps, x, Path(tmp) / f"{r}-{x}")
                   for x in order}
            a, b = got["stored"], got["next_slot"]
            same = same and a["episodes"] == b["episodes"]
            row = {"round": r, "first": order[0],
                   "stored_bytes": a["replay_bytes_per_transition"],
                   "next_slot_bytes": b["replay_bytes_per_transition"],
                   "stored_sgd_per_s": a["steady_updates_per_s"],
                   "next_slot_sgd_per_s": b["steady_updates_per_s"],
                   "stored_env_per_s": a["steady_env_steps_per_s"],
                   "next_slot_env_per_s": b["steady_env_steps_per_s"],
                   "next_slot_lost": b["replay_next_obs_lost"],
                   "same_episodes": a["episodes"] == b["episodes"],
                   "load_avg_1min": max(a["load_avg_1min"], b["load_avg_1min"])}
            row["sgd_ratio"] = row["next_slot_sgd_per_s"] / row["stored_sgd_per_s"]
            rows.append(row)
            print(f"round {r}: SGD steps/s stored {row['stored_sgd_per_s']:.1f}, next_slot "
                  f"{row['next_slot_sgd_per_s']:.1f} ({row['sgd_ratio']:.3f}x); bytes "
                  f"{row['stored_bytes']} -> {row['next_slot_bytes']}", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "next_obs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    median = statistics.median(r["sgd_ratio"] for r in rows)
    lines = [
        "# next_obs stored against next_slot: replay bytes and fused-loop speed", "",
        f"`nice -n 19 .venv/bin/python experiments/bench/bench_next_obs.py --config "
        f"{args.config} --env-steps {args.env_steps} --rounds {args.rounds}`", "",
        "Each round: `hrl train CONFIG --set train.total_env_steps=N --set "
        "replay.next_obs=stored|next_slot`, fresh processes, the order alternating. SGD and env "
        "steps/s are the summary's steady state (chunks past learning_starts); load: the "
        "machine's 1-minute load average, the larger of the two runs' (start or end).", "",
        "| round | first | bytes/transition stored | next_slot | SGD/s stored | next_slot | "
        "ratio | env steps/s stored | next_slot | dropped | same episodes | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['round']} | {r['first']} | {r['stored_bytes']} | {r['next_slot_bytes']} | "
            f"{r['stored_sgd_per_s']:.1f} | {r['next_slot_sgd_per_s']:.1f} | "
            f"{r['sgd_ratio']:.3f} | {r['stored_env_per_s']:.0f} | "
            f"{r['next_slot_env_per_s']:.0f} | {r['next_slot_lost']} | {r['same_episodes']} | "
            f"{r['load_avg_1min']} |")
    lines += ["", f"Median SGD steps/s ratio next_slot / stored: **{median:.3f}**. Every "
              f"episode of the two runs identical in every round: **{same}**."]
    (OUT / "next_obs.md").write_text("\n".join(lines) + "\n")
    print(f"median ratio {median:.3f}; same episodes: {same}")


if __name__ == "__main__":
    main()
