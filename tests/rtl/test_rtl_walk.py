"""The parameter walks shared by the two SGD step modules (fpga_rtl/rtl/hrl_learn_walk.v: the
optimizer's banks, the Adam and target lanes, the walks over the parameter stream), as a
module in its own right: Verilator -Wall lint with it as the top (its ports all used or
driven, not only those a step connects) and $fatal on illegal parameters.

Its arithmetic and timing are tested bit for bit, cycle for cycle, through both steps'
testbenches (tests/rtl/test_rtl_step.py, test_rtl_step_ddpg.py: every set runs the walks,
and mutants of this file, which each step's testbench must catch). As there: a missing
tool skips with the reason outside CI and fails under CI=true; the default set's lint and
the $fatal checks run in `make test` (seconds), the wider lints in the long tier.
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

TOP = "hrl_learn_walk"
SRCS = ["hrl_learn_narrow.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v", "hrl_delay.v",
        "hrl_learn_adam.v", "hrl_learn_target.v", "hrl_learn_walk.v"]


@pytest.mark.parametrize("prm", [
    pytest.param({}, id="default"),
    # DDPG's formats (hrl_learn_step_ddpg's defaults).
    pytest.param({"WWID": 16, "WF": 12, "QF": 14, "RF": 18}, id="ddpg-formats"),
    pytest.param({"R": 2, "C": 8, "NMAX": 24, "NL": 3, "BMAX": 10}, id="R2-C8",
                 marks=pytest.mark.long),
    pytest.param({"R": 8, "C": 2, "NL": 1, "BMAX": 2}, id="R8-C2-NL1",
                 marks=pytest.mark.long),
    pytest.param({"R": 16, "C": 16, "NMAX": 256, "NL": 6, "BMAX": 64}, id="R16-C16",
                 marks=pytest.mark.long),
])
def test_verilator_lint(prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(TOP, SRCS, prm)
    assert clean, f"lint of {TOP} {prm}:\n{text}"


@pytest.mark.parametrize("bad,pattern", [
    ({"WWID": 20}, r"hrl_learn_walk: WWID=20 must be in 2..BW=18"),
    ({"C": 3, "R": 4}, r"hrl_learn_walk: C=3 must be a power of two"),
])
def test_illegal_parameters_stop(bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(TOP, SRCS, bad, tmp_path)
    assert re.search(pattern, text), text
