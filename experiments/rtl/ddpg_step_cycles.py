"""Cycles of one whole DDPG SGD step on the learning module (fpga_rtl/rtl/
hrl_learn_step_ddpg.v: the engine's seven runs, the loss unit's critic and actor rows, the
action clips, both Adam walks and the target walk, sequenced), counted in simulation, beside
hrl/mapping/learner_schedule.step_cycles("ddpg", ...).

    python experiments/rtl/ddpg_step_cycles.py   # -> experiments/results/fpga_learner/
                                                 #    ddpg_step_cycles.{csv,md}

Each point runs the step module's testbench (sim/hrl_learn_step_ddpg, test_listed_steps) on
Verilator: Pendulum's actor 3-64-64-1 and critic 4-64-64-1 (experiments/configs/
ddpg_pendulum.yaml) built by the fixed-point agent, two whole SGD steps with the state
carried in the module's banks, every master, moment, target, TD word and the saturations
checked against hrl.fixed_point.ddpg.FixedDDPG.sgd_step, and the module's own counters read
back (the step's, `st_start` to `st_done`, and each phase's). The steps run Polyak's target
update every step (the config's tau 0.005, period 1). The model is not fitted: its loss,
clip, update and target constants are the module's structure (learner_schedule's header).
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import learner_cycles  # noqa: E402
import rtl_runner  # noqa: E402

from hrl.mapping import learner_schedule as ls  # noqa: E402

OUT = learner_cycles.OUT
ACTOR, CRITIC = (3, 64, 64, 1), (4, 64, 64, 1)  # ddpg_pendulum.yaml's nets
POINTS = [(16, 32), (16, 64)]  # (array size, batch)
BMAX = 64  # the module's largest batch: one build per array size
SIM = "verilator"
COLUMNS = ["actor", "critic", "batch", "array", "sim_forward", "sim_loss", "sim_clip",
           "sim_backward", "sim_update", "sim_target", "sim_step", "model_array",
           "model_loss", "model_update", "model_target", "model_total", "step_ratio",
           "step_us"]


def simulate(size: int, batch: int) -> dict:
    """The step module's cycles of the second of two Pendulum steps on an R = C = size array
    (the whole step and its phases), every word of both steps checked by the testbench."""
    prm = {"R": size, "C": size, "AW": 18, "BW": 18, "OW": 24, "NMAX": 64,
           "NL": len(ACTOR) + len(CRITIC) - 2, "BMAX": BMAX, "AMAX": ACTOR[-1]}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_step_ddpg", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_step_ddpg").SOURCES, sim=SIM, testcase="test_listed_steps",
            env={"STEP_NETS": json.dumps([[list(ACTOR), list(CRITIC), batch, 2]]),
                 "STEP_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())[0]["steps"][-1]


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    mhz = {size: learner_cycles.array_clock_mhz(f"{size}x{size}", "ddpg") for size, _ in POINTS}
    rows = []
    for size, batch in POINTS:
        started = time.time()
        sim = simulate(size, batch)
        print(f"{size}x{size} batch {batch}: {time.time() - started:.0f} s", flush=True)
        model = ls.step_cycles("ddpg", list(ACTOR), batch, size, size, critic=list(CRITIC))
        rows.append({"actor": "-".join(map(str, ACTOR)), "critic": "-".join(map(str, CRITIC)),
                     "batch": batch, "array": f"{size}x{size}",
                     "sim_forward": sim["fwd"], "sim_loss": sim["loss"],
                     "sim_clip": sim["clip"], "sim_backward": sim["bwd"],
                     "sim_update": sim["upd"], "sim_target": sim["tgt"],
                     "sim_step": sim["cycles"], "model_array": model["array"],
                     "model_loss": model["loss"], "model_update": model["update"],
                     "model_target": model["target"], "model_total": model["total"],
                     "step_ratio": round(sim["cycles"] / model["total"], 3),
                     "step_us": round(sim["cycles"] / mhz[size], 2)})
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "ddpg_step_cycles.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# FPGA learner: one whole DDPG SGD step, simulated, beside the model",
        "",
        "Regenerate: `python experiments/rtl/ddpg_step_cycles.py`. `sim_*`: "
        "hrl_learn_step_ddpg simulated in Verilator, two whole SGD steps of Pendulum's actor "
        "and critic (experiments/configs/ddpg_pendulum.yaml) with the state carried in the "
        "module's banks, every master, moment, target and TD word and the saturations "
        "checked against hrl.fixed_point.ddpg.FixedDDPG.sgd_step; the second step's cycles "
        "by the module's own counters: `sim_forward` the engine's four forward runs (the "
        "target actor on s' with the critic on (s, a), the target critic on (s', mu'(s')), "
        "the actor on s, the updated critic on (s, mu(s))), `sim_loss` the loss unit's "
        "critic rows (two Q rows read per sample) and actor rows, `sim_clip` the three clip "
        "passes (mu'(s') and mu(s) into the critics' inputs, the clip's backward pass), "
        "`sim_backward` the engine's three backward runs (the critic's gradients, dQ/da "
        "through the updated critic, the actor's gradients), `sim_update` the two Adam "
        "walks (C parameters a cycle, the operand words written back), `sim_target` the "
        "target walk over both nets (Polyak, every step here), `sim_step` all of it from "
        "`st_start` to `st_done`. `model_*`: hrl/mapping/learner_schedule.py `step_cycles` "
        "(`array` the seven runs' products, against `sim_forward` + `sim_backward`; `loss` "
        "the loss rows and the clips, against `sim_loss` + `sim_clip`; `update`, `target` "
        "the walks); `step_ratio` = sim_step / model_total. `step_us` at "
        + learner_cycles.CLOCK_SOURCE + ", with the DDPG kernel's own row (clock.md's DDPG "
        "column): "
        + ", ".join(f"{s}x{s} {v:g} MHz" for s, v in mhz.items()) + ".",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    (OUT / "ddpg_step_cycles.md").write_text("\n".join(lines) + "\n")
    print((OUT / "ddpg_step_cycles.md").read_text())


if __name__ == "__main__":
    main()
