"""The host-driven buffer (`hrl.replay.host_buffer`) equals `PrioritizedReplay` step for step.

Same adds, samples and updates (duplicates, out-of-range indices, NaN TD errors included) on
both; every sampled index, probability and IS weight, every transition, the stored leaves and
the bookkeeping must be equal, bit for bit (the host tree here is the JAX reference driven from
the host; the OpenCL and RTL trees equal that reference bit for bit in their own tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.replay import sumtree
from hrl.replay.backends import make_backend
from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.formats import parse_format
from hrl.replay.host_buffer import HostMinTree, HostPrioritizedReplay, last_wins

EXAMPLE = {"obs": jnp.zeros(3, jnp.float32), "action": jnp.int32(0)}


def make_pair(capacity, fanout, fmt, weights):
    ref = make_prioritized_replay(capacity, alpha=0.6, eps=1e-3, fanout=fanout, fmt=fmt,
                                  weights=weights, impl="xla")
    host = HostPrioritizedReplay(capacity, 0.6, 1e-3, fanout, parse_format(fmt), weights,
                                 make_backend("jax", capacity, fanout, parse_format(fmt)))
    return ref, host


@pytest.mark.parametrize("fmt,weights", [("fixed", "global"), ("fixed:16:6", "global"),
                                         ("float32", "global"), ("float32", "batch")])
def test_host_buffer_equals_prioritized_replay(fmt, weights):
    capacity, fanout, batch = 200, 4, 32
    ref, host = make_pair(capacity, fanout, fmt, weights)
    s_ref, s_host = ref.init(EXAMPLE), host.init(EXAMPLE)
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.PRNGKey(1), 40)
    for step, key in enumerate(keys):
        m = 48 if step == 0 else 16
        items = {"obs": rng.normal(size=(m, 3)).astype(np.float32),
                 "action": np.full(m, step, np.int32)}
        s_ref, s_host = ref.add(s_ref, items), host.add(s_host, items)
        a, b = ref.sample(s_ref, key, batch, 0.4), host.sample(s_host, key, batch, 0.4)
        for x, y in ((a.indices, b.indices), (a.probabilities, b.probabilities),
                     (a.weights, b.weights), (a.items["obs"], b.items["obs"]),
                     (a.items["action"], b.items["action"])):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"step {step}")
        td = rng.normal(size=batch).astype(np.float32) * 3
        idx = np.asarray(a.indices).copy()
        if step % 5 == 0:  # bad values the policy must absorb identically
            td[0] = np.nan
            idx[1] = idx[2]  # a duplicate: the last write wins
        s_ref = jax.jit(ref.update)(s_ref, idx, td)  # traced: the in-jit policy for NaN
        s_host = host.update(s_host, idx, td)
        assert float(s_ref.max_priority) == float(s_host.max_priority), f"step {step}"
    np.testing.assert_array_equal(np.asarray(sumtree.leaves(s_ref.tree)), s_host.leaves)
    if weights == "global":
        assert np.float32(sumtree.total(s_ref.min_tree)) == host.min_tree.root()


def test_sync_backend_rebuilds_identical_trees():
    _, host = make_pair(100, 4, "fixed", "global")
    state = host.init(EXAMPLE)
    items = {"obs": np.ones((60, 3), np.float32), "action": np.arange(60, dtype=np.int32)}
    state = host.add(state, items)
    state = host.update(state, np.arange(0, 60, 3), np.linspace(0.1, 5, 20).astype(np.float32))
    words, root = host.backend.level_words(), host.min_tree.root()
    host.sync_backend(state)
    for got, want in zip(host.backend.level_words(), words, strict=True):
        np.testing.assert_array_equal(got, want)
    assert host.min_tree.root() == root


def test_min_tree_and_last_wins():
    np.testing.assert_array_equal(last_wins(np.array([5, 3, 5, 7, 3])), [2, 3, 4])
    tree = HostMinTree(37, 2)
    tree.update(np.array([3, 36]), np.array([2.0, 0.5], np.float32))
    assert tree.root() == np.float32(0.5)
    tree.update(np.array([36]), np.array([9.0], np.float32))
    assert tree.root() == np.float32(2.0)
