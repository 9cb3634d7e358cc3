"""Cycles of one whole DQN SGD step on the learning module (fpga_rtl/rtl/hrl_learn_step.v:
the engine's forward and backward runs, the loss unit, the Adam lanes and the target unit,
sequenced), counted in simulation, beside hrl/mapping/learner_schedule.step_cycles.

    python experiments/rtl/step_cycles.py          # -> experiments/results/fpga_learner/
                                                   #    step_cycles.{csv,md} (minutes)
    python experiments/rtl/step_cycles.py --slow   # also the SLOW points (batches 128 and
                                                   # 256, 32 x 32, 8 x 32, the wide nets)

Each point runs the step module's testbench (sim/hrl_learn_step, test_listed_steps) on
Verilator: a DQN net built by the fixed-point agent, two whole SGD steps with the state
carried in the module's banks, every master, moment, target, TD word and the saturations
checked against hrl.fixed_point.dqn.FixedDQN.sgd_step (a mismatch fails the run, and no row
is written), and the module's own counters read back (the step's, `st_start` to `st_done`,
and each phase's: forward run, loss unit, backward run, Adam update). The steps run
Polyak's target update every step (period 1): Adam's walk moves the target's masters and
the next step writes the target's operand words while its online forward ops run, then
runs the target's ops on their own. So the second step pays for the first's update and
the first (after `init`) pays for none: `sim_step_no_target`, a step between hard copies
when they come every `period` steps. The model is not fitted.

The points of one build (the array R x C, NMAX = the net's widest layer, BMAX = twice the
largest batch, s and s' stacked) run in one simulation, one net after another. The SLOW
points (batches 128 and 256, the 32 x 32 and 8 x 32 arrays, NMAX 128 and 256: each group a
Verilator build and a simulation of many minutes) run only with --slow (or --only-slow);
without it their rows are kept from the existing step_cycles.csv. `--nmax` and `--array`
pick points (`--only-slow --array 8x32`). The table is written after each build.
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
DQN = (4, 64, 64, 2)  # DQN CartPole's network
WIDE = [(4, 128, 128, 2), (4, 256, 256, 2)]  # two larger DQN nets (cycles.md's)
# (net, array rows R, columns C, batch)
# 4x4 at batch 1: the target's operand walk outlasts the online net's forward run, which
# the target's run then waits for (learner_schedule.dqn_target_cycles' other branch).
POINTS = [(DQN, 4, 4, 1), (DQN, 4, 4, 32), (DQN, 8, 8, 32), (DQN, 16, 16, 16),
          (DQN, 16, 16, 32), (DQN, 16, 16, 64)]
# Each group of SLOW is a build and a simulation of 15-30 min on a shared 2-core machine.
# 8 x 32: the 16 x 16's 256 processing elements in a wider shape (forward_cycles.py's).
SLOW = [(DQN, 16, 16, 128), (DQN, 16, 16, 256), (DQN, 32, 32, 32), (DQN, 32, 32, 64),
        (WIDE[0], 16, 16, 32), (WIDE[1], 16, 16, 32), (DQN, 8, 32, 32)]
SIM = "verilator"
TARGET_US = 25.0  # the floor for one DQN step, batch 32, on 16 x 16
COLUMNS = ["net", "batch", "array", "sim_forward", "sim_loss", "sim_backward", "sim_update",
           "sim_target", "sim_step", "sim_step_no_target", "model_array", "model_loss",
           "model_update", "model_target", "model_total", "step_ratio", "step_us",
           "step_us_no_target"]


def net_name(dims) -> str:
    return "-".join(map(str, dims))


def build_params(r: int, c: int, nmax: int, batch_max: int) -> dict:
    """The step module's parameters for nets up to `nmax` wide and batches up to
    `batch_max` on an R x C array (BMAX holds s and s' stacked)."""
    return {"R": r, "C": c, "AW": 18, "BW": 18, "OW": 24, "NMAX": nmax,
            "NL": len(DQN) - 1, "BMAX": 2 * batch_max, "AMAX": DQN[-1]}


def simulate(r: int, c: int, nets: list[tuple[tuple, int]]) -> list[dict]:
    """The step module's cycles of each (dims, batch)'s second step on an R x C array (the
    whole step and its phases; `fresh` the first step's, which no target update precedes),
    every word of both steps checked by the testbench; one build for all of `nets`."""
    prm = build_params(r, c, max(max(d) for d, _ in nets), max(b for _, b in nets))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cycles.json"
        rtl_runner.run("hrl_learn_step", prm, sources=rtl_runner.load_testbench(
            "hrl_learn_step").SOURCES, sim=SIM, testcase="test_listed_steps",
            env={"STEP_NETS": json.dumps([[list(d), b, 2] for d, b in nets]),
                 "STEP_CYCLES_OUT": str(out)})
        return [{**n["steps"][-1], "fresh": n["steps"][0]["cycles"]}
                for n in json.loads(out.read_text())]


def row(dims, r: int, c: int, batch: int, sim: dict, mhz: float) -> dict:
    """A point's row; `mhz` its array's clock."""
    model = ls.step_cycles("dqn", list(dims), batch, r, c)
    return {"net": net_name(dims), "batch": batch, "array": f"{r}x{c}",
            "sim_forward": sim["fwd"], "sim_loss": sim["loss"], "sim_backward": sim["bwd"],
            "sim_update": sim["upd"], "sim_target": sim["cycles"] - sim["fresh"],
            "sim_step": sim["cycles"], "sim_step_no_target": sim["fresh"],
            "model_array": model["array"], "model_loss": model["loss"],
            "model_update": model["update"], "model_target": model["target"],
            "model_total": model["total"],
            "step_ratio": round(sim["cycles"] / model["total"], 3),
            "step_us": round(sim["cycles"] / mhz, 2),
            "step_us_no_target": round(sim["fresh"] / mhz, 2)}


def _kept(points) -> dict:
    """Rows of the existing table for `points`, by (net, array, batch), the model's
    columns recomputed (the simulated ones are the RTL's, unchanged by the model)."""
    path = OUT / "step_cycles.csv"
    if not path.exists():
        return {}
    want = {(net_name(d), f"{r}x{c}", b): (d, r, c, b) for d, r, c, b in points}
    kept = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["net"], r["array"], int(r["batch"]))
            if key in want and r.get("sim_step_no_target"):  # (an older table: simulate)
                sim = {"fwd": int(r["sim_forward"]), "loss": int(r["sim_loss"]),
                       "bwd": int(r["sim_backward"]), "upd": int(r["sim_update"]),
                       "cycles": int(r["sim_step"]), "fresh": int(r["sim_step_no_target"])}
                kept[want[key]] = sim
    return kept


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--slow", action="store_true",
                    help="also simulate the SLOW points (else their rows are kept)")
    ap.add_argument("--only-slow", action="store_true",
                    help="simulate only the SLOW points; keep the other rows")
    ap.add_argument("--nmax", type=int, action="append", default=[],
                    help="only the points whose widest layer is this (repeatable)")
    ap.add_argument("--array", action="append", default=[],
                    help="only the points of this array, RxC (repeatable)")
    args = ap.parse_args(argv)
    arrays = {f"{r}x{c}" for _, r, c, _ in POINTS + SLOW}
    for a in args.array:
        if a not in arrays:
            ap.error(f"--array: {a!r} is the array of no point ({', '.join(sorted(arrays))})")
    run = (SLOW if args.only_slow else POINTS + SLOW if args.slow else POINTS)
    run = [p for p in run if (not args.nmax or max(p[0]) in args.nmax)
           and (not args.array or f"{p[1]}x{p[2]}" in args.array)]
    sims = {}
    builds: dict[tuple, list] = {}
    for dims, r, c, batch in run:
        builds.setdefault((r, c, max(dims)), []).append((dims, batch))
    for (r, c, nmax), nets in builds.items():
        started = time.time()
        for (dims, batch), sim in zip(nets, simulate(r, c, nets), strict=True):
            sims[(dims, r, c, batch)] = sim
        print(f"{r}x{c} NMAX {nmax}: {[b for _, b in nets]} in "
              f"{time.time() - started:.0f} s", flush=True)
        # Written after each build: the other rows as the table stands now (another run of
        # other points may have written it meanwhile), this run's so far.
        md = write_table({**_kept(POINTS + SLOW), **sims})
    if not builds:  # nothing to simulate (--nmax of no point): the table rewritten
        md = write_table(_kept(POINTS + SLOW))
    print(md.read_text())
    return 0


def write_table(sims: dict) -> Path:
    """step_cycles.{csv,md} of the points of `sims` ((dims, R, C, batch) -> counts)."""
    mhz = {f"{r}x{c}": learner_cycles.array_clock_mhz(f"{r}x{c}") for _, r, c, _ in POINTS + SLOW}
    rows = [row(*p, sims[p], mhz[f"{p[1]}x{p[2]}"]) for p in POINTS + SLOW if p in sims]
    missing = [f"{net_name(d)} {r}x{c} batch {b}" for d, r, c, b in POINTS + SLOW
               if (d, r, c, b) not in sims]
    worst = max(rows, key=lambda r: abs(r["step_ratio"] - 1))
    head = [
        "# FPGA learner: one whole DQN SGD step, simulated, beside the model",
        "",
        "Regenerate: `python experiments/rtl/step_cycles.py` (the points of 4x4 to 16x16 up "
        "to batch 64; the rows of batches 128 and 256, of 32x32 and of the nets wider than "
        "64, each build a slow one, are kept from the last `--slow` run, which simulates "
        "them too; `--only-slow --nmax W` those of width W alone). `sim_*`: hrl_learn_step "
        "simulated in Verilator, two whole SGD steps of the net with the state carried in "
        "the module's banks, every master, moment, target and TD word and the saturations "
        "checked against hrl.fixed_point.dqn.FixedDQN.sgd_step; the second step's cycles by "
        "the module's own counters: `sim_forward` the engine's forward run (the online net on "
        "s and s' stacked, the target net on s'), `sim_loss` the loss unit's pass (three bank "
        "reads per sample), `sim_backward` the engine's backward run (backward ops, weight and "
        "bias gradients), `sim_update` the Adam lanes' pass over every parameter (C per "
        "cycle, the operand words written back, the target's masters updated beside them: "
        "Polyak, every step here), `sim_step` all of it from `st_start` to `st_done` (the "
        "phases and the sequencer's hand-offs), `sim_step_no_target` the first step's (no "
        "target update before it), `sim_target` the difference: what the previous step's "
        "target update costs this one (its forward is two engine runs, the online net's, "
        "beside which the target's operand words are written, then the target's). Each "
        "build holds its nets' widest layer "
        "(NMAX) and twice the largest batch (BMAX, s and s' stacked). `model_*`: "
        "hrl/mapping/learner_schedule.py `step_cycles` at target_period 1 (`array` the "
        "forward and backward products, against `sim_forward` + `sim_backward`; `loss`, "
        "`update` the step module's passes, whose constants its simulated phases set; "
        "`target` the split forward's cost, `dqn_target_cycles`); `step_ratio` = sim_step / "
        "model_total. `step_us` at the "
        f"{learner_cycles.CLOCK_SOURCE}: "
        + ", ".join(f"{a} {v:g} MHz" for a, v in mhz.items()) + "; `step_us_no_target` a "
        "step that no target update precedes (a hard copy every `period` steps, between "
        "copies).",
    ]
    goal = [r for r in rows if r["array"] == "16x16" and r["batch"] == 32
            and r["net"] == net_name(DQN)]

    def holds(us: float) -> str:
        return "meets it" if us <= TARGET_US else "misses it"

    foot = [
        f"The issue's target, one DQN step of 4-64-64-2 at batch 32 on 16x16 in at most "
        f"{TARGET_US:g} us: "
        + "; ".join(f"{r['step_us']} us simulated with a Polyak target update "
                    f"({r['sim_step']} cycles, {holds(r['step_us'])}), "
                    f"{r['step_us_no_target']} us without one "
                    f"({holds(r['step_us_no_target'])}), at 16x16's {mhz['16x16']:g} MHz"
                    for r in goal)
        + "."
        + " DQN CartPole's config copies the target every 100 steps, so its steps cost "
        "`step_us_no_target` but one in 100. The target update costs Adam's walk no cycle "
        "(C target lanes beside its operand lanes); the target's operand words wait for the "
        "next step, whose engine runs the online net's forward ops while a walk writes them "
        "through the weight bank's host port (the engine reads that bank, never writes it), "
        "so only the split of the forward run into two remains. The loss unit reads three Q "
        "rows per sample through the engine's host port: Q(s), the online Q(s') and the "
        "target's Q'(s'). The forward and backward runs are the engine's (the loss unit "
        "between them: two runs, a few hand-off cycles each).",
        "",
        *[f"The same 256 processing elements as {r['array']} (a wider shape; "
          f"forward_cycles.md has its inference): {r['step_us']} us with the Polyak update "
          f"({r['sim_step']} cycles), {r['step_us_no_target']} us without one, at its "
          f"{mhz['8x32']:g} MHz."
          for r in rows if r["array"] == "8x32" and r["batch"] == 32
          and r["net"] == net_name(DQN)],
        "",
        f"The model against the simulated step: step_ratio {min(r['step_ratio'] for r in rows)}"
        f" to {max(r['step_ratio'] for r in rows)} (furthest: {worst['net']} "
        f"{worst['array']} batch {worst['batch']}).",
    ]
    if missing:
        foot += ["", "Not simulated yet (no `--slow` run has written them): "
                 + "; ".join(missing) + "."]
    return results_table.write(OUT, "step_cycles", rows, COLUMNS, head, foot)


if __name__ == "__main__":
    sys.exit(main())
