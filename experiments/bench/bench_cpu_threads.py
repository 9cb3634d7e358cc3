"""XLA:CPU's intra-op threads (`train.cpu_threads`) against the runtime's loops: one thread
against one per core, chunk by chunk.

    .venv/bin/python experiments/bench/bench_cpu_threads.py [--rounds 3] [--chunks 8]
        [--only TEXT ...] [--name NAME]

The settings use experiments/configs/dqn_cartpole.yaml (3-step returns) unless said.
Every (setting, threads) pair runs in a fresh process (the thread count is fixed when JAX's
CPU backend starts), the pairs interleaved round by round so that the machine's drift hits
both alike. A process builds the run with `hrl.runtime.build`, warms it up past
learning_starts, then times `--chunks` chunks and reports env steps/s per chunk. The settings
(DQN on CartPole-v1, replay 50k unless said):
* fused M=1, batch 32, 64x64, one SGD step per env step (the README's M=1 figure);
* fused M=64, batch 256, 64x64, one SGD step per vector step;
* fused M=256 and M=1024, batch 256, 64x64, one SGD step per vector step, with the config's
  3-step returns and with n_step=1 (`experiments/bench/bench_train.py`'s setting);
* fused M=64, batch 256, 256x256, capacity 8192, one SGD step per 16 env steps (the mapping
  validation's M64-B256-w256);
* the sequential host loop on gymnasium CartPole, M=8, 16 steps per iteration, batch 32, 64x64,
  one SGD step per 4 env steps (strict: synchronous dispatch);
* the pipelined executor on gymnasium CartPole, actors in their own process (which gets the
  same thread count), M=16, 4 steps per iteration, batch 64, one SGD step per 8 env steps;
* both host loops again at M=32, 16 steps per iteration, batch 32, 256x256, one SGD step per
  16 env steps (a held-out mapping setting where two threads collapsed).
Each round's median is kept (`per_round_median`): with two threads a process may land in a
slow mode for its whole life, so the rounds, not the chunks, show it.
Writes experiments/results/cpu_threads/NAME.{csv,md,png} (NAME default cpu_threads; with
--only, name the subset's files apart so the full table stays): the median, 10th and 90th
percentile over all chunks of all rounds, and the ratio of medians (one thread / per core).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "cpu_threads"
CARTPOLE = "experiments/configs/dqn_cartpole.yaml"
GYMNASIUM = "experiments/configs/dqn_cartpole_gymnasium.yaml"
# A held-out mapping setting (experiments/mapping/heldout.py, seed 6) where the host loops ran
# many times slower than predicted: 256-wide layers, native tree, one SGD step per 16 env steps.
_WIDE_HOST_LOOP = ["env.num_envs=32", "train.rollout_length=16", "train.batch_size=32",
                   "train.train_ratio=0.0625", "agent.hidden_sizes=[256,256]",
                   "replay.capacity=8192", "train.learning_starts=512", "replay.backend=jax"]
# (label, config, overrides, iterations per chunk)
SETTINGS = [
    ("fused M=1 B=32 64x64", CARTPOLE,
     ["env.num_envs=1", "train.batch_size=32", "train.train_ratio=1.0"], 2000),
    ("fused M=64 B=256 64x64", CARTPOLE,
     ["env.num_envs=64", "train.batch_size=256", "train.train_ratio=0.015625"], 200),
    ("fused M=256 B=256 64x64", CARTPOLE,
     ["env.num_envs=256", "train.batch_size=256", "train.train_ratio=0.00390625"], 100),
    ("fused M=256 B=256 64x64 n_step=1", CARTPOLE,
     ["env.num_envs=256", "train.batch_size=256", "train.train_ratio=0.00390625",
      "replay.n_step=1"], 100),
    ("fused M=1024 B=256 64x64", CARTPOLE,
     ["env.num_envs=1024", "train.batch_size=256", "train.train_ratio=0.0009765625"], 50),
    ("fused M=1024 B=256 64x64 n_step=1", CARTPOLE,
     ["env.num_envs=1024", "train.batch_size=256", "train.train_ratio=0.0009765625",
      "replay.n_step=1"], 50),
    ("fused M=64 B=256 256x256", CARTPOLE,
     ["env.num_envs=64", "train.batch_size=256", "train.train_ratio=0.0625",
      "agent.hidden_sizes=[256,256]", "replay.capacity=8192", "train.learning_starts=512"], 40),
    ("sequential gymnasium M=8x16 B=32 64x64", GYMNASIUM,
     ["env.num_envs=8", "train.rollout_length=16", "train.batch_size=32",
      "train.train_ratio=0.25", "agent.hidden_sizes=[64,64]", "train.executor=sequential"], 10),
    ("pipelined gymnasium M=16x4 B=64 64x64", GYMNASIUM,
     ["env.num_envs=16", "train.rollout_length=4", "train.batch_size=64",
      "train.train_ratio=0.125", "agent.hidden_sizes=[64,64]", "train.executor=pipelined",
      "train.actors=process", "train.pipeline_depth=2"], 25),
    ("sequential gymnasium M=32x16 B=32 256x256", GYMNASIUM, _WIDE_HOST_LOOP
     + ["train.executor=sequential"], 4),
    ("pipelined gymnasium M=32x16 B=32 256x256", GYMNASIUM, _WIDE_HOST_LOOP
     + ["train.executor=pipelined", "train.actors=process", "train.pipeline_depth=1"], 4),
]
COMMON = ["train.rollout_length=1", "agent.hidden_sizes=[64,64]", "replay.capacity=50000",
          "train.learning_starts=1000", "train.total_env_steps=1000000000", "log.progress=false"]


def child(config: str, overrides: list[str], iters: int, chunks: int) -> None:
    """Runs in the fresh process: prints one JSON line of env steps/s per chunk."""
    import jax
    from bench_train import xla_pool_threads

    from hrl.config import load_config
    from hrl.runtime import build, initial_state
    from hrl.runtime.cpu_backend import cpu_threads_of

    cfg = load_config(config, overrides)
    built = build(cfg)
    state = initial_state(built)
    sch = built.schedule
    warm = -(-sch.learning_starts // sch.env_steps_per_iter) + iters
    state, _ = built.loop.run(state, warm)
    state, _ = built.loop.run(state, iters)  # compiles the timed chunk's length
    jax.block_until_ready(state)
    per_chunk = []
    for _ in range(chunks):
        start = time.perf_counter()
        state, _ = built.loop.run(state, iters)
        jax.block_until_ready(state)
        per_chunk.append(iters * sch.env_steps_per_iter / (time.perf_counter() - start))
    print(json.dumps({"per_chunk": per_chunk, "cpu_threads": cpu_threads_of(cfg),
                      "xla_pool_threads": xla_pool_threads()}))


def run_child(config, overrides, iters, chunks) -> dict:
    from hrl.runtime.cpu_backend import run_json_child

    return run_json_child([__file__, "--child", json.dumps([config, overrides, iters, chunks])],
                          f"the child for {overrides}", 900, cwd=ROOT)


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--only", nargs="+", metavar="TEXT",
                    help="only the settings whose label contains one of these")
    ap.add_argument("--name", default="cpu_threads",
                    help="the results' file name under experiments/results/cpu_threads/")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*json.loads(args.child))
        return 0

    from rich.progress import Progress

    from hrl.runtime.cpu_backend import usable_cores

    settings = [s for s in SETTINGS if not args.only or any(t in s[0] for t in args.only)]
    cores = usable_cores()
    threads = (1, cores)
    results = {(s[0], t): [] for s in settings for t in threads}
    pool = {}
    with Progress() as bar:
        task = bar.add_task("settings x threads", total=args.rounds * len(settings) * 2)
        for r in range(args.rounds):
            for label, config, overrides, iters in settings:
                # Alternate which goes first, so neither always follows the other.
                for t in (threads if r % 2 == 0 else threads[::-1]):
                    got = run_child(config, [*COMMON, *overrides, f"train.cpu_threads={t}"],
                                    iters, args.chunks)
                    results[label, t].append(got["per_chunk"])
                    pool[label, t] = got["xla_pool_threads"]
                    bar.advance(task)

    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, *_ in settings:
        med = {}
        for t in threads:
            chunks = [x for rnd in results[label, t] for x in rnd]
            med[t] = statistics.median(chunks)
            rows.append({"setting": label, "cpu_threads": t, "xla_pool_threads": pool[label, t],
                         "median_env_steps_per_s": round(med[t], 1),
                         "p10": round(quantile(chunks, 0.1), 1),
                         "p90": round(quantile(chunks, 0.9), 1),
                         "chunks": len(chunks),
                         "per_round_median": [round(statistics.median(x), 1)
                                              for x in results[label, t]]})
        rows[-2]["ratio_one_thread_vs_per_core"] = rows[-1]["ratio_one_thread_vs_per_core"] = (
            round(med[1] / med[cores], 3))
    fields = list(rows[0])
    with open(OUT / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    from hrl.mapping.profile import cpu_name  # the children are done: jax may load now

    subset = (" --only " + " ".join(f"'{t}'" for t in args.only) if args.only else "") + (
        f" --name {args.name}" if args.name != "cpu_threads" else "")

    lines = ["# XLA:CPU intra-op threads: one against one per core", "",
             f"Regenerate: `.venv/bin/python experiments/bench/bench_cpu_threads.py --rounds "
             f"{args.rounds} --chunks {args.chunks}{subset}`", "",
             f"Machine: {cpu_name()}, {cores} usable cores; "
             "env steps/s per chunk, over all chunks of all rounds (fresh process each).", "",
             "| setting | cpu_threads | median | p10 | p90 | one thread / per core "
             "| per-round medians |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        per_round = ", ".join(f"{x:,.0f}" for x in row["per_round_median"])
        lines.append(f"| {row['setting']} | {row['cpu_threads']} | "
                     f"{row['median_env_steps_per_s']:,.0f} | {row['p10']:,.0f} | "
                     f"{row['p90']:,.0f} | {row['ratio_one_thread_vs_per_core']:.2f}x "
                     f"| {per_round} |")
    (OUT / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    plot(results, settings, threads, OUT / f"{args.name}.png")
    print("\n".join(lines))
    return 0


def plot(results, settings, threads, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(settings), figsize=(4 * len(settings), 3.4), squeeze=False)
    axes = axes[0]
    for ax, (label, *_) in zip(axes, settings, strict=True):
        for t, colour in zip(threads, ("tab:blue", "tab:orange"), strict=True):
            ys = [x for rnd in results[label, t] for x in rnd]
            ax.plot(range(len(ys)), ys, "o-", ms=3, color=colour, label=f"cpu_threads={t}")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("chunk (rounds in order)")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("env steps/s")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
