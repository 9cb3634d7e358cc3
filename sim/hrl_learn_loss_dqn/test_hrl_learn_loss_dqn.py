"""cocotb testbench of fpga_rtl/rtl/hrl_learn_loss_dqn.v against
hrl.fixed_point.losses.dqn_loss_unit: random batches of Q rows (ties included, so the
argmax's first-of-equals rule matters), actions, rewards, discounts (0 at terminals) and
importance weights, with and without Huber clipping, double and plain DQN, and extreme
words that saturate each narrowing. Every output delta row, td, |td| and the batch's
saturation count must equal the reference's.
"""

from __future__ import annotations

import cocotb
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import FallingEdge
from learn_tb import pack, random_words, unpack
from tb_common import StreamTB

from hrl.fixed_point import Fx
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.losses import dqn_loss_unit

BATCH = 48


class TB(StreamTB):
    INPUTS = ("double_q", "use_huber", "huber", "in_q", "in_qn_online", "in_qn_target", "in_action",
              "in_reward", "in_discount", "in_weight")

    def __init__(self, dut, seed: int = 21):
        super().__init__(dut)
        self.A = rtl_runner.param("A", 2)
        self.f = FxFormats(value=Fx(rtl_runner.param("VW", 24), rtl_runner.param("VF", 8)),
                           prob=Fx(rtl_runner.param("PW", 17), rtl_runner.param("PF", 15)),
                           delta=Fx(rtl_runner.param("DW", 18), rtl_runner.param("DF", 12)))
        self.rng = np.random.default_rng(seed + self.A)

    def sample(self):
        d, f = self.dut, self.f
        return (unpack(int(d.out_delta.value), self.A, f.delta.width),
                unpack(int(d.out_td.value), 1, f.value.width)[0],
                unpack(int(d.out_abs_td.value), 1, f.value.width)[0],
                int(d.out_sat.value))

    def batch(self):
        rng, f, a = self.rng, self.f, self.A
        v = f.value
        q = random_words(rng, (BATCH, a), v.width)
        # Small Q values too (a trained net's), and ties between actions.
        small = rng.random((BATCH, 1)) < 0.5
        q = np.where(small, q >> (v.width // 2), q).astype(np.int32)
        qn_on = random_words(rng, (BATCH, a), v.width) >> 4
        tie = rng.random(BATCH) < 0.3
        qn_on[tie] = qn_on[tie, :1]
        qn_t = random_words(rng, (BATCH, a), v.width) >> 2
        action = rng.integers(0, a, BATCH).astype(np.int32)
        reward = random_words(rng, (BATCH,), v.width) >> int(rng.integers(0, 12))
        one = 1 << f.prob.frac
        discount = np.where(rng.random(BATCH) < 0.2, 0,
                            rng.integers(0, one + 1, BATCH)).astype(np.int32)
        weights = rng.integers(0, one + 1, BATCH).astype(np.int32)
        return q, qn_on, qn_t, action, reward, discount, weights


async def run_batch(tb: TB, huber, double: bool):
    d, f = tb.dut, tb.f
    q, qn_on, qn_t, action, reward, discount, weights = tb.batch()
    d.double_q.value = int(double)
    d.use_huber.value = int(huber is not None)
    d.huber.value = 0 if huber is None else huber
    start = len(tb.out)
    for i in range(BATCH):
        await FallingEdge(d.clk)
        d.in_valid.value = 1
        d.in_q.value = pack(q[i], f.value.width)
        d.in_qn_online.value = pack(qn_on[i], f.value.width)
        d.in_qn_target.value = pack(qn_t[i], f.value.width)
        d.in_action.value = int(action[i])
        d.in_reward.value = int(reward[i]) & ((1 << f.value.width) - 1)
        d.in_discount.value = int(discount[i])
        d.in_weight.value = int(weights[i])
    await FallingEdge(d.clk)
    d.in_valid.value = 0
    for _ in range(24):   # the unit's 20 cycles of latency, and more
        await FallingEdge(d.clk)
    got = tb.out[start:]
    assert len(got) == BATCH, f"{len(got)} samples out, want {BATCH}"
    want = dqn_loss_unit(jnp.asarray(q), jnp.asarray(qn_on), jnp.asarray(qn_t),
                         jnp.asarray(action), jnp.asarray(reward), jnp.asarray(discount),
                         jnp.asarray(weights), None if huber is None else jnp.int32(huber),
                         double, f)
    delta, td, abs_td, n_sat = (np.asarray(w) for w in want)
    for i, (g_delta, g_td, g_abs, _) in enumerate(got):
        ctx = f"sample {i} (huber={huber}, double={double})"
        assert g_td == td[i], f"{ctx}: td {g_td}, want {td[i]}"
        assert g_abs == abs_td[i], f"{ctx}: |td| {g_abs}, want {abs_td[i]}"
        assert g_delta == list(delta[i]), f"{ctx}: delta {g_delta}, want {list(delta[i])}"
    sats = sum(s for *_, s in got)
    assert sats == int(n_sat), f"huber={huber}, double={double}: {sats} saturations, " \
                               f"reference {int(n_sat)}"
    return sats


@cocotb.test()
async def test_batches(dut):
    """Huber or not, double or not; the saturations of the batches are not all zero."""
    tb = TB(dut)
    await tb.reset()
    total = 0
    one = 1 << tb.f.value.frac
    for huber, double in ((one, True), (None, True), (one, False), (None, False)):
        total += await run_batch(tb, huber, double)
    assert total > 0, "no narrowing saturated: the extremes did not reach the unit"


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py.

SOURCES = ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v", "hrl_learn_loss_dqn.v"]

SETS = [
    pytest.param("icarus", {"A": 2, "VW": 24, "VF": 8, "PW": 17, "PF": 15, "DW": 18, "DF": 12},
                 id="icarus-A2"),
    pytest.param("verilator", {"A": 6, "VW": 20, "VF": 6, "PW": 16, "PF": 14, "DW": 16,
                               "DF": 10}, id="verilator-A6", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_loss_dqn(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_loss_dqn", prm, sources=SOURCES, sim=sim)
