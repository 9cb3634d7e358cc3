"""cocotb testbench of fpga_rtl/rtl/hrl_learn_target.v against hrl.fixed_point.optim:
`polyak`, `hard_copy` and `operand` (of the new target masters, as the target net's forward
pass reads them).

Streams of random master words, P lanes a cycle: the extremes (the most negative word, the
largest, zeros), online words near their targets (a trained net's small steps), masters whose
bits below the weight format are exactly one half (the operand's ties) and taus of one half
(Polyak's ties on every odd difference), the largest and the most negative tau words and
tau = 1 lsb and 0; negative taus and, in formats with fewer fractional bits, taus above 1
push Polyak out of range (saturations). Random bubbles (cycles of junk words, not valid)
come between the words. Then passes where copy and Polyak words alternate
cycle by cycle. Every word and flag must equal the reference's, each word's flags its
saturation counts from the reference run on that word alone (vmapped), and a pass's total
the count the reference returns for the whole pass.
"""

from __future__ import annotations

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import FallingEdge
from learn_tb import pack, random_words, unpack
from tb_common import StreamTB

from hrl.fixed_point import Fx
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.optim import hard_copy, operand, polyak

CYCLES = 40


class TB(StreamTB):
    INPUTS = ("tau", "in_copy", "in_online", "in_target")

    def __init__(self, dut, seed: int = 31):
        super().__init__(dut)
        self.P = rtl_runner.param("P", 1)
        self.f = FxFormats(master=Fx(rtl_runner.param("MW", 28), rtl_runner.param("MF", 24)),
                           weight=Fx(rtl_runner.param("WW", 16), rtl_runner.param("WF", 12)),
                           unit=Fx(rtl_runner.param("UW", 16), rtl_runner.param("UF", 15)))
        self.rng = np.random.default_rng(seed + self.P + self.f.master.width)

    def sample(self):
        d, f, p = self.dut, self.f, self.P
        m_sat, w_sat = int(d.out_sat_master.value), int(d.out_sat_weight.value)
        return (unpack(int(d.out_master.value), p, f.master.width),
                unpack(int(d.out_weight.value), p, f.weight.width),
                [(m_sat >> i) & 1 for i in range(p)],
                [(w_sat >> i) & 1 for i in range(p)],
                int(d.out_nsat.value))

    def words(self):
        """(online, target) master words, (CYCLES, P) each."""
        rng, f = self.rng, self.f
        shape = (CYCLES, self.P)
        m = f.master
        target = random_words(rng, shape, m.width)
        online = random_words(rng, shape, m.width)
        # A trained net's small steps: online within a few hundred lsb of its target.
        near = rng.random(shape) < 0.4
        step = rng.integers(-300, 301, shape)
        online = np.where(near, np.clip(target + step, m.min_int, m.max_int), online)
        # The operand's ties: the bits below the weight format exactly one half.
        s = m.frac - f.weight.frac
        if s > 0:
            half = rng.random(shape) < 0.15
            tied = (online & ~((1 << s) - 1)) | (1 << (s - 1))
            online = np.where(half, np.clip(tied, m.min_int, m.max_int), online)
        return online.astype(np.int32), target.astype(np.int32)

    def taus(self) -> list[int]:
        """A random tau in [0, 1], one half (the largest word where the format's range
        ends below it), the largest, the most negative, 1 lsb, 0 and a random word."""
        u = self.f.unit
        half = min(1 << (u.frac - 1), u.max_int) if u.frac > 0 else 1
        return [int(self.rng.integers(0, min(1 << u.frac, u.max_int) + 1)), half, u.max_int,
                u.min_int, 1, 0, int(self.rng.integers(u.min_int, u.max_int + 1))]


def reference(f: FxFormats, online, target, tau: int, copy):
    """(master words, weight words, master flags, weight flags, the pass's count) from hrl:
    per word polyak or hard_copy, then operand; each flag the count of that word alone."""
    on, tg = jnp.asarray(online), jnp.asarray(target)
    pk, pk_n = jax.vmap(jax.vmap(lambda t, w: polyak(t, w, tau, f)))(tg, on)
    master = np.where(copy[:, None], np.asarray(hard_copy(tg, on)), np.asarray(pk))
    sat_m = np.where(copy[:, None], 0, np.asarray(pk_n))
    weight, w_n = jax.vmap(jax.vmap(lambda m: operand(m, f)))(jnp.asarray(master))
    # The whole pass at once (as the learner calls them): its total must be the flags'.
    total = int(operand(jnp.asarray(master), f)[1])
    if not copy.any():
        words, n = polyak(tg, on, tau, f)
        assert np.array_equal(np.asarray(words), master)
        total += int(n)
    else:
        total += int(sat_m.sum())
    return master, np.asarray(weight), sat_m, np.asarray(w_n), total


async def run_pass(tb: TB, tau: int, copy: np.ndarray):
    """One pass of CYCLES cycles; `copy` marks the copy cycles. Returns its saturations."""
    d, f = tb.dut, tb.f
    online, target = tb.words()
    d.tau.value = tau & ((1 << f.unit.width) - 1)
    start = len(tb.out)
    for c in range(CYCLES):
        if tb.rng.random() < 0.15:  # a bubble: junk words that must not come out
            await FallingEdge(d.clk)
            d.in_valid.value = 0
            d.in_online.value = d.in_target.value = (1 << (tb.P * f.master.width)) - 1
            d.in_copy.value = int(tb.rng.integers(0, 2))
        await FallingEdge(d.clk)
        d.in_valid.value = 1
        d.in_copy.value = int(copy[c])
        d.in_online.value = pack(online[c], f.master.width)
        d.in_target.value = pack(target[c], f.master.width)
    await FallingEdge(d.clk)
    d.in_valid.value = 0
    for _ in range(12):   # the unit's 9 cycles of latency, and more
        await FallingEdge(d.clk)
    got = tb.out[start:]
    assert len(got) == CYCLES, f"{len(got)} cycles out, want {CYCLES}"
    master, weight, sat_m, sat_w, total = reference(f, online, target, tau, copy)
    for c, (g_m, g_w, g_sm, g_sw, g_n) in enumerate(got):
        ctx = f"cycle {c} (tau={tau}, copy={bool(copy[c])})"
        assert g_m == list(master[c]), f"{ctx}: master {g_m}, want {list(master[c])} " \
                                       f"(online {list(online[c])}, target {list(target[c])})"
        assert g_w == list(weight[c]), f"{ctx}: weight {g_w}, want {list(weight[c])}"
        assert g_sm == list(sat_m[c]), f"{ctx}: master flags {g_sm}, want {list(sat_m[c])}"
        assert g_sw == list(sat_w[c]), f"{ctx}: weight flags {g_sw}, want {list(sat_w[c])}"
        assert g_n == sum(g_sm) + sum(g_sw), f"{ctx}: count {g_n}, flags {g_sm} {g_sw}"
    sats = sum(g[4] for g in got)
    assert sats == total, f"tau={tau}: {sats} saturations, reference {total}"
    return sats


@cocotb.test()
async def test_polyak_passes(dut):
    """Polyak at several taus (ties, extremes, negative); both narrowings saturate."""
    tb = TB(dut)
    await tb.reset()
    polyak_sats = weight_sats = 0
    start = len(tb.out)
    for tau in tb.taus():
        await run_pass(tb, tau, np.zeros(CYCLES, bool))
    for _, _, sm, sw, _ in tb.out[start:]:
        polyak_sats += sum(sm)
        weight_sats += sum(sw)
    assert polyak_sats > 0, "Polyak never saturated: the extremes did not reach the unit"
    assert weight_sats > 0, "the operand never saturated: the extremes did not reach it"


@cocotb.test()
async def test_copy_and_polyak_interleaved(dut):
    """Copy (and operand) words between Polyak words, cycle by cycle; then a copy pass. The
    most negative tau makes the Polyak step of a copy word saturate too, which a copy word
    must not count."""
    tb = TB(dut, seed=7)
    await tb.reset()
    random_tau, half, _, most_negative, *_ = tb.taus()
    for tau in (random_tau, half, most_negative):
        await run_pass(tb, tau, tb.rng.random(CYCLES) < 0.5)
    await run_pass(tb, tb.taus()[0], np.ones(CYCLES, bool))


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py.

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_target.v"]

SETS = [
    pytest.param("icarus", {"P": 1, "MW": 28, "MF": 24, "WW": 16, "WF": 12, "UW": 16,
                            "UF": 15}, id="icarus-P1-default"),
    pytest.param("verilator", {"P": 4, "MW": 24, "MF": 18, "WW": 12, "WF": 8, "UW": 12,
                               "UF": 9}, id="verilator-P4-M24", marks=pytest.mark.long),
    pytest.param("icarus", {"P": 3, "MW": 20, "MF": 14, "WW": 18, "WF": 16, "UW": 10,
                            "UF": 10}, id="icarus-P3-left-shift", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_target(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_target", prm, sources=SOURCES, sim=sim)
