"""Time to solve of `make demo` over seeds: wall seconds of `python -m hrl.demo`, and its split.

    .venv/bin/python experiments/learning/demo_time.py [--seeds 0 1 2 3 4]

Each seed runs the demo as a new process (as `make demo` does), with JAX's persistent compile
cache in a fresh directory: the first run compiles (cold), the later ones load the compiled
programs (warm), like a second `make demo`. Writes experiments/results/demo/demo_time.{csv,md}.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "results" / "demo"
SPLIT = re.compile(
    r"wall ([\d.]+) s = imports ([\d.]+) s \+ set-up ([\d.]+) s .*?\+ first chunk ([\d.]+) s"
    r".*?\+ training ([\d.]+) s", re.S)
SOLVED = re.compile(r"solved in [\d.]+ s\S*: mean return of the last 10 episodes [\d.]+ at the "
                    r"episode ending at env step ([\d,]+)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    args = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HRL_COMPILE_CACHE": str(Path(tmp) / "cache"), "COLUMNS": "400"}
        for i, seed in enumerate(args.seeds):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "hrl.demo", "--set", f"seed={seed}", "--run-dir",
                 str(Path(tmp) / f"run-{seed}")], capture_output=True, text=True, env=env)
            process_s = time.perf_counter() - start
            text = " ".join(done.stdout.split())
            split, solved = SPLIT.search(text), SOLVED.search(text)
            if done.returncode != 0 or not split or not solved:
                print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"seed {seed}: demo failed (exit {done.returncode})")
            wall, imports, setup, first, train = (float(x) for x in split.groups())
            rows.append({"seed": seed, "cache": "cold" if i == 0 else "warm",
                         "process_s": round(process_s, 2), "demo_wall_s": wall,
                         "imports_s": imports, "setup_s": setup, "first_chunk_s": first,
                         "training_s": train,
                         "env_steps_to_solved": int(solved.group(1).replace(",", ""))})
            print(rows[-1], flush=True)
    with (OUT / "demo_time.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    process = sorted(r["process_s"] for r in rows)
    median = process[len(process) // 2]
    lines = ["# `make demo`: time to solve CartPole", "",
             "Regenerate: `python experiments/learning/demo_time.py`. Process wall seconds "
             "(interpreter "
             "start to exit) per seed; the first run fills a fresh compile cache.", "",
             "| seed | cache | process s | imports s | set-up s | first chunk s | training s "
             "| env steps to solved |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['seed']} | {r['cache']} | {r['process_s']} | {r['imports_s']} | "
              f"{r['setup_s']} | {r['first_chunk_s']} | {r['training_s']} | "
              f"{r['env_steps_to_solved']:,} |" for r in rows]
    lines += ["", f"Median over {len(rows)} seeds: {median:.1f} s."]
    (OUT / "demo_time.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
