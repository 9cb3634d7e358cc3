"""Where the time of one fused DQN iteration goes, kernel by kernel, split by primitive.

    .venv/bin/python experiments/bench/profile_fused_step.py [--envs 1] [--iters 256] [--rounds 3]

Builds the `experiments/bench/bench_train.py` setting (DQN + PER on gymnax CartPole-v1, 64x64 MLP,
replay 50k with K=16, one SGD step of batch 32 per env step), runs it past learning_starts,
then traces whole chunks with the JAX profiler: XLA:CPU records every kernel (thunk) it runs.
Each kernel is attributed to a primitive through the `hrl.<primitive>` name scope that
`hrl.runtime.primitives` puts on every op (metadata only); kernels without one are the loop's
own (carry copies, the iteration's keys and counters).

Per primitive: kernels per iteration and the sum of their median durations. The profiler adds
its own cost to every kernel and the wall time holds what runs between kernels, so the traced sum
and the untraced wall time per iteration (timed right before, also reported) differ; the shares
and kernel counts are what to read. The MLP's arithmetic is counted
(2 FLOPs per multiply-add of every dot, forward and backward) to say how far the dots are from
being compute-bound.

Writes experiments/results/train/fused_step_profile[_m<M>].{csv,md,png}.
"""

from __future__ import annotations

import argparse
import collections
import csv
import glob
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_train import bench_config  # noqa: E402

from hrl.config import config_from_dict  # noqa: E402
from hrl.mapping.profile import cpu_name  # noqa: E402
from hrl.runtime import build, initial_state  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "results" / "train"
PRIMITIVES = ("env", "infer", "insert", "sample", "train", "update")
LOOP = "loop (carry, keys, counters)"
CONTROL_FLOW = ("conditional", "while", "call")


def kernel_owners(hlo_text: str) -> dict[str, str]:
    """Instruction name -> primitive, read from the `hrl.<primitive>` scope in its metadata."""
    owners = {}
    instruction = r"^\s+(?:ROOT )?%?([\w.\-]+) = (?:\([^()]*\)|\S+) ([\w\-]+)\([^\n]*"
    for m in re.finditer(instruction, hlo_text, re.M):
        if m.group(2) in CONTROL_FLOW:  # their time is their kernels' time
            continue
        scope = re.search(r'op_name="[^"]*?hrl\.([a-z]+)', m.group(0))
        owners[m.group(1)] = scope.group(1) if scope else LOOP
    return owners


def kernel_kind(name: str) -> str:
    """'multiply_add_fusion.12' -> 'multiply_add_fusion'."""
    return re.sub(r"(\.\d+)+$", "", name)


def trace_events(run_chunk, iters: int) -> dict[str, list[float]]:
    """Kernel name -> durations (us) of one traced chunk."""
    tmp = tempfile.mkdtemp(prefix="hrl_profile_")
    try:
        jax.profiler.start_trace(tmp, create_perfetto_trace=True)
        run_chunk(iters)
        jax.profiler.stop_trace()
        path = sorted(glob.glob(f"{tmp}/**/*.trace.json.gz", recursive=True))[-1]
        with gzip.open(path) as f:
            trace = json.load(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    durations = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            durations[e["name"]].append(float(e["dur"]))
    return durations


def mlp_flops(obs_dim: int, hidden: list[int], actions: int, batch: int, num_envs: int) -> int:
    """FLOPs of the dots of one iteration: infer (M rows, one forward); train (three forwards of
    B rows: online on s, online and target on s'; the backward of the first: two dots per layer
    but the first layer's input gradient)."""
    sizes = [obs_dim, *hidden, actions]
    macs = [a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    forward = sum(macs)
    backward = 2 * forward - macs[0]
    return 2 * (num_envs * forward + batch * (3 * forward + backward))


def gemm_peak_gflops(n: int = 1024, reps: int = 5) -> float:
    """This CPU's float32 GEMM rate through XLA, the best of `reps`, on the intra-op threads
    this process started with: the run's (`train.cpu_threads`; one on a 2-core machine at
    M <= 64), so the rate is the one the fused step could reach."""
    a = jax.numpy.ones((n, n), jax.numpy.float32)
    matmul = jax.jit(lambda x: x @ x)
    matmul(a).block_until_ready()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        matmul(a).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=1, help="actors M")
    parser.add_argument("--iters", type=int, default=256, help="iterations per traced chunk")
    parser.add_argument("--rounds", type=int, default=3, help="traced chunks (pooled)")
    args = parser.parse_args()

    cfg = config_from_dict(bench_config(args.envs, "sgd_per_step"))
    built = build(cfg)
    loop = built.loop
    holder = {"state": initial_state(built)}

    def run_chunk(n):
        holder["state"], _ = loop.run(holder["state"], n)
        jax.block_until_ready(holder["state"])

    run_chunk(args.iters)
    while int(built.replay.size(holder["state"].replay)) < cfg.train.learning_starts:
        run_chunk(args.iters)
    hlo = loop._run.lower(holder["state"], args.iters).compile().as_text()
    owners = kernel_owners(hlo)

    walls, pooled = [], collections.defaultdict(list)
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        run_chunk(args.iters)
        walls.append((time.perf_counter() - t0) / args.iters * 1e6)
        for name, durs in trace_events(run_chunk, args.iters).items():
            if name in owners:  # kernels only (not the Python / runtime spans)
                pooled[name].extend(durs)
    iters = args.iters * args.rounds

    per_owner = collections.defaultdict(lambda: [0.0, 0.0])  # kernels/iter, us/iter
    per_kind = collections.defaultdict(lambda: [0.0, 0.0])
    for name, durs in pooled.items():
        count = len(durs) / iters
        us = statistics.median(durs) * count
        for table, key in ((per_owner, owners[name]), (per_kind, kernel_kind(name))):
            table[key][0] += count
            table[key][1] += us
    traced = sum(v[1] for v in per_owner.values())
    kernels = sum(v[0] for v in per_owner.values())
    wall = statistics.median(walls)
    dot_us = sum(v[1] for k, v in per_kind.items() if "dot" in k or k.startswith("ynn"))
    flops = mlp_flops(int(np.prod(built.env.spec.obs_shape)), list(cfg.agent.hidden_sizes),
                      built.env.spec.action.n, cfg.train.batch_size, args.envs)

    peak = gemm_peak_gflops()

    OUT.mkdir(parents=True, exist_ok=True)
    stem = "fused_step_profile" + ("" if args.envs == 1 else f"_m{args.envs}")
    order = [p for p in PRIMITIVES if p in per_owner] + [LOOP]
    with (OUT / f"{stem}.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "name", "kernels_per_iter", "traced_us_per_iter", "share"])
        for key in order:
            c, us = per_owner[key]
            w.writerow(["primitive", key, f"{c:.2f}", f"{us:.3f}", f"{us / traced:.4f}"])
        for key, (c, us) in sorted(per_kind.items(), key=lambda kv: -kv[1][1]):
            w.writerow(["kernel_kind", key, f"{c:.2f}", f"{us:.3f}", f"{us / traced:.4f}"])
    machine = (f"{cpu_name()}, {os.cpu_count()} cores, "
               f"jax {jax.__version__}, load average {os.getloadavg()[0]:.1f}")
    lines = [
        f"# One fused DQN iteration, kernel by kernel (M={args.envs}, batch "
        f"{cfg.train.batch_size}, {'x'.join(map(str, cfg.agent.hidden_sizes))} MLP)",
        "",
        f"Machine: {machine}. Command: `.venv/bin/python experiments/bench/profile_fused_step.py"
        f" --envs {args.envs} --iters {args.iters} --rounds {args.rounds}`.",
        f"Untraced wall time per iteration: **{wall:.1f} us** (median of {args.rounds} chunks of"
        f" {args.iters}; {1e6 / wall * args.envs:,.0f} env steps/s). Traced: {kernels:.0f} "
        f"kernels per iteration, {traced:.1f} us per iteration as the sum of per-kernel medians"
        " (the profiler's own cost is in it, the time between kernels is not: read the shares).",
        f"MLP arithmetic: {flops / 1e6:.2f} MFLOP per iteration; the dot kernels take "
        f"{dot_us:.1f} us of the traced time ({flops / max(dot_us, 1e-9) / 1e3:.1f} GFLOP/s; "
        f"a 1024x1024 GEMM reaches {peak:.0f} GFLOP/s here, so the MLP alone needs "
        f"{flops / peak / 1e3:.1f} us per iteration at that rate).",
        "",
        "| primitive | kernels / iteration | traced us / iteration | share |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key in order:
        c, us = per_owner[key]
        lines.append(f"| {key} | {c:.1f} | {us:.1f} | {us / traced:.0%} |")
    lines += ["", "Kernel kinds (top 15):", "",
              "| kind | kernels / iteration | traced us / iteration | share |",
              "| --- | ---: | ---: | ---: |"]
    for key, (c, us) in sorted(per_kind.items(), key=lambda kv: -kv[1][1])[:15]:
        lines.append(f"| {key} | {c:.1f} | {us:.1f} | {us / traced:.0%} |")
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=110)
    us = [per_owner[k][1] for k in order]
    counts = [per_owner[k][0] for k in order]
    bars = ax.barh(order[::-1], us[::-1], color="tab:blue")
    for bar, c in zip(bars, counts[::-1], strict=True):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {c:.0f} kernels",
                va="center", fontsize=8)
    ax.set_xlabel("traced us per iteration (sum of per-kernel medians)")
    ax.set_title(f"fused DQN iteration at M={args.envs}: {wall:.0f} us untraced, "
                 f"{kernels:.0f} kernels (measured)")
    fig.tight_layout()
    fig.savefig(OUT / f"{stem}.png")
    plt.close(fig)
    print((OUT / f"{stem}.md").read_text())


if __name__ == "__main__":
    main()
