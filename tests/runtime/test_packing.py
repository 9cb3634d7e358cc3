"""TreePacking: a pytree as one vector per dtype and back, bit for bit, jitted and on the host."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.runtime.packing import TreePacking


def example_tree():
    k = jax.random.split(jax.random.key(3), 3)
    return {
        "w": jax.random.normal(k[0], (4, 3)),
        "b": jnp.array([np.nan, -0.0, np.inf], jnp.float32),  # bits, not values, must survive
        "count": jnp.int32(7),
        "steps": jnp.arange(5, dtype=jnp.int32),
        "v": jax.random.normal(k[1], (2,)).astype(jnp.float32),
        "mask": jnp.array([True, False]),
    }


def assert_bits_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        assert x.tobytes() == y.tobytes()


def test_roundtrip_is_bit_exact_jitted_and_on_the_host():
    tree = example_tree()
    packing = TreePacking(tree)
    flats = jax.jit(packing.pack)(tree)
    assert [f.dtype for f in flats] == [np.float32, np.int32, np.bool_]
    assert [f.shape for f in flats] == [(17,), (6,), (2,)]
    assert_bits_equal(jax.jit(packing.unpack)(flats), tree)
    assert_bits_equal(packing.unpack(jax.device_get(flats)), tree)  # numpy views


def test_stacked_vectors_unpack_with_a_leading_axis():
    trees = [example_tree(), jax.tree.map(lambda x: x + 1 if x.dtype != jnp.bool_ else ~x,
                                          example_tree())]
    packing = TreePacking(trees[0])
    stacked = [np.stack(g) for g in zip(*[jax.device_get(packing.pack(t)) for t in trees],
                                                 strict=True)]
    assert_bits_equal(packing.unpack(stacked), jax.tree.map(lambda *xs: np.stack(xs), *trees))


def test_shape_template_from_eval_shape():
    tree = example_tree()
    packing = TreePacking(jax.eval_shape(lambda: tree))
    assert_bits_equal(packing.unpack(packing.pack(tree)), tree)


def test_mismatches_name_the_problem():
    tree = example_tree()
    packing = TreePacking(tree)
    with pytest.raises(ValueError, match=r"shape \(4, 4\).*template has \(4, 3\)"):
        packing.pack({**tree, "w": jnp.zeros((4, 4))})
    with pytest.raises(ValueError, match="int32.*template has .*float32"):
        packing.pack({**tree, "v": jnp.zeros((2,), jnp.int32)})
    flats = packing.pack(tree)
    with pytest.raises(ValueError, match="2 vectors for 3 dtypes"):
        packing.unpack(flats[:2])
    with pytest.raises(ValueError, match=r"float32 vector has shape \(16,\).*packs 17"):
        packing.unpack((flats[0][:16], *flats[1:]))
