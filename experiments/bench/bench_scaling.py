"""Data-parallel scaling: env steps/s and SGD updates/s at 1, 2, 4, 8 devices and 1, 2 processes.

    .venv/bin/python experiments/bench/bench_scaling.py [--devices 1 2 4 8] [--processes 1 2]
                                                  [--rounds 2] [--iters 64]

Weak scaling, DQN + PER on gymnax CartPole-v1, fused loop (`train.devices`): every device
steps 8 actors for 16 steps per iteration into its own replay shard (16 384 items) and takes
64 samples of each SGD step's global batch (global sampling); 8 SGD steps per iteration
whatever the device count (train_ratio = 8 / env steps per iteration), so one device's work
per iteration stays the same and a perfect machine would run D times the env steps and D
times the samples per second. 1 device is the plain fused loop; D devices are virtual CPU
devices (XLA_FLAGS=--xla_force_host_platform_device_count=D), in one process, or split over
2 processes joined by jax.distributed (gloo over loopback TCP). Every point runs in a fresh
process, compiles and fills the buffer past learning_starts in a first chunk, then times
`--iters` iterations three times (the median counts); the rounds interleave all points so
that the machine's drift hits all alike, and the median over rounds is reported. Beside the
wall-clock rates, the CPU time (all threads of all processes) per 1000 env steps: what the
collectives and the device split cost in work, which other tenants of the machine disturb far
less than they disturb wall time.

The virtual devices share this machine's cores (os.cpu_count()), so the ideal speed-up is
min(D, cores), not D; parallel efficiency is reported against both.

The mapping model (`hrl.mapping.scaling`) predicts each point from the 1-device measurement,
the cores the devices share, and the collectives' bytes over its link model; its curve is
plotted beside the measured one. Writes experiments/results/scaling/scaling.{csv,md,png}.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "scaling"
ENVS_PER_DEVICE, ROLLOUT, BATCH_PER_DEVICE, SGD_PER_ITER, SHARD = 8, 16, 64, 8, 16_384


def overrides(devices: int) -> list[str]:
    steps = devices * ENVS_PER_DEVICE * ROLLOUT
    return [
        f"train.devices={devices}", f"env.num_envs={devices * ENVS_PER_DEVICE}",
        f"train.rollout_length={ROLLOUT}", f"train.batch_size={devices * BATCH_PER_DEVICE}",
        f"train.train_ratio={SGD_PER_ITER / steps}", f"replay.capacity={devices * SHARD}",
        f"train.learning_starts={steps}", "train.total_env_steps=100000000",
        "replay.impl=xla", "log.progress=false",
    ]


def worker(devices: int, iters: int, out: str) -> None:
    """One point, in this process (one of several under jax.distributed when the HRL_*
    variables say so). Process 0 writes the result."""
    from hrl.runtime.processes import initialize_from_env

    initialize_from_env()
    import jax
    import numpy as np

    from hrl.compile_cache import enable_compile_cache
    from hrl.config import load_config
    from hrl.replay.rows import RowLayout
    from hrl.runtime import build, initial_state

    enable_compile_cache()  # a second round loads the programs the first one compiled
    cfg = load_config(ROOT / "configs" / "dqn_cartpole.yaml", overrides(devices))
    built = build(cfg)
    state, _ = built.loop.run(initial_state(built), 2 * max(1, cfg.train.learning_starts
                                                         // cfg.env_steps_per_iter))
    state, _ = built.loop.run(state, iters)  # the timed chunk length compiles here, untimed
    jax.block_until_ready(state)
    load = os.getloadavg()[0]
    calls, wall, cpu = 0, 0.0, 0.0
    while calls < 3 or wall < 2.0:  # at least 3 chunks and 2 s
        start, cpu_start = time.perf_counter(), time.process_time()
        state, chunk = built.loop.run(state, iters)
        jax.block_until_ready(state)
        wall += time.perf_counter() - start
        cpu += time.process_time() - cpu_start  # every thread of this process
        calls += 1
        assert bool(np.all(chunk.trained[-1:])), "the learner must run in every timed chunk"
    iters *= calls
    if jax.process_count() > 1:  # the CPU time of every process
        from jax.experimental import multihost_utils

        cpu = float(np.sum(multihost_utils.process_allgather(np.float32(cpu))))
    params = sum(np.asarray(x.addressable_data(0) if hasattr(x, "addressable_data") else x).nbytes
                 for x in jax.tree.leaves(state.agent.params))
    if jax.process_index() == 0:
        Path(out).write_text(json.dumps({
            "iteration_s": wall / iters,
            "env_steps_per_s": iters * cfg.env_steps_per_iter / wall,
            "updates_per_s": iters * built.schedule.updates_per_round / built.schedule.period
            / wall,
            "param_bytes": int(params),
            "row_bytes": RowLayout.of(built.example_transition).row_words * 4,
            "load_avg": load,
            "cpu_ms_per_k_env_steps": 1e6 * cpu / (iters * cfg.env_steps_per_iter),
        }))


def run_point(devices: int, processes: int, iters: int, tmp: Path) -> dict:
    from hrl.runtime.cpu_backend import with_cpu_device_count
    from hrl.runtime.processes import COORDINATOR, NUM_PROCESSES, PROCESS_ID

    out = tmp / f"point-{devices}-{processes}.json"
    out.unlink(missing_ok=True)
    port = 23000 + devices * 10 + processes
    children = []
    for process in range(processes):
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=with_cpu_device_count(
            os.environ.get("XLA_FLAGS", ""), devices // processes))
        if processes > 1:
            env.update({COORDINATOR: f"localhost:{port}", NUM_PROCESSES: str(processes),
                        PROCESS_ID: str(process)})
        children.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", str(devices), "--iters", str(iters),
             "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True))
    errors = [c.communicate()[1] for c in children]
    if any(c.returncode for c in children):
        raise RuntimeError(f"point devices={devices} processes={processes} failed:\n"
                           + "\n".join(e[-2000:] for e in errors))
    return json.loads(out.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--devices", nargs="+", type=int, default=[1, 2, 4, 8])
    p.add_argument("--processes", nargs="+", type=int, default=[1, 2])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--iters", type=int, default=16)
    p.add_argument("--results", type=Path, default=OUT,
                   help="directory for the results (default experiments/results/scaling)")
    p.add_argument("--from-rounds", type=Path, metavar="CSV",
                   help="measure nothing: rebuild the table and plot from a scaling_rounds.csv "
                   "(one written on another machine: give its --cores and --machine)")
    p.add_argument("--cores", type=int, help="the measuring machine's cores (default this one's)")
    p.add_argument("--machine", help="the measuring machine, in words (default this CPU's name)")
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        worker(args.worker, args.iters, args.out)
        return 0

    if args.from_rounds:
        results = read_rounds(args.from_rounds)
        args.rounds = max(len(rs) for rs in results.values())
        write_results(results, args)
        return 0

    from rich.progress import Progress

    points = [(d, n) for n in args.processes for d in args.devices
              if d % n == 0 and not (n > 1 and d == 1)]
    out_dir = args.results
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / ".points"
    tmp.mkdir(exist_ok=True)
    results: dict[tuple, list[dict]] = {pt: [] for pt in points}
    with Progress() as bar:
        task = bar.add_task("scaling points", total=len(points) * args.rounds)
        for _ in range(args.rounds):
            for devices, processes in points:
                bar.update(task, description=f"{devices} devices, {processes} process(es)")
                results[(devices, processes)].append(run_point(devices, processes, args.iters,
                                                               tmp))
                bar.advance(task)
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    with (out_dir / "scaling_rounds.csv").open("w", newline="") as f:
        fields = ["devices", "processes", "round", *next(iter(results.values()))[0]]
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for (devices, processes), rs in results.items():
            for i, r in enumerate(rs):
                w.writerow({"devices": devices, "processes": processes, "round": i, **r})
    write_results(results, args)
    return 0


def read_rounds(path: Path) -> dict[tuple, list[dict]]:
    """The per-round measurements of a scaling_rounds.csv, keyed by (devices, processes)."""
    results: dict[tuple, list[dict]] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            point = (int(row.pop("devices")), int(row.pop("processes")))
            row.pop("round")
            results.setdefault(point, []).append(
                {k: int(v) if k.endswith("_bytes") else float(v) for k, v in row.items()})
    if (1, 1) not in results:
        raise SystemExit(f"{path}: no 1-device, 1-process row to scale against")
    return results


def write_results(results: dict, args) -> None:
    from hrl.mapping.scaling import DataParallelModel

    cores = args.cores or os.cpu_count() or 1
    med = {pt: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for pt, rs in results.items()}
    base = med[(1, 1)]
    model = DataParallelModel.for_virtual_cpu_devices(
        iteration_s=base["iteration_s"], cores=cores, param_bytes=int(base["param_bytes"]),
        row_bytes=int(base["row_bytes"]), batch_per_device=BATCH_PER_DEVICE,
        sgd_per_iter=SGD_PER_ITER)
    # Each link's per-message latency is fitted to its smallest point (2 devices); every
    # other point is predicted.
    fitted = []
    for processes in (1, 2):
        if (2, processes) in med:
            model = model.with_latency_fitted(2, processes, med[(2, processes)]["iteration_s"])
            fitted.append((2, processes))
    rows = []
    for (devices, processes), m in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        speedup = m["env_steps_per_s"] / base["env_steps_per_s"]
        predicted = model.speedup(devices, processes)
        rows.append({
            "devices": devices, "processes": processes,
            "env_steps_per_s": round(m["env_steps_per_s"], 1),
            "updates_per_s": round(m["updates_per_s"], 2),
            "samples_per_s": round(m["updates_per_s"] * devices * BATCH_PER_DEVICE, 1),
            "speedup": round(speedup, 3),
            "efficiency_vs_cores": round(speedup / min(devices, cores), 3),
            "efficiency_vs_devices": round(speedup / devices, 3),
            "cpu_ms_per_k_env_steps": round(m["cpu_ms_per_k_env_steps"], 1),
            "cpu_cost_vs_1": round(m["cpu_ms_per_k_env_steps"] / base["cpu_ms_per_k_env_steps"],
                                   3),
            "model_speedup": round(predicted, 3),
            "model_error": round(predicted / speedup - 1.0, 3),
            "model_point": "fitted" if (devices, processes) in fitted or devices == 1
            else "predicted",
            "rounds": len(results[(devices, processes)]),
        })
    with (args.results / "scaling.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, cores, args.results / "scaling.png")
    from hrl.mapping.profile import cpu_name  # the children are done: jax may load now

    points = sorted(results)
    command = ("python experiments/bench/bench_scaling.py --devices "
               + " ".join(str(d) for d in sorted({d for d, _ in points}))
               + " --processes " + " ".join(str(n) for n in sorted({n for _, n in points}))
               + f" --rounds {args.rounds} --iters {args.iters}")
    if args.results.resolve() != OUT:
        results_dir = args.results.resolve()
        shown = (results_dir.relative_to(ROOT.parent) if results_dir.is_relative_to(ROOT.parent)
                 else results_dir)
        command += f" --results {shown}"
    regenerate = f"`{command}`"
    if args.from_rounds:
        regenerate += (f" on a machine of {cores} cores; table and plot from its rounds: "
                       f"`python experiments/bench/bench_scaling.py --from-rounds "
                       f"{args.from_rounds} --cores {cores} --machine \"{args.machine}\"`")
    lines = [
        "# Data-parallel scaling (weak: fixed work per device)",
        "",
        f"Machine: {args.machine or cpu_name()}, {cores} cores shared by all "
        "virtual devices (so the ideal speed-up is min(D, cores)); "
        f"{args.rounds} rounds of at least 3 timed chunks of {args.iters} iterations "
        "and 2 s, medians over rounds (each round's numbers: `scaling_rounds.csv`). Load "
        "average (1 min) when the points were timed: "
        f"{min(r['load_avg'] for rs in results.values() for r in rs):.1f}-"
        f"{max(r['load_avg'] for rs in results.values() for r in rs):.1f} (other tenants).",
        f"Per device: {ENVS_PER_DEVICE} actors x {ROLLOUT} steps per iteration, "
        f"{BATCH_PER_DEVICE} of each SGD step's samples, a {SHARD}-item replay shard; "
        f"{SGD_PER_ITER} SGD steps per iteration. Regenerate: {regenerate}.",
        "",
        "| devices | processes | env steps/s | SGD updates/s | samples/s | speed-up | "
        "eff. vs min(D, cores) | eff. vs D | CPU ms per 1k env steps (vs 1 device) | "
        "model speed-up | model error | model |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['devices']} | {r['processes']} | {r['env_steps_per_s']:,.0f} | "
            f"{r['updates_per_s']:,.1f} | {r['samples_per_s']:,.0f} | {r['speedup']:.2f} | "
            f"{r['efficiency_vs_cores']:.0%} | {r['efficiency_vs_devices']:.0%} | "
            f"{r['cpu_ms_per_k_env_steps']:,.0f} ({r['cpu_cost_vs_1']:.2f}x) | "
            f"{r['model_speedup']:.2f} | {r['model_error']:+.0%} | {r['model_point']} |")
    lines += ["", "Model: " + model.describe(), ""]
    (args.results / "scaling.md").write_text("\n".join(lines))
    print("\n".join(lines))


def plot(rows: list[dict], cores: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for processes, style in ((1, "o-"), (2, "s-")):
        pts = [r for r in rows if r["processes"] == processes]
        if not pts:
            continue
        d = [r["devices"] for r in pts]
        ax.plot(d, [r["speedup"] for r in pts], style, label=f"measured, {processes} process(es)")
        ax.plot(d, [r["model_speedup"] for r in pts], style.replace("-", "--"), alpha=0.6,
                label=f"model, {processes} process(es)")
    d_all = sorted({r["devices"] for r in rows})
    ax.plot(d_all, [min(d, cores) for d in d_all], "k:", label=f"ideal on {cores} cores")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("devices (virtual CPU devices)")
    ax.set_ylabel("env steps/s relative to 1 device")
    ax.set_title("Data-parallel DQN + sharded PER, weak scaling")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
