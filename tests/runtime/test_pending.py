"""The relaxed dependency's queue (`hrl.runtime.pending`): updates leave exactly s steps late,
and the host loops' queue is `pending_push` step for step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_runs import assert_trees_equal

from hrl.runtime import (
    pending_init,
    pending_push,
)
from hrl.runtime.pending import HostPendingQueue


@pytest.mark.parametrize("staleness", [0, 1, 4])
def test_pending_releases_updates_exactly_s_steps_late(staleness):
    batch = 3
    pending = pending_init(staleness, batch)
    push = jax.jit(pending_push)
    for t in range(12):
        idx = jnp.full((batch,), t, jnp.int32)
        td = jnp.full((batch,), 10.0 * t, jnp.float32)
        pending, (out_idx, out_td, valid) = push(pending, idx, td)
        if t < staleness:
            assert not bool(valid)
        else:
            assert bool(valid)
            assert np.all(np.asarray(out_idx) == t - staleness)
            assert np.all(np.asarray(out_td) == 10.0 * (t - staleness))


def test_host_pending_queue_is_pending_push():
    """The host loops' relaxed queue (slots on the host, so reading the update that leaves
    needs no device call behind train(t)) gives pending_push's outputs step after step, and
    hands back its queue bit for bit, from an empty queue and from one restored part full."""
    rng = np.random.default_rng(0)

    def row():
        return (jnp.asarray(rng.integers(0, 100, 4), jnp.int32),
                jnp.asarray(rng.normal(size=4), jnp.float32))

    pending = pending_init(3, 4)
    for start in range(3):  # 0: empty; then restored from a queue with 1, 2 slots filled
        if start:
            pending, _ = pending_push(pending, *row())
        queue = HostPendingQueue(pending)
        for _ in range(5):
            idx, td = row()
            pending, (want_idx, want_td, want_valid) = pending_push(pending, idx, td)
            got_idx, got_td, got_valid = queue.leaving()
            queue.push(idx, td)
            assert got_valid == bool(want_valid)
            if got_valid:
                np.testing.assert_array_equal(got_idx, want_idx)
                np.testing.assert_array_equal(got_td, want_td)
        assert_trees_equal(jax.device_put(queue.to_pending()), pending)
