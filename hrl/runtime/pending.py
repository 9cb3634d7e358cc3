"""The relaxed-dependency queue: priority updates applied `s` SGD steps late.

Strict dependency: sample(t+1) sees the priorities written by train(t). Relaxed with staleness
s: the priority update of step t is held in a FIFO of depth s and written when step t+s
finishes, so sample(t+1) .. sample(t+s) proceed without waiting for it (on a real mapping the
update is in flight over a link meanwhile). With s = 0 the queue is empty and every update is
written at once: the same computation as strict, bit for bit.

An update that reaches the tree late may land on a slot that a newer insert has overwritten;
that item then carries the old item's priority until it is sampled. This is the price of
relaxation the paper accepts (the max-priority insert would have been just as arbitrary).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class PendingUpdates:
    """FIFO of s (indices, td_errors) batches; `valid[i]` marks filled slots.

    The arrays keep at least one row even for s = 0 (unused then) because checkpoint
    formats reject zero-size arrays.
    """

    indices: jax.Array  # int32 (max(s, 1), B)
    td_errors: jax.Array  # float32 (max(s, 1), B)
    valid: jax.Array  # bool (max(s, 1),)
    head: jax.Array  # int32: oldest slot = next to leave
    staleness: int = struct.field(pytree_node=False, default=0)


def pending_init(staleness: int, batch_size: int) -> PendingUpdates:
    if not isinstance(staleness, int) or staleness < 0:
        raise ValueError(f"staleness must be an int >= 0, got {staleness!r}")
    rows = max(staleness, 1)
    return PendingUpdates(
        indices=jnp.zeros((rows, batch_size), jnp.int32),
        td_errors=jnp.zeros((rows, batch_size), jnp.float32),
        valid=jnp.zeros((rows,), bool),
        head=jnp.int32(0),
        staleness=staleness,
    )


def pending_push(pending: PendingUpdates, indices, td_errors):
    """Queue one update; return (queue, (indices, td_errors, valid)) of the one leaving it.

    Depth 0 passes the update straight through (valid=True). O(B).
    """
    staleness = pending.staleness
    if staleness == 0:
        return pending, (indices, td_errors, jnp.bool_(True))
    head = pending.head
    out = (pending.indices[head], pending.td_errors[head], pending.valid[head])
    pending = pending.replace(
        indices=pending.indices.at[head].set(indices),
        td_errors=pending.td_errors.at[head].set(td_errors),
        valid=pending.valid.at[head].set(True),
        head=(head + 1) % staleness,
    )
    return pending, out


class HostPendingQueue:
    """The same FIFO as the host loops step it: its slots in a list on the host, so reading
    the update that leaves the queue is no device call. (On XLA:CPU every call waits behind
    the calls issued before it: a jitted read of the queue issued after train(t) would wait
    for train(t), which is what the relaxed dependency must not do.) A slot holds the arrays
    pushed into it as they are (a device's or numpy's); `to_pending` gives back the
    `PendingUpdates` that `pending_push` would have made, bit for bit."""

    def __init__(self, pending: PendingUpdates):
        indices, td_errors, valid, head = jax.device_get(
            (pending.indices, pending.td_errors, pending.valid, pending.head))
        self.staleness = pending.staleness
        self.indices, self.td_errors = list(indices), list(td_errors)
        self.valid = [bool(v) for v in valid]
        self.head = int(head)

    def leaving(self):
        """(indices, td_errors, valid) of the update the next `push` moves out."""
        h = self.head
        return self.indices[h], self.td_errors[h], self.valid[h]

    def push(self, indices, td_errors) -> None:
        h = self.head
        self.indices[h], self.td_errors[h], self.valid[h] = indices, td_errors, True
        self.head = (h + 1) % self.staleness

    def to_pending(self) -> PendingUpdates:
        """The queue as `PendingUpdates` of numpy arrays (waits for the rows pushed last)."""
        indices, td_errors = jax.device_get((self.indices, self.td_errors))
        return PendingUpdates(
            indices=np.stack([np.asarray(x, np.int32) for x in indices]),
            td_errors=np.stack([np.asarray(x, np.float32) for x in td_errors]),
            valid=np.asarray(self.valid, bool),
            head=np.int32(self.head),
            staleness=self.staleness,
        )
