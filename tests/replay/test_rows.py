"""Transitions packed as byte rows (`hrl.replay.rows`) and the buffer built on them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.replay import native
from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.rows import RowLayout

MIXED = {
    "frame": np.zeros((3, 5), np.uint8),
    "obs": np.zeros(4, np.float32),
    "action": np.int32(0),
    "half": np.zeros(2, np.float16),
    "done": np.bool_(False),
    "pair": (np.zeros(2, np.int16), np.float32(0)),
}


def _mixed_batch(m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((m, 4)).astype(np.float32)
    obs[0, 1] = np.float32(np.nan)  # a NaN keeps its exact bits too
    return {
        "frame": rng.integers(0, 256, (m, 3, 5)).astype(np.uint8),
        "obs": obs,
        "action": rng.integers(-5, 5, m).astype(np.int32),
        "half": rng.standard_normal((m, 2)).astype(np.float16),
        "done": rng.random(m) < 0.5,
        "pair": (
            rng.integers(-300, 300, (m, 2)).astype(np.int16),
            rng.random(m).astype(np.float32),
        ),
    }


def _assert_same_bits(got, want):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def test_layout_packs_every_leaf_side_by_side():
    layout = RowLayout.of(MIXED)
    assert layout.row_bytes == 15 + 16 + 4 + 4 + 1 + 4 + 4
    assert layout.offsets[0] == 0 and len(set(layout.offsets)) == len(layout.offsets)
    assert "['obs']" in layout.names


def test_pack_unpack_round_trip_is_bit_exact_and_jits():
    layout = RowLayout.of(MIXED)
    batch = _mixed_batch(9)
    rows = jax.jit(layout.pack)(batch)
    assert rows.shape == (9, layout.row_words) and rows.dtype == jnp.uint32
    assert layout.row_words == 12  # 48 bytes, no padding needed
    _assert_same_bits(jax.jit(layout.unpack)(rows), batch)


@pytest.mark.parametrize("impl", ["xla", "native"])
def test_buffer_returns_the_exact_transitions_it_stored(impl):
    if impl == "native" and not native.available():
        pytest.skip(native.unavailable_reason())
    rb = make_prioritized_replay(64, fanout=4, impl=impl)
    batch = _mixed_batch(40, seed=1)
    state = jax.jit(rb.add)(rb.init(MIXED), batch)
    _assert_same_bits(jax.tree.map(lambda x: x[:40], state.items), batch)
    sample = rb.sample(state, jax.random.key(0), 16)
    want = jax.tree.map(lambda x: x[np.asarray(sample.indices)], batch)
    _assert_same_bits(sample.items, want)


def test_rows_are_padded_to_whole_words():
    layout = RowLayout.of({"a": np.zeros(3, np.uint8), "b": np.bool_(False)})
    assert (layout.row_bytes, layout.row_words) == (4, 1)
    layout = RowLayout.of({"a": np.zeros(5, np.uint8)})
    assert (layout.row_bytes, layout.row_words) == (5, 2)
    batch = {"a": np.arange(15, dtype=np.uint8).reshape(3, 5)}
    _assert_same_bits(layout.unpack(layout.pack(batch)), batch)


WORDS = {"obs": np.zeros(4, np.float32), "action": np.int32(0), "reward": np.float32(0),
         "count": np.uint64(0), "next_obs": np.zeros((2, 2), np.float32)}


def _numpy_rows(layout: RowLayout, batch) -> np.ndarray:
    """The rows by the definition: each item's leaves' bytes side by side, padded, as words."""
    leaves = layout.treedef.flatten_up_to(batch)
    m = np.shape(leaves[0])[0]
    data = np.concatenate([np.ascontiguousarray(leaf).reshape(m, -1).view(np.uint8)
                           for leaf in leaves], axis=1)
    pad = 4 * layout.row_words - data.shape[1]
    data = np.concatenate([data, np.zeros((m, pad), np.uint8)], axis=1)
    return np.ascontiguousarray(data).view(np.uint32)


@pytest.mark.parametrize("example", [WORDS, MIXED], ids=["whole-words", "bytes"])
def test_packed_rows_hold_the_leaves_bytes_in_order(example):
    # Whole-word layouts pack word by word and the others byte by byte (rows.py says why):
    # both must give the rows this definition gives, bit for bit.
    rng = np.random.default_rng(3)
    if example is WORDS:
        batch = {"obs": rng.standard_normal((7, 4)).astype(np.float32),
                 "action": rng.integers(-9, 9, 7).astype(np.int32),
                 "reward": np.array([np.nan, -0.0, np.inf, 1e-42, 2, 3, 4], np.float32),
                 "count": rng.integers(0, 2**63, 7, dtype=np.uint64),
                 "next_obs": rng.standard_normal((7, 2, 2)).astype(np.float32)}
    else:
        batch = _mixed_batch(7)
    with jax.enable_x64(True):  # the 64-bit leaf keeps its width
        layout = RowLayout.of(example)
        assert layout.whole_words == (example is WORDS)
        rows = jax.jit(layout.pack)(batch)
        np.testing.assert_array_equal(np.asarray(rows), _numpy_rows(layout, batch))
        _assert_same_bits(jax.jit(layout.unpack)(rows), batch)
