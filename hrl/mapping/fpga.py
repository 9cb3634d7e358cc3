"""FPGA performance model: the replay manager (RMM) from cycle counts, board budgets, an
architecture exploration over (K, lanes, depth), and the learning module's array (ArrayLearner).

Timing of the RMM (the RTL in fpga_rtl/, cycles measured by experiments/rtl/report_cycles.py):
a tree level takes `level_cycles(K) = 1 + log2(K) // 2` pipeline cycles (the RTL's steps hold a
register after every second adder level, LPS = 2), one operation per cycle per lane once the
pipeline is full, so a batch of B operations on P lanes takes

    cycles(B) = fill + ceil(B / P) / throughput,
    fill = io_cycles + stage_cycles * D * level_cycles(K)

and `seconds = cycles / clock(K, P) + invoke_overhead`. `stage_cycles`, `io_cycles` and
`throughput` come from the RTL's measured cycle counts (experiments/results/rtl/cycles.csv,
`RmmTiming.fit`) when they exist.

That is the core alone. A batch reaches the core through the XRT kernel's memory side, which
may feed fewer items per cycle than P lanes take, so when the kernel's measured cycles exist
(experiments/results/rtl/kernel_cycles_fit.csv, written by
experiments/rtl/report_kernel_cycles.py: kernel cycles = fixed + per_item * B per lane count P
and command) a batch costs

    cycles(B) = max(core cycles(B), kernel_fixed(D) + B * per_item(P))

with per_item(P) the slowest command's measured cost at the largest measured lane count
<= P: lanes beyond the measured ones are assumed to feed no faster (`from_kernel_fit_rows`).
So the exploration never buys lanes the kernel cannot feed.
Until then the defaults follow the RTL's documented pipeline (fpga_rtl/README.md, with
L = level_cycles(K) and the multipliers' 3 + 2 registers): a sample's result leaves
9 + L*D cycles after it enters, an update is visible L*D + 2 cycles after it, and a switch
between update and sample batches costs up to 7 + L*(D-1) bubble cycles; one batch call is
charged both, so fill = 16 - L + 2*L*D ~ 14 + 2 * D * L, at one op per cycle per lane.

Clock: per (K, P, W), the RTL's estimate from yosys's logic depth (fpga_rtl/syn/timing.csv,
generated into hrl/mapping/rmm_clock.py by fpga_rtl/syn/run_timing.py; the rule: 1 ns +
max(0.5 ns per LUT level, yosys sta) per register-to-register stage, UltraScale+ -2), the
slower of the descend and update steps, capped at 300 MHz (the U200/U250 shells' default
kernel clock). Shapes not synthesized take the nearest measured K at or above theirs (or
the largest) and the slowest update measured there with at most their lanes. Not a Vivado
timing report; the multipliers are not in it. `RmmTiming(clock_table=False)` uses the flat
`clock_hz` (200 MHz, the clock of the paper's design on an Alveo U200; Zhang, Meng,
Prasanna, TPDS 2023) instead.

Resources: each level l is K banks of n_l / K words of W bits (conflict-free sibling reads).
With P lanes the RTL's memories are live-value tables (LaForest & Steffan, FPGA 2010): P x P
one-write/one-read copies of every word plus log2(P) flip-flops per word naming the last
writer (fpga_rtl/README.md), so memory grows with P**2. Banks go to LUT RAM when they are at
most 64 deep, else to block RAM (RAMB36E2, true dual port, widths 1..36) or UltraRAM (URAM288,
4096 x 72), whichever uses the smaller share of the board. Logic per lane and stage:
`lut_per_bit * K * W` LUTs and `ff_per_bit * K * W` flip-flops (K adders/comparators of W bits);
`calibrate_logic` fits both on the yosys estimates.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hrl.mapping import learner_schedule
from hrl.mapping.rmm_clock import DESCEND_MHZ, UPDATE_MHZ
from hrl.replay.formats import level_sizes, log2_exact, tree_depth

DEFAULT_CLOCK_HZ = 200e6
SHELL_CLOCK_HZ = 300e6  # the U200/U250 shells' default kernel clock: the cap
RTL_LPS = 2  # adder levels per register stage in the RTL's steps (hrl_rmm parameter LPS)


def level_cycles(fanout: int | None, lps: int = RTL_LPS) -> int:
    """Pipeline cycles per tree level of the RTL: 1 + log2(K) // LPS (1 if K is None)."""
    if fanout is None:
        return 1
    return 1 + log2_exact(int(fanout)) // lps


def rtl_clock_hz(fanout: int, lanes: int, word_bits: int = 32) -> float:
    """The RTL's estimated clock for (K, P, W) from hrl/mapping/rmm_clock.py (see the
    module docstring), capped at SHELL_CLOCK_HZ."""
    ks = sorted({k for k, _ in DESCEND_MHZ} & {k for k, _, _ in UPDATE_MHZ})
    if not ks:
        return DEFAULT_CLOCK_HZ
    k = min([k for k in ks if k >= fanout] or [ks[-1]])
    ws = sorted({w for kk, w in DESCEND_MHZ if kk == k})
    w = word_bits if word_bits in ws else min(ws, key=lambda x: (abs(x - word_bits), -x))
    desc = DESCEND_MHZ[(k, w)]
    upd_rows = {p: mhz for (kk, _, p), mhz in UPDATE_MHZ.items() if kk == k}
    upd = min(mhz for p, mhz in upd_rows.items() if p <= max(lanes, min(upd_rows)))
    return min(desc, upd) * 1e6 if min(desc, upd) * 1e6 < SHELL_CLOCK_HZ else SHELL_CLOCK_HZ


@dataclasses.dataclass(frozen=True)
class Board:
    """Public resource counts of an FPGA board's device and its host link."""

    name: str
    part: str
    lut: int
    ff: int
    bram36: int
    uram: int
    dsp: int
    link: str
    source: str
    # Share of the device left to kernels after the shell (static region) and with routing
    # headroom. ASSUMPTION: 0.7; Vitis platforms reserve roughly a fifth to a quarter of the
    # device for the shell, and designs above ~80% of the rest rarely close timing.
    usable: float = 0.7


# Public numbers: AMD/Xilinx DS962 "Alveo U200 and U250 Data Center Accelerator Cards Data Sheet"
# (U200: 1,182K LUTs, 2,364K registers, 6,840 DSP slices, 75.9 Mb block RAM = 2,160 RAMB36,
# 270 Mb UltraRAM = 960 URAM288; U250: 1,728K LUTs, 3,456K registers, 12,288 DSP slices,
# 94.5 Mb block RAM = 2,688 RAMB36, 360 Mb UltraRAM = 1,280 URAM288; both PCIe gen3 x16) and
# DS963 "Alveo U280 Data Center Accelerator Card Data Sheet" (1,304K LUTs, 2,607K registers,
# 9,024 DSP slices, 70.9 Mb block RAM = 2,016 RAMB36, 270 Mb UltraRAM = 960 URAM288; PCIe gen4 x8
# or gen3 x16, modelled as gen3 x16).
BOARDS: dict[str, Board] = {
    "u200": Board("u200", "xcu200 (VU9P)", 1_182_240, 2_364_480, 2_160, 960, 6_840,
                  "pcie3x16", "DS962"),
    "u250": Board("u250", "xcu250 (VU13P)", 1_728_000, 3_456_000, 2_688, 1_280, 12_288,
                  "pcie3x16", "DS962"),
    "u280": Board("u280", "xcu280 (VU37P)", 1_303_680, 2_607_360, 2_016, 960, 9_024,
                  "pcie3x16", "DS963"),
}


def get_board(name: str) -> Board:
    if name not in BOARDS:
        raise ValueError(f"unknown FPGA board {name!r}; known boards: {sorted(BOARDS)}")
    return BOARDS[name]


# ----------------------------------------------------------------------------- memories
BRAM36_TDP_SHAPES = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36))
URAM_DEPTH, URAM_WIDTH = 4096, 72
LUTRAM_MAX_DEPTH, LUTRAM_BITS_PER_LUT = 64, 64


def bram36_for(depth: int, width: int) -> int:
    """RAMB36E2 needed for one depth x width memory, best aspect ratio."""
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM36_TDP_SHAPES)


def uram_for(depth: int, width: int) -> int:
    return math.ceil(width / URAM_WIDTH) * math.ceil(depth / URAM_DEPTH)


@dataclasses.dataclass(frozen=True)
class LogicCoefficients:
    """LUTs and FFs per lane, per stage, per (K * W) bit, plus a fixed part (control, AXI)."""

    lut_per_bit: float = 2.0
    ff_per_bit: float = 2.0
    lut_fixed: float = 2000.0
    ff_fixed: float = 2000.0
    source: str = "default before calibration on yosys"


@dataclasses.dataclass(frozen=True)
class RmmArch:
    fanout: int
    lanes: int
    depth: int
    word_bits: int = 32


def rmm_resources(arch: RmmArch, capacity: int, board: Board,
                  logic: LogicCoefficients = LogicCoefficients()) -> dict[str, float]:
    """LUT, FF, BRAM36, URAM and DSP use of an RMM holding `capacity` leaves."""
    k, p, w = arch.fanout, arch.lanes, arch.word_bits
    sizes = level_sizes(capacity, k)
    use = {"lut": logic.lut_fixed + logic.lut_per_bit * k * w * arch.depth * p,
           "ff": logic.ff_fixed + logic.ff_per_bit * k * w * arch.depth * p,
           "bram36": 0.0, "uram": 0.0, "dsp": 0.0}
    use["ff"] += w  # the root register
    # Deepest levels first: they decide between BRAM and URAM.
    for words in sorted(sizes[1:], reverse=True):
        bank_depth = math.ceil(words / k)
        copies = k * p * p  # live-value table: P x P copies of each bank
        if p > 1:
            use["ff"] += words * math.ceil(math.log2(p))
        if bank_depth <= LUTRAM_MAX_DEPTH:
            use["lut"] += copies * w * math.ceil(bank_depth / LUTRAM_BITS_PER_LUT)
            continue
        b, u = bram36_for(bank_depth, w) * copies, uram_for(bank_depth, w) * copies
        share_b = (use["bram36"] + b) / board.bram36
        share_u = (use["uram"] + u) / board.uram
        if share_b <= share_u:
            use["bram36"] += b
        else:
            use["uram"] += u
    return use


def fits(use: dict[str, float], board: Board) -> bool:
    budget = {"lut": board.lut, "ff": board.ff, "bram36": board.bram36, "uram": board.uram,
              "dsp": board.dsp}
    return all(use[r] <= board.usable * budget[r] for r in budget)


def utilisation(use: dict[str, float], board: Board) -> dict[str, float]:
    budget = {"lut": board.lut, "ff": board.ff, "bram36": board.bram36, "uram": board.uram,
              "dsp": board.dsp}
    return {r: use[r] / budget[r] for r in budget}


def calibrate_logic(rows: list[dict]) -> LogicCoefficients:
    """Least-squares fit of LUT/FF = fixed + per_bit * (K * W * D * P) on yosys rows.

    Each row needs keys fanout, word_bits, depth, lanes, lut, ff. Needs >= 2 distinct sizes.
    """
    if len(rows) < 2:
        raise ValueError(f"calibrate_logic needs >= 2 yosys rows, got {len(rows)}")
    x = np.array([r["fanout"] * r["word_bits"] * r["depth"] * r["lanes"] for r in rows], float)
    if np.ptp(x) == 0:
        raise ValueError("calibrate_logic needs rows of different sizes (K*W*D*P)")
    a = np.stack([np.ones_like(x), x], 1)
    coef_lut = np.linalg.lstsq(a, np.array([r["lut"] for r in rows], float), rcond=None)[0]
    coef_ff = np.linalg.lstsq(a, np.array([r["ff"] for r in rows], float), rcond=None)[0]
    return LogicCoefficients(lut_per_bit=float(max(coef_lut[1], 0.0)),
                             ff_per_bit=float(max(coef_ff[1], 0.0)),
                             lut_fixed=float(max(coef_lut[0], 0.0)),
                             ff_fixed=float(max(coef_ff[0], 0.0)),
                             source=f"least squares on {len(rows)} yosys synth_xilinx rows")


# ----------------------------------------------------------------------------- timing
@dataclasses.dataclass(frozen=True)
class RmmTiming:
    """Cycle model of the RMM (see the module docstring)."""

    stage_cycles: float = 2.0
    io_cycles: float = 14.0
    throughput: float = 1.0  # ops per cycle per lane once full
    clock_hz: float = DEFAULT_CLOCK_HZ  # used when clock_table is False or K is not given
    clock_table: bool = True  # the RTL's estimated clock per (K, P) (rtl_clock_hz)
    # ASSUMPTION: host-side cost of one kernel invocation (XRT ap_start/ap_done round trip
    # through the AXI4-Lite register file) -- the transfer of the batch is charged by `links`.
    invoke_overhead_s: float = 10e-6
    source: str = ("the RTL's documented pipeline (sample 9+L*D, switch bubble 7+L*(D-1) "
                   "cycles, L = 1 + log2(K)//2 cycles per level, 1 op/cycle/lane), not yet "
                   "its measured table")
    # The kernel's measured memory side: ((P, cycles per item), ...) ascending in P, and the
    # fixed cycles of a run at depth `kernel_depth` (empty: the core alone).
    kernel_per_item: tuple[tuple[int, float], ...] = ()
    kernel_fixed_cycles: float = 0.0
    kernel_depth: int = 0
    kernel_fanout: int | None = None

    def kernel_item_cycles(self, lanes: int) -> float | None:
        """Measured kernel cycles per item at `lanes` (the largest measured P <= lanes)."""
        if not self.kernel_per_item:
            return None
        below = [c for p, c in self.kernel_per_item if p <= lanes]
        return below[-1] if below else self.kernel_per_item[0][1]

    def clock_for(self, fanout: int | None, lanes: int, word_bits: int = 32) -> float:
        """Clock of the shape: the RTL's estimate per (K, P) or the flat clock_hz."""
        if fanout is None or not self.clock_table:
            return self.clock_hz
        return rtl_clock_hz(fanout, lanes, word_bits)

    def cycles(self, batch: int, depth: int, lanes: int, fanout: int | None = None) -> float:
        """Cycles of a batch; `fanout` (K) scales the per-level cycles (level_cycles)."""
        fill = self.io_cycles + self.stage_cycles * depth * level_cycles(fanout)
        core = fill + math.ceil(batch / lanes) / self.throughput
        per_item = self.kernel_item_cycles(lanes)
        if per_item is None:
            return core
        if fanout is None:
            extra = depth - self.kernel_depth
        else:
            extra = (depth * level_cycles(fanout)
                     - self.kernel_depth * level_cycles(self.kernel_fanout))
        fixed = self.kernel_fixed_cycles + self.stage_cycles * extra
        return max(core, fixed + batch * per_item)

    def seconds(self, batch: int, depth: int, lanes: int, fanout: int | None = None,
                word_bits: int = 32) -> float:
        return (self.cycles(batch, depth, lanes, fanout)
                / self.clock_for(fanout, lanes, word_bits) + self.invoke_overhead_s)

    @classmethod
    def fit(cls, rows: list[dict], clock_hz: float = DEFAULT_CLOCK_HZ, **kw) -> RmmTiming:
        """See `from_rtl_csv_rows` for the RTL's own CSV columns."""
        return cls._fit(rows, clock_hz, **kw)

    @classmethod
    def from_rtl_csv_rows(cls, rows: list[dict], **kw) -> RmmTiming:
        """Fit on rows of experiments/results/rtl/cycles.csv (experiments/rtl/report_cycles.py):
        per (K, D, P, W) the idle latencies, ops per cycle and the bubbles at a kind switch. A
        batch call is charged the slower latency plus the larger bubble, at the slower kind's
        rate per lane."""
        conv = []
        for r in rows:
            # depth in pipeline cycles: D levels of level_cycles(K) each
            d, p = float(r["D"]) * level_cycles(int(r["K"])), float(r["P"])
            lat = max(float(r["sample_latency"]), float(r["update_latency"]))
            bubbles = max(float(r.get("bubbles_update_to_sample") or 0),
                          float(r.get("bubbles_sample_to_update") or 0))
            rate = min(float(r["sample_ops_per_cycle"]), float(r["update_ops_per_cycle"])) / p
            conv.append({"depth": d, "latency_cycles": lat + bubbles,
                         "ops_per_cycle_per_lane": rate})
        return cls._fit(conv, **kw)

    def with_kernel_fit(self, rows: list[dict]) -> RmmTiming:
        """This timing plus the kernel's measured memory side, from rows of
        experiments/results/rtl/kernel_cycles_fit.csv (keys K, D, P, command, fixed_cycles,
        cycles_per_item): per P the slowest command, and the fixed cycles of the deepest
        measured tree (the largest)."""
        if not rows:
            raise ValueError("with_kernel_fit needs at least one row of kernel_cycles_fit.csv")
        per_lane: dict[int, float] = {}
        fixed = []
        for r in rows:
            p = int(r["P"])
            per_lane[p] = max(per_lane.get(p, 0.0), float(r["cycles_per_item"]))
            k = int(r["K"]) if r.get("K") not in (None, "") else None
            fixed.append((int(r["D"]) * level_cycles(k), float(r["fixed_cycles"]),
                          int(r["D"]), k))
        _, fixed_cycles, depth, fanout = max(fixed, key=lambda f: (f[0], f[1]))
        return dataclasses.replace(
            self, kernel_per_item=tuple(sorted(per_lane.items())),
            kernel_fixed_cycles=fixed_cycles, kernel_depth=depth, kernel_fanout=fanout,
            source=f"{self.source}; memory side: the kernel's measured cycles per item at "
                   f"P in {sorted(per_lane)} ({len(rows)} fitted rows)")

    @classmethod
    def _fit(cls, rows: list[dict], clock_hz: float = DEFAULT_CLOCK_HZ, **kw) -> RmmTiming:
        """Fit latency_cycles = io + stage * depth on measured rows (keys: depth,
        latency_cycles, and optionally ops_per_cycle_per_lane)."""
        if not rows:
            raise ValueError("RmmTiming.fit needs at least one measured row")
        d = np.array([r["depth"] for r in rows], float)
        lat = np.array([r["latency_cycles"] for r in rows], float)
        if np.ptp(d) > 0:
            a = np.stack([np.ones_like(d), d], 1)
            io, stage = np.linalg.lstsq(a, lat, rcond=None)[0]
        else:  # one depth only: attribute everything to the stages
            io, stage = 0.0, float(np.mean(lat / d))
        tput = [r["ops_per_cycle_per_lane"] for r in rows if r.get("ops_per_cycle_per_lane")]
        return cls(stage_cycles=float(stage), io_cycles=float(max(io, 0.0)),
                   throughput=float(np.median(tput)) if tput else 1.0, clock_hz=clock_hz,
                   source=f"fit on {len(rows)} measured RTL rows", **kw)


# ----------------------------------------------------------------------------- exploration
FANOUTS = (2, 4, 8, 16, 32, 64)
LANES = (1, 2, 4, 8, 16)


def explore(capacity: int, board: Board, batch: int, timing: RmmTiming = RmmTiming(),
            logic: LogicCoefficients = LogicCoefficients(), word_bits: int = 32,
            fanouts=FANOUTS, lanes=LANES) -> list[dict]:
    """Every (K, P) architecture for `capacity` leaves on `board`: resources, fit, time of a
    sample batch of `batch`, and the largest capacity (deepest tree) that fits.

    Depth is D = ceil(log_K N); the fixed-point format carries log2(K) digits per level in one
    32-bit word, so D * log2(K) <= 32 bounds it (formats.FixedPoint.validate).
    """
    out = []
    for k, p in itertools.product(fanouts, lanes):
        d = tree_depth(capacity, k)
        if d * log2_exact(k) > 32:
            continue
        arch = RmmArch(k, p, d, word_bits)
        use = rmm_resources(arch, capacity, board, logic)
        max_depth = d
        while (max_depth + 1) * log2_exact(k) <= 32 and max_depth < 12 and fits(
                rmm_resources(RmmArch(k, p, max_depth + 1, word_bits), k ** (max_depth + 1),
                              board, logic), board):
            max_depth += 1
        row = {"board": board.name, "fanout": k, "lanes": p, "depth": d, "capacity": capacity,
               "fits": fits(use, board), "sample_cycles": timing.cycles(batch, d, p, k),
               "sample_s": timing.seconds(batch, d, p, k, word_bits),
               "clock_mhz": timing.clock_for(k, p, word_bits) / 1e6,
               "max_capacity": k ** max_depth if fits(use, board) else 0}
        row.update({f"use_{r}": v for r, v in use.items()})
        row.update({f"util_{r}": v for r, v in utilisation(use, board).items()})
        out.append(row)
    return out


def best_architecture(capacity: int, board: Board, batch: int, timing: RmmTiming = RmmTiming(),
                      logic: LogicCoefficients = LogicCoefficients()) -> dict:
    """The fitting architecture with the shortest sample batch (ties: fewest resources)."""
    rows = [r for r in explore(capacity, board, batch, timing, logic) if r["fits"]]
    if not rows:
        raise ValueError(f"no RMM architecture holds {capacity} leaves on {board.name}")
    return min(rows, key=lambda r: (r["sample_s"], r["util_bram36"] + r["util_uram"],
                                    r["util_lut"]))


# ----------------------------------------------------------------------------- learner
DEFAULT_ARRAY = "16x16"  # the learner a modelled FPGA has unless its device names another


def parse_array(text: str) -> tuple[int, int]:
    """(R, C) of a learner array spelt `RxC` (hrl_learn_engine's R and C: powers of two in
    1..64, max(R, C) at least 2). Raises a one-line ValueError naming the text otherwise."""
    r_text, sep, c_text = text.partition("x")
    if sep and r_text.isdigit() and c_text.isdigit():
        r, c = int(r_text), int(c_text)
        if all(1 <= n <= 64 and n & (n - 1) == 0 for n in (r, c)) and max(r, c) >= 2:
            return r, c
    raise ValueError(f"FPGA learner array {text!r}: expected RxC with R and C powers of two "
                     "in 1..64, max(R, C) >= 2 (e.g. 16x16, 8x32)")


@dataclasses.dataclass(frozen=True)
class ArrayLearner:
    """The FPGA learning module (fpga_rtl/rtl/hrl_learn_*): one R x C fixed-point
    multiply-accumulate array for A*W, delta*W^T and A^T*delta, weights in on-chip banks.

    Its times are the cycle model `hrl.mapping.learner_schedule` (the array's schedule,
    checked cycle for cycle against the simulated RTL by the array's testbench; the loss and
    optimizer units modelled) at `clock_hz`. `from_table` takes the clock of an array the
    learner's cycle table holds (experiments/results/fpga_learner/cycles.csv, written by
    experiments/rtl/learner_cycles.py at yosys's clock estimate); `source` says which.
    Cost: pure arithmetic over the network's layers, microseconds per call."""

    rows: int = 16
    cols: int = 16
    clock_hz: float = DEFAULT_CLOCK_HZ
    # DDPG's kernel (its own step module) may time slower than DQN's; None: clock_hz.
    ddpg_clock_hz: float | None = None
    # Host-side cost of one kernel invocation, as the RMM's (RmmTiming.invoke_overhead_s).
    invoke_overhead_s: float = 10e-6
    source: str = ("the learner's cycle model (hrl.mapping.learner_schedule) on a 16x16 array "
                   "at the default clock, no learner table in the profile")
    # What the whole kernel takes of a board (`learner_use`); None: unknown, not checked.
    use: LearnerUse | None = None

    def infer_seconds(self, layers: Sequence[int], batch: int) -> float:
        """One forward pass of the policy on `batch` states."""
        cycles = learner_schedule.inference_cycles(list(layers), self.rows, self.cols, batch)
        return cycles / self.clock_hz + self.invoke_overhead_s

    def train_seconds(self, networks: Mapping[str, Sequence[int]], batch: int,
                      target_period: int = 1) -> float:
        """One SGD step: DQN's double-Q step on `networks["q"]`, or DDPG's critic and actor
        steps on `networks["actor"]` and `networks["critic"]`, each as its step module runs
        it (a target update's cost spread over `target_period` steps)."""
        if "q" in networks:
            got = learner_schedule.step_cycles("dqn", list(networks["q"]), batch, self.rows,
                                               self.cols, target_period=target_period)
            clock = self.clock_hz
        else:
            got = learner_schedule.step_cycles("ddpg", list(networks["actor"]), batch,
                                               self.rows, self.cols,
                                               critic=list(networks["critic"]),
                                               target_period=target_period)
            clock = self.ddpg_clock_hz or self.clock_hz
        return got["total"] / clock + self.invoke_overhead_s

    @classmethod
    def from_table(cls, rows: list[dict], array: str = DEFAULT_ARRAY) -> ArrayLearner:
        """The learner of the table's `array` (R x C), at the clock the table's figures were
        taken at (its cycles over its microseconds): its DDPG rows' clock for DDPG's step,
        the others' for the rest. Raises ValueError when the table has no row of that array
        or no clock."""
        mine = [r for r in rows if r.get("array") == array and float(r.get("us") or 0) > 0]
        if not mine:
            raise ValueError(f"the learner's cycle table has no {array} array")

        def median_clock(of: list[dict]) -> float | None:
            clocks = sorted(float(r["total_cycles"]) / float(r["us"]) * 1e6 for r in of)
            return clocks[len(clocks) // 2] if clocks else None

        ddpg, rest = [], []
        for x in mine:
            (ddpg if str(x.get("net", "")).startswith("ddpg") else rest).append(x)
        ddpg_clock = median_clock(ddpg)
        clock = median_clock(rest) or ddpg_clock
        r, c = (int(x) for x in array.split("x"))
        sim = sum(1 for x in mine if x.get("sim") == "yes")
        at = f"{clock / 1e6:.0f} MHz"
        if ddpg_clock and round(ddpg_clock / 1e6) != round(clock / 1e6):
            at += f" (DDPG's step at {ddpg_clock / 1e6:.0f} MHz, its kernel's)"
        return cls(r, c, clock, ddpg_clock_hz=ddpg_clock, source=(
            f"the learner's cycle model on its {array} array ({sim} of the table's {len(mine)} "
            f"points simulated in RTL, cycle for cycle), at the table's {at} "
            "(yosys's estimate; experiments/results/fpga_learner/cycles.csv)"))


# ----------------------------------------------------------------------------- learner use
RESOURCES = ("lut", "ff", "bram36", "uram", "dsp")


@dataclasses.dataclass(frozen=True)
class LearnerUse:
    """What the whole training kernel (fpga_rtl/rtl/hrl_learn_kernel.v: the array, its banks,
    the C Adam and target lanes, the loss unit, the walk and the control) takes of a board on
    one array: LUTs (logic and LUT RAM), flip-flops, BRAM36, URAM and DSP slices, and where
    the figures come from (`source`)."""

    lut: float
    ff: float
    bram36: float
    uram: float
    dsp: float
    source: str

    def as_dict(self) -> dict[str, float]:
        return {r: float(getattr(self, r)) for r in RESOURCES}


def _use_of(row: Mapping) -> dict[str, float]:
    """A yosys table row (experiments/results/fpga_learner/*.csv) in the model's resources."""
    return {"lut": float(row["LUT"]) + float(row.get("LUTRAM") or 0), "ff": float(row["FF"]),
            "bram36": float(row["BRAM36"]), "uram": float(row.get("URAM") or 0),
            "dsp": float(row["DSP"])}


def _array_size(text: str) -> str:
    """A table's size as RxC: the array tables spell a square array by its side ("16")."""
    return text if "x" in text else f"{text}x{text}"


def learner_use(kernel_rows: list[Mapping], array_rows: list[Mapping],
                array: str) -> LearnerUse | None:
    """The training kernel's resources on an `array` (RxC) array, from yosys's tables:
    `kernel_rows` the whole kernel synthesized (experiments/results/fpga_learner/kernel.csv,
    `learner_resources.py --kernel`), `array_rows` the array, its activation unit and its
    banks synthesized alone, their `total` rows (resources.csv, `--array-only`).

    Measured where the kernel table has the array. Otherwise estimated, where the array table
    has the array's total and the kernel table two or more arrays of different C that the
    array table has too: the array's total plus the rest of the kernel (the kernel less its
    array's total: the Adam and target lanes, a few per column, the loss unit, the walk and
    the control), fitted per resource as a + b * C through the synthesized kernels by least
    squares. Why linear in C: the lanes are the part of the rest that grows, C of each. None
    when neither holds (nothing is known: the model then does not check the learner's fit)."""
    r, c = parse_array(array)
    name = f"{r}x{c}"
    kernels = {_array_size(k["size"]): _use_of(k) for k in kernel_rows}
    if name in kernels:
        return LearnerUse(**kernels[name], source=(
            f"the training kernel on the {name} array, synthesized (yosys synth_xilinx; "
            "experiments/results/fpga_learner/kernel.csv)"))
    totals = {_array_size(t["size"]): _use_of(t) for t in array_rows
              if t.get("module") == "total"}
    points = [(parse_array(k)[1], {x: kernels[k][x] - totals[k][x] for x in RESOURCES})
              for k in sorted(kernels) if k in totals]
    if name not in totals or len({col for col, _ in points}) < 2:
        return None
    cols = np.array([col for col, _ in points], float)
    design = np.stack([np.ones_like(cols), cols], axis=1)
    use = {}
    for x in RESOURCES:
        (a, b), *_ = np.linalg.lstsq(design, np.array([rest[x] for _, rest in points]),
                                     rcond=None)
        use[x] = totals[name][x] + max(0.0, a + b * c)
    fitted = ", ".join(sorted(k for k in kernels if k in totals))
    return LearnerUse(**use, source=(
        f"ESTIMATED for the {name} array: its array, activation unit and banks synthesized, "
        f"the rest of the kernel (the Adam and target lanes of each column, loss, walk, "
        f"control) extrapolated in C from the kernels synthesized at {fitted} "
        "(experiments/results/fpga_learner/resources.csv, kernel.csv)"))


def board_less(board: Board, use: Mapping[str, float]) -> Board:
    """`board` with `use` already taken: what `fits` then leaves for a second kernel is the
    usable share less `use`, resource by resource."""
    return dataclasses.replace(board, **{
        r: getattr(board, r) - use[r] / board.usable for r in RESOURCES})


def learner_misfit(use: LearnerUse | None, board: Board) -> str | None:
    """Why the training kernel does not fit `board` by itself (each resource over the usable
    share, named with its figures), or None: it fits, or its use is unknown."""
    if use is None:
        return None
    over = [f"{r.upper()} {use.as_dict()[r]:,.0f} > {board.usable * getattr(board, r):,.0f}"
            for r in RESOURCES if use.as_dict()[r] > board.usable * getattr(board, r)]
    return f"the learner needs more than {board.name} has usable ({'; '.join(over)})" if over \
        else None


# Why a conv net's infer and train never go to a modelled FPGA (the plan's notes say it).
FPGA_NO_CONV = ("the FPGA learner implements dense (MLP) layers only, not convolutions: a conv "
                "net's infer and train stay off the FPGA")


def learner_seconds(learner: ArrayLearner, call: str, workload) -> float:
    """Seconds of one call of the FPGA learner, `call` "infer" (the policy on the workload's
    num_envs observations) or "train" (one SGD step on its batch), for a `Workload`: the one
    place the mapping model reads an FPGA learner's times from (`platform.fpga_placement`).
    ValueError for a conv net: the learner's array runs dense layers only (`fpga_placement`
    then leaves a conv net's infer and train off the board, `FPGA_NO_CONV`)."""
    if getattr(workload, "conv_layers", ()):
        raise ValueError(FPGA_NO_CONV)
    if call == "infer":
        return learner.infer_seconds(workload.policy_layers(), workload.num_envs)
    if call == "train":
        return learner.train_seconds(workload.networks(), workload.batch_size,
                                     getattr(workload, "target_period", 1))
    raise ValueError(f"an FPGA learner runs infer or train, not {call!r}")
