"""cocotb testbench of fpga_rtl/rtl/hrl_descend_step.v: one level of the fixed-point
sampling descent (child choice and remainder), pipelined over 1 + log2(K)//LPS stages.

The golden model is the library's own descent, `hrl.replay.sumtree.descend_fixed`, run on
a one-level tree whose only row is the step's `row` (`formats.FixedPoint` rules: T = t*K +
digit, the first child whose inclusive prefix sum exceeds T, the round-up fallback to the
last non-zero child); the step's `digit` is handed to it as the top log2(K) bits of the
product's low word, where the descent reads a first level's digits. Nothing of the
arithmetic is copied here. The parent word of a row comes from `FixedPoint.combine`.

Vectors: random rows (dense, sparse, tiny words where round-up slack matters, one non-zero
word, all words at the maximum), targets inside the row (t < the parent word, the normal
case), at the slack edge (t = parent - 1, every digit) and past it (the fallback path),
one new vector every cycle through the pipeline.
"""

from __future__ import annotations

import functools

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from hrl.replay import formats, sumtree


@functools.cache
def _descend_one_row(k: int):
    """sumtree.descend_fixed on a one-row tree, vectorised over (row, t, low), jitted."""

    def one(row, t1, low):
        levels = (jnp.zeros((1,), jnp.uint32), row[None, :])
        node, t_next = sumtree.descend_fixed(levels, k, t1[None], low[None])
        return node[0], t_next[0]

    return jax.jit(jax.vmap(one))


def golden(rows: np.ndarray, t: np.ndarray, digit: np.ndarray, k: int):
    """(child, t_next) of every vector: the descent of a first level reads its digit from
    the top log2(K) bits of the product's low word."""
    s = formats.log2_exact(k)
    low = (digit.astype(np.uint32) << np.uint32(32 - s)).astype(np.uint32)
    child, t_next = _descend_one_row(k)(jnp.asarray(rows, jnp.uint32),
                                        jnp.asarray(t, jnp.uint32), jnp.asarray(low))
    return np.asarray(child, np.int64), np.asarray(t_next, np.int64)


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.k = rtl_runner.param("K", 4)
        self.w = rtl_runner.param("W", 32)
        self.lps = rtl_runner.param("LPS", 2)
        self.s = formats.log2_exact(self.k)
        self.stages = 1 + self.s // self.lps
        self.fmt = formats.FixedPoint(self.w, self.w // 2)
        self.max_word = (1 << self.w) - 1
        self.rng = np.random.default_rng(17)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.row.value = 0
        dut.t.value = 0
        dut.digit.value = 0

    def random_rows(self, n: int) -> np.ndarray:
        rng, k, mx = self.rng, self.k, self.max_word
        kinds = rng.integers(0, 5, n)
        rows = rng.integers(0, mx + 1, (n, k), dtype=np.uint64)
        small = rng.integers(0, 4, (n, k), dtype=np.uint64)
        sparse = rows * (rng.random((n, k)) < 0.3)
        one = np.zeros((n, k), np.uint64)
        one[np.arange(n), rng.integers(0, k, n)] = rng.integers(1, mx + 1, n, dtype=np.uint64)
        full = np.full((n, k), mx, np.uint64)
        out = np.select([kinds[:, None] == i for i in range(5)], [rows, small, sparse, one, full])
        out[out.sum(axis=1) == 0, 0] = 1  # a descent never enters an empty row
        return out.astype(np.uint32)

    def targets(self, rows: np.ndarray, mode: str):
        """(t, digit): inside the row, at the slack edge, or past it."""
        n = rows.shape[0]
        parent = np.asarray(self.fmt.combine(jnp.asarray(rows), self.k), np.int64)
        digit = self.rng.integers(0, self.k, n)
        if mode == "inside":
            t = (self.rng.random(n) * parent).astype(np.int64)
        elif mode == "edge":
            t = parent - 1
        else:  # past: T >= sum of the row, only the fallback can answer
            t = np.minimum(parent + self.rng.integers(0, 4, n), self.max_word)
        return t.astype(np.uint32), digit.astype(np.uint32)

    async def run_vectors(self, rows: np.ndarray, t: np.ndarray, digit: np.ndarray):
        """Drive one vector per cycle; collect the outputs STAGES-1 cycles later."""
        dut, n = self.dut, rows.shape[0]
        lag = max(self.stages - 1, 1)  # inputs set at a falling edge, outputs read at one
        got_child, got_t = [], []
        await FallingEdge(dut.clk)
        for i in range(n + lag):
            if i >= lag:
                got_child.append(int(dut.child.value))
                got_t.append(int(dut.t_next.value))
            if i < n:
                dut.row.value = sum(int(w) << (self.w * j) for j, w in enumerate(rows[i]))
                dut.t.value = int(t[i])
                dut.digit.value = int(digit[i])
            await FallingEdge(dut.clk)
        want_child, want_t = golden(rows, t, digit, self.k)
        mask = self.max_word  # an all-zero row's fallback: 2**32-1 in uint32, 2**W-1 here
        for i in range(n):
            where = (f"vector {i}: row {rows[i].tolist()} t {int(t[i])} digit {int(digit[i])}")
            assert got_child[i] == want_child[i], \
                f"{where}: child {got_child[i]} != {want_child[i]}"
            assert got_t[i] == want_t[i] & mask, \
                f"{where}: t_next {got_t[i]} != {want_t[i] & mask}"


@cocotb.test()
@cocotb.parametrize(mode=["inside", "edge", "past"])
async def test_random_rows(dut, mode):
    """Random rows and targets of one kind, back to back through the pipeline."""
    tb = TB(dut)
    await RisingEdge(dut.clk)
    rows = tb.random_rows(150)
    t, digit = tb.targets(rows, mode)
    await tb.run_vectors(rows, t, digit)


@cocotb.test()
async def test_every_target_small_row(dut):
    """Every (t, digit) of a few small rows: each child owns exactly its word's targets."""
    tb = TB(dut)
    await RisingEdge(dut.clk)
    rows, ts, ds = [], [], []
    for row in ([1] * tb.k, [0] * (tb.k - 1) + [3], [2] + [0] * (tb.k - 1),
                [i % 3 for i in range(tb.k)]):
        parent = int(tb.fmt.combine(jnp.asarray(row, jnp.uint32), tb.k))
        for t in range(parent + 1):
            for d in range(tb.k):
                rows.append(row)
                ts.append(t)
                ds.append(d)
    await tb.run_vectors(np.asarray(rows, np.uint32), np.asarray(ts, np.uint32),
                         np.asarray(ds, np.uint32))


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_descend_step/icarus-K..-W..-LPS..).


@pytest.mark.parametrize(
    "k,w,lps",
    [(2, 32, 1), (4, 16, 8), (16, 32, 2), (16, 24, 1)],
    ids=["K2-W32-LPS1", "K4-W16-LPS8", "K16-W32-LPS2", "K16-W24-LPS1"],
)
def test_hrl_descend_step(k, w, lps):
    rtl_runner.require("icarus")
    rtl_runner.run("hrl_descend_step", {"K": k, "W": w, "LPS": lps})
