"""The RTL replay manager (fpga_rtl/rtl/hrl_rmm.v): cocotb simulations against the JAX
reference (the sweeps at the bottom of sim/hrl_rmm/test_hrl_rmm.py, collected here),
Verilator lint, elaboration checks and a yosys synthesis run.

Every simulation case builds in its own directory (sim_build/<sim>-K..-D..-P..-W..). A missing
tool skips with the reason outside CI and fails under CI=true.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(ROOT / "fpga_rtl" / "syn"))

import rmm_runner  # noqa: E402
import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw

# The simulation sweeps live at the bottom of the testbench, sim/hrl_rmm/test_hrl_rmm.py.
globals().update(
    rtl_runner.sweeps("hrl_rmm", "test_icarus", "test_icarus_sweep", "test_verilator")
)


def require(tool: str) -> None:
    reason = rmm_runner.missing_tool(tool)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def params(k, d, p, w):
    return {"K": k, "D": d, "P": p, "W": w}


# Every bound of every parameter is in some set: K 2..64, D 1..16, P 1..16, W 8..32. Lint time
# grows with P x K x D (the update steps select each row word by position), so the widest
# set, K16-D5-P16, takes minutes of CPU and runs in the long tier, as do K64-D2-P3 and
# K4-D3-P16 (half a minute each; tests/long_tier.py).
LINT_SETS = [
    params(2, 1, 1, 8), params(4, 4, 1, 32), params(4, 3, 4, 24), params(16, 3, 2, 32),
    params(64, 2, 3, 32), params(2, 16, 1, 16), params(4, 8, 2, 32), params(4, 3, 16, 32),
    pytest.param(params(16, 5, 16, 32), marks=pytest.mark.long),
]


@pytest.mark.parametrize("prm", LINT_SETS, ids=lambda p: rmm_runner.case_name("lint", p))
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no warning for every parameter set."""
    require("verilator")
    env = {**os.environ, **rmm_runner.verilator_env()}
    cmd = [
        "verilator", "--lint-only", "-Wall", "--top-module", rmm_runner.TOP,
        *(f"-G{k}={v}" for k, v in prm.items()),
        *map(str, rmm_runner.rtl_sources()),
    ]
    # The limit leaves room for the K16-D5-P16 set on a busy CI machine.
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    text = out.stdout + out.stderr
    # Verilator prints a statistics report on success; any diagnostic starts with '%'.
    diagnostics = [line for line in text.splitlines() if line.startswith("%")]
    assert out.returncode == 0 and not diagnostics, f"lint of {prm}:\n{text}"



@pytest.mark.parametrize(
    "bad,pattern",
    [
        ({"K": 3}, r"K=3 must be a power of two"),
        ({"K": 128}, r"K=128 must be a power of two in \[2, 64\]"),
        ({"P": 17}, r"P=17 must be in \[1, 16\]"),
        ({"W": 33}, r"W=33 must be in \[8, 32\]"),
    ],
)
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value.

    (An illegal depth is not run here: D*log2(K) > 32 means a tree of over 2**32 words,
    which the simulator refuses to build before the check could run; likewise P = 0 or
    D = 0 give zero-width ports, which fail to elaborate with the simulator's own error.)"""
    require("icarus")
    prm = {**params(4, 2, 1, 32), **bad}
    out_vvp = tmp_path / "rmm.vvp"
    cmd = ["iverilog", "-g2012", "-o", str(out_vvp), "-s", rmm_runner.TOP]
    cmd += [f"-P{rmm_runner.TOP}.{k}={v}" for k, v in prm.items()]
    cmd += list(map(str, rmm_runner.rtl_sources()))
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if build.returncode != 0:  # some combinations already fail to elaborate
        text = build.stdout + build.stderr
    else:
        run = subprocess.run(["vvp", "-n", str(out_vvp)], capture_output=True, text=True,
                             timeout=120)
        text = run.stdout + run.stderr
        assert run.returncode != 0 or "FATAL" in text
    assert re.search(pattern, text), text


# Half a minute of yosys on 2 cores; fpga_rtl/syn/run_syn.py regenerates the resources.
@pytest.mark.long
def test_yosys_synth_small():
    """synth_xilinx -family xcup runs on a small set and reports LUTs, FFs and a DSP count."""
    require("yosys")
    import run_syn

    row = run_syn.synthesize(params(4, 3, 1, 32), workdir=ROOT / "sim_build" / "syn-test")
    assert row["LUT"] > 0 and row["FF"] > 0, row
    assert row["DSP"] > 0, f"the fraction and root multipliers should map to DSPs: {row}"
