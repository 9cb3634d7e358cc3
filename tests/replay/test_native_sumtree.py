"""The native (C++ XLA FFI) sum-tree kernels against the JAX reference `hrl.replay.sumtree`.

What "matches" means, per format:
* fixed point: every word of every level bit-exact with the reference; sampled indices equal.
* float32: leaves bit-exact; inner nodes bit-exact with a sequential NumPy model (parents are
  left-to-right float32 sums), and within the float32 summation bound of the reference, whose
  own order depends on the shape XLA:CPU sees (loop emitter vs YNNPACK); sampled indices equal
  the reference's on the same tree (same prefix-sum order).
* min tree (the buffer's MinFloat32): bit-exact (min is exact in any order).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_checks import assert_float_within_bound, sequential_float_model, words

from hrl.replay import native
from hrl.replay import sumtree as ref
from hrl.replay.formats import MinFloat32

if not os.environ.get("CI"):
    # Off CI a machine without a C++ compiler skips; under CI=true the build error surfaces.
    pytestmark = pytest.mark.skipif(not native.available(), reason=str(native.unavailable_reason()))

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CAPACITIES = [1, 5, 100, 1000, 1337, 4097]  # mostly not powers of K
FANOUTS = [2, 4, 16, 64]
FORMATS = ["float32", "fixed", "fixed:16:6"]
BATCHES = [1, 8, 64, 300]  # 300 exceeds the rows of upper levels: the whole-level path

# One jitted function per operation; shapes repeat across examples, so compiles are shared.
ref_update = jax.jit(ref.update)
ref_sample = jax.jit(ref.sample_from_bits, static_argnames="stratified")
nat_update = jax.jit(native.update)
nat_sample = jax.jit(native.sample_from_bits, static_argnames="stratified")


priority_values = st.one_of(
    st.just(0.0),
    st.floats(2.0**-20, 1.0, width=32),
    st.floats(1.0, 3000.0, width=32),  # fixed:16:6 saturates above 64: exercised too
)


@st.composite
def op_streams(draw):
    capacity = draw(st.sampled_from(CAPACITIES))
    fanout = draw(st.sampled_from(FANOUTS))
    fmt = draw(st.sampled_from(FORMATS))
    n_ops = draw(st.integers(1, 4))
    ops = []
    for _ in range(n_ops):
        batch = draw(st.sampled_from(BATCHES))
        # Duplicates are likely (small pool), and a few indices fall outside [0, capacity).
        pool = draw(st.lists(st.integers(-2, capacity + 1), min_size=1, max_size=12))
        idx = draw(st.lists(st.sampled_from(pool), min_size=batch, max_size=batch))
        pri = draw(st.lists(priority_values, min_size=batch, max_size=batch))
        ops.append((np.asarray(idx, np.int32), np.asarray(pri, np.float32)))
    return capacity, fanout, fmt, ops


@SETTINGS
@given(op_streams())
def test_update_stream_matches_reference(stream):
    capacity, fanout, fmt, ops = stream
    tree_ref = ref.init(capacity, fanout, fmt)
    tree_nat = ref.init(capacity, fanout, fmt)
    for idx, pri in ops:
        tree_ref = ref_update(tree_ref, idx, pri)
        tree_nat = nat_update(tree_nat, idx, pri)
    got, want = words(tree_nat), words(tree_ref)
    assert np.array_equal(got[-1], want[-1]), "leaves differ"
    if fmt == "float32":
        for level, (g, m) in enumerate(zip(got, sequential_float_model(tree_nat), strict=True)):
            assert np.array_equal(g, m), f"level {level} differs from the sequential model"
        assert_float_within_bound(tree_nat, tree_ref)
    else:
        for level, (g, w) in enumerate(zip(got, want, strict=True)):
            assert np.array_equal(g, w), f"level {level} differs from the reference"


@st.composite
def filled_trees(draw):
    capacity = draw(st.sampled_from(CAPACITIES))
    fanout = draw(st.sampled_from(FANOUTS))
    fmt = draw(st.sampled_from(FORMATS))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    # Wide dynamic range and many zeros: rounding at the top of a row, unreachable leaves.
    pri = (rng.random(capacity) * np.exp(rng.uniform(-12, 12, capacity))).astype(np.float32)
    pri[rng.random(capacity) < draw(st.sampled_from([0.0, 0.5, 0.95]))] = 0.0
    if not pri.any():
        pri[rng.integers(capacity)] = 1.0
    tree = native.update(ref.init(capacity, fanout, fmt), np.arange(capacity), pri)
    batch = draw(st.sampled_from(BATCHES))
    bits = rng.integers(0, 2**32, batch, dtype=np.uint64).astype(np.uint32)
    bits[: min(batch, 2)] = [0xFFFFFFFF, 0][: min(batch, 2)]  # the ends of the range
    return tree, bits


@SETTINGS
@given(filled_trees(), st.booleans())
def test_sample_matches_reference(tree_and_bits, stratified):
    tree, bits = tree_and_bits
    got = np.asarray(nat_sample(tree, bits, stratified=stratified))
    want = np.asarray(ref_sample(tree, bits, stratified=stratified))
    np.testing.assert_array_equal(got, want)
    leaves = np.asarray(ref.leaves(tree))
    assert (leaves[got] > 0).all(), "sampled a zero-priority leaf"


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_duplicates_last_wins_and_out_of_range_dropped(fmt):
    tree = ref.init(50, 4, fmt)
    idx = np.array([3, 7, 3, -1, 50, 3, 1000, 7], np.int32)
    pri = np.array([1.0, 2.0, 3.0, 9.0, 9.0, 5.0, 9.0, 0.5], np.float32)
    got = native.update(tree, idx, pri)
    want = ref.update(tree, idx, pri)
    leaves = np.asarray(ref.leaves(got))
    assert leaves[3] == 5.0 and leaves[7] == 0.5
    assert np.count_nonzero(leaves) == 2
    for g, w in zip(words(got), words(want), strict=True):
        np.testing.assert_array_equal(g, w)


def test_min_tree_matches_reference():
    rng = np.random.default_rng(3)
    tree_ref = tree_nat = ref.init(1337, 16, MinFloat32())
    for batch in (64, 300, 1):
        idx = rng.integers(-2, 1340, batch).astype(np.int32)
        pri = (rng.random(batch) * 10).astype(np.float32)
        tree_ref = ref_update(tree_ref, idx, pri)
        tree_nat = nat_update(tree_nat, idx, pri)
    for g, w in zip(words(tree_nat), words(tree_ref), strict=True):
        np.testing.assert_array_equal(g, w)


def _sample_update_loop(tree_ops, tree, bits, priorities):
    def step(tree, xs):
        b, p = xs
        indices = tree_ops.sample_from_bits(tree, b)
        return tree_ops.update(tree, indices, p), indices

    return jax.lax.scan(step, tree, (bits, priorities))


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_inside_scan_matches_step_by_step_and_reference(fmt):
    rng = np.random.default_rng(0)
    capacity, steps, batch = 3000, 12, 32
    tree = ref.update(ref.init(capacity, 16, fmt), np.arange(capacity), rng.random(capacity))
    bits = rng.integers(0, 2**32, (steps, batch), dtype=np.uint64).astype(np.uint32)
    pri = rng.random((steps, batch)).astype(np.float32)
    loop = jax.jit(_sample_update_loop, static_argnums=0)
    tree_scan, idx_scan = loop(native, tree, bits, pri)
    # The same steps one eager call at a time.
    tree_eager, idx_eager = tree, []
    for b, p in zip(bits, pri, strict=True):
        i = native.sample_from_bits(tree_eager, b)
        tree_eager = native.update(tree_eager, i, p)
        idx_eager.append(np.asarray(i))
    np.testing.assert_array_equal(np.asarray(idx_scan), np.stack(idx_eager))
    for g, w in zip(words(tree_scan), words(tree_eager), strict=True):
        np.testing.assert_array_equal(g, w)
    if fmt == "fixed":  # float parents may differ from the reference in the last bits
        tree_ref, idx_ref = loop(ref, tree, bits, pri)
        np.testing.assert_array_equal(np.asarray(idx_scan), np.asarray(idx_ref))
        for g, w in zip(words(tree_scan), words(tree_ref), strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_vmap_over_trees(fmt):
    rng = np.random.default_rng(1)
    capacity, n_trees, batch = 700, 3, 16
    trees = [
        ref.update(ref.init(capacity, 4, fmt), np.arange(capacity), rng.random(capacity))
        for _ in range(n_trees)
    ]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *trees)
    idx = rng.integers(0, capacity, (n_trees, batch)).astype(np.int32)
    pri = rng.random((n_trees, batch)).astype(np.float32)
    bits = rng.integers(0, 2**32, (n_trees, batch), dtype=np.uint64).astype(np.uint32)
    updated = jax.jit(jax.vmap(native.update))(stacked, idx, pri)
    sampled = jax.jit(jax.vmap(native.sample_from_bits))(updated, bits)
    for t in range(n_trees):
        one = native.update(trees[t], idx[t], pri[t])
        for g, w in zip(words(jax.tree.map(lambda x, t=t: x[t], updated)), words(one), strict=True):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(
            np.asarray(sampled[t]), np.asarray(native.sample_from_bits(one, bits[t]))
        )


def test_no_recompile_and_update_in_place():
    rng = np.random.default_rng(2)
    tree = ref.init(5000, 16, "float32")
    # Fresh wrappers: jit caches are shared between jits of the same function object.
    update = jax.jit(lambda t, i, p: native.update(t, i, p), donate_argnums=0)
    sample = jax.jit(lambda t, b: native.sample_from_bits(t, b))
    for step in range(3):
        leaf_ptr = tree.levels[-1].unsafe_buffer_pointer()
        tree = update(
            tree,
            rng.integers(0, 5000, 64).astype(np.int32),
            rng.random(64).astype(np.float32),
        )
        # Donated and aliased: the kernel wrote the caller's leaf buffer, no O(N) copy.
        assert tree.levels[-1].unsafe_buffer_pointer() == leaf_ptr, f"copied at step {step}"
        sample(tree, rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32))
    assert update._cache_size() == 1
    assert sample._cache_size() == 1


def test_bad_input_is_named():
    tree = ref.init(100, 4, "float32")
    with pytest.raises(ValueError, match="indices must be a 1-D integer array"):
        native.update(tree, np.zeros((2, 2), np.int32), np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="priorities shape"):
        native.update(tree, np.zeros(3, np.int32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="bits must be 1-D"):
        native.sample_from_bits(tree, np.zeros((2, 2), np.uint32))
    with pytest.raises(ValueError, match="do not support sampling"):
        native.sample_from_bits(ref.init(100, 4, MinFloat32()), np.zeros(2, np.uint32))


def test_missing_compiler_gives_a_clear_error(monkeypatch):
    from hrl.replay.native import _build

    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(native.NativeBuildError, match="no C\\+\\+ compiler found"):
        _build.find_compiler()


def test_cache_key_follows_source_and_flags(monkeypatch, tmp_path):
    from hrl.replay.native import _build

    monkeypatch.setenv("HRL_CACHE_DIR", str(tmp_path))
    plain = native.library_path()
    assert plain.parent == tmp_path
    monkeypatch.setenv("HRL_NATIVE_CXXFLAGS", "-DHRL_UNUSED_FLAG")
    assert native.library_path() != plain
    assert _build.cxx_flags()[-1] == "-DHRL_UNUSED_FLAG"


@pytest.mark.slow
def test_concurrent_builds_in_an_empty_cache(tmp_path):
    """Two processes compiling into the same empty cache at once both load a whole library."""
    script = textwrap.dedent(
        """
        import numpy as np
        from hrl.replay import native, sumtree
        tree = native.update(sumtree.init(100, 4), np.arange(100), np.ones(100, np.float32))
        assert float(sumtree.total(tree)) == 100.0
        print(native.library_path())
        """
    )
    env = dict(os.environ, HRL_CACHE_DIR=str(tmp_path))
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1]
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(outs[0].strip())]


# ------------------------------------------------------------------ the buffer's one-call path


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
@pytest.mark.parametrize("fanout", FANOUTS)
def test_sample_with_key_equals_bits_descent_clamp_and_leaf_read(fmt, fanout):
    """`sample_with_key` = jax.random.bits (Threefry, reproduced in C++) + the reference
    descent + the clamp to the filled part + the leaf read, bit for bit."""
    rng = np.random.default_rng(fanout)
    capacity = 1337
    tree = ref.update(ref.init(capacity, fanout, fmt), np.arange(capacity), rng.random(capacity))
    keys = [jax.random.PRNGKey(3), jax.random.key(11), jax.random.fold_in(jax.random.key(2), 9)]
    for key in keys:
        words_of_key = native.threefry_key_words(key)
        assert words_of_key is not None
        for batch, size in ((1, capacity), (7, 900), (256, 40)):
            got_idx, got_words = native.sample_with_key(tree, words_of_key, size, batch)
            bits = jax.random.bits(key, (batch,), jnp.uint32)
            want_idx = jnp.minimum(ref.sample_from_bits(tree, bits), size - 1)
            np.testing.assert_array_equal(got_idx, want_idx)
            np.testing.assert_array_equal(got_words, tree.levels[-1].reshape(-1)[want_idx])


def test_threefry_words_only_where_the_bits_are_reproduced():
    assert native.threefry_key_words(jax.random.key(1, impl="rbg")) is None
    assert native.threefry_key_words(jnp.zeros(4, jnp.uint32)) is None  # not a 2-word key
    np.testing.assert_array_equal(native.threefry_key_words(jax.random.key(5)), [0, 5])
    with jax.threefry_partitionable(False):  # the other bits layout: fall back to XLA's bits
        assert native.threefry_key_words(jax.random.PRNGKey(5)) is None


def test_gather_fields_equals_indexing_with_clamped_indices():
    from hrl.replay.rows import RowLayout

    rng = np.random.default_rng(0)
    arrays = {
        "a": rng.standard_normal((50, 3, 2)).astype(np.float32),
        "b": rng.integers(0, 255, (50, 11)).astype(np.uint8),  # an odd field width
        "c": rng.integers(-9, 9, 50).astype(np.int32),
        "d": rng.random(50) < 0.5,
    }
    layout = RowLayout.of(jax.tree.map(lambda a: a[0], arrays))
    table = layout.pack(arrays)
    indices = np.array([0, 49, 7, 7, -3, 60, 12], np.int32)
    got = native.gather_fields(table, indices, layout)
    for name, a in arrays.items():
        np.testing.assert_array_equal(got[name], a[np.clip(indices, 0, 49)])
        assert got[name].dtype == a.dtype


def test_min_tree_with_a_nan_child_matches_reference():
    tree_ref = tree_nat = ref.init(100, 16, MinFloat32())
    idx = np.arange(0, 100, 7, dtype=np.int32)
    pri = np.linspace(1.0, 3.0, idx.size).astype(np.float32)
    pri[3] = np.nan
    tree_ref = ref_update(tree_ref, idx, pri)
    tree_nat = nat_update(tree_nat, idx, pri)
    for g, w in zip(words(tree_nat), words(tree_ref), strict=True):
        np.testing.assert_array_equal(g, w)  # NaN == NaN here: the NaN reaches the root
    assert np.isnan(np.asarray(tree_nat.levels[0])).all()


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
@pytest.mark.parametrize("weights", ["global", "batch"])
def test_replay_update_equals_the_reference_steps(fmt, weights):
    """The buffer's one-call update against its pure-JAX steps: leaves, min tree and the
    running max priority bit for bit (fixed point: every word), with duplicates, indices
    outside the filled part and non-finite TD errors in the batch."""
    from hrl.replay.buffer import make_prioritized_replay

    item = {"x": np.zeros(2, np.float32)}
    buffers = [
        make_prioritized_replay(500, fanout=4, fmt=fmt, weights=weights, impl=impl)
        for impl in ("xla", "native")
    ]
    items = {"x": np.ones((300, 2), np.float32)}
    states = [jax.jit(rb.add)(rb.init(item), items) for rb in buffers]
    rng = np.random.default_rng(2)
    for _ in range(5):
        idx = rng.integers(-3, 320, 64).astype(np.int32)  # some >= size 300, some < 0
        idx[5] = idx[9]  # a duplicate: the last one wins
        td = (rng.standard_normal(64) * 3).astype(np.float32)
        td[[2, 40]] = [np.nan, np.inf]
        states = [jax.jit(rb.update)(s, idx, td) for rb, s in zip(buffers, states, strict=True)]
    want, got = states
    np.testing.assert_array_equal(got.max_priority, want.max_priority)
    np.testing.assert_array_equal(ref.leaf_words(got.tree), ref.leaf_words(want.tree))
    if fmt == "fixed":
        for g, w in zip(words(got.tree), words(want.tree), strict=True):
            np.testing.assert_array_equal(g, w)
    if weights == "global":
        for g, w in zip(words(got.min_tree), words(want.min_tree), strict=True):
            np.testing.assert_array_equal(g, w)
    else:
        assert got.min_tree is None


# ------------------------------------------------------------------ vmap: all instances in one call


def stack(items):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *items)


def take(tree, *i):
    return jax.tree.map(lambda x: x[i], tree)


def assert_same_words(got, want):
    for g, w in zip(words(got), words(want), strict=True):
        np.testing.assert_array_equal(g, w)


def filled(rng, capacity, fanout, fmt):
    """A tree with random priorities and some zero leaves (different per call)."""
    pri = rng.random(capacity).astype(np.float32)
    pri[rng.random(capacity) < 0.3] = 0.0
    return ref.update(ref.init(capacity, fanout, fmt), np.arange(capacity), pri)


def random_bits(rng, shape):
    return rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)


@pytest.mark.parametrize("fmt", ["float32", "fixed", "min"])
def test_vmapped_update_equals_each_unbatched_update(fmt):
    """3 trees in one call: each equals its own unbatched update (and the reference); a tree
    shared across the batch (in_axes None) is updated separately for each instance."""
    rng = np.random.default_rng(4)
    fmt = MinFloat32() if fmt == "min" else fmt
    trees = [filled(rng, 700, 4, fmt) for _ in range(3)]
    idx = rng.integers(-2, 702, (3, 64)).astype(np.int32)  # a few out of range: dropped
    idx[:, 9] = idx[:, 5]  # duplicates: the last one wins
    pri = rng.random((3, 64)).astype(np.float32)
    got = jax.jit(jax.vmap(native.update))(stack(trees), idx, pri)
    shared = jax.jit(jax.vmap(native.update, in_axes=(None, 0, 0)))(trees[0], idx, pri)
    for t in range(3):
        one = nat_update(trees[t], idx[t], pri[t])
        assert_same_words(take(got, t), one)
        assert_same_words(take(shared, t), nat_update(trees[0], idx[t], pri[t]))
        want = ref_update(trees[t], idx[t], pri[t])
        if fmt == "float32":  # float parents may differ from the reference in the last bits
            np.testing.assert_array_equal(words(one)[-1], words(want)[-1])
        else:
            assert_same_words(one, want)


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_vmapped_sample_equals_each_unbatched_sample(fmt):
    rng = np.random.default_rng(5)
    trees = [filled(rng, 1337, 16, fmt) for _ in range(3)]
    bits = random_bits(rng, (3, 64))
    for stratified in (True, False):
        sample = jax.jit(
            jax.vmap(functools.partial(native.sample_from_bits, stratified=stratified))
        )
        got = sample(stack(trees), bits)
        shared = jax.jit(
            jax.vmap(
                functools.partial(native.sample_from_bits, stratified=stratified),
                in_axes=(None, 0),
            )
        )(trees[0], bits)  # one tree, read by every instance (a size-1 vmapped axis)
        for t in range(3):
            one = nat_sample(trees[t], bits[t], stratified=stratified)
            np.testing.assert_array_equal(got[t], one)
            np.testing.assert_array_equal(one, ref_sample(trees[t], bits[t], stratified=stratified))
            np.testing.assert_array_equal(
                shared[t], nat_sample(trees[0], bits[t], stratified=stratified)
            )


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_vmapped_sample_with_key_equals_each_unbatched_call(fmt):
    rng = np.random.default_rng(6)
    capacity, batch = 1337, 64
    trees = [filled(rng, capacity, 16, fmt) for _ in range(3)]
    rows = rng.integers(0, 2**32, (3, capacity, 5), dtype=np.uint64).astype(np.uint32)
    keys = jax.random.split(jax.random.key(7), 3)
    key_words = jnp.stack([native.threefry_key_words(k) for k in keys])
    sizes = np.array([capacity, 900, 40], np.int32)

    def call(tree, kw, size, r):
        return native.sample_with_key(tree, kw, size, batch, rows=r)

    got_idx, got_words = jax.jit(jax.vmap(call))(stack(trees), key_words, sizes, rows)
    shared = jax.jit(jax.vmap(call, in_axes=(None, 0, 0, None)))(
        trees[0], key_words, sizes, rows[0]
    )
    for t in range(3):
        idx, w = jax.jit(call)(trees[t], key_words[t], sizes[t], rows[t])
        np.testing.assert_array_equal(got_idx[t], idx)
        np.testing.assert_array_equal(got_words[t], w)
        bits = jax.random.bits(keys[t], (batch,), jnp.uint32)
        want = jnp.minimum(ref.sample_from_bits(trees[t], bits), sizes[t] - 1)
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(w, trees[t].levels[-1].reshape(-1)[want])
        idx0, w0 = jax.jit(call)(trees[0], key_words[t], sizes[t], rows[0])
        np.testing.assert_array_equal(shared[0][t], idx0)
        np.testing.assert_array_equal(shared[1][t], w0)


def test_vmapped_gather_fields_equals_each_unbatched_gather():
    from hrl.replay.rows import RowLayout

    rng = np.random.default_rng(7)
    arrays = {
        "a": rng.standard_normal((3, 50, 3, 2)).astype(np.float32),
        "b": rng.integers(0, 255, (3, 50, 11)).astype(np.uint8),  # an odd field width
        "c": rng.random((3, 50)) < 0.5,
    }
    layout = RowLayout.of(jax.tree.map(lambda a: a[0, 0], arrays))
    tables = jax.vmap(layout.pack)(arrays)
    indices = rng.integers(-3, 60, (3, 9)).astype(np.int32)  # some clamped at either end

    def gather(table, idx):
        return native.gather_fields(table, idx, layout)

    got = jax.jit(jax.vmap(gather))(tables, indices)
    shared = jax.jit(jax.vmap(gather, in_axes=(None, 0)))(tables[0], indices)
    for t in range(3):
        one = jax.jit(gather)(tables[t], indices[t])
        for name, a in arrays.items():
            np.testing.assert_array_equal(got[name][t], one[name])
            np.testing.assert_array_equal(one[name], a[t][np.clip(indices[t], 0, 49)])
            np.testing.assert_array_equal(shared[name][t], a[0][np.clip(indices[t], 0, 49)])


def _buffers(fmt, weights, n_states, rng):
    """The xla and native buffers and `n_states` different filled states of each."""
    from hrl.replay.buffer import make_prioritized_replay

    buffers = [
        make_prioritized_replay(500, fanout=4, fmt=fmt, weights=weights, impl=impl)
        for impl in ("xla", "native")
    ]
    item = {"x": np.zeros(2, np.float32)}
    states = []
    for rb in buffers:
        add = jax.jit(rb.add)
        states.append(
            [add(rb.init(item), {"x": np.full((300, 2), s, np.float32)}) for s in range(n_states)]
        )
    # Different priorities per state, through the reference path (same for both buffers).
    for s in range(n_states):
        idx = rng.integers(0, 300, 200).astype(np.int32)
        td = rng.standard_normal(200).astype(np.float32)
        new = jax.jit(buffers[0].update)(states[0][s], idx, td)
        states[0][s] = new
        states[1][s] = states[1][s].replace(
            tree=new.tree, min_tree=new.min_tree, max_priority=new.max_priority
        )
    return buffers, states


def assert_same_state(got, want, fmt):
    np.testing.assert_array_equal(got.max_priority, want.max_priority)
    np.testing.assert_array_equal(ref.leaf_words(got.tree), ref.leaf_words(want.tree))
    if fmt == "fixed":
        assert_same_words(got.tree, want.tree)
    if want.min_tree is not None:
        assert_same_words(got.min_tree, want.min_tree)


@pytest.mark.parametrize(("fmt", "weights"), [("float32", "global"), ("fixed", "batch")])
def test_vmapped_replay_update_equals_each_unbatched_update(fmt, weights):
    rng = np.random.default_rng(8)
    (xla, nat), (xla_states, nat_states) = _buffers(fmt, weights, 3, rng)
    idx = rng.integers(-3, 320, (3, 64)).astype(np.int32)  # some >= size 300, some < 0
    idx[:, 9] = idx[:, 5]
    td = (rng.standard_normal((3, 64)) * 3).astype(np.float32)
    td[:, [2, 40]] = [np.nan, np.inf]
    got = jax.jit(jax.vmap(nat.update))(stack(nat_states), idx, td)
    for t in range(3):
        one = jax.jit(nat.update)(nat_states[t], idx[t], td[t])
        assert_same_state(take(got, t), one, "fixed")  # same kernel: every word
        assert_same_state(one, jax.jit(xla.update)(xla_states[t], idx[t], td[t]), fmt)


def test_nested_vmap_two_by_two():
    """A 2x2 grid of buffers through sample, gather and update in one nested vmap, and a tree
    shared along the inner axis (a size-1 vmapped dimension in the middle)."""
    rng = np.random.default_rng(9)
    (xla, nat), (xla_states, nat_states) = _buffers("fixed", "global", 4, rng)
    keys = jax.random.split(jax.random.key(3), 4)
    td = (rng.standard_normal((4, 32)) * 2).astype(np.float32)

    def step(rb, state, key, td):
        sample = rb.sample(state, key, 32)
        return rb.update(state, sample.indices, td), sample

    def grid(x):
        return jax.tree.map(lambda a: a.reshape((2, 2) + a.shape[1:]), x)

    nested = jax.jit(jax.vmap(jax.vmap(functools.partial(step, nat))))
    got_state, got_sample = nested(grid(stack(nat_states)), grid(keys), grid(td))
    for t in range(4):
        i, j = divmod(t, 2)
        one_state, one_sample = jax.jit(functools.partial(step, nat))(nat_states[t], keys[t], td[t])
        assert_same_state(take(got_state, i, j), one_state, "fixed")
        for g, w in zip(
            jax.tree.leaves(take(got_sample, i, j)), jax.tree.leaves(one_sample), strict=True
        ):
            np.testing.assert_array_equal(g, w)
        want_state, want_sample = jax.jit(functools.partial(step, xla))(
            xla_states[t], keys[t], td[t]
        )
        np.testing.assert_array_equal(one_sample.indices, want_sample.indices)
        assert_same_state(one_state, want_state, "fixed")

    trees = [s.tree for s in nat_states[:2]]
    bits = random_bits(rng, (2, 2, 16))
    inner_shared = jax.vmap(native.sample_from_bits, in_axes=(None, 0))
    got = jax.jit(jax.vmap(inner_shared))(stack(trees), bits)
    for i, j in np.ndindex(2, 2):
        np.testing.assert_array_equal(got[i, j], nat_sample(trees[i], bits[i, j]))


def _tree_level_copies(hlo: str, level_shape) -> list[str]:
    """Instructions of compiled HLO that copy or slice out a whole leaf level (batched or one
    instance's): what the "sequential" vmap of the kernels compiled to inside a loop."""
    dims = "|".join(",".join(map(str, level_shape[k:])) for k in (0, 1))
    pattern = rf"= \w+\[(1,)?({dims})\]\S* (copy|dynamic-slice|dynamic-update-slice)\("
    return [line.strip() for line in hlo.splitlines() if re.search(pattern, line)]


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_vmapped_calls_inside_scan_stay_in_place(fmt):
    """vmap inside lax.scan with the stacked trees in the carry: each tree equals its own
    unbatched scan, and the compiled loop neither copies nor slices a leaf level."""
    rng = np.random.default_rng(10)
    steps, batch = 6, 32
    trees = [filled(rng, 3000, 16, fmt) for _ in range(3)]
    bits = random_bits(rng, (steps, 3, batch))
    pri = rng.random((steps, 3, batch)).astype(np.float32)

    def loop(stacked, bits, pri):
        def step(tree, xs):
            def one(tree, b, p):
                indices = native.sample_from_bits(tree, b)
                return native.update(tree, indices, p), indices

            return jax.vmap(one)(tree, *xs)

        return jax.lax.scan(step, stacked, (bits, pri))

    stacked = stack(trees)
    level_shape = stacked.levels[-1].shape
    run = jax.jit(loop, donate_argnums=0)
    assert _tree_level_copies(run.lower(stacked, bits, pri).compile().as_text(), level_shape) == []
    got_tree, got_idx = run(stacked, bits, pri)
    one_loop = jax.jit(_sample_update_loop, static_argnums=0)
    for t in range(3):
        one_tree, one_idx = one_loop(native, trees[t], bits[:, t], pri[:, t])
        np.testing.assert_array_equal(got_idx[:, t], one_idx)
        assert_same_words(take(got_tree, t), one_tree)
        if fmt == "fixed":
            ref_tree, ref_idx = one_loop(ref, trees[t], bits[:, t], pri[:, t])
            np.testing.assert_array_equal(one_idx, ref_idx)
            assert_same_words(one_tree, ref_tree)


def test_vmapped_update_in_place_when_donated():
    rng = np.random.default_rng(11)
    stacked = stack([filled(rng, 5000, 16, "float32") for _ in range(3)])
    update = jax.jit(jax.vmap(lambda t, i, p: native.update(t, i, p)), donate_argnums=0)
    leaf_ptr = stacked.levels[-1].unsafe_buffer_pointer()
    stacked = update(
        stacked,
        rng.integers(0, 5000, (3, 64)).astype(np.int32),
        rng.random((3, 64)).astype(np.float32),
    )
    assert stacked.levels[-1].unsafe_buffer_pointer() == leaf_ptr
