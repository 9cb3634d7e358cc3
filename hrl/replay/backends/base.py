"""The host protocol every replay-tree backend implements, and the input checks they share.

A backend owns one K-ary sum tree (capacity, fanout, priority format fixed at construction)
wherever it lives: JAX arrays on a CPU/GPU, OpenCL buffers on any OpenCL device (or an FPGA
through an xclbin), the RTL in simulation. The host talks to it in numpy: arrays in, arrays
out. The semantics are those of `hrl.replay.sumtree` (read its docstring), which is the
reference every backend reproduces: last write wins for duplicate indices, parents recomputed
from children, fixed point bit for bit.

Unlike `hrl.replay.sumtree`, a backend is stateful: the tree stays in the device's memory
between calls (an FPGA kernel keeps it in on-chip RAM), so `update` mutates it in place.
Calls on one backend take effect in call order; `update` may return before the device has
finished, and any call that returns data (`sample_from_bits`, `total`, `level_words`) waits
for everything issued before it. A backend is not thread-safe.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from hrl.replay.formats import (
    FixedPoint,
    Float32,
    PriorityFormat,
    level_sizes,
    log2_exact,
    parse_format,
    tree_depth,
)
from hrl.replay.sumtree import MAX_FANOUT


class BackendUnavailableError(RuntimeError):
    """A backend's runtime (a library, a device, a simulator) is not installed or not found.
    The message says what to install."""


@runtime_checkable
class TreeBackend(Protocol):
    """What the training runtime and the mapping framework may call on a replay tree.

    Attributes: `name` (registry name), `capacity` (leaves), `fanout` (K), `depth`
    (D = levels below the root), `fmt` (a `formats.Float32` or `formats.FixedPoint`).
    Words are float32 for `Float32` and uint32 for `FixedPoint`.
    """

    name: str
    capacity: int
    fanout: int
    depth: int
    fmt: PriorityFormat

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set leaf priorities (real values >= 0, finite; encoded by `fmt`) and fix every
        ancestor. Duplicate indices: the last in batch order wins. An empty batch is a no-op."""

    def update_words(self, indices: np.ndarray, words: np.ndarray) -> None:
        """Like `update`, with leaf words already in the tree's format (uint32 words
        <= fmt.max_word for fixed point; float32 priorities otherwise)."""

    def sample_from_bits(self, bits: np.ndarray, stratified: bool = True) -> np.ndarray:
        """int32 leaf indices, one per uint32 random word in `bits` (1-D, non-empty), as
        `sumtree.sample_from_bits`. Raises ValueError on an empty tree (total 0)."""

    def total(self) -> float:
        """The root decoded to a real number (float32 precision): the sum of priorities."""

    def level_words(self) -> list[np.ndarray]:
        """Every level's words, root first, shaped like `sumtree.SumTree.levels`: (1,) for
        the root, (n_{l-1}, K) for level l >= 1. A copy; for equivalence checks and
        checkpoints."""

    def load_level_words(self, levels: list[np.ndarray]) -> None:
        """Overwrite the whole tree with words from `level_words` (same capacity, fanout and
        format): restores a checkpoint. The levels are taken as they are (not recomputed)."""

    def reset(self) -> None:
        """Set every word to zero (an empty tree)."""


# --------------------------------------------------------------------------- shared checks


def tree_geometry(capacity: int, fanout: int, fmt: PriorityFormat | str):
    """Validate (capacity, fanout, fmt) exactly as `sumtree.init` does and return
    (fmt, depth, level sizes in words, root first)."""
    log2_exact(fanout)
    if fanout > MAX_FANOUT:
        raise ValueError(f"fanout must be <= {MAX_FANOUT}, got {fanout}")
    tree_fmt = parse_format(fmt)
    if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
        raise ValueError(f"capacity must be a positive int, got {capacity!r}")
    if capacity >= 2**31:
        raise ValueError(f"capacity must be < 2**31 (int32 indices), got {capacity}")
    capacity, fanout = int(capacity), int(fanout)
    depth = tree_depth(capacity, fanout)
    tree_fmt.validate(fanout, depth)
    return tree_fmt, depth, level_sizes(capacity, fanout)


def word_dtype(fmt: PriorityFormat) -> np.dtype:
    return np.dtype(np.uint32) if isinstance(fmt, FixedPoint) else np.dtype(np.float32)


def check_indices(indices, capacity: int) -> np.ndarray:
    """1-D integer indices in [0, capacity) -> int32, or a ValueError naming the bad value."""
    arr = np.asarray(indices)
    if arr.ndim == 1 and arr.size == 0:  # an empty list arrives as float64
        return np.zeros(0, np.int32)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise ValueError(
            f"indices must be a 1-D integer array, got shape {arr.shape} dtype {arr.dtype}"
        )
    bad = np.flatnonzero((arr < 0) | (arr >= capacity))
    if bad.size:
        raise ValueError(
            f"indices[{bad[0]}]={arr[bad[0]]} is out of range [0, capacity={capacity})"
        )
    return arr.astype(np.int32)


def check_priorities(priorities, n: int, what: str = "priorities") -> np.ndarray:
    """1-D real values, finite and >= 0 as float32, of length n."""
    arr = np.asarray(priorities)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{what} must have shape ({n},) like indices, got {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{what} must be real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore"):  # overflow to inf is reported just below
        values = arr.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{what}[{i}]={arr[i].item()!r} must be finite, >= 0 and within float32 range"
        )
    return values


def check_words(words, n: int, fmt: PriorityFormat) -> np.ndarray:
    """Leaf words in the tree's format: uint32 in [0, max_word] (fixed) or priorities."""
    if isinstance(fmt, Float32):
        return check_priorities(words, n, "words")
    arr = np.asarray(words)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"words must have shape ({n},) like indices, got {arr.shape}")
    if n == 0:
        return np.zeros(0, np.uint32)
    if not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise ValueError(f"fixed-point words must be integers, got dtype {arr.dtype}")
    bad = np.flatnonzero((arr < 0) | (arr > fmt.max_word))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"words[{i}]={arr[i]} is out of range [0, 2**{fmt.word_bits}-1={fmt.max_word}]"
        )
    return arr.astype(np.uint32)


def check_bits(bits) -> np.ndarray:
    """A non-empty 1-D array of 32-bit random words -> uint32."""
    arr = np.asarray(bits)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"bits must be a non-empty 1-D array, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise ValueError(f"bits must be unsigned 32-bit integers, got dtype {arr.dtype}")
    if arr.dtype != np.uint32:
        bad = np.flatnonzero((arr < 0) | (arr > 0xFFFFFFFF))
        if bad.size:
            raise ValueError(f"bits[{bad[0]}]={arr[bad[0]]} is out of range [0, 2**32-1]")
    return arr.astype(np.uint32)


def check_levels(levels, capacity: int, fanout: int, fmt: PriorityFormat) -> list[np.ndarray]:
    """Level words shaped and typed as `level_words` returns them (fixed words in range)."""
    sizes = level_sizes(capacity, fanout)
    shapes = [(1,)] + [(size // fanout, fanout) for size in sizes[1:]]
    dtype = word_dtype(fmt)
    levels = list(levels)
    if len(levels) != len(shapes):
        raise ValueError(f"expected {len(shapes)} levels (root first), got {len(levels)}")
    out = []
    for level, (words, shape) in enumerate(zip(levels, shapes, strict=True)):
        arr = np.asarray(words)
        if arr.shape != shape or arr.dtype != dtype:
            raise ValueError(
                f"level {level} must have shape {shape} dtype {dtype}, "
                f"got shape {arr.shape} dtype {arr.dtype}"
            )
        if isinstance(fmt, FixedPoint) and int(arr.max(initial=0)) > fmt.max_word:
            raise ValueError(f"level {level} holds words above max_word={fmt.max_word}")
        if isinstance(fmt, Float32) and not (np.isfinite(arr).all() and (arr >= 0).all()):
            raise ValueError(f"level {level} holds values that are not finite and >= 0")
        out.append(np.ascontiguousarray(arr))
    return out


def decode_root(fmt: PriorityFormat, word, depth: int, fanout: int) -> float:
    """The root word as a real number, with the reference's float32 arithmetic."""
    if isinstance(fmt, Float32):
        return float(np.float32(word))
    f = fmt.frac_bits(0, depth, fanout)
    return float(np.float32(np.uint32(word)) * np.float32(2.0**-f))


def require_nonempty(root_word) -> None:
    if root_word == 0:
        raise ValueError("cannot sample from an empty tree (total priority is 0)")
