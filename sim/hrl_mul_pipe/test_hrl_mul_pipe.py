"""cocotb testbench of fpga_rtl/rtl/hrl_mul_pipe.v: an unsigned AW x BW multiplier keeping
the low PW bits, followed by N registers. Random and extreme operands every cycle; p must be
(a * b) mod 2**PW of exactly N cycles before."""

from __future__ import annotations

import random

import cocotb
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.aw = rtl_runner.param("AW", 32)
        self.bw = rtl_runner.param("BW", 32)
        self.pw = rtl_runner.param("PW", 64)
        self.n = rtl_runner.param("N", 1)
        self.rng = random.Random(6)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.a.value = 0
        dut.b.value = 0

    def operand(self, bits: int) -> int:
        r = self.rng.random()
        if r < 0.1:
            return (1 << bits) - 1
        if r < 0.15:
            return 0
        return self.rng.getrandbits(bits)


@cocotb.test()
async def test_random_products(dut):
    tb = TB(dut)
    await RisingEdge(dut.clk)
    want = []
    for i in range(200):
        await FallingEdge(dut.clk)
        a, b = tb.operand(tb.aw), tb.operand(tb.bw)
        dut.a.value, dut.b.value = a, b
        want.append((a * b) % (1 << tb.pw))
        await ReadOnly()
        if i >= tb.n:
            got = int(dut.p.value)
            assert got == want[i - tb.n], f"cycle {i}: p 0x{got:x} != 0x{want[i - tb.n]:x}"


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_mul_pipe/icarus-AW..-BW..-PW..-N..).


@pytest.mark.parametrize(
    "aw,bw,pw,n", [(32, 32, 64, 0), (32, 32, 32, 2), (20, 7, 27, 3)],
    ids=["AW32-BW32-PW64-N0", "AW32-BW32-PW32-N2", "AW20-BW7-PW27-N3"],
)
def test_hrl_mul_pipe(aw, bw, pw, n):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_mul_pipe", {"AW": aw, "BW": bw, "PW": pw, "N": n},
                   sources=["hrl_delay.v", "hrl_mul_pipe.v"])
