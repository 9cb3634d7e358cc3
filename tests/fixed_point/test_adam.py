"""The optimizer unit's Adam and its reciprocal square root against Python-int models written
from their docstrings (`hrl.fixed_point.rsqrt`, `optim.adam`): unbounded integers, round half
to even, saturate, independently of `numerics`' int32 carries."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from int_model import rne, sat

from hrl.fixed_point import common, optim
from hrl.fixed_point.formats import FixedPointConfig, FxFormats
from hrl.fixed_point.numerics import Fx
from hrl.fixed_point.rsqrt import INDEX_BITS, TABLE_BITS, rsqrt, rsqrt_table

F = FxFormats()






def model_rsqrt(v: int, vf: Fx, out: Fx, t: int = INDEX_BITS) -> tuple[int, int]:
    table = rsqrt_table(t)
    f = vf.frac
    v = max(v, 1)
    if f % 2:
        v, f = 2 * v, f + 1
    s = (v.bit_length() - 1) & ~1
    y = v >> (s - (t - 2)) if s >= t - 2 else v << (t - 2 - s)
    r = int(table[y - (1 << (t - 2))])
    return sat(rne(r, TABLE_BITS + s // 2 - out.frac - f // 2), out)


def test_table_is_the_rounded_reciprocal_root():
    table = rsqrt_table()
    assert len(table) == 3 << (INDEX_BITS - 2) and table[0] == 1 << TABLE_BITS
    lead = 1 << (INDEX_BITS - 2)
    for y in (lead, lead + 1, 2 * lead + 7, 4 * lead - 1):
        exact = 2 ** (TABLE_BITS + (INDEX_BITS - 2) / 2) / math.sqrt(y)
        assert abs(int(table[y - lead]) - exact) <= 0.5


@pytest.mark.parametrize("vf,out", [(F.second, F.rsqrt), (Fx(29, 19), Fx(24, 12)),
                                    (Fx(16, 3), Fx(20, 16)), (Fx(20, 10), Fx(12, 8))], ids=str)
def test_rsqrt_matches_its_rule_bit_for_bit(vf, out):
    rng = np.random.default_rng(3)
    v = np.concatenate([np.arange(0, 600), rng.integers(0, vf.max_int + 1, 3000),
                        (1 << np.arange(vf.width - 1)), (1 << np.arange(vf.width - 1)) - 1,
                        [vf.max_int, -1, vf.min_int]]).astype(np.int32)
    words, n_sat = rsqrt(jnp.asarray(v), vf, out)
    model = [model_rsqrt(max(int(x), 0), vf, out) for x in v]
    assert [int(w) for w in words] == [m[0] for m in model]
    assert int(n_sat) == sum(m[1] for m in model)


def test_rsqrt_is_within_its_error_bound():
    """Relative error below 2**-(T-1) where the result is not lost to the output's lsb."""
    v = np.random.default_rng(4).integers(1 << 12, F.second.max_int, 20000).astype(np.int32)
    words = np.asarray(rsqrt(jnp.asarray(v), F.second, F.rsqrt)[0], np.float64)
    exact = 2.0**F.rsqrt.frac / np.sqrt(v * 2.0**-F.second.frac)
    rel = np.abs(words - exact) / exact
    assert rel.max() < 2.0 ** -(INDEX_BITS - 1) + 0.5 / exact.min()


def test_rsqrt_saturates_a_root_over_the_output_range():
    words, n_sat = rsqrt(jnp.asarray([0, 4096, 1 << 22], jnp.int32), Fx(29, 20), Fx(12, 8))
    assert [int(w) for w in words] == [2047, 2047, 128] and int(n_sat) == 2  # 1024, 16, 0.5


def model_adam(w, m, v, g, c1, c2, lr):
    """One parameter of optim.adam with Python ints. Returns (w', m', v', saturations)."""
    f = max(F.grad.frac, F.moment.frac)
    diff = (g << (f - F.grad.frac)) - (m << (f - F.moment.frac))
    m2, s1 = sat(rne(diff * c1 + (m << (f + 15 - F.moment.frac)), f + 15 - F.moment.frac),
                 F.moment)
    sq, s2 = sat(rne(g * g, 2 * F.grad.frac - F.second.frac), F.second)
    v2, s3 = sat(rne((sq - v) * c2 + (v << 15), 15), F.second)
    floor = math.ceil(2**15 / (2 * c2))
    r, s4 = model_rsqrt(max(v2, floor), F.second, F.rsqrt)
    step, s5 = sat(rne(m2 * r, F.moment.frac + F.rsqrt.frac - F.step.frac), F.step)
    shift = F.step.frac + F.lr.frac - F.master.frac
    w2, s6 = sat(rne(-step * lr + (w << shift), shift), F.master)
    return w2, m2, v2, s1 + s2 + s3 + s4 + s5 + s6


@pytest.mark.parametrize("grad_scale", [1e-4, 1e-2, 1.0], ids=["small", "typical", "full"])
def test_adam_matches_its_model_bit_for_bit(grad_scale):
    """Gradients across the range, including ones whose square saturates `second` (full)."""
    rng = np.random.default_rng(5)
    n = 300
    w = rng.integers(-(1 << 24), 1 << 24, n).astype(np.int32)
    m = rng.integers(-(1 << 16), 1 << 16, n).astype(np.int32)
    v = rng.integers(0, 1 << 22, n).astype(np.int32)
    hi = max(1, int(F.grad.max_int * grad_scale))
    g = rng.integers(-hi, hi + 1, n).astype(np.int32)
    g[:2] = [F.grad.max_int, F.grad.min_int]
    c1, c2, lr = 3277, 33, 16777
    w2, (m2, v2), n_sat = optim.adam({"w": w}, ({"w": m}, {"w": v}), {"w": g}, c1, c2, lr, F)
    total = 0
    for i in range(n):
        wi, mi, vi, si = model_adam(int(w[i]), int(m[i]), int(v[i]), int(g[i]), c1, c2, lr)
        assert (int(w2["w"][i]), int(m2["w"][i]), int(v2["w"][i])) == (wi, mi, vi), i
        total += si
    assert int(n_sat) == total and (total > 0 or grad_scale < 1.0)


def test_adam_steps_by_about_the_rate_whatever_the_gradient_scale():
    """Adam's point: a steady gradient moves a weight by about lr per step, at any scale."""
    lr = round(1e-3 * 2**F.lr.frac)
    g = jnp.asarray([300, 3000, 30000], jnp.int32)  # grad words: 0.07 .. 7 in value

    def one(carry, _):
        w, state = carry
        w, state, _ = optim.adam(w, state, g, 3277, 33, lr, F)
        return (w, state), None

    w0 = jnp.zeros(3, jnp.int32)
    (w, _), _ = jax.lax.scan(one, (w0, optim.init_state(w0, "adam")), None, length=300)
    moved = -np.asarray(w, np.float64) * F.master.lsb / 300
    assert np.all((0.3e-3 < moved) & (moved < 3.5e-3)), moved


def test_adam_step_stays_about_one_where_the_second_moment_cannot_resolve_the_gradient():
    """A steady gradient too small for c2 * grad^2 to register in v: without the floor v stays
    0 and m / sqrt(1 lsb) saturates the step; with it the step stays within a few lsb of 1."""
    g = jnp.asarray([1, 8, 40], jnp.int32)  # grad words, grad^2 * c2 below half an lsb of v

    def one(carry, _):
        w, state = carry
        w, state, n = optim.adam(w, state, g, 3277, 33, 1 << 10, F)
        return (w, state), (state[0], state[1], n)

    w0 = jnp.zeros(3, jnp.int32)
    _, (m, v, n) = jax.lax.scan(one, (w0, optim.init_state(w0, "adam")), None, length=100)
    assert int(np.asarray(v).max()) == 0 and int(np.asarray(n).sum()) == 0
    floor = optim.second_floor(33, F)
    step = np.asarray(m[-1], np.float64) * 2.0**-F.moment.frac / np.sqrt(floor * F.second.lsb)
    assert np.all(step < 1.05), step


def test_bias_correction_table_and_rate():
    """The table is sqrt(1 - b2^t) / (1 - b1^t) rounded, ends where it settles at 1.0, and the
    corrected rate is the rate word times it, rounded once (half to even)."""
    table = common.adam_correction_table(0.9, 0.999)
    one = 1 << common.CORRECTION.frac
    for t in (1, 2, 10, 1000):
        exact = math.sqrt(1 - 0.999**t) / (1 - 0.9**t) * one
        assert abs(int(table[t - 1]) - exact) <= 0.5 + 1e-6 * exact
    assert int(table[-1]) == one and int(table[-2]) != one
    fp = FixedPointConfig()
    rate = 16777
    for t in (0, 1, 500, len(table) + 10):
        got = int(common.corrected_rate(jnp.int32(rate), fp, jnp.int32(t), F))
        word = int(table[min(t, len(table) - 1)])
        assert got == sat(rne(rate * word, common.CORRECTION.frac), F.lr)[0]
    off = FixedPointConfig(bias_correction=False)
    assert int(common.corrected_rate(jnp.int32(rate), off, jnp.int32(0), F)) == rate


def test_corrected_first_step_is_the_rate():
    """With the correction, Adam's first step moves each weight by the rate, as float Adam's,
    for gradients whose first (1 - beta2) g^2 clears the floor (epsilon)."""
    lr = round(1e-3 * 2**F.lr.frac)
    rate = int(common.corrected_rate(jnp.int32(lr), FixedPointConfig(), jnp.int32(0), F))
    w0 = jnp.zeros(3, jnp.int32)
    g = jnp.asarray([4000, -10000, 30000], jnp.int32)  # 0.98, 2.4, 7.3
    w, _, _ = optim.adam(w0, optim.init_state(w0, "adam"), g, 3277, 33, rate, F)
    moved = np.asarray(w, np.float64) * F.master.lsb
    np.testing.assert_allclose(moved, [-1e-3, 1e-3, -1e-3], rtol=0.01)


def test_adam_formats_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"agent.fixed_point.second: width 30 leaves no bit"):
        FixedPointConfig(second=(30, 20))
    with pytest.raises(ValueError, match=r"agent.fixed_point.rsqrt: moment x rsqrt is 58"):
        FixedPointConfig(rsqrt=(30, 18))
    with pytest.raises(ValueError, match=r"agent.fixed_point.master: width 30 leaves no bit"):
        FixedPointConfig(master=(30, 24))
    with pytest.raises(ValueError, match=r"agent.fixed_point.delta: Q18.18 cannot hold -1"):
        FixedPointConfig(delta=(18, 18))
    with pytest.raises(ValueError, match=r"agent.fixed_point.beta2 must be a number in"):
        FixedPointConfig(beta2=1.0)
    with pytest.raises(ValueError, match=r"agent.fixed_point.beta2: Adam's bias correction"):
        common.adam_correction_table(0.9, 0.99999)
    with pytest.raises(ValueError, match=r"agent.fixed_point.beta2 \(as 1 - beta2\): "):
        optim.step("adam", {}, ({}, {}), {}, 1, FixedPointConfig(beta2=0.99999), F)
