"""The sum-tree operations of `hrl.replay.sumtree`, backed by the C++ FFI kernels.

Same signatures, same `SumTree` pytree and the same semantics as the reference (see
`sumtree_ffi.cc` for the one float32 caveat), so a caller switches with one flag. Each batched
operation is one XLA custom call: O(B log_K N) row reads in scalar C++ instead of dozens of
XLA ops, and no argsort for duplicates (writes are applied in batch order, so the last wins).

In place: `update_words` aliases every level of the tree to its output. Under `jax.jit`, pass
the tree as a donated argument (`donate_argnums`) or carry it through `lax.scan`; otherwise
XLA must copy the whole tree (O(N)) to keep the caller's input alive.

vmap (nested too): one custom call takes the whole stack of instances, and the C++ runs the
single-instance kernel on each one's slice in place ("sequential" would loop in XLA, copying
every instance's tree out and back in each call). Updates use "broadcast_all": an aliased tree
must have its result's shape, so a tree shared across the batch is copied once per instance.
Reads use "expand_dims": an unbatched tree or table stays one copy that every instance reads.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hrl.replay.formats import FixedPoint, Float32, MinFloat32
from hrl.replay.native._build import ensure_registered
from hrl.replay.sumtree import SumTree

# How each kernel batches under vmap (see the module docstring).
_UPDATE_VMAP = "broadcast_all"
_READ_VMAP = "expand_dims"


def _suffix(tree: SumTree, sampling: bool = False) -> str:
    """The kernel variant for the tree's format (a min tree can be updated, not sampled)."""
    fmt = tree.fmt
    if isinstance(fmt, Float32):
        return "f32"
    if isinstance(fmt, FixedPoint):
        return "u32"
    if isinstance(fmt, MinFloat32) and not sampling:
        return "min_f32"
    what = "sampling" if sampling else "updating"
    raise ValueError(f"the native kernels do not support {what} a tree of format {fmt!r}")


def _check_indices(indices) -> jax.Array:
    indices = jnp.asarray(indices)
    if indices.ndim != 1 or not jnp.issubdtype(indices.dtype, jnp.integer):
        raise ValueError(
            f"indices must be a 1-D integer array, got shape {indices.shape} dtype {indices.dtype}"
        )
    return indices.astype(jnp.int32)


def update_words(tree: SumTree, indices, words) -> SumTree:
    """Set raw leaf words (already in the tree's format) and fix every ancestor, in place.

    Duplicates: last in batch order wins. Out-of-range indices are dropped, never wrapped.
    O(B log_K N) row reads and writes; no sort.
    """
    ensure_registered()
    indices = _check_indices(indices)
    words = jnp.asarray(words, tree.fmt.dtype)
    if words.shape != indices.shape:
        raise ValueError(f"priorities shape {words.shape} != indices shape {indices.shape}")
    n_levels = len(tree.levels)
    call = jax.ffi.ffi_call(
        f"hrl_sumtree_update_{_suffix(tree)}",
        tuple(jax.ShapeDtypeStruct(level.shape, level.dtype) for level in tree.levels),
        input_output_aliases={2 + i: i for i in range(n_levels)},
        vmap_method=_UPDATE_VMAP,
    )
    levels = call(
        indices,
        words,
        *tree.levels,
        fanout=np.int64(tree.fanout),
        capacity=np.int64(tree.capacity),
    )
    return tree.replace(levels=tuple(levels))


def update(tree: SumTree, indices, priorities) -> SumTree:
    """Set leaf priorities (real values, encoded by the tree's format); last write wins."""
    return update_words(tree, indices, tree.fmt.encode(priorities))


def sample_from_bits(tree: SumTree, bits, stratified: bool = True) -> jax.Array:
    """Indices for B uniform 32-bit random words; bit-exact with `sumtree.sample_from_bits`
    on the same tree. The tree must be non-empty (total > 0). O(B K log_K N).
    """
    ensure_registered()
    bits = jnp.asarray(bits, jnp.uint32)
    if bits.ndim != 1:
        raise ValueError(f"bits must be 1-D, got shape {bits.shape}")
    call = jax.ffi.ffi_call(
        f"hrl_sumtree_sample_{_suffix(tree, sampling=True)}",
        jax.ShapeDtypeStruct(bits.shape, jnp.int32),
        vmap_method=_READ_VMAP,
    )
    return call(bits, *tree.levels, fanout=np.int64(tree.fanout), stratified=bool(stratified))


@functools.partial(jax.jit, static_argnames=("batch_size", "stratified"))
def sample(tree: SumTree, key: jax.Array, batch_size: int, stratified: bool = True):
    """Draw `batch_size` indices with probability proportional to priority (int32)."""
    bits = jax.random.bits(key, (batch_size,), jnp.uint32)
    return sample_from_bits(tree, bits, stratified)


def threefry_key_words(key) -> jax.Array | None:
    """The two uint32 words of `key` if `jax.random.bits(key, ...)` is the partitionable
    Threefry-2x32 hash that `sample_with_key` reproduces, else None (then draw the bits in
    XLA and call `sample_from_bits`)."""
    if not jax.config.jax_threefry_partitionable:
        return None
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if str(jax.random.key_impl(key)) != "threefry2x32" or key.shape != ():
            return None
        return jax.random.key_data(key)
    if key.shape != (2,) or key.dtype != jnp.uint32:
        return None
    if jax.config.jax_default_prng_impl != "threefry2x32":
        return None
    return key


def sample_with_key(
    tree: SumTree, key_words, size, batch_size: int, stratified: bool = True, rows=None
):
    """`(indices, leaf_words)`: the buffer's sampling step in one call. Equal, bit for bit, to

        bits = jax.random.bits(key, (batch_size,), jnp.uint32)
        idx = minimum(sumtree.sample_from_bits(tree, bits, stratified), max(size - 1, 0))
        leaf_words = tree.levels[-1].reshape(-1)[idx]

    for the Threefry key whose words `threefry_key_words` returned. `rows` (optional): a
    table whose sampled rows are prefetched into the cache for the gather that follows.
    """
    ensure_registered()
    key_words = jnp.asarray(key_words, jnp.uint32)
    if key_words.shape != (2,):
        raise ValueError(f"key words must have shape (2,), got {key_words.shape}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    call = jax.ffi.ffi_call(
        f"hrl_replay_sample_{_suffix(tree, sampling=True)}",
        (
            jax.ShapeDtypeStruct((batch_size,), jnp.int32),
            jax.ShapeDtypeStruct((batch_size,), tree.fmt.dtype),
        ),
        vmap_method=_READ_VMAP,
    )
    rows = jnp.zeros((0,), jnp.uint32) if rows is None else rows
    indices, words = call(
        key_words,
        jnp.asarray(size, jnp.int32),
        rows,
        *tree.levels,
        fanout=np.int64(tree.fanout),
        stratified=bool(stratified),
    )
    return indices, words


def gather_fields(table, indices, layout):
    """`layout.unpack(table[indices])` in one pass: the sampled rows of packed transitions
    (`hrl.replay.rows.RowLayout`) copied straight into their leaves, indices clamped."""
    ensure_registered()
    indices = _check_indices(indices)
    if table.ndim != 2 or table.shape[0] < 1:
        raise ValueError(f"the table must be 2-D with at least one row, got {table.shape}")
    call = jax.ffi.ffi_call(
        "hrl_gather_fields",
        tuple(
            jax.ShapeDtypeStruct(indices.shape + shape, dtype)
            for shape, dtype in zip(layout.shapes, layout.dtypes, strict=True)
        ),
        vmap_method=_READ_VMAP,
    )
    leaves = call(
        indices,
        table,
        offsets=np.asarray(layout.offsets, np.int64),
        sizes=np.asarray(layout.field_sizes, np.int64),
    )
    return layout.treedef.unflatten(list(leaves))


def replay_update(
    tree: SumTree, min_tree: SumTree | None, indices, raw, stored, size, max_priority
):
    """`(tree, min_tree, max_priority)` after the buffer's priority update, in one call.

    `raw` are the new priorities `|td| + eps`, `stored` the same before encoding (`raw **
    alpha`, non-finite entries already replaced); the call writes `tree.fmt.encode(stored)`
    into the sum tree and `stored` into the min tree (if any) at the indices in [0, size),
    drops the others, and returns max(max_priority, raw over the kept, finite entries). Equal
    to the reference path of `PrioritizedReplay.update` bit for bit.
    """
    ensure_registered()
    indices = _check_indices(indices)
    raw = jnp.asarray(raw, jnp.float32)
    stored = jnp.asarray(stored, jnp.float32)
    if raw.shape != indices.shape or stored.shape != indices.shape:
        raise ValueError(f"indices {indices.shape}, raw {raw.shape}, stored {stored.shape} differ")
    n_sum = len(tree.levels)
    levels = tuple(tree.levels) + (tuple(min_tree.levels) if min_tree is not None else ())
    first_level = 6  # indices, raw, words, min values, size, max priority
    call = jax.ffi.ffi_call(
        f"hrl_replay_update_{_suffix(tree)}",
        (jax.ShapeDtypeStruct((), jnp.float32),)
        + tuple(jax.ShapeDtypeStruct(level.shape, level.dtype) for level in levels),
        input_output_aliases={first_level + i: 1 + i for i in range(len(levels))},
        vmap_method=_UPDATE_VMAP,
    )
    max_priority, *out = call(
        indices,
        raw,
        jnp.asarray(tree.fmt.encode(stored), tree.fmt.dtype),
        stored,
        jnp.asarray(size, jnp.int32),
        jnp.asarray(max_priority, jnp.float32),
        *levels,
        fanout=np.int64(tree.fanout),
        capacity=np.int64(tree.capacity),
        n_sum_levels=np.int64(n_sum),
    )
    tree = tree.replace(levels=tuple(out[:n_sum]))
    if min_tree is not None:
        min_tree = min_tree.replace(levels=tuple(out[n_sum:]))
    return tree, min_tree, max_priority
