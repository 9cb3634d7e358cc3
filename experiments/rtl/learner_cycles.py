"""Cycles per inference and per SGD step of the FPGA learning module: the simulated counts
where a simulation has them, the cycle model for the rest of the sweep.

    python experiments/rtl/learner_cycles.py      # -> experiments/results/fpga_learner/
                                                  #    cycles.{csv,md}
    python experiments/rtl/learner_cycles.py --no-sim   # no array simulation (seconds)

An inference or a step is a list of phases of array products (hrl/mapping/learner_schedule.py: the
double-DQN step runs the online net on s and s' and the target net on s', then the backward
pass with the bias gradient as one more row of A^T; DDPG runs the critic's step and the
actor's). `sim` = yes on the simulated rows, model on the rest; the `units` column says
which simulation:

- DQN's whole SGD step in hrl_learn_step (Verilator, every word checked against the
  fixed-point reference), read from step_cycles.csv (experiments/rtl/step_cycles.py): the
  array cycles are its forward and backward runs, the loss, Adam and target passes its own,
  the total its count from start to done (the sequencer's hand-offs included);
- one state's inference in hrl_learn_engine (Icarus, checked word for word), read from
  forward_cycles.csv (experiments/rtl/forward_cycles.py);
- DDPG's whole SGD step in hrl_learn_step_ddpg (Verilator, every word checked), read from
  ddpg_step_cycles.csv (experiments/rtl/ddpg_step_cycles.py): the loss column holds its
  loss rows and its clip passes;
- the step's products streamed through hrl_learn_mac_array alone (the points of SIMULATED,
  none now that both steps are simulated whole; the array testbench's
  test_schedule_cycles), plus the controller's DEP_GAP between phases.

The rest is learner_schedule alone (which the simulated points check). The loss and update
columns of a DQN model row are the step module's
passes as learner_schedule counts them (three Q rows read per sample; the Adam walk, a row
block of C parameters a cycle); a target update, every step as the configs' default, costs
DQN's next step its forward split in two runs (in the array column) and DDPG's a walk (in
the update column).

Time: cycles at each array's clock as written, estimated by yosys
(experiments/rtl/learner_clock.py's array_clock over experiments/results/fpga_learner/
clock.csv: the slowest of the whole 4x4 kernel's path and the paths that grow with the
array's lanes); without clock.csv, the array's own clock (resources.md), else CLOCK_MHZ.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sim"))  # rtl_runner, for the array's simulation
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_table  # noqa: E402

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
# (R, C): the square arrays, and 8 x 32, the 16 x 16's 256 processing elements in a wider
# shape (C weight words a cycle: one state's inference, and most steps, in fewer cycles)
ARRAYS = [(4, 4), (8, 8), (16, 16), (32, 32), (8, 32)]
# (net, batch, array size) whose products stream through the array alone in Verilator: for a
# step with no whole-step RTL. DQN's and DDPG's steps and the inferences are simulated whole
# (step_cycles.csv, ddpg_step_cycles.csv, forward_cycles.csv).
SIMULATED: list[tuple[str, int, int]] = []
COLUMNS = ["op", "net", "batch", "array", "sim", "array_cycles", "loss_cycles",
           "update_cycles", "total_cycles", "macs", "utilization", "us", "units"]


def clock_mhz() -> float:
    """The array's own clock (its narrowing unit's estimate, resources.md), else CLOCK_MHZ."""
    md = OUT / "resources.md"
    if md.exists():
        m = re.search(r"\*\*(\d+) MHz\*\*", md.read_text())
        if m:
            return float(m.group(1))
    return float(CLOCK_MHZ)


CLOCK_SOURCE = ("each array's clock as written (clock.md: the slowest of the whole 4x4 "
                "kernel's path and the paths that grow with the array's lanes)")


@functools.cache
def _clock_rows() -> tuple[dict, ...] | None:
    """clock.csv's rows (read once a process), or None without it."""
    path = OUT / "clock.csv"
    if not path.exists():
        return None
    with path.open() as f:
        return tuple(csv.DictReader(f))


def array_clock_mhz(array: str, algo: str = "dqn") -> float | None:
    """`array`'s (RxC) clock as written for `algo`'s kernel, learner_clock.array_clock over
    clock.csv; None where clock.csv times no design at its lanes (wider than any timed);
    without clock.csv, clock_mhz() (the array's own, its narrowing unit's)."""
    rows = _clock_rows()
    if rows is None:
        return clock_mhz()
    import learner_clock

    try:
        return float(learner_clock.array_clock(list(rows), array, algo)[0])
    except ValueError:
        return None


def array_clocks(algo: str = "dqn") -> tuple[dict[str, float], str]:
    """Each of ARRAYS' clock for `algo`'s kernel ({"RxC": MHz}, array_clock_mhz) and where
    the clocks came from."""
    mhz = {f"{r}x{c}": array_clock_mhz(f"{r}x{c}", algo) for r, c in ARRAYS}
    if _clock_rows() is not None:
        return mhz, CLOCK_SOURCE
    return mhz, f"the array's clock, {clock_mhz():g} MHz (resources.md)"


CACHE = ROOT / "sim_build" / "learn-cycles"


def _fresh(path: Path) -> bool:
    """`path` exists and is newer than the array's RTL and its testbench."""
    deps = [ROOT / "fpga_rtl" / "rtl" / "hrl_learn_mac_array.v",
            ROOT / "fpga_rtl" / "rtl" / "hrl_learn_mac_pe.v",
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


def simulated_tables() -> tuple[dict, dict]:
    """The whole-module counts the other scripts simulated: DQN's and DDPG's whole steps by
    (net, batch, array) from step_cycles.csv and ddpg_step_cycles.csv, and inferences
    (batch 1) by (net, array) from forward_cycles.csv; empty where a table is not there."""
    steps, infers = {}, {}
    if (OUT / "step_cycles.csv").exists():
        with open(OUT / "step_cycles.csv", newline="") as f:
            for r in csv.DictReader(f):
                steps[(f"dqn {r['net']}", int(r["batch"]), r["array"])] = r
    if (OUT / "ddpg_step_cycles.csv").exists():
        with open(OUT / "ddpg_step_cycles.csv", newline="") as f:
            for r in csv.DictReader(f):
                name = f"ddpg pendulum {r['actor']} / {r['critic']}"
                steps[(name, int(r["batch"]), r["array"])] = r
    if (OUT / "forward_cycles.csv").exists():
        with open(OUT / "forward_cycles.csv", newline="") as f:
            for r in csv.DictReader(f):
                if int(r["batch"]) == 1:
                    infers[(f"dqn {r['net']}", r["array"])] = r
    return steps, infers


def row_for(op, name, batch, shape, sim_counts, mhz, step=None, infer=None):
    """One row of the table: `step` a row of step_cycles.csv (DQN's whole step simulated),
    `infer` one of forward_cycles.csv (the engine's inference), `sim_counts` the array's
    simulated phases; the model where none is given. `shape` is the array's (R, C)."""
    kind, dims, critic = NETS[name]
    r, c = shape
    if op == "inference":
        phases = ls.forward_phases(dims, [1])
        mac = ls.macs(phases)
        loss = upd = 0
        if infer is not None:
            array = total = int(infer["sim_cycles"])
            units = "simulated: the engine's inference (forward_cycles.md)"
        else:
            array = total = ls.inference_cycles(dims, r, c)
            units = "model"
    else:
        fwd, bwd = step_phases(kind, dims, critic, batch)
        mac = ls.macs(fwd) + ls.macs(bwd)
        if step is not None:
            array = int(step["sim_forward"]) + int(step["sim_backward"])
            loss = int(step["sim_loss"]) + int(step.get("sim_clip") or 0)
            # DQN's target update costs the next step's forward (in sim_forward); DDPG's
            # is a walk of its own
            upd = int(step["sim_update"]) + (int(step["sim_target"]) if kind == "ddpg" else 0)
            total = int(step["sim_step"])  # the sequencer's hand-offs included
            units = ("simulated: the whole step (hrl_learn_step, step_cycles.md)"
                     if kind == "dqn" else
                     "simulated: the whole step (hrl_learn_step_ddpg, ddpg_step_cycles.md)")
        else:
            model = ls.step_cycles(kind, dims, batch, r, c, critic=critic)
            loss = model["loss"]
            # Polyak every step, the default: DQN's target update costs its next step's
            # forward run (the array column), DDPG's a walk (the update column)
            in_array = model["target"] if kind == "dqn" else 0
            upd = model["update"] + model["target"] - in_array
            array = model["array"]
            total = model["total"]
            if sim_counts:  # the array's simulated phases, DEP_GAP between them
                sim_array = sum(sim_counts) + ls.DEP_GAP * (len(fwd) + len(bwd) - 2) \
                    + 2 * ls.DEP_GAP
                total = total - array + sim_array
                array = sim_array
            array += in_array
            units = ("simulated: the array's phases (hrl_learn_mac_array); loss and update "
                     "passes: model" if sim_counts else "model")
    return {"op": op, "net": name, "batch": batch, "array": f"{r}x{c}",
            "sim": "yes" if (sim_counts or step or infer) else "model",
            "array_cycles": array, "loss_cycles": loss, "update_cycles": upd,
            "total_cycles": total, "macs": mac,
            "utilization": round(mac / (r * c * array), 3),
            "us": round(total / mhz, 2), "units": units}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--no-sim", action="store_true",
                    help="no array simulation (the whole-module tables are still read)")
    args = ap.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    mhz, clock_source = array_clocks()
    mhz_ddpg, _ = array_clocks("ddpg")
    sims = {}
    if not args.no_sim:
        for name, batch, size in SIMULATED:
            kind, dims, critic = NETS[name]
            fwd, bwd = step_phases(kind, dims, critic, batch)
            sims[(name, batch, (size, size))] = simulate_phases(fwd + bwd, size)
            print(name, batch, size, sims[(name, batch, (size, size))], flush=True)
    steps, infers = simulated_tables()
    rows = []
    for name in NETS:
        for shape in ARRAYS:
            a = f"{shape[0]}x{shape[1]}"
            clock = mhz_ddpg[a] if NETS[name][0] == "ddpg" else mhz[a]
            # an inference is simulated whole (forward_cycles.csv) or modelled
            rows.append(row_for("inference", name, 1, shape, None, clock,
                                infer=infers.get((name, a))))
            for batch in BATCHES:
                rows.append(row_for("sgd_step", name, batch, shape,
                                    sims.get((name, batch, shape)), clock,
                                    step=steps.get((name, batch, a))))
    n_sim = sum(r["sim"] == "yes" for r in rows)
    head = [
        "# FPGA learner: cycles per inference and per SGD step",
        "",
        "Regenerate: `python experiments/rtl/learner_cycles.py` (it reads step_cycles.csv and "
        "forward_cycles.csv: regenerate those first). `sim` = yes: simulated, `units` says "
        "what: DQN's whole step in hrl_learn_step or DDPG's in hrl_learn_step_ddpg "
        "(Verilator, bit for bit against the fixed-point reference; step_cycles.md, "
        "ddpg_step_cycles.md, whose clip passes the loss column holds: the array cycles are "
        "its forward and backward runs (DQN's: split in two after a target update), the "
        "update column its Adam walks (DDPG's: and its target walk), the total its count "
        "from start to done, the sequencer's hand-offs included), one "
        "state's inference in "
        "hrl_learn_engine (forward_cycles.md), or the step's array products alone in "
        "hrl_learn_mac_array (which checks the model's phases cycle for cycle; the loss and "
        "update passes then the model's). `model`: hrl/mapping/learner_schedule.py (DQN's "
        "step and the inference: the engine's runs of the step module's op tables, "
        "`run_cycles`, which the simulated rows check; DDPG's step: its seven runs' phases, "
        "which its simulated rows check). The loss and update cycles of a model row are the "
        "step modules' passes as the model counts them (the update column holds the Adam "
        "walks and DDPG's target walk; DQN's target update is its next step's split forward, "
        "in the array column; the target every step). "
        f"`us` at {clock_source}: "
        + ", ".join(f"{a} {v:g} MHz" for a, v in mhz.items()) + "; DDPG's rows at the "
        "clock with the DDPG kernel's row (clock.md's DDPG column): "
        + ", ".join(f"{a} {v:g} MHz" for a, v in mhz_ddpg.items()) + ". "
        "`utilization` = MACs / (R x C x array cycles). Inference: one state, the online net. "
        f"{n_sim} of the {len(rows)} rows simulated.",
    ]
    results_table.write(OUT, "cycles", rows, COLUMNS, head)
    return 0


if __name__ == "__main__":
    sys.exit(main())
