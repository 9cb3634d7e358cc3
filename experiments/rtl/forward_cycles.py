"""Cycles of the engine (fpga_rtl/rtl/hrl_learn_engine.v) per inference, counted in
simulation, beside the cycle model's prediction.

    python experiments/rtl/forward_cycles.py        # -> experiments/results/fpga_learner/
                                                    #    forward_cycles.{csv,md}
    python experiments/rtl/forward_cycles.py --model-only   # the model's columns again, from
                                                            # the simulated counts on file
    python experiments/rtl/forward_cycles.py --arrays 8x32  # simulate these arrays only and
                                                            # keep the other rows on file

Each point runs the engine's testbench (sim/hrl_learn_engine, test_listed_nets) on Verilator:
random weights and inputs in the default formats, the whole network through the op table,
every output word checked against hrl.fixed_point.layers.mlp_forward, and the engine's own
cycle counter (the edge that takes `start` to the one that raises `done`) read back. The
model is hrl/mapping/learner_schedule.inference_cycles: the engine's run of the net's forward
ops (`run_cycles`, the schedule the step's runs use too), each chained layer's beats waiting
only for the tile of the previous layer they read. The model is not fitted to these counts.
`--model-only` recomputes the model's columns from the simulated counts already in
forward_cycles.csv (after a change to the model; nothing is simulated).

`us` is the simulated count at the array's clock as written, estimated by yosys
(learner_cycles.array_clock_mhz: clock.md's array_clock); blank for an array wider than any
timed design.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import learner_cycles  # noqa: E402
import results_table  # noqa: E402
import rtl_runner  # noqa: E402

from hrl.mapping import learner_schedule as ls  # noqa: E402

OUT = learner_cycles.OUT
DQN = [((4, 64, 64, 2), 1), ((4, 64, 64, 2), 32)]  # DQN CartPole's net
NETS = [*DQN, ((4, 128, 128, 2), 1), ((4, 128, 128, 2), 32), ((8, 256, 256, 4), 1)]
# (R, C, networks): the 32 x 32 array only on DQN's net (the simulation slows with its size). The
# 8 x 32 and 4 x 64 arrays have the 16 x 16's 256 processing elements in other shapes: at
# batch 1 only one row of the array has work, and C words of weights feed it per cycle, so
# wider arrays of the same size run one state's inference in fewer cycles.
ARRAYS = [(4, 4, NETS), (8, 8, NETS), (16, 16, NETS), (32, 32, DQN), (8, 32, NETS),
          (4, 64, DQN)]
SIM = "verilator"
TARGET_US = 1.5  # the floor for one state's inference (DQN 4-64-64-2)
COLUMNS = ["net", "batch", "array", "sim_cycles", "model_cycles", "difference", "ratio",
           "macs", "utilization", "us"]


def simulate(r: int, c: int, nets) -> list[int]:
    """The engine's cycle count for each (dims, batch) of `nets` on an R x C array, each run
    checked word for word by the testbench."""
    nmax = max(max(d) for d, _ in nets)
    prm = {"R": r, "C": c, "AW": 16, "BW": 16, "OW": 24, "NMAX": nmax,
           "NL": max(len(d) - 1 for d, _ in nets), "BMAX": max(b for _, b in nets),
           "BSMAX": 24, "SW": 32}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_engine", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_engine").SOURCES, sim=SIM, testcase="test_listed_nets",
            env={"FWD_NETS": json.dumps([[list(d), b] for d, b in nets]),
                 "FWD_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())


def row(dims, batch: int, r: int, c: int, sim: int, mhz: float | None) -> dict:
    model = ls.inference_cycles(list(dims), r, c, batch)
    macs = ls.macs(ls.forward_phases(list(dims), [batch]))
    return {"net": "-".join(map(str, dims)), "batch": batch, "array": f"{r}x{c}",
            "sim_cycles": sim, "model_cycles": model, "difference": sim - model,
            "ratio": round(sim / model, 3), "macs": macs,
            "utilization": round(macs / (r * c * sim), 3),
            "us": round(sim / mhz, 2) if mhz else ""}


def simulated_on_file() -> dict[tuple, int]:
    """Simulated cycles of every row of forward_cycles.csv by (dims, batch, R, C)."""
    path = OUT / "forward_cycles.csv"
    if not path.exists():
        return {}
    with path.open() as f:
        return {(tuple(int(x) for x in r["net"].split("-")), int(r["batch"]),
                 *(int(x) for x in r["array"].split("x"))): int(r["sim_cycles"])
                for r in csv.DictReader(f)}


def parse_args(argv) -> argparse.Namespace:
    """--model-only, or --arrays: the (R, C) of ARRAYS to simulate (None: all of them)."""
    known = {f"{r}x{c}": (r, c) for r, c, _ in ARRAYS}
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--model-only", action="store_true",
                      help="the model's columns again, from the simulated counts on file")
    mode.add_argument("--arrays", nargs="+", choices=sorted(known), metavar="RxC",
                      help=f"simulate these arrays only (of {', '.join(known)}) and keep the "
                           "other rows on file")
    args = ap.parse_args(argv)
    args.arrays = {known[a] for a in args.arrays} if args.arrays else None
    return args


def main() -> None:
    args = parse_args(sys.argv[1:])
    model_only, arrays = args.model_only, args.arrays
    mhz = {(r, c): learner_cycles.array_clock_mhz(f"{r}x{c}") for r, c, _ in ARRAYS}
    sims = simulated_on_file() if model_only or arrays else {}
    if not model_only:
        for r, c, nets in ARRAYS:
            if arrays is not None and (r, c) not in arrays:
                continue
            started = time.time()
            counts = simulate(r, c, nets)
            print(f"{r}x{c}: {len(nets)} networks in {time.time() - started:.0f} s",
                  flush=True)
            sims.update({(dims, batch, r, c): sim
                         for (dims, batch), sim in zip(nets, counts, strict=True)})
    # Rows in ARRAYS' order, the points of arrays no longer listed dropped.
    rows = [row(dims, batch, r, c, sims[(dims, batch, r, c)], mhz[(r, c)])
            for r, c, nets in ARRAYS for dims, batch in nets if (dims, batch, r, c) in sims]
    head = [
        "# FPGA learner: the engine's cycles per inference, simulated and modeled",
        "",
        "Regenerate: `python experiments/rtl/forward_cycles.py`. `sim_cycles`: "
        "hrl_learn_engine simulated in Verilator, whole networks through its op table, every "
        "output word checked against hrl.fixed_point.layers.mlp_forward, counted by the "
        "engine's own counter from `start` to `done`. `model_cycles`: "
        "hrl/mapping/learner_schedule.py `inference_cycles` (the engine's run of the forward "
        "ops, `run_cycles`: each chained layer's beats wait only for the tile of the previous "
        "layer they read; not fitted to these counts). `difference` = sim - model, `ratio` = "
        "sim / model. `utilization` = MACs / (R x C x sim_cycles). "
        f"`us` at {learner_cycles.CLOCK_SOURCE}: "
        + ", ".join(f"{r}x{c} {v:g} MHz" if v else f"{r}x{c} untimed (no timed design at its "
                    "lanes: no `us`)" for (r, c), v in mhz.items()) + ".",
    ]
    diffs = sorted({r["difference"] for r in rows})
    one = [r for r in rows if r["net"] == "4-64-64-2" and r["batch"] == 1]
    foot = [
        f"The simulated count minus the model's: {min(diffs)} to {max(diffs)} cycles. The "
        "model follows the engine: a layer that reads the previous one's output starts its "
        "tiles as soon as the previous layer's last beat is issued, each beat waiting only for "
        "the tile it reads, so the drain between layers is hidden; around the run it counts "
        "the first op's load and the banks' read before the first beat, each output row's wait "
        "for the mask bank's read, the activation register and the bank write after the last "
        "row, and one cycle per further layer to load its op (`learner_schedule.OUT_LATENCY`, "
        "`WRITE_LAG`, `RUN_FIXED`).",
        "",
        f"One state's inference of DQN's net (the issue's target: at most {TARGET_US} us): "
        + "; ".join(f"{r['array']} {r['us']} us ({r['sim_cycles']} cycles)"
                    if r["us"] != "" else f"{r['array']} {r['sim_cycles']} cycles (clock untimed)"
                    for r in one)
        + ", each at its array's clock. At batch 1 only one of the array's R rows has work "
        "(x[r] is a "
        "sample), so the count is about the sum over layers of ceil(N / C) x K beats plus the "
        "last layer's drain: C, the weight words read per cycle, sets it. The 8x32 and 4x64 "
        "rows are the 16x16's 256 processing elements in wider shapes.",
    ]
    results_table.write(OUT, "forward_cycles", rows, COLUMNS, head, foot)
    print((OUT / "forward_cycles.md").read_text())


if __name__ == "__main__":
    main()
