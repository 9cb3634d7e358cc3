"""cocotb testbench of fpga_rtl/rtl/hrl_rmm.v against the JAX fixed-point reference.

The golden model is `hrl.replay.sumtree` over `hrl.replay.formats.FixedPoint`; this file
only drives the DUT, replays the DUT's documented xorshift32 generator, and compares.
Run through the pytest sweeps at the bottom (collected by `tests/rtl/test_rtl.py`) or
`experiments/rtl/report_cycles.py`; the HDL parameters and the test knobs arrive in RMM_*
environment variables (set by `sim/rmm_runner.py`).
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field

import cocotb
import jax
import numpy as np
import pytest
import rmm_runner
import rtl_runner
import tb_common
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from hrl.replay import formats, sumtree
from hrl.replay.backends.rtl_model import lane_seed, xorshift32

OP_NOP, OP_UPDATE, OP_SAMPLE, OP_SAMPLE_LFSR = 0, 1, 2, 3
UINT32_MAX = (1 << 32) - 1
CLOCK_NS = 5  # 200 MHz, the clock assumed in fpga_rtl/README.md
REF_CHUNK = 64  # reference calls are made on fixed-size chunks so jit compiles once
STRATA = (1, 3, 8, 13, 32, 64)  # stratified LFSR batch sizes drawn by the random streams


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


@dataclass
class Op:
    """One lane operation. `kind`: 'upd', 'host' (fraction in data), 'lfsr' (stratum in
    index, stride in data; stride 0 = i.i.d.)."""

    kind: str
    index: int = 0
    data: int = 0

    @property
    def code(self) -> int:
        return {"upd": OP_UPDATE, "host": OP_SAMPLE, "lfsr": OP_SAMPLE_LFSR}[self.kind]


@dataclass
class StreamResult:
    accept_cycles: list = field(default_factory=list)  # edge number of each group handshake
    outputs: list = field(default_factory=list)  # (edge, lane, index, rand) per sample
    commits: list = field(default_factory=list)  # (edge, lane) per committed update
    first_cycle: int = 0
    last_cycle: int = 0


class TB:
    """Clock, reset, a cycle-accurate stream driver, the debug reader and the reference."""

    def __init__(self, dut):
        self.dut = dut
        self.k = _env_int("RMM_K", 4)
        self.depth = _env_int("RMM_D", 4)
        self.lanes = _env_int("RMM_P", 1)
        self.word_bits = _env_int("RMM_W", 32)
        self.capacity = _env_int("RMM_N", self.k**self.depth)
        self.seed = _env_int("RMM_SEED", 1)
        self.lfsr_seed = _env_int("RMM_LFSR_SEED", 0x12345678)
        self.s = self.k.bit_length() - 1
        self.idx_bits = self.depth * self.s
        if formats.tree_depth(self.capacity, self.k) != self.depth:
            raise ValueError(
                f"RMM_N={self.capacity} needs depth {formats.tree_depth(self.capacity, self.k)}"
                f" at K={self.k}, but RMM_D={self.depth}"
            )
        self.fmt = formats.FixedPoint(self.word_bits, self.word_bits // 2)
        self.tree = sumtree.init(self.capacity, self.k, self.fmt)
        self._update = jax.jit(sumtree.update_words)
        self._sample = jax.jit(sumtree.sample_from_bits, static_argnames="stratified")
        self._stratify = jax.jit(formats.stratify_bits, static_argnames="batch_size")
        self.lfsr = [lane_seed(self.lfsr_seed, p) for p in range(self.lanes)]
        self.cycle = 0
        self.rng = random.Random(self.seed)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        cocotb.start_soon(self._count_cycles())
        dut.rst.value = 1
        dut.lfsr_seed.value = self.lfsr_seed
        dut.s_valid.value = 0
        dut.s_op.value = 0
        dut.s_index.value = 0
        dut.s_data.value = 0
        dut.m_ready.value = 0
        dut.dbg_valid.value = 0
        dut.dbg_level.value = 0
        dut.dbg_row.value = 0

    async def _count_cycles(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    async def reset(self) -> int:
        """Pulse reset, wait for the clear sweep; returns the sweep's length in cycles."""
        await tb_common.pulse_reset(self.dut.clk, self.dut.rst)
        await RisingEdge(self.dut.clk)  # the edge that sees rst low
        start = self.cycle
        while int(self.dut.clearing.value):
            await RisingEdge(self.dut.clk)
        self.tree = sumtree.init(self.capacity, self.k, self.fmt)
        self.lfsr = [lane_seed(self.lfsr_seed, p) for p in range(self.lanes)]
        return self.cycle - start

    # ------------------------------------------------------------------ streaming

    def pack(self, ops: list[Op], nop_prob: float = 0.0) -> list[list[Op | None]]:
        """Ops in issue order -> groups of P lanes (None = NOP lane), lane order kept."""
        groups, cur = [], []
        i = 0
        while i < len(ops):
            if nop_prob and self.rng.random() < nop_prob:
                cur.append(None)
            else:
                cur.append(ops[i])
                i += 1
            if len(cur) == self.lanes:
                groups.append(cur)
                cur = []
        if cur:
            groups.append(cur + [None] * (self.lanes - len(cur)))
        return groups

    def _group_words(self, group):
        op = idx = data = 0
        for p, o in enumerate(group):
            if o is None:
                continue
            op |= o.code << (2 * p)
            idx |= (o.index & UINT32_MAX) << (32 * p)
            data |= (o.data & UINT32_MAX) << (32 * p)
        return op, idx, data

    async def stream(self, groups, m_ready_prob: float = 1.0, gap_prob: float = 0.0):
        """Drive groups back to back (optionally with source gaps and sink backpressure)
        and collect every result and update commit until the DUT is idle again."""
        dut, res = self.dut, StreamResult()
        expected = sum(1 for g in groups for o in g if o is not None and o.kind != "upd")
        pending = list(groups)
        words = [self._group_words(g) for g in groups]
        gi = 0
        driving = False
        m_ready = 1
        res.first_cycle = self.cycle
        got = 0
        lane_mask = (1 << 32) - 1

        shown = -1  # index of the group on the s_* wires (handle writes are the slow part)

        def drive():
            nonlocal driving, shown
            if gi < len(pending) and not (gap_prob and self.rng.random() < gap_prob):
                if shown != gi:
                    op, idx, data = words[gi]
                    dut.s_op.value = op
                    dut.s_index.value = idx
                    dut.s_data.value = data
                    shown = gi
                if not driving:
                    dut.s_valid.value = 1
                driving = True
            else:
                if driving:
                    dut.s_valid.value = 0
                driving = False

        dut.s_valid.value = 0
        drive()
        m_ready = 1 if self.rng.random() < m_ready_prob else 0
        dut.m_ready.value = m_ready
        idle_seen = 0
        while True:
            await RisingEdge(dut.clk)
            edge = self.cycle
            if driving and int(dut.s_ready.value):
                res.accept_cycles.append(edge)
                gi += 1
            if m_ready and int(dut.m_valid.value):
                lv = int(dut.m_lane_valid.value)
                mi = dut.m_index.value.to_unsigned()
                mr = dut.m_rand.value.to_unsigned()
                for p in range(self.lanes):
                    if lv >> p & 1:
                        res.outputs.append(
                            (edge, p, (mi >> (32 * p)) & lane_mask, (mr >> (32 * p)) & lane_mask)
                        )
                        got += 1
            commit = int(dut.upd_commit.value)
            if commit:
                for p in range(self.lanes):
                    if commit >> p & 1:
                        res.commits.append((edge, p))
            if gi == len(pending) and got == expected:
                idle_seen = idle_seen + 1 if int(dut.idle.value) else 0
                # idle is registered state: one more edge lets a final commit pulse show.
                if idle_seen >= 2:
                    break
            drive()
            if m_ready_prob < 1.0:
                m_ready = 1 if self.rng.random() < m_ready_prob else 0
                dut.m_ready.value = m_ready
        dut.s_valid.value = 0
        dut.m_ready.value = 0
        res.last_cycle = self.cycle
        return res

    # ------------------------------------------------------------------ reference

    def expect(self, groups) -> list[tuple[int, int, int]]:
        """Advance the reference tree through `groups` in issue order; returns the expected
        (lane, index, rand) of every sample in order. Runs of updates become one
        `update_words` batch (last wins = sequential order); runs of samples of one mode
        become one `sample_from_bits` call on the tree as it stands."""
        flat = [(p, o) for g in groups for p, o in enumerate(g) if o is not None]
        out = []
        i = 0
        while i < len(flat):
            kind = flat[i][1].kind
            j = i
            while j < len(flat) and flat[j][1].kind == kind and (
                kind != "lfsr" or flat[j][1].data == flat[i][1].data
            ):
                j += 1
                # a stratified LFSR batch restarts at stratum 0
                if kind == "lfsr" and flat[i][1].data and j < len(flat) and flat[j][1].index == 0:
                    break
            run = flat[i:j]
            if kind == "upd":
                # Chunks of REF_CHUNK in order (so the last write still wins), padded with
                # out-of-range indices, which update_words drops: jit compiles one shape.
                for c in range(0, len(run), REF_CHUNK):
                    chunk = run[c : c + REF_CHUNK]
                    idx = np.full(REF_CHUNK, self.capacity, np.int32)
                    w = np.zeros(REF_CHUNK, np.uint32)
                    idx[: len(chunk)] = [o.index for _, o in chunk]
                    w[: len(chunk)] = [o.data for _, o in chunk]
                    self.tree = self._update(self.tree, idx, w)
            else:
                bits = []
                for p, o in run:
                    if kind == "lfsr":
                        self.lfsr[p] = xorshift32(self.lfsr[p])
                        bits.append(self.lfsr[p])
                    else:
                        bits.append(o.data)
                stride = run[0][1].data
                stratified = kind == "lfsr" and stride != 0
                if stratified:
                    b = len(run)
                    assert stride == UINT32_MAX // b, "stratified batch has the wrong stride"
                    assert [o.index for _, o in run] == list(range(b)), "strata out of order"
                bits_arr = np.array(bits, np.uint32)
                # sample_from_bits(stratified=True) is stratify_bits then the descent; the
                # two steps are called separately so the jitted descent sees padded shapes.
                fractions = np.asarray(
                    self._stratify(bits_arr, len(run)) if stratified else bits_arr
                )
                leaves = []
                for c in range(0, len(run), REF_CHUNK):
                    padded = np.zeros(REF_CHUNK, np.uint32)
                    part = fractions[c : c + REF_CHUNK]
                    padded[: len(part)] = part
                    got = self._sample(self.tree, padded, stratified=False)
                    leaves += np.asarray(got)[: len(part)].tolist()
                for (p, _), leaf, r in zip(run, leaves, bits, strict=True):
                    out.append((p, int(leaf), int(r)))
            i = j
        return out

    def reference_levels(self) -> list[list[int]]:
        """Reference words per level, padded with zeros to the RTL's K**l words."""
        levels = []
        for lvl, words in enumerate(self.tree.levels):
            w = np.asarray(words).reshape(-1).astype(np.int64).tolist()
            levels.append(w + [0] * (self.k**lvl - len(w)))
        return levels

    # ------------------------------------------------------------------ debug reads

    async def read_rows(self, requests: list[tuple[int, int]]) -> list[list[int]]:
        """Read (level, row) pairs through the debug port, one request per cycle."""
        dut = self.dut
        if not int(dut.dbg_ready.value):
            raise AssertionError("debug port not ready: the DUT is not idle")
        rows = []
        mask = (1 << self.word_bits) - 1
        for n in range(len(requests) + 1):
            if n < len(requests):
                dut.dbg_valid.value = 1
                dut.dbg_level.value = requests[n][0]
                dut.dbg_row.value = requests[n][1]
            else:
                dut.dbg_valid.value = 0
            await RisingEdge(dut.clk)
            if n < len(requests):
                assert int(dut.dbg_ready.value), "debug port dropped ready while idle"
            if int(dut.dbg_rvalid.value):
                v = dut.dbg_rdata.value.to_unsigned()
                rows.append([(v >> (self.word_bits * b)) & mask for b in range(self.k)])
        # the last response arrives one edge after the last request
        await RisingEdge(dut.clk)
        if int(dut.dbg_rvalid.value):
            v = dut.dbg_rdata.value.to_unsigned()
            rows.append([(v >> (self.word_bits * b)) & mask for b in range(self.k)])
        assert len(rows) == len(requests), f"{len(rows)} debug responses for {len(requests)}"
        return rows

    async def check_tree(self, leaves: list[int] | None = None, what: str = ""):
        """Compare RTL and reference words: every row of every level, or (with `leaves`)
        the root and every row on the paths from those leaves."""
        ref = self.reference_levels()
        if leaves is None:
            reqs = [(0, 0)] + [
                (lvl, r) for lvl in range(1, self.depth + 1) for r in range(self.k ** (lvl - 1))
            ]
        else:
            reqs = [(0, 0)] + sorted(
                {
                    (lvl, leaf // self.k ** (self.depth - lvl + 1))
                    for leaf in leaves
                    for lvl in range(1, self.depth + 1)
                }
            )
        rows = await self.read_rows(reqs)
        for (lvl, r), got in zip(reqs, rows, strict=True):
            if lvl == 0:
                want = [ref[0][0]] + [0] * (self.k - 1)
            else:
                want = ref[lvl][r * self.k : (r + 1) * self.k]
            assert got == want, f"{what}: level {lvl} row {r}: RTL {got} != reference {want}"
        return len(reqs)

    # ------------------------------------------------------------------ op generation

    def random_word(self) -> int:
        top = (1 << self.word_bits) - 1
        r = self.rng.random()
        if r < 0.12:
            return 0
        if r < 0.2:
            return top  # saturated leaves: sums must stay exact
        if r < 0.35:
            return self.rng.randint(1, self.k)  # round-up territory
        return self.rng.randint(1, top)

    def random_index(self, hot: list[int]) -> int:
        if self.rng.random() < 0.35:
            return self.rng.choice(hot)  # duplicates and shared ancestors
        return self.rng.randrange(self.capacity)

    def random_batches(self, n_ops: int, max_batch: int) -> list[list[Op]]:
        """Update and sample batches of random sizes and modes, n_ops in all."""
        batches: list[list[Op]] = []
        hot = [self.rng.randrange(self.capacity) for _ in range(4)]
        # First a batch of non-zero updates so that the tree is not empty.
        batches.append(
            [
                Op("upd", self.random_index(hot), self.rng.randint(1, 1 << self.s))
                for _ in range(max(2, max_batch // 2))
            ]
        )
        total = len(batches[0])
        while total < n_ops:
            b = self.rng.randint(1, max_batch)
            ops: list[Op] = []
            batches.append(ops)
            if self.rng.random() < 0.5:
                for _ in range(b):
                    ops.append(Op("upd", self.random_index(hot), self.random_word()))
            else:
                mode = self.rng.choice(["host", "lfsr", "lfsr_iid"])
                if mode == "lfsr":
                    # A few stratified batch sizes (each is one jit compile of stratify_bits).
                    b = self.rng.choice([s for s in STRATA if s <= max_batch] or [1])
                for i in range(b):
                    if mode == "host":
                        f = self.rng.choice(
                            [0, UINT32_MAX, self.rng.getrandbits(32), self.rng.getrandbits(32)]
                        )
                        ops.append(Op("host", 0, f))
                    elif mode == "lfsr":
                        ops.append(Op("lfsr", i, UINT32_MAX // b))
                    else:
                        ops.append(Op("lfsr", 0, 0))
            total += len(ops)
        return batches

    def compare_samples(self, got, want, what: str):
        got_t = [(p, i, r) for _, p, i, r in got]
        assert len(got_t) == len(want), f"{what}: {len(got_t)} samples out, {len(want)} expected"
        for n, (g, w) in enumerate(zip(got_t, want, strict=True)):
            assert g == w, f"{what}: sample {n}: RTL (lane, index, rand) {g} != reference {w}"


# ---------------------------------------------------------------------------- tests


@cocotb.test()
async def test_random_stream(dut):
    """Random mixed update/sample streams, compared bit for bit with the reference.

    Ops run back to back within a segment (dependent ops, duplicates, mixed groups, NOP
    lanes, source gaps and sink backpressure); after each segment the tree is read back.
    """
    tb = TB(dut)
    await tb.reset()
    n_ops = _env_int("RMM_OPS", 2000)
    seg_ops = _env_int("RMM_SEGMENT", 96)
    full_every = _env_int("RMM_FULL_EVERY", 1)  # full readback every n segments, else paths
    batches = tb.random_batches(n_ops, max_batch=max(4, seg_ops // 3))
    n_total = sum(len(b) for b in batches)
    done = segments = rows_read = 0
    wall = {"sim": 0.0, "reference": 0.0, "readback": 0.0}
    while batches:
        # A segment: whole batches (a stratified batch is never cut), streamed back to back.
        seg = []
        while batches and len(seg) < seg_ops:
            seg += batches.pop(0)
        done += len(seg)
        segments += 1
        groups = tb.pack(seg, nop_prob=0.08)
        stressed = segments % 3 == 0
        t0 = time.perf_counter()
        res = await tb.stream(
            groups, m_ready_prob=0.6 if stressed else 1.0, gap_prob=0.2 if stressed else 0.0
        )
        t1 = time.perf_counter()
        want = tb.expect(groups)
        t2 = time.perf_counter()
        wall["sim"] += t1 - t0
        wall["reference"] += t2 - t1
        tb.compare_samples(res.outputs, want, f"segment {segments}")
        assert len(res.commits) == sum(1 for o in seg if o.kind == "upd")
        t3 = time.perf_counter()
        if segments % full_every == 0 or not batches:
            rows_read += await tb.check_tree(what=f"after segment {segments}")
        else:
            touched = [o.index for o in seg if o.kind == "upd"]
            rows_read += await tb.check_tree(touched, what=f"after segment {segments}")
        wall["readback"] += time.perf_counter() - t3
    dut._log.info(
        "%d ops in %d segments matched the reference (%d rows read back); wall s: %s",
        n_total, segments, rows_read, {k: round(v, 1) for k, v in wall.items()},
    )


@cocotb.test()
async def test_reset_clears(dut):
    """Reset in the middle of a stream empties every level; the sweep takes K**(D-1)."""
    tb = TB(dut)
    sweep = await tb.reset()
    assert sweep == tb.k ** (tb.depth - 1), f"clear took {sweep} cycles"
    ops = [Op("upd", tb.rng.randrange(tb.capacity), tb.random_word() | 1) for _ in range(40)]
    await tb.stream(tb.pack(ops))
    tb.expect(tb.pack(ops))
    await tb.check_tree(what="before reset")
    # Reset while a burst of updates is in flight.
    for g in tb.pack(ops[:8]):
        op, idx, data = tb._group_words(g)
        dut.s_op.value, dut.s_index.value, dut.s_data.value = op, idx, data
        dut.s_valid.value = 1
        await RisingEdge(dut.clk)
    dut.s_valid.value = 0
    sweep = await tb.reset()
    assert sweep == tb.k ** (tb.depth - 1), f"clear took {sweep} cycles"
    await tb.check_tree(what="after reset")
    assert int(dut.idle.value) == 1


def _latency(res: StreamResult, kind_edges: list[int]) -> int:
    return min(kind_edges) - res.accept_cycles[0]


@cocotb.test()
async def test_cycles(dut):
    """Throughput and latency per operation type; asserts one op per cycle per lane.

    Writes the figures as JSON to RMM_REPORT (if set) for experiments/rtl/report_cycles.py.
    """
    tb = TB(dut)
    await tb.reset()
    n_groups = _env_int("RMM_CYCLE_GROUPS", 256)
    report = {"K": tb.k, "D": tb.depth, "P": tb.lanes, "W": tb.word_bits}
    nonzero = [Op("upd", i % tb.capacity, 1 + i % 7) for i in range(tb.k**tb.depth)]
    await tb.stream(tb.pack(nonzero[: n_groups * tb.lanes]))
    tb.expect(tb.pack(nonzero[: n_groups * tb.lanes]))

    # Latency: one op alone in an idle pipeline.
    res = await tb.stream(tb.pack([Op("upd", 3 % tb.capacity, 5)]))
    tb.expect(tb.pack([Op("upd", 3 % tb.capacity, 5)]))
    report["update_latency"] = res.commits[0][0] - res.accept_cycles[0]
    res = await tb.stream(tb.pack([Op("host", 0, 0x9E3779B9)]))
    tb.compare_samples(res.outputs, tb.expect(tb.pack([Op("host", 0, 0x9E3779B9)])), "latency")
    report["sample_latency"] = res.outputs[0][0] - res.accept_cycles[0]

    def rate(res: StreamResult, n_ops: int) -> float:
        span = res.accept_cycles[-1] - res.accept_cycles[0] + 1
        return n_ops / span

    n_ops = n_groups * tb.lanes
    # Pure streams: updates (with duplicates), host-fraction samples, LFSR samples.
    upd = [Op("upd", tb.random_index([0, 1]), tb.random_word()) for _ in range(n_ops)]
    smp = [Op("host", 0, tb.rng.getrandbits(32)) for _ in range(n_ops)]
    lfsr = [Op("lfsr", i, UINT32_MAX // n_ops) for i in range(n_ops)]
    for name, ops in (("update", upd), ("sample", smp), ("sample_lfsr", lfsr)):
        groups = tb.pack(ops)
        res = await tb.stream(groups)
        want = tb.expect(groups)
        tb.compare_samples(res.outputs, want, name)
        report[f"{name}_ops_per_cycle"] = rate(res, n_ops)
        if name != "update":
            report[f"{name}_results_per_cycle"] = len(res.outputs) / (
                res.outputs[-1][0] - res.outputs[0][0] + 1
            )
        # One group per cycle once the pipeline is full: every handshake back to back.
        gaps = {b - a for a, b in zip(res.accept_cycles, res.accept_cycles[1:], strict=False)}
        assert gaps == {1}, f"{name}: accept gaps {sorted(gaps)}, want one group per cycle"
        assert report[f"{name}_ops_per_cycle"] == tb.lanes

    # PRB pattern: alternating batches of B updates and B samples, back to back.
    batch = max(tb.lanes, 32 // tb.lanes * tb.lanes)
    ops = []
    for _ in range(8):
        ops += [Op("upd", tb.random_index([0]), tb.random_word()) for _ in range(batch)]
        ops += [Op("lfsr", i, UINT32_MAX // batch) for i in range(batch)]
    groups = tb.pack(ops)
    res = await tb.stream(groups)
    tb.compare_samples(res.outputs, tb.expect(groups), "alternating")
    report["alternating_batch"] = batch
    report["alternating_ops_per_cycle"] = rate(res, len(ops))
    # Bubbles per switch: the first group of the new kind waits in the holding register,
    # so the lost cycles show in the two handshake gaps around it.
    switches = {"upd_to_smp": [], "smp_to_upd": []}
    kinds = ["upd" if g[0].kind == "upd" else "smp" for g in groups]
    acc = res.accept_cycles
    for g in range(1, len(groups) - 1):
        if kinds[g] != kinds[g - 1]:
            key = "upd_to_smp" if kinds[g] == "smp" else "smp_to_upd"
            switches[key].append(acc[g + 1] - acc[g - 1] - 2)
    report["bubbles_update_to_sample"] = max(switches["upd_to_smp"])
    report["bubbles_sample_to_update"] = max(switches["smp_to_upd"])
    await tb.check_tree(what="after cycle measurements")

    dut._log.info("cycle report: %s", report)
    out = os.environ.get("RMM_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)


# --------------------------------------------------------------------------- pytest sweeps
# Collected by tests/rtl/test_rtl.py (`make test`); each case builds in its own directory
# (sim_build/<sim>-K..-D..-P..-W..). A missing simulator skips outside CI, fails under CI.


def params(k, d, p, w):
    return {"K": k, "D": d, "P": p, "W": w}


# (params, capacity, ops, extra env). Capacities that are not powers of K leave a padded
# last row, as the reference does. >= 10**4 random ops per set in the default suite.
# Icarus is the slow simulator (about 1 min of CPU per 10**4 ops at K=4 and P=1, several
# at P=4 or K=16), Verilator the fast one: K=4 and K=16, P=1 and P>1, a small and a deep
# tree, >= 10**4 random ops each. `make test` runs one Verilator set; the other sets, and
# both Icarus sets, run in the long tier (`make test-long`, run by CI; tests/long_tier.py).
DEFAULT_SETS = [
    pytest.param(params(4, 4, 1, 32), 256, 10_000, {}, id="K4-D4-P1-W32"),
    pytest.param(params(4, 3, 4, 24), 50, 10_000, {}, id="K4-D3-P4-W24-N50",
                 marks=pytest.mark.long),
]

SLOW_SETS = [
    pytest.param(params(16, 3, 1, 32), 4000, 10_000, {}, id="K16-D3-P1-W32-N4000"),
    pytest.param(params(16, 2, 2, 32), 256, 10_000, {}, id="K16-D2-P2-W32"),
    pytest.param(
        params(4, 7, 2, 32), 16384, 10_000, {"RMM_FULL_EVERY": "40"}, id="K4-D7-P2-W32-deep"
    ),
    pytest.param(params(2, 12, 1, 16), 4096, 20_000, {"RMM_FULL_EVERY": "20"}, id="K2-D12-P1-W16"),
    pytest.param(params(64, 2, 1, 32), 4096, 20_000, {}, id="K64-D2-P1-W32"),
    pytest.param(params(8, 3, 3, 8), 512, 20_000, {}, id="K8-D3-P3-W8"),
]

# Capacities that are not powers of K leave a padded last row, as the reference does.
# Deep: 7 levels, 16384 leaves; full readback every 40th segment and at the end, the rows
# on the paths of the segment's updates after every other segment.
VERILATOR_SETS = [
    pytest.param(params(4, 3, 4, 24), 50, 10_000, {}, id="K4-D3-P4-W24-N50"),
    pytest.param(params(16, 3, 1, 32), 4000, 10_000, {}, id="K16-D3-P1-W32-N4000"),
    pytest.param(params(16, 2, 2, 32), 256, 10_000, {}, id="K16-D2-P2-W32"),
    pytest.param(
        params(4, 7, 2, 32), 16384, 10_000, {"RMM_FULL_EVERY": "40"}, id="K4-D7-P2-W32-deep"
    ),
    pytest.param(
        params(4, 8, 4, 32), 65536, 20_000, {"RMM_FULL_EVERY": "100"}, id="K4-D8-P4",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        params(16, 4, 2, 32), 65536, 20_000, {"RMM_FULL_EVERY": "100"}, id="K16-D4-P2",
        marks=pytest.mark.slow,
    ),
]


def _simulate(sim, prm, capacity, n_ops, env, tests):
    rtl_runner.require(sim)
    run_env = {"RMM_OPS": str(n_ops), "RMM_SEED": "7", **env}
    rmm_runner.run_case(sim, prm, testcase=tests, env=run_env, capacity=capacity)


@pytest.mark.parametrize("prm,capacity,n_ops,env", DEFAULT_SETS)
def test_icarus(prm, capacity, n_ops, env):
    _simulate(
        "icarus", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )


@pytest.mark.slow
@pytest.mark.parametrize("prm,capacity,n_ops,env", SLOW_SETS)
def test_icarus_sweep(prm, capacity, n_ops, env):
    _simulate(
        "icarus", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )


@pytest.mark.parametrize("prm,capacity,n_ops,env", VERILATOR_SETS)
def test_verilator(prm, capacity, n_ops, env):
    _simulate(
        "verilator", prm, capacity, n_ops, env,
        ["test_random_stream", "test_reset_clears", "test_cycles"],
    )
