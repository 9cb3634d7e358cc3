"""cocotb testbench of fpga_rtl/rtl/hrl_learn_engine.v against hrl.fixed_point.layers
(mlp_forward; mlp_backward for the backward and gradient ops).

The host's side as a driver would do it: random ReLU MLPs of random shapes (DQN CartPole's
4-64-64-2 among them, widths and batches that are not multiples of R or C), random batches,
random words in the formats of hrl.fixed_point.formats.FxFormats (act, weight, value), the
matrices written row block by row block into the banks, one op per layer written into the op
table from the formats (shift, width, bias shift), then start / done. Every layer's output
(hidden activations and the last layer's values) is read back through the host read port and
must equal mlp_forward's words, and the engine's saturation count its n_sat. Half of the
networks use words over the formats' whole range (saturating sums), half the scale of a
trained net.

The reference runs on operands zero-padded to one shape per depth (a zero input column and
weight row add nothing to an exact sum; a zero output column is 0 and saturates nothing),
one batch row at a time under vmap, so that JAX compiles it once per depth, not per shape,
and the saturations of the real rows alone are counted.

The backward runs (test_backward, test_step_products) add a random output delta (full-range
delta words) and the backward ops to the same table; every weight- and bias-gradient word,
the input delta where it is propagated, and the run's saturations (forward + backward) must
equal mlp_forward + mlp_backward's, run on the whole batch padded to BMAX x NMAX (a zero
delta row adds nothing to a batch sum and saturates nothing).
"""

from __future__ import annotations

import json
import os

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
from learn_tb import (
    SEL_ACT,
    SEL_B,
    SEL_DELTA,
    SEL_W,
    clog2,
    random_words,
    unpack,
    write_matrix,
    write_op,
)
from tb_common import pulse_reset

from hrl.fixed_point import layers
from hrl.fixed_point.formats import FxFormats


class TB:
    def __init__(self, dut, seed: int = 1):
        self.dut = dut
        self.R = rtl_runner.param("R", 4)
        self.C = rtl_runner.param("C", 4)
        self.AW = rtl_runner.param("AW", 16)
        self.BW = rtl_runner.param("BW", 16)
        self.OW = rtl_runner.param("OW", 24)
        self.NMAX = rtl_runner.param("NMAX", 64)
        self.NL = rtl_runner.param("NL", 4)
        self.BMAX = rtl_runner.param("BMAX", 32)
        self.LA = max(self.R, self.C)
        self.HW = max(self.OW, self.BW)
        # The banks' depths (hrl_learn_engine's localparams): the layout below must fit.
        self.adepth = 2 * (self.NL + 1) * self.BMAX << clog2(-(-self.NMAX // self.LA))
        self.wdepth = 2 * self.NL * self.NMAX << clog2(-(-self.NMAX // self.C))
        self.bdepth = 2 * self.NL << clog2(-(-self.NMAX // self.C))
        self.ddepth = ((self.NL + 1) * self.BMAX + self.NL * (self.NMAX + 1)) << clog2(
            -(-self.NMAX // self.LA))
        self.fmt = FxFormats()
        self.rng = np.random.default_rng(seed + 100 * self.R + self.C)
        self._ref = {}
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def reset(self):
        d = self.dut
        for s in ("start", "n_ops", "op_first", "op_wr_en", "op_wr_op", "op_wr_field",
                  "op_wr_data", "h_wr_en", "h_wr_sel", "h_wr_base", "h_wr_slog", "h_wr_i", "h_wr_j",
                  "h_wr_mask", "h_wr_data", "h_rd_en", "h_rd_sel", "h_rd_base", "h_rd_slog",
                  "h_rd_i", "h_rd_j", "h_rd_rows", "h_rd_cols"):
            getattr(d, s).value = 0
        await pulse_reset(d.clk, d.rst)
        await RisingEdge(d.clk)

    # ------------------------------------------------------------------ host port
    async def write_matrix(self, sel: int, base: int, slog: int, mat) -> None:
        """A matrix into bank `sel`, one row block (L lanes) per cycle."""
        lanes = self.LA if sel in (SEL_ACT, SEL_DELTA) else self.C
        await write_matrix(self.dut, sel, base, slog, mat, lanes, self.LA, self.HW)

    async def read_matrix(self, base: int, slog: int, rows: int, cols: int, sel: int = 0):
        """A matrix of the activation bank (sel 0) or the delta bank (1), one row block per
        read (5 cycles each: the host port's register and the bank's 4)."""
        d, la = self.dut, self.LA
        out = np.zeros((rows, cols), np.int64)
        for i in range(rows):
            for j0 in range(0, cols, la):
                await FallingEdge(d.clk)
                d.h_rd_en.value = 1
                d.h_rd_sel.value = sel
                d.h_rd_base.value = base
                d.h_rd_slog.value = slog
                d.h_rd_i.value = i
                d.h_rd_j.value = j0
                d.h_rd_rows.value = rows
                d.h_rd_cols.value = cols
                await FallingEdge(d.clk)
                d.h_rd_en.value = 0
                for _ in range(4):
                    await RisingEdge(d.clk)
                await ReadOnly()
                words = unpack(int(d.h_rd_data.value), la, self.OW)
                n = min(la, cols - j0)
                out[i, j0:j0 + n] = words[:n]
        await FallingEdge(d.clk)
        return out

    async def write_op(self, op: int, fields: dict) -> None:
        await write_op(self.dut, op, fields)

    async def run(self, n_ops: int, timeout_cycles: int):
        """start / done; returns (cycles, saturations, error, fault)."""
        d = self.dut
        await FallingEdge(d.clk)
        d.start.value = 1
        d.n_ops.value = n_ops
        await FallingEdge(d.clk)
        d.start.value = 0
        await with_timeout(RisingEdge(d.done), 10 * timeout_cycles, "ns")
        await ReadOnly()
        return (int(d.cycles.value), int(d.sat_count.value), int(d.error.value),
                int(d.fault.value))

    # ------------------------------------------------------------------ one network
    def layout(self, dims, batch, at=(0, 0, 0)):
        """Bases and strides: every layer's output and the input packed in the activation
        bank from at[0], each with the narrowest row stride it needs; weights and biases
        likewise from at[1] and at[2]. Returns (acts, weights, biases, the bases after).
        The activations lie in reverse order (the last output first, the input last), so a
        write past an output matrix's rows lands in its own input, which is read back
        after the run: a controller that spills is caught."""
        acts, base = [None] * len(dims), at[0]
        for i in range(len(dims) - 1, -1, -1):
            slog = clog2(-(-dims[i] // self.LA))
            acts[i] = (base, slog)
            base += batch << slog
        assert base <= self.adepth, f"activations need {base} > {self.adepth} words"
        ws, bs, wbase, bbase = [], [], at[1], at[2]
        for i in range(len(dims) - 1):
            slog = clog2(-(-dims[i + 1] // self.C))
            ws.append((wbase, slog))
            bs.append(bbase)
            wbase += dims[i] << slog
            bbase += 1 << slog
        assert wbase <= self.wdepth and bbase <= self.bdepth
        return acts, ws, bs, (base, wbase, bbase)

    def network(self, dims, batch, trained: bool):
        """Random words: the input (batch, d0) in act, each layer's w and b in weight."""
        rng, f = self.rng, self.fmt

        def words(shape, fmt, sigma):
            if not trained:
                return random_words(rng, shape, fmt.width)
            q = np.rint(rng.normal(0.0, sigma, shape) * 2.0 ** fmt.frac)
            return np.clip(q, fmt.min_int, fmt.max_int).astype(np.int32)

        x = words((batch, dims[0]), f.act, 2.0)
        net = [{"w": words((dims[i], dims[i + 1]), f.weight, 1.0 / np.sqrt(dims[i])),
                "b": words((dims[i + 1],), f.weight, 0.1)} for i in range(len(dims) - 1)]
        return x, net

    def reference(self, dims, x, net):
        """mlp_forward on operands padded to NMAX wide (exact), per row under vmap:
        (every layer's output, unpadded, n_sat of the real rows)."""
        depth = len(dims) - 1
        if depth not in self._ref:
            f = self.fmt

            def one_row(ls, xr):
                y, inputs, _, n = layers.mlp_forward(ls, xr[None], f.act, f.weight, f.value)
                return [*inputs[1:], y], n

            self._ref[depth] = jax.jit(jax.vmap(one_row, in_axes=(None, 0)))
        p = self.NMAX
        ls = []
        for layer in net:
            w = np.zeros((p, p), np.int32)
            w[:layer["w"].shape[0], :layer["w"].shape[1]] = layer["w"]
            b = np.zeros(p, np.int32)
            b[:layer["b"].shape[0]] = layer["b"]
            ls.append({"w": jnp.asarray(w), "b": jnp.asarray(b)})
        xp = np.zeros((self.BMAX, p), np.int32)
        xp[:x.shape[0], :x.shape[1]] = x
        outs, n = self._ref[depth](ls, jnp.asarray(xp))
        batch = x.shape[0]
        ys = [np.asarray(o)[:batch, 0, :dims[i + 1]] for i, o in enumerate(outs)]
        return ys, int(np.sum(np.asarray(n)[:batch]))

    async def load(self, dims, batch, trained: bool = True, op0: int = 0, at=(0, 0, 0),
                   indep: bool = False):
        """Write a random network, its input and its ops (op0 on) at bases `at` (layout);
        indep: the first op marked independent of the op before it (it reads the host's
        input). Returns (x, net, acts, the bases after)."""
        f = self.fmt
        x, net = self.network(dims, batch, trained)
        acts, ws, bs, end = self.layout(dims, batch, at)
        await self.write_matrix(SEL_ACT, *acts[0], x)
        for i, layer in enumerate(net):
            await self.write_matrix(SEL_W, *ws[i], layer["w"])
            await self.write_matrix(SEL_B, bs[i], 0, layer["b"][None, :])
            last = i == len(net) - 1
            out = f.value if last else f.act
            await self.write_op(op0 + i, {
                "x_base": acts[i][0], "x_slog": acts[i][1], "m": batch, "k": dims[i],
                "n": dims[i + 1], "w_base": ws[i][0], "w_slog": ws[i][1], "b_base": bs[i],
                "y_base": acts[i + 1][0], "y_slog": acts[i + 1][1], "relu": int(not last),
                "shift": f.act.frac + f.weight.frac - out.frac, "width": out.width,
                "bshift": f.act.frac, "kind": 8 if indep and i == 0 else 0})
        return x, net, acts, end

    async def compare(self, dims, batch, x, net, acts, layers_run: int, label: str):
        """The input and the outputs of the first `layers_run` layers, read back, against
        the reference; returns the reference's saturation count."""
        want, want_sat = self.reference(dims, x, net)
        for i, w in enumerate([x, *want[:layers_run]]):
            got = await self.read_matrix(*acts[i], batch, dims[i])
            bad = np.argwhere(got != w)
            assert bad.size == 0, (
                f"{dims} batch {batch} ({label}): layer {i - 1} output (-1: the input): "
                f"{len(bad)} words differ, first at {tuple(bad[0])}: got "
                f"{got[tuple(bad[0])]} want {w[tuple(bad[0])]}")
        return want_sat

    async def check(self, dims, batch, trained: bool = True):
        """Load, run and compare one network; returns the cycles of the run."""
        x, net, acts, _ = await self.load(dims, batch, trained)
        macs = sum(batch * dims[i] * dims[i + 1] for i in range(len(net)))
        cycles, sats, error, fault = await self.run(len(net), 1000 + 4 * macs)
        assert not error, f"{dims} batch {batch}: error raised on a legal table"
        assert not fault, f"{dims} batch {batch}: the array refused a beat"
        want_sat = await self.compare(dims, batch, x, net, acts, len(net),
                                      "trained" if trained else "full-range")
        assert sats == want_sat, f"{dims} batch {batch}: {sats} saturations, want {want_sat}"
        return cycles

    def random_dims(self):
        rng = self.rng
        depth = int(rng.integers(1, self.NL + 1))
        hi = min(self.NMAX, 2 * max(self.R, self.C) + 3)
        return tuple(int(v) for v in rng.integers(1, hi + 1, depth + 1))


    # ------------------------------------------------------------------ the backward pass
    def backward_reference(self, dims, x, net, delta, input_delta: bool):
        """mlp_forward then mlp_backward on operands zero-padded to BMAX x NMAX (a zero
        delta row adds nothing to a batch sum and saturates nothing; zero columns likewise):
        (the weight and bias gradients, the input delta or None, the backward n_sat)."""
        key = ("bwd", len(dims) - 1, input_delta)
        if key not in self._ref:
            f = self.fmt

            def step(ls, xp, dp):
                _, inputs, masks, _ = layers.mlp_forward(ls, xp, f.act, f.weight, f.value)
                return layers.mlp_backward(ls, inputs, masks, dp, f.act, f.weight, f.delta,
                                           f.grad, input_delta=input_delta)

            self._ref[key] = jax.jit(step)
        p, batch = self.NMAX, x.shape[0]

        def pad(a, rows, cols):
            out = np.zeros((rows, cols), np.int32)
            out[:a.shape[0], :a.shape[1]] = a
            return jnp.asarray(out)

        ls = [{"w": pad(la["w"], p, p), "b": pad(la["b"][None], 1, p)[0]} for la in net]
        grads, d_in, n = self._ref[key](ls, pad(x, self.BMAX, p), pad(delta, self.BMAX, p))
        gws = [np.asarray(g["w"])[:dims[i], :dims[i + 1]] for i, g in enumerate(grads)]
        gbs = [np.asarray(g["b"])[None, :dims[i + 1]] for i, g in enumerate(grads)]
        d_in = None if d_in is None else np.asarray(d_in)[:batch, :dims[0]]
        return gws, gbs, d_in, int(n)

    async def check_backward(self, dims, batch, input_delta: bool, grouped: bool,
                             indep: bool, step: bool = False):
        """A forward and a backward pass of a random network in one table: the forward ops,
        then per layer (last first) its backward op (masked by its input's ReLU; the first
        layer's unmasked, only with input_delta), weight gradient and bias gradient, or
        (grouped) every backward op first, chained, then the gradients. Every gradient word,
        the input delta and the run's saturations against mlp_forward + mlp_backward.
        step: the array's part of a DQN step instead: the online net on 2 x batch rows (s and
        s' stacked), a target net on batch rows (s'), the backward pass on the first batch
        rows of the online net's; every forward output is checked too. indep: each op that
        reads nothing the op before it writes is marked so (KIND + 8)."""
        f, la, depth = self.fmt, self.LA, len(dims) - 1
        x, net, acts, end = await self.load(dims, 2 * batch if step else batch)
        n_fwd = depth
        if step:
            xt, net_t, acts_t, _ = await self.load(dims, batch, op0=depth, at=end,
                                                   indep=indep)
            n_fwd = 2 * depth
        delta = random_words(self.rng, (batch, dims[-1]), f.delta.width)
        slog = [clog2(-(-d // la)) for d in dims]
        base, dl = 0, [None] * len(dims)   # dl[i]: the delta at layer i's input
        for i in range(depth, -1, -1):
            dl[i] = (base, slog[i])
            base += batch << slog[i]
        gw, gb = [], []
        for i in range(depth):
            gw.append((base, slog[i + 1]))
            base += dims[i] << slog[i + 1]
            gb.append((base, 0))
            base += 1 << slog[i + 1]
        assert base <= self.ddepth, f"deltas and gradients need {base} > {self.ddepth} words"
        await self.write_matrix(SEL_DELTA, *dl[depth], delta)
        ws = self.layout(dims, batch)[1]
        bwd, grad = [], []
        for i in range(depth - 1, -1, -1):
            d = dl[i + 1]
            grad.append({"kind": 3, "x_base": acts[i][0], "x_slog": acts[i][1], "m": dims[i],
                         "k": batch, "n": dims[i + 1], "w_base": d[0], "w_slog": d[1],
                         "y_base": gw[i][0], "y_slog": gw[i][1], "width": f.grad.width,
                         "shift": f.act.frac + f.delta.frac - f.grad.frac})
            grad.append({"kind": 4, "m": 1, "k": batch, "n": dims[i + 1], "w_base": d[0],
                         "w_slog": d[1], "y_base": gb[i][0], "y_slog": 0,
                         "width": f.grad.width, "shift": f.delta.frac - f.grad.frac})
            if i > 0 or input_delta:
                bwd.append({"kind": 2 if i > 0 else 1, "x_base": d[0], "x_slog": d[1],
                            "m": batch, "k": dims[i + 1], "n": dims[i], "w_base": ws[i][0],
                            "w_slog": ws[i][1], "y_base": dl[i][0], "y_slog": dl[i][1],
                            "m_base": acts[i][0], "width": f.delta.width,
                            "shift": f.weight.frac})
            if not grouped:
                grad, bwd = [], [*bwd, *grad]
        ops = bwd + grad
        # What each op reads and writes, (bank, base); an op independent of its predecessor
        # reads nothing it writes.
        reads = {1: lambda o: {("d", o["x_base"])},
                 2: lambda o: {("d", o["x_base"]), ("a", o["m_base"])},
                 3: lambda o: {("a", o["x_base"]), ("d", o["w_base"])},
                 4: lambda o: {("d", o["w_base"])}}
        prev = ("a", (acts_t if step else acts)[depth][0])
        for op in ops:
            if indep and prev not in reads[op["kind"]](op):
                op["kind"] += 8
            prev = ("d", op["y_base"])
        for j, op in enumerate(ops):
            await self.write_op(n_fwd + j, op)
        n_ops = n_fwd + len(ops)
        macs = 5 * batch * sum(dims[i] * dims[i + 1] for i in range(depth))
        cycles, sats, error, fault = await self.run(n_ops, 1000 + 16 * macs)
        label = f"{dims} batch {batch} input_delta {input_delta} grouped {grouped}"
        assert not error and not fault, f"{label}: error {error}, fault {fault}"
        if step:
            fwd_sat = await self.compare(dims, 2 * batch, x, net, acts, depth, "online")
            fwd_sat += await self.compare(dims, batch, xt, net_t, acts_t, depth, "target")
        else:
            _, fwd_sat = self.reference(dims, x, net)
        want_gw, want_gb, want_din, bwd_sat = self.backward_reference(
            dims, x[:batch], net, delta, input_delta)
        checks = [(f"g_w[{i}]", gw[i], want_gw[i]) for i in range(depth)]
        checks += [(f"g_b[{i}]", gb[i], want_gb[i]) for i in range(depth)]
        if input_delta:
            checks.append(("input delta", dl[0], want_din))
        for name, (b, sl), want in checks:
            got = await self.read_matrix(b, sl, *want.shape, sel=1)
            bad = np.argwhere(got != want)
            assert bad.size == 0, (
                f"{label}: {name}: {len(bad)} words differ, first at {tuple(bad[0])}: got "
                f"{got[tuple(bad[0])]} want {want[tuple(bad[0])]}")
        assert sats == fwd_sat + bwd_sat, (
            f"{label}: {sats} saturations, want {fwd_sat} + {bwd_sat}")
        return cycles

DQN = (4, 64, 64, 2)  # DQN CartPole's network


@cocotb.test()
async def test_random_networks(dut):
    """Random networks (shapes around the array's size, ragged) and batches, trained-scale
    and full-range words; then DQN's net at batch 1. FWD_TB_NETS sets the count (default 4
    on Icarus, 16 on Verilator)."""
    tb = TB(dut)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    count = int(os.environ.get("FWD_TB_NETS", "16" if fast else "4"))
    for t in range(count):
        batch = int(tb.rng.integers(1, tb.BMAX + 1))
        await tb.check(tb.random_dims(), batch, trained=t % 2 == 0)
    if tb.NMAX >= 64 and tb.NL >= 3:
        await tb.check(DQN, 1)


@cocotb.test()
async def test_bad_op_stops(dut):
    """An op out of range stops the run with `error`: as the first op (nothing runs), and
    as the second, after the first's rows (still in flight as it loads) are written whole;
    the next legal run is exact."""
    tb = TB(dut, seed=2)
    await tb.reset()
    await tb.write_op(0, {"x_base": 0, "x_slog": 0, "m": 1, "k": tb.NMAX + 1, "n": 1,
                          "w_base": 0, "w_slog": 0, "b_base": 0, "y_base": 0, "y_slog": 0,
                          "relu": 1, "shift": 12, "width": 16, "bshift": 8})
    _, _, error, _ = await tb.run(1, 100)
    assert error, f"K={tb.NMAX + 1} > NMAX={tb.NMAX} ran without error"
    dims, batch = (5, tb.C + 1, 3), tb.R + 1
    x, net, acts, _ = await tb.load(dims, batch)
    await tb.write_op(1, {"x_base": acts[1][0], "x_slog": acts[1][1], "m": batch,
                          "k": dims[1], "n": dims[2], "w_base": 0, "w_slog": 0, "b_base": 0,
                          "y_base": acts[2][0], "y_slog": acts[2][1], "relu": 0, "shift": 12,
                          "width": 1, "bshift": 8})
    _, _, error, _ = await tb.run(2, 1000)
    assert error, "an output width of 1 ran without error"
    await tb.compare(dims, batch, x, net, acts, 1, "first op before an illegal one")
    await tb.check((3, 5, 2), 2)


@cocotb.test()
async def test_two_networks(dut):
    """Two networks in one table (as the online and the target net of a DQN step): the
    second one's first op reads the host's input, not the op before it, so it waits for
    that op to be written whole; both are exact and the saturations are their sum."""
    tb = TB(dut, seed=4)
    await tb.reset()
    if tb.NL < 3 or tb.BMAX < 2:
        return
    batch = int(tb.rng.integers(1, tb.BMAX // 2 + 1))
    hi = min(tb.NMAX, 2 * tb.LA + 1)
    a = tuple(int(v) for v in tb.rng.integers(1, hi + 1, 3))
    b = tuple(int(v) for v in tb.rng.integers(1, hi + 1, tb.NL - 1))
    xa, net_a, acts_a, end = await tb.load(a, batch)
    xb, net_b, acts_b, _ = await tb.load(b, batch, trained=False, op0=len(a) - 1, at=end)
    ops = len(a) + len(b) - 2
    cycles, sats, error, fault = await tb.run(ops, 1000 + 8 * batch * hi * hi * ops)
    assert not error and not fault, f"error {error}, fault {fault}"
    sat_a = await tb.compare(a, batch, xa, net_a, acts_a, len(net_a), "first network")
    sat_b = await tb.compare(b, batch, xb, net_b, acts_b, len(net_b), "second network")
    assert sats == sat_a + sat_b, f"{sats} saturations, want {sat_a} + {sat_b}"


@cocotb.test()
async def test_listed_nets(dut):
    """The networks of FWD_NETS (JSON [[dims, batch], ...]; default DQN's 4-64-64-2 at batch
    1 and the largest batch up to 32), each checked word for word; their cycles are written
    to FWD_CYCLES_OUT when set (experiments/rtl/forward_cycles.py)."""
    tb = TB(dut, seed=3)
    await tb.reset()
    if "FWD_NETS" in os.environ:
        nets = [(tuple(dims), batch) for dims, batch in json.loads(os.environ["FWD_NETS"])]
    elif tb.NMAX >= 64 and tb.NL >= 3:
        nets = [(DQN, 1), (DQN, min(32, tb.BMAX))]
    else:
        nets = [((3, tb.NMAX, 2), 1)]
    counts = [await tb.check(dims, batch) for dims, batch in nets]
    if os.environ.get("FWD_CYCLES_OUT"):
        with open(os.environ["FWD_CYCLES_OUT"], "w") as f:
            json.dump(counts, f)


@cocotb.test()
async def test_backward(dut):
    """Forward and backward passes of random networks (shapes around the array's size,
    ragged, full-range output deltas), every gradient word bit for bit; half propagate the
    delta to the input (DDPG's dQ/da), half run the backward ops chained before the
    gradients, half mark the ops that read nothing of their predecessor's independent.
    BWD_TB_NETS sets the count (default 2 on Icarus, 16 on Verilator); then, on Verilator,
    DQN's net at batch 32 where the engine holds it."""
    tb = TB(dut, seed=5)
    assert tb.AW >= tb.fmt.delta.width and tb.BW >= tb.fmt.delta.width, (
        f"AW={tb.AW}, BW={tb.BW}: a delta word needs {tb.fmt.delta.width} bits")
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    count = int(os.environ.get("BWD_TB_NETS", "16" if fast else "2"))
    for t in range(count):
        batch = int(tb.rng.integers(1, tb.BMAX + 1))
        await tb.check_backward(tb.random_dims(), batch, t % 2 == 0, t % 4 in (1, 2),
                                t % 4 in (0, 1))
    if fast and tb.NMAX >= 64 and tb.NL >= 3 and tb.BMAX >= 32:
        await tb.check_backward(DQN, 32, False, False, True)

@cocotb.test()
async def test_step_products(dut):
    """The array's part of DQN's SGD step (the products; the loss, optimizer and target
    units are not sequenced yet) on STEP_NETS (JSON [[dims, batch], ...]; default a small
    ragged net), every output and gradient word bit for bit; their cycles are written to
    STEP_CYCLES_OUT when set (experiments/rtl/step_cycles.py)."""
    tb = TB(dut, seed=6)
    await tb.reset()
    if "STEP_NETS" in os.environ:
        nets = [(tuple(dims), batch) for dims, batch in json.loads(os.environ["STEP_NETS"])]
    else:
        nets = [((3, tb.C + 1, 2), max(1, min(tb.R + 1, tb.BMAX // 2)))]
    counts = [await tb.check_backward(dims, batch, False, True, True, step=True)
              for dims, batch in nets]
    if os.environ.get("STEP_CYCLES_OUT"):
        with open(os.environ["STEP_CYCLES_OUT"], "w") as f:
            json.dump(counts, f)

# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_forward.py; one build directory per case
# (sim_build/hrl_learn_engine/<sim>-R..-C..-...). Any other set runs with
# rtl_runner.run("hrl_learn_engine", {...}, sources=SOURCES, sim=...).

SOURCES = ["hrl_learn_narrow.v",
           "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v", "hrl_learn_weight_bank.v",
           "hrl_learn_activation.v", "hrl_learn_engine.v"]


def params(r, c, aw=18, bw=18, ow=24, nmax=64, nl=4, bmax=32, bsmax=24, sw=32):
    return {"R": r, "C": c, "AW": aw, "BW": bw, "OW": ow, "NMAX": nmax, "NL": nl,
            "BMAX": bmax, "BSMAX": bsmax, "SW": sw}


SETS = [
    pytest.param("icarus", params(4, 4), id="icarus-R4-C4"),
    pytest.param("icarus", params(2, 8, nmax=24, nl=3, bmax=9), id="icarus-R2-C8"),
    pytest.param("verilator", params(8, 8), id="verilator-R8-C8", marks=pytest.mark.long),
    pytest.param("verilator", params(8, 2, aw=18, bw=18, ow=24, nmax=40, nl=5, bmax=20),
                 id="verilator-R8-C2", marks=pytest.mark.long),
    pytest.param("verilator", params(16, 16, nmax=128, nl=4, bmax=64), id="verilator-R16-C16",
                 marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_engine(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_engine", prm, sources=SOURCES, sim=sim)
