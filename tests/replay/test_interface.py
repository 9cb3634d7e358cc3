"""One interface over every replay buffer (`hrl.replay.interface`), one factory over the config
(`make_replay`), every public name importable, and the one policy for an empty `add` (a no-op
returning the state unchanged) on every buffer and kernel set."""

from __future__ import annotations

import dataclasses
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hrl.replay
from hrl.config import ReplayConfig
from hrl.replay import HostReplay, Replay, ReplayHandle, make_replay, native
from hrl.replay.backends import BackendUnavailableError
from hrl.replay.buffer import PrioritizedReplay, make_prioritized_replay
from hrl.replay.host_buffer import HostPrioritizedReplay, make_host_replay
from hrl.replay.host_native import HostNativeReplay, HostNativeState
from hrl.replay.sharded import ShardedReplay, make_sharded_replay

EXAMPLE = {"x": jnp.zeros(3, jnp.float32), "a": jnp.int32(0)}
EMPTY = {"x": np.zeros((0, 3), np.float32), "a": np.zeros((0,), np.int32)}
ITEMS = {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "a": np.arange(4, dtype=np.int32)}
AXIS = "shards"

needs_native = pytest.mark.skipif(not native.available(), reason="native kernels do not build")


def _cfg(**kw) -> ReplayConfig:
    return dataclasses.replace(ReplayConfig(capacity=64, fanout=4), **kw)


def _leaves(state) -> list[np.ndarray]:
    return [np.array(x) for x in jax.tree.leaves(jax.device_get(state))]


def _assert_same(a, b):
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8))


# ---------------------------------------------------------------------- public names
def test_every_public_name_imports():
    for module in ("hrl.replay", "hrl.replay.interface", "hrl.replay.factory",
                   "hrl.replay.host_native", "hrl.replay.backends"):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            assert getattr(mod, name) is not None, f"{module}.{name}"
    namespace: dict = {}
    exec("from hrl.replay import *", namespace)  # noqa: S102
    assert set(hrl.replay.__all__) <= set(namespace)
    # The handle's former home still resolves to the same object.
    from hrl.replay.handle import ReplayHandle as old_handle

    assert old_handle is ReplayHandle


# ---------------------------------------------------------------------- the protocol
def test_every_buffer_implements_the_protocol():
    assert isinstance(make_prioritized_replay(64, impl="xla"), Replay)
    assert not isinstance(make_prioritized_replay(64, impl="xla"), HostReplay)
    assert isinstance(make_sharded_replay(64, 2, AXIS, impl="xla"), Replay)
    host = make_host_replay(_cfg(backend="jax_host"))
    assert isinstance(host, HostReplay) and isinstance(host, Replay)
    if native.available():
        assert isinstance(make_replay(_cfg(backend="native_host"), batch_size=8), HostReplay)


def test_size_is_the_filled_slots_on_every_buffer():
    rb = make_prioritized_replay(64, fanout=4, impl="xla")
    assert int(rb.size(rb.add(rb.init(EXAMPLE), ITEMS))) == 4
    host = make_host_replay(_cfg(backend="jax_host"))
    assert host.size(host.add(host.init(EXAMPLE), ITEMS)) == 4
    sharded = make_sharded_replay(64, 2, AXIS, fanout=4, impl="xla")
    stacked = jax.tree.map(lambda x: np.stack([x, x]), ITEMS)
    sizes = jax.vmap(lambda s, i: sharded.size(sharded.add(s, i)), axis_name=AXIS)(
        sharded.init_stacked(EXAMPLE), stacked)
    np.testing.assert_array_equal(sizes, [8, 8])


# ---------------------------------------------------------------------- make_replay's table
def test_make_replay_follows_its_table():
    rb = make_replay(_cfg(impl="xla"))
    assert type(rb) is PrioritizedReplay and rb.impl == "xla" and rb.capacity == 64
    sharded = make_replay(_cfg(impl="xla", sampling="local"), devices=4, axis="d")
    assert type(sharded) is ShardedReplay
    assert (sharded.num_shards, sharded.axis_name, sharded.sampling) == (4, "d", "local")
    assert sharded.capacity == 64 and sharded.shard.capacity == 16
    assert make_replay(_cfg(impl="xla"), devices=2).axis_name == "devices"
    host = make_replay(_cfg(backend="jax_host"))
    assert type(host) is HostPrioritizedReplay and type(host.backend).__name__ == "JaxBackend"
    if native.available():
        hn = make_replay(_cfg(backend="native_host", impl="auto"), batch_size=8)
        assert type(hn) is HostNativeReplay and hn.batch_size == 8


@pytest.mark.parametrize("kw,call,key", [
    ({"backend": "jax_host"}, {"devices": 2}, "replay.backend"),
    ({"backend": "native_host"}, {"devices": 2}, "replay.backend"),
    ({"backend": "nope"}, {}, "replay.backend"),
    ({}, {"devices": 0}, "train.devices"),
    ({"backend": "native_host", "impl": "xla"}, {"batch_size": 8}, "replay.impl"),
    ({"backend": "native_host", "impl": "native"}, {}, "train.batch_size"),
    ({"capacity": 63}, {"devices": 2}, "replay capacity"),
])
def test_make_replay_errors_name_the_config_key(kw, call, key):
    with pytest.raises(ValueError, match=key):
        make_replay(_cfg(**kw), **call)


# ---------------------------------------------------------------------- the empty add
@pytest.mark.parametrize("impl", [
    "xla", "auto", pytest.param("native", marks=needs_native), "pallas"])
def test_empty_add_returns_the_state_unchanged(impl):
    """Outside jit (the same object back), under jit (the same words), with and without
    priorities; a later add still works."""
    rb = make_prioritized_replay(64, fanout=4, impl=impl)
    state = rb.add(rb.init(EXAMPLE), ITEMS)
    assert rb.add(state, EMPTY) is state
    assert rb.add(state, EMPTY, np.zeros((0,), np.float32)) is state
    _assert_same(jax.jit(rb.add)(state, EMPTY), state)
    with pytest.raises(ValueError, match="priorities must have shape"):
        rb.add(state, EMPTY, np.zeros((1,), np.float32))
    assert int(rb.add(rb.add(state, EMPTY), ITEMS).size) == 8


def test_empty_add_on_the_sharded_replay_is_a_noop():
    sharded = make_sharded_replay(64, 2, AXIS, fanout=4, impl="xla")
    stacked = jax.tree.map(lambda x: np.stack([x, x]), ITEMS)
    shards = jax.vmap(sharded.add, axis_name=AXIS)(sharded.init_stacked(EXAMPLE), stacked)
    empty = jax.tree.map(lambda x: np.stack([x, x]), EMPTY)
    _assert_same(jax.vmap(sharded.add, axis_name=AXIS)(shards, empty), shards)


@pytest.mark.parametrize("path", ["jit", pytest.param("direct", marks=needs_native)])
def test_empty_add_on_the_handle_is_a_noop(path):
    rb = make_prioritized_replay(64, fanout=4, impl="native" if path == "direct" else "xla")
    state = rb.add(rb.init(EXAMPLE), ITEMS)
    try:
        handle = ReplayHandle(rb, state, batch_size=4, path=path)
    except ValueError as e:  # direct: libm's powf differs from XLA's pow here
        pytest.skip(str(e))
    handle.add(EMPTY)
    handle.add(EMPTY, np.zeros((0,), np.float32))
    assert handle.size == 4
    _assert_same(handle.state, state)


@needs_native
def test_empty_add_on_the_native_host_replay_is_a_noop():
    host = make_replay(_cfg(backend="native_host", impl="native"), batch_size=4)
    state = host.add(host.init(EXAMPLE), ITEMS)
    before = [x.copy() for x in _leaves(state)]
    assert host.add(state, EMPTY) is state
    _assert_same(state, before)
    assert host.size(state) == 4


@pytest.mark.parametrize("backend", ["jax_host", "opencl"])
def test_empty_add_on_the_host_tree_replay_is_a_noop(backend):
    try:
        host = make_replay(_cfg(backend=backend, fmt="fixed"))
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    state = host.add(host.init(EXAMPLE), ITEMS)
    before = [x.copy() for x in _leaves(state)]
    total = float(host.backend.total())
    assert host.add(state, EMPTY) is state
    _assert_same(state, before)
    assert float(host.backend.total()) == total



# ---------------------------------------------------------------------- first priorities
def _max_priority(state) -> float:
    if isinstance(state, HostNativeState):  # its bits are the third scalar
        return float(np.asarray(state.scalars).view(np.float32)[2])
    return float(jax.device_get(state.max_priority))


@pytest.mark.parametrize("fmt", ["float32", "fixed"])
@pytest.mark.parametrize("backend", ["jax", pytest.param("native_host", marks=needs_native),
                                     "jax_host"])
def test_add_with_priorities_stores_what_update_would_on_every_buffer(backend, fmt):
    """Items added with priorities raw_priorities(td, eps) (an Ape-X actor's) hold what adding
    them at the largest priority and then updating them with td gives, word for word: the
    same alpha, the same rounding by the format (fixed point included), the same largest
    priority. A NaN priority takes the largest priority seen, as a NaN TD error does."""
    from hrl.replay.buffer import raw_priorities

    cfg = _cfg(backend=backend, fmt=fmt)
    td = np.array([0.3, -2.5, np.nan, 7.25], np.float32)
    first = {"x": ITEMS["x"] + 100, "a": ITEMS["a"] + 100}
    states = []
    for _ in range(2):  # host buffers step their own arrays: one buffer per path
        rb = make_replay(cfg, batch_size=4)
        state = rb.update(rb.add(rb.init(EXAMPLE), first), np.arange(4, dtype=np.int32),
                          np.array([0.1, 3.0, 0.2, 0.4], np.float32))  # largest: 3 + eps
        states.append((rb, state))
    (rb_a, a), (rb_b, b) = states
    # Under jit, as the learner calls them (outside, a NaN is an error): NaN -> largest seen.
    jit = jax.jit if backend == "jax" else (lambda f: f)
    a = jit(rb_a.add)(a, ITEMS, raw_priorities(td, cfg.eps))
    b = jit(rb_b.update)(rb_b.add(b, ITEMS), np.arange(4, 8, dtype=np.int32), td)
    _assert_same(a, b)
    assert _max_priority(a) == pytest.approx(7.25 + cfg.eps)
    with pytest.raises(ValueError, match=r"^add: priorities must have shape \(4,\), got \(3,\)$"):
        rb_a.add(a, ITEMS, np.ones(3, np.float32))
