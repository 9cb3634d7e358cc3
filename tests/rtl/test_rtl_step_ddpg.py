"""The learning module's whole DDPG SGD step (fpga_rtl/rtl/hrl_learn_step_ddpg.v: the engine,
the DDPG loss unit, the action clips and the parameter walks (hrl_learn_walk.v: the Adam
lanes, the target unit, both nets' optimizer state in its banks) sequenced): its cocotb
testbench's sweep (sim/hrl_learn_step_ddpg/: whole steps, state carried from step to step,
bit for bit against hrl.fixed_point.ddpg.FixedDDPG.sgd_step), Verilator -Wall lint, $fatal
on illegal parameters, and mutation tests: the testbench must fail against a copy of the
step module, or of its walk module, with one deliberate bug.

As tests/rtl/test_rtl_step.py: a missing tool skips with the reason outside CI and fails
under CI=true; the lint of the default set and the $fatal checks run in `make test`; every
bit-for-bit set compiles the reference's step first (a minute or more on 2 cores shared), so
the Icarus set (two steps of one random pair of nets), the Verilator set of 100 whole steps
on R4-C4, the wider lints and the mutants (a few minutes each on Icarus) run in the long
tier (CI); 1000 whole steps on R4-C4 and a few on 16 x 16 (Pendulum's nets at batch 32) in
the slow tier (`make test-slow`).
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

globals().update(rtl_runner.sweeps("hrl_learn_step_ddpg", "test_hrl_learn_step_ddpg"))

TOP = "hrl_learn_step_ddpg"
SRCS = ["hrl_learn_narrow.v",
        "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v", "hrl_learn_weight_bank.v",
        "hrl_learn_activation.v", "hrl_learn_engine.v", "hrl_learn_td.v", "hrl_learn_loss_ddpg.v",
        "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v", "hrl_delay.v", "hrl_learn_adam.v",
        "hrl_learn_target.v", "hrl_learn_walk.v", "hrl_learn_step_ddpg.v"]
# The mutants' set: they need only fail, and a small module builds and runs fast.
SMALL = {"R": 4, "C": 4, "AW": 18, "BW": 18, "OW": 24, "NMAX": 16, "NL": 6, "BMAX": 16,
         "AMAX": 4}


@pytest.mark.parametrize("prm", [
    pytest.param({"NL": 6}, id="default"),
    pytest.param({"R": 2, "C": 8, "NMAX": 24, "NL": 4, "BMAX": 10}, id="R2-C8",
                 marks=pytest.mark.long),
    pytest.param({"R": 8, "C": 2, "NL": 2, "BMAX": 1, "AMAX": 1}, id="R8-C2-NL2",
                 marks=pytest.mark.long),
    pytest.param({"R": 16, "C": 16, "NMAX": 256, "NL": 6, "BMAX": 64, "AMAX": 16},
                 id="R16-C16", marks=pytest.mark.long),
])
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"AMAX": 5}, r"AMAX=5 must be in 1..max\(R, C\)=4"),
    ({"NL": 1}, r"NL=1 must be at least 2"),
    ({"WWID": 20}, r"WWID=20 must be in 2..BW=18"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, {"NL": 6, **bad}, tmp_path)
    assert re.search(pattern, text), text


# The mutated file: the step module or its walks' (hrl_learn_walk, which this testbench
# covers as the DQN step's does).
STEP, WALK = "hrl_learn_step_ddpg.v", "hrl_learn_walk.v"
MUTATIONS = [
    # The updated critic's operand words not written back: the actor's gradient goes
    # through the critic's weights before its update (and the next step reads stale ones).
    pytest.param(STEP, r"s_wr_en = wk_wr_en;", "s_wr_en = wk_wr_en && ph != PH_WCRIT;",
                 "critic-stale", id="critic-stale"),
    # The clip's backward pass lets every delta through (a plain identity).
    pytest.param(STEP, r"wire          zero = \(cb_lo\[g\] && pos_off\[off\]\) "
                 r"\|\| \(cb_hi\[g\] && neg_off\[off\]\);",
                 "wire          zero = 1'b0;", "clip-backward-identity",
                 id="clip-backward-identity", marks=pytest.mark.slow),
    # The actions written at the block's first lane, not at column S (no rotation).
    pytest.param(STEP, r"wire \[LGA-1:0\] off = c_s\[LGA-1:0\];",
                 "wire [LGA-1:0] off = {LGA{1'b0}};", "no-rotation", id="no-rotation",
                 marks=pytest.mark.slow),
    # The updated critic's operand roundings not counted in this step's saturations.
    pytest.param(STEP, r"pk == P_ADAM && ph == PH_WCRIT\)", "pk == P_ADAM && 1'b0)",
                 "no-new-critic-sats", id="no-new-critic-sats", marks=pytest.mark.slow),
    # Every walk's first block read at layer 0's P_BASE: the critic's Adam walk (the only
    # walk that starts past layer 0, which the DQN step never runs) updates the critic
    # from the actor's masters and moments.
    pytest.param(WALK, r"wire \[PAB-1:0\] cp = w_first \? l_pb\[lo\] : wp;",
                 "wire [PAB-1:0] cp = w_first ? l_pb[0] : wp;", "walk-from-layer-0",
                 id="walk-from-layer-0", marks=pytest.mark.slow),
]


# Each mutant builds and runs the testbench on Icarus (one random pair of nets, two steps;
# a few minutes each): the long tier runs the first, the slow tier (`make test-slow`) the
# other four, to keep CI within its time.
@pytest.mark.long
@pytest.mark.parametrize("target,pattern,repl,name", MUTATIONS)
def test_testbench_catches_mutation(target, pattern, repl, name, monkeypatch):
    """The testbench fails against the step module (or its walk) with one deliberate bug
    (its random steps on Icarus, the masters full-range words, whose actions clip at the
    box's bounds and whose operands saturate)."""
    rtl_runner.require("icarus")
    monkeypatch.setenv("STEP_TB_WILD", "1")
    assert learn_tb.mutation_kills(TOP, SRCS, target, pattern, repl, SMALL, name), (
        f"the {TOP} testbench passed against the mutant {name!r} of {target}")
