"""The Pallas sum-tree kernels against the JAX reference `hrl.replay.sumtree`.

On a CPU (CI) the kernels run in Pallas' interpret mode: the same kernel bodies, as JAX ops.
On a GPU the very same tests compile them through Triton (`test_compiled_on_gpu` says which).
What "matches" means, per format (as for the native kernels):
* fixed point: every word of every level bit-exact with the reference; sampled indices equal.
* float32: leaves bit-exact; parents bit-exact with left-to-right float32 sums of their
  children and within the float32 summation bound of the reference; sampled indices equal the
  reference's on the same tree.
* min tree: bit-exact.
Interpret mode compiles slowly, so the cases are few and chosen: fanouts 2, 4 and 16, sizes that
are not powers of K, batches with duplicates, out-of-range indices and a partial last block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tree_checks import assert_float_within_bound, sequential_float_model, words

from hrl.config import config_from_dict
from hrl.replay import pallas_kernels as pk
from hrl.replay import sumtree as ref
from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.formats import MinFloat32

CASES = [(37, 2), (1000, 4), (5000, 16)]  # (capacity, fanout)
FORMATS = ["float32", "fixed", "fixed:16:6"]


def filled(capacity, fanout, fmt, seed=0, kernels=ref):
    rng = np.random.default_rng(seed)
    pri = (rng.random(capacity) * np.exp(rng.uniform(-8, 8, capacity))).astype(np.float32)
    pri[rng.random(capacity) < 0.3] = 0.0  # unreachable leaves
    return kernels.update(ref.init(capacity, fanout, fmt), np.arange(capacity), pri)


def update_batch(capacity, seed, batch=300):
    """Duplicates likely (a small pool), a few indices outside [0, capacity)."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(-2, capacity + 2, 24)
    idx = rng.choice(pool, batch).astype(np.int32)
    pri = (rng.random(batch) * 5).astype(np.float32)
    pri[::7] = 0.0
    return idx, pri


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("capacity,fanout", CASES)
def test_sample_equals_reference(capacity, fanout, fmt):
    tree = filled(capacity, fanout, fmt)
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 200, dtype=np.uint64).astype(np.uint32)
    bits[:2] = [0xFFFFFFFF, 0]  # the ends of the range
    for stratified in (True, False):
        got = np.asarray(pk.sample_from_bits(tree, bits, stratified))
        want = np.asarray(ref.sample_from_bits(tree, bits, stratified))
        np.testing.assert_array_equal(got, want)
    assert (np.asarray(ref.leaves(tree))[got] > 0).all(), "sampled a zero-priority leaf"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("capacity,fanout", CASES)
def test_update_matches_reference(capacity, fanout, fmt):
    tree_ref, tree_pk = filled(capacity, fanout, fmt), filled(capacity, fanout, fmt, kernels=pk)
    for seed in (2, 3):
        idx, pri = update_batch(capacity, seed)
        tree_ref = ref.update(tree_ref, idx, pri)
        tree_pk = pk.update(tree_pk, idx, pri)
    got, want = words(tree_pk), words(tree_ref)
    assert np.array_equal(got[-1], want[-1]), "leaves differ"
    if fmt == "float32":
        for level, (g, m) in enumerate(zip(got, sequential_float_model(tree_pk), strict=True)):
            assert np.array_equal(g, m), f"level {level} differs from left-to-right sums"
        assert_float_within_bound(tree_pk, tree_ref)
    else:
        for level, (g, w) in enumerate(zip(got, want, strict=True)):
            assert np.array_equal(g, w), f"level {level} differs from the reference"


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_duplicates_last_wins_and_out_of_range_dropped(fmt):
    tree = ref.init(50, 4, fmt)
    idx = np.array([3, 7, 3, -1, 50, 3, 1000, 7], np.int32)
    pri = np.array([1.0, 2.0, 3.0, 9.0, 9.0, 5.0, 9.0, 0.5], np.float32)
    got = pk.update(tree, idx, pri)
    leaves = np.asarray(ref.leaves(got))
    assert leaves[3] == 5.0 and leaves[7] == 0.5
    assert np.count_nonzero(leaves) == 2
    for g, w in zip(words(got), words(ref.update(tree, idx, pri)), strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("batch", [300, 1500])  # several blocks in one program; per level
def test_both_update_paths_match_reference(batch, monkeypatch):
    """Batches above ONE_PROGRAM_MAX_BATCH take the per-level path (sort, then one launch per
    level); the rest one program. Both give the reference's words (fixed point)."""
    monkeypatch.setattr(pk, "ONE_PROGRAM_MAX_BATCH", 1024)
    tree = filled(700, 4, "fixed")
    idx, pri = update_batch(700, 8, batch=batch)
    for g, w in zip(words(pk.update(tree, idx, pri)), words(ref.update(tree, idx, pri)),
                    strict=True):
        np.testing.assert_array_equal(g, w)


def test_min_tree_matches_reference():
    tree_ref = tree_pk = ref.init(1337, 16, MinFloat32())
    for seed in (4, 5):
        idx, pri = update_batch(1337, seed)
        tree_ref = ref.update(tree_ref, idx, pri)
        tree_pk = pk.update(tree_pk, idx, pri)
    for g, w in zip(words(tree_pk), words(tree_ref), strict=True):
        np.testing.assert_array_equal(g, w)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="min tree cannot be sampled"):
        pk.sample_from_bits(ref.init(10, 4, MinFloat32()), np.zeros(4, np.uint32))
    with pytest.raises(ValueError, match="bits must be 1-D"):
        pk.sample_from_bits(ref.init(10, 4), np.zeros((2, 2), np.uint32))
    with pytest.raises(ValueError, match="shape"):
        pk.update(ref.init(10, 4), np.arange(3), np.ones(4, np.float32))


# Half a minute of interpreted Pallas; the kernels' equality with the reference is above.
@pytest.mark.long
def test_vmapped_instances_equal_one_at_a_time():
    trees = [filled(300, 4, "fixed", seed) for seed in range(3)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *trees)
    bits = np.random.default_rng(6).integers(0, 2**32, (3, 64), dtype=np.uint64)
    bits = bits.astype(np.uint32)
    idx, pri = update_batch(300, 7, batch=64)
    both = jax.vmap(lambda t, b: (pk.sample_from_bits(t, b), pk.update(t, idx, pri)))
    samples, updated = both(stacked, bits)
    for i, tree in enumerate(trees):
        np.testing.assert_array_equal(samples[i], ref.sample_from_bits(tree, bits[i]))
        want = words(ref.update(tree, idx, pri))
        got = words(jax.tree.map(lambda x, i=i: x[i], updated))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fmt", ["fixed", "fixed:16:6"])
def test_buffer_impl_pallas_equals_xla(fmt):
    """The buffer on the Pallas kernels: the same samples, weights and trees as on the jnp
    tree, step after step. (Fixed point only: float32 parents follow each backend's summation
    order, so float32 runs may part after a rounding difference; see the bound tests above.)"""
    example = {"obs": jnp.zeros(3), "action": jnp.int32(0)}
    runs = []
    for impl in ("xla", "pallas"):
        rb = make_prioritized_replay(300, fanout=4, fmt=fmt, impl=impl)

        @jax.jit
        def step(state, key, i, rb=rb):
            k_sample, k_td = jax.random.split(key)
            items = {"obs": jnp.full((8, 3), i, jnp.float32), "action": jnp.full(8, i, jnp.int32)}
            state = rb.add(state, items)
            sample = rb.sample(state, k_sample, 32)
            state = rb.update(state, sample.indices, jax.random.normal(k_td, (32,)))
            return state, (sample.indices, sample.weights, sample.items["action"])

        state, outs = rb.init(example), []
        for i, key in enumerate(jax.random.split(jax.random.PRNGKey(0), 50)):
            state, out = step(state, key, i)
            outs.append(jax.tree.map(np.asarray, out))
        runs.append((state, outs))
    (s_xla, o_xla), (s_pk, o_pk) = runs
    for a, b in zip(o_xla, o_pk, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    for tree_pk, tree_xla in ((s_pk.tree, s_xla.tree), (s_pk.min_tree, s_xla.min_tree)):
        for got, want in zip(words(tree_pk), words(tree_xla), strict=True):
            np.testing.assert_array_equal(got, want)


def test_config_accepts_pallas_and_names_bad_impl():
    cfg = config_from_dict({"algo": "dqn", "env": {"name": "gymnax:CartPole-v1"},
                            "replay": {"impl": "pallas"}})
    assert cfg.replay.impl == "pallas"
    with pytest.raises(ValueError, match="impl"):
        make_prioritized_replay(100, impl="cuda")


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a GPU (CI has none)")
def test_compiled_on_gpu():
    """On a GPU the tests above ran the compiled Triton kernels, not the interpreter."""
    assert not pk.interpret_mode()
    assert make_prioritized_replay(1024)._kernels is pk.PerDeviceKernels


def test_per_device_kernels_run_the_cpu_kernels_on_a_cpu():
    """`impl="auto"` on a GPU machine uses `PerDeviceKernels`: a computation placed on a CPU
    gets the CPU's kernels (native where they build; no Pallas lowering for the CPU), with the
    reference's results bit for bit, and the native kernels are what it lowers to."""
    tree = filled(300, 4, "fixed")
    bits = np.arange(64, dtype=np.uint32) * np.uint32(0x9E3779B9)
    idx, pri = update_batch(300, 9, batch=64)
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        got_idx = jax.jit(pk.PerDeviceKernels.sample_from_bits)(tree, bits)
        got_tree = jax.jit(pk.PerDeviceKernels.update)(tree, idx, pri)
    np.testing.assert_array_equal(got_idx, ref.sample_from_bits(tree, bits))
    for g, w in zip(words(got_tree), words(ref.update(tree, idx, pri)), strict=True):
        np.testing.assert_array_equal(g, w)
    from hrl.replay import native

    if native.available():
        with jax.default_device(cpu):
            hlo = jax.jit(pk.PerDeviceKernels.update).lower(tree, idx, pri).as_text()
        assert "hrl_sumtree_update" in hlo
