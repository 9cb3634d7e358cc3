"""K-ary sum tree as pure functions over a pytree: the reference semantics of hrl's replay.

Layout: level 0 is the root; level D holds the leaves. Level l >= 1 is stored as a 2-D array
of shape (n_{l-1}, K): row j holds the K children of node j of level l-1, so one node's
children are read with one row gather (the same K-bank organisation as the RTL). Leaf i sits in
row i // K, column i % K; its ancestor at level l is i // K**(D-l).

Semantics every backend (JAX, OpenCL, RTL) reproduces:
* `update` with duplicate indices in one batch: the LAST occurrence in batch order wins.
* Parents are recomputed from their children after every update (never incremented by
  deltas), so the root equals the sum of the leaves after any number of operations: exactly in
  fixed point (up to the documented round-up, see `formats`), to float32 rounding otherwise.
* Sampling never returns a zero-priority leaf, and every non-zero leaf is reachable.

The tree is `f(state, inputs) -> outputs` style: everything jits, vmaps and scans. Static
settings (capacity, fanout, format) live outside the pytree leaves so jit never retraces.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct

from hrl.replay.formats import (
    Float32,
    PriorityFormat,
    level_sizes,
    log2_exact,
    mulhi_u32,
    parse_format,
    stratify_bits,
    tree_depth,
)

MAX_FANOUT = 64


@struct.dataclass
class SumTree:
    """State of a K-ary sum tree. `levels[0]` is the root (shape (1,)); `levels[l]`,
    l >= 1, has shape (n_{l-1}, K). Words have the format's dtype."""

    levels: tuple[jax.Array, ...]
    capacity: int = struct.field(pytree_node=False)
    fanout: int = struct.field(pytree_node=False)
    fmt: PriorityFormat = struct.field(pytree_node=False, default=Float32())

    @property
    def depth(self) -> int:
        return len(self.levels) - 1


def init(capacity: int, fanout: int = 16, fmt: PriorityFormat | str = "float32") -> SumTree:
    """An empty tree of `capacity` leaves (all priorities 0). O(N) memory."""
    if not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity must be a positive int, got {capacity!r}")
    log2_exact(fanout)
    if fanout > MAX_FANOUT:
        raise ValueError(f"fanout must be <= {MAX_FANOUT}, got {fanout}")
    fmt = parse_format(fmt)
    fmt.validate(fanout, tree_depth(capacity, fanout))
    sizes = level_sizes(capacity, fanout)
    levels = (jnp.full((1,), fmt.empty_word, fmt.dtype),) + tuple(
        jnp.full((size // fanout, fanout), fmt.empty_word, fmt.dtype) for size in sizes[1:]
    )
    return SumTree(levels=levels, capacity=capacity, fanout=fanout, fmt=fmt)


def _check_indices(tree: SumTree, indices) -> jax.Array:
    indices = jnp.asarray(indices)
    if indices.ndim != 1 or not jnp.issubdtype(indices.dtype, jnp.integer):
        raise ValueError(
            f"indices must be a 1-D integer array, got shape {indices.shape} dtype {indices.dtype}"
        )
    return indices.astype(jnp.int32)


def last_occurrence_mask(indices: jax.Array) -> jax.Array:
    """True where no later element of `indices` equals this one (the last write wins).

    O(B log B): a stable sort keeps batch order among equal indices, so the last of each run
    of equal sorted values is the last occurrence in batch order.
    """
    order = jnp.argsort(indices, stable=True)
    sorted_idx = indices[order]
    is_last_sorted = jnp.append(sorted_idx[1:] != sorted_idx[:-1], True)
    return jnp.zeros(indices.shape, bool).at[order].set(is_last_sorted)


def _set_prefix(level: jax.Array, values: jax.Array) -> jax.Array:
    """`level` with its first len(values) words (in row-major order) replaced by `values`.
    A write of the whole level is the values themselves: XLA:CPU of jax 0.11 crashes when it
    partitions a whole-array `.at[:n].set` inside `shard_map` (the sharded replay's update)."""
    flat = level.reshape(-1)
    if values.shape[0] == flat.shape[0]:
        return values.astype(level.dtype).reshape(level.shape)
    return flat.at[: values.shape[0]].set(values).reshape(level.shape)


def _recompute_ancestors(tree: SumTree, levels: list, leaf_indices: jax.Array) -> list:
    """Rewrite every ancestor of `leaf_indices` from its children, level by level, bottom up.

    Duplicate ancestors in the batch all write the same value (it is computed from the
    already-updated children), so scatter order cannot matter. A level narrower than the
    batch is recomputed whole (one reshape-reduce), which is cheaper than B row gathers.
    O(B K D) gathers in the worst case.
    """
    k, fmt = tree.fanout, tree.fmt
    node = leaf_indices
    for level in range(tree.depth - 1, -1, -1):
        node = node // k  # index of the ancestor at `level` (= row in levels[level + 1])
        children = levels[level + 1]
        rows = children.shape[0]
        if rows <= node.shape[0]:
            parents = fmt.combine(children, k)  # (rows,); the level may pad up to a full row
            levels[level] = _set_prefix(levels[level], parents)
        else:
            values = fmt.combine(children[node], k)
            flat = levels[level].reshape(-1).at[node].set(values, mode="drop")
            levels[level] = flat.reshape(levels[level].shape)
    return levels


def update_words(tree: SumTree, indices, words) -> SumTree:
    """Set raw leaf words (already in the tree's format) and fix every ancestor.

    Duplicates: last in batch order wins. Indices must lie in [0, capacity); the caller checks
    (see `update` and `hrl.replay.buffer`); out-of-range rows are dropped, never wrapped.
    """
    indices = _check_indices(tree, indices)
    words = jnp.asarray(words, tree.fmt.dtype)
    if words.shape != indices.shape:
        raise ValueError(f"priorities shape {words.shape} != indices shape {indices.shape}")
    keep = last_occurrence_mask(indices)
    in_range = (indices >= 0) & (indices < tree.capacity)
    target = jnp.where(keep & in_range, indices, tree.levels[-1].size)  # size -> dropped
    levels = list(tree.levels)
    leaves = levels[-1].reshape(-1).at[target].set(words, mode="drop")
    levels[-1] = leaves.reshape(levels[-1].shape)
    levels = _recompute_ancestors(tree, levels, jnp.where(in_range, indices, 0))
    return tree.replace(levels=tuple(levels))


def update(tree: SumTree, indices, priorities) -> SumTree:
    """Set leaf priorities (real values, encoded by the tree's format) for a batch of indices.

    Last write wins for duplicate indices. Priorities must be finite and >= 0 (the buffer
    layer validates user input; here negative values are clamped to 0 by the format).
    O(B log B + B K D).
    """
    return update_words(tree, indices, tree.fmt.encode(priorities))


def total(tree: SumTree) -> jax.Array:
    """Sum of all priorities (the root), as float32."""
    return tree.fmt.decode(tree.levels[0][0], 0, tree.depth, tree.fanout)


def leaves(tree: SumTree) -> jax.Array:
    """The `capacity` leaf priorities as float32."""
    flat = tree.levels[-1].reshape(-1)[: tree.capacity]
    return tree.fmt.decode(flat, tree.depth, tree.depth, tree.fanout)


def leaf_words(tree: SumTree) -> jax.Array:
    """The `capacity` leaf words in the tree's own format (uint32 for fixed point)."""
    return tree.levels[-1].reshape(-1)[: tree.capacity]


def leaf_values(tree: SumTree, indices) -> jax.Array:
    """Priorities of the given leaves as float32: B gathers, no O(N) slice of the leaf level."""
    indices = _check_indices(tree, indices)
    words = tree.levels[-1].reshape(-1)[indices]
    return tree.fmt.decode(words, tree.depth, tree.depth, tree.fanout)


def probabilities(tree: SumTree, indices) -> jax.Array:
    """P(i) = priority_i / total for each index, float32."""
    return leaf_values(tree, indices) / total(tree)


# --------------------------------------------------------------------------- sampling


def descend_float(levels, fanout: int, target: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Prefix-sum descent of float targets from the root of `levels` (a `SumTree.levels`
    tuple): returns the leaf index and what is left of each target below it.

    Split out so that a forest of trees (`hrl.replay.sharded`) descends a tree of shard roots
    first and each shard's own tree after it with the same arithmetic as one tree."""
    k = fanout
    node = jnp.zeros(target.shape, jnp.int32)
    cols = jnp.arange(k, dtype=jnp.int32)
    for level in range(1, len(levels)):
        children = levels[level][node]  # (B, K)
        inclusive = jnp.cumsum(children, axis=-1)
        exclusive = inclusive - children
        child = jnp.sum(inclusive <= target[:, None], axis=-1, dtype=jnp.int32)
        # Past the end only through float rounding: take the last non-zero child.
        last_nonzero = jnp.max(jnp.where(children > 0, cols, 0), axis=-1)
        overflow = child >= k
        child = jnp.where(overflow, last_nonzero, child)
        picked = jnp.take_along_axis(exclusive, child[:, None], axis=-1)[:, 0]
        target = jnp.maximum(target - picked, 0.0)
        node = node * k + child
    return node, target


def float_targets(fractions: jax.Array, root: jax.Array) -> jax.Array:
    """Root-level float targets u = frac * 2**-32 * root."""
    return fractions.astype(jnp.float32) * jnp.float32(2.0**-32) * root


def _descend_float(tree: SumTree, fractions: jax.Array) -> jax.Array:
    """Prefix-sum descent with float targets u = frac * total."""
    target = float_targets(fractions, tree.levels[0][0])
    return descend_float(tree.levels, tree.fanout, target)[0]


def fixed_targets(fractions: jax.Array, root: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The 64-bit product frac * root as (high word t: the root-level target, low word: the
    log2(K) fresh digits of every level below, most significant first)."""
    fractions = fractions.astype(jnp.uint32)
    t = mulhi_u32(fractions, jnp.broadcast_to(root, fractions.shape))
    return t, fractions * root  # uint32 wraps: the low word of the product


def descend_fixed(
    levels, fanout: int, t: jax.Array, low: jax.Array, levels_above: int = 0
) -> tuple[jax.Array, jax.Array]:
    """Integer descent from the root of `levels` (see `formats` for the rules): returns the leaf
    index and the remainder t left below it. `levels_above`: how many levels of an enclosing
    tree lie above this root (their digits of `low` are already used): 0 for a whole tree,
    the depth of the tree of shard roots for a shard of `hrl.replay.sharded`."""
    k = fanout
    s = log2_exact(k)
    mask = jnp.uint32(k - 1)
    node = jnp.zeros(t.shape, jnp.int32)
    cols = jnp.arange(k, dtype=jnp.int32)
    for level in range(1, len(levels)):
        digit_level = levels_above + level
        digit = (
            (low >> (32 - digit_level * s)) & mask if digit_level * s <= 32 else jnp.uint32(0)
        )
        children = levels[level][node]  # (B, K) uint32
        # Inclusive prefix sums split at log2(K) so nothing overflows 32 bits:
        # P = hi * K + lo with lo < K.
        lo_cum = jnp.cumsum(children & mask, axis=-1, dtype=jnp.uint32)
        hi = jnp.cumsum(children >> s, axis=-1, dtype=jnp.uint32) + (lo_cum >> s)
        lo = lo_cum & mask
        tt, dd = t[:, None], digit[:, None]
        le = (hi < tt) | ((hi == tt) & (lo <= dd))  # P_incl <= T, T = t*K + d
        child = jnp.sum(le, axis=-1, dtype=jnp.int32)
        last_nonzero = jnp.max(jnp.where(children > 0, cols, 0), axis=-1)
        overflow = child >= k
        child = jnp.where(overflow, last_nonzero, child)
        picked = jnp.take_along_axis(children, child[:, None], axis=-1)[:, 0]
        # Exclusive prefix with wrap-around; T - P_excl < child value < 2**32 is exact mod 2**32.
        exclusive = jnp.cumsum(children, axis=-1, dtype=jnp.uint32) - children
        p_excl = jnp.take_along_axis(exclusive, child[:, None], axis=-1)[:, 0]
        remainder = ((t << s) | digit) - p_excl
        t = jnp.where(overflow, picked - jnp.uint32(1), remainder)
        node = node * k + child
    return node, t


def _descend_fixed(tree: SumTree, fractions: jax.Array) -> jax.Array:
    """Integer descent (see `formats` for the rules); bit-exact with OpenCL and RTL.

    The 64-bit product frac * root gives the root-level target t (high word) and, in its low
    word, log2(K) fresh digits for each level below (most significant first).
    """
    t, low = fixed_targets(fractions, tree.levels[0][0])
    return descend_fixed(tree.levels, tree.fanout, t, low)[0]


def sample_from_bits(tree: SumTree, bits, stratified: bool = True) -> jax.Array:
    """Indices for B uniform 32-bit random words (the host interface of every backend).

    Stratified: sample i targets the i-th 1/B slice of the total (`formats.stratify_bits`);
    otherwise each word is an i.i.d. fraction of the total. The tree must be non-empty
    (total > 0); on an empty tree the result is unspecified (the buffer layer checks).
    O(B K D) gathers.
    """
    bits = jnp.asarray(bits, jnp.uint32)
    if bits.ndim != 1:
        raise ValueError(f"bits must be 1-D, got shape {bits.shape}")
    fractions = stratify_bits(bits, bits.shape[0]) if stratified else bits
    if isinstance(tree.fmt, Float32):
        return _descend_float(tree, fractions)
    return _descend_fixed(tree, fractions)


@functools.partial(jax.jit, static_argnames=("batch_size", "stratified"))
def sample(tree: SumTree, key: jax.Array, batch_size: int, stratified: bool = True):
    """Draw `batch_size` indices with probability proportional to priority.

    Returns int32 indices in [0, capacity). See `sample_from_bits` for the semantics.
    """
    bits = jax.random.bits(key, (batch_size,), jnp.uint32)
    return sample_from_bits(tree, bits, stratified)
