"""How much the speed check's reference workload moves on a machine nobody else is using.

    python experiments/mapping/reference_spread.py [--processes 6] [--samples 5]

`hrl map`, `hrl train --mapping auto` and the held-out validation scale every predicted time
by one ratio: the reference workload (`hrl.mapping.speed.reference_time`) timed now, over
its time in the profile (`speed.speed_check`). Within `speed.SPEED_TOLERANCE` the ratio is
taken as noise and not applied. This script measures that noise: `--processes` fresh Python
processes, one after another, each started as the validation starts its own
(`start_profiling_backend` with the gymnax config's threads and dispatch), each timing the
reference `--samples` times back to back. Run it on a quiet machine (no other job): its
spread is then the machine's own, which the tolerance has to cover.

Writes experiments/results/mapping/reference_spread.{csv,md}: every sample (the three parts
and their sum), the spread within each process and across all of them, and how often a
single sample (what one speed check read before `speed.CHECK_SAMPLES`) or one process's median
(what a check reads now) lands outside the tolerance of the median.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "experiments" / "results" / "mapping"
PARTS = ("xla_s", "python_s", "numpy_s", "seconds")


def child(samples: int) -> None:
    """One fresh process: the backend as the validation starts it, then the samples."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import validate_mapping

    from hrl.config import load_config
    from hrl.mapping.profile.profiler import start_profiling_backend

    start_profiling_backend(load_config(validate_mapping.CONFIGS["gymnax"]), second_cpu=False)
    from hrl.mapping.speed import reference_time

    print(json.dumps([reference_time() for _ in range(samples)]))  # the last line: the result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.samples)
        return 0
    if args.processes < 1 or args.samples < 1:
        ap.error("--processes and --samples must be >= 1")
    from hrl.mapping.profile.io import cpu_name
    from hrl.mapping.speed import CHECK_SAMPLES, SPEED_TOLERANCE
    from hrl.runtime.cpu_backend import run_json_child

    rows = []
    for p in range(args.processes):
        readings = run_json_child([__file__, "--child", "--samples", str(args.samples)],
                                  f"reference process {p}", 600, cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        for i, s in enumerate(readings):
            rows.append({"process": p, "sample": i, **{k: round(s[k] * 1e3, 3) for k in PARTS}})
        got = [r["seconds"] for r in rows if r["process"] == p]
        print(f"process {p + 1}/{args.processes}: " + " ".join(f"{x:.1f}" for x in got)
              + " ms", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "reference_spread.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["process", "sample", *PARTS])
        w.writeheader()
        w.writerows(rows)
    total = [r["seconds"] for r in rows]
    med = statistics.median(total)
    medians = [statistics.median(r["seconds"] for r in rows if r["process"] == p)
               for p in range(args.processes)]
    outside = sum(abs(x / med - 1.0) > SPEED_TOLERANCE for x in total)
    lines = [
        "# The speed check's reference workload on a quiet machine", "",
        f"{cpu_name()}, {os.cpu_count()} cores. Regenerate: `python "
        "experiments/mapping/reference_spread.py` (on a machine with no other job). "
        f"{args.processes} fresh processes one after another, each started as the validation "
        f"starts its own, each timing `hrl.mapping.speed.reference_time` {args.samples} times "
        "back to back; milliseconds.", "",
        "| process | samples (ms) | median | max / min |", "|---|---|---|---|"]
    for p in range(args.processes):
        got = [r["seconds"] for r in rows if r["process"] == p]
        lines.append(f"| {p} | {', '.join(f'{x:.1f}' for x in got)} | "
                     f"{statistics.median(got):.1f} | {max(got) / min(got):.2f} |")
    lines += [
        "", f"All {len(total)} samples: median {med:.1f} ms, {min(total):.1f} to "
        f"{max(total):.1f} ({max(total) / min(total):.2f}x). {outside} of {len(total)} "
        f"single samples lie more than SPEED_TOLERANCE ({SPEED_TOLERANCE:.0%}) from the median: "
        "a speed check that took one of them would scale every prediction by that much on a "
        "machine whose speed had not changed.", "",
        f"A speed check now compares the median of {CHECK_SAMPLES} readings "
        "(`speed.CHECK_SAMPLES`), as each process's median above: "
        f"{sum(abs(m / med - 1.0) > SPEED_TOLERANCE for m in medians)} of {len(medians)} "
        "process medians lie beyond the tolerance.", "",
        "Each part alone (max / min over all samples): " + ", ".join(
            f"{k} {max(r[k] for r in rows) / min(r[k] for r in rows):.2f}x"
            for k in PARTS[:3]) + "."]
    (OUT / "reference_spread.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
