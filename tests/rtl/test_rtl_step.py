"""The learning module's whole DQN SGD step (fpga_rtl/rtl/hrl_learn_step.v: the engine, the
loss unit and the parameter walks (hrl_learn_walk.v: the Adam lanes, the target unit, the
optimizer's state in its banks) sequenced): its cocotb testbench's sweep
(sim/hrl_learn_step/: whole steps, state carried from step to step, bit for bit against
hrl.fixed_point.dqn.FixedDQN.sgd_step), Verilator -Wall lint, $fatal on illegal parameters,
and mutation tests: the testbench must fail against a copy of the step module, or of its
walk module, with one deliberate bug.

As tests/rtl/test_rtl_engine.py: a missing tool skips with the reason outside CI and fails
under CI=true; the Icarus set, the lint of the default set and the $fatal checks run in
`make test`; in the long tier, the Verilator sets (1000 whole steps on R4-C4, 100 on the
skewed arrays), the wider lints and three mutants (a minute or more each on Icarus); in
the slow tier (`make test-slow`), 1000 steps on the skewed arrays, a few on 16 x 16 and the
other three mutants.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))

import learn_tb  # noqa: E402
import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw

globals().update(rtl_runner.sweeps("hrl_learn_step", "test_hrl_learn_step"))

TOP = "hrl_learn_step"
SRCS = ["hrl_learn_narrow.v",
        "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v", "hrl_learn_weight_bank.v",
        "hrl_learn_activation.v", "hrl_learn_engine.v", "hrl_learn_td.v", "hrl_learn_loss_dqn.v",
        "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v", "hrl_delay.v", "hrl_learn_adam.v",
        "hrl_learn_target.v", "hrl_learn_walk.v", "hrl_learn_step.v"]
# The mutants' set: they need only fail, and a small module builds and runs fast.
SMALL = {"R": 4, "C": 4, "AW": 18, "BW": 18, "OW": 24, "NMAX": 16, "NL": 3, "BMAX": 16,
         "AMAX": 4}


@pytest.mark.parametrize("prm", [
    pytest.param({}, id="default"),
    pytest.param({"R": 2, "C": 8, "NMAX": 24, "NL": 3, "BMAX": 10}, id="R2-C8",
                 marks=pytest.mark.long),
    pytest.param({"R": 8, "C": 2, "NL": 1, "BMAX": 2, "AMAX": 2}, id="R8-C2-NL1",
                 marks=pytest.mark.long),
    pytest.param({"R": 16, "C": 16, "NMAX": 128, "BMAX": 64, "AMAX": 16}, id="R16-C16",
                 marks=pytest.mark.long),
])
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"AMAX": 5}, r"AMAX=5 must be in 1..max\(R, C\)=4"),
    ({"WWID": 20}, r"WWID=20 must be in 2..BW=18"),
    ({"BMAX": 1}, r"BMAX=1 must be at least 2"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, bad, tmp_path)
    assert re.search(pattern, text), text


# The mutated file: the step module or its walks' (hrl_learn_walk, which this testbench
# covers as the DDPG step's does).
STEP, WALK = "hrl_learn_step.v", "hrl_learn_walk.v"
MUTATIONS = [
    # The target updated one step late (due when train_steps, not train_steps + 1, is a
    # multiple of the period).
    pytest.param(STEP, r"due <= c_phase \+ 1'b1 >= c_period;",
                 "due <= c_phase >= c_period;", "target-late", id="target-late"),
    # The online net's operand words not written back (the next step reads stale weights).
    pytest.param(WALK, r"assign wr_en = t_out_v && o_v;",
                 "assign wr_en = t_out_v && o_v && o_tgt;", "no-operand-writeback",
                 id="no-operand-writeback"),
    # The loss unit's output delta written with its sign flipped (gradient ascent).
    pytest.param(STEP, r"assign lo_wdata\[g\*HW \+: HW\] = \{\{\(HW-DLW\)\{d\[DLW-1\]\}\}, d\};",
                 "assign lo_wdata[g*HW +: HW] = -{{(HW-DLW){d[DLW-1]}}, d};",
                 "delta-sign", id="delta-sign"),
    # Q(s) taken a cycle early, at the bank's 4 cycles (the engine's host-port register
    # ignored): the loss unit reads the previous read's row.
    pytest.param(STEP, r"if \(ra_v && ra_s == 2'd0\) g_q <= rd_vals;",
                 "if (r_v[HOST_RD-1] && r_s[HOST_RD-1] == 2'd0) g_q <= rd_vals;", "early-q-read",
                 id="early-q-read", marks=pytest.mark.slow),
    # Adam's decay words swapped (1 - beta2 for 1 - beta1).
    pytest.param(WALK, r"\.c1\(c1\), \.c2\(c2\)", ".c1(c2), .c2(c1)", "adam-c1-c2",
                 id="adam-c1-c2",
                 marks=pytest.mark.slow),
    # Polyak's mode ignored in Adam's walk: every target update a hard copy.
    pytest.param(WALK, r"\.in_copy\(!polyak\)", ".in_copy(1'b1)", "polyak-as-copy",
                 id="polyak-as-copy", marks=pytest.mark.slow),
    # The target's masters updated but its operand words never rewritten: the next step's
    # target net reads the words of before the update.
    pytest.param(STEP, r"tg_stale <= due;", "tg_stale <= 1'b0;", "target-words-stale",
                 id="target-words-stale", marks=pytest.mark.slow),
    # The engine refusing the host's weight writes while busy (as for its other banks): the
    # target's operand walk, which runs beside the online net's forward ops, writes nothing.
    pytest.param("hrl_learn_engine.v",
                 r"hwb <= h_wr_en && \(h_wr_sel == 2'd1 \|\| h_wr_sel == 2'd2\) && !rst;",
                 "hwb <= h_wr_en && (h_wr_sel == 2'd1 || h_wr_sel == 2'd2) && !busy && !rst;",
                 "busy-drops-weight-writes", id="busy-drops-weight-writes",
                 marks=pytest.mark.slow),
    # The walk's saturation count by groups of four lanes skipping each group's first lane.
    pytest.param(WALK, r"for \(k = 0; k < 4; k = k \+ 1\) begin",
                 "for (k = 1; k < 4; k = k + 1) begin", "group-sats-short",
                 id="group-sats-short", marks=pytest.mark.slow),
    # The saturations of the online net's operand rounding (the previous step's) not counted.
    pytest.param(STEP, r"acc_sat <= nop_on;",
                 "acc_sat <= {SW{1'b0}};",
                 "no-operand-sats", id="no-operand-sats",
                 marks=pytest.mark.slow),
]


# Each mutant builds and runs the testbench on Icarus (one to three minutes): three in the
# long tier, the others in the slow tier (`make test-slow`).
@pytest.mark.long
@pytest.mark.parametrize("target,pattern,repl,name", MUTATIONS)
def test_testbench_catches_mutation(target, pattern, repl, name, monkeypatch):
    """The testbench fails against the step module (or its walk) with one deliberate bug
    (its random steps on Icarus; the target update forced to Polyak for `polyak-as-copy`,
    the masters to full-range words, whose operands saturate, for `no-operand-sats` and
    `group-sats-short`)."""
    rtl_runner.require("icarus")
    if name == "polyak-as-copy":
        monkeypatch.setenv("STEP_TB_TARGET", "polyak")
    if name in ("no-operand-sats", "group-sats-short"):
        monkeypatch.setenv("STEP_TB_WILD", "1")
    assert learn_tb.mutation_kills(TOP, SRCS, target, pattern, repl, SMALL, name), (
        f"the {TOP} testbench passed against the mutant {name!r} of {target}")
