"""Cycles of the learner's kernel (fpga_rtl/rtl/hrl_learn_kernel.v) per inference as the
training loop runs it (`placement.infer: fpga`), counted in simulation: the kernel's whole run
(ap_start seen to ap_done: the load of the states, the engine's run of the op table it holds,
the store of the Q values) beside the engine's part alone, and the run that loads the weights
(once per weight update).

    python experiments/rtl/learn_kernel_cycles.py   # -> experiments/results/fpga_learner/
                                                    #    kernel_cycles.{csv,md}

Each point runs the kernel's testbench (sim/hrl_learn_kernel, test_listed_nets) on Verilator
(Icarus took more than ten minutes a point at 16x16) with
cocotbext-axi's memory model (a read's data one cycle after its address, no DDR latency):
random weights and states in the default formats, every Q word checked against
hrl.fixed_point.layers.mlp_forward, the cycle registers read back. `us` is the count at the
array's clock as written, estimated by yosys (learner_cycles.array_clock_mhz, clock.md).
"""

from __future__ import annotations

import csv
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import learner_cycles  # noqa: E402
import rtl_runner  # noqa: E402

OUT = learner_cycles.OUT
NETS = [((4, 64, 64, 2), 1), ((4, 64, 64, 2), 32)]  # DQN CartPole's net
SIZES = [4, 16]  # R = C
DWS = [512, 64]  # the AXI data width: an Alveo memory port's, and a narrow one
SIM = "verilator"
COLUMNS = ["net", "batch", "array", "axi_bits", "kernel_cycles", "engine_cycles",
           "interface_cycles", "weights_cycles", "kernel_us", "weights_us"]


def simulate(size: int, dw: int) -> list[dict]:
    prm = {"R": size, "C": size, "AW": 16, "BW": 16, "OW": 24, "NMAX": 64, "NL": 3,
           "BMAX": 32, "BSMAX": 24, "C_M_AXI_GMEM_DATA_WIDTH": dw}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_kernel", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_kernel").SOURCES, sim=SIM, testcase="test_listed_nets",
            env={"KLN_NETS_LIST": json.dumps([[list(d), b] for d, b in NETS]),
                 "KLN_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())


def main() -> None:
    mhz = {size: learner_cycles.array_clock_mhz(f"{size}x{size}") for size in SIZES}
    rows = []
    for size in SIZES:
        for dw in DWS:
            for r in simulate(size, dw):
                rows.append({
                    "net": "-".join(map(str, r["dims"])), "batch": r["batch"],
                    "array": f"{size}x{size}", "axi_bits": dw,
                    "kernel_cycles": r["kernel_cycles"], "engine_cycles": r["engine_cycles"],
                    "interface_cycles": r["kernel_cycles"] - r["engine_cycles"],
                    "weights_cycles": r["weights_cycles"],
                    "kernel_us": round(r["kernel_cycles"] / mhz[size], 3),
                    "weights_us": round(r["weights_cycles"] / mhz[size], 3)})
                print(rows[-1], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "kernel_cycles.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# The learner's kernel: cycles per inference as the training loop runs it",
        "",
        "Regenerate: `python experiments/rtl/learn_kernel_cycles.py` (the kernel's testbench, "
        f"test_listed_nets, on {SIM}; every Q word checked against mlp_forward).",
        "",
        "`kernel_cycles`: ap_start seen to ap_done of one inference as the loop runs it after "
        "its first (the states loaded, the engine's run of the op table it holds, the Q values "
        "stored and acknowledged; the first also moves the table, 16 words per layer); "
        "`engine_cycles`: the engine's part; `interface_cycles`: the difference, what the "
        "kernel interface adds; `weights_cycles`: the run that loads the weights, once per "
        "weight update. `us` at " + learner_cycles.CLOCK_SOURCE + ": "
        + ", ".join(f"{s}x{s} {v:g} MHz" for s, v in mhz.items()) + ". The memory model "
        "answers a read one cycle after its address (no DDR latency). The kernel takes one "
        "word per cycle from memory (hrl_beats_to_words in groups of one) whatever the bus's "
        "width, so the 64- and 512-bit rows agree: the loads, the weights' above all, are "
        "what a wider intake would shorten.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    (OUT / "kernel_cycles.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
