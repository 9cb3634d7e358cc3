"""Per-batch time of replay-tree backends side by side: opencl (PoCL's CPU device here)
against the jax reference on the CPU, same trees, same batches, one run.

    .venv/bin/python experiments/bench/bench_backends.py            # full grid
    .venv/bin/python experiments/bench/bench_backends.py --quick    # a smoke run

Every backend goes through the host protocol (numpy in, numpy out), so the time includes
input checks and host<->device transfers, as a training loop would see them. `update` is
timed as the mean of `--calls` back-to-back calls followed by one call that waits for the
device (`total()`), so asynchronous dispatch is charged in full; `sample` returns indices to
the host on every call. Rounds alternate between the backends so that both see the same
machine load; a cell is the best of `--reps` rounds (the least disturbed by other processes;
the median is in the CSV too), after a warm-up round (compilation excluded).
Writes experiments/results/backends/bench_backends.{csv,md}.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from hrl.mapping.profile import cpu_name
from hrl.replay.backends import make_backend

RESULTS = Path(__file__).resolve().parents[1] / "results" / "backends"
OPTIONS = {"jax": {"device": "cpu"}}  # the jax baseline is its CPU backend


def _filled(name: str, capacity: int, fanout: int, fmt: str, rng):
    tree = make_backend(name, capacity, fanout, fmt, **OPTIONS.get(name, {}))
    chunk = 1 << 16
    for start in range(0, capacity, chunk):
        idx = np.arange(start, min(start + chunk, capacity))
        tree.update(idx, rng.random(idx.size).astype(np.float32) + 0.01)
    tree.total()
    return tree


def _rounds(tree, op: str, batch: int, calls: int, rng):
    """A callable that runs one round (`calls` back-to-back calls of `op` with batches of
    `batch` items, then a wait for the device) and returns (wall, CPU) seconds per call.
    CPU time is the whole process's, every thread (PoCL's workers, XLA's pool) included."""
    inputs = []
    for _ in range(calls):
        if op == "update":
            inputs.append((rng.integers(0, tree.capacity, batch),
                           rng.random(batch).astype(np.float32) + 0.01))
        else:
            inputs.append(rng.integers(0, 2**32, batch, dtype=np.uint32))

    def one_round():
        cpu, start = time.process_time(), time.perf_counter()
        for item in inputs:
            if op == "update":
                tree.update(*item)
            else:
                tree.sample_from_bits(item, True)
        tree.total()  # wait for the device
        return ((time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls)

    one_round()  # warm-up: compilation, buffer allocation
    return one_round


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="jax,opencl",
                        help="comma-separated registry names; the first is the baseline")
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--fanouts", default="4,16")
    parser.add_argument("--formats", default="float32,fixed")
    parser.add_argument("--batches", default="32,256,2048")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--reps", type=int, default=25)
    parser.add_argument("--quick", action="store_true",
                        help="capacity 10000, batch 256, 2 reps of 5 calls")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.capacity, args.batches, args.calls, args.reps = 10_000, "256", 5, 2
    names = args.backends.split(",")
    fanouts = [int(k) for k in args.fanouts.split(",")]
    formats = args.formats.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    ops = ["update", "sample"]

    console = Console()
    rows, devices = [], {}
    configs = [(f, k) for f in formats for k in fanouts]
    with Progress(console=console) as progress:
        task = progress.add_task("benchmark", total=len(configs) * len(names) * len(batches) * 2)
        for fmt, fanout in configs:
            trees = {}
            for name in names:
                progress.update(task, description=f"{name} {fmt} K={fanout}: fill")
                trees[name] = _filled(name, args.capacity, fanout, fmt,
                                      np.random.default_rng(0))
                device = getattr(trees[name], "device", "")
                devices[name] = getattr(device, "name", None) or str(device)
            for batch in batches:
                for op in ops:
                    progress.update(task, description=f"{fmt} K={fanout} {op} B={batch}")
                    runs = {name: _rounds(trees[name], op, batch, args.calls,
                                          np.random.default_rng(1)) for name in names}
                    # Rounds alternate between backends so that both see the same load.
                    samples = {name: [] for name in names}
                    for _ in range(args.reps):
                        for name in names:
                            samples[name].append(runs[name]())
                    row = {"op": op, "format": fmt, "fanout": fanout, "batch": batch}
                    for i, kind in enumerate(("wall", "cpu")):
                        best = {name: min(t[i] for t in samples[name]) for name in names}
                        for name in names:
                            row[f"{name}_{kind}_us"] = round(best[name] * 1e6, 1)
                        for name in names[1:]:
                            row[f"{name}/{names[0]}_{kind}"] = round(best[name] / best[names[0]],
                                                                     2)
                    for name in names:
                        row[f"{name}_median_wall_us"] = round(
                            statistics.median(t[0] for t in samples[name]) * 1e6, 1)
                    rows.append(row)
                    progress.advance(task, len(names))
            del trees

    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "bench_backends.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    md_path = args.out / "bench_backends.md"
    header = [h for h in rows[0] if "_median_" not in h]
    lines = [
        f"Per-batch time (µs) at capacity {args.capacity}: wall clock and process CPU time "
        f"(all threads), each the best of {args.reps} rounds of {args.calls} calls, rounds "
        f"alternating between backends (median wall times in the CSV); "
        f"ratio > 1: slower than {names[0]}. "
        f"Host: {cpu_name()}, {os.cpu_count()} CPUs, "
        f"load average at the end {os.getloadavg()[0]:.1f}. Devices: "
        + ", ".join(f"{name}: {device}" for name, device in devices.items()) + ". "
        "Regenerate: `.venv/bin/python experiments/bench/bench_backends.py`.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(str(row[h]) for h in header) + " |" for row in rows]
    md_path.write_text("\n".join(lines) + "\n")
    console.print("\n".join(lines))
    console.print(f"wrote {csv_path} and {md_path}")


if __name__ == "__main__":
    main()
