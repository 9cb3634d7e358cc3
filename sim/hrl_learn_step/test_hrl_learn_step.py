"""cocotb testbench of fpga_rtl/rtl/hrl_learn_step.v (the whole DQN SGD step above the
engine) against hrl.fixed_point.dqn.FixedDQN.sgd_step (Adam).

The host's side as a driver would do it, once per network: a random ReLU MLP (ragged widths,
1-2 hidden layers, 2..AMAX actions) built by the fixed-point DQN agent itself (its `init`:
the master words of the float learner's initial weights), the banks' layout, the engine's op
table (the online net on s and s' stacked, the target net on s', the backward pass and the
gradients), the step's registers (the formats' constants as the reference makes them:
`_huber`, `optim.unit_word`, `optim.second_floor`), the initial master, moment and target
words written into the parameter banks, then `init` (the operand words of both nets). Then
many steps, the state carried in the RTL's banks from step to step: per step the host
writes only the batch (the words `FixedDQN._loss_inputs` quantizes) and the step's rate
word (`common.step_rate`: the schedule and Adam's bias correction, the host's part), starts
the step and reads back every master, first- and second-moment and target word, the TD and
|TD| words and the saturation count; each must equal what `sgd_step` returns from the
reference's own state (its saturations less the host's quantization of the batch). The
step counter is checked too. Batches mix observations at a trained net's scale with
full-range words (saturating sums), the target update mixes hard copies every 1-3 steps
and Polyak steps.

Nothing here computes a reference value: the words come from hrl.fixed_point.
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
    SEL_DELTA,
    StepPorts,
    clog2,
    random_words,
    write_matrix,
    write_op,
)
from tb_common import pulse_reset

from hrl.agents.dqn.agent import DQNConfig
from hrl.envs.spec import DiscreteActions, EnvSpec
from hrl.fixed_point import optim, train_program
from hrl.fixed_point.common import step_rate
from hrl.fixed_point.dqn import make_fixed_dqn
from hrl.fixed_point.numerics import Fx

# the step's registers (hrl_learn_step's header)
G = {name: i for i, name in enumerate((
    "NLAY", "NF", "NOPS", "A", "B", "Q_BASE", "Q_SLOG", "QT_BASE", "QT_SLOG", "D_BASE",
    "D_SLOG", "FLAGS", "HUBER", "C1", "C2", "LR", "V_FLOOR", "TAU", "PERIOD", "STEPS",
    "PHASE"))}
L = {name: i for i, name in enumerate((
    "K", "N", "W_BASE", "W_SLOG", "B_BASE", "TW_BASE", "TB_BASE", "GW_BASE", "G_SLOG",
    "GB_BASE", "P_BASE"))}
P_MASTER, P_M, P_V, P_TARGET = 0, 1, 2, 3
DQN = (4, 64, 64, 2)  # DQN CartPole's network


class TB(StepPorts):
    def __init__(self, dut, seed: int = 1):
        self.dut = dut
        p = rtl_runner.param
        self.R, self.C = p("R", 4), p("C", 4)
        self.OW, self.BW = p("OW", 24), p("BW", 18)
        self.NMAX, self.NL, self.BMAX = p("NMAX", 64), p("NL", 4), p("BMAX", 32)
        self.AMAX = p("AMAX", 4)
        self.LA = max(self.R, self.C)
        self.HW = max(self.OW, self.BW)
        self.adepth = 2 * (self.NL + 1) * self.BMAX << clog2(-(-self.NMAX // self.LA))
        self.wdepth = 2 * self.NL * self.NMAX << clog2(-(-self.NMAX // self.C))
        self.bdepth = 2 * self.NL << clog2(-(-self.NMAX // self.C))
        self.ddepth = ((self.NL + 1) * self.BMAX + self.NL * (self.NMAX + 1)) << clog2(
            -(-self.NMAX // self.LA))
        self.rng = np.random.default_rng(seed + 100 * self.R + self.C)
        self.hdl_formats = {  # the module's formats (its parameters), name: (width, frac)
            "weight": (p("WWID", 18), p("WF", 14)), "value": (p("VW", 24), p("VF", 8)),
            "prob": (p("PW", 17), p("PF", 15)), "delta": (p("DLW", 18), p("DLF", 12)),
            "grad": (p("GW", 24), p("GF", 12)), "master": (p("MW", 28), p("MF", 24)),
            "moment": (p("OMW", 28), p("OMF", 16)), "second": (p("QW", 29), p("QF", 22)),
            "rsqrt": (p("RW", 24), p("RF", 12)), "step": (p("TW", 20), p("TF", 16)),
            "unit": (p("UW", 16), p("UF", 15)), "lr": (p("LW", 24), p("LF", 24))}
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def reset(self):
        d = self.dut
        for s in ("start", "n_ops", "op_first", "op_wr_en", "op_wr_op", "op_wr_field",
                  "op_wr_data", "h_wr_en", "h_wr_sel", "h_wr_base", "h_wr_slog", "h_wr_i",
                  "h_wr_j", "h_wr_mask", "h_wr_data", "h_rd_en", "h_rd_sel", "h_rd_base",
                  "h_rd_slog", "h_rd_i", "h_rd_j", "h_rd_rows", "h_rd_cols", "st_start",
                  "st_cmd", "st_cfg_en", "st_cfg_addr", "st_cfg_data", "st_bt_en", "st_bt_i",
                  "st_bt_action", "st_bt_reward", "st_bt_discount", "st_bt_weight",
                  "st_p_wr_en", "st_p_wr_sel", "st_p_wr_addr", "st_p_wr_data", "st_p_rd_en",
                  "st_p_rd_sel", "st_p_rd_addr", "st_td_i"):
            getattr(d, s).value = 0
        await pulse_reset(d.clk, d.rst)
        await RisingEdge(d.clk)

    # ------------------------------------------------------------------ host ports
    async def write_matrix(self, sel: int, base: int, slog: int, mat) -> None:
        """A matrix into engine bank `sel`, one row block per cycle."""
        lanes = self.LA if sel in (SEL_ACT, SEL_DELTA) else self.C
        await write_matrix(self.dut, sel, base, slog, mat, lanes, self.LA, self.HW)

    async def write_op(self, op: int, fields: dict) -> None:
        await write_op(self.dut, op, fields)

    async def write_batch(self, words) -> None:
        d = self.dut
        for b in range(len(words["reward"])):
            await FallingEdge(d.clk)
            d.st_bt_en.value = 1
            d.st_bt_i.value = b
            d.st_bt_action.value = int(words["action"][b])
            d.st_bt_reward.value = int(words["reward"][b]) & ((1 << len(d.st_bt_reward)) - 1)
            d.st_bt_discount.value = int(words["discount"][b]) & (
                (1 << len(d.st_bt_discount)) - 1)
            d.st_bt_weight.value = int(words["weight"][b]) & ((1 << len(d.st_bt_weight)) - 1)
        await FallingEdge(d.clk)
        d.st_bt_en.value = 0

    async def command(self, cmd: int, timeout_cycles: int):
        """st_start with st_cmd; returns (error, saturations, cycles, phase cycles)."""
        d = self.dut
        await FallingEdge(d.clk)
        d.st_start.value = 1
        d.st_cmd.value = cmd
        await FallingEdge(d.clk)
        d.st_start.value = 0
        await with_timeout(RisingEdge(d.st_done), 10 * timeout_cycles, "ns")
        await ReadOnly()
        phases = {k: int(getattr(d, f"st_cyc_{k}").value)
                  for k in ("fwd", "loss", "bwd", "upd", "tgt")}
        out = (int(d.st_error.value), int(d.st_sat.value), int(d.st_cycles.value), phases)
        await FallingEdge(d.clk)
        return out

    # ------------------------------------------------------------------ one network
    def agent(self, dims, batch, lr, period, tau):
        """The reference agent of this network and its step's settings."""
        cfg = DQNConfig(numerics="fixed", max_grad_norm=None, hidden_sizes=tuple(dims[1:-1]),
                        learning_rate=lr, target_update_period=period, tau=tau,
                        huber_delta=float(self.rng.choice([1.0, 4.0, 64.0])), double=True)
        spec = EnvSpec(name="step-tb", num_envs=1, obs_shape=(dims[0],),
                       obs_dtype=np.float32, action=DiscreteActions(dims[-1]), is_jax=True)
        agent = make_fixed_dqn(cfg, spec, batch_size=batch)
        f = agent.fmts
        for name, want in self.hdl_formats.items():
            assert getattr(f, name) == Fx(*want), (
                f"the module's {name} format {want} is not the agent's {getattr(f, name)}")
        return agent

    def stream(self, layers_words) -> np.ndarray:
        """A network's words as the parameter stream (hrl_learn_step's header): per layer
        its weight rows, then its bias, in blocks of C words (zeros past N)."""
        c, blocks = self.C, []
        for layer in layers_words:
            w, b = np.asarray(layer["w"]), np.asarray(layer["b"])
            for row in [*w, b]:
                for j0 in range(0, len(row), c):
                    blk = np.zeros(c, np.int64)
                    part = row[j0:j0 + c]
                    blk[:len(part)] = part
                    blocks.append(blk)
        return np.array(blocks, np.int64).reshape(-1, c)

    def layout(self, dims, batch):
        """Bases and strides of everything the step reads and writes."""
        la, c, depth = self.LA, self.C, len(dims) - 1
        slog_a = [clog2(-(-d // la)) for d in dims]
        lay = {"on": [None] * (depth + 1), "tg": [None] * (depth + 1)}
        base = 0
        for net, rows in (("on", 2 * batch), ("tg", batch)):
            for i in range(depth, -1, -1):
                lay[net][i] = (base, slog_a[i])
                base += rows << slog_a[i]
        assert base <= self.adepth, f"activations need {base} > {self.adepth}"
        wb, bb = 0, 0
        lay["w_on"], lay["w_tg"], lay["b_on"], lay["b_tg"] = [], [], [], []
        for net in ("on", "tg"):
            for i in range(depth):
                slog = clog2(-(-dims[i + 1] // c))
                lay[f"w_{net}"].append((wb, slog))
                lay[f"b_{net}"].append(bb)
                wb += dims[i] << slog
                bb += 1 << slog
        assert wb <= self.wdepth and bb <= self.bdepth
        base, dl = 0, [None] * (depth + 1)
        for i in range(depth, -1, -1):
            dl[i] = (base, slog_a[i])
            base += batch << slog_a[i]
        gw, gb = [], []
        for i in range(depth):
            gw.append((base, slog_a[i + 1]))
            base += dims[i] << slog_a[i + 1]
            gb.append((base, 0))
            base += 1 << slog_a[i + 1]
        assert base <= self.ddepth, f"deltas need {base} > {self.ddepth}"
        lay["dl"], lay["gw"], lay["gb"] = dl, gw, gb
        pb, p = [], 0
        for i in range(depth):
            pb.append(p)
            p += (dims[i] + 1) * -(-dims[i + 1] // c)
        lay["pb"], lay["blocks"] = pb, p
        return lay

    async def setup(self, dims, batch, lr=1e-3, period=1, tau=0.005, key=0, wild=False):
        """Build the agent, lay the network out, write the op table, the registers and the
        initial state, run init. wild: the online and target masters random words over the
        master format's whole range instead of the agent's init (operands that saturate,
        saturating sums). Returns (agent, state, layout)."""
        agent = self.agent(dims, batch, lr, period, tau)
        f, depth = agent.fmts, len(dims) - 1
        state = agent.init(jax.random.PRNGKey(key))
        if wild:
            def words(tree):
                return jax.tree.map(lambda a: jnp.asarray(random_words(
                    self.rng, a.shape, f.master.width, p_extreme=0.1)), tree)

            state = state.replace(params=words(state.params),
                                  target_params=words(state.target_params))
        lay = self.layout(dims, batch)
        # the host's op table of a step, as the kernel's programs write it
        fwd, bwd = train_program.step_ops(agent.fmts, dims, batch, lay)
        for j, op in enumerate(fwd + bwd):
            await self.write_op(j, op)
        fp = agent.cfg.fixed_point
        c1 = optim.unit_word(1.0 - fp.beta1, f, "beta1")
        c2 = optim.unit_word(1.0 - fp.beta2, f, "beta2")
        polyak = tau != 1.0
        g = [("NLAY", depth), ("NF", len(fwd)), ("NOPS", len(fwd) + len(bwd)),
             ("A", dims[-1]), ("B", batch), ("Q_BASE", lay["on"][depth][0]),
             ("Q_SLOG", lay["on"][depth][1]), ("QT_BASE", lay["tg"][depth][0]),
             ("QT_SLOG", lay["tg"][depth][1]), ("D_BASE", lay["dl"][depth][0]),
             ("D_SLOG", lay["dl"][depth][1]),
             ("FLAGS", 1 | 2 | (4 if polyak else 0)), ("HUBER", agent._huber()),
             ("C1", c1), ("C2", c2), ("V_FLOOR", optim.second_floor(c2, f)),
             ("TAU", optim.unit_word(tau, f, "tau") if polyak else 0), ("PERIOD", period),
             ("STEPS", 0), ("PHASE", 0)]
        items = [(G[k], v) for k, v in g]
        for i in range(depth):
            fields = {"K": dims[i], "N": dims[i + 1], "W_BASE": lay["w_on"][i][0],
                      "W_SLOG": lay["w_on"][i][1], "B_BASE": lay["b_on"][i],
                      "TW_BASE": lay["w_tg"][i][0], "TB_BASE": lay["b_tg"][i],
                      "GW_BASE": lay["gw"][i][0], "G_SLOG": lay["gw"][i][1],
                      "GB_BASE": lay["gb"][i][0], "P_BASE": lay["pb"][i]}
            items += [(32 + 16 * i + L[k], v) for k, v in fields.items()]
        await self.write_cfg(items)
        m, v = state.opt_state
        for sel, tree in ((P_MASTER, state.params), (P_M, m), (P_V, v),
                          (P_TARGET, state.target_params)):
            await self.write_stream(sel, self.stream(tree))
        error, _, _, _ = await self.command(1, 100 + 4 * lay["blocks"])
        assert not error, f"{dims} batch {batch}: init raised st_error"
        return agent, state, lay

    def batch(self, agent, dims, batch):
        """A random batch of floats that are words of the agent's formats (so the host's
        quantization is exact), at a trained net's scale or over the whole range."""
        rng, f = self.rng, agent.fmts
        full = rng.random() < 0.3

        def words(shape, fmt, sigma, lo=None, hi=None):
            if full:
                q = rng.integers(fmt.min_int, fmt.max_int + 1, shape)
            else:
                q = np.rint(rng.normal(0.0, sigma, shape) * 2.0 ** fmt.frac)
            q = np.clip(q, fmt.min_int if lo is None else lo, fmt.max_int if hi is None else hi)
            return (q / 2.0 ** fmt.frac).astype(np.float32)

        one = 1 << f.prob.frac
        return ({"obs": words((batch, dims[0]), f.act, 2.0),
                 "next_obs": words((batch, dims[0]), f.act, 2.0),
                 "action": rng.integers(0, dims[-1], batch).astype(np.int32),
                 "reward": words((batch,), f.value, 1.0),
                 "discount": words((batch,), f.prob, 0.5, 0, one)},
                words((batch,), f.prob, 0.5, 1, one))

    async def step(self, agent, state, dims, batch_size, lay, label: str, sgd_step):
        """One step on the RTL and on the reference from the same state; every word checked.
        Returns (the reference's new state, the step's cycles and phase cycles)."""
        f, depth = agent.fmts, len(dims) - 1
        batch, weights = self.batch(agent, dims, batch_size)
        (x, xn, reward, discount, w), n_in = agent._loss_inputs(state, batch, weights)
        x, xn = np.asarray(x), np.asarray(xn)
        await self.write_matrix(SEL_ACT, *lay["on"][0], np.concatenate([x, xn]))
        await self.write_matrix(SEL_ACT, *lay["tg"][0], xn)
        await self.write_batch({"action": batch["action"], "reward": np.asarray(reward),
                                "discount": np.asarray(discount), "weight": np.asarray(w)})
        rate = int(step_rate(agent.cfg, "learning_rate", batch_size, state.train_steps, f))
        await self.write_cfg([(G["LR"], rate)])
        macs = 5 * batch_size * sum(dims[i] * dims[i + 1] for i in range(depth))
        error, sats, cycles, phases = await self.command(
            0, 2000 + 8 * macs + 40 * lay["blocks"])
        assert not error, f"{label}: st_error"
        new, abs_td, td, metrics = sgd_step(state, batch, weights)
        got_td, got_abs = await self.read_td(batch_size)
        checks = [("td", got_td, np.asarray(td)), ("|td|", got_abs, np.asarray(abs_td))]
        m, v = new.opt_state
        for name, sel, tree in (("master", P_MASTER, new.params), ("m", P_M, m),
                                ("v", P_V, v), ("target", P_TARGET, new.target_params)):
            want = self.stream(tree)
            checks.append((name, await self.read_stream(sel, len(want)), want))
        for name, got, want in checks:
            bad = np.argwhere(got != want)
            assert bad.size == 0, (
                f"{label}: {name}: {len(bad)} words differ, first at {tuple(bad[0])}: got "
                f"{got[tuple(bad[0])]} want {want[tuple(bad[0])]}")
        want_sat = int(metrics["saturations"]) - int(n_in)
        assert sats == want_sat, f"{label}: {sats} saturations, want {want_sat}"
        steps = int(self.dut.st_steps.value)
        assert steps == int(new.train_steps), f"{label}: st_steps {steps}"
        self.dut._log.info(f"{label}: exact; {sats} saturations, mean |td| "
                           f"{np.mean(got_abs) / 2 ** f.value.frac:.3g}, {cycles} cycles")
        return new, cycles, phases

    async def run_steps(self, dims, batch, n_steps, **kw):
        agent, state, lay = await self.setup(dims, batch, **kw)
        sgd_step = jax.jit(agent.sgd_step)
        label = f"{dims} batch {batch} {kw}"
        counts = []
        for t in range(n_steps):
            state, cycles, phases = await self.step(agent, state, dims, batch, lay,
                                                    f"{label} step {t}", sgd_step)
            counts.append({"cycles": cycles, **phases})
        return counts

    def random_setting(self):
        """A random network (1-2 hidden layers, ragged widths), batch and target update."""
        rng = self.rng
        depth = int(rng.integers(2, min(3, self.NL) + 1))
        hi = min(self.NMAX, 2 * self.LA + 3)
        dims = [int(v) for v in rng.integers(1, hi + 1, depth)]
        dims.append(int(rng.integers(2, self.AMAX + 1)))
        batch = int(rng.integers(1, self.BMAX // 2 + 1))
        forced = os.environ.get("STEP_TB_TARGET")  # polyak or copy: every network's
        polyak = forced == "polyak" if forced else rng.random() < 0.5
        wild = os.environ.get("STEP_TB_WILD") == "1" or rng.random() < 0.3
        kw = {"wild": bool(wild), "lr": float(rng.choice([1e-3, 1e-2, 3e-2])),
              "period": int(rng.integers(1, 3 if polyak else 4)),
              "tau": 0.1 if polyak else 1.0, "key": int(rng.integers(1 << 30))}
        return tuple(dims), batch, kw


@cocotb.test()
async def test_random_steps(dut):
    """Random networks, STEP_TB_STEPS whole SGD steps each (the state carried in the RTL),
    every word against FixedDQN.sgd_step. STEP_TB_NETS x STEP_TB_STEPS: default 1 x 3 on
    Icarus, 4 x 250 on Verilator."""
    tb = TB(dut)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    nets = int(os.environ.get("STEP_TB_NETS", "4" if fast else "1"))
    steps = int(os.environ.get("STEP_TB_STEPS", "250" if fast else "3"))
    tb.dut._log.info(f"{nets} networks x {steps} steps")
    for _ in range(nets):
        dims, batch, kw = tb.random_setting()
        await tb.run_steps(dims, batch, steps, **kw)


@cocotb.test()
async def test_bad_config(dut):
    """A configuration out of range (a batch over BMAX / 2, no layers) raises st_error and
    runs nothing; the step counter does not move."""
    tb = TB(dut, seed=2)
    await tb.reset()
    await tb.write_cfg([(G["NLAY"], 1), (G["NF"], 1), (G["NOPS"], 2), (G["A"], 2),
                        (G["B"], tb.BMAX // 2 + 1), (G["PERIOD"], 1), (G["STEPS"], 7)])
    error, _, cycles, _ = await tb.command(0, 100)
    assert error, f"batch {tb.BMAX // 2 + 1} > BMAX / 2 ran without st_error"
    assert cycles < 10, f"a refused step ran {cycles} cycles"
    await tb.write_cfg([(G["B"], 1), (G["NLAY"], 0)])
    error, _, _, _ = await tb.command(0, 100)
    assert error, "NLAY 0 ran without st_error"
    assert int(dut.st_steps.value) == 7, "a refused step moved the step counter"


@cocotb.test()
async def test_listed_steps(dut):
    """The networks of STEP_NETS (JSON [[dims, batch, steps], ...]; default DQN's 4-64-64-2
    at batch 32 for 3 steps where the module holds it, else a small net), each step checked
    word for word; the cycles of each step and of its phases are written to
    STEP_CYCLES_OUT when set (experiments/rtl/step_cycles.py)."""
    tb = TB(dut, seed=3)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    if "STEP_NETS" in os.environ:
        nets = [(tuple(d), b, s) for d, b, s in json.loads(os.environ["STEP_NETS"])]
    elif tb.NMAX >= 64 and tb.NL >= 3 and tb.BMAX >= 64:
        nets = [(DQN, 32, 3)]
    elif fast:
        nets = [((3, tb.C + 1, 2), max(1, min(tb.R + 1, tb.BMAX // 2)), 2)]
    else:
        return  # Icarus: test_random_steps is the default tier's
    out = []
    for dims, batch, steps in nets:
        counts = await tb.run_steps(dims, batch, steps, lr=1e-3, period=1, tau=0.005)
        out.append({"dims": list(dims), "batch": batch, "steps": counts})
    if os.environ.get("STEP_CYCLES_OUT"):
        with open(os.environ["STEP_CYCLES_OUT"], "w") as f:
            json.dump(out, f)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_step.py; one build directory per case. Any other set runs
# with rtl_runner.run("hrl_learn_step", {...}, sources=SOURCES, sim=...), or
# `python sim/rtl_runner.py hrl_learn_step -k <case>`.

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v",
           "hrl_learn_weight_bank.v", "hrl_learn_activation.v", "hrl_learn_engine.v",
           "hrl_learn_td.v", "hrl_learn_loss_dqn.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v",
           "hrl_delay.v", "hrl_learn_adam.v", "hrl_learn_target.v", "hrl_learn_walk.v",
           "hrl_learn_step.v"]


def params(r, c, nmax=16, nl=3, bmax=16, amax=4, aw=18, bw=18, ow=24):
    return {"R": r, "C": c, "AW": aw, "BW": bw, "OW": ow, "NMAX": nmax, "NL": nl,
            "BMAX": bmax, "AMAX": amax}


# Steps per set: STEP_TB_NETS x STEP_TB_STEPS (test_random_steps). The long tier (CI) runs
# 1000 whole steps on R4-C4 and 100 on the two skewed arrays; the slow tier (`make
# test-slow`) 1000 on each of those and a few on 16 x 16, whose simulation is the slowest.
STEPS_100 = {"STEP_TB_NETS": "2", "STEP_TB_STEPS": "50"}
STEPS_1000 = {"STEP_TB_NETS": "4", "STEP_TB_STEPS": "250"}
SETS = [
    pytest.param("icarus", params(4, 4), None, id="icarus-R4-C4"),
    pytest.param("verilator", params(4, 4), STEPS_1000, id="verilator-R4-C4",
                 marks=pytest.mark.long),
    pytest.param("verilator", params(2, 8, nmax=24, bmax=10), STEPS_100, id="verilator-R2-C8",
                 marks=pytest.mark.long),
    pytest.param("verilator", params(8, 2, nmax=20, bmax=12), STEPS_100, id="verilator-R8-C2",
                 marks=pytest.mark.long),
    pytest.param("verilator", params(2, 8, nmax=24, bmax=10), STEPS_1000,
                 id="verilator-R2-C8-1000", marks=pytest.mark.slow),
    pytest.param("verilator", params(8, 2, nmax=20, bmax=12), STEPS_1000,
                 id="verilator-R8-C2-1000", marks=pytest.mark.slow),
    pytest.param("verilator", params(16, 16, nmax=64, nl=3, bmax=64, amax=16),
                 {"STEP_TB_NETS": "1", "STEP_TB_STEPS": "3"}, id="verilator-R16-C16",
                 marks=pytest.mark.slow),
    # The builds of experiments/rtl/step_cycles.py's table that no set above covers, each
    # with the table's net and batch listed (test_listed_steps): batch 256 on 16 x 16, a
    # 32 x 32 array, the wide nets (NMAX 128, 256). Many minutes each (slow tier).
    *[pytest.param("verilator", params(r, r, nmax=max(dims), nl=3, bmax=2 * batch, amax=2),
                   {"STEP_TB_NETS": "1", "STEP_TB_STEPS": "2",
                    "STEP_NETS": json.dumps([[dims, batch, 2]])},
                   id=f"verilator-R{r}-C{r}-{'-'.join(map(str, dims))}-B{batch}",
                   marks=pytest.mark.slow)
      for r, dims, batch in [(16, [4, 64, 64, 2], 256), (32, [4, 64, 64, 2], 64),
                             (16, [4, 128, 128, 2], 32), (16, [4, 256, 256, 2], 32)]],
]


@pytest.mark.parametrize("sim,prm,steps", SETS)
def test_hrl_learn_step(sim, prm, steps):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_step", prm, sources=SOURCES, sim=sim, env=steps)
