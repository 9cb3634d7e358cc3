"""cocotb testbench of fpga_rtl/rtl/hrl_learn_kernel.v (the learning engine as an XRT RTL
kernel) against hrl.fixed_point.layers.mlp_forward.

The kernel is driven as a host runtime drives it (`hrl.fixed_point._kernel_cocotb`:
AxiLiteMaster on s_axi_control, AxiRam as the card's memory) with the programs the host
writes (`hrl.fixed_point.kernel_program`): random ReLU MLPs of random shapes (widths and
batches that are not multiples of R or C; DQN CartPole's 4-64-64-2 where the kernel holds
it), random words in the FxFormats (half over the formats' whole range, saturating, half at
a trained net's scale), loaded, run and stored in one program or with the weights loaded by
a program of their own first (as an inference after a weight update does). The Q values read
back from memory must equal mlp_forward's words and the saturation register its n_sat; the
control interface (ap_ctrl_hs, the config registers, the status bits of a bad program) is
checked on the way. KLN_STALL=1 pauses the memory's channels at random.

The reference runs on operands zero-padded to NMAX x NMAX per layer, one batch row at a time
under vmap (JAX compiles it once per depth), so the saturations of the real rows alone count.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import RisingEdge
from learn_tb import random_words

from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point import layers
from hrl.fixed_point._kernel_cocotb import AP_DONE, AP_IDLE, AP_READY, LearnerKernelDriver
from hrl.fixed_point.formats import FxFormats

DQN = (4, 64, 64, 2)  # DQN CartPole's network


class TB:
    def __init__(self, dut, seed: int = 1):
        self.dut = dut
        self.prm = {k: rtl_runner.param(k, v) for k, v in (
            ("R", 4), ("C", 4), ("AW", 16), ("BW", 16), ("OW", 24), ("NMAX", 64), ("NL", 4),
            ("BMAX", 32), ("BSMAX", 24))}
        self.fmt = FxFormats()
        self.rng = np.random.default_rng(seed + 100 * self.prm["R"] + self.prm["C"])
        self.drv = LearnerKernelDriver(dut)
        self.shape = None
        self._ref = {}

    async def _check_addresses(self):
        """Every AXI4 address carries the high word of the program's base (a 64-bit `prog`
        plus offsets): the memory model wraps, so a lost high word would go unseen."""
        dut, want = self.dut, self.drv.base >> 32
        while True:
            await RisingEdge(dut.ap_clk)
            for ch in ("ar", "aw"):
                if int(getattr(dut, f"m_axi_gmem_{ch}valid").value):
                    a = getattr(dut, f"m_axi_gmem_{ch}addr").value.to_unsigned()
                    assert a >> 32 == want, f"{ch}addr 0x{a:x} lost the high address word"

    async def reset(self):
        self.shape = await self.drv.reset()
        cocotb.start_soon(self._check_addresses())  # the valids are known from the reset on
        p = self.prm
        want = kp.KernelShape(r=p["R"], c=p["C"], aw=p["AW"], bw=p["BW"], ow=p["OW"],
                              nmax=p["NMAX"], nl=p["NL"], bmax=p["BMAX"], bsmax=p["BSMAX"])
        assert self.shape == want, f"config registers {self.shape} != HDL parameters {want}"
        if os.environ.get("KLN_STALL", "0") == "1":
            rnd = random.Random(7)
            self.drv.set_backpressure(lambda: iter(lambda: rnd.random() < 0.3, None))

    def network(self, dims, batch, trained: bool):
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
        """mlp_forward on operands padded to NMAX wide (exact), per row under vmap: (the
        last layer's words, unpadded; n_sat of the real rows)."""
        depth = len(dims) - 1
        if depth not in self._ref:
            f = self.fmt

            def one_row(ls, xr):
                y, _, _, n = layers.mlp_forward(ls, xr[None], f.act, f.weight, f.value)
                return y, n

            self._ref[depth] = jax.jit(jax.vmap(one_row, in_axes=(None, 0)))
        p = self.shape.nmax
        ls = []
        for layer in net:
            w = np.zeros((p, p), np.int32)
            w[:layer["w"].shape[0], :layer["w"].shape[1]] = layer["w"]
            b = np.zeros(p, np.int32)
            b[:layer["b"].shape[0]] = layer["b"]
            ls.append({"w": jnp.asarray(w), "b": jnp.asarray(b)})
        xp = np.zeros((self.shape.bmax, p), np.int32)
        xp[:x.shape[0], :x.shape[1]] = x
        y, n = self._ref[depth](ls, jnp.asarray(xp))
        batch = x.shape[0]
        return np.asarray(y)[:batch, 0, :dims[-1]], int(np.sum(np.asarray(n)[:batch]))

    async def check(self, dims, batch, trained: bool = True, split: bool = False):
        """One network's forward pass through the kernel against the reference; split: the
        weights by a program of their own, then the pass without them, then (split) a second
        pass on new states with the op table kept in the kernel. Returns the last pass's run
        and the weights' (None unless split)."""
        self.shape.refuse(dims, batch, self.fmt)
        x, net = self.network(dims, batch, trained)
        arrays = {**kp.weight_arrays(net), "x": x}
        wres = None
        if split:
            wres = await self.drv.run(kp.weights_program(self.shape, dims), arrays)
            assert wres.status == 0 and not wres.outputs, f"weights: status {wres.status}"
        prog = kp.forward_program(self.shape, dims, batch, self.fmt, load_weights=not split)
        res = await self.drv.run(prog, arrays)
        label = f"{dims} batch {batch} ({'trained' if trained else 'full-range'}, split {split})"
        assert res.status == 0, f"{label}: status {res.status}"
        want, want_sat = self.reference(dims, x, net)
        got = res.outputs["y"]
        bad = np.argwhere(got != want)
        assert bad.size == 0, (
            f"{label}: {len(bad)} Q words differ, first at {tuple(bad[0])}: got "
            f"{got[tuple(bad[0])]} want {want[tuple(bad[0])]}")
        assert res.saturations == want_sat, (
            f"{label}: {res.saturations} saturations, want {want_sat}")
        if split:  # the next inference as the loop runs it: new states, the table kept
            x2, _ = self.network(dims, batch, trained)
            res = await self.drv.run(prog, {"x": x2}, keep_ops=True)
            want2, sat2 = self.reference(dims, x2, net)
            assert res.status == 0 and np.array_equal(res.outputs["y"], want2), (
                f"{label}: the second inference (op table kept) differs")
            assert res.saturations == sat2, f"{label}: kept table: {res.saturations} != {sat2}"
        return res, wres

    def random_dims(self):
        s, rng = self.shape, self.rng
        depth = int(rng.integers(1, s.nl + 1))
        hi = min(s.nmax, 2 * s.la + 3)
        return tuple(int(v) for v in rng.integers(1, hi + 1, depth + 1))


@cocotb.test()
async def test_control_interface(dut):
    """ap_ctrl_hs: idle after reset, done and ready set by a run and cleared on read, idle
    again; the config registers are the HDL parameters (checked by reset); an empty program
    runs; a descriptor out of range, an op table too long and an op out of range each set
    their status bit, and the next legal run is exact."""
    tb = TB(dut, seed=1)
    await tb.reset()
    drv = tb.drv
    assert await drv.read_reg("control") & AP_IDLE, "not idle after reset"
    empty = kp.Program((), np.zeros((0, 16), np.int64), ())
    res = await drv.run(empty, {})
    assert res.status == 0 and res.engine_cycles == 0, f"empty program: {res}"
    ctrl = await drv.read_reg("control")
    assert ctrl & AP_IDLE and not ctrl & (AP_DONE | AP_READY), f"control 0x{ctrl:x} after read"
    bad_desc = kp.Program((kp.Matrix(5, 0, 0, 1, 1, "x"),), np.zeros((0, 16), np.int64), ())
    res = await drv.run(bad_desc, {"x": np.zeros((1, 1), np.int32)})
    assert res.status == 4, f"a load into bank 5: status {res.status}"
    too_many = kp.Program((), np.zeros((tb.shape.max_ops + 1, 16), np.int64), ())
    res = await drv.run(too_many, {})
    assert res.status == 8, f"{tb.shape.max_ops + 1} ops: status {res.status}"
    dims = (3, 5, 2)
    prog = kp.forward_program(tb.shape, dims, 2, tb.fmt)
    ops = prog.ops.copy()
    ops[1, kp.FIELDS.index("k")] = tb.shape.nmax + 1
    _, net = tb.network(dims, 2, True)
    res = await drv.run(kp.Program(prog.loads, ops, prog.stores),
                        {**kp.weight_arrays(net), "x": np.zeros((2, 3), np.int32)})
    assert res.status == 1, f"K = NMAX + 1: status {res.status}"
    await tb.check(dims, 2)


@cocotb.test()
async def test_random_networks(dut):
    """Random networks and batches, trained-scale and full-range words, one program or the
    weights apart (KLN_NETS networks; default 3 on Icarus, 12 on Verilator)."""
    tb = TB(dut, seed=2)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    count = int(os.environ.get("KLN_NETS", "12" if fast else "3"))
    for t in range(count):
        batch = int(tb.rng.integers(1, tb.shape.bmax + 1))
        await tb.check(tb.random_dims(), batch, trained=t % 2 == 0, split=t % 3 == 1)


@cocotb.test()
async def test_listed_nets(dut):
    """The networks of KLN_NETS_LIST (JSON [[dims, batch], ...]; default DQN's 4-64-64-2 at
    batch 1 and 32 where the kernel holds it, else a small net), inference as the loop runs
    it (weights apart, then the state's pass); the runs' cycles go to KLN_CYCLES_OUT."""
    tb = TB(dut, seed=3)
    await tb.reset()
    s = tb.shape
    if "KLN_NETS_LIST" in os.environ:
        nets = [(tuple(d), b) for d, b in json.loads(os.environ["KLN_NETS_LIST"])]
    elif s.nmax >= 64 and s.nl >= 3:
        nets = [(DQN, 1), (DQN, min(32, s.bmax))]
    else:
        nets = [((3, s.nmax, 2), 1)]
    out = []
    for dims, batch in nets:
        res, wres = await tb.check(dims, batch, split=True)
        out.append({"dims": list(dims), "batch": batch, "kernel_cycles": res.cycles,
                    "engine_cycles": res.engine_cycles, "weights_cycles": wres.cycles})
    if os.environ.get("KLN_CYCLES_OUT"):
        with open(os.environ["KLN_CYCLES_OUT"], "w") as f:
            json.dump(out, f)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn_kernel.py; one build directory per case
# (sim_build/hrl_learn_kernel/<sim>-R..-C..-...). Any other set runs with
# rtl_runner.run("hrl_learn_kernel", {...}, sources=SOURCES, sim=...).

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v",
           "hrl_learn_weight_bank.v", "hrl_learn_activation.v", "hrl_learn_engine.v",
           "hrl_learn_td.v", "hrl_learn_loss_dqn.v", "hrl_learn_loss_ddpg.v",
           "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v", "hrl_delay.v", "hrl_learn_adam.v",
           "hrl_learn_target.v", "hrl_learn_walk.v", "hrl_learn_step.v", "hrl_learn_step_ddpg.v",
           "hrl_axi_rd.v", "hrl_axi_wr.v", "hrl_beats_to_words.v", "hrl_words_to_beats.v",
           "hrl_axil_ctrl.v", "hrl_learn_kernel.v"]


def params(r, c, nmax=64, nl=3, bmax=32, dw=512, aw=16, bw=16, ow=24, bsmax=24):
    return {"R": r, "C": c, "AW": aw, "BW": bw, "OW": ow, "NMAX": nmax, "NL": nl,
            "BMAX": bmax, "BSMAX": bsmax, "C_M_AXI_GMEM_DATA_WIDTH": dw}


SETS = [
    pytest.param("icarus", params(2, 4, nmax=12, nl=3, bmax=5, dw=64), {},
                 id="icarus-R2-C4-DW64"),
    pytest.param("verilator", params(4, 4), {}, id="verilator-R4-C4", marks=pytest.mark.long),
    pytest.param("verilator", params(8, 2, nmax=40, nl=4, bmax=20, dw=32), {"KLN_STALL": "1"},
                 id="verilator-R8-C2-DW32-stall", marks=pytest.mark.long),
    # The widest set: minutes of Verilator build and simulation, in `make test-slow`.
    pytest.param("verilator", params(16, 16, nmax=128, nl=4, bmax=64, ow=32), {},
                 id="verilator-R16-C16", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("sim,prm,env", SETS)
def test_hrl_learn_kernel(sim, prm, env):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_kernel", prm, sources=SOURCES, sim=sim, env=env)
