"""The optimizer and target unit of the FPGA learning module: per parameter, a few
multiply-adds, each rounding once.

    sgd_momentum(master, velocity, grad, mu, lr, fmts)  -> (master', velocity', n_sat)
        velocity' = narrow(mu * velocity + grad)        (velocity)
        master'   = narrow(-lr * velocity' + master)     (master)
    operand(master, fmts)                              -> (weight words, n_sat)
        the array's copy: master rounded to `weight`
    polyak(target, online, tau, fmts)                  -> (target', n_sat)
        target'   = narrow(tau * (online - target) + target)   (master; the difference is
                    exact in master.width + 1 bits)
    hard_copy(target, online)                          -> online

`mu` and `tau` are `unit` words, `lr` an `lr` word: the learning rate divided by the batch
size (the loss unit sums over the batch; see `losses`). mu = 0 is plain SGD. All functions
take and return pytrees of words with the same structure (one leaf per parameter array).

Why momentum SGD and not Adam: Adam needs, per parameter and step, a square root and a
divide (or a reciprocal square root) in addition to two moment updates; momentum needs two
multiply-adds, which map onto the DSPs the array already has. The measured curves
(experiments/results/fixed_point/) show what it costs in learning.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.numerics import Fx, multiply_add, narrow, quantize


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


def operand(master, fmts: FxFormats):
    """The weights the array reads: every master word rounded to `weight`."""
    out = jax.tree.map(lambda w: narrow(w, fmts.master.frac, fmts.weight), master)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    words = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    return words, _sum(jax.tree.map(lambda t: t[1], out, is_leaf=is_out))


def polyak(target, online, tau, fmts: FxFormats):
    """target <- target + tau * (online - target), rounded once per parameter."""
    diff_fmt = Fx(fmts.master.width + 1, fmts.master.frac)

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
        raise ValueError(f"agent.{key}: {value} rounds to 0 in {fmts.unit}; the smallest is "
                         f"{fmts.unit.lsb:.3g}")
    return min(word, fmts.unit.max_int)


def quantize_tree(tree, fmt: Fx):
    """Floats -> words of `fmt` for every leaf. Returns (words, n_sat)."""
    out = jax.tree.map(lambda x: quantize(x, fmt), tree)
    is_out = lambda x: isinstance(x, tuple)  # noqa: E731
    words = jax.tree.map(lambda t: t[0], out, is_leaf=is_out)
    return words, _sum(jax.tree.map(lambda t: t[1], out, is_leaf=is_out))
