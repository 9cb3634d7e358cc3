"""The learning module's RTL (fpga_rtl/rtl/hrl_learn_*.v): the cocotb testbenches (their
pytest sweeps at the bottom of sim/hrl_learn_<module>/test_hrl_learn_<module>.py, collected
here), Verilator -Wall lint, $fatal on illegal parameters, and mutation tests: each
testbench must fail against a copy of its module with one deliberate bug.

A missing tool skips with the reason outside CI and fails under CI=true (bit-for-bit tests
are never skipped there). One small parameter set per module runs in `make test`; the
sweeps, Verilator's larger arrays and all but one mutation (the array's) run in the long
tier (`make test-long`, which CI runs).
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

MODULES = ["hrl_learn_mac_array", "hrl_learn_weight_bank", "hrl_learn_activation",
           "hrl_learn_loss_dqn", "hrl_learn_loss_ddpg", "hrl_learn_target"]

for _module in MODULES:
    globals().update(rtl_runner.sweeps(_module, f"test_{_module}"))

# The loss units, with the TD pipeline they share
LOSS_DQN_SRCS = ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v", "hrl_learn_loss_dqn.v"]
LOSS_DDPG_SRCS = ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v",
                  "hrl_learn_loss_ddpg.v"]
# (top, sources, parameter sets) linted with verilator --lint-only -Wall.
LINT = [
    ("hrl_learn_narrow", ["hrl_learn_narrow.v"], [{}, {"IW": 20, "OW": 8, "SMAX": 20, "PIPE": 1},
                                                  {"PIPE": 3}]),
    ("hrl_learn_mac_array", ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v"],
     [{}, {"R": 1, "C": 1, "KMAX": 1, "ACCW": 40, "TAGW": 1},
      {"R": 16, "C": 16, "AW": 18, "BW": 18, "ACCW": 44, "OW": 24},
      {"R": 3, "C": 5, "AW": 12, "BW": 10, "BIASW": 20, "BSMAX": 12, "KMAX": 40, "ACCW": 33,
       "OW": 24, "TAGW": 3}]),
    ("hrl_learn_weight_bank", ["hrl_learn_weight_bank.v"],
     [{}, {"L": 1}, {"L": 16, "DW": 18, "DEPTH": 2048, "IW": 10}, {"L": 32}]),
    ("hrl_learn_activation", ["hrl_learn_activation.v"],
     [{}, {"C": 1}, {"C": 3}, {"C": 16, "W": 24}, {"C": 32}]),
    ("hrl_learn_loss_dqn", LOSS_DQN_SRCS,
     [{}, {"A": 1}, {"A": 6, "VW": 20, "VF": 6, "PW": 16, "PF": 14, "DW": 16, "DF": 10}]),
    ("hrl_learn_loss_ddpg", LOSS_DDPG_SRCS,
     [{}, {"VW": 16, "VF": 4, "PW": 12, "PF": 10, "DW": 12, "DF": 11}]),
    ("hrl_learn_target", ["hrl_learn_narrow.v", "hrl_learn_target.v"],
     [{}, {"P": 4, "MW": 24, "MF": 18, "WW": 12, "WF": 8, "UW": 12, "UF": 9},
      {"P": 3, "MW": 20, "MF": 14, "WW": 18, "WF": 16, "UW": 10, "UF": 10}]),
]


def _lint_cases():
    for top, srcs, sets in LINT:
        for prm in sets:
            yield pytest.param(top, srcs, prm, id=rtl_runner.case_name(top, prm))


@pytest.mark.parametrize("top,srcs,prm", list(_lint_cases()))
def test_verilator_lint(top, srcs, prm):
    """`verilator --lint-only -Wall` gives no diagnostic."""
    rtl_runner.require("verilator")
    clean, text = learn_tb.verilator_lint(top, srcs, prm)
    assert clean, f"lint of {top} {prm}:\n{text}"



ARRAY = ("hrl_learn_mac_array", ["hrl_learn_narrow.v",
                                 "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v"])
BANK = ("hrl_learn_weight_bank", ["hrl_learn_weight_bank.v"])
ACT = ("hrl_learn_activation", ["hrl_learn_activation.v"])
LOSS = ("hrl_learn_loss_dqn", LOSS_DQN_SRCS)
DDPG = ("hrl_learn_loss_ddpg", LOSS_DDPG_SRCS)
TARGET = ("hrl_learn_target", ["hrl_learn_narrow.v", "hrl_learn_target.v"])


@pytest.mark.parametrize(
    "top,srcs,bad,pattern",
    [
        (*ARRAY, {"ACCW": 30}, r"ACCW=30 must be in max\(40, 41\)"),
        (*ARRAY, {"R": 0}, r"R=0 must be in 1..64"),
        (*ARRAY, {"AW": 28}, r"AW=28, BW=16 must be in 2..27"),
        ("hrl_learn_narrow", ["hrl_learn_narrow.v"], {"SMAX": 60}, r"SMAX=60 must be in 0..IW"),
        (*BANK, {"L": 6}, r"L=6 must be a power of two in 1..64"),
        (*ACT, {"SW": 2}, r"SW=2 must be in 4..64"),
        (*LOSS, {"PF": 25}, r"PF=25 must be in 0..24"),
        (*DDPG, {"DW": 12, "DF": 12}, r"DF=12 must be in 0..DW-1=11"),
        (*TARGET, {"MW": 30}, r"MW=30 must be in 2..29"),
        (*TARGET, {"MF": 24, "WF": 29}, r"MF-WF=-5 must be in -4..MW=28"),
    ],
)
def test_illegal_parameters_stop(top, srcs, bad, pattern, tmp_path):
    """Illegal parameters stop the simulation at time 0 with $fatal naming the value."""
    rtl_runner.require("icarus")
    text = learn_tb.elaborate(top, srcs, bad, tmp_path)
    assert re.search(pattern, text), text


# (testbench module, sources, mutated file, pattern, replacement, parameters, name)
ARRAY_PRM = {"R": 4, "C": 4, "AW": 16, "BW": 16, "BIASW": 16, "BSMAX": 24, "KMAX": 256,
             "ACCW": 42, "OW": 16, "TAGW": 8}
BANK_PRM = {"L": 4, "DW": 16, "DEPTH": 256, "IW": 9}
ACT_PRM = {"C": 4, "W": 24, "SW": 32}
LOSS_PRM = {"A": 2, "VW": 24, "VF": 8, "PW": 17, "PF": 15, "DW": 18, "DF": 12}
DDPG_PRM = {"VW": 24, "VF": 8, "PW": 17, "PF": 15, "DW": 18, "DF": 12}
TARGET_PRM = {"P": 2, "MW": 28, "MF": 24, "WW": 16, "WF": 12, "UW": 16, "UF": 15}
MUTATIONS = [
    pytest.param(*ARRAY, "hrl_learn_narrow.v", r"\(sticky \|\| fl\[0\]\)",
                 "(sticky || 1'b1)", ARRAY_PRM,
                 "ties-away", id="array-narrow-ties-away"),
    pytest.param(*ARRAY, "hrl_learn_mac_array.v", r"bw <<< in_bias_shift", "bw", ARRAY_PRM,
                 "no-bias-shift", id="array-no-bias-shift", marks=pytest.mark.long),
    pytest.param(*ARRAY, "hrl_learn_mac_pe.v", r"first2 \? bias : ",
                 "", ARRAY_PRM, "no-preload", id="array-no-preload", marks=pytest.mark.long),
    pytest.param(*ARRAY, "hrl_learn_mac_array.v", r"drain_left <= 8'd3\)", "drain_left <= 8'd4)",
                 ARRAY_PRM, "early-last", id="array-early-last", marks=pytest.mark.long),
    pytest.param(*ARRAY, "hrl_learn_narrow.v", r"wire hi = r > maxv;", "wire hi = 1'b0;",
                 ARRAY_PRM, "no-high-clamp", id="array-no-high-clamp",
                 marks=pytest.mark.long),
    pytest.param(*BANK, "hrl_learn_weight_bank.v", r"wire \[LB-1:0\] lane_r = bl - rot;",
                 "wire [LB-1:0] lane_r = bl + rot;", BANK_PRM, "column-rotation",
                 id="bank-column-rotation", marks=pytest.mark.long),
    pytest.param(*BANK, "hrl_learn_weight_bank.v", r"wq_en && w_in\[DW\]", "wq_en",
                 BANK_PRM, "no-lane-enable", id="bank-no-lane-enable", marks=pytest.mark.long),
    pytest.param(*BANK, "hrl_learn_weight_bank.v", r"\(\(b - \(1 << s\)\)", "((b + (1 << s))",
                 BANK_PRM, "write-rotation", id="bank-write-rotation", marks=pytest.mark.long),
    pytest.param(*BANK, "hrl_learn_weight_bank.v", r"\(\(c \+ \(1 << s\)\)", "((c - (1 << s))",
                 BANK_PRM, "read-rotation", id="bank-read-rotation", marks=pytest.mark.long),
    pytest.param(*BANK, "hrl_learn_weight_bank.v", r"in2\[c\] \? rd_stage", "1'b1 ? rd_stage",
                 BANK_PRM, "no-edge-zero", id="bank-no-edge-zero", marks=pytest.mark.long),
    pytest.param(*ACT, "hrl_learn_activation.v", r"\(mode != 2'd2 \|\| keep_mask\)", "1'b1",
                 ACT_PRM, "masked-sats-counted", id="act-masked-sats-counted",
                 marks=pytest.mark.long),
    pytest.param(*ACT, "hrl_learn_activation.v", r"\(mode == 2'd1\) \? pos",
                 "(mode == 2'd1) ? 1'b1", ACT_PRM, "no-relu", id="act-no-relu",
                 marks=pytest.mark.long),
    pytest.param(*ACT, "hrl_learn_activation.v", r"in_sat\[c\] && in_lanes\[c\]",
                 "in_sat[c]", ACT_PRM, "outside-lanes-counted", id="act-outside-lanes-counted",
                 marks=pytest.mark.long),
    pytest.param(*LOSS, "hrl_learn_loss_dqn.v",
                 r"\(!lv_ok \|\| rc > lc\)", "(!lv_ok || rc >= lc)", LOSS_PRM, "argmax-last",
                 id="loss-argmax-last", marks=pytest.mark.long),
    pytest.param(*LOSS, "hrl_learn_td.v", r"!use_huber \? td8", "1'b1 ? td8",
                 LOSS_PRM, "no-huber", id="loss-no-huber", marks=pytest.mark.long),
    pytest.param(*LOSS, "hrl_learn_td.v",
                 r"\(\{\{\(MW-VW\)\{r2\[VW-1\]\}\}, r2\} <<< PF\)", "r2", LOSS_PRM,
                 "reward-unaligned", id="loss-reward-unaligned", marks=pytest.mark.long),
    pytest.param(*DDPG, "hrl_learn_loss_ddpg.v", r"out_delta <= actor14 \? minus_one",
                 "out_delta <= 1'b0 ? minus_one", DDPG_PRM, "no-actor-delta",
                 id="ddpg-no-actor-delta", marks=pytest.mark.long),
    pytest.param(*DDPG, "hrl_learn_td.v", r"!use_huber \? td8", "1'b1 ? td8",
                 DDPG_PRM, "no-huber", id="ddpg-no-huber", marks=pytest.mark.long),
    pytest.param(*DDPG, "hrl_learn_td.v", r"\? \{1'b0, \{\(VW-1\)\{1'b1\}\}\}",
                 "? td9", DDPG_PRM, "abs-min-wraps", id="ddpg-abs-min-wraps",
                 marks=pytest.mark.long),
    pytest.param(*DDPG, "hrl_learn_narrow.v", r"\(sticky \|\| fl\[0\]\)",
                 "(sticky || 1'b1)", DDPG_PRM, "ties-away", id="ddpg-narrow-ties-away",
                 marks=pytest.mark.long),
    pytest.param(*TARGET, "hrl_learn_target.v",
                 r"\(\{\{\(AW-MW\)\{tg_d\[3\]\[MW-1\]\}\}, tg_d\[3\]\} <<< UF\)", "tg_d[3]",
                 TARGET_PRM,
                 "target-unaligned", id="target-unaligned", marks=pytest.mark.long),
    pytest.param(*TARGET, "hrl_learn_target.v", r"\{on\[MW-1\], on\} - \{tg\[MW-1\], tg\}",
                 "{on - tg}", TARGET_PRM, "difference-wraps", id="target-difference-wraps",
                 marks=pytest.mark.long),
    pytest.param(*TARGET, "hrl_learn_target.v", r"!cp\[6\] && pk_sat", "pk_sat", TARGET_PRM,
                 "copy-sats-counted", id="target-copy-sats-counted", marks=pytest.mark.long),
    pytest.param(*TARGET, "hrl_learn_narrow.v", r"\(sticky \|\| fl\[0\]\)",
                 "(sticky || 1'b1)", TARGET_PRM, "ties-away", id="target-narrow-ties-away",
                 marks=pytest.mark.long),
]


@pytest.mark.parametrize("module,srcs,target,pattern,repl,prm,name", MUTATIONS)
def test_testbench_catches_mutation(module, srcs, target, pattern, repl, prm, name):
    """The testbench fails against its module with one deliberate bug."""
    rtl_runner.require("icarus")
    assert learn_tb.mutation_kills(module, srcs, target, pattern, repl, prm, name), (
        f"the {module} testbench passed against the mutant {name!r} of {target}")
