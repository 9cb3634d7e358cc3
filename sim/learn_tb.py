"""Helpers shared by the learning module's testbenches (sim/hrl_learn_*/): packing signed
words into buses, random fixed-point operands, and the runner of a mutated module.

The golden model stays hrl.fixed_point (the testbenches call it); nothing here computes a
reference value.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import rtl_runner

from hrl.fixed_point.kernel_program import FIELDS as OP_FIELDS  # the op table's, in order
from hrl.fixed_point.kernel_program import clog2  # noqa: F401  (re-exported for the TBs)

# The engine's bank selects (hrl_learn_engine's host ports, h_wr_sel).
SEL_ACT, SEL_W, SEL_B, SEL_DELTA = 0, 1, 2, 3


async def write_matrix(dut, sel: int, base: int, slog: int, mat, lanes: int, bus_lanes: int,
                       width: int) -> None:
    """A matrix into the engine's bank `sel` through its host write port (the engine's or a
    module that passes it through), one row block of `lanes` words per cycle on a bus of
    `bus_lanes` words of `width` bits; ragged edges masked."""
    from cocotb.triggers import FallingEdge

    rows, cols = mat.shape
    for i in range(rows):
        for j0 in range(0, cols, lanes):
            words = [int(mat[i, j0 + c]) if j0 + c < cols else 0 for c in range(lanes)]
            await FallingEdge(dut.clk)
            dut.h_wr_en.value = 1
            dut.h_wr_sel.value = sel
            dut.h_wr_base.value = base
            dut.h_wr_slog.value = slog
            dut.h_wr_i.value = i
            dut.h_wr_j.value = j0
            dut.h_wr_mask.value = sum(1 << c for c in range(lanes) if j0 + c < cols)
            dut.h_wr_data.value = pack(words + [0] * (bus_lanes - lanes), width)
    await FallingEdge(dut.clk)
    dut.h_wr_en.value = 0


class StepPorts:
    """The step modules' own host ports (hrl_learn_step, hrl_learn_step_ddpg: the same
    st_cfg_*, st_p_* and st_td* ports), for a TB class with `dut`, `C` (lanes of a parameter
    block) and `hdl_formats` (the module's formats by name)."""

    async def write_cfg(self, items) -> None:
        """The step's registers: (address, value) pairs."""
        from cocotb.triggers import FallingEdge

        d = self.dut
        for addr, value in items:
            await FallingEdge(d.clk)
            d.st_cfg_en.value = 1
            d.st_cfg_addr.value = addr
            d.st_cfg_data.value = int(value) & 0xFFFFFFFF
        await FallingEdge(d.clk)
        d.st_cfg_en.value = 0

    async def write_stream(self, sel: int, blocks: np.ndarray) -> None:
        from cocotb.triggers import FallingEdge

        d = self.dut
        for p, row in enumerate(blocks):
            await FallingEdge(d.clk)
            d.st_p_wr_en.value = 1
            d.st_p_wr_sel.value = sel
            d.st_p_wr_addr.value = p
            d.st_p_wr_data.value = pack(row, 32)
        await FallingEdge(d.clk)
        d.st_p_wr_en.value = 0

    async def read_stream(self, sel: int, n: int) -> np.ndarray:
        """n blocks of parameter bank `sel`, one read per cycle (the data 2 cycles later)."""
        from cocotb.triggers import FallingEdge

        d = self.dut
        out = np.zeros((n, self.C), np.int64)
        for k in range(n + 2):
            await FallingEdge(d.clk)
            if k >= 2:
                out[k - 2] = unpack(int(d.st_p_rd_data.value), self.C, 32)
            d.st_p_rd_en.value = int(k < n)
            d.st_p_rd_sel.value = sel
            d.st_p_rd_addr.value = min(k, n - 1)
        d.st_p_rd_en.value = 0
        return out

    async def read_td(self, batch: int):
        """The step's TD and |TD| words of samples 0..batch-1."""
        from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

        d = self.dut
        vw = self.hdl_formats["value"][0]
        td, abs_td = np.zeros(batch, np.int64), np.zeros(batch, np.int64)
        for b in range(batch):
            await FallingEdge(d.clk)
            d.st_td_i.value = b
            await RisingEdge(d.clk)
            await ReadOnly()
            td[b] = unpack(int(d.st_td.value), 1, vw)[0]
            abs_td[b] = unpack(int(d.st_abs_td.value), 1, vw)[0]
        await FallingEdge(d.clk)
        return td, abs_td

async def write_op(dut, op: int, fields: dict) -> None:
    """Row `op` of the engine's op table, one field (OP_FIELDS order) per cycle; a field
    not named is 0."""
    from cocotb.triggers import FallingEdge

    for f, name in enumerate(OP_FIELDS):
        await FallingEdge(dut.clk)
        dut.op_wr_en.value = 1
        dut.op_wr_op.value = op
        dut.op_wr_field.value = f
        dut.op_wr_data.value = int(fields.get(name, 0)) & ((1 << len(dut.op_wr_data)) - 1)
    await FallingEdge(dut.clk)
    dut.op_wr_en.value = 0


def pack(values, width: int) -> int:
    """Signed words -> one bus value, word i at bits [i*width, (i+1)*width)."""
    out = 0
    mask = (1 << width) - 1
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack(bus: int, n: int, width: int) -> list[int]:
    """One bus value -> n signed words of `width` bits."""
    mask = (1 << width) - 1
    out = []
    for i in range(n):
        v = (bus >> (i * width)) & mask
        out.append(v - (1 << width) if v >> (width - 1) else v)
    return out


def random_words(rng: np.random.Generator, shape, width: int, p_extreme: float = 0.05):
    """Random words of a `width`-bit signed format with some extremes and zeros (int32)."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    scale = rng.choice([hi, hi >> 2, hi >> 6 or 1], size=shape)
    x = rng.integers(-scale - 1, scale + 1, size=shape)
    r = rng.random(shape)
    x = np.where(r < p_extreme, hi, x)
    x = np.where((r >= p_extreme) & (r < 2 * p_extreme), lo, x)
    x = np.where((r >= 2 * p_extreme) & (r < 3 * p_extreme), 0, x)
    return np.clip(x, lo, hi).astype(np.int32)


def run_mutant(module: str, sources: list[str], target: str, pattern: str, replacement: str,
               params: dict[str, int], name: str, sim: str = "icarus") -> None:
    """Run sim/<module>'s testbench against a copy of fpga_rtl/rtl/<target> with the regular
    expression `pattern` replaced by `replacement` (exactly once). Raises AssertionError if
    the testbench fails (what a mutation test expects), RuntimeError if the pattern is not
    found once (the mutation would silently test the unmutated module)."""
    build = rtl_runner.BUILD / module / f"mutant-{name}-{rtl_runner.case_name(sim, params)}"
    src_dir = build / "rtl"
    if src_dir.exists():
        shutil.rmtree(src_dir)
    src_dir.mkdir(parents=True)
    text = (rtl_runner.RTL / target).read_text()
    mutated, n = re.subn(pattern, replacement, text)
    if n != 1:
        raise RuntimeError(f"mutation {name}: pattern {pattern!r} found {n} times in {target}")
    paths = []
    for s in sources:
        p = src_dir / s
        p.write_text(mutated if s == target else (rtl_runner.RTL / s).read_text())
        paths.append(p)
    test_env = {f"PARAM_{k}": str(v) for k, v in params.items()}
    top = module
    rtl_runner.simulate(sim, paths, top, params, build, f"test_{module}",
                        rtl_runner.testbench_dir(module), test_env, quiet=True)


def mutation_kills(module: str, sources: list[str], target: str, pattern: str,
                   replacement: str, params: dict[str, int], name: str) -> bool:
    """True if the testbench fails on the mutant (the mutation is caught). Under pytest the
    cocotb runner reports failed tests by SystemExit(1), elsewhere by AssertionError."""
    try:
        run_mutant(module, sources, target, pattern, replacement, params, name)
    except AssertionError:
        return True
    except SystemExit as exc:
        return exc.code not in (0, None)
    return False


def verilator_lint(top: str, srcs: list[str], prm: dict) -> tuple[bool, str]:
    """`verilator --lint-only -Wall` of fpga_rtl/rtl/`srcs` with `top` at parameters `prm`:
    (clean: exit 0 and no diagnostic line, everything it printed)."""
    from hrl.replay.backends import rtl_model  # noqa: PLC0415 (only where Verilator runs)

    env = {**os.environ, **rtl_model.verilator_env()}
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", top,
           *(f"-G{k}={v}" for k, v in prm.items()),
           *(str(rtl_runner.RTL / s) for s in srcs)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    diagnostics = [line for line in text.splitlines() if line.startswith("%")]
    return out.returncode == 0 and not diagnostics, text


def elaborate(top: str, srcs: list[str], prm: dict, workdir: Path) -> str:
    """Build `top` with Icarus and run it for time 0; returns everything it printed (where
    an illegal parameter's $fatal shows)."""
    out_vvp = workdir / f"{top}.vvp"
    cmd = ["iverilog", "-g2012", "-o", str(out_vvp), "-s", top]
    cmd += [f"-P{top}.{k}={v}" for k, v in prm.items()]
    cmd += [str(rtl_runner.RTL / s) for s in srcs]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if build.returncode != 0:
        return build.stdout + build.stderr
    run = subprocess.run(["vvp", "-n", str(out_vvp)], capture_output=True, text=True,
                         timeout=120)
    return run.stdout + run.stderr


def relpath(p: Path) -> str:
    return str(p.relative_to(rtl_runner.ROOT))
