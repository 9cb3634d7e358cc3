"""The learner's kernel (fpga_rtl/rtl/hrl_learn_kernel.v: hrl_learn_engine behind AXI4-Lite
control and an AXI4 master, driven by the programs of hrl.fixed_point.kernel_program): its
cocotb testbench's sweep (sim/hrl_learn_kernel/), Verilator -Wall lint, $fatal on illegal
parameters, and mutation tests: the testbench must fail against a copy of the kernel with one
deliberate bug.

As tests/rtl/test_rtl_engine.py: a missing tool skips with the reason outside CI and fails
under CI=true; the small Icarus set, the lint, the $fatal check and one mutation run in
`make test` (seconds each), the Verilator sets and the other mutations in the long tier,
but the 16 x 16 set, the slowest to build and run, in the slow tier (`make test-slow`).
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

globals().update(rtl_runner.sweeps("hrl_learn_kernel", "test_hrl_learn_kernel"))

TOP = "hrl_learn_kernel"
SRCS = ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v",
        "hrl_learn_weight_bank.v", "hrl_learn_activation.v", "hrl_learn_engine.v",
        "hrl_learn_td.v", "hrl_learn_loss_dqn.v", "hrl_learn_loss_ddpg.v", "hrl_learn_rsqrt_rom.v",
        "hrl_learn_rsqrt.v", "hrl_delay.v", "hrl_learn_adam.v", "hrl_learn_target.v",
        "hrl_learn_walk.v", "hrl_learn_step.v", "hrl_learn_step_ddpg.v", "hrl_axi_rd.v",
        "hrl_axi_wr.v", "hrl_beats_to_words.v", "hrl_words_to_beats.v", "hrl_axil_ctrl.v",
        "hrl_learn_kernel.v"]
# A small set for the mutants: they need only fail, and a small kernel builds and runs fast.
SMALL = {"R": 2, "C": 4, "AW": 16, "BW": 16, "OW": 24, "NMAX": 12, "NL": 3, "BMAX": 5,
         "BSMAX": 24, "C_M_AXI_GMEM_DATA_WIDTH": 64}


@pytest.mark.parametrize("prm", [
    {}, {"R": 2, "C": 8, "C_M_AXI_GMEM_DATA_WIDTH": 32},
    {"R": 16, "C": 16, "NMAX": 256, "BMAX": 256, "NL": 6, "OW": 32},
    {"R": 8, "C": 2, "NL": 1, "BMAX": 1},
    # the training kernel (hrl_learn_step inside): the run's default and two skewed arrays
    {"TRAIN": 1, "AW": 18, "BW": 18, "NL": 3, "BMAX": 64},
    {"TRAIN": 1, "R": 2, "C": 8, "AW": 18, "BW": 18, "NMAX": 24, "BMAX": 10,
     "C_M_AXI_GMEM_DATA_WIDTH": 32},
    {"TRAIN": 1, "R": 8, "C": 1, "AW": 18, "BW": 18, "NMAX": 20, "BMAX": 12, "AMAX": 2},
    # the DDPG training kernel (hrl_learn_step_ddpg inside)
    {"TRAIN": 2, "AW": 18, "BW": 18, "NL": 6, "BMAX": 64, "AMAX": 1},
    {"TRAIN": 2, "R": 2, "C": 8, "AW": 18, "BW": 18, "NMAX": 24, "NL": 4, "BMAX": 10},
], ids=lambda p: rtl_runner.case_name(TOP, p))
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"C_M_AXI_GMEM_DATA_WIDTH": 48}, r"C_M_AXI_GMEM_DATA_WIDTH=48 must be a power of two"),
    ({"C_S_AXI_CONTROL_ADDR_WIDTH": 6}, r"C_S_AXI_CONTROL_ADDR_WIDTH=6 must be in \[7, 16\]"),
    ({"R": 3}, r"R=3 must be a power of two in 1..64"),
    ({"TRAIN": 3}, r"TRAIN=3 must be 0, 1 or 2"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, bad, tmp_path)
    assert re.search(pattern, text), text


MUTATIONS = [
    # A load's row block written one lane short at the row's end (the ragged last block).
    pytest.param(r"wire block_end = last_col \|\| lane == lane_mask;",
                 "wire block_end = lane == lane_mask;", "ragged-load", id="ragged-load"),
    # A store's words taken one cycle early (the host read port's 5-cycle latency ignored).
    pytest.param(r"localparam \[2:0\] ST_WAIT = 3'd4;", "localparam [2:0] ST_WAIT = 3'd3;",
                 "early-store", id="early-store", marks=pytest.mark.long),
    # The op table's fields shifted by one word (op o's field f from word 16 o + f + 1).
    pytest.param(r"op_wr_field <= wc\[3:0\];", "op_wr_field <= wc[3:0] + 4'd1;",
                 "op-field-shift", id="op-field-shift", marks=pytest.mark.long),
    # The load descriptors read at the low 32 bits of `prog` (the memory model wraps: the
    # testbench's address monitor catches it).
    pytest.param(r"rd_addr <= prog_reg \+ \{26'd0, di, 6'd0\};",
                 "rd_addr <= {32'd0, prog_reg[31:0]} + {26'd0, di, 6'd0};", "lost-high-word",
                 id="lost-high-word", marks=pytest.mark.long),
    # Stores zero-extended, not sign-extended (negative Q values read back wrong).
    pytest.param(r"\{\{\(32-OW\)\{h_rd_data\[g\*OW\+OW-1\]\}\}",
                 "{{(32-OW){1'b0}}", "zero-extend", id="zero-extend", marks=pytest.mark.long),
]


@pytest.mark.parametrize("pattern,repl,name", MUTATIONS)
def test_testbench_catches_mutation(pattern, repl, name):
    """The testbench fails against the kernel with one deliberate bug."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(TOP, SRCS, "hrl_learn_kernel.v", pattern, repl, SMALL,
                                   name), (
        f"the {TOP} testbench passed against the mutant {name!r}")


def test_driver_arguments_follow_kernel_xml():
    """The OpenCL driver sets the arguments in hrl_learn_kernel.xml's order; the device layer
    reads the offsets from it, and they are the register map the programs and the testbench's
    driver use (hrl.fixed_point.kernel_program.REG)."""
    from hrl.fixed_point import kernel_host, kernel_program
    from hrl.replay.backends import rtl_sim

    args = rtl_sim.kernel_args(rtl_sim.KERNELS["hrl_learn_kernel"][0])
    assert tuple(a.name for a in args) == kernel_host.ARG_NAMES
    assert all(a.offset == kernel_program.REG[a.name] for a in args)
    assert [a.pointer for a in args] == [False] * 5 + [True] + [False] * 2


def test_simulation_top_lint():
    """The rtl-sim device's top (sim/hdl/hrl_learn_kernel_sim.v: the kernel on the Verilog
    memory model) is lint-clean too, from the kernel's filelist."""
    import os
    import subprocess

    from hrl.replay.backends import rtl_model

    rtl_runner.require("verilator")
    root = rtl_runner.ROOT
    srcs = [str(root / "fpga_rtl" / line)
            for line in (root / "fpga_rtl/rtl/hrl_learn_kernel.f").read_text().split()]
    srcs += [str(root / "sim/hdl" / f) for f in ("hrl_sim_axi_ram.v", "hrl_learn_kernel_sim.v")]
    out = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module",
                          "hrl_learn_kernel_sim", *srcs], capture_output=True, text=True,
                         env={**os.environ, **rtl_model.verilator_env()}, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and not [ln for ln in text.splitlines() if ln.startswith("%")], text
