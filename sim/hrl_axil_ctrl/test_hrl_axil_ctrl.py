"""cocotb testbench of fpga_rtl/rtl/hrl_axil_ctrl.v, the kernels' AXI4-Lite control block
(ap_ctrl_hs, interrupts, argument registers, read-only words).

The host side is cocotbext-axi's `AxiLiteMaster` on s_axi_control, as the kernels' drivers
use it, with random pauses on the write address and data channels in part of the run (so
the address comes first, the data first, or both together).
A Python model of the register map (the module's header, nothing of the RTL) predicts every
read: argument registers written through random byte strobes, read-only words the testbench
changes all the time, unmapped words 0, writes to read-only and unmapped words ignored, the
`args` bus equal to the model's registers after every write. The run handshake: ap_start
held until `finish`, ap_done and ap_ready set by it and cleared by a read of 0x00, ap_idle the
kernel's `idle`, ISR raised where IER enables it and toggled by writes, interrupt = GIE and
any ISR bit.
"""

from __future__ import annotations

import logging
import random

import cocotb
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

AP_START, AP_DONE, AP_IDLE, AP_READY = 1, 2, 4, 8


class TB:
    """The bus model, the register map's model and the kernel side's pins (finish, idle,
    ro)."""

    def __init__(self, dut):
        self.dut = dut
        self.aa = rtl_runner.param("AA", 7)
        self.writable = rtl_runner.param("WRITABLE", 0)
        self.read_only = rtl_runner.param("READ_ONLY", 0)
        self.rng = random.Random(11)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.clk,
                                  dut.rst)
        self.axil.write_if.log.setLevel(logging.WARNING)
        self.axil.read_if.log.setLevel(logging.WARNING)
        dut.rst.value = 1
        dut.finish.value = 0
        dut.idle.value = 1
        dut.ro.value = 0
        self.args = dict.fromkeys(range(32), 0)   # the model's argument registers
        self.ro = dict.fromkeys(range(32), 0)     # the read-only words as driven now

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 3)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        self.args = dict.fromkeys(range(32), 0)

    def set_ro(self, word: int, value: int):
        self.ro[word] = value
        self.dut.ro.value = sum(v << (32 * w) for w, v in self.ro.items())

    def want(self, word: int) -> int:
        """What a read of word 4..31 returns, by the register map."""
        if self.writable >> word & 1:
            return self.args[word]
        if self.read_only >> word & 1:
            return self.ro[word]
        return 0

    def model_write(self, word: int, data: int, strb: int):
        if word >= 4 and self.writable >> word & 1:
            old = self.args[word]
            for b in range(4):
                if strb >> b & 1:
                    old = (old & ~(0xFF << 8 * b)) | (data & (0xFF << 8 * b))
            self.args[word] = old

    async def write(self, word: int, data: int, first: int = 0, last: int = 4):
        """A write of bytes first..last-1 of word `word` (the strobes the bus model sets
        for them) holding data's bytes there."""
        addr = 4 * word + first
        await self.axil.write(addr, (data >> 8 * first).to_bytes(4, "little")[: last - first])
        self.model_write(word, data, ((1 << last) - 1) ^ ((1 << first) - 1))

    def set_pauses(self, on: bool):
        """Random pauses on the address and the data channels, so that the address comes
        first, the data first, or both together."""
        for ch in (self.axil.write_if.aw_channel, self.axil.write_if.w_channel):
            rng = random.Random(self.rng.getrandbits(32))
            ch.set_pause_generator(iter(lambda r=rng: r.random() < 0.5, None) if on else None)
            if not on:
                ch.pause = False   # a generator taken away leaves its last pause standing

    async def read(self, word: int) -> int:
        return await self.axil.read_dword(4 * word)

    async def check_args_bus(self):
        await ReadOnly()
        bus = self.dut.args.value.to_unsigned()
        for w in range(32):
            got = bus >> (32 * w) & 0xFFFF_FFFF
            want = self.args[w] if self.writable >> w & 1 else 0
            assert got == want, f"args word {w}: 0x{got:08x}, want 0x{want:08x}"
        await RisingEdge(self.dut.clk)


@cocotb.test()
async def test_register_map(dut):
    """Random writes (random byte ranges, every word 4..31, with and without pauses on the
    address and data channels) and reads of every word against the model; read-only words
    change between reads; the args bus follows the writes."""
    tb = TB(dut)
    await tb.reset()
    for w in range(4, 32):
        assert await tb.read(w) == 0, f"word {w} not 0 after reset"
    for step in range(400):
        if step % 100 == 0:
            tb.set_pauses(step % 200 == 100)
        word = tb.rng.randrange(4, 32)
        if tb.read_only >> word & 1 and tb.rng.random() < 0.5:
            tb.set_ro(word, tb.rng.getrandbits(32))
        if tb.rng.random() < 0.5:
            first, last = (0, 4) if tb.rng.random() < 0.5 else sorted(tb.rng.sample(range(5), 2))
            await tb.write(word, tb.rng.getrandbits(32), first, last)
            if step % 16 == 0:
                await tb.check_args_bus()
        else:
            got = await tb.read(word)
            assert got == tb.want(word), (
                f"step {step}: word {word} read 0x{got:08x}, want 0x{tb.want(word):08x}")
    await tb.check_args_bus()
    # Above word 31 the map repeats (addr[6:2] only), where the bus has more address bits.
    if tb.aa > 7:
        word = next((w for w in range(4, 32) if tb.writable >> w & 1), None)
        if word is not None:
            assert await tb.axil.read_dword(4 * word + 128) == tb.args[word]
    # A reset clears every argument register.
    await tb.reset()
    await tb.check_args_bus()


@cocotb.test()
async def test_run_handshake(dut):
    """ap_ctrl_hs as XRT sees it: ap_start held until finish, ap_done and ap_ready from
    finish and clear on read, ap_idle the kernel's, ISR by IER, toggled by writes, and the
    interrupt line."""
    tb = TB(dut)
    await tb.reset()
    assert await tb.read(0) == AP_IDLE, "after reset: only ap_idle"
    for w, want in ((1, 0), (2, 0), (3, 0)):
        assert await tb.read(w) == want, f"word {w} after reset"
    await tb.write(1, 1)           # GIE
    await tb.write(2, 0b11)        # IER: done and ready
    assert await tb.read(1) == 1 and await tb.read(2) == 3
    for run in range(6):
        # the host starts a run; the kernel drops idle, runs a while, finishes
        await tb.write(0, AP_START if run % 2 else 0xFFFF_FFF1)   # only bit 0 counts
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.ap_start.value) == 1, "ap_start not set by the write"
        await RisingEdge(dut.clk)
        dut.idle.value = 0
        for _ in range(tb.rng.randrange(1, 4)):
            ctrl = await tb.read(0)
            assert ctrl == AP_START, f"run {run} running: control 0x{ctrl:x}"
        assert int(dut.interrupt.value) == 0, f"run {run}: interrupt before finish"
        dut.finish.value = 1
        dut.idle.value = 1
        await RisingEdge(dut.clk)
        dut.finish.value = 0
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.ap_start.value) == 0, "ap_start not cleared by finish"
        assert int(dut.interrupt.value) == 1, "no interrupt after finish"
        await RisingEdge(dut.clk)
        ctrl = await tb.read(0)
        assert ctrl == AP_DONE | AP_IDLE | AP_READY, f"run {run} done: control 0x{ctrl:x}"
        ctrl = await tb.read(0)
        assert ctrl == AP_IDLE, f"ap_done and ap_ready must clear on read: 0x{ctrl:x}"
        assert await tb.read(3) == 0b11
        # ISR toggles on write: clear done, then ready; the line falls with the last bit
        await tb.write(3, 0b01)
        assert await tb.read(3) == 0b10 and int(dut.interrupt.value) == 1
        await tb.write(3, 0b10)
        assert await tb.read(3) == 0
        await RisingEdge(dut.clk)
        assert int(dut.interrupt.value) == 0, "interrupt with ISR clear"
        # the next run: only one of the interrupts enabled, or GIE off
        ier, gie = [(0b01, 1), (0b10, 1), (0b11, 0)][run % 3]
        await tb.write(2, ier)
        await tb.write(1, gie)
        await tb.write(0, AP_START)
        dut.finish.value = 1
        await RisingEdge(dut.clk)
        dut.finish.value = 0
        await RisingEdge(dut.clk)
        assert await tb.read(3) == ier, f"ISR with IER {ier:b}"
        await RisingEdge(dut.clk)
        assert int(dut.interrupt.value) == gie, f"interrupt with GIE {gie}"
        await tb.read(0)                      # clear done and ready
        await tb.write(3, ier)               # clear ISR
        await tb.write(1, 1)
        await tb.write(2, 0b11)
    # A write of 0 to the control word does not start a run; ap_start has no clear by write.
    await tb.write(0, 0)
    assert await tb.read(0) == AP_IDLE


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_axil_ctrl.py; one build directory per case. The masks are
# the two kernels' register maps and a map with every word 4..31 used.
RMM_MAP = {"WRITABLE": 0x003F_D550, "READ_ONLY": 0x0700_0000}
LEARN_MAP = {"WRITABLE": 0x0500_D550, "READ_ONLY": 0x00FF_0000}
FULL_MAP = {"WRITABLE": 0x5555_5550, "READ_ONLY": 0xAAAA_AAA0}
SETS = [("icarus", {"AA": 7, **RMM_MAP}), ("icarus", {"AA": 12, **FULL_MAP}),
        ("verilator", {"AA": 7, **LEARN_MAP})]


@pytest.mark.parametrize("sim,prm", SETS,
                         ids=[rtl_runner.case_name(f"{s}-hrl_axil_ctrl", p) for s, p in SETS])
def test_hrl_axil_ctrl(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_axil_ctrl", prm, sim=sim)
