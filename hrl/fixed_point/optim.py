"""The optimizer and target unit of the FPGA learning module: per parameter, a few
multiply-adds, each rounding once.

    sgd_momentum(master, velocity, grad, mu, lr, fmts)  -> (master', velocity', n_sat)
        velocity' = narrow(mu * velocity + grad)        (velocity)
        master'   = narrow(-lr * velocity' + master)     (master)
    adam(master, (m, v), grad, c1, c2, lr, fmts)         -> (master', (m', v'), n_sat)
        m'        = narrow(c1 * (grad - m) + m)          (moment; grad - m exact)
        sq        = narrow(grad * grad)                  (second)
        v'        = narrow(c2 * (sq - v) + v)            (second; sq - v exact)
        r         = rsqrt(max(v', v_floor))              (rsqrt: see `rsqrt`)
        step      = narrow(m' * r)                       (step)
        master'   = narrow(-lr * step + master)          (master)
    operand(master, fmts)                              -> (weight words, n_sat)
        the array's copy: master rounded to `weight`
    polyak(target, online, tau, fmts)                  -> (target', n_sat)
        target'   = narrow(tau * (online - target) + target)   (master; the difference is
                    exact in master.width + 1 bits)
    hard_copy(target, online)                          -> online

`mu`, `tau`, `c1` = 1 - beta1 and `c2` = 1 - beta2 are `unit` words; `lr` an `lr` word:
for SGD the learning rate divided by the batch size (the loss unit sums over the batch; see
`losses`), for Adam the learning rate itself (Adam's step is invariant to the gradient's
scale). mu = 0 is plain SGD. All functions take and return pytrees of words with the same
structure (one leaf per parameter array).

`v_floor` = ceil(1 / (2 c2)) words is Adam's epsilon (squared): the smallest second moment the
average resolves. Below it, c2 * grad^2 rounds away in v's update, so a small but steady
gradient would leave v at 0 while m follows it, and m / sqrt(v) would be the gradient over one
lsb's root. With the floor, such a step is at most about 1 (sqrt(1 / (2 c2)) lsb is where a
gradient registers), as Adam's is.

The unit has no bias correction: its moments start at zero, so uncorrected its first steps
are up to (1 - beta1) / sqrt(1 - beta2) ~ 3x the rate until they warm up. The correction
sqrt(1 - beta2^t) / (1 - beta1^t) is one factor per step, the same for every parameter, so
the host folds it into the rate word it writes each step (`common.corrected_rate`, from a
table; `agent.fixed_point.bias_correction`, on by default as in the float learner's Adam).
The float32 learner runs the uncorrected algorithm as `agent.optimizer: adam_uncorrected`.
Against momentum SGD it costs three more multipliers and a table read per parameter, and it
is what the float learner's configs are tuned for: momentum SGD at their rates does not
learn CartPole in float32 either.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hrl.fixed_point.formats import FixedPointConfig, FxFormats, exact_difference
from hrl.fixed_point.numerics import Fx, multiply, multiply_add, narrow, quantize
from hrl.fixed_point.rsqrt import rsqrt


def _sum(counts) -> jax.Array:
    return sum(jax.tree.leaves(counts), jnp.int32(0))


def sgd_momentum(master, velocity, grad, mu, lr, fmts: FxFormats):
    """One momentum-SGD step on every parameter (pytrees of the same structure)."""
    def one(w, v, g):
        v2, n1 = multiply_add(v, fmts.velocity, mu, fmts.unit, g, fmts.grad, fmts.velocity)
        w2, n2 = multiply_add(v2, fmts.velocity, -lr, fmts.lr, w, fmts.master, fmts.master)
        return w2, v2, n1 + n2

    out = jax.tree.map(one, master, velocity, grad)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    new_master = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    new_velocity = jax.tree.map(lambda t: t[1], out, is_leaf=is_out)
    counts = jax.tree.map(lambda t: t[2], out, is_leaf=is_out)
    return new_master, new_velocity, _sum(counts)


def adam(master, moments, grad, c1, c2, lr, fmts: FxFormats):
    """One Adam step of the unit (its bias correction is in `lr`, see the module docstring)
    on every parameter. `moments` is (m, v), two pytrees
    like `master`. Returns (master', (m', v'), n_sat)."""
    m_diff = Fx(*exact_difference(fmts.grad, fmts.moment))
    v_diff = Fx(*exact_difference(fmts.second, fmts.second))
    v_floor = second_floor(c2, fmts)

    def one(w, m, v, g):
        frac = m_diff.frac
        diff = (narrow(g, fmts.grad.frac, Fx(m_diff.width, frac))[0]
                - narrow(m, fmts.moment.frac, Fx(m_diff.width, frac))[0])
        m2, n1 = multiply_add(diff, m_diff, c1, fmts.unit, m, fmts.moment, fmts.moment)
        sq, n2 = multiply(g, fmts.grad, g, fmts.grad, fmts.second)
        v2, n3 = multiply_add(sq - v, v_diff, c2, fmts.unit, v, fmts.second, fmts.second)
        r, n4 = rsqrt(jnp.maximum(v2, v_floor), fmts.second, fmts.rsqrt)
        step, n5 = multiply(m2, fmts.moment, r, fmts.rsqrt, fmts.step)
        w2, n6 = multiply_add(step, fmts.step, -lr, fmts.lr, w, fmts.master, fmts.master)
        return w2, m2, v2, n1 + n2 + n3 + n4 + n5 + n6

    m, v = moments
    out = jax.tree.map(one, master, m, v, grad)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    pick = lambda i: jax.tree.map(lambda t: t[i], out, is_leaf=is_out)  # noqa: E731
    return pick(0), (pick(1), pick(2)), _sum(pick(3))


def second_floor(c2: int, fmts: FxFormats) -> int:
    """Adam's epsilon as a floor on the second moment, in its words: ceil(1 / (2 c2)), where
    c2 = 1 - beta2 is a `unit` word (see the module docstring)."""
    return -(-(1 << fmts.unit.frac) // (2 * c2))


def init_state(params, optimizer: str):
    """The optimizer's state for `params` (words): Adam's (m, v), or SGD's velocity; zeros."""
    zeros = jax.tree.map(jnp.zeros_like, params)
    return (zeros, jax.tree.map(jnp.zeros_like, params)) if optimizer == "adam" else zeros


def rate_divisor(optimizer: str, batch_size: int) -> int:
    """What the learning rate is divided by to make the rate word: SGD's step follows the
    gradient's scale, which is a sum over the batch here; Adam's does not."""
    return 1 if optimizer == "adam" else batch_size


def step(optimizer: str, master, opt_state, grad, lr, fp: FixedPointConfig, fmts: FxFormats):
    """One step of `optimizer` ('adam' or 'sgd') with the constants of `fp` as unit words.
    Returns (master', opt_state', n_sat)."""
    if optimizer == "adam":
        c1 = unit_word(1.0 - fp.beta1, fmts, "fixed_point.beta1 (as 1 - beta1)")
        c2 = unit_word(1.0 - fp.beta2, fmts, "fixed_point.beta2 (as 1 - beta2)")
        return adam(master, opt_state, grad, c1, c2, lr, fmts)
    mu = unit_word(fp.momentum, fmts, "fixed_point.momentum")
    return sgd_momentum(master, opt_state, grad, mu, lr, fmts)


def operand(master, fmts: FxFormats):
    """The weights the array reads: every master word rounded to `weight`."""
    out = jax.tree.map(lambda w: narrow(w, fmts.master.frac, fmts.weight), master)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    words = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    return words, _sum(jax.tree.map(lambda t: t[1], out, is_leaf=is_out))


def polyak(target, online, tau, fmts: FxFormats):
    """target <- target + tau * (online - target), rounded once per parameter."""
    diff_fmt = Fx(*exact_difference(fmts.master, fmts.master))

    def one(t, w):
        return multiply_add(w - t, diff_fmt, tau, fmts.unit, t, fmts.master, fmts.master)

    out = jax.tree.map(one, target, online)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    words = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    return words, _sum(jax.tree.map(lambda t: t[1], out, is_leaf=is_out))


def hard_copy(target, online):
    """target <- online (tau = 1: a copy, no multiply)."""
    del target
    return online


def update_target(target, online, train_steps, period: int, tau: float, fmts: FxFormats):
    """Every `period` steps (train_steps % period == 0): a hard copy for tau = 1, Polyak
    otherwise. Returns (target', n_sat)."""
    if tau == 1.0:
        new, n = hard_copy(target, online), jnp.int32(0)
    else:
        new, n = polyak(target, online, unit_word(tau, fmts, "tau"), fmts)
    if period == 1:
        return new, n
    due = train_steps % period == 0
    return jax.tree.map(lambda a, b: jnp.where(due, a, b), new, target), jnp.where(due, n, 0)


def unit_word(value: float, fmts: FxFormats, key: str) -> int:
    """A constant in [0, 1) as a `unit` word, for tau and momentum; ValueError names `key` when
    a nonzero value rounds to 0."""
    word = int(round(value * 2**fmts.unit.frac))
    if value > 0 and word == 0:
        raise ValueError(f"agent.{key}: {value:.3g} rounds to 0 in {fmts.unit}; the smallest is "
                         f"{fmts.unit.lsb:.3g}")
    return min(word, fmts.unit.max_int)


def quantize_tree(tree, fmt: Fx):
    """Floats -> words of `fmt` for every leaf. Returns (words, n_sat)."""
    out = jax.tree.map(lambda x: quantize(x, fmt), tree)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    words = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    return words, _sum(jax.tree.map(lambda t: t[1], out, is_leaf=is_out))
