"""cocotb testbench of fpga_rtl/rtl/hrl_rmm_kernel.v (the RMM as an XRT RTL kernel).

The kernel is driven as a host runtime drives it (`hrl.replay.backends._rtl_cocotb`:
AxiLiteMaster on s_axi_control, AxiRam as the card's memory): arguments written, ap_start
set, ap_done polled, results read from memory. Every result is checked against the JAX
fixed-point reference `hrl.replay.sumtree` (the golden model; nothing of it is copied here):
sampled indices, the random words used (the LFSR draws replayed), the root register, and
the tree read back through READ_TREE, word for word.

Run through the pytest sweeps at the bottom (collected by `tests/rtl/test_rtl_kernel.py`) or
`sim/kernel_runner.py`; HDL parameters and knobs arrive in KRN_* environment variables.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
import jax
import kernel_runner
import numpy as np
import pytest
import rtl_runner
import tb_common
from cocotb.triggers import RisingEdge

from hrl.replay import formats, sumtree
from hrl.replay.backends._rtl_cocotb import (
    AP_DONE,
    AP_IDLE,
    AP_READY,
    AP_START,
    KernelDriver,
)
from hrl.replay.backends.rtl_model import lane_seed, xorshift32

PAD_SIZES = (16, 64, 256, 1024)  # reference calls are padded to these sizes: few jit shapes


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value, 0)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def _padded(n: int) -> int:
    for size in PAD_SIZES:
        if n <= size:
            return size
    return -(-n // PAD_SIZES[-1]) * PAD_SIZES[-1]


class TB:
    """The kernel driver, the reference tree and a replay of the kernel's generators."""

    def __init__(self, dut):
        self.dut = dut
        self.k = _env_int("KRN_K", 4)
        self.depth = _env_int("KRN_D", 3)
        self.lanes = _env_int("KRN_P", 1)
        self.word_bits = _env_int("KRN_W", 32)
        self.capacity = _env_int("KRN_N", self.k**self.depth)
        self.rng = random.Random(_env_int("KRN_SEED", 1))
        if formats.tree_depth(self.capacity, self.k) != self.depth:
            raise ValueError(f"KRN_N={self.capacity} does not need depth KRN_D={self.depth} "
                             f"at K={self.k}")
        self.fmt = formats.FixedPoint(self.word_bits, self.word_bits // 2)
        self.drv = KernelDriver(dut, mem_size=1 << 22, base=0x7_0000_0000,
                                misalign=_env_int("KRN_MISALIGN", 0xF00))
        self._update = jax.jit(sumtree.update_words)
        self._sample = jax.jit(sumtree.sample_from_bits, static_argnames="stratified")
        self._stratify = jax.jit(formats.stratify_bits, static_argnames="batch_size")
        self.seed = 0
        self.tree = sumtree.init(self.capacity, self.k, self.fmt)
        self.lfsr = [lane_seed(0, p) for p in range(self.lanes)]
        self._checking = False

    async def _check_addresses(self):
        """Every AXI4 address carries the high word of the buffer base (64-bit registers)."""
        dut = self.dut
        want = self.drv.base >> 32
        while True:
            await RisingEdge(dut.ap_clk)
            for prefix in ("m_axi_gmem0_ar", "m_axi_gmem0_aw", "m_axi_gmem1_ar"):
                if int(getattr(dut, f"{prefix}valid").value):
                    a = getattr(dut, f"{prefix}addr").value.to_unsigned()
                    assert a >> 32 == want, f"{prefix}addr 0x{a:x} lost the high address word"

    async def reset(self):
        cfg = await self.drv.reset()
        if not self._checking:  # the valids are X before the first reset
            cocotb.start_soon(self._check_addresses())
            self._checking = True
        want = {"K": self.k, "D": self.depth, "P": self.lanes, "W": self.word_bits}
        assert cfg == want, f"config register {cfg} != HDL parameters {want}"
        self.tree = sumtree.init(self.capacity, self.k, self.fmt)
        self.seed = 0
        self.lfsr = [lane_seed(0, p) for p in range(self.lanes)]

    # ------------------------------------------------------------------ reference

    def ref_update(self, idx: np.ndarray, words: np.ndarray) -> None:
        """update_words in order, in padded pieces (out-of-range padding is dropped)."""
        size = _padded(min(idx.size, PAD_SIZES[-1]))
        for c in range(0, idx.size, size):
            pi = np.full(size, self.capacity, np.int32)
            pw = np.zeros(size, np.uint32)
            part = slice(c, c + size)
            pi[: idx[part].size] = idx[part]
            pw[: idx[part].size] = words[part]
            self.tree = self._update(self.tree, pi, pw)

    def ref_sample(self, fractions: np.ndarray) -> np.ndarray:
        size = _padded(fractions.size)
        pf = np.zeros(size, np.uint32)
        pf[: fractions.size] = fractions
        return np.asarray(self._sample(self.tree, pf, stratified=False))[: fractions.size]

    def ref_root(self) -> int:
        return int(np.asarray(self.tree.levels[0])[0])

    def draws(self, count: int) -> np.ndarray:
        """The kernel's LFSR words for a batch: item i runs on lane i % P."""
        out = np.zeros(count, np.uint32)
        for i in range(count):
            lane = i % self.lanes
            self.lfsr[lane] = xorshift32(self.lfsr[lane])
            out[i] = self.lfsr[lane]
        return out

    # ------------------------------------------------------------------ commands + checks

    async def update(self, idx, words, what=""):
        idx = np.asarray(idx, np.int64)
        words = np.asarray(words, np.uint32)
        res = await self.drv.update(idx, words)
        self.ref_update(idx, words)
        assert res.root == self.ref_root(), f"{what}: root {res.root} != {self.ref_root()}"
        return res

    async def sample(self, command: str, count: int, what=""):
        assert self.ref_root() != 0, "testbench bug: sampling an empty tree"
        if command == "sample":
            bits = np.array([self.rng.getrandbits(32) for _ in range(count)], np.uint32)
            stratified = self.rng.random() < 0.5
            fractions = (np.asarray(self._stratify(bits, batch_size=count)) if stratified
                         else bits)
            got_idx, got_rand, res = await self.drv.sample("sample", count, fractions)
            want_rand = fractions
        else:
            got_idx, got_rand, res = await self.drv.sample(command, count)
            want_rand = self.draws(count)
            fractions = (np.asarray(self._stratify(want_rand, batch_size=count))
                         if command == "sample_lfsr" else want_rand)
        want_idx = self.ref_sample(fractions)
        assert np.array_equal(got_rand, want_rand), (
            f"{what}: random words differ at {np.flatnonzero(got_rand != want_rand)[:8]}")
        bad = np.flatnonzero(got_idx != want_idx)
        assert bad.size == 0, (f"{what}: {command} x{count}: index {bad[0]}: RTL {got_idx[bad[0]]}"
                               f" != reference {want_idx[bad[0]]} ({bad.size} differ)")
        assert res.root == self.ref_root()
        return res

    async def clear(self, seed: int):
        res = await self.drv.run("clear", 0, seed=seed)
        self.tree = sumtree.init(self.capacity, self.k, self.fmt)
        self.seed = seed
        self.lfsr = [lane_seed(seed, p) for p in range(self.lanes)]
        assert res.root == 0
        return res

    async def check_tree(self, what=""):
        """READ_TREE of every level, compared word for word (zero-padded to K**l)."""
        for level, ref in enumerate(self.tree.levels):
            rows = 1 if level == 0 else self.k ** (level - 1)
            got = await self.drv.read_level(level, rows)
            want = np.zeros(rows * self.k, np.uint32)
            flat = np.asarray(ref).reshape(-1)
            want[: flat.size] = flat
            bad = np.flatnonzero(got.reshape(-1) != want)
            assert bad.size == 0, (f"{what}: level {level} word {bad[0]}: RTL "
                                   f"{got.reshape(-1)[bad[0]]} != reference {want[bad[0]]}")

    # ------------------------------------------------------------------ random inputs

    def random_words(self, n: int) -> np.ndarray:
        top = (1 << self.word_bits) - 1
        out = np.zeros(n, np.uint32)
        for i in range(n):
            r = self.rng.random()
            out[i] = (0 if r < 0.1 else top if r < 0.18 else self.rng.randint(1, self.k)
                      if r < 0.35 else self.rng.randint(1, top))
        return out

    def random_indices(self, n: int, hot: list[int]) -> np.ndarray:
        return np.array([self.rng.choice(hot) if self.rng.random() < 0.35
                         else self.rng.randrange(self.capacity) for _ in range(n)], np.int64)


@cocotb.test()
async def test_control_interface(dut):
    """ap_ctrl_hs and the register map as XRT sees them: idle after reset, arguments read
    back (64-bit addresses in two words), ap_done/ap_ready clear on read, interrupts
    through GIE/IER/ISR (toggle on write), ap_start held until done."""
    tb = TB(dut)
    await tb.reset()
    drv = tb.drv
    status = await drv.read_reg("control")
    assert status == AP_IDLE, f"after reset control=0x{status:x}, want ap_idle only"
    for name, value in (("count", 0x1234_5678), ("seed", 0xDEAD_BEEF), ("level", 3)):
        await drv.write_reg(name, value)
        assert await drv.read_reg(name) == value, name
    await drv.write_addr("results", 0x1_2345_6780)
    assert await drv.read_reg("results") == 0x2345_6780
    assert await drv.axil.read_dword(0x54) == 0x1
    # Byte strobes: one byte written, the rest kept.
    await drv.axil.write(0x18, b"\xab")
    assert await drv.read_reg("count") == 0x1234_56AB
    # Read-only registers ignore writes.
    await drv.write_reg("config", 0)
    assert await drv.read_reg("config") != 0

    await drv.write_reg("gie", 1)
    await drv.write_reg("ier", 3)
    assert int(dut.interrupt.value) == 0
    # A run with ap_start held: watch the control register during and after.
    await tb.update(np.arange(min(40, tb.capacity)), np.full(min(40, tb.capacity), 3))
    # drv.run already consumed the done read; a fresh run, polled by hand:
    await drv.write_reg("command", 5)  # CLEAR: a K**(D-1)-cycle sweep, long enough to watch
    await drv.write_reg("seed", 0)
    await drv.write_reg("control", AP_START)
    busy = await drv.read_reg("control")
    assert busy & AP_START and not busy & AP_IDLE, f"running: control=0x{busy:x}"
    while not (status := await drv.read_reg("control")) & AP_DONE:
        pass
    assert status & AP_IDLE and status & AP_READY and not status & AP_START, hex(status)
    again = await drv.read_reg("control")
    assert again == AP_IDLE, f"ap_done/ap_ready must clear on read: 0x{again:x}"
    assert int(dut.interrupt.value) == 1
    assert await drv.read_reg("isr") == 3
    await drv.write_reg("isr", 1)  # toggle on write: clear the done bit
    assert await drv.read_reg("isr") == 2
    await drv.write_reg("isr", 2)
    for _ in range(2):
        await RisingEdge(dut.ap_clk)
    assert int(dut.interrupt.value) == 0
    tb.tree = sumtree.init(tb.capacity, tb.k, tb.fmt)
    tb.lfsr = [lane_seed(0, p) for p in range(tb.lanes)]
    await tb.check_tree("after clear")
    # count 0 and an unknown command finish at once and change nothing.
    await tb.update(np.zeros(0, np.int64), np.zeros(0, np.uint32))
    res = await drv.run("update", 0)
    assert res.root == 0
    await drv.write_reg("command", 7)
    await drv.write_reg("count", 5)
    await drv.write_reg("control", AP_START)
    while not (await drv.read_reg("control")) & AP_DONE:
        pass
    await tb.check_tree("after unknown command")


@cocotb.test()
async def test_random_commands(dut):
    """A random command stream, every result checked against the reference: update
    batches (duplicates, hot indices, saturated and round-up words, batches over the
    256-item chunk), host-fraction samples (stratified by the host or i.i.d.), LFSR
    stratified and i.i.d. samples, partial READ_TREEs, CLEAR with a new seed; the whole
    tree read back every few commands and at the end. Buffers start 0xF00 past a 4 KiB
    boundary, so bursts are split there; optional AXI backpressure (KRN_STALL)."""
    tb = TB(dut)
    await tb.reset()
    n_cmds = _env_int("KRN_CMDS", 60)
    max_batch = _env_int("KRN_MAX_BATCH", 300)
    full_every = _env_int("KRN_FULL_EVERY", 10)
    if _env_int("KRN_STALL", 0):
        tb.drv.set_backpressure(lambda: tb_common.pauses(tb.rng.random, 0.3))
    hot = [tb.rng.randrange(tb.capacity) for _ in range(4)]
    # Start non-empty: fill every leaf (one update batch over several chunks if needed).
    fill = np.arange(tb.capacity)
    await tb.update(fill, np.array([tb.rng.randint(1, 1 << tb.k.bit_length())
                                    for _ in fill], np.uint32), "fill")
    counts = {}
    for n in range(n_cmds):
        what = f"command {n}"
        r = tb.rng.random()
        size = tb.rng.choice([1, 2, 3, tb.lanes + 1, 17, 64, tb.rng.randint(1, max_batch)])
        if r < 0.38:
            kind = "update"
            await tb.update(tb.random_indices(size, hot), tb.random_words(size), what)
        elif r < 0.9:
            kind = tb.rng.choice(["sample", "sample_lfsr", "sample_lfsr_iid"])
            if tb.ref_root() == 0:
                await tb.update(hot, np.ones(len(hot), np.uint32), what)
            await tb.sample(kind, size, what)
        elif r < 0.95:
            kind = "read_tree"
            level = tb.rng.randint(1, tb.depth)
            rows_total = tb.k ** (level - 1)
            row = tb.rng.randrange(rows_total)
            rows = tb.rng.randint(1, rows_total - row)
            res = await tb.drv.run("read_tree", rows, level=level, row=row)
            want = np.zeros(rows_total * tb.k, np.uint32)
            flat = np.asarray(tb.tree.levels[level]).reshape(-1)
            want[: flat.size] = flat
            assert np.array_equal(res.words, want[row * tb.k: (row + rows) * tb.k]), what
        else:
            kind = "clear"
            await tb.clear(tb.rng.getrandbits(32))
            await tb.update(hot, np.array([1, 2, 3, 4], np.uint32), what)
        counts[kind] = counts.get(kind, 0) + 1
        if (n + 1) % full_every == 0:
            await tb.check_tree(f"after {what}")
    await tb.check_tree("at the end")
    dut._log.info("%d commands matched the reference: %s", n_cmds, counts)


@cocotb.test()
async def test_cycles(dut):
    """Cycles per command, incl. AXI transfers: the kernel's own counter (ap_start seen to
    ap_done) and the host's view (ap_start write to ap_done read). Written as JSON to
    KRN_REPORT for experiments/rtl/report_kernel_cycles.py; results are checked, timings are not."""
    tb = TB(dut)
    await tb.reset()
    batches = [int(b) for b in os.environ.get("KRN_BATCHES", "1,32,256").split(",")]
    fill = np.arange(tb.capacity)
    await tb.update(fill, np.full(fill.size, 5, np.uint32))
    rows = []
    for b in batches:
        idx = np.array([tb.rng.randrange(tb.capacity) for _ in range(b)])
        res = await tb.update(idx, tb.random_words(b) | 1)
        rows.append({"command": "update", "batch": b, "cycles": res.cycles,
                     "host_cycles": res.host_cycles})
        for kind in ("sample", "sample_lfsr", "sample_lfsr_iid"):
            res = await tb.sample(kind, b)
            rows.append({"command": kind, "batch": b, "cycles": res.cycles,
                         "host_cycles": res.host_cycles})
    level_rows = tb.k ** (tb.depth - 1)
    res = await tb.drv.run("read_tree", level_rows, level=tb.depth)
    rows.append({"command": "read_tree(leaf level)", "batch": level_rows,
                 "cycles": res.cycles, "host_cycles": res.host_cycles})
    res = await tb.clear(1)
    rows.append({"command": "clear", "batch": 0, "cycles": res.cycles,
                 "host_cycles": res.host_cycles})
    for row in rows:
        dut._log.info("cycles: %s", row)
    out = os.environ.get("KRN_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump({"K": tb.k, "D": tb.depth, "P": tb.lanes, "W": tb.word_bits,
                       "rows": rows}, f, indent=1)


# --------------------------------------------------------------------------- pytest sweeps
# Collected by tests/rtl/test_rtl_kernel.py (`make test`); each case builds in its own
# directory (sim_build/kernel-<sim>-K..-D..-P..-W..). A missing simulator skips outside CI,
# fails under CI=true.


def params(k, d, p, w, dw=None):
    """HDL parameters; dw: the AXI data width (None: the RTL's default, 512)."""
    out = {"K": k, "D": d, "P": p, "W": w}
    if dw is not None:
        out["C_M_AXI_GMEM_DATA_WIDTH"] = dw
    return out


ALL_TESTS = ["test_control_interface", "test_random_commands", "test_cycles"]

# (params, capacity, extra env). Capacities that are not powers of K leave a padded last
# row; "stall" sets run with random AXI backpressure on every memory channel. By default one
# set per simulator (a Verilator build costs about a minute of CPU); more under `slow`.
VERILATOR_SETS = [
    pytest.param(params(4, 3, 1, 32), 64, {"KRN_CMDS": "60"}, id="K4-D3-P1-W32"),
    pytest.param(params(4, 5, 1, 32), 1000, {"KRN_CMDS": "200", "KRN_MAX_BATCH": "700"},
                 id="K4-D5-P1-W32-N1000", marks=pytest.mark.slow),
    pytest.param(params(8, 3, 3, 16, dw=32), 512, {"KRN_CMDS": "150", "KRN_STALL": "1"},
                 id="K8-D3-P3-W16-DW32-stall", marks=pytest.mark.slow),
    pytest.param(params(2, 9, 1, 8), 300, {"KRN_CMDS": "150"}, id="K2-D9-P1-W8-N300",
                 marks=pytest.mark.slow),
    pytest.param(params(64, 2, 1, 32), 4096, {"KRN_CMDS": "80", "KRN_FULL_EVERY": "40"},
                 id="K64-D2-P1-W32", marks=pytest.mark.slow),
]
ICARUS_SETS = [
    # 64-bit beats: two words each, so runs of odd length end in a half beat.
    pytest.param(params(16, 2, 2, 24, dw=64), 200, {"KRN_CMDS": "40", "KRN_STALL": "1"},
                 id="K16-D2-P2-W24-DW64-N200-stall"),
    pytest.param(params(4, 4, 4, 32), 256, {"KRN_CMDS": "80", "KRN_STALL": "1"},
                 id="K4-D4-P4-W32-stall", marks=pytest.mark.slow),
]


def _simulate(sim, prm, capacity, env, tests=ALL_TESTS):
    rtl_runner.require(sim)
    kernel_runner.run_case(sim, prm, testcase=tests, env={"KRN_SEED": "11", **env},
                           capacity=capacity)


@pytest.mark.parametrize("prm,capacity,env", VERILATOR_SETS)
def test_kernel_verilator(prm, capacity, env):
    _simulate("verilator", prm, capacity, env)


@pytest.mark.parametrize("prm,capacity,env", ICARUS_SETS)
def test_kernel_icarus(prm, capacity, env):
    _simulate("icarus", prm, capacity, env)
