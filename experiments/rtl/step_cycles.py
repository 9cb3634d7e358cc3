"""Cycles of the array's part of one DQN SGD step on the engine (fpga_rtl/rtl/
hrl_learn_engine.v), counted in simulation, beside hrl/mapping/learner_schedule.step_cycles.

    python experiments/rtl/step_cycles.py        # -> experiments/results/fpga_learner/
                                                 #    step_cycles.{csv,md}

Each point runs the engine's testbench (sim/hrl_learn_engine, test_step_products) on Icarus:
one op table holding DQN's products of a step (the online net on s and s' stacked, 2B rows;
the target net on s', B rows; the backward pass of the online net on the first B rows from
an output delta: per layer its masked backward op, chained, then the weight and bias
gradients), every output and gradient word checked against hrl.fixed_point.layers
(mlp_forward, mlp_backward), and the engine's own cycle counter (`start` to `done`) read
back. The loss unit, the Adam lanes and the target update are not sequenced by the engine
yet: their cycles are learner_schedule's (`loss`, `update`: counted from the units'
throughput and latency, not simulated), and `step_us` adds them to the simulated array
count. The model is not fitted.
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
POINTS = [(4, 32), (8, 32), (16, 16), (16, 32)]  # (array size, batch)
SIM = "icarus"
TARGET_US = 25.0  # the floor for one DQN step, batch 32, on 16 x 16
COLUMNS = ["net", "batch", "array", "sim_array_cycles", "model_array_cycles", "difference",
           "ratio", "macs", "utilization", "model_loss_cycles", "model_update_cycles",
           "step_cycles", "step_us"]


def simulate(size: int, batch: int) -> int:
    """The engine's cycles for the array's part of DQN's step on an R = C = size array,
    every word checked by the testbench."""
    prm = {"R": size, "C": size, "AW": 18, "BW": 18, "OW": 24, "NMAX": max(DQN),
           "NL": len(DQN) - 1, "BMAX": 2 * batch, "BSMAX": 24, "SW": 32}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_engine", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_engine").SOURCES, sim=SIM, testcase="test_step_products",
            env={"STEP_NETS": json.dumps([[list(DQN), batch]]),
                 "STEP_CYCLES_OUT": str(out)})
        return json.loads(out.read_text())[0]


def main() -> None:
    mhz = learner_cycles.clock_mhz()
    rows = []
    for size, batch in POINTS:
        started = time.time()
        sim = simulate(size, batch)
        print(f"{size}x{size} batch {batch}: {time.time() - started:.0f} s", flush=True)
        model = ls.step_cycles("dqn", list(DQN), batch, size, size)
        step = sim + model["loss"] + model["update"]
        rows.append({"net": "-".join(map(str, DQN)), "batch": batch, "array": f"{size}x{size}",
                     "sim_array_cycles": sim, "model_array_cycles": model["array"],
                     "difference": sim - model["array"],
                     "ratio": round(sim / model["array"], 3), "macs": model["macs"],
                     "utilization": round(model["macs"] / (size * size * sim), 3),
                     "model_loss_cycles": model["loss"],
                     "model_update_cycles": model["update"], "step_cycles": step,
                     "step_us": round(step / mhz, 2)})
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "step_cycles.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# FPGA learner: the array's part of a DQN SGD step, simulated, beside the model",
        "",
        "Regenerate: `python experiments/rtl/step_cycles.py`. `sim_array_cycles`: "
        "hrl_learn_engine simulated in Icarus, one op table with the products of DQN's step "
        "(the online net on s and s' stacked, the target net on s', the online net's backward "
        "pass with its weight and bias gradients), every output and gradient word checked "
        "against hrl.fixed_point.layers, counted by the engine's own counter from `start` to "
        "`done`. `model_array_cycles`: hrl/mapping/learner_schedule.py `step_cycles`'s `array` "
        "(the same products as dependent phases, DEP_GAP between them; it fuses the bias "
        "gradient into the weight gradient's tiles as a row of ones, the engine runs it as an "
        "op of its own). `model_loss_cycles` and `model_update_cycles` are the model's: the "
        "loss unit and the Adam and target lanes exist in RTL but the engine does not sequence "
        "them yet, so they are not simulated here. `step_cycles` = simulated array + modeled "
        f"loss and update; `step_us` at the clock estimated by yosys, {mhz:.0f} MHz "
        "(resources.md). `utilization` = MACs / (R x C x sim_array_cycles).",
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
        + "; ".join(f"{r['step_us']} us ({r['sim_array_cycles']} simulated array cycles + "
                    f"{r['model_loss_cycles'] + r['model_update_cycles']} modeled)"
                    for r in goal)
        + ". The engine overlaps what the model runs one after another: a chained layer (forward "
        "after forward, backward after backward) starts on the tiles of the previous one as "
        "they are written, and an op marked independent (the target net's first layer, the "
        "gradients) issues while its predecessor drains; the bias gradient is an op of its "
        "own (B beats per tile of one row), where the model fuses it into the weight "
        "gradient's tiles. The loss, Adam and target cycles are the model's until the engine "
        "sequences those units.",
    ]
    (OUT / "step_cycles.md").write_text("\n".join(lines) + "\n")
    print((OUT / "step_cycles.md").read_text())


if __name__ == "__main__":
    main()
