"""What `hrl train --mapping auto` costs: the same run with and without it, side by side.

    .venv/bin/python experiments/bench/bench_mapping_auto.py [--rounds 3] [--steps 102400]
        [--profile experiments/results/mapping/profile]

Each side is the user's command, `hrl train experiments/configs/dqn_cartpole.yaml` at a
setting no validation run uses (16 envs, batch 64, 0.5 SGD steps per env step), in a fresh
process; one side adds `--mapping auto --profile P`, which ranks the mappings on the
profile, picks one (the fused loop on a CPU-only machine) and runs it. The sides alternate
round by round so the machine's drift hits both alike. Steady speed: the median of the
per-chunk env steps/s of metrics.csv after the first chunk (which holds the compile). Each
run also records the executor its config.yaml names (what `--mapping auto` chose) and the
process's CPU time.

Writes experiments/results/mapping/auto_cost.{csv,md}: per round and side the steady env
steps/s and the CPU seconds, and the ratio of the medians (auto / without).
"""

from __future__ import annotations

import argparse
import csv
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "mapping"
CONFIG = ROOT / "experiments" / "configs" / "dqn_cartpole.yaml"
SETTING = ["env.num_envs=16", "train.batch_size=64", "train.train_ratio=0.5",
           "train.rollout_length=16", "train.chunk_env_steps=5120"]


def one_run(auto: bool, steps: int, profile: Path, workdir: Path) -> dict:
    run_dir = workdir / f"{'auto' if auto else 'plain'}-{time.monotonic_ns()}"
    cmd = [sys.executable, "-m", "hrl.cli", "train", str(CONFIG), "--no-progress",
           "--run-dir", str(run_dir), "--set", f"train.total_env_steps={steps}"]
    for s in SETTING:
        cmd += ["--set", s]
    if auto:
        cmd += ["--mapping", "auto", "--profile", str(profile)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    rows = list(csv.DictReader((run_dir / "metrics.csv").read_text().splitlines()))
    speeds = [float(r["chunk_env_steps_per_s"]) for r in rows[1:]]
    config = (run_dir / "config.yaml").read_text().splitlines()
    chose = next((line.strip() for line in config if line.strip().startswith("executor:")), "")
    return {"side": "auto" if auto else "without", "steady_env_steps_per_s":
            round(statistics.median(speeds), 1), "chunks": len(speeds),
            "cpu_s": round((after.ru_utime + after.ru_stime)
                           - (before.ru_utime + before.ru_stime), 1),
            "wall_s": round(wall, 1), "chose": chose[:160]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=102400)
    ap.add_argument("--profile", type=Path, default=OUT / "profile")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for auto in ((False, True) if r % 2 == 0 else (True, False)):
                row = {"round": r, **one_run(auto, args.steps, args.profile, Path(tmp))}
                rows.append(row)
                print(row, flush=True)
    fields = ["round", "side", "steady_env_steps_per_s", "chunks", "cpu_s", "wall_s", "chose"]
    with open(OUT / "auto_cost.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    shown = args.profile.relative_to(ROOT) if args.profile.is_relative_to(ROOT) else args.profile
    med = {s: statistics.median(r["steady_env_steps_per_s"] for r in rows if r["side"] == s)
           for s in ("without", "auto")}
    lines = ["# `hrl train --mapping auto`: its cost, side by side", "",
             "Regenerate: `python experiments/bench/bench_mapping_auto.py`. DQN CartPole "
             f"(`{' '.join(SETTING)}`), {args.steps:,} env steps a run, each run a fresh "
             f"process, the sides alternating over {args.rounds} rounds; profile "
             f"`{shown}`. "
             "Steady env steps/s: the median of the chunks after the first.", "",
             f"**auto / without: {med['auto'] / med['without']:.3f}** (medians "
             f"{med['auto']:,.0f} and {med['without']:,.0f} env steps/s)", "",
             "| round | side | steady env steps/s | chunks | CPU s | wall s | "
             "executor in config.yaml |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['side']} | {r['steady_env_steps_per_s']:,} | "
              f"{r['chunks']} | {r['cpu_s']} | {r['wall_s']} | {r['chose']} |" for r in rows]
    (OUT / "auto_cost.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
