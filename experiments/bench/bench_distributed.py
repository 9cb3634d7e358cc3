"""The distributed-actors executor (Ape-X on Ray): actor throughput against N, the learner's SGD
rate while actors stream in, and learning with 4 actors.

    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py throughput
        [--actors 1 2 4 8 16] [--envs latency cpu]
    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py request-length
        [--actors 16] [--lengths 32 128] [--rounds 3]
    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py learner [--actors 1 2 4 8]
    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py learning [--seeds 0 1 2]

throughput: DQN + PER with N Ray actor workers in the free schedule (each worker two requests
in flight, as fast as it goes), each stepping one env for 32 steps a request, the learner
training at train_ratio 0.25 (batch 32). Two host envs: `latency`, CartPole whose step first
waits 5 ms (`latency_env.py`: a remote simulator; the step holds no core) and `cpu`, gymnasium's
CartPole (the step computes). Per N the run starts its workers, warms up for 2N iterations,
then times max(48, 8N) iterations: env steps/s, the speed-up over N = 1, and the learner's
seconds per SGD step (its sample + train + update calls, per update) as a measure of the
learner's SGD rate while the actors stream in, the CPU milliseconds per env step the workers
(all together) and the learner's process spent in the window (the ceiling on this machine is
cores / their sum), and the 1-minute load average before the window (other jobs). Writes
experiments/results/distributed/throughput.{csv,png}.

request-length: the latency env at N = 1 and N = 16 with requests of 32 and of 128 env steps,
in interleaved rounds, each figure the median round: the speed-up at 16 for each length and the
CPU per env step of the workers and the learner, from which the CPU a request costs whatever its
length is read (printed). Writes experiments/results/distributed/request_length.{csv,png}.

learner: the learner's SGD rate while N workers stream in, against one worker. The learner is
made the bottleneck (train_ratio 8: 256 SGD steps of batch 32 per iteration of 32 env steps,
far more than a worker's gymnasium CartPole steps take), so its SGD steps per wall second are
its rate, not the actors'. Fixed schedule, pipeline depth N (every worker a request in flight),
weights synced every 4 iterations. Per N: start the workers, warm up for 2N + 4 iterations,
then time five windows of 32 iterations; each figure is the median window. Per window: SGD
steps/s, the learner's ms per SGD step (its sample + train + update calls), and the share of
the wall time it waited for a worker's batch (near 0: the learner was the bottleneck, so the
rate is the learner's) and the share it spent on neither (taking batches from Ray, the
iteration's bookkeeping, publishing weights). Writes
experiments/results/distributed/learner_rate.{csv,png}.

    nice -n 19 .venv/bin/python experiments/bench/bench_distributed.py priorities
        [--seeds 0 1 2 3 4]

learning: DQN CartPole (experiments/configs/dqn_cartpole_gymnasium.yaml) with 4 actor workers
of 4 envs each in the fixed schedule (pipeline depth 3: each worker one request in flight), per
seed: env steps until the mean of the last 10 episodes (log.return_window) reaches 475. Writes
experiments/results/distributed/learning.{csv,png}.

priorities: the same runs with Ape-X's initial priorities computed on the workers
(train.actor_priorities true) and without (the learner's largest priority), over the same
seeds: per seed and arm the env steps to a mean return of 475 (the budget when not reached)
and the mean return of all the run's episodes (the area under its learning curve, per
episode). The paired differences (on - off) by seed, their mean and a 95% t interval, are
printed and written with the rows to experiments/results/distributed/priorities.{csv,png}.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

from hrl.config import load_config
from hrl.runtime import build, initial_state, train
from hrl.runtime.metrics import read_episodes

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "distributed"  # --out: elsewhere (a machine with more cores)
CONFIG = ROOT / "configs" / "dqn_cartpole_gymnasium.yaml"
ENVS = {"latency": "gymnasium:experiments.bench.latency_env:SlowCartPole-v0",
        "cpu": "gymnasium:CartPole-v1"}
BASE = ["env.num_envs=1", "train.rollout_length=32", "train.executor=distributed",
        "train.actor_schedule=free", "train.learning_starts=64", "train.batch_size=32",
        "train.train_ratio=0.25", "train.weight_sync_period=4", "agent.hidden_sizes=[64,64]",
        "train.total_env_steps=100000000", "log.progress=false"]


def measure(env: str, actors: int, rollout_length: int = 32) -> dict:
    """One throughput point; `rollout_length` overrides BASE's (the later --set wins)."""
    cfg = load_config(CONFIG, BASE + [f"env.name={ENVS[env]}", f"train.num_actors={actors}",
                                      f"train.rollout_length={rollout_length}"])
    built = build(cfg)
    loop = built.loop
    try:
        state, _ = loop.run(initial_state(built), 2 * actors)  # workers up, compiled, warm
        jax.block_until_ready(state)
        loop.calls.timings.update(dict.fromkeys(loop.calls.timings, 0.0))
        updates = int(state.updates)
        iters = max(48, 8 * actors)
        load = os.getloadavg()[0]
        workers_cpu, learner_cpu = sum(loop.actor_cpu_seconds()), time.process_time()
        start = time.perf_counter()
        state, _ = loop.run(state, iters)
        jax.block_until_ready(state)
        wall = time.perf_counter() - start
        learner_cpu = time.process_time() - learner_cpu
        workers_cpu = sum(loop.actor_cpu_seconds()) - workers_cpu
    finally:
        loop.close()
    t, done = loop.calls.timings, int(state.updates) - updates
    steps = iters * cfg.env_steps_per_iter
    return {"env": env, "actors": actors,
            "env_steps_per_s": round(steps / wall, 1),
            "updates_per_s": round(done / wall, 1),
            "sgd_ms_per_update": round(1e3 * (t["sample"] + t["train"] + t["update"])
                                       / max(done, 1), 3),
            "wall_s": round(wall, 2), "restarts": loop.restarts,
            "worker_cpu_ms_per_step": round(1e3 * workers_cpu / steps, 3),
            "learner_cpu_ms_per_step": round(1e3 * learner_cpu / steps, 3),
            "load_1min_before": round(load, 1)}


MEASURED = ("env", "actors", "env_steps_per_s", "updates_per_s", "sgd_ms_per_update", "wall_s",
            "restarts", "worker_cpu_ms_per_step", "learner_cpu_ms_per_step", "load_1min_before")
LEARNER = ["env.name=gymnasium:CartPole-v1", "env.num_envs=1", "train.rollout_length=32",
           "train.executor=distributed", "train.actor_schedule=fixed",
           "train.learning_starts=64", "train.batch_size=32", "train.train_ratio=8",
           "train.weight_sync_period=4", "agent.hidden_sizes=[64,64]",
           "train.total_env_steps=100000000", "log.progress=false"]
WINDOWS, WINDOW_ITERS = 5, 32


def measure_learner(actors: int) -> dict:
    cfg = load_config(CONFIG, LEARNER + [f"train.num_actors={actors}",
                                         f"train.pipeline_depth={actors}"])
    built = build(cfg)
    loop = built.loop
    waited = [0.0]
    take = loop._take

    def timed_take(*args):  # the learner's wait for a worker's batch
        start = time.perf_counter()
        try:
            return take(*args)
        finally:
            waited[0] += time.perf_counter() - start

    loop._take = timed_take
    windows = []
    try:
        state, _ = loop.run(initial_state(built), 2 * actors + 4)  # workers up, compiled
        jax.block_until_ready(state)
        for _ in range(WINDOWS):
            t = loop.calls.timings
            t.update(dict.fromkeys(t, 0.0))
            waited[0], updates = 0.0, int(state.updates)
            start = time.perf_counter()
            state, _ = loop.run(state, WINDOW_ITERS)
            jax.block_until_ready(state)
            wall = time.perf_counter() - start
            done = int(state.updates) - updates
            sgd = t["sample"] + t["train"] + t["update"]  # the insert is timed as "update"
            windows.append({"updates_per_s": done / wall, "sgd_ms_per_update": 1e3 * sgd / done,
                            "wait_share": waited[0] / wall,
                            "other_share": (wall - waited[0] - sgd) / wall, "wall_s": wall})
    finally:
        loop.close()
    windows.sort(key=lambda w: w["updates_per_s"])
    mid = windows[len(windows) // 2]
    return {"actors": actors, "updates_per_s": round(mid["updates_per_s"], 1),
            "updates_per_s_min": round(windows[0]["updates_per_s"], 1),
            "updates_per_s_max": round(windows[-1]["updates_per_s"], 1),
            "sgd_ms_per_update": round(mid["sgd_ms_per_update"], 3),
            "learner_wait_share": round(mid["wait_share"], 3),
            "learner_other_share": round(mid["other_share"], 3),
            "window_s": round(mid["wall_s"], 2), "restarts": loop.restarts}


def learner(args) -> None:
    if 1 not in args.actors:
        raise SystemExit(f"learner: --actors must include 1 (the baseline), got {args.actors}")
    rows = []
    for n in args.actors:
        row = measure_learner(n)
        print(row, flush=True)
        rows.append(row)
    one = next(r for r in rows if r["actors"] == 1)
    for row in rows:
        row["rate_vs_one_actor"] = round(row["updates_per_s"] / one["updates_per_s"], 3)
        row["cores"] = os.cpu_count()
    write(args.out / "learner_rate.csv", rows)
    plot_learner(rows, args.out / "learner_rate.png")


def throughput(args) -> None:
    """Measures the envs asked for; the CSV keeps the rows of the others (one env per call
    keeps each call short)."""
    path = args.out / "throughput.csv"
    rows = []
    if path.exists():
        with path.open() as f:
            rows = [{k: (v if k == "env" else float(v)) for k, v in r.items()
                     if k in MEASURED}
                    for r in csv.DictReader(f) if r["env"] not in args.envs]
        for r in rows:
            r["actors"], r["restarts"] = int(r["actors"]), int(r["restarts"])
    if 1 not in args.actors and not all(any(r["env"] == e and r["actors"] == 1 for r in rows)
                                        for e in args.envs):
        sys.exit(f"throughput: --actors {' '.join(map(str, args.actors))} has no 1, and "
                 f"{path} has no N = 1 row to compare against: add 1")
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
    plot_throughput(rows, args.out / "throughput.png")


def request_length(args) -> None:
    """The latency env at N = 1 and N = max(args.actors) workers, each request `L` env steps for
    each L asked for, in interleaved rounds (every setting once per round, so drift in the
    machine's load lands on all of them alike); per setting the median round. What a request
    costs whatever its length (Ray's call and its pickling, the iteration's keys and log row on
    both sides, the learner's insert) is read off the CPU per env step at two lengths:
    fixed = (cpu_a - cpu_b) / (1/a - 1/b)."""
    lengths, top = args.lengths, max(args.actors)
    runs = {}
    for r in range(args.rounds):
        for n in (1, top):
            for length in lengths:
                row = measure("latency", n, length)
                print(f"round {r + 1}/{args.rounds}: L={length} N={n}", row, flush=True)
                runs.setdefault((length, n), []).append(row)
    rows = []
    for (length, n), got in runs.items():
        mid = sorted(got, key=lambda x: x["env_steps_per_s"])[len(got) // 2]
        rows.append({"rollout_length": length, "actors": n, "rounds": len(got),
                     "env_steps_per_s": mid["env_steps_per_s"],
                     "env_steps_per_s_min": min(x["env_steps_per_s"] for x in got),
                     "env_steps_per_s_max": max(x["env_steps_per_s"] for x in got),
                     "worker_cpu_ms_per_step": mid["worker_cpu_ms_per_step"],
                     "learner_cpu_ms_per_step": mid["learner_cpu_ms_per_step"],
                     "load_1min_before": mid["load_1min_before"]})
    for row in rows:
        one = next(x for x in rows if x["rollout_length"] == row["rollout_length"]
                   and x["actors"] == 1)
        row["speedup"] = round(row["env_steps_per_s"] / one["env_steps_per_s"], 3)
        row["speedup_per_actor"] = round(row["speedup"] / row["actors"], 3)
        row["cores"] = os.cpu_count()
    a, b = min(lengths), max(lengths)
    for n in (1, top):
        pa = next(x for x in rows if x["rollout_length"] == a and x["actors"] == n)
        pb = next(x for x in rows if x["rollout_length"] == b and x["actors"] == n)
        for side in ("worker", "learner"):
            k = f"{side}_cpu_ms_per_step"
            fixed = (pa[k] - pb[k]) / (1 / a - 1 / b)
            print(f"N={n}: {side} CPU per request, whatever its length: {fixed:.2f} ms "
                  f"(from L={a} and L={b})")
    rows.sort(key=lambda x: (x["rollout_length"], x["actors"]))
    write(args.out / "request_length.csv", rows)
    plot_request_length(rows, args.out / "request_length.png")


def learn(seed: int, extra: list[str] = ()) -> dict:
    """One DQN CartPole run with 4 workers (fixed schedule): its summary row."""
    cfg = load_config(CONFIG, ["train.executor=distributed", "train.num_actors=4",
                               "train.pipeline_depth=3", f"seed={seed}", "log.progress=false",
                               *extra])
    run_dir = Path("runs") / f"bench-distributed-seed{seed}-{int(time.time())}"
    s = train(cfg, run_dir, checkpoint_every=0)
    _, returns = read_episodes(run_dir)
    return {"seed": seed, "actors": 4, "env_steps": s["env_steps"],
            "steps_to_475": s["per_seed"][0]["steps_to_solved"],
            "final_return": s["recent_return"], "mean_return": round(float(returns.mean()), 2),
            "wall_s": s["wall_s_this_session"]}


def learning(args) -> None:
    rows = []
    for seed in args.seeds:
        row = learn(seed)
        print(row, flush=True)
        rows.append(row)
    write(args.out / "learning.csv", rows)
    plot_learning(rows, args.out / "learning.png")


def paired(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """Mean of the paired differences on - off and its 95% t interval (low, high)."""
    from scipy import stats

    d = np.asarray(on, float) - np.asarray(off, float)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def priorities(args) -> None:
    if len(args.seeds) < 2:
        raise SystemExit(f"priorities: --seeds needs at least 2 seeds, got {args.seeds}")
    rows = []
    for seed in args.seeds:
        for on in (False, True):
            row = {"actor_priorities": on,
                   **learn(seed, [f"train.actor_priorities={str(on).lower()}"])}
            row["steps_to_475_or_budget"] = row["steps_to_475"] or row["env_steps"]
            print(row, flush=True)
            rows.append(row)
        write(args.out / "priorities.csv", rows)  # after every seed: a cut-short call keeps them
        if len(rows) >= 4:
            plot_priorities(rows, args.out / "priorities.png")
    for key in ("steps_to_475_or_budget", "mean_return"):
        arm = {on: [r[key] for r in rows if r["actor_priorities"] == on] for on in (True, False)}
        mean, low, high = paired(arm[True], arm[False])
        print(f"{key}: on - off = {mean:.1f} (95% t interval {low:.1f} to {high:.1f}), "
              f"{len(arm[True])} seeds", flush=True)


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
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


def plot_request_length(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    lengths = sorted({r["rollout_length"] for r in rows})
    top = max(r["actors"] for r in rows)
    x = np.arange(len(lengths))
    tops = [next(r for r in rows if r["rollout_length"] == length and r["actors"] == top)
            for length in lengths]
    ax.bar(x, [r["speedup"] for r in tops], color="C0")
    ax.axhline(0.8 * top, ls="--", color="grey", label=f"0.8 N = {0.8 * top:g}")
    ax.set(xticks=x, xticklabels=[f"L = {length}" for length in lengths],
           ylabel=f"env steps/s at N = {top} against N = 1",
           title="latency env: speed-up by env steps per request")
    ax.legend(fontsize=7)
    for i, n in enumerate((1, top)):
        mine = [next(r for r in rows if r["rollout_length"] == length and r["actors"] == n)
                for length in lengths]
        w = 0.2
        bx.bar(x + (2 * i - 1) * w, [r["worker_cpu_ms_per_step"] for r in mine], w,
               color=f"C{2 * i}", label=f"workers, N = {n}")
        bx.bar(x + (2 * i) * w, [r["learner_cpu_ms_per_step"] for r in mine], w,
               color=f"C{2 * i + 1}", label=f"learner, N = {n}")
    bx.set(xticks=x, xticklabels=[f"L = {length}" for length in lengths],
           ylabel="CPU ms per env step", title="where the CPU goes")
    bx.legend(fontsize=7)
    fig.suptitle(f"distributed actors on Ray, {rows[0]['cores']} cores, median of "
                 f"{rows[0]['rounds']} interleaved rounds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_learner(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    n = [r["actors"] for r in rows]
    rate = [r["updates_per_s"] for r in rows]
    err = [[r["updates_per_s"] - r["updates_per_s_min"] for r in rows],
           [r["updates_per_s_max"] - r["updates_per_s"] for r in rows]]
    one = next(r["updates_per_s"] for r in rows if r["actors"] == 1)
    ax.errorbar(n, rate, yerr=err, fmt="o-", capsize=3,
                label=f"median of {WINDOWS} windows (min-max)")
    ax.axhline(one, color="grey", lw=0.8, label="one worker")
    ax.axhline(0.9 * one, color="grey", ls="--", lw=0.8, label="90% of one worker")
    ax.set(xscale="log", ylim=(0, 1.15 * max(r["updates_per_s_max"] for r in rows)),
           xlabel="actor workers N", ylabel="learner SGD steps / s",
           title="learner's SGD rate while N workers stream in")
    bx.plot(n, [r["sgd_ms_per_update"] for r in rows], "o-", label="ms per SGD step")
    bx.set(xscale="log", ylim=(0, 1.3 * max(r["sgd_ms_per_update"] for r in rows)),
           xlabel="actor workers N", ylabel="ms per SGD step (sample+train+update)")
    cx = bx.twinx()
    cx.plot(n, [r["learner_wait_share"] for r in rows], "s:", color="tab:red",
            label="share of wall waiting for a batch")
    cx.set(ylim=(0, 1), ylabel="learner's wait share")
    bx.set_title("the learner's step and its waits")
    for a in (ax, bx):
        a.set_xticks(n, [str(k) for k in n])
        a.minorticks_off()
    ax.legend(fontsize=7)
    bx.legend(handles=bx.lines + cx.lines, fontsize=7)
    fig.suptitle(f"DQN learner, train_ratio 8, batch 32, gymnasium CartPole workers, "
                 f"{rows[0]['cores']} cores", fontsize=9)
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


def plot_priorities(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    seeds = sorted({r["seed"] for r in rows})
    for ax, key, label in ((axes[0], "steps_to_475_or_budget", "env steps to 475 (budget: not)"),
                           (axes[1], "mean_return", "mean return of all episodes")):
        for seed in seeds:
            pair = [next(r[key] for r in rows if r["seed"] == seed and r["actor_priorities"] == on)
                    for on in (False, True)]
            ax.plot([0, 1], pair, "o-", color="tab:blue", alpha=0.7)
            ax.annotate(str(seed), (1.03, pair[1]), fontsize=7)
        ax.set_xticks([0, 1], ["learner's max priority", "actors' |td| (Ape-X)"])
        ax.set(ylabel=label, xlim=(-0.3, 1.3))
    fig.suptitle("DQN CartPole, 4 actor workers: initial priorities, paired by seed",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT,
                        help="folder for the CSV and PNG files (default: %(default)s)")
    sub = parser.add_subparsers(dest="part", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    t.add_argument("--envs", nargs="+", default=["latency", "cpu"], choices=list(ENVS))
    rq = sub.add_parser("request-length")
    rq.add_argument("--actors", type=int, nargs="+", default=[16])
    rq.add_argument("--lengths", type=int, nargs="+", default=[32, 128])
    rq.add_argument("--rounds", type=int, default=3)
    le = sub.add_parser("learner")
    le.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8])
    lr = sub.add_parser("learning")
    lr.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    pr = sub.add_parser("priorities")
    pr.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    {"throughput": throughput, "request-length": request_length, "learner": learner,
     "learning": learning, "priorities": priorities}[args.part](args)


if __name__ == "__main__":
    main()
