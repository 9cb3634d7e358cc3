"""cocotb testbench of fpga_rtl/rtl/hrl_update_step.v: one level of the bottom-up update for
lane LANE of a group of P lanes, pipelined (parent valid STAGES = 1 + log2(K)//LPS cycles
after the row's read was issued).

The step rebuilds the row of K siblings holding its lane's node from the memory's row, the
words the group one cycle ahead wrote to this level (lanes 0..P-1, valid ones), the words of
this group's lower lanes (0..LANE-1, valid ones) and its own word, later writes winning; and
returns the parent word. The golden model is the library: `hrl.replay.sumtree.update_words`
on a one-row tree that holds the memory's row, with those writes in issue order (writes to
another row are out of range for it and dropped, as update_words drops them), whose root
is then `formats.FixedPoint.combine` of the rebuilt row: "last write wins" and the rounded-up
parent are both the library's, not a copy.

Vectors: random node indices over four rows (so same-row and same-word collisions are
frequent), random valid bits and words (W bits, some all ones, some zero), one new vector
every cycle through the pipeline.
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
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from hrl.replay import formats, sumtree


@functools.cache
def _rebuild_one_row(k: int, w: int):
    """(row, parent) after update_words on a one-row tree, vectorised, jitted."""
    fmt = formats.FixedPoint(w, w // 2)

    def one(row, idx, words):
        tree = sumtree.SumTree(levels=(jnp.zeros((1,), jnp.uint32), row[None, :]),
                               capacity=k, fanout=k, fmt=fmt)
        tree = sumtree.update_words(tree, idx, words)
        return tree.levels[1][0], tree.levels[0][0]

    return jax.jit(jax.vmap(one))


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.k = rtl_runner.param("K", 4)
        self.w = rtl_runner.param("W", 32)
        self.p = rtl_runner.param("P", 1)
        self.lane = rtl_runner.param("LANE", 0)
        self.nw = rtl_runner.param("NW", 3)
        self.lps = rtl_runner.param("LPS", 2)
        self.s = formats.log2_exact(self.k)
        self.stages = 1 + self.s // self.lps
        self.rng = np.random.default_rng(23)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        for name in ("pre_prev_valid", "pre_prev_node", "pre_cur_valid", "pre_cur_node",
                     "mem_row", "prev_word", "cur_word"):
            getattr(dut, name).value = 0

    def words(self, shape) -> np.ndarray:
        mx = (1 << self.w) - 1
        out = self.rng.integers(0, mx + 1, shape, dtype=np.uint64)
        pick = self.rng.random(shape)
        out[pick < 0.1] = mx
        out[(pick >= 0.1) & (pick < 0.2)] = 0
        return out.astype(np.uint32)

    def vectors(self, n: int, rows_used: int = 4) -> dict:
        """n random vectors: nodes of every lane of both groups over `rows_used` rows."""
        p, k = self.p, self.k
        top = min(rows_used * k, 1 << self.nw)
        return {
            "prev_valid": self.rng.random((n, p)) < 0.7,
            "prev_node": self.rng.integers(0, top, (n, p)),
            "cur_valid": self.rng.random((n, p)) < 0.7,
            "cur_node": self.rng.integers(0, top, (n, p)),
            "mem_row": self.words((n, k)),
            "prev_word": self.words((n, p)),
            "cur_word": self.words((n, p)),
        }

    def golden(self, v: dict):
        """Parent (and row) of every vector: update_words with the writes in issue order,
        those of another row (or invalid) moved out of range, so dropped."""
        n, k, s = v["mem_row"].shape[0], self.k, self.s
        my_node = v["cur_node"][:, self.lane]
        my_row = my_node >> s
        idx, words = [], []
        for q in range(self.p):                     # the group one ahead, lanes in order
            node = v["prev_node"][:, q]
            ok = v["prev_valid"][:, q] & (node >> s == my_row)
            idx.append(np.where(ok, node & (k - 1), k))
            words.append(v["prev_word"][:, q])
        for q in range(self.lane):                  # this group's lower lanes
            node = v["cur_node"][:, q]
            ok = v["cur_valid"][:, q] & (node >> s == my_row)
            idx.append(np.where(ok, node & (k - 1), k))
            words.append(v["cur_word"][:, q])
        idx.append(my_node & (k - 1))               # this lane's own word, last
        words.append(v["cur_word"][:, self.lane])
        idx = np.stack(idx, axis=1).astype(np.int32)
        words = np.stack(words, axis=1).astype(np.uint32)
        assert idx.shape == (n, self.p + self.lane + 1)
        row, parent = _rebuild_one_row(k, self.w)(jnp.asarray(v["mem_row"]),
                                                  jnp.asarray(idx), jnp.asarray(words))
        return np.asarray(row), np.asarray(parent, np.int64)

    def _pack(self, values, width: int) -> int:
        return sum(int(x) << (width * j) for j, x in enumerate(values))

    async def run_vectors(self, v: dict):
        """Cycle i: vector i's node indices (cycle 0 of it), vector i-1's words (its cycle
        1); the parent read in cycle i belongs to vector i - STAGES."""
        dut, n = self.dut, v["mem_row"].shape[0]
        got = []
        for i in range(n + self.stages):
            await FallingEdge(dut.clk)
            if i < n:
                dut.pre_prev_valid.value = self._pack(v["prev_valid"][i], 1)
                dut.pre_prev_node.value = self._pack(v["prev_node"][i], self.nw)
                dut.pre_cur_valid.value = self._pack(v["cur_valid"][i], 1)
                dut.pre_cur_node.value = self._pack(v["cur_node"][i], self.nw)
            if 1 <= i <= n:
                dut.mem_row.value = self._pack(v["mem_row"][i - 1], self.w)
                dut.prev_word.value = self._pack(v["prev_word"][i - 1], self.w)
                dut.cur_word.value = self._pack(v["cur_word"][i - 1], self.w)
            await ReadOnly()
            if i >= self.stages:
                got.append(int(dut.parent.value))
        row, want = self.golden(v)
        for i in range(n):
            assert got[i] == want[i], (
                f"vector {i}: parent {got[i]} != {want[i]} (row {row[i].tolist()}, "
                f"{ {key: val[i].tolist() for key, val in v.items()} })")


@cocotb.test()
@cocotb.parametrize(rows_used=[1, 4])
async def test_random_writes(dut, rows_used):
    """Random groups back to back: every lane in one row (every write applies, collisions
    on every word), or over four rows."""
    tb = TB(dut)
    await RisingEdge(dut.clk)
    await tb.run_vectors(tb.vectors(200, rows_used))


@cocotb.test()
async def test_full_words_round_up(dut):
    """Rows of all-ones words (the parent saturates exactly at 2**W - 1, no overflow) and
    rows whose sum is one above a multiple of K (the parent rounds up)."""
    tb = TB(dut)
    await RisingEdge(dut.clk)
    v = tb.vectors(40, 1)
    mx = (1 << tb.w) - 1
    v["mem_row"][:20] = mx
    v["prev_word"][:20] = mx
    v["cur_word"][:20] = mx
    v["mem_row"][20:] = tb.k
    v["mem_row"][20:, 0] = 1
    v["prev_valid"][20:] = False
    v["cur_valid"][20:] = False
    v["cur_word"][20:, tb.lane] = tb.k  # with its own word, the row sums to K*K - K + 1
    v["cur_node"][20:, tb.lane] = tb.k - 1 if tb.k > 1 else 0
    await tb.run_vectors(v)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_modules.py; one build directory per case
# (sim_build/hrl_update_step/icarus-K..-W..-P..-LANE..-NW..-LPS..).


@pytest.mark.parametrize(
    "k,w,p,lane,lps",
    [(2, 32, 1, 0, 1), (4, 16, 3, 2, 2), (16, 32, 2, 1, 1), (16, 24, 4, 0, 8)],
    ids=["K2-W32-P1-L0-LPS1", "K4-W16-P3-L2-LPS2", "K16-W32-P2-L1-LPS1", "K16-W24-P4-L0-LPS8"],
)
def test_hrl_update_step(k, w, p, lane, lps):
    rtl_runner.require("icarus")
    nw = formats.log2_exact(k) + 2  # node indices over four rows
    rtl_runner.run("hrl_update_step",
                   {"K": k, "W": w, "P": p, "LANE": lane, "NW": nw, "LPS": lps})
