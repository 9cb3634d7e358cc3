"""Cycles of the engine (fpga_rtl/rtl/hrl_learn_engine.v) per inference, counted in
simulation, beside the cycle model's prediction.

    python experiments/rtl/forward_cycles.py        # -> experiments/results/fpga_learner/
                                                    #    forward_cycles.{csv,md}

Each point runs the engine's testbench (sim/hrl_learn_engine, test_listed_nets) on Icarus:
random weights and inputs in the default formats, the whole network through the op table,
every output word checked against hrl.fixed_point.layers.mlp_forward, and the engine's own
cycle counter (the edge that takes `start` to the one that raises `done`) read back. The
model is hrl/mapping/learner_schedule.inference_cycles (the array's phases plus DEP_GAP
between layers, from the first beat to the last output row); the engine overlaps chained
layers, which the model does not, and adds a few cycles around the run (the results file
says which). The model is not fitted.

`us` is the simulated count at the clock estimated by yosys for the array
(experiments/results/fpga_learner/resources.md, read by learner_cycles.clock_mhz).
"""

from __future__ import annotations

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
# (array size, networks): the 32 x 32 array only on DQN's net (Icarus slows with its size).
ARRAYS = [(4, NETS), (8, NETS), (16, NETS), (32, DQN)]
SIM = "icarus"
TARGET_US = 1.5  # the floor for one state's inference (DQN 4-64-64-2)
COLUMNS = ["net", "batch", "array", "sim_cycles", "model_cycles", "difference", "ratio",
           "macs", "utilization", "us"]


def simulate(size: int, nets) -> list[int]:
    """The engine's cycle count for each (dims, batch) of `nets` on an R = C = size array,
    each run checked word for word by the testbench."""
    nmax = max(max(d) for d, _ in nets)
    prm = {"R": size, "C": size, "AW": 16, "BW": 16, "OW": 24, "NMAX": nmax,
           "NL": max(len(d) - 1 for d, _ in nets), "BMAX": max(b for _, b in nets),
           "BSMAX": 24, "SW": 32}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_engine", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_engine").SOURCES, sim=SIM, testcase="test_listed_nets",
            env={"FWD_NETS": json.dumps([[list(d), b] for d, b in nets]),
                 "FWD_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())


def main() -> None:
    mhz = learner_cycles.clock_mhz()
    rows = []
    for size, nets in ARRAYS:
        started = time.time()
        counts = simulate(size, nets)
        print(f"{size}x{size}: {len(nets)} networks in {time.time() - started:.0f} s",
              flush=True)
        for (dims, batch), sim in zip(nets, counts, strict=True):
            model = ls.inference_cycles(list(dims), size, size, batch)
            macs = ls.macs(ls.forward_phases(list(dims), [batch]))
            rows.append({"net": "-".join(map(str, dims)), "batch": batch,
                         "array": f"{size}x{size}", "sim_cycles": sim,
                         "model_cycles": model, "difference": sim - model,
                         "ratio": round(sim / model, 3), "macs": macs,
                         "utilization": round(macs / (size * size * sim), 3),
                         "us": round(sim / mhz, 2)})
    head = [
        "# FPGA learner: the engine's cycles per inference, simulated and modeled",
        "",
        "Regenerate: `python experiments/rtl/forward_cycles.py`. `sim_cycles`: "
        "hrl_learn_engine simulated in Icarus, whole networks through its op table, every "
        "output word checked against hrl.fixed_point.layers.mlp_forward, counted by the "
        "engine's own counter from `start` to `done`. `model_cycles`: "
        "hrl/mapping/learner_schedule.py `inference_cycles` (the array's phases, first beat to "
        "last output row, plus DEP_GAP between layers). `difference` = sim - model, `ratio` = "
        "sim / model. `utilization` = MACs / (R x C x sim_cycles). "
        f"`us` at the clock estimated by yosys, {mhz:.0f} MHz (resources.md).",
    ]
    diffs = sorted({r["difference"] for r in rows})
    one = [r for r in rows if r["net"] == "4-64-64-2" and r["batch"] == 1]
    foot = [
        f"The simulated count minus the model's: {min(diffs)} to {max(diffs)} cycles. The "
        "model runs the layers one after another: each to its last output row, then DEP_GAP "
        "(the activation register, the bank write and read) before the next layer's first beat. "
        "The engine overlaps them: a layer that reads the previous one's output starts its "
        "tiles as soon as the previous layer's last beat is issued, each beat waiting only for "
        "the tile it reads, so the drain between layers is hidden. It adds what the model "
        "leaves out: the first op's load and the banks' 2-cycle read before the first beat, the "
        "2-cycle wait of each output row for the mask bank's read (the backward pass's ReLU "
        "mask; every op's rows take the same path), the activation register and the bank "
        "write after the last row, and one cycle per further layer to load its op.",
        "",
        f"One state's inference of DQN's net (the issue's target: at most {TARGET_US} us): "
        + "; ".join(f"{r['array']} {r['us']} us ({r['sim_cycles']} cycles)" for r in one)
        + f", at {mhz:.0f} MHz. At batch 1 only one of the array's R rows has work (x[r] is a "
        "sample), so the count is about the sum over layers of ceil(N / C) x K beats plus the "
        "last layer's drain.",
    ]
    results_table.write(OUT, "forward_cycles", rows, COLUMNS, head, foot)
    print((OUT / "forward_cycles.md").read_text())


if __name__ == "__main__":
    main()
