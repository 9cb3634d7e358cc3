"""cocotb testbench of fpga_rtl/rtl/hrl_learn_step_ddpg.v (the whole DDPG SGD step above the
engine) against hrl.fixed_point.ddpg.FixedDDPG.sgd_step (Adam).

The host's side as a driver would do it, once per pair of networks: a random actor and
critic (ragged widths, 1-2 hidden layers each, 1..AMAX actions, a random action box) built
by the fixed-point DDPG agent itself (its `init`), the banks' layout (the four nets'
activations, weights, deltas and gradients), the engine's op table of the step's seven runs,
the step's registers (the formats' constants as the reference makes them), the initial
master, moment and target words of both nets written into the parameter banks, then `init`.
Then many steps, the state carried in the RTL's banks from step to step: per step the host
writes only the batch (the words `FixedDDPG._inputs` quantizes: s' into the target actor's
and the target critic's inputs, s into the actor's, [s, a] into the critic's) and the two
rate words (`common.step_rate`), starts the step and reads back every master, first- and
second-moment and target word of both nets, the TD and |TD| words and the saturation
count; each must equal what `sgd_step` returns from the reference's own state (its
saturations less the host's quantization of the batch). Batches mix observations at a
trained net's scale with full-range words; masters are the agent's init or full-range words
(operands and sums that saturate, actions that clip at either bound); the target update
mixes hard copies every 1-3 steps and Polyak steps.

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
    random_words,
    write_matrix,
    write_op,
)
from tb_common import pulse_reset

from hrl.agents.ddpg.agent import DDPGConfig
from hrl.envs.spec import ContinuousActions, EnvSpec
from hrl.fixed_point import ddpg_program as dp
from hrl.fixed_point.common import step_rate
from hrl.fixed_point.ddpg import make_fixed_ddpg
from hrl.fixed_point.ddpg_program import G
from hrl.fixed_point.numerics import Fx
from hrl.mapping import learner_schedule as ls

P_MASTER, P_M, P_V, P_TARGET = 0, 1, 2, 3
PHASES = ("fwd", "loss", "clip", "bwd", "upd", "tgt")
PENDULUM = ((3, 64, 64, 1), (4, 64, 64, 1))  # experiments/configs/ddpg_pendulum.yaml


class TB(StepPorts):
    def __init__(self, dut, seed: int = 1):
        self.dut = dut
        p = rtl_runner.param
        self.R, self.C = p("R", 4), p("C", 4)
        self.OW, self.BW = p("OW", 24), p("BW", 18)
        self.NMAX, self.NL, self.BMAX = p("NMAX", 64), p("NL", 4), p("BMAX", 32)
        self.AMAX = p("AMAX", 4)
        self.banks = dp.StepBanks.of(self.R, self.C, self.NMAX, self.NL, self.BMAX)
        self.LA = self.banks.la
        self.HW = max(self.OW, self.BW)
        self.rng = np.random.default_rng(seed + 100 * self.R + self.C)
        self.hdl_formats = {  # the module's formats (its parameters), name: (width, frac)
            "weight": (p("WWID", 16), p("WF", 12)), "value": (p("VW", 24), p("VF", 8)),
            "prob": (p("PW", 17), p("PF", 15)), "delta": (p("DLW", 18), p("DLF", 12)),
            "grad": (p("GW", 24), p("GF", 12)), "master": (p("MW", 28), p("MF", 24)),
            "moment": (p("OMW", 28), p("OMF", 16)), "second": (p("QW", 29), p("QF", 14)),
            "rsqrt": (p("RW", 24), p("RF", 18)), "step": (p("TW", 20), p("TF", 16)),
            "unit": (p("UW", 16), p("UF", 15)), "lr": (p("LW", 24), p("LF", 24))}
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def reset(self):
        d = self.dut
        for s in ("start", "n_ops", "op_first", "op_wr_en", "op_wr_op", "op_wr_field",
                  "op_wr_data", "h_wr_en", "h_wr_sel", "h_wr_base", "h_wr_slog", "h_wr_i",
                  "h_wr_j", "h_wr_mask", "h_wr_data", "h_rd_en", "h_rd_sel", "h_rd_base",
                  "h_rd_slog", "h_rd_i", "h_rd_j", "h_rd_rows", "h_rd_cols", "st_start",
                  "st_cmd", "st_cfg_en", "st_cfg_addr", "st_cfg_data", "st_bt_en", "st_bt_i",
                  "st_bt_reward", "st_bt_discount", "st_bt_weight", "st_p_wr_en",
                  "st_p_wr_sel", "st_p_wr_addr", "st_p_wr_data", "st_p_rd_en", "st_p_rd_sel",
                  "st_p_rd_addr", "st_td_i"):
            getattr(d, s).value = 0
        await pulse_reset(d.clk, d.rst)
        await RisingEdge(d.clk)

    # ------------------------------------------------------------------ host ports
    async def write_matrix(self, sel: int, base: int, slog: int, mat) -> None:
        lanes = self.LA if sel in (SEL_ACT, SEL_DELTA) else self.C
        await write_matrix(self.dut, sel, base, slog, mat, lanes, self.LA, self.HW)

    async def write_batch(self, reward, discount, weight) -> None:
        d = self.dut
        for b in range(len(reward)):
            await FallingEdge(d.clk)
            d.st_bt_en.value = 1
            d.st_bt_i.value = b
            d.st_bt_reward.value = int(reward[b]) & ((1 << len(d.st_bt_reward)) - 1)
            d.st_bt_discount.value = int(discount[b]) & ((1 << len(d.st_bt_discount)) - 1)
            d.st_bt_weight.value = int(weight[b]) & ((1 << len(d.st_bt_weight)) - 1)
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
        phases = {k: int(getattr(d, f"st_cyc_{k}").value) for k in PHASES}
        out = (int(d.st_error.value), int(d.st_sat.value), int(d.st_cycles.value), phases)
        await FallingEdge(d.clk)
        return out

    # ------------------------------------------------------------------ one pair of nets
    def agent(self, dims_a, dims_c, batch, lr, period, tau, box, huber):
        """The reference agent of this actor and critic and its step's settings."""
        cfg = DDPGConfig(numerics="fixed", actor_hidden_sizes=tuple(dims_a[1:-1]),
                         critic_hidden_sizes=tuple(dims_c[1:-1]), actor_learning_rate=lr[0],
                         critic_learning_rate=lr[1], target_update_period=period, tau=tau,
                         critic_huber_delta=huber)
        spec = EnvSpec(name="step-tb", num_envs=1, obs_shape=(dims_a[0],),
                       obs_dtype=np.float32,
                       action=ContinuousActions((dims_a[-1],), tuple(box[0]), tuple(box[1])),
                       is_jax=True)
        agent = make_fixed_ddpg(cfg, spec, batch_size=batch)
        f = agent.fmts
        for name, want in self.hdl_formats.items():
            assert getattr(f, name) == Fx(*want), (
                f"the module's {name} format {want} is not the agent's {getattr(f, name)}")
        return agent

    async def setup(self, dims_a, dims_c, batch, lr=(1e-3, 1e-3), period=1, tau=0.005,
                    box=None, huber=None, key=0, wild=False):
        """Build the agent, lay the nets out, write the op table, the registers and the
        initial state, run init. wild: the online and target masters random words over the
        master format's whole range instead of the agent's init. box: the action box
        ((low...), (high...)), default Pendulum's [-2, 2] per action. Returns (agent, state,
        layout)."""
        if box is None:
            box = ((-2.0,) * dims_a[-1], (2.0,) * dims_a[-1])
        agent = self.agent(dims_a, dims_c, batch, lr, period, tau, box, huber)
        f = agent.fmts
        state = agent.init(jax.random.PRNGKey(key))
        if wild:
            def words(tree):
                return jax.tree.map(lambda a: jnp.asarray(random_words(
                    self.rng, a.shape, f.master.width, p_extreme=0.1)), tree)

            state = state.replace(params=words(state.params),
                                  target_params=words(state.target_params))
        lay = dp.layout(self.banks, dims_a, dims_c, batch)
        runs = dp.step_runs(agent.fmts, dims_a, dims_c, lay)
        j = 0
        for run in runs:
            for op in run:
                await write_op(self.dut, j, op)
                j += 1
        items = dp.config_pairs(agent, lay, dp.run_ends(runs), period=period, tau=tau)
        await self.write_cfg(items)
        for sel, pick in ((P_MASTER, lambda s, k: s.params[k]),
                          (P_M, lambda s, k: s.opt_state[k][0]),
                          (P_V, lambda s, k: s.opt_state[k][1]),
                          (P_TARGET, lambda s, k: s.target_params[k])):
            tree = {k: pick(state, k) for k in ("actor", "critic")}
            await self.write_stream(sel, dp.stream(tree, self.C))
        error, _, _, _ = await self.command(1, 100 + 8 * lay["blocks"])
        assert not error, f"{dims_a} {dims_c} batch {batch}: init raised st_error"
        return agent, state, lay

    def batch(self, agent, dims_a, batch):
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
        s, n_act = dims_a[0], dims_a[-1]
        return ({"obs": words((batch, s), f.act, 2.0),
                 "next_obs": words((batch, s), f.act, 2.0),
                 "action": words((batch, n_act), f.act, 1.0),
                 "reward": words((batch,), f.value, 1.0),
                 "discount": words((batch,), f.prob, 0.5, 0, one)},
                words((batch,), f.prob, 0.5, 1, one))

    async def step(self, agent, state, dims_a, dims_c, lay, label: str, sgd_step):
        """One step on the RTL and on the reference from the same state; every word checked.
        Returns (the reference's new state, the step's cycles and phase cycles)."""
        f, b = agent.fmts, lay["batch"]
        batch, weights = self.batch(agent, dims_a, b)
        (x, xn, a, reward, discount, w), n_in = agent._inputs(batch, weights)
        x, xn, a = np.asarray(x), np.asarray(xn), np.asarray(a)
        await self.write_matrix(SEL_ACT, *lay["x"], x)
        await self.write_matrix(SEL_ACT, *lay["xn"], xn)
        await self.write_matrix(SEL_ACT, *lay["c"][0], np.concatenate([x, a], 1))
        await self.write_matrix(SEL_ACT, *lay["tc"][0], xn)
        await self.write_batch(np.asarray(reward), np.asarray(discount), np.asarray(w))
        rates = [int(step_rate(agent.cfg, k, b, state.train_steps, f))
                 for k in ("critic_learning_rate", "actor_learning_rate")]
        await self.write_cfg([(dp.G["LR_C"], rates[0]), (dp.G["LR_A"], rates[1])])
        macs = 6 * b * sum(k * n for k, n in lay["dims"])
        error, sats, cycles, phases = await self.command(
            0, 4000 + 8 * macs + 40 * lay["blocks"] + 40 * b)
        assert not error, f"{label}: st_error"
        new, abs_td, td, metrics = sgd_step(state, batch, weights)
        got_td, got_abs = await self.read_td(b)
        checks = [("td", got_td, np.asarray(td)), ("|td|", got_abs, np.asarray(abs_td))]
        for name, sel, pick in (("master", P_MASTER, lambda s, k: s.params[k]),
                                ("m", P_M, lambda s, k: s.opt_state[k][0]),
                                ("v", P_V, lambda s, k: s.opt_state[k][1]),
                                ("target", P_TARGET, lambda s, k: s.target_params[k])):
            want = dp.stream({k: pick(new, k) for k in ("actor", "critic")}, self.C)
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

    async def run_steps(self, dims_a, dims_c, batch, n_steps, **kw):
        agent, state, lay = await self.setup(dims_a, dims_c, batch, **kw)
        sgd_step = jax.jit(agent.sgd_step)
        label = f"{dims_a} {dims_c} batch {batch} {kw}"
        counts = []
        for t in range(n_steps):
            state, cycles, phases = await self.step(agent, state, dims_a, dims_c, lay,
                                                    f"{label} step {t}", sgd_step)
            counts.append({"cycles": cycles, **phases})
        return counts

    def random_setting(self):
        """A random actor and critic (1-2 hidden layers each, ragged widths), action box,
        batch and target update."""
        rng = self.rng
        n_act = int(rng.integers(1, self.AMAX + 1))
        s = int(rng.integers(1, min(self.NMAX - n_act, 2 * self.LA + 3) + 1))
        hi = min(self.NMAX, 2 * self.LA + 3)
        room = min(self.NL, 6 * self.NL)

        def hidden():
            return [int(v) for v in rng.integers(1, hi + 1, int(rng.integers(1, 3)))]

        while True:
            ha, hc = hidden(), hidden()
            na, nc = len(ha) + 1, len(hc) + 1
            if na + nc <= room and 5 * na + 7 * nc - 2 <= 6 * self.NL:
                break
        dims_a = (s, *ha, n_act)
        dims_c = (s + n_act, *hc, 1)
        batch = int(rng.integers(1, self.BMAX + 1))
        forced = os.environ.get("STEP_TB_TARGET")  # polyak or copy: every network's
        polyak = forced == "polyak" if forced else rng.random() < 0.5
        wild = os.environ.get("STEP_TB_WILD") == "1" or rng.random() < 0.3
        lows = -np.round(rng.choice([0.05, 1.0, 2.0], n_act) * 256) / 256
        highs = np.round(rng.choice([0.1, 1.0, 2.0], n_act) * 256) / 256
        lrs = [float(v) for v in rng.choice([1e-3, 1e-2, 3e-2], 2)]
        kw = {"wild": bool(wild), "lr": tuple(lrs),
              "period": int(rng.integers(1, 3 if polyak else 4)),
              "tau": 0.1 if polyak else 1.0, "key": int(rng.integers(1 << 30)),
              "box": (tuple(float(v) for v in lows), tuple(float(v) for v in highs)),
              "huber": [None, 1.0, 64.0][int(rng.integers(0, 3))]}
        return dims_a, dims_c, batch, kw


@cocotb.test()
async def test_random_steps(dut):
    """Random actor-critic pairs, STEP_TB_STEPS whole SGD steps each (the state carried in
    the RTL), every word against FixedDDPG.sgd_step. STEP_TB_NETS x STEP_TB_STEPS: default
    1 x 2 on Icarus, 4 x 250 on Verilator."""
    tb = TB(dut)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    nets = int(os.environ.get("STEP_TB_NETS", "4" if fast else "1"))
    steps = int(os.environ.get("STEP_TB_STEPS", "250" if fast else "2"))
    tb.dut._log.info(f"{nets} networks x {steps} steps")
    for _ in range(nets):
        dims_a, dims_c, batch, kw = tb.random_setting()
        await tb.run_steps(dims_a, dims_c, batch, steps, **kw)


@cocotb.test()
async def test_bad_config(dut):
    """A configuration out of range (a batch over BMAX, no critic layers) raises st_error
    and runs nothing; the step counter does not move."""
    tb = TB(dut, seed=2)
    await tb.reset()
    await tb.write_cfg([(G["NLA"], 1), (G["NLC"], 1), (G["S"], 1), (G["A"], 1),
                        (G["B"], tb.BMAX + 1), (G["PERIOD"], 1), (G["STEPS"], 7),
                        *[(G[k], i + 1) for i, k in enumerate(dp.RUN_ENDS)]])
    error, _, cycles, _ = await tb.command(0, 100)
    assert error, f"batch {tb.BMAX + 1} > BMAX ran without st_error"
    assert cycles < 10, f"a refused step ran {cycles} cycles"
    await tb.write_cfg([(G["B"], 1), (G["NLC"], 0)])
    error, _, _, _ = await tb.command(0, 100)
    assert error, "NLC 0 ran without st_error"
    await tb.write_cfg([(G["NLC"], 1), (G["OP_F4"], 4)])
    error, _, _, _ = await tb.command(0, 100)
    assert error, "OP_F4 = OP_F3 ran without st_error"
    assert int(dut.st_steps.value) == 7, "a refused step moved the step counter"


@cocotb.test()
async def test_listed_steps(dut):
    """The nets of STEP_NETS (JSON [[actor dims, critic dims, batch, steps], ...]; default
    Pendulum's 3-64-64-1 / 4-64-64-1 at batch 32 for 2 steps where the module holds them,
    else a small pair whose actions straddle two row blocks), each step checked word for
    word, and its loss, clip, update and target phases cycle for cycle against
    hrl.mapping.learner_schedule's DDPG terms; the cycles of each step and of its phases are
    written to STEP_CYCLES_OUT when set (experiments/rtl/ddpg_step_cycles.py)."""
    tb = TB(dut, seed=3)
    await tb.reset()
    fast = "verilator" in cocotb.SIM_NAME.lower()
    if "STEP_NETS" in os.environ:
        nets = [(tuple(a), tuple(c), b, s) for a, c, b, s in json.loads(os.environ["STEP_NETS"])]
    elif tb.NMAX >= 64 and tb.NL >= 6 and tb.BMAX >= 32:
        nets = [(*PENDULUM, 32, 2)]
    elif fast:
        # the actions straddle two row blocks of the critic's input (S = LA - 1)
        n_act = min(2, tb.AMAX)
        s = min(tb.LA - 1, tb.NMAX - n_act)
        nets = [((s, tb.C + 1, n_act), (s + n_act, tb.C + 1, 1),
                 max(1, min(tb.R + 1, tb.BMAX)), 2)]
    else:
        return  # Icarus: test_random_steps is the default tier's
    out = []
    for dims_a, dims_c, batch, steps in nets:
        counts = await tb.run_steps(dims_a, dims_c, batch, steps, lr=(1e-3, 1e-3), period=1,
                                    tau=0.005)
        # The cycle model's terms between the engine's runs are this module's phases.
        model = ls.step_cycles("ddpg", list(dims_a), batch, tb.R, tb.C, critic=list(dims_c))
        for t, n in enumerate(counts):
            got = (n["loss"] + n["clip"], n["upd"], n["tgt"])
            want = (model["loss"], model["update"], model["target"])
            assert got == want, (f"{dims_a} {dims_c} batch {batch} step {t}: (loss + clip, "
                                 f"update, target) cycles {got}, learner_schedule's {want}")
        out.append({"actor": list(dims_a), "critic": list(dims_c), "batch": batch,
                    "steps": counts})
    if os.environ.get("STEP_CYCLES_OUT"):
        with open(os.environ["STEP_CYCLES_OUT"], "w") as f:
            json.dump(out, f)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_step_ddpg.py; one build directory per case. Any other set
# runs with rtl_runner.run("hrl_learn_step_ddpg", {...}, sources=SOURCES, sim=...), or
# `python sim/rtl_runner.py hrl_learn_step_ddpg -k <case>`.

SOURCES = ["hrl_learn_narrow.v", "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v",
           "hrl_learn_weight_bank.v", "hrl_learn_activation.v", "hrl_learn_engine.v",
           "hrl_learn_td.v", "hrl_learn_loss_ddpg.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v",
           "hrl_delay.v", "hrl_learn_adam.v", "hrl_learn_target.v", "hrl_learn_walk.v",
           "hrl_learn_step_ddpg.v"]


def params(r, c, nmax=16, nl=6, bmax=16, amax=4, aw=18, bw=18, ow=24):
    return {"R": r, "C": c, "AW": aw, "BW": bw, "OW": ow, "NMAX": nmax, "NL": nl,
            "BMAX": bmax, "AMAX": amax}


# Steps per set: STEP_TB_NETS x STEP_TB_STEPS (test_random_steps). Each new pair of nets
# compiles FixedDDPG.sgd_step (a minute or more on 2 cores shared), so even the Icarus set's
# two steps take minutes: the long tier (CI) runs it and 100 whole steps on R4-C4 on
# Verilator; the slow tier (`make test-slow`) 1000 on R4-C4 and a few on 16 x 16 (with
# Pendulum's nets at batch 32, test_listed_steps).
STEPS_100 = {"STEP_TB_NETS": "2", "STEP_TB_STEPS": "50"}
STEPS_1000 = {"STEP_TB_NETS": "4", "STEP_TB_STEPS": "250"}
SETS = [
    # CI's time: the Icarus set in the slow tier (`make test-slow`), Verilator's in the long.
    pytest.param("icarus", params(4, 4), None, id="icarus-R4-C4", marks=pytest.mark.slow),
    pytest.param("verilator", params(4, 4), STEPS_100, id="verilator-R4-C4",
                 marks=pytest.mark.long),
    pytest.param("verilator", params(4, 4), STEPS_1000, id="verilator-R4-C4-1000",
                 marks=pytest.mark.slow),
    pytest.param("verilator", params(16, 16, nmax=64, bmax=64, amax=1),
                 {"STEP_TB_NETS": "1", "STEP_TB_STEPS": "3"}, id="verilator-R16-C16",
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("sim,prm,steps", SETS)
def test_hrl_learn_step_ddpg(sim, prm, steps):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_step_ddpg", prm, sources=SOURCES, sim=sim, env=steps)
