"""What one hand-off to a second thread and back costs: `ThreadPoolExecutor(1)` (submit + result,
as the relaxed dependency's replay thread does it: `SequentialLoop._overlapped_round`) against
a bare thread fed and answered through two `queue.SimpleQueue`s, a no-op job, interleaved rounds
in one process. The relaxed host loop pays one per SGD step, so this is the least a replay call must
take for the overlap to pay.

    .venv/bin/python experiments/bench/bench_handoff.py [--calls 20000] [--rounds 5]

Writes experiments/results/relaxed/handoff.{csv,md}.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import SimpleQueue

OUT = Path(__file__).resolve().parents[1] / "results" / "relaxed"


def noop():
    return None


def simple_queues_us(calls: int) -> float:
    jobs, results = SimpleQueue(), SimpleQueue()

    def serve():
        while (fn := jobs.get()) is not None:
            results.put(fn())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            jobs.put(noop)
            results.get()
        return (time.perf_counter() - start) / calls * 1e6
    finally:
        jobs.put(None)
        thread.join()


def thread_pool_us(calls: int) -> float:
    with ThreadPoolExecutor(1) as pool:
        pool.submit(noop).result()  # the pool starts its thread at the first job
        start = time.perf_counter()
        for _ in range(calls):
            pool.submit(noop).result()
        return (time.perf_counter() - start) / calls * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    rows = []
    for r in range(args.rounds):
        pool, bare = thread_pool_us(args.calls), simple_queues_us(args.calls)
        rows.append({"round": r + 1, "thread_pool_us": pool, "simple_queues_us": bare,
                     "ratio": pool / bare})
        print(f"round {r + 1}: ThreadPoolExecutor {pool:.1f} us, SimpleQueues {bare:.1f} us")
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "handoff.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    def med(k):
        return statistics.median(x[k] for x in rows)

    from hrl.mapping.profile import cpu_name  # jax, which it imports, loads after the timing

    text = (
        "# One hand-off to a second thread and back (no-op job)\n\n"
        f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the end. Regenerate: `python "
        f"experiments/bench/bench_handoff.py {' '.join(sys.argv[1:])}`.".rstrip() + "\n\n"
        "| ThreadPoolExecutor (us) | two SimpleQueues (us) | ratio (range) |\n|---|---|---|\n"
        f"| {med('thread_pool_us'):.1f} | {med('simple_queues_us'):.1f} | {med('ratio'):.2f}x "
        f"({min(x['ratio'] for x in rows):.2f}x-{max(x['ratio'] for x in rows):.2f}x) |\n"
    )
    (OUT / "handoff.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
