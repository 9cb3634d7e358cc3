"""cocotb testbench of fpga_rtl/rtl/hrl_learn_adam.v against hrl.fixed_point.optim.adam:
streams of parameters (master word, both moments, gradient) one per cycle, over gradients
from one lsb to the format's extremes (so each of the six narrowings saturates somewhere),
moments from a trained net's to random, second moments below and above the floor, with
several rate words and decays. Then a short run: the unit's outputs fed back as its next
inputs for a few steps, as the optimizer streams the weights each SGD step. Every output
word and the saturation count must equal the reference's.
"""

from __future__ import annotations

import cocotb
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import FallingEdge
from learn_tb import random_words, unpack
from tb_common import StreamTB

from hrl.fixed_point import Fx, optim
from hrl.fixed_point.formats import FxFormats

N = 160
LATENCY = 33  # hrl_learn_adam's LAT: inputs to outputs


def _fmt(name: str, width: int, frac: int) -> Fx:
    return Fx(rtl_runner.param(name + "W", width), rtl_runner.param(name + "F", frac))


class TB(StreamTB):
    INPUTS = ("c1", "c2", "lr", "v_floor", "in_w", "in_m", "in_v", "in_g")

    def __init__(self, dut, seed: int = 11):
        super().__init__(dut)
        d = FxFormats()
        self.f = FxFormats(grad=_fmt("G", d.grad.width, d.grad.frac),
                           moment=_fmt("M", d.moment.width, d.moment.frac),
                           second=_fmt("S", d.second.width, d.second.frac),
                           rsqrt=_fmt("R", d.rsqrt.width, d.rsqrt.frac),
                           step=_fmt("T", d.step.width, d.step.frac),
                           master=_fmt("W", d.master.width, d.master.frac),
                           unit=_fmt("U", d.unit.width, d.unit.frac),
                           lr=_fmt("L", 24, 24))
        self.rng = np.random.default_rng(seed)

    def sample(self):
        d, f = self.dut, self.f
        return (unpack(int(d.out_w.value), 1, f.master.width)[0],
                unpack(int(d.out_m.value), 1, f.moment.width)[0],
                unpack(int(d.out_v.value), 1, f.second.width)[0],
                int(d.out_sat.value))

    def params(self):
        rng, f = self.rng, self.f
        w = random_words(rng, (N,), f.master.width) >> int(rng.integers(0, 6))
        m = random_words(rng, (N,), f.moment.width) >> rng.integers(0, 16, N)
        v = np.minimum(np.abs(random_words(rng, (N,), f.second.width)),
                       f.second.max_int) >> rng.integers(0, 26, N)
        g = random_words(rng, (N,), f.grad.width) >> rng.integers(0, 22, N)
        return w, m, v.astype(np.int32), g

    async def stream(self, w, m, v, g, c1: int, c2: int, lr: int):
        """Feed one pass; return [(w', m', v', sat)] and the reference's."""
        d, f = self.dut, self.f
        d.c1.value, d.c2.value, d.lr.value = c1, c2, lr
        d.v_floor.value = optim.second_floor(c2, f)
        start = len(self.out)
        for i in range(len(w)):
            await FallingEdge(d.clk)
            d.in_valid.value = 1
            d.in_w.value = int(w[i]) & ((1 << f.master.width) - 1)
            d.in_m.value = int(m[i]) & ((1 << f.moment.width) - 1)
            d.in_v.value = int(v[i]) & ((1 << f.second.width) - 1)
            d.in_g.value = int(g[i]) & ((1 << f.grad.width) - 1)
        await FallingEdge(d.clk)
        d.in_valid.value = 0
        for _ in range(LATENCY + 4):
            await FallingEdge(d.clk)
        got = self.out[start:]
        assert len(got) == len(w), f"{len(got)} words out, want {len(w)}"
        w2, (m2, v2), n_sat = optim.adam(jnp.asarray(w), (jnp.asarray(m), jnp.asarray(v)),
                                         jnp.asarray(g), c1, c2, lr, f)
        want = (np.asarray(w2), np.asarray(m2), np.asarray(v2))
        for i, (gw, gm, gv, _) in enumerate(got):
            ctx = f"parameter {i} (w={int(w[i])} m={int(m[i])} v={int(v[i])} g={int(g[i])})"
            assert gm == want[1][i], f"{ctx}: m' {gm}, want {want[1][i]}"
            assert gv == want[2][i], f"{ctx}: v' {gv}, want {want[2][i]}"
            assert gw == want[0][i], f"{ctx}: w' {gw}, want {want[0][i]}"
        sats = sum(s for *_, s in got)
        assert sats == int(n_sat), f"{sats} saturations, reference {int(n_sat)}"
        return [np.asarray([o[k] for o in got], np.int32) for k in range(3)], sats


@cocotb.test()
async def test_passes(dut):
    """Random passes with several constants; the saturations are not all zero."""
    tb = TB(dut)
    await tb.reset()
    unit = 1 << tb.f.unit.frac
    total = 0
    for beta1, beta2, rate in ((0.9, 0.999, 1e-3), (0.5, 0.99, 3e-2), (0.99, 0.9999, 1e-5)):
        c1 = max(1, round((1 - beta1) * unit))
        c2 = max(1, round((1 - beta2) * unit))
        lr = max(1, min(round(rate * 2**tb.f.lr.frac), tb.f.lr.max_int))
        _, sats = await tb.stream(*tb.params(), c1, c2, lr)
        total += sats
    assert total > 0, "no narrowing saturated: the extremes did not reach the unit"


@cocotb.test()
async def test_steps_fed_back(dut):
    """Eight steps of one weight vector from zero moments, as the module runs them."""
    tb = TB(dut, seed=12)
    await tb.reset()
    w, _, _, _ = tb.params()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for _ in range(8):
        g = random_words(tb.rng, (len(w),), tb.f.grad.width) >> int(tb.rng.integers(4, 16))
        (w, m, v), _ = await tb.stream(w, m, v, g, 3277, 33, 16777)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_adam.py.

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v",
           "hrl_delay.v", "hrl_learn_adam.v"]

SETS = [
    pytest.param("icarus", {}, id="icarus-default"),
    pytest.param("verilator", {}, id="verilator-default", marks=pytest.mark.long),
    pytest.param("icarus", {"GW": 20, "GF": 14, "MW": 24, "MF": 14, "SW": 26, "SF": 21,
                            "RW": 20, "RF": 9, "TW": 16, "TF": 12, "WW": 26, "WF": 22,
                            "LW": 20, "LF": 22}, id="icarus-narrow", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_adam(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_adam", prm, sources=SOURCES, sim=sim)
