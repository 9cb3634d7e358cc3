"""What a call costs in CPU right after its process waited, against the same call back to back.

    .venv/bin/python experiments/bench/probe_wait_cost.py [--wait-ms 5] [--calls 300] [--rounds 2]

A latency-bound env (a remote simulator) leaves its actor asleep between steps; this probe asks
how much more CPU the actor's per-step work costs when it comes after such a wait. One process,
no Ray, no hrl: per kind of work, the thread CPU time (time.thread_time) of `--calls` calls made
back to back and of as many calls each after a `--wait-ms` sleep, in `--rounds` interleaved
rounds. Three kinds of work: gymnasium CartPole's step, a jitted 4-64-64-2 MLP's greedy action
(one XLA CPU dispatch), and a pure-Python loop (a small, hot code path). Writes
experiments/results/distributed/wait_cost.csv and prints it.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "distributed" / "wait_cost.csv"


def works():
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    weights = [jnp.full((4, 64), 0.01), jnp.full((64, 64), 0.01), jnp.full((64, 2), 0.01)]
    act = jax.jit(lambda w, x: jnp.argmax(jnp.tanh(jnp.tanh(x @ w[0]) @ w[1]) @ w[2]))
    obs = np.zeros(4, np.float32)
    act(weights, obs).block_until_ready()

    def env_step():
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()

    def infer():
        int(act(weights, obs))

    def python_loop():
        s = 0
        for i in range(2000):
            s += i * i
        return s

    return {"gymnasium CartPole step": env_step, "jitted MLP action": infer,
            "pure-Python loop": python_loop}


def cpu_us_per_call(work, calls: int, wait_s: float) -> float:
    """Thread CPU microseconds per `work()` call, each after a `wait_s` sleep (0: none)."""
    total = 0.0
    for _ in range(calls):
        if wait_s:
            time.sleep(wait_s)
        start = time.thread_time()
        work()
        total += time.thread_time() - start
    return 1e6 * total / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait-ms", type=float, default=5.0)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    kinds = works()
    measured: dict[tuple[str, bool], list[float]] = {}
    for _ in range(args.rounds):
        for name, work in kinds.items():
            for waited in (False, True):
                us = cpu_us_per_call(work, args.calls, args.wait_ms / 1e3 if waited else 0.0)
                measured.setdefault((name, waited), []).append(us)
    rows = []
    for name in kinds:
        back, after = (float(np.median(measured[name, w])) for w in (False, True))
        rows.append({"work": name, "wait_ms": args.wait_ms, "calls": args.calls,
                     "rounds": args.rounds, "cpu_us_back_to_back": round(back, 1),
                     "cpu_us_after_wait": round(after, 1), "ratio": round(after / back, 2)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for r in rows:
        print(f"{r['work']:<26} {r['cpu_us_back_to_back']:>8.1f} us back to back, "
              f"{r['cpu_us_after_wait']:>8.1f} us after a {args.wait_ms:g} ms wait "
              f"({r['ratio']}x)")


if __name__ == "__main__":
    main()
