"""Prioritized replay for the host loops, held in NumPy and stepped by the C++ kernels directly
(`replay.backend: native_host`).

`PrioritizedReplay` with the native kernels, as `ReplayHandle`'s direct path runs it
(`handle_direct.py`): the packed state (scalars, both trees in one word array, the transition
rows) in NumPy arrays, and every insert, sample and update one ctypes call into
`hrl_direct_step`. The results are the jitted buffer's bit for bit, non-finite TD errors
included (they take the largest priority so far, as under jit), so a host-loop run with this
backend equals the same run with `replay.backend: jax` (tests/test_host_native.py).

Why a host loop wants it: a jitted replay call is an XLA program, queued behind the train step
when dispatch is asynchronous, so a relaxed dependency has nothing to overlap. Here the tree
is stepped by the host thread, and ctypes releases the GIL for the call: update(t-s) and
sample(t+1) run on one core while XLA runs train(t) on the other
(`experiments/bench_relaxed.py`).

The state (`HostNativeState`) is the three arrays, updated in place and returned, as the other
host replays do (`host_buffer.py`): a checkpoint stores them as they are, and a restore copies
them back into the arrays the kernels step (`sync_backend`).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from flax import struct

from hrl.replay.buffer import PrioritizedReplay, ReplayState, Sample

_SIZE = 1  # in the packed scalars: insert_pos, size, max_priority bits, added


@struct.dataclass
class HostNativeState:
    scalars: np.ndarray  # uint32 (4,): insert_pos, size, max_priority's bits, added
    trees: np.ndarray  # uint32: the sum tree's levels, then the min tree's (global weights)
    rows: np.ndarray  # uint32 (capacity, words per row): the transitions, packed

    @property
    def size(self) -> np.ndarray:
        return self.scalars.view(np.int32)[_SIZE]


@dataclasses.dataclass(eq=False)
class HostNativeReplay:
    """The host replay interface (`init`, `add`, `sample`, `update`, `sync_backend`) over one
    `PrioritizedReplay` with the native kernels and a fixed batch size."""

    replay: PrioritizedReplay
    batch_size: int

    def __post_init__(self):
        from hrl.replay.handle import _packed_available
        from hrl.replay.handle_direct import direct_unavailable

        if not _packed_available(self.replay):
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
    def init(self, example_item) -> HostNativeState:
        from hrl.replay.handle import _Packing
        from hrl.replay.handle_direct import DirectState

        state = self.replay.init(example_item)
        packing = _Packing.of(self.replay, state)
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

    def sync_backend(self, state: HostNativeState) -> None:
        """Take `state` (restored from a checkpoint) as the buffer's contents."""
        self._bound(state)

    def replay_state(self, state: HostNativeState) -> ReplayState:
        """A copy of `state` as the jitted buffer's `ReplayState` (O(N); for tests)."""
        unpack = jax.jit(lambda s, t, r: self._packing.unpack(self._template, s, t, r))
        return self._bound(state).replay_state(unpack)

    # ------------------------------------------------------------------ operations
    def add(self, state: HostNativeState, items) -> HostNativeState:
        self._bound(state).add(jax.device_get(items), None)
        return self._state()

    def sample(self, state: HostNativeState, key, batch_size: int, beta) -> Sample:
        if batch_size != self.batch_size:
            raise ValueError(f"native_host replay: batch_size {batch_size} differs from the "
                             f"{self.batch_size} it was built for")
        d = self._bound(state)
        size = int(state.size)
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer; add items first")
        return d.sample(_key_words(key), np.float32(beta))

    def update(self, state: HostNativeState, indices, td_errors) -> HostNativeState:
        d = self._bound(state)
        idx = np.ascontiguousarray(indices, np.int32)
        td = np.ascontiguousarray(td_errors, np.float32)
        if idx.shape != td.shape or idx.ndim != 1:
            raise ValueError(f"update: indices {idx.shape} and td_errors {td.shape} must be "
                             "vectors of one length")
        d.update(idx, td)
        return self._state()


def _key_words(key) -> np.ndarray:
    """The two uint32 words of one threefry key (raw or typed, on the host or a device)."""
    if not (isinstance(key, np.ndarray) and key.dtype == np.uint32):
        dtype = getattr(key, "dtype", None)
        if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        key = np.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise ValueError(f"key must be one PRNG key, got shape {key.shape} dtype {key.dtype}")
    return np.ascontiguousarray(key)


def make_host_native_replay(replay_cfg, batch_size: int) -> HostNativeReplay:
    """The `native_host` replay for a `ReplayConfig` and the run's batch size."""
    from hrl.replay.buffer import make_prioritized_replay

    replay = make_prioritized_replay(
        replay_cfg.capacity, alpha=replay_cfg.alpha, eps=replay_cfg.eps,
        fanout=replay_cfg.fanout, fmt=replay_cfg.fmt, weights=replay_cfg.weights,
        impl=replay_cfg.impl,
    )
    return HostNativeReplay(replay, batch_size)
