"""cocotb testbench of fpga_rtl/rtl/hrl_beats_to_words.v: AXI data beats of DW/32 words in,
groups of up to G words out (G each, then one group of count % G at the end of the job).

A Python model cuts the job's `count` words into the groups the module must produce; the
beats carry random words, and the words of the last beat past `count` are garbage that
must not appear. s_valid and m_ready stall at random. Checked: every group's size
(`m_count`) and words, no extra beat accepted (s_ready low once `count` words arrived),
m_* held stable while stalled, and `busy` until the last group left.
"""

from __future__ import annotations

import random

import cocotb
import pytest
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotb.utils import get_sim_time

MASK32 = 0xFFFFFFFF


def expected_groups(words: list[int], g: int) -> list[list[int]]:
    """The groups of the job: G words each, then the rest."""
    return [words[i: i + g] for i in range(0, len(words), g)]


class TB(tb_common.MonitoredTB):
    def __init__(self, dut):
        self.dut = dut
        self.dw = rtl_runner.param("DW", 512)
        self.g = rtl_runner.param("G", 4)
        self.nw = self.dw // 32
        self.rng = random.Random(3)
        self.valid_prob = self.ready_prob = 1.0
        self.source: list[int] = []       # beats still to offer
        self.groups: list[list[int]] = []  # groups received (their valid words)
        self.beats_taken = 0
        self.m_port = tb_common.HeldOffer()  # (words, count) offered but not taken
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        for name in ("rst", "start", "count", "s_data", "s_valid", "m_ready"):
            getattr(dut, name).value = 0
        dut.rst.value = 1

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            m_valid, m_ready = int(dut.m_valid.value), int(dut.m_ready.value)
            offer = None
            if m_valid:
                words = int(dut.m_words.value)
                n = int(dut.m_count.value)
                assert 1 <= n <= self.g, f"m_count {n}"
                offer = (words & ((1 << (32 * n)) - 1), n)
            if self.m_port.taken(m_valid, m_ready, offer):
                self.groups.append([(offer[0] >> (32 * i)) & MASK32 for i in range(n)])
            if int(dut.s_valid.value) and int(dut.s_ready.value):
                assert self.source, "a beat accepted that was not offered"
                self.source.pop(0)
                self.beats_taken += 1
            if self.source and self.rng.random() < self.valid_prob:
                dut.s_data.value, dut.s_valid.value = self.source[0], 1
            else:
                dut.s_valid.value = 0
            dut.m_ready.value = int(self.rng.random() < self.ready_prob)

    async def job(self, count: int, extra_beats: int = 2):
        """One job of `count` words; `extra_beats` more beats are offered after the job's
        own and must not be taken."""
        dut = self.dut
        words = [self.rng.getrandbits(32) for _ in range(count)]
        n_beats = -(-count // self.nw)
        padded = words + [self.rng.getrandbits(32) for _ in range(n_beats * self.nw - count)]
        beats = [sum(w << (32 * i) for i, w in enumerate(padded[b * self.nw:(b + 1) * self.nw]))
                 for b in range(n_beats)]
        beats += [self.rng.getrandbits(self.dw) for _ in range(extra_beats)]
        self.groups.clear()
        self.beats_taken = 0
        dut.count.value, dut.start.value = count, 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        self.source = beats
        want = expected_groups(words, self.g)
        for _ in range(20 * (n_beats + len(want)) + 40):
            await RisingEdge(dut.clk)
            if not int(dut.busy.value) and self.m_port.held is None:
                break
        else:
            raise AssertionError(f"job of {count} words: still busy")
        for _ in range(3):
            await RisingEdge(dut.clk)
            assert not int(dut.m_valid.value) and not int(dut.busy.value)
        assert self.beats_taken == n_beats, f"{self.beats_taken} beats taken, {n_beats} sent"
        assert [len(g) for g in self.groups] == [len(g) for g in want], "group sizes"
        assert self.groups == want, "group words"
        self.source = []


@cocotb.test()
@cocotb.parametrize(stalls=[False, True])
async def test_random_jobs(dut, stalls):
    """Jobs of 1 word, one beat, one group, a beat +- 1, and random lengths."""
    tb = TB(dut)
    await tb.reset()
    if stalls:
        tb.valid_prob, tb.ready_prob = 0.6, 0.5
    counts = [1, tb.nw, tb.g, tb.nw + 1, max(1, tb.nw - 1), tb.g + 1, 2 * tb.g * tb.nw + 3]
    counts += [tb.rng.randrange(1, 5 * tb.nw * tb.g + 2) for _ in range(6)]
    for count in counts:
        await tb.job(count)


@cocotb.test()
async def test_full_rate(dut):
    """With s_valid and m_ready always high, a long job runs at the slower of one beat and
    one group per cycle when G divides DW/32 or DW/32 divides G (the kernel's shapes).

    Otherwise it measures, and bounds at 2/3 of that rate: s_ready looks at the words held
    before the cycle's group leaves (held <= G), so with DW=128, G=3 a beat waits a cycle
    after every group that leaves 4 words behind (2 words per cycle, not 3). The data are
    checked either way."""
    tb = TB(dut)
    await tb.reset()
    count = 40 * tb.g
    start = get_sim_time("ns")
    await tb.job(count, extra_beats=0)
    cycles = (get_sim_time("ns") - start) / 10 - 5  # less start and the job's checks
    groups = len(tb.groups)
    beats = -(-count // tb.nw)
    ideal = max(groups, beats)
    tb.dut._log.info(f"{count} words: {cycles:.0f} cycles, ideal {ideal}")
    if tb.nw % tb.g == 0 or tb.g % tb.nw == 0:
        assert cycles <= ideal + 4, (cycles, groups, beats)
    else:
        assert cycles <= 1.5 * ideal + 4, (cycles, groups, beats)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_beats_to_words/icarus-DW..-G..).


@pytest.mark.parametrize(
    "dw,g", [(32, 4), (128, 3), (512, 4)], ids=["DW32-G4", "DW128-G3", "DW512-G4"]
)
def test_hrl_beats_to_words(dw, g):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_beats_to_words", {"DW": dw, "G": g})
