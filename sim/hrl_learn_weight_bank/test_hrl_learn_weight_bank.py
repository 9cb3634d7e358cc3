"""cocotb testbench of fpga_rtl/rtl/hrl_learn_weight_bank.v: several matrices of random
shapes (not multiples of L) share the banks; row-block writes with random lane enables,
then a read every cycle, row or column blocks in random order, each compared with the
matrix it should hold (zero past the matrix's edge), 4 cycles after it was issued.

A memory does no arithmetic, so its golden model is the matrix itself (numpy); the words
written are random words of a fixed-point format.
"""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge
from learn_tb import pack, random_words, unpack


class TB:
    def __init__(self, dut, seed: int = 5):
        self.dut = dut
        self.L = rtl_runner.param("L", 4)
        self.DW = rtl_runner.param("DW", 16)
        self.DEPTH = rtl_runner.param("DEPTH", 256)
        self.IW = rtl_runner.param("IW", 9)
        self.rng = np.random.default_rng(seed + self.L)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        for s in ("rd_en", "rd_col", "rd_base", "rd_slog", "rd_i", "rd_j", "rd_rows",
                  "rd_cols", "wr_en", "wr_base", "wr_slog", "wr_i", "wr_j", "wr_mask",
                  "wr_data"):
            getattr(dut, s).value = 0

    def layout(self, shapes):
        """Bases and row strides (log2) for matrices of `shapes`, packed one after another."""
        out, base = [], 0
        for rows, cols in shapes:
            slog = max(0, int(np.ceil(np.log2(max(1, -(-cols // self.L))))))
            out.append((base, slog))
            base += rows << slog
        assert base <= self.DEPTH, f"matrices need {base} words per bank > DEPTH"
        return out

    async def write_row(self, base, slog, i, j0, words, mask):
        d = self.dut
        await FallingEdge(d.clk)
        d.wr_en.value = 1
        d.wr_base.value, d.wr_slog.value, d.wr_i.value, d.wr_j.value = base, slog, i, j0
        d.wr_mask.value = mask
        d.wr_data.value = pack(words, self.DW)
        await RisingEdge(d.clk)
        d.wr_en.value = 0


def _want(mat, col: bool, i: int, j: int, L: int):
    rows, cols = mat.shape
    out = []
    for c in range(L):
        ri, rj = (i + c, j) if col else (i, j + c)
        out.append(int(mat[ri, rj]) if ri < rows and rj < cols else 0)
    return out


async def fill_and_read(tb: TB, shapes, n_reads: int):
    d, L = tb.dut, tb.L
    lay = tb.layout(shapes)
    mats = [random_words(tb.rng, s, tb.DW) for s in shapes]
    # Fill: every row block once with random lane enables, then the lanes left out.
    for (base, slog), m in zip(lay, mats, strict=True):
        rows, cols = m.shape
        for i in range(rows):
            for j0 in range(0, cols, L):
                words = [int(m[i, j0 + c]) if j0 + c < cols else 0 for c in range(L)]
                valid = sum(1 << c for c in range(L) if j0 + c < cols)
                mask = int(tb.rng.integers(0, 1 << L)) & valid
                # Junk in the disabled lanes: a write must not touch them.
                junk = [int(w) for w in random_words(tb.rng, (L,), tb.DW)]
                first = [w if (mask >> c) & 1 else junk[c] for c, w in enumerate(words)]
                await tb.write_row(base, slog, i, j0, first, mask)
                if valid & ~mask:
                    # The rest, with junk in the lanes the first write set: kept out.
                    rest = valid & ~mask
                    second = [w if (rest >> c) & 1 else junk[c] for c, w in enumerate(words)]
                    await tb.write_row(base, slog, i, j0, second, rest)
    # Reads, one per cycle, checked 4 cycles later.
    pending = []
    for n in range(n_reads + 4):
        await FallingEdge(d.clk)
        # A read issued at the falling edge n - 4 is on rd_data now.
        if pending and pending[0][0] == n - 4:
            _, want, what = pending.pop(0)
            got = unpack(int(d.rd_data.value), L, tb.DW)
            assert got == want, f"{what}: got {got}, want {want}"
        if n >= n_reads:
            d.rd_en.value = 0
            continue
        k = int(tb.rng.integers(len(mats)))
        m, (base, slog) = mats[k], lay[k]
        rows, cols = m.shape
        col = bool(tb.rng.integers(2))
        if col:
            i = L * int(tb.rng.integers(0, -(-rows // L)))
            j = int(tb.rng.integers(0, cols))
        else:
            i = int(tb.rng.integers(0, rows))
            j = L * int(tb.rng.integers(0, -(-cols // L)))
        d.rd_en.value = 1
        d.rd_col.value = int(col)
        d.rd_base.value, d.rd_slog.value, d.rd_i.value, d.rd_j.value = base, slog, i, j
        d.rd_rows.value, d.rd_cols.value = rows, cols
        pending.append((n, _want(m, col, i, j, L),
                        f"matrix {k} {m.shape} {'column' if col else 'row'} read i={i} j={j}"))
    assert not pending, f"{len(pending)} reads never checked"
    return mats


@cocotb.test()
async def test_row_and_column_reads(dut):
    """Random matrices, row and transposed reads every cycle, against the matrices."""
    tb = TB(dut)
    L = tb.L
    shapes = [(int(tb.rng.integers(1, 3 * L + 2)), int(tb.rng.integers(1, 3 * L + 2)))
              for _ in range(3)]
    shapes.append((1, 1))
    await fill_and_read(tb, shapes, 120)


@cocotb.test()
async def test_rewrite_one_row(dut):
    """A rewritten row block reads back new in both directions; its neighbours keep theirs."""
    tb = TB(dut, seed=6)
    L = tb.L
    shapes = [(2 * L + 1, 2 * L - 1)]
    mats = await fill_and_read(tb, shapes, 10)
    (base, slog), m = tb.layout(shapes)[0], mats[0]
    new = random_words(tb.rng, (L,), tb.DW)
    i = L + 1
    ncols = min(L, m.shape[1])
    await tb.write_row(base, slog, i, 0, [int(w) for w in new], (1 << ncols) - 1)
    m[i, :ncols] = new[:ncols]
    d = tb.dut
    for col, ri, rj in ((False, i, 0), (True, L, 1), (True, 0, 0)):
        await FallingEdge(d.clk)
        d.rd_en.value, d.rd_col.value = 1, int(col)
        d.rd_base.value, d.rd_slog.value, d.rd_i.value, d.rd_j.value = base, slog, ri, rj
        d.rd_rows.value, d.rd_cols.value = m.shape
        await FallingEdge(d.clk)
        d.rd_en.value = 0
        for _ in range(3):
            await FallingEdge(d.clk)
        got = unpack(int(d.rd_data.value), L, tb.DW)
        assert got == _want(m, col, ri, rj, L), f"read {col, ri, rj} after the rewrite"


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py.

SOURCES = ["hrl_learn_weight_bank.v"]

SETS = [
    pytest.param("icarus", {"L": 4, "DW": 16, "DEPTH": 256, "IW": 9}, id="icarus-L4"),
    pytest.param("icarus", {"L": 1, "DW": 8, "DEPTH": 128, "IW": 6}, id="icarus-L1",
                 marks=pytest.mark.long),
    pytest.param("verilator", {"L": 16, "DW": 18, "DEPTH": 512, "IW": 9},
                 id="verilator-L16", marks=pytest.mark.long),
    # The 8x32 and 32x32 arrays' banks: five stages in each rotator.
    pytest.param("verilator", {"L": 32, "DW": 16, "DEPTH": 512, "IW": 9},
                 id="verilator-L32", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_weight_bank(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_weight_bank", prm, sources=SOURCES, sim=sim)
