"""The prioritized replay buffer: storage ring, priorities, IS weights and bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tree_checks import copies_per_step

from hrl.replay import sumtree
from hrl.replay.buffer import make_prioritized_replay

EXAMPLE = {"obs": jnp.zeros(3, jnp.float32), "action": jnp.int32(0)}


def _items(start, m):
    ids = np.arange(start, start + m)
    return {
        "obs": jnp.asarray(np.stack([ids, ids, ids], 1), jnp.float32),
        "action": jnp.asarray(ids, jnp.int32),
    }


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_ring_wraps_and_overwrites_oldest(fmt):
    rb = make_prioritized_replay(10, fanout=4, fmt=fmt)
    state = rb.init(EXAMPLE)
    for start in (0, 7, 14):  # 21 items into 10 slots
        state = rb.add(state, _items(start, 7))
    assert int(state.size) == 10 and int(state.insert_pos) == 1 and int(state.added) == 21
    stored = np.asarray(state.items["action"]).tolist()
    assert stored == [20, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    np.testing.assert_array_equal(np.asarray(state.items["obs"])[:, 2], stored)
    sample = rb.sample(state, jax.random.key(0), 10)
    np.testing.assert_array_equal(
        np.asarray(sample.items["action"]), np.asarray(state.items["action"])[sample.indices]
    )


def test_new_items_get_max_priority_and_weights_follow_the_formula():
    alpha, beta, eps = 0.7, 0.5, 1e-3
    rb = make_prioritized_replay(50, alpha=alpha, eps=eps, fanout=4)
    state = rb.add(rb.init(EXAMPLE), _items(0, 8))
    td = np.array([0.5, -2.0, 0.0, 3.0, 1.0, 0.25, -0.1, 4.0], np.float32)
    state = rb.update(state, jnp.arange(8), jnp.asarray(td))
    assert float(state.max_priority) == pytest.approx(4.0 + eps)
    state = rb.add(state, _items(8, 2))  # these two get max priority 4 + eps
    raw = np.concatenate([np.abs(td) + eps, [4.0 + eps] * 2])
    p = raw.astype(np.float64) ** alpha
    probs = p / p.sum()
    sample = rb.sample(state, jax.random.key(1), 10, beta=beta)
    idx = np.asarray(sample.indices)
    np.testing.assert_allclose(np.asarray(sample.probabilities), probs[idx], rtol=1e-5)
    n = 10
    want = (n * probs[idx]) ** -beta / ((n * probs.min()) ** -beta)
    np.testing.assert_allclose(np.asarray(sample.weights), want, rtol=1e-5)
    assert float(jnp.max(sample.weights)) <= 1.0


def test_batch_normalised_weights_need_no_min_tree():
    rb = make_prioritized_replay(20, fanout=4, weights="batch")
    state = rb.add(rb.init(EXAMPLE), _items(0, 20))
    state = rb.update(state, jnp.arange(20), jnp.linspace(0.1, 2.0, 20))
    assert state.min_tree is None
    sample = rb.sample(state, jax.random.key(2), 16)
    assert float(jnp.max(sample.weights)) == pytest.approx(1.0)


def test_given_priorities_on_add_and_the_whole_loop_jits():
    rb = make_prioritized_replay(64, fanout=4)
    state = rb.add(rb.init(EXAMPLE), _items(0, 4), priorities=jnp.array([0.0, 1.0, 0.0, 1.0]))
    idx = np.asarray(rb.sample(state, jax.random.key(3), 4).indices)
    assert set(idx.tolist()) <= {1, 3}

    @jax.jit
    def step(state, key):
        sample = rb.sample(state, key, 4)
        td = sample.items["obs"][:, 0] - 1.0
        return rb.update(rb.add(state, _items(0, 2)), sample.indices, td)

    for i in range(3):
        state = step(state, jax.random.key(i))
    assert int(state.size) == 10


@pytest.mark.parametrize("impl", ["xla", "auto"])
def test_jitted_policies_for_values_that_cannot_be_checked(impl):
    rb = make_prioritized_replay(16, fanout=4, impl=impl)
    state = rb.add(rb.init(EXAMPLE), _items(0, 4))
    update = jax.jit(rb.update)
    state = update(state, jnp.array([0, 1, 99, -1]), jnp.array([jnp.nan, 2.0, 5.0, 5.0]))
    leaves = np.asarray(sumtree.leaves(state.tree))
    # NaN -> the max priority seen before this update (1.0, the initial max given to the
    # added items); out-of-range rows dropped; the batch's finite |td| + eps raises the max.
    assert leaves[0] == pytest.approx(1.0) and leaves[4:].sum() == 0
    assert float(state.max_priority) == pytest.approx(2.0 + 1e-6)
    empty = jax.jit(lambda s, k: rb.sample(s, k, 4))(rb.init(EXAMPLE), jax.random.key(0))
    assert float(jnp.sum(empty.weights)) == 0.0


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
@pytest.mark.parametrize("impl", ["xla", "auto", "pallas"])
def test_jitted_add_with_bad_priorities_keeps_the_tree_valid(impl, fmt):
    """Inside jit, NaN, inf and negative priorities on `add` take the maximum priority seen
    (they cannot raise there); the root stays finite and later clean adds stay clean."""
    rb = make_prioritized_replay(16, fanout=4, fmt=fmt, impl=impl)
    add = jax.jit(rb.add)
    state = add(rb.init(EXAMPLE), _items(0, 2), jnp.array([3.0, 0.5]))
    state = add(state, _items(2, 4), jnp.array([jnp.nan, jnp.inf, -1.0, 0.25]))
    state = add(state, _items(6, 2), jnp.array([1.0, 1.0]))
    leaves = np.asarray(sumtree.leaves(state.tree))
    stored_max = float(rb.fmt.decode(rb.fmt.encode(3.0**0.6), 0, 0, 4))
    np.testing.assert_allclose(leaves[2:5], stored_max, rtol=1e-6)  # the three bad ones
    assert np.isfinite(float(sumtree.total(state.tree)))
    # (fixed point rounds parents up, a few LSB of the root's coarser grid)
    assert float(sumtree.total(state.tree)) == pytest.approx(leaves.sum(), rel=1e-3)
    assert float(state.max_priority) == pytest.approx(3.0)
    assert np.isfinite(float(sumtree.total(state.min_tree)))


def test_sumtree_clamps_negative_priorities_to_zero():
    tree = sumtree.update(sumtree.init(8, 2), jnp.array([0, 1]), jnp.array([-1.0, 2.0]))
    assert float(sumtree.leaves(tree)[0]) == 0.0
    assert float(sumtree.total(tree)) == 2.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rb, s: rb.sample(rb.init(EXAMPLE), jax.random.key(0), 4), "empty"),
        (lambda rb, s: rb.sample(s, jax.random.key(0), 9), "exceeds the 4 items"),
        (lambda rb, s: rb.sample(s, jax.random.key(0), 0), "batch_size"),
        (lambda rb, s: rb.update(s, jnp.array([4]), jnp.array([1.0])), r"index 4 .* \[0, 4\)"),
        (lambda rb, s: rb.update(s, jnp.array([0]), jnp.array([jnp.inf])), "finite"),
        (lambda rb, s: rb.update(s, jnp.array([0, 1]), jnp.array([1.0])), "equal 1-D"),
        (lambda rb, s: rb.add(s, _items(0, 2), priorities=jnp.array([1.0, -1.0])), ">= 0"),
        (lambda rb, s: rb.add(s, _items(0, 2), priorities=jnp.array([1.0])), "shape"),
        (lambda rb, s: rb.add(s, {"obs": jnp.zeros((2, 4)), "action": jnp.zeros(2, jnp.int32)}),
         r"\['obs'\].*shape"),
        (lambda rb, s: rb.add(s, {"obs": jnp.zeros((2, 3)), "action": jnp.zeros(2)}),
         r"\['action'\].*dtype"),
        (lambda rb, s: rb.add(s, {"obs": jnp.zeros((2, 3))}), "structure"),
        (lambda rb, s: rb.add(s, _items(0, 65)), "exceeds capacity"),
    ],
)
def test_bad_input_gets_a_clear_error(call, message):
    rb = make_prioritized_replay(64, fanout=4)
    state = rb.add(rb.init(EXAMPLE), _items(0, 4))
    with pytest.raises(ValueError, match=message):
        call(rb, state)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": 8, "alpha": 1.5}, "alpha"),
        ({"capacity": 8, "eps": 0.0}, "eps"),
        ({"capacity": 8, "weights": "max"}, "weights"),
    ],
)
def test_bad_configuration_names_the_key(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_prioritized_replay(**kwargs)


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_native_and_xla_kernels_give_the_same_buffer(fmt):
    pytest.importorskip("hrl.replay.native")
    from hrl.replay import native

    if not native.available():
        pytest.skip(native.unavailable_reason())
    buffers = [make_prioritized_replay(300, fanout=4, fmt=fmt, impl=i) for i in ("xla", "native")]
    states = [rb.add(rb.init(EXAMPLE), _items(0, 200)) for rb in buffers]
    rng = np.random.default_rng(5)
    for step in range(20):
        key = jax.random.key(step)
        td = jnp.asarray(rng.exponential(size=32).astype(np.float32))
        samples = [rb.sample(s, key, 32) for rb, s in zip(buffers, states, strict=True)]
        np.testing.assert_array_equal(samples[0].indices, samples[1].indices)
        np.testing.assert_allclose(samples[0].weights, samples[1].weights, rtol=1e-5)
        states = [
            rb.update(s, smp.indices, td)
            for rb, s, smp in zip(buffers, states, samples, strict=True)
        ]
    if fmt == "fixed":
        for a, b in zip(states[0].tree.levels, states[1].tree.levels, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("impl", ["xla", "native"])
def test_a_jitted_sample_update_step_does_not_copy_the_trees(impl):
    """Sampling reads the trees and the update writes them in place: the buffer orders the
    two, so a donated state is not copied (O(N)) on every step even when the TD errors do
    not depend on anything read from the trees. Checked on the compiled program."""
    from hrl.replay import native

    if impl == "native" and not native.available():
        pytest.skip(native.unavailable_reason())
    rb = make_prioritized_replay(4096, fanout=16, impl=impl)
    leaf_copies = copies_per_step(rb, rb.init(EXAMPLE), "obs", (r"f32\[256,16\]",))
    assert not leaf_copies, f"{len(leaf_copies)} copies of a 4096-leaf level per step"
