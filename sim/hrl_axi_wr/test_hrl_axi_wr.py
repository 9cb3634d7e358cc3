"""cocotb testbench of fpga_rtl/rtl/hrl_axi_wr.v, the AXI4 write engine: a `start` pulse
writes `count` beats of DW bits (with byte strobes) from the s_* stream to `addr`.

The memory is cocotbext-axi's `AxiRamWrite`, filled with a known pattern first. After each
job the memory must hold the stream's bytes where their strobe is set and the old pattern
everywhere else (other strobes and outside the job). Every AW burst must be INCR of
DW/8-byte beats, at most 256 beats, never across 4 KiB, contiguous from `addr`, adding up
to `count`; W beats must carry `wlast` exactly on each burst's last beat, and a burst's
first W beat may only go out after its AW was accepted; `busy` must rise the cycle after
`start` and fall only once every write response came back. Jobs: lengths 0, 1, around
256 beats and 4 KiB boundaries, random; with and without random pauses on AW, W and B
and a source that drops s_valid at random.
"""

from __future__ import annotations

import logging
import random

import cocotb
import pytest
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiRamWrite, AxiWriteBus

MEM_SIZE = 1 << 16


def _pattern(addr: int) -> int:
    return (addr * 7 + 3) & 0xFF


class TB(tb_common.MonitoredTB):
    def __init__(self, dut):
        self.dut = dut
        self.dw = rtl_runner.param("DW", 32)
        self.bpb = self.dw // 8  # bytes per beat
        self.rng = random.Random(9)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.ram = AxiRamWrite(AxiWriteBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst,
                               size=MEM_SIZE)
        self.ram.log.setLevel(logging.WARNING)
        dut.rst.value = 1
        for name in ("start", "addr", "count", "s_data", "s_strb", "s_valid"):
            getattr(dut, name).value = 0
        self.valid_prob = 1.0
        self.aw: list[tuple[int, int]] = []   # (awaddr, beats) per AW handshake
        self.w_last: list[int] = []           # wlast of every W handshake
        self.w_open_ok = True                 # every burst's data came after its address
        self.b_count = 0
        self.source: list[tuple[int, int]] = []   # (data, strb) still to send
        self.sent: list[tuple[int, int]] = []     # accepted beats

    def set_backpressure(self, on: bool):
        tb_common.set_pauses((self.ram.aw_channel, self.ram.w_channel, self.ram.b_channel),
                             lambda: self.rng.getrandbits(32), 0.4, on)
        self.valid_prob = 0.6 if on else 1.0

    def _drive(self):
        dut = self.dut
        if self.source and self.rng.random() < self.valid_prob:
            data, strb = self.source[0]
            dut.s_data.value, dut.s_strb.value, dut.s_valid.value = data, strb, 1
        else:
            dut.s_valid.value = 0

    async def _monitor(self):
        """At every rising edge: record AW, W, B and s_* handshakes, then drive s_*."""
        dut = self.dut
        w_in_burst = 0  # W beats of the current burst so far
        while True:
            await RisingEdge(dut.clk)
            if int(dut.m_axi_awvalid.value) and int(dut.m_axi_awready.value):
                assert int(dut.m_axi_awburst.value) == 1, "burst type must be INCR"
                assert int(dut.m_axi_awsize.value) == self.bpb.bit_length() - 1
                self.aw.append((int(dut.m_axi_awaddr.value), int(dut.m_axi_awlen.value) + 1))
                aw_now = 1
            else:
                aw_now = 0
            if int(dut.m_axi_wvalid.value) and int(dut.m_axi_wready.value):
                if w_in_burst == 0:
                    # A burst's first beat: its address was accepted in an earlier cycle.
                    bursts_started = sum(self.w_last) + 1
                    if len(self.aw) - aw_now < bursts_started:
                        self.w_open_ok = False
                last = int(dut.m_axi_wlast.value)
                self.w_last.append(last)
                w_in_burst = 0 if last else w_in_burst + 1
            if int(dut.m_axi_bvalid.value) and int(dut.m_axi_bready.value):
                self.b_count += 1
            if int(dut.s_valid.value) and int(dut.s_ready.value):
                assert self.source, "a beat accepted that was not offered"
                self.sent.append(self.source.pop(0))
            self._drive()

    async def job(self, addr: int, count: int, full_strobes: bool = False):
        dut = self.dut
        self.aw.clear()
        self.w_last.clear()
        self.sent.clear()
        self.b_count = 0
        all_on = (1 << self.bpb) - 1
        beats = [(self.rng.getrandbits(self.dw),
                  all_on if full_strobes or self.rng.random() < 0.5
                  else self.rng.getrandbits(self.bpb)) for _ in range(count)]
        before = self.ram.read(0, MEM_SIZE)
        dut.addr.value, dut.count.value, dut.start.value = addr, count, 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        self.source = list(beats)
        await RisingEdge(dut.clk)
        assert int(dut.busy.value) == (count > 0), "busy must rise the cycle after start"
        for _ in range(30 * count + 60):
            if not int(dut.busy.value):
                break
            await RisingEdge(dut.clk)
        else:
            raise AssertionError(f"job addr=0x{addr:x} count={count} still busy")
        # busy fell: every beat was taken and every response came back.
        assert not self.source and len(self.sent) == count, (len(self.source), len(self.sent))
        assert self.b_count == len(self.aw), f"{self.b_count} B for {len(self.aw)} bursts"
        for _ in range(4):
            await RisingEdge(dut.clk)
            assert not int(dut.busy.value) and not int(dut.m_axi_awvalid.value)
            assert not int(dut.m_axi_wvalid.value)
        tb_common.check_incr_bursts(self.aw, addr, count, self.bpb)
        assert self.w_open_ok, "a burst's data went out before its address"
        # wlast on exactly the last beat of each burst, in order.
        want_last = [int(i == n - 1) for _, n in self.aw for i in range(n)]
        assert self.w_last == want_last, "wlast not on the bursts' last beats"
        # Memory: strobed bytes written, the rest as before.
        want = bytearray(before)
        for i, (data, strb) in enumerate(beats):
            raw = data.to_bytes(self.bpb, "little")
            for b in range(self.bpb):
                if strb >> b & 1:
                    want[addr + i * self.bpb + b] = raw[b]
        got = self.ram.read(0, MEM_SIZE)
        if got != bytes(want):
            bad = next(i for i in range(MEM_SIZE) if got[i] != want[i])
            raise AssertionError(f"memory differs first at 0x{bad:x}: "
                                 f"0x{got[bad]:02x} != 0x{want[bad]:02x}")


def _jobs(tb: TB, n_random: int):
    bpb = tb.bpb
    fixed = [(0, 1), (0x100, 0), (4096 - 3 * bpb, 7), (0x2000, 256), (0x3000 + bpb, 300),
             (0x5000 - 256 * bpb, 257)]
    rand = []
    for _ in range(n_random):
        count = tb.rng.choice([tb.rng.randrange(1, 8), tb.rng.randrange(1, 600)])
        top = MEM_SIZE - count * bpb
        rand.append((tb.rng.randrange(0, top // bpb) * bpb, count))
    return fixed + rand


@cocotb.test()
@cocotb.parametrize(backpressure=[False, True])
async def test_write_jobs(dut, backpressure):
    """Fixed edge cases and random jobs with random strobes, back to back."""
    tb = TB(dut)
    tb.ram.write(0, bytes(_pattern(a) for a in range(MEM_SIZE)))
    await tb.reset()
    tb.set_backpressure(backpressure)
    for addr, count in _jobs(tb, 5):
        await tb.job(addr, count)


@cocotb.test()
async def test_full_strobes_long_job(dut):
    """One job of 700 beats with every strobe on, across several 4 KiB pages."""
    tb = TB(dut)
    tb.ram.write(0, bytes(_pattern(a) for a in range(MEM_SIZE)))
    await tb.reset()
    tb.set_backpressure(False)
    await tb.job(0x1000 - 5 * tb.bpb, 700, full_strobes=True)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_axi_wr/icarus-ADDR_W..-DW..).


@pytest.mark.parametrize(
    "addr_w,dw", [(64, 32), (32, 128)], ids=["ADDR_W64-DW32", "ADDR_W32-DW128"]
)
def test_hrl_axi_wr(addr_w, dw):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_axi_wr", {"ADDR_W": addr_w, "DW": dw})
