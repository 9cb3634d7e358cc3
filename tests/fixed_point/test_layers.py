"""The learning module's units (layers, loss, optimizer) against Python-int models.

Each unit is one hardware operation; its model here is written from the contract in its
docstring with unbounded integers (round half to even, saturate), independently of
`numerics`' int32 carries.
"""

from __future__ import annotations

import numpy as np
import pytest
from int_model import rne, sat

from hrl.fixed_point import layers, losses, optim
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.numerics import Fx

F = FxFormats()






def words(rng, f: Fx, shape, scale=1.0):
    """Random words over `scale` of the format's range, with both extremes present."""
    hi = max(1, int(f.max_int * scale))
    x = rng.integers(-hi, hi + 1, size=shape)
    flat = x.reshape(-1)
    flat[0], flat[-1] = f.max_int if scale >= 1 else hi, f.min_int if scale >= 1 else -hi
    return x.astype(np.int32)


def model_matmul(x, a, w, b, out, bias=None, bias_fmt=None):
    """Python-int x @ w (+ bias), one rounding. Returns (int array, saturation flags)."""
    n, k = x.shape
    m = w.shape[1]
    y = np.zeros((n, m), np.int64)
    s = np.zeros((n, m), np.int64)
    for i in range(n):
        for j in range(m):
            acc = sum(int(x[i, t]) * int(w[t, j]) for t in range(k))
            if bias is not None:
                acc += int(bias[j]) << (a.frac + b.frac - bias_fmt.frac)
            y[i, j], s[i, j] = sat(rne(acc, a.frac + b.frac - out.frac), out)
    return y, s


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("out", [F.act, F.value, Fx(10, 2)], ids=str)
def test_dense_forward(relu, out):
    rng = np.random.default_rng(1 + relu)
    x, w, b = words(rng, F.act, (5, 7)), words(rng, F.weight, (7, 6)), words(rng, F.weight, (6,))
    y, mask, n_sat = layers.dense_forward(x, w, b, F.act, F.weight, out, relu)
    want, s = model_matmul(x, F.act, w, F.weight, out, b, F.weight)
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_array_equal(np.asarray(y), want)
    np.testing.assert_array_equal(np.asarray(mask), want > 0 if relu else np.ones_like(want, bool))
    assert int(n_sat) == s.sum()


@pytest.mark.parametrize("with_mask", [True, False])
def test_dense_backward_masks_before_counting(with_mask):
    rng = np.random.default_rng(3)
    d, w = words(rng, F.delta, (5, 6)), words(rng, F.weight, (7, 6))
    mask = rng.random((5, 7)) < 0.6 if with_mask else None
    got, n_sat = layers.dense_backward(d, w, mask, F.delta, F.weight, F.delta)
    want, s = model_matmul(d, F.delta, w.T, F.weight, F.delta)
    if with_mask:
        want, s = np.where(mask, want, 0), np.where(mask, s, 0)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert int(n_sat) == s.sum() and s.sum() > 0


def test_weight_and_bias_gradients():
    rng = np.random.default_rng(4)
    a, d = words(rng, F.act, (9, 7)), words(rng, F.delta, (9, 6))
    gw, n_w = layers.weight_grad(a, d, F.act, F.delta, F.grad)
    want, s = model_matmul(a.T, F.act, d, F.delta, F.grad)
    np.testing.assert_array_equal(np.asarray(gw), want)
    assert int(n_w) == s.sum()
    small = Fx(8, 4)  # narrow enough that a batch sum saturates
    gb, n_b = layers.bias_grad(d, F.delta, small)
    exact = [sum(int(v) for v in d[:, j]) for j in range(6)]
    pairs = [sat(rne(e, F.delta.frac - small.frac), small) for e in exact]
    np.testing.assert_array_equal(np.asarray(gb), [p[0] for p in pairs])
    assert int(n_b) == sum(p[1] for p in pairs) and int(n_b) > 0


def test_clip_output_passes_deltas_that_point_back_inside():
    z = np.array([[-9, -5, 0, 5, 9]] * 2, np.int32)
    y, lo, hi = layers.clip_output(z, -5, 5)
    np.testing.assert_array_equal(np.asarray(y)[0], [-5, -5, 0, 5, 5])
    delta = np.array([[1, 1, 1, 1, 1], [-1, -1, -1, -1, -1]], np.int32)
    got = np.asarray(layers.clip_output_backward(delta, lo, hi))
    # At the low bound a positive delta (a step down) is stopped; at the high bound a negative.
    np.testing.assert_array_equal(got, [[0, 0, 1, 1, 1], [-1, -1, -1, 0, 0]])


def _model_td(q, q_next, reward, discount):
    v, p = F.value, F.prob
    target, s1 = sat(rne(q_next * discount + (reward << p.frac), p.frac), v)
    td, s2 = sat(target - q, v)
    return td, s1 + s2


@pytest.mark.parametrize("double", [True, False])
def test_dqn_loss_unit(double):
    rng = np.random.default_rng(5 + double)
    b, n = 16, 3
    q = words(rng, F.value, (b, n), 0.01)
    qo = words(rng, F.value, (b, n), 0.01)
    qt = words(rng, F.value, (b, n), 0.01)
    qo[0] = [7, 7, 1]  # a tie: the first of equal words
    action = rng.integers(0, n, b).astype(np.int32)
    reward = words(rng, F.value, (b,), 0.001)
    discount = rng.integers(0, 1 << F.prob.frac, b).astype(np.int32)
    discount[0] = 1 << F.prob.frac  # exactly 1
    weights = rng.integers(0, (1 << F.prob.frac) + 1, b).astype(np.int32)
    huber = 1 << F.value.frac
    delta, td, abs_td, n_sat = losses.dqn_loss_unit(q, qo, qt, action, reward, discount, weights,
                                                    huber, double, F)
    want_delta = np.zeros((b, n), np.int64)
    nsat = 0
    for i in range(b):
        chooser = qo[i] if double else qt[i]
        best = int(np.argmax(chooser))
        t, s = _model_td(int(q[i, action[i]]), int(qt[i, best]), int(reward[i]),
                         int(discount[i]))
        assert int(td[i]) == t and int(abs_td[i]) == abs(t)
        c = min(max(t, -huber), huber)
        d, s2 = sat(rne(-c * int(weights[i]), F.value.frac + F.prob.frac - F.delta.frac),
                    F.delta)
        want_delta[i, action[i]] = d
        nsat += s + s2
    np.testing.assert_array_equal(np.asarray(delta), want_delta)
    assert int(n_sat) == nsat


def test_ddpg_critic_unit_squared_error_saturates_and_counts():
    rng = np.random.default_rng(7)
    q, qn = words(rng, F.value, (12,), 0.05), words(rng, F.value, (12,), 0.05)
    reward = words(rng, F.value, (12,), 0.001)
    discount = np.full(12, 32440, np.int32)
    weights = np.full(12, 1 << F.prob.frac, np.int32)
    delta, td, _, n_sat = losses.ddpg_critic_unit(q, qn, reward, discount, weights, None, F)
    nsat = 0
    for i in range(12):
        t, s = _model_td(int(q[i]), int(qn[i]), int(reward[i]), int(discount[i]))
        d, s2 = sat(rne(-t << F.prob.frac, F.value.frac + F.prob.frac - F.delta.frac), F.delta)
        assert int(td[i]) == t and int(delta[i, 0]) == d
        nsat += s + s2
    assert int(n_sat) == nsat and nsat > 0


def test_optimizer_and_target_units():
    rng = np.random.default_rng(8)
    w = words(rng, F.master, (40,), 0.5)
    v = words(rng, F.velocity, (40,), 0.01)
    g = words(rng, F.grad, (40,), 0.01)
    mu, lr, tau = 29491, 4000, 164
    w2, v2, n_sat = optim.sgd_momentum({"w": w}, {"w": v}, {"w": g}, mu, lr, F)
    t = words(rng, F.master, (40,), 0.5)
    t2, n_t = optim.polyak({"w": t}, {"w": w}, tau, F)
    for i in range(40):
        vi, _ = sat(rne(int(v[i]) * mu + (int(g[i]) << (F.velocity.frac + 15 - F.grad.frac)), 15),
                    F.velocity)
        shift = F.velocity.frac + F.lr.frac - F.master.frac
        wi, _ = sat(rne(-vi * lr + (int(w[i]) << shift), shift), F.master)
        ti, _ = sat(rne((int(w[i]) - int(t[i])) * tau + (int(t[i]) << 15), 15), F.master)
        assert (int(v2["w"][i]), int(w2["w"][i]), int(t2["w"][i])) == (vi, wi, ti)
    assert int(n_sat) == 0 and int(n_t) == 0


def test_unit_word_refuses_a_rate_that_rounds_to_zero():
    with pytest.raises(ValueError, match="agent.tau: 1e-06 rounds to 0"):
        optim.unit_word(1e-6, F, "tau")
