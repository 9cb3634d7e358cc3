"""cocotb testbench of fpga_rtl/rtl/hrl_learn_mac_array.v against hrl.fixed_point.matmul.

The array is fed as the learning module's feeders feed it, in its three modes: A @ W + b
(forward, a bias preloaded), delta @ W^T (backward) and A^T @ delta (weight gradient), with
random shapes that are not multiples of R or C, random formats (operands narrower than the
bus, sign-extended), run-time narrowing shifts from -4 up, output widths that saturate, and
random bubbles in the input stream. Every output word and the saturation count must equal
hrl.fixed_point.matmul's.
"""

from __future__ import annotations

import json
import os

import cocotb
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from learn_tb import pack, random_words, unpack

from hrl.fixed_point import Fx, matmul
from hrl.mapping import learner_schedule

MODES = ("forward", "backward", "wgrad")


class TB:
    def __init__(self, dut, seed: int = 1):
        self.dut = dut
        self.R = rtl_runner.param("R", 4)
        self.C = rtl_runner.param("C", 4)
        self.AW = rtl_runner.param("AW", 16)
        self.BW = rtl_runner.param("BW", 16)
        self.BIASW = rtl_runner.param("BIASW", 16)
        self.BSMAX = rtl_runner.param("BSMAX", 24)
        self.KMAX = rtl_runner.param("KMAX", 256)
        self.OW = rtl_runner.param("OW", 16)
        self.TAGW = rtl_runner.param("TAGW", 8)
        self.rng = np.random.default_rng(seed + 1000 * self.R + 100 * self.C)
        # The shapes drawn below fit (M, K, N) <= pad: the reference runs on one shape.
        self.kmax = min(self.KMAX, 3 * max(self.R, self.C) + 5)
        self.pad = (max(2 * self.R + 2, self.kmax), self.kmax, 2 * self.C + 2)
        self.outputs = []  # (tag, row, words, sats) in arrival order
        self.out_cycles = []  # the monitor's cycle count at each output row
        self.cycles = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        cocotb.start_soon(self._monitor())

    async def reset(self):
        d = self.dut
        d.rst.value = 1
        d.in_valid.value = 0
        d.in_first.value = 0
        d.in_last.value = 0
        for s in ("in_x", "in_w", "in_bias", "in_bias_shift", "in_shift", "in_width", "in_tag",
                  "in_rows"):
            getattr(d, s).value = 0
        for _ in range(3):
            await RisingEdge(d.clk)
        d.rst.value = 0

    async def _monitor(self):
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            self.cycles += 1
            if str(d.out_valid.value) == "1":
                self.out_cycles.append(self.cycles)
                self.outputs.append((int(d.out_tag.value), int(d.out_row.value),
                                     unpack(int(d.out_data.value), self.C, self.OW),
                                     int(d.out_sat.value)))

    async def product(self, x, w, out: Fx, a: Fx, b: Fx, bias=None, bias_fmt=None,
                      p_bubble: float = 0.1):
        """Stream X (M, K) @ W (K, N) tile by tile; return (words (M, N), n_saturated)."""
        d, R, C = self.dut, self.R, self.C
        m, k = x.shape
        n = w.shape[1]
        tiles = [(r0, c0) for r0 in range(0, m, R) for c0 in range(0, n, C)]
        bshift = 0 if bias is None else a.frac + b.frac - bias_fmt.frac
        shift = a.frac + b.frac - out.frac
        start = len(self.outputs)
        for t, (r0, c0) in enumerate(tiles):
            xs = np.zeros((R, k), np.int64)
            xs[: min(R, m - r0)] = x[r0:r0 + R]
            ws = np.zeros((k, C), np.int64)
            ws[:, : min(C, n - c0)] = w[:, c0:c0 + C]
            bs = np.zeros(C, np.int64)
            if bias is not None:
                bs[: min(C, n - c0)] = bias[c0:c0 + C]
            kk = 0
            while kk < k:
                await FallingEdge(d.clk)
                if self.rng.random() < p_bubble:
                    d.in_valid.value = 0
                    continue
                d.in_valid.value = 1
                d.in_first.value = int(kk == 0)
                d.in_last.value = int(kk == k - 1)
                d.in_x.value = pack(xs[:, kk], self.AW)
                d.in_w.value = pack(ws[kk], self.BW)
                d.in_bias.value = pack(bs, self.BIASW)
                d.in_bias_shift.value = bshift
                d.in_shift.value = shift & 0xFF
                d.in_width.value = out.width
                d.in_tag.value = t % (1 << self.TAGW)
                d.in_rows.value = min(R, m - r0)
                await ReadOnly()
                if str(d.in_ready.value) == "1":
                    kk += 1
        await FallingEdge(d.clk)
        d.in_valid.value = 0
        want_rows = sum(min(R, m - r0) for r0, _ in tiles)
        for _ in range(20 + 2 * want_rows):
            if len(self.outputs) - start >= want_rows:
                break
            await FallingEdge(d.clk)
        got = self.outputs[start:]
        assert len(got) == want_rows, f"{len(got)} output rows, want {want_rows}"
        y_full = np.zeros((((m + R - 1) // R) * R, ((n + C - 1) // C) * C), np.int64)
        sats = 0
        order = [(t, r) for t, (r0, _) in enumerate(tiles) for r in range(min(R, m - r0))]
        for i, ((tag, row, words, sat), (t, r)) in enumerate(zip(got, order, strict=True)):
            assert tag == t % (1 << self.TAGW), f"output row {i}: tag {tag}, want tile {t}"
            assert row == r, f"output row {i}: row {row}, want {r}"
            r0, c0 = tiles[t]
            y_full[r0 + row, c0:c0 + C] = words
            for c in range(C):
                if r0 + row < m and c0 + c < n and (sat >> c) & 1:
                    sats += 1
        return y_full[:m, :n], sats

    def formats(self):
        """Random operand, bias and output formats that fit the array's widths."""
        rng = self.rng
        aw = int(rng.integers(max(2, self.AW - 8), self.AW + 1))
        bw = int(rng.integers(max(2, self.BW - 8), self.BW + 1))
        a = Fx(aw, int(rng.integers(0, aw)))
        b = Fx(bw, int(rng.integers(0, bw)))
        ow = int(rng.integers(max(2, self.OW - 6), self.OW + 1))
        # Output fractions: from 4 finer than the products (exact left shifts, saturating)
        # to coarse (ties and rounding); most near the operands' own scale.
        pf = a.frac + b.frac
        choice = rng.random()
        if choice < 0.15:
            of = pf + int(rng.integers(0, 5))
        elif choice < 0.3:
            of = pf - int(rng.integers(1, 4))
        else:
            of = int(rng.integers(max(pf - 24, pf - a.width - b.width), pf - 2))
        out = Fx(ow, of)
        biasw = int(rng.integers(max(2, self.BIASW - 6), self.BIASW + 1))
        bf = pf - int(rng.integers(0, min(self.BSMAX, pf) + 1))
        return a, b, Fx(biasw, bf), out


def reference(tb: TB, x, a: Fx, w, b: Fx, out: Fx, bias=None, bias_fmt=None):
    """hrl.fixed_point.matmul on operands zero-padded to one shape per testbench (a zero
    term adds nothing to an exact sum), so JAX compiles its operations once, not per shape.
    Returns (words (M, N) as numpy, n_saturated over the unpadded words)."""
    m, k = x.shape
    n = w.shape[1]
    mp, kp, np_ = tb.pad
    xp = np.zeros((mp, kp), np.int32)
    xp[:m, :k] = x
    wp = np.zeros((kp, np_), np.int32)
    wp[:k, :n] = w
    bp = None
    if bias is not None:
        bp = np.zeros(np_, np.int32)
        bp[:n] = bias
        bp = jnp.asarray(bp)
    y, sat = matmul(jnp.asarray(xp), a, jnp.asarray(wp), b, out, bias=bp, bias_fmt=bias_fmt)
    sat = int(sat)
    if bias is not None and mp > m:
        # A padding row is the bias alone; take its saturations back out.
        _, row_sat = matmul(jnp.zeros((1, kp), jnp.int32), a, jnp.asarray(wp), b, out,
                            bias=bp, bias_fmt=bias_fmt)
        sat -= (mp - m) * int(row_sat)
    return np.asarray(y)[:m, :n], sat


async def check_mode(tb: TB, mode: str, batch: int, n_in: int, n_out: int):
    """One product of `mode` for a layer n_in -> n_out and a batch; compare with matmul."""
    rng = tb.rng
    a, b, bias_fmt, out = tb.formats()
    if mode == "forward":
        xm = random_words(rng, (batch, n_in), a.width)
        wm = random_words(rng, (n_in, n_out), b.width)
        bias = random_words(rng, (n_out,), bias_fmt.width)
        want, want_sat = reference(tb, xm, a, wm, b, out, bias=bias, bias_fmt=bias_fmt)
        got, sat = await tb.product(xm, wm, out, a, b, bias=bias, bias_fmt=bias_fmt)
    elif mode == "backward":
        delta = random_words(rng, (batch, n_out), a.width)
        wm = random_words(rng, (n_in, n_out), b.width)
        want, want_sat = reference(tb, delta, a, wm.T, b, out)
        got, sat = await tb.product(delta, wm.T, out, a, b)
    else:
        act = random_words(rng, (batch, n_in), a.width)
        delta = random_words(rng, (batch, n_out), b.width)
        want, want_sat = reference(tb, act.T, a, delta, b, out)
        got, sat = await tb.product(act.T, delta, out, a, b)
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{mode} {batch}x{n_in}->{n_out} a={a} b={b} out={out}: {len(bad)} words differ, "
        f"first at {tuple(bad[0])}: got {got[tuple(bad[0])]} want {want[tuple(bad[0])]}")
    assert sat == int(want_sat), f"{mode}: {sat} saturations, reference {int(want_sat)}"


def _shapes(tb: TB, count: int):
    rng = tb.rng
    for _ in range(count):
        yield (int(rng.integers(1, 2 * tb.R + 3)), int(rng.integers(1, tb.kmax + 1)),
               int(rng.integers(1, 2 * tb.C + 3)))


@cocotb.test()
async def test_three_modes_random_shapes(dut):
    """Forward, backward and weight-gradient products of random shapes and formats."""
    tb = TB(dut)
    await tb.reset()
    n = int(os.environ.get("LEARN_TB_PRODUCTS", "4"))
    for mode in MODES:
        for batch, n_in, n_out in _shapes(tb, n):
            if mode == "wgrad":  # A^T @ delta: M is n_in, K the batch
                batch, n_in = min(n_in, tb.kmax), min(batch, tb.kmax)
            elif mode == "backward":  # delta @ W^T: K is n_out, N is n_in
                n_in, n_out = n_out, min(n_in, tb.kmax)
            await check_mode(tb, mode, batch, n_in, n_out)


@cocotb.test()
async def test_short_tiles_back_to_back(dut):
    """K = 1..3 (shorter than the drain) with no bubbles: the last beat waits, no row lost."""
    tb = TB(dut, seed=2)
    await tb.reset()
    for k in (1, 2, 3, tb.R + 2):
        a, b, bias_fmt, out = tb.formats()
        xm = random_words(tb.rng, (2 * tb.R + 1, k), a.width)
        wm = random_words(tb.rng, (k, 2 * tb.C - 1), b.width)
        bias = random_words(tb.rng, (2 * tb.C - 1,), bias_fmt.width)
        want, want_sat = reference(tb, xm, a, wm, b, out, bias=bias, bias_fmt=bias_fmt)
        got, sat = await tb.product(xm, wm, out, a, b, bias=bias, bias_fmt=bias_fmt,
                                    p_bubble=0.0)
        assert np.array_equal(got, want), f"K={k}: words differ"
        assert sat == int(want_sat), f"K={k}: {sat} saturations, want {int(want_sat)}"


async def stream_phase(tb: TB, products) -> int:
    """Stream a phase's products back to back (random words, no bubbles) and return the
    cycles from its first accepted beat to its last output row, inclusive."""
    d, R, C = tb.dut, tb.R, tb.C
    start = len(tb.outputs)
    first = None
    n_rows = 0
    for m, k, n in products:
        for r0 in range(0, m, R):
            for _c0 in range(0, n, C):
                rows = min(R, m - r0)
                n_rows += rows
                kk = 0
                while kk < k:
                    await FallingEdge(d.clk)
                    d.in_valid.value = 1
                    d.in_first.value = int(kk == 0)
                    d.in_last.value = int(kk == k - 1)
                    d.in_x.value = int(tb.rng.integers(0, 1 << 62)) % (1 << (R * tb.AW))
                    d.in_w.value = int(tb.rng.integers(0, 1 << 62)) % (1 << (C * tb.BW))
                    d.in_rows.value = rows
                    d.in_width.value = tb.OW
                    await ReadOnly()
                    if str(d.in_ready.value) == "1":
                        if first is None:
                            first = tb.cycles
                        kk += 1
    await FallingEdge(d.clk)
    d.in_valid.value = 0
    for _ in range(100 + 2 * n_rows):
        if len(tb.outputs) - start >= n_rows:
            break
        await FallingEdge(d.clk)
    assert len(tb.outputs) - start == n_rows, f"{len(tb.outputs) - start} rows, want {n_rows}"
    return tb.out_cycles[-1] - first + 1


# The default schedule: short and long K, ragged rows, two products in one phase.
DEFAULT_SCHEDULE = [[(5, 1, 3)], [(9, 2, 6), (3, 7, 2)], [(6, 12, 9)], [(1, 3, 8)],
                    [(1, 1, 1)], [(4, 6, 4)], [(8, 6, 4)], [(4, 3, 8)], [(4, 4, 8)]]


@cocotb.test()
async def test_schedule_cycles(dut):
    """Each phase takes exactly learner_schedule.phase_cycles cycles, the model the cycle
    tables use. LEARN_SCHEDULE (JSON phases) replaces the default schedule; the counts are
    written to LEARN_CYCLES_OUT when set."""
    tb = TB(dut, seed=3)
    await tb.reset()
    phases = json.loads(os.environ["LEARN_SCHEDULE"]) if "LEARN_SCHEDULE" in os.environ \
        else DEFAULT_SCHEDULE
    counts = []
    for phase in phases:
        got = await stream_phase(tb, [tuple(p) for p in phase])
        want = learner_schedule.phase_cycles(phase, tb.R, tb.C)
        counts.append((phase, got, want))
    bad = [c for c in counts if c[1] != c[2]]
    assert not bad, f"(phase, simulated, model): {bad}"
    if os.environ.get("LEARN_CYCLES_OUT"):
        with open(os.environ["LEARN_CYCLES_OUT"], "w") as f:
            json.dump([c[1] for c in counts], f)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py; one build directory per case
# (sim_build/hrl_learn_mac_array/<sim>-R..-C..-...). Any other set runs with
# rtl_runner.run("hrl_learn_mac_array", {...}, sources=SOURCES, sim=...).

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v"]


def params(r, c, aw=16, bw=16, biasw=16, bsmax=24, kmax=256, accw=42, ow=16, tagw=8):
    return {"R": r, "C": c, "AW": aw, "BW": bw, "BIASW": biasw, "BSMAX": bsmax,
            "KMAX": kmax, "ACCW": accw, "OW": ow, "TAGW": tagw}


SETS = [
    pytest.param("icarus", params(4, 4), id="icarus-R4-C4"),
    pytest.param("icarus", params(3, 5, aw=12, bw=10, biasw=20, bsmax=12, kmax=40, accw=33,
                                  ow=24, tagw=3), id="icarus-R3-C5-narrow",
                 marks=pytest.mark.long),
    pytest.param("verilator", params(8, 8), id="verilator-R8-C8", marks=pytest.mark.long),
    pytest.param("verilator", params(16, 16, aw=18, bw=18, accw=44, ow=24),
                 id="verilator-R16-C16", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_mac_array(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_mac_array", prm, sources=SOURCES, sim=sim)
