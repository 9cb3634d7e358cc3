"""Cycles per inference and per SGD step of the FPGA learning module, counted by simulating
its multiply-accumulate array, and the cycle model for the rest of the sweep.

    python experiments/rtl/learner_cycles.py      # -> experiments/results/fpga_learner/
                                                  #    cycles.{csv,md}
    python experiments/rtl/learner_cycles.py --no-sim   # the model only (seconds)

An inference or a step is a list of phases of array products (hrl/mapping/learner_schedule.py: the
double-DQN step runs the online net on s and s' and the target net on s', then the backward
pass with the bias gradient as one more row of A^T; DDPG runs the critic's step and the
actor's). For the points in SIMULATED the whole schedule streams through
hrl_learn_mac_array in Verilator (the array testbench's test_schedule_cycles, which also
asserts that each phase takes exactly the model's cycles); `sim` = yes on those rows, the
array cycles then being the simulated phases plus the controller's DEP_GAP between them.
Every other row is the model (which the simulated points check cycle for cycle). The loss
and update columns are learner_schedule's: for DQN the passes of the step module
(hrl_learn_step: three Q rows read per sample; the Adam walk and the target walk, a row
block of C parameters a cycle each, the target every step as the config's default; their
constants are its simulated phases, experiments/rtl/step_cycles.py); for DDPG, whose step
is not sequenced in RTL, modeled (one sample, one row block per cycle + pipeline). The
`units` column says which.

Time: cycles at the clock estimated from yosys (experiments/rtl/learner_resources.py, read
from experiments/results/fpga_learner/resources.md when it is there, else CLOCK_MHZ).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hrl.mapping import learner_schedule as ls  # noqa: E402

OUT = ROOT / "experiments" / "results" / "fpga_learner"
CLOCK_MHZ = 200  # fallback when resources.md has no estimate
NETS = {
    "dqn 4-64-64-2": ("dqn", [4, 64, 64, 2], None),
    "dqn 4-128-128-2": ("dqn", [4, 128, 128, 2], None),
    "dqn 4-256-256-2": ("dqn", [4, 256, 256, 2], None),
    "ddpg pendulum 3-64-64-1 / 4-64-64-1": ("ddpg", [3, 64, 64, 1], [4, 64, 64, 1]),
}
BATCHES = [16, 32, 64, 128, 256]
ARRAYS = [4, 8, 16, 32]
# (net, batch, array size) simulated in Verilator; inference (batch 1) at each size too.
SIMULATED = [("dqn 4-64-64-2", 32, 8), ("dqn 4-64-64-2", 32, 16),
             ("ddpg pendulum 3-64-64-1 / 4-64-64-1", 128, 16)]
SIM_ARRAYS = sorted({s for _, _, s in SIMULATED})
COLUMNS = ["op", "net", "batch", "array", "sim", "array_cycles", "loss_cycles",
           "update_cycles", "total_cycles", "macs", "utilization", "us", "units"]


def clock_mhz() -> float:
    md = OUT / "resources.md"
    if md.exists():
        m = re.search(r"\*\*(\d+) MHz\*\*", md.read_text())
        if m:
            return float(m.group(1))
    return float(CLOCK_MHZ)


CACHE = ROOT / "sim_build" / "learn-cycles"


def _fresh(path: Path) -> bool:
    """`path` exists and is newer than the array's RTL and its testbench."""
    deps = [ROOT / "fpga_rtl" / "rtl" / "hrl_learn_mac_array.v",
            ROOT / "fpga_rtl" / "rtl" / "hrl_learn_narrow.v",
            ROOT / "sim" / "hrl_learn_mac_array" / "test_hrl_learn_mac_array.py"]
    return path.exists() and all(path.stat().st_mtime > d.stat().st_mtime for d in deps)


def simulate_phases(phases, size: int) -> list[int]:
    """Per-phase cycles of `phases` streamed through the array (Verilator, R = C = size).
    A count simulated since the RTL last changed is reused (sim_build/learn-cycles/)."""
    import hashlib

    key = hashlib.sha1(json.dumps([phases, size]).encode()).hexdigest()[:16]
    cached = CACHE / f"{key}.json"
    if _fresh(cached):
        return json.loads(cached.read_text())
    counts = _simulate(phases, size)
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(counts))
    return counts


def _simulate(phases, size: int) -> list[int]:
    import rtl_runner

    tb = rtl_runner.load_testbench("hrl_learn_mac_array")
    prm = tb.params(size, size, aw=18, bw=18, accw=44, ow=24)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_mac_array", prm, sources=tb.SOURCES, sim="verilator",
                       testcase="test_schedule_cycles",
                       env={"LEARN_SCHEDULE": json.dumps(phases),
                            "LEARN_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())


def step_phases(kind, dims, critic, batch):
    return ls.dqn_step(dims, batch) if kind == "dqn" else ls.ddpg_step(dims, critic, batch)


def row_for(op, name, batch, size, sim_counts, mhz):
    kind, dims, critic = NETS[name]
    if op == "inference":
        phases = ls.forward_phases(dims, [1])
        array = (sum(sim_counts) + ls.DEP_GAP * (len(phases) - 1)) if sim_counts \
            else ls.schedule_cycles(phases, size, size)
        loss = upd = 0
        mac = ls.macs(phases)
        units = "array only"
    else:
        fwd, bwd = step_phases(kind, dims, critic, batch)
        if sim_counts:
            array = sum(sim_counts) + ls.DEP_GAP * (len(fwd) + len(bwd) - 2) + 2 * ls.DEP_GAP
        else:
            array = ls.schedule_cycles(fwd, size, size) + ls.schedule_cycles(bwd, size, size) \
                + 2 * ls.DEP_GAP
        model = ls.step_cycles(kind, dims, batch, size, size, critic=critic)
        loss = model["loss"]
        upd = model["update"] + model["target"]  # DQN: Polyak every step, the default
        mac = ls.macs(fwd) + ls.macs(bwd)
        units = ("loss, Adam and target passes as hrl_learn_step runs them (model)"
                 if kind == "dqn" else "loss and update modeled (not yet in RTL)")
    total = array + loss + upd
    return {"op": op, "net": name, "batch": batch, "array": f"{size}x{size}",
            "sim": "yes" if sim_counts else "model", "array_cycles": array,
            "loss_cycles": loss, "update_cycles": upd, "total_cycles": total, "macs": mac,
            "utilization": round(mac / (size * size * array), 3),
            "us": round(total / mhz, 2), "units": units}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--no-sim", action="store_true", help="the model only, no simulation")
    args = ap.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    mhz = clock_mhz()
    sims = {}
    if not args.no_sim:
        for name, batch, size in SIMULATED:
            kind, dims, critic = NETS[name]
            fwd, bwd = step_phases(kind, dims, critic, batch)
            sims[("step", name, batch, size)] = simulate_phases(fwd + bwd, size)
            print(name, batch, size, sims[("step", name, batch, size)], flush=True)
        for size in SIM_ARRAYS:
            name = "dqn 4-64-64-2"
            sims[("inference", name, 1, size)] = simulate_phases(
                ls.forward_phases(NETS[name][1], [1]), size)
    rows = []
    for name in NETS:
        for size in ARRAYS:
            rows.append(row_for("inference", name, 1, size,
                                sims.get(("inference", name, 1, size)), mhz))
            for batch in BATCHES:
                rows.append(row_for("sgd_step", name, batch, size,
                                    sims.get(("step", name, batch, size)), mhz))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "cycles.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    head = "| " + " | ".join(COLUMNS[:-1]) + " |\n|" + "---|" * (len(COLUMNS) - 1) + "\n"
    body = "".join("| " + " | ".join(str(r[c]) for c in COLUMNS[:-1]) + " |\n" for r in rows)
    (OUT / "cycles.md").write_text(
        "# FPGA learner: cycles per inference and per SGD step\n\n"
        "Regenerate: `python experiments/rtl/learner_cycles.py`. `sim` = yes: the array's "
        "schedule simulated in Verilator (hrl_learn_mac_array), which also checks the model "
        "cycle for cycle; `model`: hrl/mapping/learner_schedule.py. The loss and update "
        "cycles of an SGD step are learner_schedule's: DQN's are the step module's passes "
        "(hrl_learn_step, whose whole step step_cycles.md simulates; the update column holds "
        "the Adam and the target walks, the target every step), DDPG's modeled. `us` at the "
        f"clock estimated by yosys, {mhz:g} MHz (resources.md). `utilization` = MACs / "
        "(R x C x array cycles). Inference: one state, the online net.\n\n" + head + body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
