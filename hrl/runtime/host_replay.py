"""Prioritized replay with the sum tree on a host-driven backend (`hrl.replay.backends`).

Same semantics as `hrl.replay.buffer.PrioritizedReplay` (ring storage, max-priority inserts,
priorities (|td| + eps) ** alpha, stratified sampling, IS weights normalized by the minimum
priority), with the tree on a `TreeBackend` (OpenCL device, RTL simulation, or the JAX
reference driven from the host) and the transitions in host numpy arrays. This is the `sample`
/ `update` primitive placed off the JAX graph, so `HostLoop` runs it.

The state keeps a host copy of the leaf priorities. The tree is a pure function of its leaves
(parents are always recomputed from children), so a checkpoint stores the leaves and a restore
rebuilds the identical tree (`sync_backend`). The methods update the numpy arrays in place and
return the state (copying a 50k-item ring per insert would dominate the host loop); so a run
stopped in the middle of a chunk by a second Ctrl-C may checkpoint a buffer a few inserts ahead
of its counters. The first Ctrl-C, which stops between chunks, is always exact.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hrl.replay.buffer import Sample
from hrl.replay.formats import parse_format

# config value of replay.backend -> name in hrl.replay.backends.BACKENDS
HOST_BACKENDS = {"jax_host": "jax", "opencl": "opencl", "rtl": "rtl"}


def _scalar(value, dtype) -> np.ndarray:
    """0-d array, not a numpy scalar: checkpoint writers take arrays only."""
    return np.asarray(value, dtype)


@struct.dataclass
class HostReplayState:
    items: Any  # numpy pytree, leading dimension capacity
    leaves: np.ndarray  # float32 (capacity,): stored priorities (after alpha, format-rounded)
    insert_pos: np.ndarray  # int32 scalar
    size: np.ndarray  # int32 scalar
    max_priority: np.ndarray  # float32 scalar (before alpha)
    added: np.ndarray  # int32 scalar


@dataclasses.dataclass(eq=False)
class HostReplay:
    capacity: int
    alpha: float
    eps: float
    fanout: int
    fmt: Any
    weights: str
    backend: Any  # TreeBackend

    def __post_init__(self):
        # Jitted once per replay: run op by op, these few jnp calls cost more host time than
        # the tree operations they feed (one dispatch per op instead of one per call).
        alpha, fmt, fanout = jnp.float32(self.alpha), self.fmt, self.fanout
        self._stored_fn = jax.jit(
            lambda raw: fmt.decode(fmt.encode(jnp.power(raw, alpha)), 0, 0, fanout)
        )
        self._bits_fn = jax.jit(
            lambda key, n: jax.random.bits(key, (n,), jnp.uint32), static_argnums=1
        )

    def _stored(self, raw: np.ndarray) -> np.ndarray:
        """Priority as the tree holds it: raw ** alpha, rounded by the format."""
        return np.asarray(self._stored_fn(np.asarray(raw, np.float32)), np.float32)

    def init(self, example_item) -> HostReplayState:
        self.backend.reset()
        items = jax.tree.map(
            lambda x: np.zeros((self.capacity,) + np.shape(x), np.asarray(x).dtype), example_item
        )
        return HostReplayState(
            items=items,
            leaves=np.zeros((self.capacity,), np.float32),
            insert_pos=_scalar(0, np.int32),
            size=_scalar(0, np.int32),
            max_priority=_scalar(1.0, np.float32),
            added=_scalar(0, np.int32),
        )

    def sync_backend(self, state: HostReplayState) -> None:
        """Rebuild the backend tree from the leaves of `state` (after a checkpoint restore)."""
        self.backend.reset()
        filled = np.nonzero(np.asarray(state.leaves) > 0)[0].astype(np.int32)
        if filled.size:
            self.backend.update(filled, np.asarray(state.leaves)[filled])

    def add(self, state: HostReplayState, items) -> HostReplayState:
        items = jax.device_get(items)
        m = int(jax.tree.leaves(items)[0].shape[0])
        slots = (int(state.insert_pos) + np.arange(m)) % self.capacity
        for buf, new in zip(jax.tree.leaves(state.items), jax.tree.leaves(items), strict=True):
            buf[slots] = new
        stored = self._stored(np.full((m,), state.max_priority, np.float32))
        state.leaves[slots] = stored
        self.backend.update(slots.astype(np.int32), stored)
        return state.replace(
            insert_pos=_scalar((int(state.insert_pos) + m) % self.capacity, np.int32),
            size=_scalar(min(int(state.size) + m, self.capacity), np.int32),
            added=_scalar(int(state.added) + m, np.int32),
        )

    def sample(self, state: HostReplayState, key, batch_size: int, beta) -> Sample:
        size = int(state.size)
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer; add items first")
        bits = np.asarray(self._bits_fn(key, batch_size))
        indices = np.minimum(self.backend.sample_from_bits(bits, True), size - 1).astype(np.int32)
        total = max(float(self.backend.total()), 1e-30)
        probs = state.leaves[indices] / np.float32(total)
        if self.weights == "global":
            filled = state.leaves[:size]
            p_min = float(filled[filled > 0].min()) / total
        else:
            p_min = float(probs.min())
        weights = np.power(p_min / np.maximum(probs, 1e-30), np.float32(beta))
        weights = np.where(probs > 0, np.minimum(weights, 1.0), 0.0).astype(np.float32)
        items = jax.tree.map(lambda buf: buf[indices], state.items)
        return Sample(items=items, indices=indices, weights=weights,
                      probabilities=probs.astype(np.float32))

    def update(self, state: HostReplayState, indices, td_errors) -> HostReplayState:
        indices = np.asarray(indices, np.int32)
        raw = np.abs(np.asarray(td_errors, np.float32)) + np.float32(self.eps)
        raw = np.where(np.isfinite(raw), raw, state.max_priority).astype(np.float32)
        valid = (indices >= 0) & (indices < int(state.size))
        indices, raw = indices[valid], raw[valid]
        if indices.size == 0:
            return state
        stored = self._stored(raw)
        # Duplicates: the last in batch order wins, as in the tree itself.
        state.leaves[indices] = stored
        self.backend.update(indices, stored)
        top = max(float(state.max_priority), float(raw.max()))
        return state.replace(max_priority=_scalar(top, np.float32))


def make_host_replay(replay_cfg) -> HostReplay:
    """A HostReplay for `replay.backend` in HOST_BACKENDS (see ReplayConfig)."""
    from hrl.replay.backends import make_backend

    name = replay_cfg.backend
    if name not in HOST_BACKENDS:
        raise ValueError(
            f"config key 'replay.backend': expected 'jax' or one of {sorted(HOST_BACKENDS)}, "
            f"got {name!r}"
        )
    fmt = parse_format(replay_cfg.fmt)
    backend = make_backend(HOST_BACKENDS[name], replay_cfg.capacity, replay_cfg.fanout, fmt)
    return HostReplay(
        capacity=replay_cfg.capacity,
        alpha=replay_cfg.alpha,
        eps=replay_cfg.eps,
        fanout=replay_cfg.fanout,
        fmt=fmt,
        weights=replay_cfg.weights,
        backend=backend,
    )
