"""cocotb testbench of fpga_rtl/rtl/hrl_ram.v: one bank of a tree level with NW write ports
and NR registered read ports (NW > 1: a live-value table over NW x NR memories).

A Python dict is the memory. Every cycle every port reads and writes at random over a small
address range (so reads hit words written the same cycle and ports collide); each read must
return, one cycle later, the word stored before that clock edge (a write in the same cycle
is not seen), and of two ports writing one address in one cycle the higher one wins. The
memory is written whole first (through every port in turn), as hrl_rmm's reset sweep does.
"""

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
        self.depth = rtl_runner.param("DEPTH", 16)
        self.aw = rtl_runner.param("AW", 4)
        self.w = rtl_runner.param("W", 32)
        self.nw = rtl_runner.param("NW", 1)
        self.nr = rtl_runner.param("NR", 1)
        self.rng = random.Random(8)
        self.mem: dict[int, int] = {}
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.we.value = 0
        dut.waddr.value = 0
        dut.wdata.value = 0
        dut.raddr.value = 0

    def pack(self, values, width):
        return sum(v << (width * i) for i, v in enumerate(values))

    async def cycle(self, we, waddr, wdata, raddr):
        """Drive one cycle at a falling edge; returns the words the reads will show."""
        dut = self.dut
        dut.we.value = self.pack(we, 1)
        dut.waddr.value = self.pack(waddr, self.aw)
        dut.wdata.value = self.pack(wdata, self.w)
        dut.raddr.value = self.pack(raddr, self.aw)
        want = [self.mem.get(a) for a in raddr]
        for port in range(self.nw):  # higher ports last: they win
            if we[port]:
                self.mem[waddr[port]] = wdata[port]
        return want

    def check(self, want):
        bits = str(self.dut.rdata.value)  # MSB first; unwritten words read as X
        for port, word in enumerate(want):
            if word is None:
                continue
            field = bits[len(bits) - self.w * (port + 1): len(bits) - self.w * port]
            assert set(field) <= {"0", "1"}, f"read port {port}: {field} for 0x{word:x}"
            got = int(field, 2)
            assert got == word, f"read port {port}: 0x{got:x} != 0x{word:x}"


@cocotb.test()
async def test_random_ports(dut):
    tb = TB(dut)
    await RisingEdge(dut.clk)
    ops = []
    for port in range(tb.nw):  # write everything through every port in turn
        for a in range(tb.depth):
            we = [int(p == port) for p in range(tb.nw)]
            ops.append((we, [a] * tb.nw, [tb.rng.getrandbits(tb.w) for _ in range(tb.nw)]))
    hot = min(tb.depth, 4)  # a few hot addresses: collisions every few cycles
    for _ in range(300):
        span = hot if tb.rng.random() < 0.6 else tb.depth
        ops.append(([int(tb.rng.random() < 0.6) for _ in range(tb.nw)],
                    [tb.rng.randrange(span) for _ in range(tb.nw)],
                    [tb.rng.getrandbits(tb.w) for _ in range(tb.nw)]))
    pending = None
    for we, waddr, wdata in ops:
        raddr = [tb.rng.randrange(hot if tb.rng.random() < 0.6 else tb.depth)
                 for _ in range(tb.nr)]
        await FallingEdge(dut.clk)
        want = await tb.cycle(we, waddr, wdata, raddr)
        await ReadOnly()
        if pending is not None:
            tb.check(pending)
        pending = want
    await FallingEdge(dut.clk)
    await ReadOnly()
    tb.check(pending)
    assert len(tb.mem) == tb.depth


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_ram/icarus-DEPTH..-AW..-W..-NW..-NR..).


@pytest.mark.parametrize(
    "depth,aw,w,nw,nr", [(16, 4, 32, 1, 1), (12, 5, 8, 2, 3), (8, 3, 16, 4, 2)],
    ids=["D16-W32-NW1-NR1", "D12-W8-NW2-NR3", "D8-W16-NW4-NR2"],
)
def test_hrl_ram(depth, aw, w, nw, nr):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_ram", {"DEPTH": depth, "AW": aw, "W": w, "NW": nw, "NR": nr})
