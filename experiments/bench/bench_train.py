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

`--workloads` names what the table holds (default: CartPole and MinAtar Breakout, one table):
`cartpole` is the above; a MinAtar game (`breakout`, `space_invaders`, `asterix`) is
experiments/configs/dqn_minatar_breakout.yaml on that game (MinAtar's conv net, batch 32, 100k
PER), at `--minatar-envs` M and rollout 8 (the side-by-side's iteration,
experiments/peers/minatar_throughput.py): `sgd_per_step` keeps the config's 0.25 SGD steps per
env step, `sgd_per_iter` is one SGD step per iteration. `--merge` keeps the rows of the
workloads not run from the existing table (each row names its command), so one workload is
re-measured without re-running the others.

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


MINATAR_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dqn_minatar_breakout.yaml"
MINATAR_GAMES = {"breakout": "Breakout-MinAtar", "space_invaders": "SpaceInvaders-MinAtar",
                 "asterix": "Asterix-MinAtar"}
WORKLOADS = ("cartpole", *MINATAR_GAMES)
MINATAR_ROLLOUT = 8  # the side-by-side's iteration (minatar_throughput.py --rollout 8)


def minatar_variant(game: str, num_envs: int, setting: str, min_chunk_iters: int) -> dict:
    """The MinAtar config on `game` at M = `num_envs`, rollout 8, chunks of about 4096 env
    steps (at least `min_chunk_iters` iterations)."""
    from hrl.config import load_config

    cfg = to_dict(load_config(MINATAR_CONFIG))
    cfg["name"] = f"bench_minatar_{game}_m{num_envs}_{setting}"
    cfg["env"].update(name=f"gymnax:{MINATAR_GAMES[game]}", num_envs=num_envs)
    per_iter = num_envs * MINATAR_ROLLOUT
    cfg["train"].update(total_env_steps=10**9, rollout_length=MINATAR_ROLLOUT,
                        learning_starts=max(1000, cfg["train"]["batch_size"]),
                        chunk_env_steps=max(min_chunk_iters, 4096 // per_iter) * per_iter)
    if setting == "sgd_per_iter":
        cfg["train"]["train_ratio"] = 1.0 / per_iter
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


def machine_name() -> str:
    return (f"{cpu_name()}, {os.cpu_count()} cores, "
            f"jax {jax.__version__} on {jax.devices()[0].platform}")


def read_rows(path: Path) -> list[dict]:
    """The rows of an existing table's CSV, numbers parsed back (for --merge)."""
    if not path.exists():
        return []
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["num_envs"] = int(r["num_envs"])
        for key in ("batch_size", "timed_env_steps", "timed_updates"):
            r[key] = int(r[key])
        for key in ("train_ratio", "env_steps_per_s", "sgd_updates_per_s", "timed_s",
                    "first_chunk_incl_compile_s", "load_avg_1min"):
            r[key] = float(r[key])
    return rows


def write_outputs(rows: list[dict], stem: str, title: str) -> None:
    """`stem`.csv (every column, the full config of each row), .md (the table, each
    workload's command and machine) and .png (env and SGD rates against M, a line per
    workload and setting)."""
    OUT.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with (OUT / f"{stem}.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    lines = [f"# {title} training throughput (fused loop)", ""]
    for w in workloads:
        mine = [r for r in rows if r["workload"] == w]
        loads = [r["load_avg_1min"] for r in mine]
        lines.append(f"- `{w}`: `{mine[0]['command']}`; {mine[0]['machine']}; 1-minute load "
                     f"average during the points {min(loads):.1f} to {max(loads):.1f}.")
    lines += [
        "",
        "Timed after learning_starts. Network, replay and batch: the `config` column of "
        f"{stem}.csv. Other jobs on the machine lower the figures (the load average above).",
        "",
        "| workload | M envs | setting | batch | SGD steps / env step | env steps/s | "
        "SGD updates/s |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['num_envs']} | {r['setting']} | {r['batch_size']} | "
            f"{r['train_ratio']:.4g} | {r['env_steps_per_s']:,.0f} | "
            f"{r['sgd_updates_per_s']:,.0f} |"
        )
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    for w in workloads:
        for setting, marker in (("sgd_per_step", "o"), ("sgd_per_iter", "s")):
            sub = [r for r in rows if r["setting"] == setting and r["workload"] == w]
            if not sub:
                continue
            m = [r["num_envs"] for r in sub]
            label = f"{w}, {setting}"
            ax[0].loglog(m, [r["env_steps_per_s"] for r in sub], marker=marker, label=label)
            ax[1].loglog(m, [r["sgd_updates_per_s"] for r in sub], marker=marker, label=label)
    for a, name in zip(ax, ("env steps/s", "SGD updates/s"), strict=True):
        a.set_xlabel("parallel actors M")
        a.set_title(name)
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize=7)
    fig.suptitle(f"{title}, fused JAX loop (measured; machines in {stem}.md)")
    fig.tight_layout()
    fig.savefig(OUT / f"{stem}.png")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8, 64, 1024],
                        help="M of the CartPole (or --config) points")
    parser.add_argument("--minatar-envs", type=int, nargs="+", default=[1, 8, 64],
                        help="M of the MinAtar points")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS,
                        default=["cartpole", "breakout"], help="what the table holds")
    parser.add_argument("--merge", action="store_true",
                        help="keep the existing table's rows of the workloads not run")
    parser.add_argument("--settings", nargs="+", default=["sgd_per_step", "sgd_per_iter"],
                        choices=["sgd_per_step", "sgd_per_iter"])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per point")
    parser.add_argument("--config", type=Path, help="a run config instead of the workloads")
    parser.add_argument("--min-chunk-iters", type=int, default=8,
                        help="iterations per jitted chunk at least (larger on a GPU, where a "
                        "chunk of a few iterations is dominated by the host round trip)")
    parser.add_argument("--max-sgd-per-iter", type=float, default=None,
                        help="skip points with more SGD steps per iteration than this (they "
                        "measure only the SGD rate, at great length)")
    args = parser.parse_args()
    stem, title = "bench_train", "DQN + PER, CartPole-v1 and MinAtar"
    workloads = list(args.workloads)
    if args.config:
        stem, title, workloads = f"bench_train_{args.config.stem}", args.config.stem, ["config"]

    def variant(w, m, setting):
        if w == "config":
            return config_file_variant(args.config, m, setting, args.min_chunk_iters)
        if w == "cartpole":
            return bench_config(m, setting, args.min_chunk_iters)
        return minatar_variant(w, m, setting, args.min_chunk_iters)

    # The points run in processes of their own (below); this one only names the backend.
    if jax.default_backend() != "cpu":
        stem += f"_{jax.default_backend()}"

    from rich.progress import Progress

    points = [(w, m, s) for w in workloads
              for m in (args.minatar_envs if w in MINATAR_GAMES else args.envs)
              for s in args.settings]
    if args.max_sgd_per_iter is not None:
        def sgd_per_iter(w, m, s):
            t = variant(w, m, s)["train"]
            return t["train_ratio"] * m * t["rollout_length"]

        skipped = [p for p in points if sgd_per_iter(*p) > args.max_sgd_per_iter]
        points = [p for p in points if p not in skipped]
        for w, m, s in skipped:
            print(f"skip {w} M={m} {s}: more than {args.max_sgd_per_iter:g} SGD steps per "
                  "iteration")
    command = " ".join(["python experiments/bench/bench_train.py", *sys.argv[1:]])
    rows = []
    with Progress() as progress:
        task = progress.add_task("bench_train", total=len(points))
        for w, m, setting in points:
            progress.update(task, description=f"{w} M={m} {setting}")
            row = {"workload": w, **measure_in_fresh_process(variant(w, m, setting), setting,
                                                             args.seconds),
                   "command": command, "machine": machine_name()}
            rows.append(row)
            progress.console.print(
                f"{w:14s} M={m:5d} {setting:13s} env steps/s {row['env_steps_per_s']:12,.0f}"
                f"   SGD updates/s {row['sgd_updates_per_s']:9,.0f}"
            )
            progress.advance(task)
    if args.merge:
        kept = [r for r in read_rows(OUT / f"{stem}.csv") if r["workload"] not in workloads]
        order = {w: i for i, w in enumerate(WORKLOADS)}
        rows = sorted(kept + rows, key=lambda r: order.get(r["workload"], len(order)))
    write_outputs(rows, stem, title)
    print(f"wrote {OUT / stem}.csv, .md and .png")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    if len(sys.argv) == 3 and sys.argv[1] == "--point":  # a child of measure_in_fresh_process
        print(json.dumps(measure(*json.loads(sys.argv[2]))))
    else:
        main()
