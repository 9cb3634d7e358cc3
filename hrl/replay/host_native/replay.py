"""Prioritized replay for the host loops, held in NumPy and stepped by the C++ kernels directly
(`replay.backend: native_host`).

`PrioritizedReplay` with the native kernels, as `ReplayHandle`'s direct path runs it
(`packed.DirectState`), in the form of the `hrl.replay.interface.HostReplay` protocol: the
packed state (scalars, both trees in one word array, the transition
rows) in NumPy arrays, and every insert, sample and update one ctypes call into
`hrl_direct_step`. The results are the jitted buffer's bit for bit, non-finite TD errors
included (they take the largest priority so far, as under jit), so a host-loop run with this
backend equals the same run with `replay.backend: jax` (tests/replay/test_host_native.py).

Why a host loop wants it: a jitted replay call is an XLA program, queued behind the train step
when dispatch is asynchronous, so a relaxed dependency has nothing to overlap. Here the tree
is stepped by the host thread, and ctypes releases the GIL for the call: update(t-s) and
sample(t+1) run on one core while XLA runs train(t) on another
(`experiments/bench/bench_relaxed.py` measures the overlap).

The state (`HostNativeState`) is the three arrays, updated in place and returned, as the other
host replays do (`host_buffer.py`): a checkpoint stores them as they are, and a restore copies
them back into the arrays the kernels step (`sync_backend`).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from flax import struct

from hrl.replay.buffer import (
    PrioritizedReplay,
    ReplayState,
    Sample,
    host_add_priorities,
    make_prioritized_replay,
    tree_settings,
)
from hrl.replay.host_native.packed import (
    MAX_PRIORITY,
    SIZE,
    DirectState,
    Packing,
    direct_unavailable,
    key_words,
    packed_available,
)


@struct.dataclass
class HostNativeState:
    scalars: np.ndarray  # uint32 (4,): insert_pos, size, max_priority's bits, added
    trees: np.ndarray  # uint32: the sum tree's levels, then the min tree's (global weights)
    rows: np.ndarray  # uint32 (capacity, words per row): the transitions, packed

    @property
    def size(self) -> np.ndarray:
        return self.scalars.view(np.int32)[SIZE]


@dataclasses.dataclass(eq=False)
class HostNativeReplay:
    """The `HostReplay` protocol (`init`, `add`, `sample`, `update`, `size`, `sync_backend`)
    over one `PrioritizedReplay` with the native kernels and a fixed batch size: its results
    bit for bit, the state in NumPy arrays stepped in place. Not thread-safe."""

    replay: PrioritizedReplay
    batch_size: int

    def __post_init__(self):
        if not packed_available(self.replay):
            raise ValueError(
                "config key 'replay.backend': 'native_host' needs the native C++ kernels "
                "(replay.impl native or auto on a CPU where they build), a float32 or fixed "
                "priority format and partitionable threefry keys"
            )
        why = direct_unavailable(self.replay)
        if why is not None:
            raise ValueError(f"config key 'replay.backend': 'native_host' is not available "
                             f"with replay.alpha={self.replay.alpha}: {why}")
        self._direct = None

    # ------------------------------------------------------------------ state
    @property
    def capacity(self) -> int:
        """Slots in the ring."""
        return self.replay.capacity

    def init(self, example_item) -> HostNativeState:
        """Empty buffer for items like `example_item` (unbatched). O(N): allocates and packs
        the jitted buffer's empty state, so both start from the same words."""
        state = self.replay.init(example_item)
        packing = Packing.of(self.replay, state)
        scalars, trees = jax.jit(packing.pack)(state)
        self._packing, self._template = packing, state
        self._direct = DirectState(self.replay, scalars, trees, state.rows, state.layout,
                                   packing.level_shapes, packing.has_min, self.batch_size,
                                   nonfinite_td="max_priority")
        return self._state()

    def _state(self) -> HostNativeState:
        d = self._direct
        return HostNativeState(scalars=d.scalars, trees=d.trees, rows=d.rows)

    def _bound(self, state: HostNativeState):
        """The kernels' state, holding `state`'s values (copied in if `state` is a restored
        copy rather than the arrays the kernels step)."""
        d = self._direct
        if d is None:
            raise ValueError("native_host replay: call init() before using the buffer")
        if state.trees is not d.trees or state.scalars is not d.scalars or state.rows is not d.rows:
            d.load(state.scalars, state.trees, state.rows)
        return d

    def size(self, state: HostNativeState) -> int:
        """Filled slots (read from the packed scalars). O(1)."""
        return int(state.size)

    def sync_backend(self, state: HostNativeState) -> None:
        """Take `state` (restored from a checkpoint) as the buffer's contents."""
        self._bound(state)

    def replay_state(self, state: HostNativeState) -> ReplayState:
        """A copy of `state` as the jitted buffer's `ReplayState` (O(N); for tests)."""
        unpack = jax.jit(lambda s, t, r: self._packing.unpack(self._template, s, t, r))
        return self._bound(state).replay_state(unpack)

    # ------------------------------------------------------------------ operations
    def add(self, state: HostNativeState, items, priorities=None) -> HostNativeState:
        """`PrioritizedReplay.add` as under jit: the items take `priorities` (raw, before
        alpha; NaN, inf or negative ones the largest priority seen) or, without them, the
        largest so far. O(M) row writes and one C++ tree update of M leaves, in place. M = 0
        is a no-op."""
        items = jax.device_get(items)
        m = int(np.shape(jax.tree.leaves(items)[0])[0])
        if m == 0:
            return state  # the empty add: a no-op, as for every buffer
        raw = None if priorities is None else host_add_priorities(
            priorities, m, state.scalars.view(np.float32)[MAX_PRIORITY])
        self._bound(state).add(items, raw)
        return self._state()

    def sample(self, state: HostNativeState, key, batch_size: int, beta) -> Sample:
        """`PrioritizedReplay.sample` (the same bits): one C++ call, O(B K log_K N); the
        outputs are fresh NumPy arrays. `batch_size` must be the one built for (the output
        block is laid out once)."""
        if batch_size != self.batch_size:
            raise ValueError(f"native_host replay: batch_size {batch_size} differs from the "
                             f"{self.batch_size} it was built for")
        d = self._bound(state)
        size = int(state.size)
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer; add items first")
        return d.sample(key_words(key), np.float32(beta))

    def update(self, state: HostNativeState, indices, td_errors) -> HostNativeState:
        """`PrioritizedReplay.update` as under jit (out-of-range indices dropped, non-finite
        TD errors take the largest priority so far): one C++ call, O(B K log_K N)."""
        d = self._bound(state)
        idx = np.ascontiguousarray(indices, np.int32)
        td = np.ascontiguousarray(td_errors, np.float32)
        if idx.shape != td.shape or idx.ndim != 1:
            raise ValueError(f"update: indices {idx.shape} and td_errors {td.shape} must be "
                             "vectors of one length")
        d.update(idx, td)
        return self._state()


def make_host_native_replay(replay_cfg, batch_size: int) -> HostNativeReplay:
    """The `native_host` replay for a `ReplayConfig` and the run's batch size (the variant
    `hrl.replay.make_replay` picks for that backend)."""
    replay = make_prioritized_replay(replay_cfg.capacity, **tree_settings(replay_cfg))
    return HostNativeReplay(replay, batch_size)
