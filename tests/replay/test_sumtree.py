"""The JAX sum tree against the naive sequential model, plus its documented edge cases."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_tree import NaiveTree, stratified_fractions
from scipy import stats

from hrl.replay import formats, sumtree

FANOUTS = [2, 4, 16, 64]
CAPACITIES = [1, 5, 64, 100, 257]  # a few, so jit caches stay warm across examples
PAD = 40  # batches are padded to one length with out-of-range (dropped) indices


def _padded(idx, pri, capacity):
    pad = PAD - len(idx)
    return (
        jnp.array(list(idx) + [capacity] * pad, jnp.int32),
        jnp.array(list(pri) + [0.0] * pad, jnp.float32),
    )


_update = jax.jit(sumtree.update)
_sample_from_bits = jax.jit(sumtree.sample_from_bits, static_argnames="stratified")
settings.register_profile("hrl", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hrl")


def _levels_equal_fixed(tree: sumtree.SumTree, naive: NaiveTree) -> None:
    for lvl, words in enumerate(tree.levels):
        got = np.asarray(words).reshape(-1).tolist()
        assert got == naive.words(lvl)[: len(got)], f"level {lvl} differs"


@st.composite
def op_streams(draw, fixed: bool):
    k = draw(st.sampled_from(FANOUTS))
    n = draw(st.sampled_from(CAPACITIES))
    batches = []
    for _ in range(draw(st.integers(1, 6))):
        b = draw(st.integers(1, 40))
        idx = draw(st.lists(st.integers(0, n - 1), min_size=b, max_size=b))
        hi = 4000.0 if fixed else 1e3
        pri = draw(
            st.lists(
                st.one_of(
                    st.just(0.0), st.floats(0.0, hi, width=32), st.floats(0, 2.0**-14, width=32)
                ),
                min_size=b,
                max_size=b,
            )
        )
        batches.append((idx, pri))
    return k, n, batches


@given(op_streams(fixed=True), st.integers(0, 2**32 - 1))
@settings(max_examples=60)
def test_fixed_point_tree_matches_naive_bit_for_bit(stream, seed):
    k, n, batches = stream
    fmt = formats.FixedPoint(32, 12)
    tree = sumtree.init(n, k, fmt)
    naive = NaiveTree(n, k, fixed=(32, 12))
    rng = np.random.default_rng(seed)
    for idx, pri in batches:
        tree = _update(tree, *_padded(idx, pri, n))
        naive.update(idx, pri)
        _levels_equal_fixed(tree, naive)
        if naive.levels[0][0] == 0:
            continue
        bits = rng.integers(0, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
        for stratified in (True, False):
            got = np.asarray(_sample_from_bits(tree, jnp.asarray(bits), stratified))
            fr = stratified_fractions(bits, 64) if stratified else [int(b) for b in bits]
            want = [naive.sample_fixed(f) for f in fr]
            assert got.tolist() == want
            assert all(naive.levels[-1][i] > 0 for i in got), "zero-priority leaf sampled"


@given(op_streams(fixed=False))
@settings(max_examples=60)
def test_float_tree_sums_match_naive(stream):
    k, n, batches = stream
    tree = sumtree.init(n, k, "float32")
    naive = NaiveTree(n, k)
    for idx, pri in batches:
        tree = _update(tree, *_padded(idx, pri, n))
        naive.update(idx, pri)
    # A subnormal priority may be flushed to 0 on the way (XLA:CPU runs flush-to-zero), or not.
    flush = lambda x: np.where(np.abs(x) < np.finfo(np.float32).tiny, 0.0, x)
    np.testing.assert_array_equal(flush(np.asarray(sumtree.leaves(tree))), flush(naive.leaves()))
    np.testing.assert_allclose(float(sumtree.total(tree)), naive.levels[0][0], rtol=1e-5,
                               atol=float(np.finfo(np.float32).tiny) * n)


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_duplicates_last_in_batch_wins(fmt):
    tree = sumtree.init(10, 4, fmt)
    tree = sumtree.update(tree, jnp.array([3, 7, 3, 3, 7]), jnp.array([1.0, 2.0, 5.0, 4.0, 8.0]))
    leaves = np.asarray(sumtree.leaves(tree))
    assert leaves[3] == 4.0 and leaves[7] == 8.0
    assert float(sumtree.total(tree)) == 12.0


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
# fanout 2 (the deepest trees, the slowest) in the long tier
@pytest.mark.parametrize("k", [pytest.param(k, marks=pytest.mark.long) if k == 2 else k
                               for k in FANOUTS])
def test_zero_leaves_never_sampled_and_last_nonzero_reachable(fmt, k):
    n = 1000
    pri = np.zeros(n, np.float32)
    pri[[0, 17, 999 - 3]] = [0.5, 2.0, 1.0]  # the last non-zero leaf is 996
    tree = sumtree.update(sumtree.init(n, k, fmt), jnp.arange(n), jnp.asarray(pri))
    extremes = jnp.array([0, 1, 2**31, 2**32 - 2, 2**32 - 1], jnp.uint32)
    top = sumtree.sample_from_bits(tree, extremes, stratified=False)
    assert int(top[-1]) == 996 and int(top[0]) == 0
    idx = np.asarray(sumtree.sample(tree, jax.random.key(0), 4096))
    assert set(idx.tolist()) == {0, 17, 996}


def test_fixed_point_round_up_keeps_tiny_subtrees_reachable():
    # One LSB at a leaf: with truncating parents this subtree would read as empty.
    k, n = 4, 64
    tree = sumtree.init(n, k, formats.FixedPoint(16, 8))
    lsb = 2.0**-8
    tree = sumtree.update(tree, jnp.array([5, 40]), jnp.array([lsb, 100.0], jnp.float32))
    assert all(int(level.reshape(-1).max()) > 0 for level in tree.levels)
    bits = jnp.arange(0, 2**32 - 1, 2**32 // 4096, dtype=jnp.uint32)
    hits = set(np.asarray(sumtree.sample_from_bits(tree, bits, stratified=False)).tolist())
    assert hits <= {5, 40} and 40 in hits
    words = np.asarray(sumtree.leaf_words(tree))
    naive = NaiveTree(n, k, fixed=(16, 8))
    naive.update([5, 40], [lsb, 100.0])
    reach = {naive.sample_fixed(f) for f in range(0, 2**32, 2**20)}
    assert 5 in reach and words[5] == 1  # every non-zero leaf is reachable


@pytest.mark.parametrize("k", [4, 16])
@pytest.mark.parametrize("fmt", ["float32", "fixed"])
@pytest.mark.parametrize("stratified", [True, False])
def test_sampling_frequencies_match_priorities(k, fmt, stratified):
    n = 37
    rng = np.random.default_rng(1234)
    pri = rng.uniform(0.0, 10.0, n).astype(np.float32)
    pri[[3, 11]] = 0.0
    tree = sumtree.update(sumtree.init(n, k, fmt), jnp.arange(n), jnp.asarray(pri))
    keys = jax.random.split(jax.random.key(7), 100)
    draws = jax.vmap(lambda key: sumtree.sample(tree, key, 1000, stratified))(keys)
    counts = np.bincount(np.asarray(draws).ravel(), minlength=n)
    assert counts[3] == 0 and counts[11] == 0
    live = pri > 0
    expected = pri[live] / pri[live].sum() * counts.sum()
    _, p_value = stats.chisquare(counts[live], expected)
    assert p_value > 1e-3, p_value


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_no_drift_after_a_million_random_operations(fmt):
    n, k, batch, steps = 5000, 16, 1000, 1000  # 10^6 priority writes
    tree = sumtree.init(n, k, fmt)

    @jax.jit
    def run(tree, key):
        def body(tree, key):
            ki, kp = jax.random.split(key)
            idx = jax.random.randint(ki, (batch,), 0, n)
            pri = jax.random.uniform(kp, (batch,), maxval=50.0)
            return sumtree.update(tree, idx, pri), None

        return jax.lax.scan(body, tree, jax.random.split(key, steps))[0]

    tree = run(tree, jax.random.key(3))
    if fmt == "fixed":
        words = [int(w) for w in np.asarray(sumtree.leaf_words(tree))]
        for _ in range(tree.depth, 0, -1):  # recompute every level from the leaves
            padded = words + [0] * (-len(words) % k)
            words = [-(-sum(padded[i : i + k]) // k) for i in range(0, len(padded), k)]
        assert words == [int(tree.levels[0][0])]
    else:
        exact = np.sum(np.asarray(sumtree.leaves(tree), np.float64))
        assert abs(float(sumtree.total(tree)) - exact) <= 1e-5 * exact


def test_update_and_sample_do_not_recompile():
    tree = sumtree.init(1000, 16, "float32")
    update = jax.jit(sumtree.update)
    tree = update(tree, jnp.arange(8), jnp.ones(8, jnp.float32))
    before = update._cache_size()
    tree = update(tree, jnp.arange(8) + 8, 2 * jnp.ones(8, jnp.float32))
    assert update._cache_size() == before
    sumtree.sample(tree, jax.random.key(0), 32)
    n = sumtree.sample._cache_size()
    sumtree.sample(tree, jax.random.key(1), 32)
    assert sumtree.sample._cache_size() == n


def test_vmap_over_independent_trees():
    trees = jax.vmap(lambda _: sumtree.init(100, 4, "fixed"))(jnp.arange(3))
    pri = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    trees = jax.vmap(sumtree.update)(trees, jnp.array([[0, 99]] * 3), pri)
    totals = jax.vmap(sumtree.total)(trees)
    np.testing.assert_array_equal(np.asarray(totals), [3.0, 7.0, 11.0])


def test_probabilities_and_large_capacity():
    n = 2**24
    tree = sumtree.init(n, 16, "float32")
    tree = sumtree.update(tree, jnp.array([0, n - 1]), jnp.array([1.0, 3.0]))
    np.testing.assert_allclose(
        np.asarray(sumtree.probabilities(tree, jnp.array([0, n - 1]))), [0.25, 0.75]
    )
    assert int(sumtree.sample_from_bits(tree, jnp.array([2**32 - 1], jnp.uint32), False)[0]) == (
        n - 1
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": 10, "fanout": 3}, "fanout"),
        ({"capacity": 10, "fanout": 128}, "fanout"),
        ({"capacity": 10, "fmt": "fixed:40:4"}, "word_bits"),
        ({"capacity": 10, "fmt": "half"}, "unknown priority format"),
        ({"capacity": 2**40, "fanout": 2, "fmt": "fixed"}, "depth"),
    ],
)
def test_bad_construction_names_the_problem(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sumtree.init(**kwargs)
