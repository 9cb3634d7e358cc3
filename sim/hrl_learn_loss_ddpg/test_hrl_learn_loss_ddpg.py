"""cocotb testbench of fpga_rtl/rtl/hrl_learn_loss_ddpg.v against
hrl.fixed_point.losses.ddpg_critic_unit and ddpg_actor_delta: random batches of critic
samples (Q(s, a), Q'(s', mu'(s')), rewards, discounts, 0 at terminals, and importance
weights), fed with random bubbles (cycles of junk words, not valid), with and without Huber
clipping, with extreme words (the most negative and the
largest, zeros) that saturate each narrowing and odd products that land on the rounding's
ties; then batches where actor samples (the constant delta -1) and critic samples alternate
at random, cycle by cycle. Every delta, td, |td| and each sample's saturation count must
equal the reference's (each sample's count from the reference run on that sample alone),
and a batch's sum the reference's batch count.
"""

from __future__ import annotations

import cocotb
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rtl_runner
from cocotb.triggers import FallingEdge
from learn_tb import random_words, unpack
from tb_common import StreamTB

from hrl.fixed_point import Fx
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.losses import ddpg_actor_delta, ddpg_critic_unit

BATCH = 48


class TB(StreamTB):
    INPUTS = ("use_huber", "huber", "in_actor", "in_q", "in_q_next", "in_reward", "in_discount",
              "in_weight")

    def __init__(self, dut, seed: int = 23):
        super().__init__(dut)
        self.f = FxFormats(value=Fx(rtl_runner.param("VW", 24), rtl_runner.param("VF", 8)),
                           prob=Fx(rtl_runner.param("PW", 17), rtl_runner.param("PF", 15)),
                           delta=Fx(rtl_runner.param("DW", 18), rtl_runner.param("DF", 12)))
        self.rng = np.random.default_rng(seed + self.f.value.width)

    def sample(self):
        d, f = self.dut, self.f
        return (unpack(int(d.out_delta.value), 1, f.delta.width)[0],
                unpack(int(d.out_td.value), 1, f.value.width)[0],
                unpack(int(d.out_abs_td.value), 1, f.value.width)[0],
                int(d.out_sat.value))

    def batch(self):
        rng, f = self.rng, self.f
        v = f.value
        q = random_words(rng, (BATCH,), v.width)
        # Small Q values too (a trained critic's).
        small = rng.random(BATCH) < 0.5
        q = np.where(small, q >> (v.width // 2), q).astype(np.int32)
        q_next = random_words(rng, (BATCH,), v.width) >> int(rng.integers(0, 4))
        reward = random_words(rng, (BATCH,), v.width) >> int(rng.integers(0, 12))
        one = 1 << f.prob.frac
        discount = np.where(rng.random(BATCH) < 0.2, 0,
                            rng.integers(0, one + 1, BATCH)).astype(np.int32)
        # Odd discounts and a weight of one half put the narrowings on their ties.
        discount = np.where(rng.random(BATCH) < 0.15, one // 2 + 1, discount).astype(np.int32)
        weights = rng.integers(0, one + 1, BATCH).astype(np.int32)
        weights = np.where(rng.random(BATCH) < 0.15, one // 2, weights).astype(np.int32)
        return q, q_next, reward, discount, weights


def reference(f: FxFormats, q, q_next, reward, discount, weights, huber):
    """(delta (B,), td, |td|, the batch's saturations, each sample's alone), from hrl."""
    h = None if huber is None else jnp.int32(huber)
    args = [jnp.asarray(x) for x in (q, q_next, reward, discount, weights)]
    delta, td, abs_td, n_sat = ddpg_critic_unit(*args, h, f)

    def one(*xs):
        return ddpg_critic_unit(*(x[None] for x in xs), h, f)[3]

    per_sample = jax.vmap(one)(*args)
    return (np.asarray(delta)[:, 0], np.asarray(td), np.asarray(abs_td), int(n_sat),
            np.asarray(per_sample))


async def run_batch(tb: TB, huber, actor: np.ndarray):
    """One batch; `actor` marks the samples fed in actor mode. Returns the saturations."""
    d, f = tb.dut, tb.f
    q, q_next, reward, discount, weights = tb.batch()
    mask_v = (1 << f.value.width) - 1
    d.use_huber.value = int(huber is not None)
    d.huber.value = 0 if huber is None else huber
    start = len(tb.out)
    for i in range(BATCH):
        if tb.rng.random() < 0.15:  # a bubble: junk words that must not come out
            await FallingEdge(d.clk)
            d.in_valid.value = 0
            d.in_q.value = d.in_q_next.value = d.in_reward.value = mask_v
            d.in_actor.value = int(tb.rng.integers(0, 2))
        await FallingEdge(d.clk)
        d.in_valid.value = 1
        d.in_actor.value = int(actor[i])
        d.in_q.value = int(q[i]) & mask_v
        d.in_q_next.value = int(q_next[i]) & mask_v
        d.in_reward.value = int(reward[i]) & mask_v
        d.in_discount.value = int(discount[i])
        d.in_weight.value = int(weights[i])
    await FallingEdge(d.clk)
    d.in_valid.value = 0
    for _ in range(18):   # the unit's 15 cycles of latency, and more
        await FallingEdge(d.clk)
    got = tb.out[start:]
    assert len(got) == BATCH, f"{len(got)} samples out, want {BATCH}"
    delta, td, abs_td, n_sat, per_sample = reference(f, q, q_next, reward, discount, weights,
                                                     huber)
    actor_row = int(np.asarray(ddpg_actor_delta(1, f))[0, 0])
    for i, (g_delta, g_td, g_abs, g_sat) in enumerate(got):
        ctx = f"sample {i} (huber={huber}, actor={bool(actor[i])})"
        if actor[i]:
            assert g_delta == actor_row, f"{ctx}: delta {g_delta}, want {actor_row}"
            assert (g_td, g_abs, g_sat) == (0, 0, 0), f"{ctx}: td {g_td}, |td| {g_abs}, " \
                                                      f"sat {g_sat}, want 0, 0, 0"
            continue
        assert g_td == td[i], f"{ctx}: td {g_td}, want {td[i]}"
        assert g_abs == abs_td[i], f"{ctx}: |td| {g_abs}, want {abs_td[i]}"
        assert g_delta == delta[i], f"{ctx}: delta {g_delta}, want {delta[i]}"
        assert g_sat == per_sample[i], f"{ctx}: {g_sat} saturations, want {per_sample[i]}"
    sats = sum(s for *_, s in got)
    if not actor.any():
        assert sats == n_sat, f"huber={huber}: {sats} saturations, reference {n_sat}"
    return sats


@cocotb.test()
async def test_critic_batches(dut):
    """Huber or not, every sample a critic's; the saturations are not all zero."""
    tb = TB(dut)
    await tb.reset()
    one = 1 << tb.f.value.frac
    critic = np.zeros(BATCH, bool)
    total = 0
    for huber in (one, None, one, None, 1):
        total += await run_batch(tb, huber, critic)
    assert total > 0, "no narrowing saturated: the extremes did not reach the unit"


@cocotb.test()
async def test_actor_and_critic_interleaved(dut):
    """Actor samples (delta -1, no td) between critic samples, cycle by cycle."""
    tb = TB(dut, seed=5)
    await tb.reset()
    one = 1 << tb.f.value.frac
    await run_batch(tb, None, np.ones(BATCH, bool))
    for huber in (one, None):
        actor = tb.rng.random(BATCH) < 0.5
        await run_batch(tb, huber, actor)


# --------------------------------------------------------------------------- pytest sweep
# Collected by tests/rtl/test_rtl_learn.py.

SOURCES = ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v", "hrl_learn_loss_ddpg.v"]

SETS = [
    pytest.param("icarus", {"VW": 24, "VF": 8, "PW": 17, "PF": 15, "DW": 18, "DF": 12},
                 id="icarus-default"),
    pytest.param("verilator", {"VW": 20, "VF": 6, "PW": 16, "PF": 14, "DW": 16, "DF": 10},
                 id="verilator-VW20", marks=pytest.mark.long),
    pytest.param("icarus", {"VW": 16, "VF": 4, "PW": 12, "PF": 10, "DW": 12, "DF": 11},
                 id="icarus-VW16-DF11", marks=pytest.mark.long),
]


@pytest.mark.parametrize("sim,prm", SETS)
def test_hrl_learn_loss_ddpg(sim, prm):
    rtl_runner.require(sim)
    rtl_runner.run("hrl_learn_loss_ddpg", prm, sources=SOURCES, sim=sim)
