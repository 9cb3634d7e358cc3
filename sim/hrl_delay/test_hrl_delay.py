"""cocotb testbench of fpga_rtl/rtl/hrl_delay.v: N pipeline registers on a W-bit bus
(N = 0: a wire). Random words every cycle; q must be d of exactly N cycles before."""

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
        self.w = rtl_runner.param("W", 1)
        self.n = rtl_runner.param("N", 1)
        self.rng = random.Random(2)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.d.value = 0


@cocotb.test()
async def test_random_words(dut):
    """q at cycle i is d of cycle i - N (d is set at the falling edge, q read after it)."""
    tb = TB(dut)
    await RisingEdge(dut.clk)
    sent = []
    for i in range(200):
        await FallingEdge(dut.clk)
        word = tb.rng.getrandbits(tb.w)
        dut.d.value = word
        sent.append(word)
        await ReadOnly()
        if i >= tb.n:
            got = int(dut.q.value)
            assert got == sent[i - tb.n], f"cycle {i}: q 0x{got:x} != 0x{sent[i - tb.n]:x}"


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_delay/icarus-W..-N..).


@pytest.mark.parametrize("w,n", [(1, 0), (17, 1), (64, 3)], ids=["W1-N0", "W17-N1", "W64-N3"])
def test_hrl_delay(w, n):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_delay", {"W": w, "N": n})
