"""The FPGA learner's crossover: hrl's measured float32 SGD step on each JAX device of this
machine (CPU, and the GPU where there is one) beside the FPGA learner's cycle table, for the
same DQN networks and batches.

    python experiments/rtl/learner_crossover.py measure [--steps 200] [--reps 5]
    python experiments/rtl/learner_crossover.py report

`measure` times hrl's DQN `train_step` (the float learner `hrl train` runs: double-Q Huber
loss, Adam, global-norm clipping, soft target update) as one jitted `lax.scan` of `--steps`
steps on a fixed batch, per device, network and batch; the figure is the median over `--reps`
timed scans, per step, compilation left out. It appends its rows to
experiments/results/fpga_learner/crossover_measured.csv, naming the device, the commit and the
command, so that runs on different machines (a GPU machine, this VM) sit side by side.
`report` joins those rows with experiments/results/fpga_learner/cycles.csv (the FPGA learner's
whole steps simulated in RTL where it has them, its cycle model elsewhere; `learner_cycles.py`) into
crossover.md and crossover.png: microseconds per SGD step against the batch, one line per
device, one panel per network.

The FPGA side runs Adam in fixed point (hrl_learn_step's Adam lanes, a Polyak target update
every step), the measured sides run float32 Adam: each is the learner that side would train
with, so the comparison is per SGD step of the same network and batch, not per bit of
arithmetic. An FPGA figure marked `*` is a whole step simulated in RTL (cycles.csv's sim =
yes, from step_cycles.csv); the others are the cycle model, which the simulated steps check.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "experiments" / "results" / "fpga_learner"
MEASURED = OUT / "crossover_measured.csv"
CYCLES = OUT / "cycles.csv"
WIDTHS = (64, 128, 256)  # the DQN networks 4-W-W-2 of cycles.csv
BATCHES = (16, 32, 64, 128, 256)
ARRAYS = ("16x16", "8x32", "32x32")  # the FPGA learner's sides
FIELDS = ("net", "batch", "device", "device_kind", "machine", "us_per_step", "steps", "reps", "jax",
          "commit", "command")


def _commit() -> str:
    """The checkout's commit: git's, else $HRL_COMMIT (a copy of the tree without .git)."""
    if os.environ.get("HRL_COMMIT"):
        return os.environ["HRL_COMMIT"]
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True, check=False)
    return done.stdout.strip() or "unknown"


def time_sgd_step(device, width: int, batch: int, steps: int, reps: int) -> float:
    """Median microseconds per `train_step` of hrl's DQN 4-W-W-2 on `device`: one jitted scan
    of `steps` steps on a fixed batch, timed `reps` times after a compiling call."""
    import jax
    import jax.numpy as jnp

    from hrl.agents import DQNConfig, make_dqn
    from hrl.envs import make_env

    spec = make_env("gymnax:CartPole-v1", num_envs=1).spec
    agent = make_dqn(DQNConfig(hidden_sizes=(width, width)), spec)
    with jax.default_device(device):
        key = jax.random.PRNGKey(0)
        state = agent.init(key)
        ks = jax.random.split(key, 3)
        obs = jax.random.normal(ks[0], (batch, 4), jnp.float32)
        batch_data = {"obs": obs, "next_obs": obs + 0.01,
                      "action": jax.random.randint(ks[1], (batch,), 0, 2),
                      "reward": jax.random.uniform(ks[2], (batch,)),
                      "discount": jnp.full((batch,), 0.99, jnp.float32)}
        weights = jnp.ones((batch,), jnp.float32)
        state, batch_data, weights = jax.device_put((state, batch_data, weights), device)

        @jax.jit
        def run(state):
            def body(s, _):
                s, td, _ = agent.train_step(s, batch_data, weights)
                return s, td[0]
            return jax.lax.scan(body, state, None, length=steps)

        state = jax.block_until_ready(run(state))[0]
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            state = jax.block_until_ready(run(state))[0]
            times.append(time.perf_counter() - t0)
    return statistics.median(times) / steps * 1e6


def measure(args) -> None:
    import jax

    from hrl.mapping.profile import cpu_name

    machine = f"{cpu_name()}, {os.cpu_count()} cores"
    devices = [jax.devices("cpu")[0]]
    try:
        devices += jax.devices("gpu")[:1]
    except RuntimeError:
        pass  # no GPU backend on this machine
    OUT.mkdir(parents=True, exist_ok=True)
    new = not MEASURED.exists()
    command = "python experiments/rtl/learner_crossover.py measure " + " ".join(sys.argv[2:])
    with MEASURED.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            w.writeheader()
        for device in devices:
            for width in args.widths:
                for batch in args.batches:
                    us = time_sgd_step(device, width, batch, args.steps, args.reps)
                    row = {"net": f"dqn 4-{width}-{width}-2", "batch": batch,
                           "device": device.platform, "device_kind": device.device_kind,
                           "machine": machine,
                           "us_per_step": round(us, 2), "steps": args.steps, "reps": args.reps,
                           "jax": jax.__version__, "commit": _commit(),
                           "command": command.strip()}
                    w.writerow(row)
                    f.flush()
                    print(f"{device.platform} {row['net']} B={batch}: {us:.1f} us/step",
                          flush=True)


def crossover_line(net: str, batches, sides: dict, names: list[str]) -> str:
    """Where the fastest side changes along the batch, for one net, in one sentence."""
    best = []
    for b in batches:
        have = {s: sides[s][(net, b)] for s in names if (net, b) in sides[s]}
        if have:
            best.append((b, min(have, key=have.get)))
    runs: list[list] = []
    for b, s in best:
        if runs and runs[-1][0] == s:
            runs[-1][2] = b
        else:
            runs.append([s, b, b])
    text = "; ".join(f"{s} fastest at batch {lo}" + (f"-{hi}" if hi != lo else "")
                     for s, lo, hi in runs)
    return f"{net}: {text}."


def _side_order(side: str) -> tuple:
    """Measured sides by name, the FPGA arrays among them by their size, then width."""
    if side.startswith("fpga "):
        r, c = (int(x) for x in side.split()[1].split("x"))
        return ("fpga", r * c, c)
    return (side, 0, 0)


def report(_args) -> None:
    from matplotlib.figure import Figure

    with MEASURED.open() as f:
        measured = list(csv.DictReader(f))
    with CYCLES.open() as f:
        fpga = [r for r in csv.DictReader(f) if r["op"] == "sgd_step"
                and r["net"].startswith("dqn ") and r["array"] in ARRAYS]
    sides: dict[str, dict] = {}  # side -> {(net, batch): us}
    simulated = {(f"fpga {r['array']}", r["net"], int(r["batch"])) for r in fpga
                 if r["sim"] == "yes"}
    for r in measured:
        side = (f"gpu: {r['device_kind']}" if r["device"] == "gpu" else
                f"cpu: {r['machine']}")
        sides.setdefault(side, {})[(r["net"], int(r["batch"]))] = float(r["us_per_step"])
    for r in fpga:
        side = f"fpga {r['array']}"
        sides.setdefault(side, {})[(r["net"], int(r["batch"]))] = float(r["us"])
    nets = sorted({k[0] for v in sides.values() for k in v}, key=lambda n: int(n.split("-")[1]))
    batches = sorted({k[1] for v in sides.values() for k in v})
    names = sorted(sides, key=_side_order)
    lines = ["# FPGA learner crossover: microseconds per DQN SGD step", "",
             "Regenerate: `python experiments/rtl/learner_crossover.py measure` on each machine "
             "(it appends to crossover_measured.csv), then `python "
             "experiments/rtl/learner_crossover.py report`. Measured sides: hrl's float32 DQN "
             "`train_step` (Adam, clipping) in a jitted scan, median of the timed scans; each "
             "row of crossover_measured.csv names its device, commit and command. FPGA sides: "
             "the fixed-point learner's whole SGD step (Adam, a Polyak target update every "
             "step) in cycles at its array's clock as written, which yosys estimates (the "
             "slowest of the whole kernel's path and the paths that grow with the array's "
             "lanes; clock.md; cycles.csv, experiments/rtl/learner_cycles.py): `*` marks a "
             "step simulated in RTL "
             "(hrl_learn_step in Verilator, bit for bit against the fixed-point reference; "
             "step_cycles.md), the others are the cycle model (hrl/mapping/learner_schedule.py) "
             "that the simulated steps check.", ""]
    for net in nets:
        lines += [f"## {net}", "", "| batch | " + " | ".join(names) + " | fastest |",
                  "|---|" + "---|" * (len(names) + 1)]
        for b in batches:
            cells = {s: sides[s].get((net, b)) for s in names}
            have = {s: v for s, v in cells.items() if v is not None}
            best = min(have, key=have.get) if have else "-"
            row = f"| {b} | " + " | ".join(
                "-" if v is None else f"{v:.1f}" + ("*" if (s, net, b) in simulated else "")
                for s, v in cells.items()) + f" | {best} |"
            lines.append(row)
        lines += ["", crossover_line(net, batches, sides, names)]
        lines += [""]
    (OUT / "crossover.md").write_text("\n".join(lines))
    fig = Figure(figsize=(4.2 * len(nets), 3.6))
    for i, net in enumerate(nets):
        ax = fig.add_subplot(1, len(nets), i + 1)
        for s in names:
            pts = sorted((b, v) for (n, b), v in sides[s].items() if n == net)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=s)
        ax.set(xscale="log", yscale="log", xlabel="batch", title=net)
        if i == 0:
            ax.set_ylabel("us per SGD step")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "crossover.png", dpi=120)
    print(f"wrote {OUT / 'crossover.md'} and crossover.png")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time hrl's SGD step on this machine's devices")
    m.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    m.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    m.add_argument("--steps", type=int, default=200, help="SGD steps per timed scan")
    m.add_argument("--reps", type=int, default=5, help="timed scans per cell")
    sub.add_parser("report", help="crossover.md and crossover.png from the measured rows")
    args = ap.parse_args(argv)
    {"measure": measure, "report": report}[args.cmd](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
