"""Pipelined vs sequential executor: env steps/s, speed-up, and the ideal overlap bound.

    .venv/bin/python experiments/bench/bench_executors.py [--envs 8 16] [--depths 1 2 4]
        [--rounds 3]
        [--actors thread process]

DQN + PER on gymnasium CartPole-v1 (host numpy envs, JAX learner on this CPU), M envs, one
SGD step (batch 32, 64x64) per 4 env steps. Per M and round, interleaved so that the machine's
drift hits all alike: the sequential host loop, then the pipelined executor at each depth
(actors at most `depth` iterations ahead of the learner, weights every iteration), with the
actors in a thread of the learner's process and in a process of their own. Each point
compiles (and starts its actors' process) and warms up for 10 iterations, then times `--iters`
iterations.

The ideal overlap bound of a setting is T_sequential / max(T_actors, T_learner), with T_actors
the sequential run's time in infer + env and T_learner its time in insert + sample + train +
update (the glue between them is left out, so the bound is optimistic and the ratio to it
conservative). Writes experiments/results/executors/executors.{csv,md,png}.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

import jax

from hrl.config import load_config
from hrl.mapping.profile import cpu_name
from hrl.runtime import build, initial_state

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "executors"
BASE = ["agent.hidden_sizes=[64,64]", "train.batch_size=32", "replay.capacity=50000",
        "train.learning_starts=64", "train.train_ratio=0.25", "train.total_env_steps=10000000",
        "log.progress=false"]


def measure(num_envs: int, executor: list[str], iters: int) -> dict:
    cfg = load_config(ROOT / "configs" / "dqn_cartpole_gymnasium.yaml",
                      BASE + [f"env.num_envs={num_envs}"] + executor)
    built = build(cfg)
    state, _ = built.loop.run(initial_state(built), 10)  # compile, fill past learning_starts
    jax.block_until_ready(state)
    built.loop.calls.timings.update(dict.fromkeys(built.loop.timings, 0.0))
    start = time.perf_counter()
    state, _ = built.loop.run(state, iters)
    jax.block_until_ready(state)
    wall = time.perf_counter() - start
    if hasattr(built.loop, "close"):
        built.loop.close()
    t = built.loop.timings
    return {"wall_s": wall, "env_steps_per_s": iters * cfg.env_steps_per_iter / wall,
            "actors_s": t["infer"] + t["env"],
            "learner_s": t["sample"] + t["train"] + t["update"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", nargs="+", type=int, default=[8, 16])
    p.add_argument("--depths", nargs="+", type=int, default=[1, 2, 4])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=150)
    p.add_argument("--actors", nargs="+", default=["thread", "process"],
                   choices=["thread", "process"])
    args = p.parse_args()
    from rich.progress import Progress

    settings = [("sequential", ["train.executor=sequential"])] + [
        (f"pipelined {a} d={d}", ["train.executor=pipelined", f"train.pipeline_depth={d}",
                                  f"train.actors={a}"])
        for a in args.actors for d in args.depths]
    rows = []
    with Progress() as progress:
        task = progress.add_task("executors", total=args.rounds * len(args.envs) * len(settings))
        for r in range(args.rounds):
            for m in args.envs:
                for name, overrides in settings:
                    progress.update(task, description=f"round {r + 1} M={m} {name}")
                    rows.append({"round": r + 1, "num_envs": m, "executor": name,
                                 **measure(m, overrides, args.iters)})
                    progress.advance(task)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "executors.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    def per_round(m, name, key):
        return [row[key] for row in rows if row["num_envs"] == m and row["executor"] == name]

    lines = [
        "# Pipelined vs sequential executor (gymnasium CartPole, DQN + PER)", "",
        f"{cpu_name()}, {os.cpu_count()} cores, jax {jax.__version__}, load average "
        f"{os.getloadavg()[0]:.1f} at the end. Regenerate: "
        "`python experiments/bench/bench_executors.py"
        f" {' '.join(sys.argv[1:])}`.".rstrip(),
        "Speed-up: median over rounds of (sequential wall / this wall), each ratio within one "
        "round. Bound: sequential wall / max(actors, learner) of the same round's sequential run.",
        "", "| M | executor | env steps/s (median) | speed-up vs sequential | ideal bound | "
        "speed-up / bound |", "|---|---|---|---|---|---|",
    ]
    summary = {}
    for m in args.envs:
        seq_wall = per_round(m, "sequential", "wall_s")
        bound = statistics.median(
            w / max(a, lr) for w, a, lr in zip(seq_wall, per_round(m, "sequential", "actors_s"),
                                                per_round(m, "sequential", "learner_s"),
                                                strict=True))
        for name, _ in settings:
            speed = statistics.median(s / w for s, w in zip(seq_wall,
                                                            per_round(m, name, "wall_s"),
                                                            strict=True))
            rate = statistics.median(per_round(m, name, "env_steps_per_s"))
            summary[(m, name)] = speed
            lines.append(f"| {m} | {name} | {rate:,.0f} | {speed:.2f}x | {bound:.2f}x | "
                         f"{speed / bound:.2f} |")
    (OUT / "executors.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    names = [name for name, _ in settings]
    width = 0.8 / len(args.envs)
    for i, m in enumerate(args.envs):
        ax.bar([j + i * width for j in range(len(names))], [summary[(m, n)] for n in names],
               width, label=f"M={m}")
    ax.set_xticks([j + width * (len(args.envs) - 1) / 2 for j in range(len(names))], names,
                  rotation=30, ha="right")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_ylabel("speed-up over sequential")
    ax.set_title("Pipelined executor, gymnasium CartPole (measured)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "executors.png")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
