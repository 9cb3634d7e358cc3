"""Transitions packed as byte rows: one replay slot = one contiguous row of bytes.

A transition pytree (obs, action, reward, next_obs, done, ...) is stored as one row per slot,
its leaves' bytes side by side (padded to whole 32-bit words), instead of one array per leaf.
Sampling B transitions then touches B rows (one or two cache lines each) instead of B rows in
every leaf array: on a 2^20-slot buffer the gather is, after the tree descent, the largest cost
of a sample, and each leaf array would add its own B cache misses.

    layout = RowLayout.of(example_transition)   # static: structure, shapes, dtypes, offsets
    rows = layout.pack(transitions)             # (M, layout.row_words) uint32
    transitions = layout.unpack(rows)           # the same pytree back, bit for bit

Leaves keep their exact bits (`lax.bitcast_convert_type`); bool leaves are stored as 0/1 bytes.
Rows are uint32 words rather than bytes because XLA:CPU gathers word rows several times faster
than byte rows (the pure-JAX path gathers with XLA; the native path copies bytes either way).
A layout whose leaves are all whole words (float32, int32, 64-bit types; the usual case) packs
and unpacks word by word; only layouts with byte-sized leaves (bool, int8) go through bytes.
The two give the same bits, but inside a fused loop they do not cost the same: XLA fuses the
byte path's concatenation with whatever computes the leaves and then evaluates those producers
once per byte of the row, a large share of an iteration with one-step returns, where the
leaves are computed in the same step (experiments/bench/bench_cpu_threads.py measures it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


@dataclasses.dataclass(frozen=True)
class RowLayout:
    """Where each leaf of one transition lives in a row (static, hashable)."""

    treedef: Any
    names: tuple[str, ...]  # leaf paths, for error messages
    shapes: tuple[tuple[int, ...], ...]  # per-item shape of each leaf
    dtypes: tuple[np.dtype, ...]
    offsets: tuple[int, ...]  # first byte of each leaf in the row
    row_bytes: int  # bytes of the leaves; the row is padded to `row_words` 32-bit words

    @property
    def row_words(self) -> int:
        return -(-self.row_bytes // 4)

    @property
    def stored_bytes(self) -> int:
        """Replay memory one stored row takes: `row_words` 32-bit words (the leaves padded).
        The one place this rule is written; every replay memory figure reads it."""
        return 4 * self.row_words

    @functools.cached_property
    def field_sizes(self) -> tuple[int, ...]:
        """Bytes of each leaf in a row."""
        return tuple(
            math.prod(shape) * dtype.itemsize
            for shape, dtype in zip(self.shapes, self.dtypes, strict=True)
        )

    @property
    def whole_words(self) -> bool:
        """Every leaf is made of whole 32-bit words, so rows pack without a byte view."""
        return all(d != np.bool_ and d.itemsize % 4 == 0 for d in self.dtypes)

    @classmethod
    def of(cls, example_item) -> RowLayout:
        """The layout of transitions shaped like `example_item` (one, unbatched)."""
        with_paths, treedef = jax.tree_util.tree_flatten_with_path(example_item)
        if not with_paths:
            raise ValueError("items have no array leaves")
        names, shapes, dtypes, offsets = [], [], [], []
        offset = 0
        for path, leaf in with_paths:
            shape, dtype = tuple(np.shape(leaf)), np.dtype(jnp.asarray(leaf).dtype)
            names.append(jax.tree_util.keystr(path) or "<root>")
            shapes.append(shape)
            dtypes.append(dtype)
            offsets.append(offset)
            offset += math.prod(shape) * dtype.itemsize
        return cls(treedef, tuple(names), tuple(shapes), tuple(dtypes), tuple(offsets), offset)

    def pack(self, items) -> jax.Array:
        """(M, row_words) uint32 rows of a batch of M transitions (leading axis M)."""
        leaves = self.treedef.flatten_up_to(items)
        m = jnp.shape(leaves[0])[0]
        if self.whole_words:
            words = [lax.bitcast_convert_type(jnp.asarray(leaf), jnp.uint32).reshape(m, -1)
                     for leaf in leaves]
            return jnp.concatenate(words, axis=1) if len(words) > 1 else words[0]
        parts = []
        for leaf, dtype in zip(leaves, self.dtypes, strict=True):
            leaf = jnp.asarray(leaf)
            if dtype == np.bool_:
                leaf = leaf.astype(jnp.uint8)
            parts.append(lax.bitcast_convert_type(leaf, jnp.uint8).reshape(m, -1))
        pad = 4 * self.row_words - self.row_bytes
        if pad:
            parts.append(jnp.zeros((m, pad), jnp.uint8))
        data = jnp.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
        return lax.bitcast_convert_type(data.reshape(m, self.row_words, 4), jnp.uint32)

    def pack_numpy(self, leaves, out: np.ndarray | None = None) -> np.ndarray:
        """`pack` on the host: (M, row_words) uint32 rows from NumPy leaves (flattened, each
        already of the layout's dtype), the same bits (x86 and ARM are little-endian, as
        XLA's bitcasts assume). For callers that hold the rows in NumPy (ReplayHandle's direct
        path). `out`: an (M, row_words) uint32 array to write into."""
        m = leaves[0].shape[0]
        if out is None:
            out = np.zeros((m, self.row_words), np.uint32)
        elif 4 * self.row_words != self.row_bytes:
            out[:, -1] = 0  # the padding bytes, as `pack` writes them
        rows = out.view(np.uint8)
        for leaf, offset, size in zip(leaves, self.offsets, self.field_sizes, strict=True):
            rows[:, offset : offset + size] = leaf.reshape(m, -1).view(np.uint8)
        return out

    def unpack(self, rows: jax.Array):
        """The transitions held by (M, row_words) uint32 rows, as the original pytree."""
        m = rows.shape[0]
        if self.whole_words:
            leaves = []
            fields = zip(self.shapes, self.dtypes, self.offsets, self.field_sizes, strict=True)
            for shape, dtype, offset, size in fields:
                part = rows[:, offset // 4 : (offset + size) // 4]
                per_item = dtype.itemsize // 4
                part = part.reshape((m, *shape) + ((per_item,) if per_item > 1 else ()))
                leaves.append(lax.bitcast_convert_type(part, dtype))
            return self.treedef.unflatten(leaves)
        rows = lax.bitcast_convert_type(rows, jnp.uint8).reshape(m, 4 * self.row_words)
        leaves = []
        fields = zip(self.shapes, self.dtypes, self.offsets, self.field_sizes, strict=True)
        for shape, dtype, offset, size in fields:
            part = rows[:, offset : offset + size]
            if dtype == np.bool_:
                leaves.append(part.reshape((m, *shape)) != 0)
            elif dtype.itemsize == 1:
                leaves.append(lax.bitcast_convert_type(part.reshape((m, *shape)), dtype))
            else:
                part = part.reshape((m, *shape, dtype.itemsize))
                leaves.append(lax.bitcast_convert_type(part, dtype))
        return self.treedef.unflatten(leaves)
