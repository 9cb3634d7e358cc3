"""cocotb testbench of fpga_rtl/rtl/hrl_fifo.v: a first-word fall-through FIFO of 2**AW
entries with a registered occupancy count.

Checked every cycle against a Python deque: `count`, the flags (`s_ready` = not full,
`m_valid` = not empty) and the head word `m_data`. Cases: fill to full and drain to empty,
simultaneous push and pop (empty, partly full, full), back-pressure, a reset in the middle
of traffic, and random traffic with several valid/ready densities.

Inputs are driven and outputs sampled at the falling edge (the DUT is posedge-only), so the
model advances exactly one handshake per rising edge.
"""

from __future__ import annotations

import random
from collections import deque

import cocotb
import pytest
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.aw = rtl_runner.param("AW", 4)
        self.w = rtl_runner.param("W", 32)
        self.depth = 1 << self.aw
        self.model: deque[int] = deque()
        self.rng = random.Random(1)
        self.pushes = self.pops = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.rst.value = 1
        dut.s_valid.value = 0
        dut.s_data.value = 0
        dut.m_ready.value = 0

    async def reset(self):
        await tb_common.pulse_reset(self.dut.clk, self.dut.rst)
        self.model.clear()
        await FallingEdge(self.dut.clk)

    def check(self):
        dut, n = self.dut, len(self.model)
        assert int(dut.count.value) == n, f"count {int(dut.count.value)} != model {n}"
        assert int(dut.s_ready.value) == (n < self.depth), f"s_ready wrong at {n}/{self.depth}"
        assert int(dut.m_valid.value) == (n > 0), f"m_valid wrong at {n}"
        if n:
            got = int(dut.m_data.value)
            assert got == self.model[0], f"m_data 0x{got:x} != head 0x{self.model[0]:x}"

    async def cycle(self, push: bool, pop: bool, data: int | None = None) -> tuple[bool, bool]:
        """One clock cycle from a falling edge: check, drive, advance the model on the
        rising edge. Returns the (push, pop) handshakes that took place."""
        self.check()
        if data is None:
            data = self.rng.getrandbits(self.w)
        dut = self.dut
        dut.s_valid.value = int(push)
        dut.s_data.value = data
        dut.m_ready.value = int(pop)
        n = len(self.model)
        did_push, did_pop = push and n < self.depth, pop and n > 0
        await RisingEdge(dut.clk)
        if did_pop:
            self.model.popleft()
            self.pops += 1
        if did_push:
            self.model.append(data)
            self.pushes += 1
        await FallingEdge(dut.clk)
        return did_push, did_pop


@cocotb.test()
async def test_fill_drain(dut):
    """Fill to full (s_ready falls at exactly 2**AW entries, pushes then stall), drain to
    empty (m_valid falls at 0, pops then do nothing), words out in order."""
    tb = TB(dut)
    await tb.reset()
    tb.check()
    for i in range(tb.depth):
        assert (await tb.cycle(True, False, data=i + 1))[0]
    assert len(tb.model) == tb.depth and int(dut.s_ready.value) == 0
    for _ in range(3):  # pushes into a full FIFO are refused
        assert await tb.cycle(True, False) == (False, False)
    for i in range(tb.depth):
        assert int(dut.m_data.value) == i + 1
        assert (await tb.cycle(False, True))[1]
    assert int(dut.m_valid.value) == 0 and int(dut.count.value) == 0
    for _ in range(3):  # pops of an empty FIFO do nothing
        assert await tb.cycle(False, True) == (False, False)
    tb.check()


@cocotb.test()
async def test_simultaneous_push_pop(dut):
    """Push and pop in one cycle: empty -> push only (nothing to pop); partly full -> the
    count holds; full -> pop only (no room), then both again."""
    tb = TB(dut)
    await tb.reset()
    assert await tb.cycle(True, True) == (True, False)       # empty: the word goes in
    for _ in range(5):
        assert await tb.cycle(True, True) == (True, True)    # one in, one out
        assert len(tb.model) == 1
    while len(tb.model) < tb.depth:
        await tb.cycle(True, False)
    assert await tb.cycle(True, True) == (False, True)       # full: s_ready low
    assert await tb.cycle(True, True) == (True, True)        # depth-1: both
    tb.check()


@cocotb.test()
async def test_reset_mid_traffic(dut):
    """A reset empties the FIFO whatever it held; traffic works again after it."""
    tb = TB(dut)
    await tb.reset()
    for _ in range(tb.depth // 2 + 1):
        await tb.cycle(True, False)
    await tb.reset()
    tb.check()
    for _ in range(2 * tb.depth):
        await tb.cycle(tb.rng.random() < 0.7, tb.rng.random() < 0.5)
    tb.check()


@cocotb.test()
@cocotb.parametrize(density=[(0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 1.0)])
async def test_random_traffic(dut, density):
    """Random valid and ready (push density, pop density) against the deque model; the
    words that left are the words that went in, in order."""
    p_push, p_pop = density
    tb = TB(dut)
    tb.rng = random.Random(hash(density) & 0xFFFF)
    await tb.reset()
    sent, got = [], []
    for _ in range(300):
        if int(dut.m_valid.value):
            head = int(dut.m_data.value)
        data = tb.rng.getrandbits(tb.w)
        pushed, popped = await tb.cycle(tb.rng.random() < p_push, tb.rng.random() < p_pop,
                                        data)
        if pushed:
            sent.append(data)
        if popped:
            got.append(head)
    assert got == sent[: len(got)]
    assert tb.pushes > 50 and tb.pops > 50, (tb.pushes, tb.pops)
    tb.check()


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_fifo/icarus-AW..-W..).


@pytest.mark.parametrize(
    "aw,w", [(1, 8), (2, 32), (4, 17)], ids=["AW1-W8", "AW2-W32", "AW4-W17"]
)
def test_hrl_fifo(aw, w):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_fifo", {"AW": aw, "W": w})
