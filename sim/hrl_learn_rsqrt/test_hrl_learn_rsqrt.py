"""cocotb testbench of fpga_rtl/rtl/hrl_learn_rsqrt.v against hrl.fixed_point.rsqrt.rsqrt:
every power of two and its neighbours, zero and negative words, then random words over the
whole range, streamed one per cycle. Every output word and saturation must equal the
reference's.
"""

from __future__ import annotations

import cocotb
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import FallingEdge
from learn_tb import unpack
from tb_common import StreamTB

from hrl.fixed_point import Fx
from hrl.fixed_point.rsqrt import rsqrt

RANDOM = 400


class TB(StreamTB):
    INPUTS = ("in_v",)

    def __init__(self, dut, seed: int = 5):
        super().__init__(dut)
        self.vf = Fx(rtl_runner.param("VW", 29), rtl_runner.param("VF", 20))
        self.rf = Fx(rtl_runner.param("RW", 24), rtl_runner.param("RF", 12))
        self.rng = np.random.default_rng(seed)

    def sample(self):
        d = self.dut
        return (unpack(int(d.out_r.value), 1, self.rf.width)[0],
                int(d.out_sat.value))

    def words(self) -> np.ndarray:
        w = self.vf.width
        powers = 1 << np.arange(w - 1)
        edges = np.concatenate([[0, 1, 2, 3, -1, self.vf.min_int, self.vf.max_int], powers,
                                powers - 1, powers + 1])
        rand = self.rng.integers(0, self.vf.max_int + 1, RANDOM)
        small = self.rng.integers(0, 4096, RANDOM // 4)
        return np.clip(np.concatenate([edges, rand, small]), self.vf.min_int,
                       self.vf.max_int).astype(np.int32)


@cocotb.test()
async def test_words(dut):
    tb = TB(dut)
    await tb.reset()
    v = tb.words()
    mask = (1 << tb.vf.width) - 1
    for x in v:
        await FallingEdge(dut.clk)
        dut.in_valid.value = 1
        dut.in_v.value = int(x) & mask
    await FallingEdge(dut.clk)
    dut.in_valid.value = 0
    for _ in range(12):   # the unit's 7 cycles of latency, and more
        await FallingEdge(dut.clk)
    assert len(tb.out) == len(v), f"{len(tb.out)} words out, want {len(v)}"
    words, n_sat = rsqrt(jnp.asarray(v), tb.vf, tb.rf)
    words = np.asarray(words)
    for i, (got, _) in enumerate(tb.out):
        assert got == int(words[i]), f"v={int(v[i])}: r {got}, want {int(words[i])}"
    assert sum(s for _, s in tb.out) == int(n_sat)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_adam.py.

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v"]

SETS = [
    pytest.param("icarus", {"VW": 29, "VF": 20, "RW": 24, "RF": 12}, id="icarus-default"),
    pytest.param("icarus", {"VW": 20, "VF": 7, "RW": 12, "RF": 8}, id="icarus-odd-saturating",
                 marks=pytest.mark.long),
    pytest.param("verilator", {"VW": 29, "VF": 20, "RW": 24, "RF": 12}, id="verilator-default",
                 marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_rsqrt(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_rsqrt", prm, sources=SOURCES, sim=sim)
