"""cocotb testbench of fpga_rtl/rtl/hrl_words_to_beats.v: groups of up to G 32-bit words in
(`s_count` valid), AXI data beats of DW/32 words with byte strobes out.

A Python model packs the job's words into beats: full beats (every strobe set), then one
beat of the remaining words with the strobes of the rest low, ceil(count / (DW/32)) beats
in all. The groups have random sizes in [1, G] (the last one what is left), random words
above `s_count`, and s_valid and m_ready stall at random. Checked: every beat's valid words
and strobes, the beat count, no group accepted past `count`, m_* held stable while stalled.
"""

from __future__ import annotations

import random

import cocotb
import pytest
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

MASK32 = 0xFFFFFFFF


def expected_beats(words: list[int], nw: int) -> list[tuple[list[int], int]]:
    """(valid words, strobe) of every beat of the job."""
    out = []
    for i in range(0, len(words), nw):
        chunk = words[i: i + nw]
        out.append((chunk, (1 << (4 * len(chunk))) - 1))
    return out


class TB(tb_common.MonitoredTB):
    def __init__(self, dut):
        self.dut = dut
        self.dw = rtl_runner.param("DW", 512)
        self.g = rtl_runner.param("G", 2)
        self.nw = self.dw // 32
        self.rng = random.Random(4)
        self.valid_prob = self.ready_prob = 1.0
        self.source: list[tuple[int, int]] = []   # (words, s_count) still to offer
        self.beats: list[tuple[list[int], int]] = []
        self.groups_taken = 0
        self.m_port = tb_common.HeldOffer()  # (data, strb) offered, not taken
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        for name in ("start", "count", "s_words", "s_count", "s_valid", "m_ready"):
            getattr(dut, name).value = 0
        dut.rst.value = 1

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            m_valid, offer = int(dut.m_valid.value), None
            if m_valid:
                strb = int(dut.m_strb.value)
                n = (strb.bit_length() + 3) // 4
                assert strb == (1 << (4 * n)) - 1, f"strobes 0x{strb:x} not a run of words"
                offer = (int(dut.m_data.value) & ((1 << (32 * n)) - 1), strb)
            if self.m_port.taken(m_valid, int(dut.m_ready.value), offer):
                self.beats.append(([(offer[0] >> (32 * i)) & MASK32 for i in range(n)], strb))
            if int(dut.s_valid.value) and int(dut.s_ready.value):
                assert self.source, "a group accepted that was not offered"
                self.source.pop(0)
                self.groups_taken += 1
            if self.source and self.rng.random() < self.valid_prob:
                words, n = self.source[0]
                dut.s_words.value, dut.s_count.value, dut.s_valid.value = words, n, 1
            else:
                dut.s_valid.value = 0
            dut.m_ready.value = int(self.rng.random() < self.ready_prob)

    async def job(self, count: int, sizes: str = "random", extra_groups: int = 2):
        """One job of `count` words in groups of random sizes (or all G: sizes="full");
        `extra_groups` more groups are offered after the job's own and must not be taken."""
        dut = self.dut
        words = [self.rng.getrandbits(32) for _ in range(count)]
        groups, i = [], 0
        while i < count:
            n = self.g if sizes == "full" else self.rng.randrange(1, self.g + 1)
            n = min(n, count - i)
            packed = sum(w << (32 * j) for j, w in enumerate(words[i: i + n]))
            garbage = self.rng.getrandbits(32 * (self.g - n)) << (32 * n) if n < self.g else 0
            groups.append((packed | garbage, n))
            i += n
        n_groups = len(groups)
        groups += [(self.rng.getrandbits(32 * self.g), self.g) for _ in range(extra_groups)]
        self.beats.clear()
        self.groups_taken = 0
        dut.count.value, dut.start.value = count, 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        self.source = groups
        want = expected_beats(words, self.nw)
        for _ in range(20 * (n_groups + len(want)) + 40):
            await RisingEdge(dut.clk)
            if len(self.beats) >= len(want):
                break
        else:
            raise AssertionError(f"job of {count} words: {len(self.beats)} of {len(want)} beats")
        for _ in range(4):
            await RisingEdge(dut.clk)
            assert not int(dut.m_valid.value) and not int(dut.s_ready.value)
        assert self.groups_taken == n_groups, f"{self.groups_taken} groups taken of {n_groups}"
        assert len(self.beats) == len(want)
        for k, ((got_w, got_s), (want_w, want_s)) in enumerate(zip(self.beats, want, strict=True)):
            assert got_s == want_s, f"beat {k}: strobes 0x{got_s:x} != 0x{want_s:x}"
            assert got_w == want_w, f"beat {k}: words differ"
        self.source = []


@cocotb.test()
@cocotb.parametrize(stalls=[False, True])
async def test_random_jobs(dut, stalls):
    """Jobs of 1 word, one beat, a beat +- 1, a group, and random lengths, in groups of
    random sizes."""
    tb = TB(dut)
    await tb.reset()
    if stalls:
        tb.valid_prob, tb.ready_prob = 0.6, 0.5
    counts = [1, tb.nw, tb.nw + 1, max(1, tb.nw - 1), tb.g, 3 * tb.nw * tb.g + 1]
    counts += [tb.rng.randrange(1, 5 * tb.nw * tb.g + 2) for _ in range(6)]
    for count in counts:
        await tb.job(count)


@cocotb.test()
async def test_full_groups(dut):
    """Groups of G words at full rate, beats taken at full rate."""
    tb = TB(dut)
    await tb.reset()
    for count in (tb.g * tb.nw, 7 * tb.g + 1):
        await tb.job(count, sizes="full")


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_words_to_beats/icarus-DW..-G..).


@pytest.mark.parametrize(
    "dw,g", [(32, 2), (128, 3), (512, 4)], ids=["DW32-G2", "DW128-G3", "DW512-G4"]
)
def test_hrl_words_to_beats(dw, g):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_words_to_beats", {"DW": dw, "G": g})
