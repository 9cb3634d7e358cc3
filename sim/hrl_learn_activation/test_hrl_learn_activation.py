"""cocotb testbench of fpga_rtl/rtl/hrl_learn_activation.v against hrl.fixed_point.layers.

The unit sits behind the array, so its inputs are what the array gives it: the narrowed
words of a layer's product and a saturation flag per word. Both come from the reference
(`numerics.matmul` per word, vmapped, so each word's own saturation count is the flag). The
unit's rows must then equal `layers.dense_forward` (ReLU and linear) and
`layers.dense_backward` (the derivative mask read from the stored activations of a
`dense_forward`), and its saturation count theirs. Ragged column tiles mark their outside
lanes, which hold junk that must count nothing.
"""

from __future__ import annotations

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge
from learn_tb import pack, random_words, unpack

from hrl.fixed_point import layers
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.numerics import matmul

F = FxFormats()


def per_word(x, a, w, b, out, bias=None, bias_fmt=None):
    """Each word of narrow(x @ w + bias) with its own saturation flag, from the reference."""

    def one(xr, wc, bc):
        y, n = matmul(xr[None, :], a, wc[:, None], b, out,
                      bias=None if bias is None else bc[None], bias_fmt=bias_fmt)
        return y[0, 0], n

    bias_v = jnp.zeros(w.shape[1], jnp.int32) if bias is None else jnp.asarray(bias)
    f = jax.vmap(jax.vmap(one, in_axes=(None, 1, 0)), in_axes=(0, None, None))
    y, n = f(jnp.asarray(x), jnp.asarray(w), bias_v)
    return np.asarray(y), np.asarray(n) > 0


class TB:
    def __init__(self, dut, seed: int = 9):
        self.dut = dut
        self.C = rtl_runner.param("C", 4)
        self.W = rtl_runner.param("W", 24)
        self.rng = np.random.default_rng(seed + self.C)
        self.rows = []
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        cocotb.start_soon(self._monitor())

    async def reset(self):
        d = self.dut
        d.rst.value, d.clear.value, d.mode.value, d.in_valid.value = 1, 0, 0, 0
        d.in_z.value = d.in_sat.value = d.in_lanes.value = d.in_m.value = 0
        for _ in range(2):
            await RisingEdge(d.clk)
        d.rst.value = 0

    async def _monitor(self):
        while True:
            await FallingEdge(self.dut.clk)
            if str(self.dut.out_valid.value) == "1":
                self.rows.append(unpack(int(self.dut.out_y.value), self.C, self.W))

    async def stream(self, mode: int, z, sat, m=None):
        """Feed z (B, N) tile by tile (C columns), return (y (B, N), saturations counted)."""
        d, C = self.dut, self.C
        bsz, n = z.shape
        await FallingEdge(d.clk)
        d.clear.value = 1
        await FallingEdge(d.clk)
        d.clear.value = 0
        d.mode.value = mode
        start = len(self.rows)
        order = []
        for c0 in range(0, n, C):
            for r in range(bsz):
                while self.rng.random() < 0.2:
                    d.in_valid.value = 0
                    await FallingEdge(d.clk)
                lanes = [c0 + c < n for c in range(C)]
                junk = random_words(self.rng, (C,), self.W)
                zr = [int(z[r, c0 + c]) if ok else int(junk[c]) for c, ok in enumerate(lanes)]
                sr = [bool(sat[r, c0 + c]) if ok else True for c, ok in enumerate(lanes)]
                mr = [int(m[r, c0 + c]) if (m is not None and ok) else 1
                      for c, ok in enumerate(lanes)]
                d.in_valid.value = 1
                d.in_z.value = pack(zr, self.W)
                d.in_sat.value = sum(int(s) << c for c, s in enumerate(sr))
                d.in_lanes.value = sum(int(ok) << c for c, ok in enumerate(lanes))
                d.in_m.value = pack(mr, self.W)
                order.append((r, c0))
                await FallingEdge(d.clk)
        d.in_valid.value = 0
        await FallingEdge(d.clk)
        await FallingEdge(d.clk)
        got = self.rows[start:]
        assert len(got) == len(order), f"{len(got)} rows out, {len(order)} in"
        y = np.zeros((bsz, n), np.int64)
        for (r, c0), words in zip(order, got, strict=True):
            k = min(C, n - c0)
            y[r, c0:c0 + k] = words[:k]
        return y, int(d.sat_total.value)


def _check(name, got, want, sats, want_sats):
    want = np.asarray(want)
    bad = np.argwhere(got != want)
    assert bad.size == 0, (f"{name}: {len(bad)} words differ, first {tuple(bad[0])}: "
                           f"got {got[tuple(bad[0])]} want {want[tuple(bad[0])]}")
    assert sats == int(want_sats), f"{name}: {sats} saturations, reference {int(want_sats)}"


@cocotb.test()
async def test_forward_relu_and_linear(dut):
    """ReLU (hidden) and linear (last) layers: dense_forward's words and saturations."""
    tb = TB(dut)
    await tb.reset()
    rng = tb.rng
    for trial in range(3):
        # One shape (JAX compiles once), ragged against C.
        bsz, k, n = 7, 19, 3 * tb.C - 1
        x = random_words(rng, (bsz, k), F.act.width)
        w = random_words(rng, (k, n), F.weight.width)
        b = random_words(rng, (n,), F.weight.width)
        for relu, out in ((True, F.act), (False, F.value)):
            z, sat = per_word(x, F.act, w, F.weight, out, bias=b, bias_fmt=F.weight)
            want, mask, n_sat = layers.dense_forward(jnp.asarray(x), jnp.asarray(w),
                                                     jnp.asarray(b), F.act, F.weight, out, relu)
            got, sats = await tb.stream(1 if relu else 0, z, sat)
            _check(f"trial {trial} relu={relu}", got, want, sats, n_sat)
            assert np.array_equal(got > 0, np.asarray(mask)) or not relu


@cocotb.test()
async def test_backward_mask(dut):
    """delta_prev = mask * (delta @ W^T), the mask read from dense_forward's activations."""
    tb = TB(dut, seed=10)
    await tb.reset()
    rng = tb.rng
    for trial in range(3):
        bsz, k0, k, n = 7, 5, 3 * tb.C - 1, 19
        x0 = random_words(rng, (bsz, k0), F.act.width)
        w0 = random_words(rng, (k0, k), F.weight.width, p_extreme=0.0) >> 4
        b0 = random_words(rng, (k,), F.weight.width)
        act, mask, _ = layers.dense_forward(jnp.asarray(x0), jnp.asarray(w0), jnp.asarray(b0),
                                            F.act, F.weight, F.act, True)
        delta = random_words(rng, (bsz, n), F.delta.width)
        w = random_words(rng, (k, n), F.weight.width)
        z, sat = per_word(delta, F.delta, w.T, F.weight, F.delta)
        want, n_sat = layers.dense_backward(jnp.asarray(delta), jnp.asarray(w), mask,
                                            F.delta, F.weight, F.delta)
        got, sats = await tb.stream(2, z, sat, m=np.asarray(act))
        _check(f"trial {trial} backward", got, want, sats, n_sat)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py.

SOURCES = ["hrl_learn_activation.v"]

SETS = [
    pytest.param("icarus", {"C": 4, "W": 24, "SW": 32}, id="icarus-C4-W24"),
    pytest.param("verilator", {"C": 16, "W": 24, "SW": 32}, id="verilator-C16-W24",
                 marks=pytest.mark.long),
    # The 8x32 and 32x32 arrays' rows (eight groups of four in the saturation count), and a
    # row narrower than one group.
    pytest.param("verilator", {"C": 32, "W": 24, "SW": 32}, id="verilator-C32-W24",
                 marks=pytest.mark.long),
    pytest.param("icarus", {"C": 3, "W": 24, "SW": 16}, id="icarus-C3-W24",
                 marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_activation(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_activation", prm, sources=SOURCES, sim=sim)
