"""Prioritized replay with the sum tree on a host-driven backend (`hrl.replay.backends`).

`PrioritizedReplay` (hrl.replay.buffer) is the definition; this is the same buffer for a tree
that lives outside the JAX graph: an OpenCL device, the RTL in simulation, or the JAX reference
driven from the host (`replay.backend: jax_host`). Transitions sit in host numpy arrays. Every
number it returns is the one `PrioritizedReplay` would return on the same calls: the same
random bits, the same stored priorities (`jnp.power`, the format's rounding), the same IS
weights (the shared `buffer.importance_weights`, normalised by a min tree of the unrounded
stored priorities), the same bookkeeping of the largest priority;
`tests/replay/test_host_buffer.py` checks it step by step, bit for bit in fixed point.

The state keeps host copies of the leaves (as the sum tree holds them, and unrounded for the
min tree). The trees are pure functions of their leaves (parents are recomputed from children),
so a checkpoint stores the leaves and a restore rebuilds identical trees (`sync_backend`). The
methods update the numpy arrays in place and return the state (copying a 50k-item ring per
insert would dominate a host loop); so a run stopped in the middle of a chunk by a second Ctrl-C
may checkpoint a buffer a few inserts ahead of its counters. The first Ctrl-C, which stops
between chunks, is always exact.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hrl.replay.backends import make_backend
from hrl.replay.buffer import Sample, host_add_priorities, importance_weights, tree_settings
from hrl.replay.formats import level_sizes, parse_format

# config value of replay.backend -> name in hrl.replay.backends.BACKENDS
HOST_BACKENDS = {"jax_host": "jax", "opencl": "opencl", "rtl": "rtl"}


def _scalar(value, dtype) -> np.ndarray:
    """0-d array, not a numpy scalar: checkpoint writers take arrays only."""
    return np.asarray(value, dtype)


def last_wins(indices: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each distinct index, in batch order."""
    reversed_first = np.unique(indices[::-1], return_index=True)[1]
    return np.sort(indices.size - 1 - reversed_first)


class HostMinTree:
    """A K-ary min tree in numpy (empty leaves +inf): the root is the smallest stored priority,
    which normalises the IS weights. Same layout and semantics as a `sumtree.SumTree` with the
    `MinFloat32` format; O(B K D) per update."""

    def __init__(self, capacity: int, fanout: int):
        self.capacity, self.fanout = capacity, fanout
        self.levels = [np.full(size, np.inf, np.float32) for size in level_sizes(capacity, fanout)]

    def reset(self) -> None:
        for level in self.levels:
            level.fill(np.inf)

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Leaves at `indices` (distinct, in range) take `values`; ancestors recomputed."""
        k = self.fanout
        self.levels[-1][indices] = values
        node = np.unique(indices // k)  # sorted: each level's parents dedupe without a sort
        for level in range(len(self.levels) - 2, -1, -1):
            self.levels[level][node] = self.levels[level + 1].reshape(-1, k)[node].min(axis=1)
            node = node // k
            node = node[np.concatenate(([True], node[1:] != node[:-1]))]

    def root(self) -> np.float32:
        return self.levels[0][0]


@struct.dataclass
class HostReplayState:
    items: Any  # numpy pytree, leading dimension capacity
    leaves: np.ndarray  # float32 (capacity,): priorities as the sum tree holds them (rounded)
    stored: np.ndarray  # float32 (capacity,): the same before the format's rounding (min tree)
    insert_pos: np.ndarray  # int32 scalar
    size: np.ndarray  # int32 scalar
    max_priority: np.ndarray  # float32 scalar (before alpha)
    added: np.ndarray  # int32 scalar


@dataclasses.dataclass(eq=False)
class HostPrioritizedReplay:
    """`PrioritizedReplay` with its sum tree on a host-driven `TreeBackend` (a `HostReplay`:
    the state is host arrays updated in place, see the module docstring). Not thread-safe."""

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

        def stored(raw):
            power = jnp.power(raw, alpha)
            return power, fmt.decode(fmt.encode(power), 0, 0, fanout)

        self._stored_fn = jax.jit(stored)
        self._bits_fn = jax.jit(
            lambda key, n: jax.random.bits(key, (n,), jnp.uint32), static_argnums=1
        )
        self._weights_fn = jax.jit(importance_weights)
        global_min = self.weights == "global"
        self.min_tree = HostMinTree(self.capacity, self.fanout) if global_min else None

    def _stored(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(raw ** alpha, the same rounded by the format as the tree holds it)."""
        power, rounded = self._stored_fn(np.asarray(raw, np.float32))
        return np.asarray(power, np.float32), np.asarray(rounded, np.float32)

    def _write(self, state: HostReplayState, indices: np.ndarray, raw: np.ndarray) -> None:
        """Priorities (before alpha) into both trees and the host copies; last write wins."""
        power, rounded = self._stored(raw)
        self.backend.update(indices, power)
        keep = last_wins(indices)
        state.leaves[indices[keep]] = rounded[keep]
        state.stored[indices[keep]] = power[keep]
        if self.min_tree is not None:
            self.min_tree.update(indices[keep], power[keep])

    def init(self, example_item) -> HostReplayState:
        """Empty buffer for items like `example_item` (unbatched); resets the backend's tree.
        O(N)."""
        self.backend.reset()
        if self.min_tree is not None:
            self.min_tree.reset()
        items = jax.tree.map(
            lambda x: np.zeros((self.capacity,) + np.shape(x), np.asarray(x).dtype), example_item
        )
        return HostReplayState(
            items=items,
            leaves=np.zeros((self.capacity,), np.float32),
            stored=np.zeros((self.capacity,), np.float32),
            insert_pos=_scalar(0, np.int32),
            size=_scalar(0, np.int32),
            max_priority=_scalar(1.0, np.float32),
            added=_scalar(0, np.int32),
        )

    def size(self, state: HostReplayState) -> int:
        """Filled slots. O(1)."""
        return int(state.size)

    def sync_backend(self, state: HostReplayState) -> None:
        """Rebuild the trees from the leaves of `state` (after a checkpoint restore): the trees
        are functions of their leaves, so the rebuilt ones are identical. O(N K)."""
        self.backend.reset()
        filled = np.arange(int(state.size), dtype=np.int32)
        if filled.size:
            self.backend.update(filled, np.asarray(state.stored)[filled])
        if self.min_tree is not None:
            self.min_tree.reset()
            if filled.size:
                self.min_tree.update(filled, np.asarray(state.stored)[filled])

    def add(self, state: HostReplayState, items, priorities=None) -> HostReplayState:
        """`PrioritizedReplay.add` as under jit: the items take `priorities` (raw, before
        alpha; NaN, inf or negative ones the largest priority seen) or, without them, the
        largest so far. O(M) host writes and one backend update of M leaves, in place. M = 0
        returns `state` unchanged."""
        items = jax.device_get(items)
        m = int(np.shape(jax.tree.leaves(items)[0])[0])
        if m == 0:
            return state  # the empty add: a no-op, as for every buffer
        slots = ((int(state.insert_pos) + np.arange(m)) % self.capacity).astype(np.int32)
        for buf, new in zip(jax.tree.leaves(state.items), jax.tree.leaves(items), strict=True):
            buf[slots] = new
        top = np.float32(state.max_priority)
        if priorities is None:
            raw = np.full((m,), top, np.float32)
        else:
            raw = host_add_priorities(priorities, m, top)
        self._write(state, slots, raw)
        return state.replace(
            insert_pos=_scalar((int(state.insert_pos) + m) % self.capacity, np.int32),
            size=_scalar(min(int(state.size) + m, self.capacity), np.int32),
            max_priority=_scalar(max(float(top), float(raw.max())), np.float32),
            added=_scalar(int(state.added) + m, np.int32),
        )

    def sample(self, state: HostReplayState, key, batch_size: int, beta) -> Sample:
        """`PrioritizedReplay.sample` (the same bits, indices and weights): one backend descent
        of B strata, O(B K log_K N), and a host gather of B items. Outputs are NumPy arrays.
        ValueError on an empty buffer."""
        size = int(state.size)
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer; add items first")
        bits = np.asarray(self._bits_fn(key, batch_size))
        indices = np.minimum(self.backend.sample_from_bits(bits, True), size - 1).astype(np.int32)
        min_total = None if self.min_tree is None else self.min_tree.root()
        probs, weights = self._weights_fn(
            state.leaves[indices], np.float32(self.backend.total()), min_total,
            np.int32(size), np.float32(beta),
        )
        items = jax.tree.map(lambda buf: buf[indices], state.items)
        return Sample(items=items, indices=indices, weights=np.asarray(weights),
                      probabilities=np.asarray(probs))

    def update(self, state: HostReplayState, indices, td_errors) -> HostReplayState:
        """`PrioritizedReplay.update` as under jit: out-of-range indices dropped, non-finite TD
        errors take the largest priority seen, the last of duplicates wins. O(B K log_K N)."""
        indices = np.asarray(indices, np.int32)
        raw = np.abs(np.asarray(td_errors, np.float32)) + np.float32(self.eps)
        finite = np.isfinite(raw)
        # Non-finite TD errors take the largest priority seen before this update.
        raw = np.where(finite, raw, state.max_priority).astype(np.float32)
        valid = (indices >= 0) & (indices < int(state.size))
        if valid.any():
            self._write(state, indices[valid], raw[valid])
        seen = raw[valid & finite]
        top = max(float(state.max_priority), float(seen.max()) if seen.size else 0.0)
        return state.replace(max_priority=_scalar(top, np.float32))


def make_host_replay(replay_cfg) -> HostPrioritizedReplay:
    """A HostPrioritizedReplay for `replay.backend` in HOST_BACKENDS (jax_host, opencl, rtl;
    see ReplayConfig): the thin variant `make_replay` builds for those backends. ValueError
    naming `replay.backend` for another; the backend allocates its tree, O(N)."""
    name = replay_cfg.backend
    if name not in HOST_BACKENDS:
        raise ValueError(
            f"config key 'replay.backend': expected 'jax' or one of {sorted(HOST_BACKENDS)}, "
            f"got {name!r}"
        )
    fmt = parse_format(replay_cfg.fmt)
    options = {}
    if name == "opencl" and getattr(replay_cfg, "opencl_device", None) is not None:
        options["device"] = replay_cfg.opencl_device
    backend = make_backend(HOST_BACKENDS[name], replay_cfg.capacity, replay_cfg.fanout, fmt,
                           **options)
    settings = {**tree_settings(replay_cfg), "fmt": fmt}
    del settings["impl"]  # the backend is the host tree's implementation
    return HostPrioritizedReplay(capacity=replay_cfg.capacity, backend=backend, **settings)
