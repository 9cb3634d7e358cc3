"""cocotb testbench of fpga_rtl/rtl/hrl_axi_rd.v, the AXI4 read engine: a `start` pulse
streams `count` beats of DW bits from `addr` out of m_*.

The memory is cocotbext-axi's `AxiRamRead` (random contents). Every job's beats must equal
the memory's bytes, in order; every AR burst must be INCR of DW/8-byte beats, at most 256
beats, never across a 4 KiB boundary, the bursts contiguous from `addr` and adding up to
`count`; `busy` must rise the cycle after `start` and fall right after the last beat left
m_*, with no beat after it. Jobs: lengths 0, 1, around 256 and 4 KiB boundaries, random;
with and without random pauses on AR and R and a consumer that stalls m_ready.
"""

from __future__ import annotations

import itertools
import logging
import random

import cocotb
import pytest
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiRamRead, AxiReadBus

MEM_SIZE = 1 << 16


class TB(tb_common.MonitoredTB):
    def __init__(self, dut):
        self.dut = dut
        self.dw = rtl_runner.param("DW", 32)
        self.addr_w = rtl_runner.param("ADDR_W", 64)
        self.bpb = self.dw // 8  # bytes per beat
        self.rng = random.Random(5)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.ram = AxiRamRead(AxiReadBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst,
                              size=MEM_SIZE)
        self.ram.log.setLevel(logging.WARNING)
        dut.rst.value = 1
        dut.start.value = 0
        dut.addr.value = 0
        dut.count.value = 0
        dut.m_ready.value = 0
        self.ready_prob = 1.0
        self.bursts: list[tuple[int, int]] = []   # (araddr, beats) per AR handshake
        self.beats: list[int] = []                # data of every m_* handshake

    def set_backpressure(self, on: bool):
        tb_common.set_pauses((self.ram.ar_channel, self.ram.r_channel),
                             lambda: self.rng.getrandbits(32), 0.4, on)
        self.ready_prob = 0.6 if on else 1.0

    async def _monitor(self):
        """Record the AR and m_* handshakes and busy at every rising edge; drive m_ready."""
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            if int(dut.m_axi_arvalid.value) and int(dut.m_axi_arready.value):
                assert int(dut.m_axi_arburst.value) == 1, "burst type must be INCR"
                assert int(dut.m_axi_arsize.value) == self.bpb.bit_length() - 1
                assert int(dut.m_axi_arid.value) == 0
                self.bursts.append((int(dut.m_axi_araddr.value),
                                    int(dut.m_axi_arlen.value) + 1))
            if int(dut.m_valid.value) and int(dut.m_ready.value):
                self.beats.append(int(dut.m_data.value))
            dut.m_ready.value = int(self.rng.random() < self.ready_prob)

    async def job(self, addr: int, count: int):
        """Run one job to the end and check it."""
        dut = self.dut
        self.bursts.clear()
        self.beats.clear()
        dut.addr.value = addr
        dut.count.value = count
        dut.start.value = 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        # busy (registered) is high from the cycle after start until the last beat left:
        # the first edge that reads it low has seen every beat, and no beat follows.
        await RisingEdge(dut.clk)
        assert int(dut.busy.value) == (count > 0), "busy must rise the cycle after start"
        for _ in range(20 * count + 50):
            if not int(dut.busy.value):
                break
            assert len(self.beats) < count, "busy after the last beat"
            await RisingEdge(dut.clk)
        else:
            raise AssertionError(f"job addr=0x{addr:x} count={count} still busy")
        assert len(self.beats) == count, f"busy fell after {len(self.beats)} of {count} beats"
        for _ in range(5):
            await RisingEdge(dut.clk)
            assert not int(dut.busy.value) and not int(dut.m_axi_arvalid.value)
        want = [int.from_bytes(self.ram.read(addr + i * self.bpb, self.bpb), "little")
                for i in range(count)]
        assert len(self.beats) == count, f"{len(self.beats)} beats for a count of {count}"
        assert self.beats == want, "data differ from the memory"
        tb_common.check_incr_bursts(self.bursts, addr, count, self.bpb)


def _jobs(tb: TB, n_random: int):
    bpb = tb.bpb
    edge = 4096 - 3 * bpb  # three beats before a 4 KiB boundary
    fixed = [(0, 1), (0x100, 0), (edge, 7), (0x2000, 256), (0x3000 + bpb, 300),
             (0x5000 - 256 * bpb, 257)]
    rand = []
    for _ in range(n_random):
        count = tb.rng.choice([tb.rng.randrange(1, 8), tb.rng.randrange(1, 600)])
        top = MEM_SIZE - count * bpb
        rand.append((tb.rng.randrange(0, top // bpb) * bpb, count))
    return fixed + rand


@cocotb.test()
@cocotb.parametrize(backpressure=[False, True])
async def test_read_jobs(dut, backpressure):
    """Fixed edge cases and random jobs, back to back, checked beat for beat."""
    tb = TB(dut)
    tb.ram.write(0, bytes(tb.rng.getrandbits(8) for _ in range(MEM_SIZE)))
    await tb.reset()
    tb.set_backpressure(backpressure)
    for addr, count in _jobs(tb, 6):
        await tb.job(addr, count)


@cocotb.test()
async def test_reset_aborts(dut):
    """A reset in the middle of a job drops it (busy low, no more AR requests) and the next
    job runs normally (the memory model shares the reset, as the kernel's interconnect
    does: AXI has no way to abort a burst)."""
    tb = TB(dut)
    tb.ram.write(0, bytes(itertools.islice(itertools.cycle(range(251)), MEM_SIZE)))
    await tb.reset()
    tb.set_backpressure(False)
    dut.addr.value, dut.count.value, dut.start.value = 0, 1000, 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    for _ in range(10):
        await RisingEdge(dut.clk)
    assert int(dut.busy.value)
    await tb.reset()
    assert not int(dut.busy.value) and not int(dut.m_axi_arvalid.value)
    await tb.job(0x8000, 40)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_axi_rd/icarus-ADDR_W..-DW..).


@pytest.mark.parametrize(
    "addr_w,dw", [(64, 32), (32, 128)], ids=["ADDR_W64-DW32", "ADDR_W32-DW128"]
)
def test_hrl_axi_rd(addr_w, dw):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_axi_rd", {"ADDR_W": addr_w, "DW": dw})
