"""hrl.fixed_point.numerics against unbounded Python integers: exact products and sums, round
half to even at every narrowing, saturation counted."""

from __future__ import annotations

import numpy as np
import pytest
from int_model import rne, sat

from hrl.fixed_point import numerics as fx
from hrl.fixed_point.numerics import Fx


def ints(rng, f: Fx, shape):
    """Random words of a format, with the extremes and small values over-represented."""
    x = rng.integers(f.min_int, f.max_int + 1, size=shape, dtype=np.int64)
    edge = rng.random(shape)
    x = np.where(edge < 0.1, f.max_int, x)
    x = np.where((edge >= 0.1) & (edge < 0.2), f.min_int, x)
    x = np.where((edge >= 0.2) & (edge < 0.4), rng.integers(-8, 9, size=shape), x)
    return x.astype(np.int32)


FORMATS = [  # (a, b, out) triples: operand widths 8..18, outputs narrowing by 0..30 bits
    (Fx(16, 10), Fx(16, 12), Fx(16, 10)),
    (Fx(16, 8), Fx(16, 14), Fx(16, 20)),
    (Fx(18, 12), Fx(18, 12), Fx(24, 16)),
    (Fx(8, 4), Fx(12, 11), Fx(8, 6)),
    (Fx(16, 12), Fx(16, 12), Fx(30, 28)),
    (Fx(16, 14), Fx(16, 14), Fx(4, -2)),
]


@pytest.mark.parametrize("a,b,out", FORMATS, ids=lambda f: str(f))
@pytest.mark.parametrize("k", [1, 3, 64, 130])
def test_matmul_is_exact_then_rounds_half_even_and_saturates(a, b, out, k):
    rng = np.random.default_rng(k * 7 + a.width)
    x = ints(rng, a, (5, k))
    w = ints(rng, b, (k, 6))
    got, n_sat = fx.matmul(x, a, w, b, out)
    want = np.zeros((5, 6), np.int64)
    nsat = 0
    for i in range(5):
        for j in range(6):
            exact = sum(int(x[i, t]) * int(w[t, j]) for t in range(k))
            want[i, j], s = sat(rne(exact, a.frac + b.frac - out.frac), out)
            nsat += s
    np.testing.assert_array_equal(np.asarray(got), want)
    assert int(n_sat) == nsat


def test_ties_round_to_even_both_signs():
    out = Fx(16, 0)
    # 2.5, 3.5, -2.5, -3.5, 2, -2, 3, -3 with one fractional bit
    v = np.array([5, 7, -5, -7, 4, -4, 6, -6], np.int32)
    got, n = fx.narrow(v, 1, out)
    np.testing.assert_array_equal(np.asarray(got), [2, 4, -2, -4, 2, -2, 3, -3])
    assert int(n) == 0


@pytest.mark.parametrize("frac_in,out", [(20, Fx(12, 4)), (0, Fx(12, 8)), (3, Fx(6, 9)),
                                         (28, Fx(8, 0)), (5, Fx(30, 5)), (0, Fx(4, 6))])
def test_narrow_any_shift(frac_in, out):
    rng = np.random.default_rng(frac_in)
    x = rng.integers(-(2**31), 2**31, size=400, dtype=np.int64)
    x[:40] = rng.integers(-300, 300, size=40)
    x[40:48] = [2**31 - 1, -(2**31), 0, 1, -1, 2**(frac_in) if frac_in < 31 else 1, 7, -9]
    x = x.astype(np.int32)
    got, n = fx.narrow(x, frac_in, out)
    pairs = [sat(rne(int(v), frac_in - out.frac), out) for v in x]
    np.testing.assert_array_equal(np.asarray(got), [p[0] for p in pairs])
    assert int(n) == sum(p[1] for p in pairs)


@pytest.mark.parametrize("a,b,out", FORMATS, ids=lambda f: str(f))
def test_multiply_and_add(a, b, out):
    rng = np.random.default_rng(a.width + b.frac)
    x, y = ints(rng, a, 300), ints(rng, b, 300)
    got, n = fx.multiply(x, a, y, b, out)
    shift = a.frac + b.frac - out.frac
    pairs = [sat(rne(int(p) * int(q), shift), out) for p, q in zip(x, y, strict=True)]
    np.testing.assert_array_equal(np.asarray(got), [p[0] for p in pairs])
    assert int(n) == sum(p[1] for p in pairs)
    if abs(a.frac - b.frac) + max(a.width, b.width) <= 30:
        got, n = fx.add(x, a, y, b, out)
        f = max(a.frac, b.frac)
        pairs = [sat(rne((int(p) << (f - a.frac)) + (int(q) << (f - b.frac)),
                               f - out.frac), out)
                 for p, q in zip(x, y, strict=True)]
        np.testing.assert_array_equal(np.asarray(got), [p[0] for p in pairs])
        assert int(n) == sum(p[1] for p in pairs)


def test_quantize_round_half_even_saturate_and_nan():
    f = Fx(8, 2)
    x = np.array([0.125, 0.375, -0.125, 31.75, 31.9, 1e9, -32.0, -32.2, np.nan, 1.1], np.float32)
    q, n = fx.quantize(x, f)
    np.testing.assert_array_equal(np.asarray(q), [0, 2, 0, 127, 127, 127, -128, -128, 0, 4])
    assert int(n) == 4  # 31.9 rounds to 128 (over), 1e9, -32.2 (-129 after rounding), NaN
    np.testing.assert_array_equal(np.asarray(fx.dequantize(q, f))[:4], [0.0, 0.5, 0.0, 31.75])


def test_formats_and_accumulator_limits_refused_in_one_line():
    with pytest.raises(ValueError, match="width"):
        Fx(31, 0)
    with pytest.raises(ValueError, match="accumulator"):
        zeros = np.zeros((4, 4), np.int32)
        fx.matmul(zeros, Fx(30, 0), zeros, Fx(30, 0), Fx(16, 0))


@pytest.mark.parametrize("a,b,out", FORMATS[:3], ids=lambda f: str(f))
def test_matmul_bias_enters_the_accumulator_exactly(a, b, out):
    rng = np.random.default_rng(3)
    bf = Fx(20, min(a.frac + b.frac, 16))
    x, w, bias = ints(rng, a, (4, 9)), ints(rng, b, (9, 3)), ints(rng, bf, 3)
    got, n = fx.matmul(x, a, w, b, out, bias=bias, bias_fmt=bf)
    shift = a.frac + b.frac - bf.frac
    want, nsat = [], 0
    for i in range(4):
        for j in range(3):
            exact = sum(int(x[i, t]) * int(w[t, j]) for t in range(9)) + (int(bias[j]) << shift)
            v, s = sat(rne(exact, a.frac + b.frac - out.frac), out)
            want.append(v)
            nsat += s
    np.testing.assert_array_equal(np.asarray(got).ravel(), want)
    assert int(n) == nsat


MAC_FORMATS = [  # (a, b, c, out): the optimizer's and target update's shapes, and others
    (Fx(28, 14), Fx(17, 15), Fx(24, 12), Fx(28, 14)),   # momentum: mu * v + g
    (Fx(28, 14), Fx(16, 28), Fx(28, 24), Fx(28, 24)),   # weight step: -lr * v + w
    (Fx(29, 24), Fx(16, 15), Fx(28, 24), Fx(28, 24)),   # Polyak: tau * (w - t) + t
    (Fx(16, 8), Fx(16, 12), Fx(12, 4), Fx(8, 2)),
]


@pytest.mark.parametrize("a,b,c,out", MAC_FORMATS, ids=lambda f: str(f))
def test_multiply_add_is_exact_then_rounds_once(a, b, c, out):
    rng = np.random.default_rng(a.width * 31 + b.frac)
    x, y, z = ints(rng, a, (300,)), ints(rng, b, (300,)), ints(rng, c, (300,))
    got, n_sat = fx.multiply_add(x, a, y, b, z, c, out)
    want, nsat = [], 0
    for xi, yi, zi in zip(x.tolist(), y.tolist(), z.tolist(), strict=True):
        exact = xi * yi + (zi << (a.frac + b.frac - c.frac))
        v, s = sat(rne(exact, a.frac + b.frac - out.frac), out)
        want.append(v)
        nsat += s
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert int(n_sat) == nsat


def test_multiply_add_refuses_a_misaligned_addend():
    with pytest.raises(ValueError, match="cannot be aligned"):
        fx.multiply_add(np.int32(1), Fx(16, 4), np.int32(1), Fx(16, 4), np.int32(1), Fx(16, 12),
                        Fx(16, 8))
