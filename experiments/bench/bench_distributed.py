"""The distributed-actors executor (Ape-X on Ray): actor throughput against N, the learner's SGD
rate while actors stream in, and learning with 4 actors.

    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py throughput
        [--actors 1 2 4 8 16] [--envs latency cpu]
    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py learning [--seeds 0 1 2]

throughput: DQN + PER with N Ray actor workers in the free schedule (each worker one request
in flight, as fast as it goes), each stepping one env for 32 steps a request, the learner
training at train_ratio 0.25 (batch 32). Two host envs: `latency`, CartPole whose step first
waits 5 ms (`latency_env.py`: a remote simulator; the step holds no core) and `cpu`, gymnasium's
CartPole (the step computes). Per N the run starts its workers, warms up for 2N iterations,
then times max(48, 8N) iterations: env steps/s, the speed-up over N = 1, and the learner's
seconds per SGD step (its sample + train + update calls, per update) as a measure of the
learner's SGD rate while the actors stream in. Writes
experiments/results/distributed/throughput.{csv,png}.

learning: DQN CartPole (experiments/configs/dqn_cartpole_gymnasium.yaml) with 4 actor workers
of 4 envs each in the fixed schedule (pipeline depth 3: each worker one request in flight), per
seed: env steps until the mean of the last 10 episodes (log.return_window) reaches 475. Writes
experiments/results/distributed/learning.{csv,png}.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import jax

from hrl.config import load_config
from hrl.runtime import build, initial_state, train

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "distributed"
CONFIG = ROOT / "configs" / "dqn_cartpole_gymnasium.yaml"
ENVS = {"latency": "gymnasium:experiments.bench.latency_env:SlowCartPole-v0",
        "cpu": "gymnasium:CartPole-v1"}
BASE = ["env.num_envs=1", "train.rollout_length=32", "train.executor=distributed",
        "train.actor_schedule=free", "train.learning_starts=64", "train.batch_size=32",
        "train.train_ratio=0.25", "train.weight_sync_period=4", "agent.hidden_sizes=[64,64]",
        "train.total_env_steps=100000000", "log.progress=false"]


def measure(env: str, actors: int) -> dict:
    cfg = load_config(CONFIG, BASE + [f"env.name={ENVS[env]}", f"train.num_actors={actors}"])
    built = build(cfg)
    loop = built.loop
    try:
        state, _ = loop.run(initial_state(built), 2 * actors)  # workers up, compiled, warm
        jax.block_until_ready(state)
        loop.calls.timings.update(dict.fromkeys(loop.calls.timings, 0.0))
        updates = int(state.updates)
        iters = max(48, 8 * actors)
        start = time.perf_counter()
        state, _ = loop.run(state, iters)
        jax.block_until_ready(state)
        wall = time.perf_counter() - start
    finally:
        loop.close()
    t, done = loop.calls.timings, int(state.updates) - updates
    return {"env": env, "actors": actors,
            "env_steps_per_s": round(iters * cfg.env_steps_per_iter / wall, 1),
            "updates_per_s": round(done / wall, 1),
            "sgd_ms_per_update": round(1e3 * (t["sample"] + t["train"] + t["update"])
                                       / max(done, 1), 3),
            "wall_s": round(wall, 2), "restarts": loop.restarts}


def throughput(args) -> None:
    """Measures the envs asked for; the CSV keeps the rows of the others (one env per call
    keeps each call short)."""
    path = OUT / "throughput.csv"
    rows = []
    if path.exists():
        with path.open() as f:
            rows = [{k: (v if k == "env" else float(v)) for k, v in r.items()
                     if k in ("env", "actors", "env_steps_per_s", "updates_per_s",
                              "sgd_ms_per_update", "wall_s", "restarts")}
                    for r in csv.DictReader(f) if r["env"] not in args.envs]
        for r in rows:
            r["actors"], r["restarts"] = int(r["actors"]), int(r["restarts"])
    for env in args.envs:
        for n in args.actors:
            row = measure(env, n)
            print(row, flush=True)
            rows.append(row)
    cores = os.cpu_count()
    for row in rows:
        one = next(r for r in rows if r["env"] == row["env"] and r["actors"] == 1)
        row["speedup"] = round(row["env_steps_per_s"] / one["env_steps_per_s"], 3)
        row["ideal"] = row["actors"] if row["env"] == "latency" else min(row["actors"], cores)
        row["sgd_vs_one_actor"] = round(one["sgd_ms_per_update"] / row["sgd_ms_per_update"], 3)
        row["cores"] = cores
    write(path, rows)
    plot_throughput(rows, OUT / "throughput.png")


def learning(args) -> None:
    rows = []
    for seed in args.seeds:
        cfg = load_config(CONFIG, ["train.executor=distributed", "train.num_actors=4",
                                   "train.pipeline_depth=3", f"seed={seed}",
                                   "log.progress=false"])
        run_dir = Path("runs") / f"bench-distributed-seed{seed}-{int(time.time())}"
        s = train(cfg, run_dir, checkpoint_every=0)
        row = {"seed": seed, "actors": 4, "env_steps": s["env_steps"],
               "steps_to_475": s["per_seed"][0]["steps_to_solved"],
               "final_return": s["recent_return"], "wall_s": s["wall_s_this_session"]}
        print(row, flush=True)
        rows.append(row)
    write(OUT / "learning.csv", rows)
    plot_learning(rows, OUT / "learning.png")


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot_throughput(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    for env in dict.fromkeys(r["env"] for r in rows):
        mine = [r for r in rows if r["env"] == env]
        n = [r["actors"] for r in mine]
        ax.plot(n, [r["speedup"] for r in mine], "o-", label=f"{env} env")
        ax.plot(n, [r["ideal"] for r in mine], ":", color=ax.lines[-1].get_color(),
                label=f"{env}: ideal ({'N' if env == 'latency' else 'min(N, cores)'})")
        bx.plot(n, [r["sgd_ms_per_update"] for r in mine], "o-", label=f"{env} env")
    n_all = sorted({r["actors"] for r in rows})
    ax.plot(n_all, [0.8 * n for n in n_all], "--", color="grey", label="0.8 N")
    ax.set(xscale="log", yscale="log", xlabel="actor workers N",
           ylabel="env steps/s against N = 1", title="actor throughput")
    bx.set(xscale="log", xlabel="actor workers N", ylabel="learner ms per SGD step",
           title="learner's SGD step while actors stream in")
    for a in (ax, bx):
        a.set_xticks(n_all, [str(n) for n in n_all])
        a.legend(fontsize=7)
    fig.suptitle(f"distributed actors on Ray, {rows[0]['cores']} cores", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_learning(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    steps = [r["steps_to_475"] or r["env_steps"] for r in rows]
    ax.bar([str(r["seed"]) for r in rows], steps,
           color=["tab:blue" if r["steps_to_475"] else "tab:red" for r in rows])
    ax.set(xlabel="seed", ylabel="env steps to a mean return of 475",
           title="DQN CartPole, 4 actor workers (red: not reached)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    t.add_argument("--envs", nargs="+", default=["latency", "cpu"], choices=list(ENVS))
    lr = sub.add_parser("learning")
    lr.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    throughput(args) if args.part == "throughput" else learning(args)


if __name__ == "__main__":
    main()
