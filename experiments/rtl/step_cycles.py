"""Cycles of one whole DQN SGD step on the learning module (fpga_rtl/rtl/hrl_learn_step.v:
the engine's forward and backward runs, the loss unit, the Adam lanes and the target unit,
sequenced), counted in simulation, beside hrl/mapping/learner_schedule.step_cycles.

    python experiments/rtl/step_cycles.py        # -> experiments/results/fpga_learner/
                                                 #    step_cycles.{csv,md}

Each point runs the step module's testbench (sim/hrl_learn_step, test_listed_steps) on
Verilator: DQN's 4-64-64-2 built by the fixed-point agent, two whole SGD steps with the
state carried in the module's banks, every master, moment, target, TD word and the
saturations checked against hrl.fixed_point.dqn.FixedDQN.sgd_step, and the module's own
counters read back (the step's, `st_start` to `st_done`, and each phase's: forward run,
loss unit, backward run, Adam update, target update). The steps run Polyak's target update
every step (period 1), so each has a target phase; a hard copy every `period` steps has
it once per period (`step_us_no_target` is such a step between copies). The model is not
fitted.
"""

from __future__ import annotations

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
import rtl_runner  # noqa: E402

from hrl.mapping import learner_schedule as ls  # noqa: E402

OUT = learner_cycles.OUT
DQN = (4, 64, 64, 2)  # DQN CartPole's network
POINTS = [(4, 32), (8, 32), (16, 16), (16, 32), (16, 64)]  # (array size, batch)
BMAX = 128  # the module's largest batch (of s and s' stacked): one build per array size
SIM = "verilator"
TARGET_US = 25.0  # the floor for one DQN step, batch 32, on 16 x 16
COLUMNS = ["net", "batch", "array", "sim_forward", "sim_loss", "sim_backward", "sim_update",
           "sim_target", "sim_step", "model_array", "model_loss", "model_update",
           "model_target", "model_total", "step_ratio", "step_us", "step_us_no_target"]


def simulate(size: int, batch: int) -> dict:
    """The step module's cycles of DQN's second step on an R = C = size array (the whole
    step and its phases), every word of both steps checked by the testbench."""
    prm = {"R": size, "C": size, "AW": 18, "BW": 18, "OW": 24, "NMAX": max(DQN),
           "NL": len(DQN) - 1, "BMAX": BMAX, "AMAX": DQN[-1]}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_step", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_step").SOURCES, sim=SIM, testcase="test_listed_steps",
            env={"STEP_NETS": json.dumps([[list(DQN), batch, 2]]),
                 "STEP_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())[0]["steps"][-1]


def main() -> None:
    mhz = learner_cycles.clock_mhz()
    rows = []
    for size, batch in POINTS:
        started = time.time()
        sim = simulate(size, batch)
        print(f"{size}x{size} batch {batch}: {time.time() - started:.0f} s", flush=True)
        model = ls.step_cycles("dqn", list(DQN), batch, size, size)
        rows.append({"net": "-".join(map(str, DQN)), "batch": batch, "array": f"{size}x{size}",
                     "sim_forward": sim["fwd"], "sim_loss": sim["loss"],
                     "sim_backward": sim["bwd"], "sim_update": sim["upd"],
                     "sim_target": sim["tgt"], "sim_step": sim["cycles"],
                     "model_array": model["array"], "model_loss": model["loss"],
                     "model_update": model["update"], "model_target": model["target"],
                     "model_total": model["total"],
                     "step_ratio": round(sim["cycles"] / model["total"], 3),
                     "step_us": round(sim["cycles"] / mhz, 2),
                     "step_us_no_target": round((sim["cycles"] - sim["tgt"]) / mhz, 2)})
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "step_cycles.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# FPGA learner: one whole DQN SGD step, simulated, beside the model",
        "",
        "Regenerate: `python experiments/rtl/step_cycles.py`. `sim_*`: hrl_learn_step "
        "simulated in Verilator, two whole SGD steps of DQN's net with the state carried in "
        "the module's banks, every master, moment, target and TD word and the saturations "
        "checked against hrl.fixed_point.dqn.FixedDQN.sgd_step; the second step's cycles by "
        "the module's own counters: `sim_forward` the engine's forward run (the online net on "
        "s and s' stacked, the target net on s'), `sim_loss` the loss unit's pass (three bank "
        "reads per sample), `sim_backward` the engine's backward run (backward ops, weight and "
        "bias gradients), `sim_update` the Adam lanes' pass over every parameter (C per "
        "cycle, the operand words written back), `sim_target` the target unit's pass "
        "(Polyak, every step here), `sim_step` all of it from `st_start` to `st_done` (the "
        "phases and the sequencer's hand-offs). `model_*`: "
        "hrl/mapping/learner_schedule.py `step_cycles` at target_period 1 (`array` the "
        "forward and backward products, against `sim_forward` + `sim_backward`; `loss`, "
        "`update` and `target` the step module's passes, whose constants its simulated "
        "phases set); `step_ratio` = sim_step / model_total. `step_us` at the "
        f"clock estimated by yosys, {mhz:.0f} MHz (resources.md); `step_us_no_target` a step "
        "without the target pass (a hard copy every `period` steps, between copies).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    goal = [r for r in rows if r["array"] == "16x16" and r["batch"] == 32]
    lines += [
        "",
        f"The issue's target, one DQN step of 4-64-64-2 at batch 32 on 16x16 in at most "
        f"{TARGET_US:g} us: "
        + "; ".join(f"{r['step_us']} us simulated with a Polyak target update "
                    f"({r['sim_step']} cycles), {r['step_us_no_target']} us without one"
                    for r in goal)
        + ". DQN CartPole's config copies the target every 100 steps, so its steps cost "
        "`step_us_no_target` but one in 100. The target pass is a second walk over the "
        "parameters after Adam's: the engine's weight bank has one host write port, which "
        "the online net's operand words take in Adam's walk (the model before this module "
        "ran the Adam and target lanes side by side in one pass, and counted one cycle a "
        "sample for the loss unit, which reads three Q rows per sample through the engine's "
        "host port: Q(s), the online Q(s') and the target's Q'(s')). The forward and backward "
        "runs are the engine's, as the array's table counted them before (the loss unit "
        "between them: two runs, a few hand-off cycles each).",
    ]
    (OUT / "step_cycles.md").write_text("\n".join(lines) + "\n")
    print((OUT / "step_cycles.md").read_text())


if __name__ == "__main__":
    main()
