"""Checks shared by the tests of every sum-tree kernel set (native C++, Pallas) against the
JAX reference: raw words, a sequential float32 model of the parents, and the float32 bound;
and by the replay buffers' tests: the O(N) copies a compiled sample+update step makes."""

from __future__ import annotations

import re

import jax
import numpy as np


def words(tree) -> list[np.ndarray]:
    """Every level as raw 32-bit words (float32 viewed as uint32, so -0.0 != 0.0, NaN == NaN)."""
    return [np.asarray(level).reshape(-1).view(np.uint32) for level in tree.levels]


def sequential_float_model(tree) -> list[np.ndarray]:
    """Parents recomputed from the tree's own leaves by left-to-right float32 sums."""
    k = tree.fanout
    levels = [np.asarray(level, np.float32).reshape(-1) for level in tree.levels]
    for level in range(tree.depth - 1, -1, -1):
        children = levels[level + 1].reshape(-1, k)
        acc = np.zeros(children.shape[0], np.float32)
        for j in range(k):
            acc = (acc + children[:, j]).astype(np.float32)
        fresh = levels[level].copy()
        fresh[: acc.size] = acc
        levels[level] = fresh
    return [level.view(np.uint32) for level in levels]


def exact_subtree_sums(tree) -> list[np.ndarray]:
    """float64 sums of the leaves under every node (the error bound's yardstick)."""
    k = tree.fanout
    sums = [None] * (tree.depth + 1)
    sums[tree.depth] = np.asarray(tree.levels[-1], np.float64).reshape(-1)
    for level in range(tree.depth - 1, -1, -1):
        parents = sums[level + 1].reshape(-1, k).sum(axis=1)
        padded = np.zeros(np.asarray(tree.levels[level]).size)
        padded[: parents.size] = parents
        sums[level] = padded
    return sums


def assert_float_within_bound(got_tree, ref_tree):
    """|native - reference| <= 2 h (K-1) 2^-24 * exact subtree sum at height h.

    Each float32 sum of K non-negative values in any order is within (K-1) u of the exact sum
    (u = 2^-24) relative to it, and height h compounds that h times; two orders differ by at
    most twice that. First order in u; the 1.01 covers the second-order terms.
    """
    k, depth = got_tree.fanout, got_tree.depth
    exact = exact_subtree_sums(got_tree)
    for level in range(depth + 1):
        a = np.asarray(got_tree.levels[level], np.float64).reshape(-1)
        b = np.asarray(ref_tree.levels[level], np.float64).reshape(-1)
        height = depth - level
        bound = 1.01 * 2 * height * (k - 1) * 2.0**-24 * exact[level]
        bad = np.abs(a - b) > bound
        assert not bad.any(), (
            f"level {level}: node {int(np.argmax(bad))} got {a[bad][0]!r} "
            f"reference {b[bad][0]!r} bound {bound[bad][0]!r}"
        )


def copies_per_step(replay, state, td_field: str, shapes: tuple[str, ...]) -> list[str]:
    r"""The copies of O(N) arrays in the compiled program of one sample (batch 64) + update
    step of `replay` on a donated `state`, TD errors taken from the sampled `td_field` (not
    from the tree, so nothing forces a copy): each `copy(` whose result is one of `shapes`
    (HLO type patterns, regular expressions: r"f32\[256,16\]"). A buffer that works in place
    yields none."""

    def step(state, key):
        sample = replay.sample(state, key, 64)
        td = sample.items[td_field][:, 0] * 0.01
        return replay.update(state, sample.indices, td), sample.weights

    hlo = jax.jit(step, donate_argnums=0).lower(state, jax.random.key(0)).compile().as_text()
    return re.findall(rf"= (?:{'|'.join(shapes)})\{{[^}}]*\}} copy\(", hlo)
