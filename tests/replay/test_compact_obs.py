"""Observations in their own dtype (bool, uint8) through every buffer and backend that takes
them: what goes in comes out bit for bit, in its dtype, and a row costs the bytes it needs."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.config import ReplayConfig
from hrl.replay import ReplayHandle, make_replay, native
from hrl.replay.backends import BackendUnavailableError
from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.rows import RowLayout
from hrl.replay.sharded import make_sharded_replay

needs_native = pytest.mark.skipif(not native.available(), reason="native kernels do not build")
CAP, M = 32, 8


def _items(dtype, seed):
    """M transitions with (5, 5, 3) observations: MinAtar-like bools, or uint8 pixels."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        obs = rng.random((2, M, 5, 5, 3)) < 0.3
    else:
        obs = rng.integers(0, 256, (2, M, 5, 5, 3)).astype(np.uint8)
    return {"obs": obs[0], "action": rng.integers(0, 4, M).astype(np.int32),
            "reward": rng.normal(size=M).astype(np.float32), "next_obs": obs[1],
            "discount": rng.random(M).astype(np.float32)}


def _example(items):
    return jax.tree.map(lambda x: np.zeros_like(x[0]), items)


def _check_sample(sample, items):
    """Each sampled item is the item inserted at its index, bit for bit, in its dtype."""
    idx = np.asarray(sample.indices).reshape(-1)
    for name, stored in items.items():
        got = np.asarray(sample.items[name]).reshape(len(idx), *stored.shape[1:])
        assert got.dtype == stored.dtype, name
        np.testing.assert_array_equal(got, stored[idx % M], err_msg=name)


def test_compact_rows_take_the_bytes_they_need():
    f32 = RowLayout.of(_example({k: v.astype(np.float32) if v.dtype != np.int32 else v
                                 for k, v in _items(np.bool_, 0).items()}))
    for dtype in (np.bool_, np.uint8):
        layout = RowLayout.of(_example(_items(dtype, 0)))
        assert layout.row_words * 4 == -(-(2 * 75 + 12) // 4) * 4
        assert layout.row_words < f32.row_words / 3


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
@pytest.mark.parametrize("impl", ["xla", pytest.param("native", marks=needs_native), "pallas"])
def test_jax_buffer_round_trip(dtype, impl):
    items = _items(dtype, 1)
    rb = make_prioritized_replay(CAP, fanout=4, impl=impl)
    state = jax.jit(rb.add)(rb.init(_example(items)), items)
    _check_sample(jax.jit(rb.sample, static_argnums=2)(state, jax.random.PRNGKey(0), 16, 0.4),
                  items)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
def test_sharded_buffer_round_trip(dtype):
    items = _items(dtype, 2)
    sharded = make_sharded_replay(CAP, 2, "shards", fanout=4, impl="xla", sampling="local")
    stacked = jax.tree.map(lambda x: np.stack([x, x]), items)
    state = jax.vmap(sharded.add, axis_name="shards")(sharded.init_stacked(_example(items)),
                                                      stacked)
    sample = jax.vmap(lambda s, k: sharded.sample(s, k, 8, 0.4), axis_name="shards")(
        state, jax.random.split(jax.random.PRNGKey(1), 2))
    for shard in range(2):
        one = jax.tree.map(lambda x, s=shard: x[s], sample)
        # Local sampling: indices are the shard's own slots.
        _check_sample(one._replace(indices=np.asarray(one.indices) % (CAP // 2)), items)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
@pytest.mark.parametrize("path", ["jit", pytest.param("direct", marks=needs_native)])
def test_handle_round_trip(dtype, path):
    items = _items(dtype, 3)
    rb = make_prioritized_replay(CAP, fanout=4, impl="native" if path == "direct" else "xla")
    try:
        handle = ReplayHandle(rb, rb.init(_example(items)), batch_size=8, path=path)
    except ValueError as e:  # direct: libm's powf differs from XLA's pow here
        pytest.skip(str(e))
    handle.add(items)
    _check_sample(handle.sample(jax.random.PRNGKey(2), 0.4), items)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
@pytest.mark.parametrize("backend", [pytest.param("native_host", marks=needs_native),
                                     "jax_host", "opencl"])
def test_host_buffer_round_trip(dtype, backend):
    items = _items(dtype, 4)
    cfg = dataclasses.replace(ReplayConfig(capacity=CAP, fanout=4), backend=backend,
                              fmt="float32" if backend == "native_host" else "fixed",
                              impl="native" if backend == "native_host" else "auto")
    try:
        rb = make_replay(cfg, batch_size=8)
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    state = rb.add(rb.init(_example(items)), items)
    _check_sample(rb.sample(state, jax.random.PRNGKey(3), 8, 0.4), items)
    assert jnp.asarray(state.size if hasattr(state, "size") else rb.size(state)) == M
