"""The learner's clock tables (experiments/rtl/learner_clock.py): the rule, the path parser,
each array's clock, and the committed clock.csv against resources.md and clock.md."""

import csv
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "rtl"))

import learner_clock  # noqa: E402

OUT = REPO / "experiments" / "results" / "fpga_learner"


def test_rule_is_the_rmm_s():
    """1000 / (1 + max(0.5 x levels, sta)): 8 levels and 4 ns are 200 MHz, and a path
    longer than the levels allow sets the clock."""
    assert learner_clock.est_mhz(8, 3.94) == 200
    assert learner_clock.est_mhz(16, 9.36) == 97
    assert learner_clock.est_mhz(2, 4.0) == 200


def test_path_sources_in_order_each_once():
    sta = ("Latest arrival time in 'top' is 900:\n"
           "  900 $flatten\\a.$gt$/x/hrl_learn_loss_dqn.v:70$1.Y (LUT2)\n"
           "  800 $flatten\\a.$gt$/x/hrl_learn_loss_dqn.v:69$2.Y (LUT2)\n"
           "  700 $flatten\\b.$gt$/x/hrl_learn_loss_dqn.v:70$3.Y (LUT2)\n"
           "  100 \\e.$add$/x/hrl_learn_engine.v:391$4.Y (FDRE)\n"
           "Arrival histogram:\n  hrl_learn_adam.v:1 not on the path\n")
    assert learner_clock.path_sources(sta) == (
        "hrl_learn_engine:391 hrl_learn_loss_dqn:70 hrl_learn_loss_dqn:69")
    named = ("Latest arrival time in 'k' is 900:\n"
             "  900 $abc$1 (LUT6.I2->O)\n           \\g_step.step.engine.w_bank_inst.wr_addr [12]\n"
             "  400 $abc$2 (LUT2.I1->O)\n           \\g_step.step.c_b [0]\n"
             "Arrival histogram:\n")
    assert learner_clock.path_sources(named) == "g_step.step g_step.step.engine.w_bank_inst"


def test_committed_tables_agree():
    """clock.csv has every unit and the kernel; its array narrowing row is the clock that
    resources.md states (which the cycle tables' microseconds use), and no row is faster
    than the rule allows for its own levels and delay."""
    with open(OUT / "clock.csv", newline="") as f:
        rows = {r["design"]: r for r in csv.DictReader(f)}
    arrays = {name for a in learner_clock.ARRAYS for name, *_ in learner_clock.array_designs(a)}
    assert set(rows) == ({name for name, *_ in learner_clock.UNITS} | {learner_clock.KERNEL}
                         | {learner_clock.KERNEL_DDPG} | arrays)
    for r in rows.values():
        assert int(r["est_MHz"]) == learner_clock.est_mhz(int(r["lut_levels"]),
                                                         float(r["sta_ns"])), r
    stated = re.search(r"\*\*(\d+) MHz\*\*", (OUT / "resources.md").read_text())
    assert stated and int(stated.group(1)) == int(rows["narrowing (array)"]["est_MHz"])
    kernel = int(rows[learner_clock.KERNEL]["est_MHz"])
    assert f"as written: {kernel} MHz" in (OUT / "clock.md").read_text()


def test_cycle_table_at_each_arrays_clock():
    """cycles.csv states each array's times at that array's clock from clock.csv (DDPG's
    rows at its kernel's)."""
    with open(OUT / "clock.csv", newline="") as f:
        clock_rows = list(csv.DictReader(f))
    with open(OUT / "cycles.csv", newline="") as f:
        for r in csv.DictReader(f):
            algo = "ddpg" if r["net"].startswith("ddpg") else "dqn"
            mhz, _ = learner_clock.array_clock(clock_rows, r["array"], algo)
            assert float(r["us"]) == round(int(r["total_cycles"]) / mhz, 2), r


def test_array_clock_picks_the_rows_of_its_lanes():
    """An array's clock is the slowest of the kernel's row and its lane counts' rows; a lane
    count without rows takes the next one above, none above is an error."""
    def row(design, mhz):
        return {"design": design, "est_MHz": str(mhz)}

    rows = [row(learner_clock.KERNEL, 188), row("bank, 16 lanes", 198),
            row("activation, 16 lanes", 200), row("bank, 32 lanes", 190),
            row("activation, 32 lanes", 185), row("engine, 32 lanes (8x32)", 192),
            row("walk, 32 lanes (8x32)", 187), row("walk, 16 lanes (16x16)", 170)]
    assert learner_clock.array_clock(rows, "4x4") == (188, [learner_clock.KERNEL])
    assert learner_clock.array_clock(rows, "16x16") == (170, ["walk, 16 lanes (16x16)"])
    assert learner_clock.array_clock(rows, "8x8") == (170, ["walk, 16 lanes (16x16)"])
    assert learner_clock.array_clock(rows, "8x32") == (185, ["activation, 32 lanes"])
    # 32 x 8: the bank and the engine at 32 lanes, the activation unit and walk at 8 (16)
    assert learner_clock.array_clock(rows, "32x8") == (170, ["walk, 16 lanes (16x16)"])
    with pytest.raises(ValueError, match="no design at 64 lanes"):
        learner_clock.array_clock(rows, "64x64")
    # DDPG's clock: the DDPG kernel's row counts too, and only for DDPG
    rows.append(row(learner_clock.KERNEL_DDPG, 180))
    assert learner_clock.array_clock(rows, "4x4") == (188, [learner_clock.KERNEL])
    assert learner_clock.array_clock(rows, "4x4", "ddpg") == (180, [learner_clock.KERNEL_DDPG])
    assert learner_clock.array_clock(rows, "16x16", "ddpg") == (170,
                                                                ["walk, 16 lanes (16x16)"])
    # ... and DDPG's walk rows, for DDPG only
    rows.append(row("DDPG walk, 32 lanes (8x32)", 175))
    assert learner_clock.array_clock(rows, "8x32") == (185, ["activation, 32 lanes"])
    assert learner_clock.array_clock(rows, "8x32", "ddpg") == (175,
                                                               ["DDPG walk, 32 lanes (8x32)"])
