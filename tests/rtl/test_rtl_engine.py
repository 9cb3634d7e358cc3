"""The learning module's engine (fpga_rtl/rtl/hrl_learn_engine.v, the table-driven controller
of the array, the banks and the activation unit: forward, backward, weight and bias
gradients): its cocotb testbench's sweep (sim/hrl_learn_engine/), Verilator -Wall lint,
$fatal on illegal parameters, and mutation tests: the testbench must fail against a copy of
the controller with one deliberate bug (at least one per op kind).

As tests/rtl/test_rtl_learn.py: a missing tool skips with the reason outside CI and fails
under CI=true; the two small Icarus sets, the lint, the $fatal checks and two mutations run
in `make test` (seconds each), the Verilator sets and the other mutations in the long tier.
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

globals().update(rtl_runner.sweeps("hrl_learn_engine", "test_hrl_learn_engine"))

TOP = "hrl_learn_engine"
SRCS = ["hrl_learn_narrow.v",
        "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v", "hrl_learn_weight_bank.v",
        "hrl_learn_activation.v", "hrl_learn_engine.v"]
PRM = {"R": 4, "C": 4, "AW": 18, "BW": 18, "OW": 24, "NMAX": 64, "NL": 4, "BMAX": 32,
       "BSMAX": 24, "SW": 32}
# A small set for the mutants: they need only fail, and a small engine builds and runs fast.
SMALL = {**PRM, "NMAX": 16, "NL": 3, "BMAX": 9}


@pytest.mark.parametrize("prm", [
    {}, {"R": 2, "C": 8}, {"R": 8, "C": 2, "NL": 1, "BMAX": 1},
    {"R": 16, "C": 16, "NMAX": 256, "BMAX": 256, "NL": 6, "AW": 18, "BW": 18},
], ids=lambda p: rtl_runner.case_name(TOP, p))
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"R": 3}, r"R=3 must be a power of two in 1..64"),
    ({"R": 1, "C": 1}, r"max\(R, C\) must be at least 2"),
    ({"OW": 12}, r"OW=12 must be in AW=16..32"),
    ({"NL": 0}, r"NL=0 must be in 1..64"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, bad, tmp_path)
    assert re.search(pattern, text), text


MUTATIONS = [
    # The ragged edge: the last column block is taken as complete one column early.
    pytest.param("hrl_learn_engine.v", r"wire          last_col_n = c0_end \+ CS >= \{8'd0, n\};",
                 "wire          last_col_n = c0_end + CS + 1'b1 >= {8'd0, n};", "ragged-column",
                 id="ragged-column"),
    # The last layer through the ReLU (the op table's mode ignored).
    pytest.param("hrl_learn_engine.v", r"op_kind == K_FWD && t_relu\[opi\]", "op_kind == K_FWD",
                 "relu-on-last", id="relu-on-last", marks=pytest.mark.long),
    # A ragged row block drains R rows (rows past the batch written over the next matrix).
    pytest.param("hrl_learn_engine.v", r"\? R7 : rows_left_n\[6:0\]", "? R7 : R7",
                 "ragged-rows", id="ragged-rows", marks=pytest.mark.long),
    # The array's drain ignored: a tile's last beat issued 3 cycles after the previous
    # one's whatever that tile's rows (the array refuses it; `fault`, lost beats).
    pytest.param("hrl_learn_engine.v",
                 r"need_m1 <= \(tile_rows > 7'd3\) \? \{1'b0, tile_rows\} - 8'd1 : 8'd2;",
                 "need_m1 <= 8'd2;", "no-drain-wait", id="no-drain-wait",
                 marks=pytest.mark.long),
    # A chained layer's beat reads the previous layer's column block as it is being written
    # (the dependency one tile early).
    pytest.param("hrl_learn_engine.v", r"wp_c0 > k_al", "wp_c0 >= k_al", "early-operand",
                 id="early-operand", marks=pytest.mark.long),
    # Backward: the weights read by rows, not transposed (W for W^T).
    pytest.param("hrl_learn_engine.v", r"\.rd_col\(k_bwd\), \.rd_base\(wb\[WAB-1:0\]\)",
                 ".rd_col(1'b0), .rd_base(wb[WAB-1:0])", "bwd-untransposed",
                 id="bwd-untransposed"),
    # Backward: the ReLU derivative mask not applied (a masked op as an unmasked one).
    pytest.param("hrl_learn_engine.v", r"op_kind == K_BWDM \? 2'd2", "op_kind == K_BWDM ? 2'd0",
                 "bwd-no-mask", id="bwd-no-mask", marks=pytest.mark.long),
    # Weight gradient: the activations read by columns (A for A^T).
    pytest.param("hrl_learn_engine.v", r"act_rd = k_fwd \? 1'b0 : 1'b1", "act_rd = 1'b0",
                 "wgrad-untransposed", id="wgrad-untransposed", marks=pytest.mark.long),
    # Bias gradient: the row of ones read as twos.
    pytest.param("hrl_learn_engine.v", r"ONE = \{\{\(AW-1\)\{1'b0\}\}, 1'b1\}",
                 "ONE = {{(AW-2){1'b0}}, 2'b10}", "bgrad-not-ones", id="bgrad-not-ones",
                 marks=pytest.mark.long),
    # An independent op's last beat not held for its predecessor's writes (a third op in
    # flight: the two slots of output fields overrun).
    pytest.param("hrl_learn_engine.v", r"\|\| \(indep && !\(beat_last && last_col && last_row\)\)",
                 "|| indep", "indep-last-beat", id="indep-last-beat", marks=pytest.mark.long),
]


@pytest.mark.parametrize("target,pattern,repl,name", MUTATIONS)
def test_testbench_catches_mutation(target, pattern, repl, name):
    """The testbench fails against the engine with one deliberate bug."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(TOP, SRCS, target, pattern, repl, SMALL, name), (
        f"the {TOP} testbench passed against the mutant {name!r} of {target}")


# The operand windows' offsets are nonzero only where the array is not square (a tile's rows
# or columns start inside a block of LA = max(R, C) words), so these mutants run on such
# shapes: (mutant, parameters).
WINDOW_MUTATIONS = [
    # The array's rows reading the x block from its first word, not the tile's offset.
    pytest.param(r"x_win = words_from\(x_src, pa_off\)", "x_win = words_from(x_src, {OB{1'b0}})",
                 {**SMALL, "R": 2, "C": 4}, "x-window-offset", id="x-window-offset"),
    # The array's columns reading the delta block (gradient ops) from its first word.
    pytest.param(r"w_win = words_from\(dl_rd_data, pa_coff\)",
                 "w_win = words_from(dl_rd_data, {OB{1'b0}})",
                 {**SMALL, "R": 4, "C": 2}, "w-window-offset", id="w-window-offset"),
    # The derivative mask of a row's columns read from the block's first lane.
    pytest.param(r"bits_from\(mk_rd_data, qa_off\[OB-1:0\]\)", "bits_from(mk_rd_data, {OB{1'b0}})",
                 {**SMALL, "R": 4, "C": 2}, "mask-window-offset", id="mask-window-offset"),
]


@pytest.mark.long
@pytest.mark.parametrize("pattern,repl,prm,name", WINDOW_MUTATIONS)
def test_testbench_catches_window_mutation(pattern, repl, prm, name):
    """The testbench fails against the engine with an operand window read from the wrong
    offset, on an array shape where the offsets are not all zero."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(TOP, SRCS, "hrl_learn_engine.v", pattern, repl, prm, name), (
        f"the {TOP} testbench passed against the mutant {name!r}")
