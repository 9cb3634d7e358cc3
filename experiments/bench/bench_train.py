"""Training throughput of DQN + PER on CartPole-v1: env steps/s and SGD updates/s vs actors M.

    .venv/bin/python experiments/bench/bench_train.py [--envs 1 8 64 1024] [--seconds 10]
    .venv/bin/python experiments/bench/bench_train.py \
        --config experiments/configs/ddpg_pendulum.yaml

For every M the fused loop (`hrl.runtime.FusedLoop`, one jitted lax.scan per chunk) is compiled,
run past `learning_starts` (untimed), then timed over whole chunks for at least `--seconds`.
Two settings per M, both with the 64x64 MLP and a 50k prioritized replay (K=16, alpha 0.6):

* `sgd_per_step`: one SGD step of batch 32 per env step (train ratio 1);
* `sgd_per_iter`: one SGD step of batch 256 per vector step of all M envs (train ratio 1/M,
  the setting of the 64-env flashbax reference).

With `--config`, that config's env, agent, replay and batch are used instead (DDPG on brax,
say), with `num_envs` = M; `sgd_per_step` keeps the config's train ratio, `sgd_per_iter` makes it
1/M. JAX runs on its default device (a GPU where there is one); the replay's kernels are the
config's `replay.impl` ("auto": native C++ on a CPU, Pallas on a GPU).

Writes experiments/results/train/bench_train[_<config>][_<device>].{csv,md,png} (no device
suffix on a CPU) with the full config of each row.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

from hrl.config import config_from_dict, to_dict
from hrl.mapping.profile import cpu_name
from hrl.runtime import build, initial_state

OUT = Path(__file__).resolve().parents[1] / "results" / "train"


def config_file_variant(path: Path, num_envs: int, setting: str, min_chunk_iters: int) -> dict:
    from hrl.config import load_config

    cfg = to_dict(load_config(path))
    cfg["env"]["num_envs"] = num_envs
    cfg["train"]["total_env_steps"] = 10**9
    cfg["train"]["learning_starts"] = max(1000, cfg["train"]["batch_size"])
    if setting == "sgd_per_iter":
        cfg["train"]["train_ratio"] = 1.0 / num_envs
    per_iter = num_envs * cfg["train"]["rollout_length"]
    cfg["train"]["chunk_env_steps"] = max(min_chunk_iters, 4096 // num_envs) * per_iter
    cfg["log"] = {"progress": False}
    cfg["seeds"] = 1
    return cfg


def bench_config(num_envs: int, setting: str, min_chunk_iters: int = 8) -> dict:
    if setting == "sgd_per_step":
        batch, ratio = 32, 1.0
    else:
        batch, ratio = 256, 1.0 / num_envs
    rollout = 1
    chunk_iters = max(min_chunk_iters, 4096 // num_envs)
    return {
        "algo": "dqn",
        "seed": 0,
        "name": f"bench_m{num_envs}_{setting}",
        "env": {"name": "gymnax:CartPole-v1", "num_envs": num_envs},
        "agent": {"hidden_sizes": [64, 64], "learning_rate": 1e-3, "target_update_period": 100,
                  "tau": 1.0, "eps_decay_steps": 10000},
        "replay": {"capacity": 50_000, "alpha": 0.6, "fanout": 16, "n_step": 1},
        "train": {
            "total_env_steps": 10**9,
            "batch_size": batch,
            "train_ratio": ratio,
            "rollout_length": rollout,
            "learning_starts": max(1000, batch),
            "chunk_env_steps": chunk_iters * num_envs * rollout,
        },
        "log": {"progress": False},
    }


def measure(cfg_dict: dict, setting: str, seconds: float) -> dict:
    cfg = config_from_dict(cfg_dict)
    num_envs = cfg.env.num_envs
    built = build(cfg)
    loop = built.loop
    chunk = max(1, cfg.train.chunk_env_steps // cfg.env_steps_per_iter)
    t0 = time.perf_counter()
    state = initial_state(built)
    state, _ = loop.run(state, chunk)  # compile + first chunk
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    while int(built.replay.size(state.replay)) < cfg.train.learning_starts:  # fill past it
        state, _ = loop.run(state, chunk)
    jax.block_until_ready(state)
    steps0, updates0 = int(state.env_steps), int(state.updates)
    start = time.perf_counter()
    chunks = 0
    while True:
        state, _ = loop.run(state, chunk)
        jax.block_until_ready(state)
        chunks += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and chunks >= 2:
            break
    env_steps = int(state.env_steps) - steps0
    updates = int(state.updates) - updates0
    return {
        "num_envs": num_envs,
        "setting": setting,
        "batch_size": cfg.train.batch_size,
        "train_ratio": cfg.train.train_ratio,
        "env_steps_per_s": env_steps / elapsed,
        "sgd_updates_per_s": updates / elapsed,
        "timed_env_steps": env_steps,
        "timed_updates": updates,
        "timed_s": elapsed,
        "first_chunk_incl_compile_s": compile_s,
        # Other processes share this machine; the 1-minute load average tells how much.
        "load_avg_1min": os.getloadavg()[0],
        # XLA:CPU's intra-op threads this point ran with (train.cpu_threads resolved).
        "cpu_threads": xla_pool_threads(),
        "config": json.dumps(to_dict(cfg), sort_keys=True),
    }


def xla_pool_threads() -> int | None:
    """XLA:CPU's intra-op threads in this process, counted by name (Linux; None elsewhere).
    Read from the process rather than from hrl's config, so that `measure` also runs on the
    older checkouts `compare_fused_speed.py` measures."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return None
    return sum((t / "comm").read_text().startswith("tf_XLAEigen") for t in tasks.iterdir())


def measure_in_fresh_process(cfg_dict: dict, setting: str, seconds: float) -> dict:
    """`measure` in a fresh Python, so that the point's build starts JAX's CPU backend as
    `hrl train` would for it (train.cpu_dispatch and train.cpu_threads: auto, fixed per
    process and resolved per config: one intra-op thread at M=1, XLA's default at M=1024 on a
    2-core machine)."""
    from hrl.runtime.cpu_backend import run_json_child

    return run_json_child([__file__, "--point", json.dumps([cfg_dict, setting, seconds])],
                          f"point M={cfg_dict['env']['num_envs']} {setting}", 3600)


def write_outputs(rows: list[dict], stem: str, title: str, command: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / f"{stem}.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    machine = (f"{cpu_name()}, {os.cpu_count()} cores, "
               f"jax {jax.__version__} on {jax.devices()[0].platform}")
    lines = [
        f"# {title} training throughput (fused loop)",
        "",
        f"Machine: {machine}. Command: `{command}`.",
        "Network, replay and batch: see the `config` column of the CSV; timed after "
        "learning_starts.",
        f"1-minute load average during the points: {min(r['load_avg_1min'] for r in rows):.1f}"
        f" to {max(r['load_avg_1min'] for r in rows):.1f} (other jobs on the machine lower the"
        " figures).",
        f"Full configs in {stem}.csv (column `config`).",
        "",
        "| M envs | setting | batch | SGD steps / env step | env steps/s | SGD updates/s |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['num_envs']} | {r['setting']} | {r['batch_size']} | {r['train_ratio']:.4g} | "
            f"{r['env_steps_per_s']:,.0f} | {r['sgd_updates_per_s']:,.0f} |"
        )
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
    for setting, marker in (("sgd_per_step", "o"), ("sgd_per_iter", "s")):
        sub = [r for r in rows if r["setting"] == setting]
        if not sub:
            continue
        m = [r["num_envs"] for r in sub]
        ax[0].loglog(m, [r["env_steps_per_s"] for r in sub], marker=marker, label=setting)
        ax[1].loglog(m, [r["sgd_updates_per_s"] for r in sub], marker=marker, label=setting)
    for a, title in zip(ax, ("env steps/s", "SGD updates/s"), strict=True):
        a.set_xlabel("parallel actors M")
        a.set_title(title)
        a.grid(alpha=0.3, which="both")
        a.legend()
    fig.suptitle(f"{title}, fused JAX loop on {jax.devices()[0].platform} (measured)")
    fig.tight_layout()
    fig.savefig(OUT / f"{stem}.png")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8, 64, 1024])
    parser.add_argument("--settings", nargs="+", default=["sgd_per_step", "sgd_per_iter"],
                        choices=["sgd_per_step", "sgd_per_iter"])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per point")
    parser.add_argument("--config", type=Path, help="a run config instead of DQN CartPole")
    parser.add_argument("--min-chunk-iters", type=int, default=8,
                        help="iterations per jitted chunk at least (larger on a GPU, where a "
                        "chunk of a few iterations is dominated by the host round trip)")
    parser.add_argument("--max-sgd-per-iter", type=float, default=None,
                        help="skip points with more SGD steps per iteration than this (they "
                        "measure only the SGD rate, at great length)")
    args = parser.parse_args()
    stem, title = "bench_train", "DQN + PER on CartPole-v1"
    if args.config:
        stem, title = f"bench_train_{args.config.stem}", args.config.stem

    def variant(m, setting):
        if args.config:
            return config_file_variant(args.config, m, setting, args.min_chunk_iters)
        return bench_config(m, setting, args.min_chunk_iters)

    # The points run in processes of their own (below); this one only names the backend.
    if jax.default_backend() != "cpu":
        stem += f"_{jax.default_backend()}"

    from rich.progress import Progress

    rows = []
    points = [(m, s) for m in args.envs for s in args.settings]
    if args.max_sgd_per_iter is not None:
        def sgd_per_iter(m, s):
            t = variant(m, s)["train"]
            return t["train_ratio"] * m * t["rollout_length"]

        skipped = [p for p in points if sgd_per_iter(*p) > args.max_sgd_per_iter]
        points = [p for p in points if p not in skipped]
        for m, s in skipped:
            print(f"skip M={m} {s}: more than {args.max_sgd_per_iter:g} SGD steps per iteration")
    with Progress() as progress:
        task = progress.add_task("bench_train", total=len(points))
        for m, setting in points:
            progress.update(task, description=f"M={m} {setting}")
            row = measure_in_fresh_process(variant(m, setting), setting, args.seconds)
            rows.append(row)
            progress.console.print(
                f"M={m:5d} {setting:13s} env steps/s {row['env_steps_per_s']:12,.0f}   "
                f"SGD updates/s {row['sgd_updates_per_s']:9,.0f}"
            )
            progress.advance(task)
    command = " ".join(["python experiments/bench/bench_train.py", *sys.argv[1:]])
    write_outputs(rows, stem, title, command)
    print(f"wrote {OUT / stem}.csv, .md and .png")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    if len(sys.argv) == 3 and sys.argv[1] == "--point":  # a child of measure_in_fresh_process
        print(json.dumps(measure(*json.loads(sys.argv[2]))))
    else:
        main()
