"""The kernels' AXI4-Lite control block (fpga_rtl/rtl/hrl_axil_ctrl.v: ap_ctrl_hs, the
interrupts, the argument registers and read-only words of hrl_rmm_kernel and
hrl_learn_kernel): its cocotb testbench's sweep (sim/hrl_axil_ctrl/), Verilator -Wall lint,
$fatal on illegal parameters, and mutation tests: the testbench must fail against a copy of
the module with one deliberate bug. Both kernels' testbenches test it again through their
own control-interface tests.

A missing tool skips with the reason outside CI and fails under CI=true. All of it runs in
`make test` (seconds each).
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

globals().update(rtl_runner.sweeps("hrl_axil_ctrl", "test_hrl_axil_ctrl"))

TOP = "hrl_axil_ctrl"
SRCS = ["hrl_axil_ctrl.v"]
RMM_MAP = {"WRITABLE": 0x003F_D550, "READ_ONLY": 0x0700_0000}


@pytest.mark.parametrize("prm", [
    pytest.param({"AA": 7, **RMM_MAP}, id="rmm-map"),
    pytest.param({"AA": 16, "WRITABLE": 0x5555_5550, "READ_ONLY": 0xAAAA_AAA0}, id="full-map"),
])
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"AA": 6}, r"AA=6 must be in \[7, 16\]"),
    ({"WRITABLE": 0x30, "READ_ONLY": 0x20}, r"WRITABLE=0x00000030 and READ_ONLY=0x00000020 "
                                            r"must be disjoint words 4..31"),
    ({"WRITABLE": 0x1}, r"WRITABLE=0x00000001 and READ_ONLY=0x00000000 must be disjoint"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, bad, tmp_path)
    assert re.search(pattern, text), text


MUTATIONS = [
    # The byte strobes ignored: every write takes the whole word.
    pytest.param(r"else if \(wr_do && wr_word == gi && w_strb\[gb\]\)",
                 "else if (wr_do && wr_word == gi)", "no-strobes", id="no-strobes"),
    # ap_done not cleared by a read of the control word.
    pytest.param(r"                ap_done <= 1'b0;\n                ap_ready <= 1'b0;",
                 "                ap_ready <= 1'b0;", "done-sticky", id="done-sticky"),
    # ISR set by a write instead of toggled.
    pytest.param(r"isr <= isr \^ w_data\[1:0\];", "isr <= isr | w_data[1:0];", "isr-set",
                 id="isr-set"),
    # A read-only word read as the (empty) argument register.
    pytest.param(r"if \(gi >= 4 && READ_ONLY\[gi\]\)", "if (gi >= 4 && 1'b0)", "ro-lost",
                 id="ro-lost"),
    # ap_start not cleared at the run's end.
    pytest.param(r"            ap_start <= 1'b0;\n            ap_done <= 1'b1;",
                 "            ap_done <= 1'b1;", "start-held", id="start-held"),
]


@pytest.mark.parametrize("pattern,repl,name", MUTATIONS)
def test_testbench_catches_mutation(pattern, repl, name):
    """The testbench fails against the module with one deliberate bug."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(TOP, SRCS, "hrl_axil_ctrl.v", pattern, repl,
                                   {"AA": 7, **RMM_MAP}, name), (
        f"the {TOP} testbench passed against the mutant {name!r}")
