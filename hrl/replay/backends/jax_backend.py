"""The `jax` replay backend: `hrl.replay.sumtree` (the reference) behind the host protocol.

Runs on any JAX device (CPU or GPU). Each call is one jitted `sumtree` function; jit caches
one executable per batch size, so a training loop with a fixed batch compiles once.
"""

from __future__ import annotations

import jax
import numpy as np

from hrl.replay import sumtree
from hrl.replay.backends import base
from hrl.replay.formats import PriorityFormat

# The backend owns its tree, so updates donate it: XLA then scatters in place instead of
# copying every level per call (O(B log N) instead of O(N) per update).
_update = jax.jit(sumtree.update, donate_argnums=0)
_update_words = jax.jit(sumtree.update_words, donate_argnums=0)
_sample_from_bits = jax.jit(sumtree.sample_from_bits, static_argnames="stratified")


def _resolve_device(device) -> jax.Device:
    if device is None:
        return jax.devices()[0]
    if isinstance(device, jax.Device):
        return device
    if isinstance(device, str):
        try:
            return jax.devices(device)[0]
        except RuntimeError as e:
            raise base.BackendUnavailableError(
                f"jax backend: no JAX device of platform {device!r} ({e}); "
                f"available: {[d.platform for d in jax.devices()]}"
            ) from None
    raise ValueError(f"device must be None, a platform name ('cpu', 'gpu') or a jax.Device, "
                     f"got {device!r}")


class JaxBackend:
    """`sumtree` on one JAX device. Options: `device` (None = JAX's default device, a platform
    name such as 'cpu' or 'gpu', or a `jax.Device`)."""

    name = "jax"

    def __init__(self, capacity: int, fanout: int = 16, fmt: PriorityFormat | str = "float32",
                 *, device=None):
        self.fmt, self.depth, _ = base.tree_geometry(capacity, fanout, fmt)
        self.capacity, self.fanout = int(capacity), int(fanout)
        self.device = _resolve_device(device)
        self.reset()

    def reset(self) -> None:
        with jax.default_device(self.device):
            self._tree = jax.device_put(
                sumtree.init(self.capacity, self.fanout, self.fmt), self.device
            )

    def update(self, indices, priorities) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_priorities(priorities, idx.shape[0])
        if idx.size:
            self._tree = _update(self._tree, idx, values)

    def update_words(self, indices, words) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_words(words, idx.shape[0], self.fmt)
        if idx.size:
            self._tree = _update_words(self._tree, idx, values)

    def sample_from_bits(self, bits, stratified: bool = True) -> np.ndarray:
        bits = base.check_bits(bits)
        base.require_nonempty(np.asarray(self._tree.levels[0])[0])
        return np.asarray(_sample_from_bits(self._tree, bits, stratified=bool(stratified)))

    def total(self) -> float:
        return base.decode_root(self.fmt, np.asarray(self._tree.levels[0])[0], self.depth,
                                self.fanout)

    def level_words(self) -> list[np.ndarray]:
        return [np.array(level) for level in self._tree.levels]

    def load_level_words(self, levels) -> None:
        levels = base.check_levels(levels, self.capacity, self.fanout, self.fmt)
        self._tree = self._tree.replace(
            levels=tuple(jax.device_put(level, self.device) for level in levels)
        )

    @property
    def tree(self) -> sumtree.SumTree:
        """The current `SumTree` pytree (for code that stays in JAX). The next update donates
        its buffers, so use it before then or copy it."""
        return self._tree
