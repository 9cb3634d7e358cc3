"""Where the distributed executor's CPU goes per env step: in each Ray worker's main thread
(the thread that acts; Ray's own threads are not counted) and in the learner's process.

    python experiments/bench/profile_distributed_worker.py [--envs latency cpu]
        [--actors 1 4 16] [--iters 48]

The `throughput` benchmark's setting (bench_distributed.py: free schedule, one env and 32 steps
a request, DQN learner at train_ratio 0.25). Per env and N: start the workers, warm up for 2N
iterations, then wrap each worker's calls in thread-CPU counters (`time.thread_time`; the few
microseconds a counter adds per call count in the call's part) and run `--iters` iterations.
Per env step, summed over the workers: `infer` (the inference calls), `env` (the host env's
steps), `window` (the n-step window call, once per iteration), `act_rest` (the rest of the
actors' program: the Python between those calls, stacking the steps), `outside_act` (the
worker's main thread outside the program: the iteration's keys, the env's saved state, Ray's
task handling and pickling), and `learner` (the learner's whole process). Their sum bounds the
env steps per second this machine's cores carry.
Writes experiments/results/distributed/worker_cpu.csv.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import ray

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_distributed import BASE, CONFIG, ENVS, OUT, write  # noqa: E402

from hrl.config import load_config  # noqa: E402
from hrl.runtime import build, initial_state  # noqa: E402

PARTS = ("infer", "env", "window", "act_rest", "outside_act")


def _count(worker) -> None:
    """In the worker: wrap its calls in thread-CPU counters (once), zero them, start."""
    calls = worker.calls
    if not hasattr(worker, "_cpu"):
        worker._cpu = {}

        def counted(name, fn):
            def call(*args, **kwargs):
                start = time.thread_time()
                try:
                    return fn(*args, **kwargs)
                finally:
                    worker._cpu[name] += time.thread_time() - start
            return call

        timed = calls.timed

        def timed_counted(name, *args, **kwargs):  # infer's and the env's calls
            return counted(name, timed)(name, *args, **kwargs)

        calls.timed = timed_counted
        calls._windows = counted("window", calls._windows)
        calls.act = counted("act", calls.act)
    worker._cpu.update(dict.fromkeys(("infer", "env", "window", "act"), 0.0))
    worker._cpu["start"] = time.thread_time()


def _read(worker) -> dict:
    """In the worker: the counters since `_count`, with the main thread's total."""
    cpu = dict(worker._cpu)
    cpu["thread"] = time.thread_time() - cpu.pop("start")
    return cpu


def measure(env: str, actors: int, iters: int) -> dict:
    cfg = load_config(CONFIG, BASE + [f"env.name={ENVS[env]}", f"train.num_actors={actors}"])
    built = build(cfg)
    loop = built.loop
    try:
        state, _ = loop.run(initial_state(built), 2 * actors)
        jax.block_until_ready(state)
        workers = loop._workers
        ray.get([w.__ray_call__.remote(_count) for w in workers])
        learner = time.process_time()
        start = time.perf_counter()
        state, _ = loop.run(state, iters)
        jax.block_until_ready(state)
        wall = time.perf_counter() - start
        learner = time.process_time() - learner
        counted = ray.get([w.__ray_call__.remote(_read) for w in workers])
    finally:
        loop.close()
    steps = iters * cfg.env_steps_per_iter
    total = {k: sum(c[k] for c in counted) for k in counted[0]}
    parts = {"infer": total["infer"], "env": total["env"], "window": total["window"],
             "act_rest": total["act"] - total["infer"] - total["env"] - total["window"],
             "outside_act": total["thread"] - total["act"]}
    row = {"env": env, "actors": actors, "env_steps_per_s": round(steps / wall, 1)}
    row.update({f"{k}_ms_per_step": round(1e3 * v / steps, 4) for k, v in parts.items()})
    row["worker_ms_per_step"] = round(1e3 * total["thread"] / steps, 4)
    row["learner_ms_per_step"] = round(1e3 * learner / steps, 4)
    row["load_1min"] = round(os.getloadavg()[0], 1)
    row["cores"] = os.cpu_count()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["latency", "cpu"], choices=list(ENVS))
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--iters", type=int, default=48)
    args = parser.parse_args()
    rows = []
    for env in args.envs:
        for n in args.actors:
            row = measure(env, n, max(args.iters, 4 * n))
            print(row, flush=True)
            rows.append(row)
    write(OUT / "worker_cpu.csv", rows)


if __name__ == "__main__":
    main()
