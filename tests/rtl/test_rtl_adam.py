"""The optimizer unit's Adam RTL (fpga_rtl/rtl/hrl_learn_adam.v, hrl_learn_rsqrt.v and the
generated ROM hrl_learn_rsqrt_rom.v): the cocotb testbenches' sweeps, Verilator -Wall lint,
$fatal on illegal parameters, mutation tests, and the ROM against the reference's table.

As tests/rtl/test_rtl_learn.py: a missing tool skips outside CI and fails under CI=true; one
small parameter set per module runs in `make test`, the rest in the long tier.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(ROOT / "experiments" / "rtl"))

import gen_rsqrt_rom  # noqa: E402
import learn_tb  # noqa: E402
import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw

for _module in ("hrl_learn_rsqrt", "hrl_learn_adam"):
    globals().update(rtl_runner.sweeps(_module, f"test_{_module}"))

ROOT_SRCS = ["hrl_learn_narrow.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v"]
ADAM_SRCS = [*ROOT_SRCS, "hrl_delay.v", "hrl_learn_adam.v"]
NARROW_SET = {"GW": 20, "GF": 14, "MW": 24, "MF": 14, "SW": 26, "SF": 21, "RW": 20, "RF": 9,
              "TW": 16, "TF": 12, "WW": 26, "WF": 22, "LW": 20, "LF": 22}


def test_rom_is_the_reference_table():
    """The committed ROM is what gen_rsqrt_rom.py writes from hrl.fixed_point.rsqrt."""
    assert gen_rsqrt_rom.OUT.read_text() == gen_rsqrt_rom.render(), (
        "fpga_rtl/rtl/hrl_learn_rsqrt_rom.v is stale: python experiments/rtl/gen_rsqrt_rom.py")


LINT = [("hrl_learn_rsqrt", ROOT_SRCS, {}),
        ("hrl_learn_rsqrt", ROOT_SRCS, {"VW": 20, "VF": 7, "RW": 12, "RF": 8}),
        ("hrl_learn_adam", ADAM_SRCS, {}),
        ("hrl_learn_adam", ADAM_SRCS, NARROW_SET)]


@pytest.mark.parametrize("top,srcs,prm", [
    pytest.param(*case, id=rtl_runner.case_name(case[0], case[2])) for case in LINT])
def test_verilator_lint(top, srcs, prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(top, srcs, prm)
    assert clean, f"lint of {top} {prm}:\n{text}"


@pytest.mark.parametrize("top,srcs,bad,pattern", [
    ("hrl_learn_rsqrt", ROOT_SRCS, {"VW": 31}, r"VW=31 must be in 2..30"),
    ("hrl_learn_adam", ADAM_SRCS, {"SW": 30}, r"widths must be at most 30 \(SW at most 29\)"),
    ("hrl_learn_adam", ADAM_SRCS, {"MF": 26}, r"g - m needs 39 bits, at most 30"),
])
def test_illegal_parameters_stop(top, srcs, bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(top, srcs, bad, tmp_path)
    assert re.search(pattern, text), text


ADAM = ("hrl_learn_adam", ADAM_SRCS)
ROOT_TB = ("hrl_learn_rsqrt", ROOT_SRCS)
MUTATIONS = [
    pytest.param(*ADAM, "hrl_learn_adam.v", r"\(vn14_s < floor_s\) \? v_floor : vn14", "vn14", {},
                 "no-floor", id="adam-no-floor"),
    pytest.param(*ADAM, "hrl_learn_adam.v",
                 r"\+ \(\{\{\(A2 - SW\)\{v10\[SW-1\]\}\}, v10\} <<< UF\)", "", {},
                 "v-decays-to-zero", id="adam-v-decays-to-zero",
                 marks=pytest.mark.long),
    pytest.param(*ADAM, "hrl_learn_adam.v", r"\.W\(MW\), \.N\(15\)\) m_to22",
                 ".W(MW), .N(14)) m_to22", {}, "moment-one-cycle-early",
                 id="adam-moment-one-cycle-early", marks=pytest.mark.long),
    pytest.param(*ROOT_TB, "hrl_learn_rsqrt.v", r"wire \[EW-1:0\] s = \{e0\[EW-1:1\], 1'b0\};",
                 "wire [EW-1:0] s = e0;", {}, "odd-normalization", id="rsqrt-odd-normalization",
                 marks=pytest.mark.long),
    pytest.param(*ROOT_TB, "hrl_learn_rsqrt.v", r"\(v_s <= 0\) \?", "(v_s < 0) ?", {},
                 "zero-not-clamped", id="rsqrt-zero-not-clamped", marks=pytest.mark.long),
]


@pytest.mark.parametrize("module,srcs,target,pattern,repl,prm,name", MUTATIONS)
def test_testbench_catches_mutation(module, srcs, target, pattern, repl, prm, name):
    """The testbench fails against its module with one deliberate bug."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(module, srcs, target, pattern, repl, prm, name), (
        f"the {module} testbench passed against the mutant {name!r} of {target}")
