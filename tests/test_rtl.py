"""The RTL replay manager (fpga_rtl/rtl/hrl_rmm.v): cocotb simulations against the JAX
reference, Verilator lint, elaboration checks and a yosys synthesis run.

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(ROOT / "fpga_rtl" / "syn"))

import rmm_runner  # noqa: E402

pytestmark = pytest.mark.hw


def require(tool: str) -> None:
    reason = rmm_runner.missing_tool(tool)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def params(k, d, p, w):
    return {"K": k, "D": d, "P": p, "W": w}


# (params, capacity, ops, extra env). Capacities that are not powers of K leave a padded
# last row, as the reference does. >= 10**4 random ops per set in the default suite.
# Icarus is the slow simulator (about 1 min of CPU per 10**4 ops at K=4, over 3 min at
# K=16), Verilator the fast one, so the default suite splits the sets between them:
# K=4 and K=16, P=1 and P>1, a small and a deep tree, >= 10**4 random ops each.
DEFAULT_SETS = [
    pytest.param(params(4, 4, 1, 32), 256, 10_000, {}, id="K4-D4-P1-W32"),
    pytest.param(params(4, 3, 4, 24), 50, 10_000, {}, id="K4-D3-P4-W24-N50"),
]

SLOW_SETS = [
    pytest.param(params(16, 3, 1, 32), 4000, 10_000, {}, id="K16-D3-P1-W32-N4000"),
    pytest.param(params(16, 2, 2, 32), 256, 10_000, {}, id="K16-D2-P2-W32"),
    pytest.param(
        params(4, 7, 2, 32), 16384, 10_000, {"RMM_FULL_EVERY": "40"}, id="K4-D7-P2-W32-deep"
    ),
    pytest.param(params(2, 12, 1, 16), 4096, 20_000, {"RMM_FULL_EVERY": "20"}, id="K2-D12-P1-W16"),
    pytest.param(params(64, 2, 1, 32), 4096, 20_000, {}, id="K64-D2-P1-W32"),
    pytest.param(params(8, 3, 3, 8), 512, 20_000, {}, id="K8-D3-P3-W8"),
]

# Capacities that are not powers of K leave a padded last row, as the reference does.
# Deep: 7 levels, 16384 leaves; full readback every 40th segment and at the end, the rows
# on the paths of the segment's updates after every other segment.
VERILATOR_SETS = [
    pytest.param(params(16, 3, 1, 32), 4000, 10_000, {}, id="K16-D3-P1-W32-N4000"),
    pytest.param(params(16, 2, 2, 32), 256, 10_000, {}, id="K16-D2-P2-W32"),
    pytest.param(
        params(4, 7, 2, 32), 16384, 10_000, {"RMM_FULL_EVERY": "40"}, id="K4-D7-P2-W32-deep"
    ),
    pytest.param(
        params(4, 8, 4, 32), 65536, 20_000, {"RMM_FULL_EVERY": "100"}, id="K4-D8-P4",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        params(16, 4, 2, 32), 65536, 20_000, {"RMM_FULL_EVERY": "100"}, id="K16-D4-P2",
        marks=pytest.mark.slow,
    ),
]


def _simulate(sim, prm, capacity, n_ops, env, tests):
    require(sim)
    run_env = {"RMM_OPS": str(n_ops), "RMM_SEED": "7", **env}
    rmm_runner.run_case(sim, prm, testcase=tests, env=run_env, capacity=capacity)


@pytest.mark.parametrize("prm,capacity,n_ops,env", DEFAULT_SETS)
def test_icarus(prm, capacity, n_ops, env):
    _simulate(
        "icarus", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )


@pytest.mark.slow
@pytest.mark.parametrize("prm,capacity,n_ops,env", SLOW_SETS)
def test_icarus_sweep(prm, capacity, n_ops, env):
    _simulate(
        "icarus", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )


@pytest.mark.parametrize("prm,capacity,n_ops,env", VERILATOR_SETS)
def test_verilator(prm, capacity, n_ops, env):
    _simulate(
        "verilator", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )


LINT_SETS = [
    params(2, 1, 1, 8), params(4, 4, 1, 32), params(4, 3, 4, 24), params(16, 3, 2, 32),
    params(64, 2, 3, 32), params(2, 16, 1, 16), params(4, 8, 2, 32), params(16, 5, 16, 32),
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
    # The K16-D5-P16 set takes about 100 s of CPU (its update steps select each row word by
    # position: P x K comparisons per lane and level); the limit leaves room for a busy CI.
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


def test_yosys_synth_small():
    """synth_xilinx -family xcup runs on a small set and reports LUTs, FFs and a DSP count."""
    require("yosys")
    import run_syn

    row = run_syn.synthesize(params(4, 3, 1, 32), workdir=ROOT / "sim_build" / "syn-test")
    assert row["LUT"] > 0 and row["FF"] > 0, row
    assert row["DSP"] > 0, f"the fraction and root multipliers should map to DSPs: {row}"
