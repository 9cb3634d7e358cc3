"""What one jitted call from Python costs on XLA:CPU, apart from its arithmetic: the figures
behind the host loop's packed SGD step, donated replay and synchronous dispatch.

    .venv/bin/python experiments/bench/bench_call_overhead.py [--reps 300]

Each figure is the best of 5 batches of `--reps` waited calls (after warm-up), in
a fresh process per dispatch mode (XLA:CPU fixes the mode when its backend starts):
* an identity and an add-one on N float32[64] arrays (N = 1, 4, 22: one array, a few, the DQN
  agent's 16 leaves plus a batch), and a sum of N arrays to one: the cost per array returned;
* the replay's priority update (capacity 50k, batch 32) with and without the state donated;
* `jax.device_put` of the replay state's arrays onto the device they are already on.
Writes experiments/results/call_overhead/call_overhead.{csv,md}.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "call_overhead"


def measure(reps: int) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from hrl.replay.buffer import make_prioritized_replay

    def best_us(fn) -> float:
        jax.block_until_ready(fn())
        jax.block_until_ready(fn())
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(reps):
                jax.block_until_ready(fn())
            best = min(best, (time.perf_counter() - start) / reps * 1e6)
        return best

    rows = []
    for n in (1, 4, 22):
        xs = [jnp.ones((64,), jnp.float32) for _ in range(n)]
        for name, fn in (("identity", jax.jit(lambda *a: a)),
                         ("add one", jax.jit(lambda *a: [x + 1 for x in a])),
                         ("sum to one", jax.jit(lambda *a: sum(a)))):
            rows.append({"call": f"{name}, {n} x float32[64] in",
                         "us": best_us(lambda fn=fn, xs=xs: fn(*xs))})

    rb = make_prioritized_replay(50_000, alpha=0.6)
    example = {"obs": jnp.zeros((4,)), "action": jnp.int32(0), "reward": jnp.float32(0),
               "next_obs": jnp.zeros((4,)), "discount": jnp.float32(1)}
    state = rb.init(example)
    items = jax.tree.map(lambda x: jnp.zeros((50_000, *x.shape), x.dtype), example)
    state = jax.jit(rb.add)(state, items)
    rng = np.random.default_rng(0)
    idx = jnp.asarray(rng.integers(0, 50_000, 32).astype(np.int32))
    td = jnp.asarray(rng.uniform(0, 2, 32).astype(np.float32))
    update = jax.jit(rb.update)
    rows.append({"call": "replay update, B=32, N=50k, state not donated",
                 "us": best_us(lambda: update(state, idx, td))})
    donated = jax.jit(rb.update, donate_argnums=0)
    owned = [jax.tree.map(jnp.copy, state)]

    def donated_call():
        owned[0] = donated(owned[0], idx, td)
        return owned[0]

    rows.append({"call": "replay update, B=32, N=50k, state donated", "us": best_us(donated_call)})
    leaves = jax.tree.leaves(state)
    device = jax.devices()[0]
    rows.append({"call": f"device_put of the replay state's {len(leaves)} arrays, already there",
                 "us": best_us(lambda: jax.device_put(leaves, device))})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--child", choices=["async", "sync"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        import jax

        jax.config.update("jax_cpu_enable_async_dispatch", args.child == "async")
        print(json.dumps(measure(args.reps)))
        return 0
    from hrl.mapping.profile import cpu_name
    from hrl.runtime.cpu_backend import run_json_child

    results = {mode: run_json_child([__file__, "--reps", str(args.reps), "--child", mode],
                                    f"the {mode} child", 1800)
               for mode in ("async", "sync")}
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "call_overhead.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["call", "async_us", "sync_us"])
        for a, s in zip(results["async"], results["sync"], strict=True):
            w.writerow([a["call"], f"{a['us']:.1f}", f"{s['us']:.1f}"])
    lines = ["# What a jitted call costs from Python on XLA:CPU", "",
             f"{cpu_name()}, {os.cpu_count()} cores, load "
             f"average {os.getloadavg()[0]:.1f} at the end. Regenerate: `.venv/bin/python "
             f"experiments/bench/bench_call_overhead.py --reps {args.reps}`. Best of 5 batches of "
             f"{args.reps} waited calls, us per call.", "",
             "| call | async dispatch | sync dispatch |", "| --- | ---: | ---: |"]
    for a, s in zip(results["async"], results["sync"], strict=True):
        lines.append(f"| {a['call']} | {a['us']:.1f} | {s['us']:.1f} |")
    (OUT / "call_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
