"""Prioritized replay buffer: ring-buffer storage of transition pytrees plus a K-ary sum tree.

    rb = make_prioritized_replay(capacity=50_000, alpha=0.6)
    state = rb.init(example_transition)          # one transition, no batch dimension
    state = rb.add(state, transitions)           # leading batch dimension M
    sample = rb.sample(state, key, batch_size=256, beta=0.4)
    state = rb.update(state, sample.indices, td_errors)

Every method is a pure function of the state; all of them jit, and the whole buffer can live
inside a `lax.scan` training loop. Static settings are bound by the factory.

Priorities: the tree stores `(|td| + eps) ** alpha`. New items get the largest priority
`|td| + eps` seen so far (or the priorities passed to `add`). Importance weights are
`(N * P(i)) ** -beta / max_j (N * P(j)) ** -beta`, the max taken over the whole buffer through a
min tree of the stored priorities (`weights="global"`), or over the batch (`weights="batch"`,
cheaper: no min tree is kept).

Bad input, the policy (the one of every buffer, `hrl.replay.interface`):
* an empty `add` (M = 0 items, a static shape) returns the state unchanged, inside jit or not;
* wrong item structure, shape or dtype, or indices/priorities of the wrong shape: ValueError
  at trace time, naming the offending leaf;
* outside jit (concrete values), ValueError for: NaN/inf/negative priorities, indices outside
  the filled part, sampling from an empty buffer, a batch larger than the filled part;
* inside jit the values are unknown, so instead: non-finite TD errors get the maximum
  priority seen before that update (the item is revisited soon rather than lost or
  poisoning the tree),
  out-of-range indices are ignored, an empty buffer yields zero weights, and a batch larger
  than the filled part samples with replacement (as it always does); `add` with NaN, inf or
  negative priorities gives those items the maximum priority seen (the tree stays valid).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hrl.replay import native, pallas_kernels, sumtree
from hrl.replay.formats import MinFloat32, PriorityFormat, parse_format
from hrl.replay.rows import RowLayout

IMPLS = ("auto", "xla", "native", "pallas")


@struct.dataclass
class ReplayState:
    rows: jax.Array  # uint32 (capacity, layout.row_words): slot i holds transition i packed
    tree: sumtree.SumTree  # priorities ** alpha
    min_tree: sumtree.SumTree | None  # same, reduced with min (None for weights="batch")
    insert_pos: jax.Array  # int32: next ring slot to write
    size: jax.Array  # int32: filled slots
    max_priority: jax.Array  # float32: largest |td| + eps seen (before alpha)
    added: jax.Array  # int32: transitions ever added (for rate control and logging)
    layout: RowLayout = struct.field(pytree_node=False)  # how a transition maps to a row

    @property
    def items(self):
        """Every slot unpacked into the transition pytree (leading dimension `capacity`).
        O(N): for inspection and tests; sampling unpacks only the sampled rows."""
        return self.layout.unpack(self.rows)


class Sample(NamedTuple):
    items: Any  # pytree with leading dimension batch_size
    indices: jax.Array  # int32 (batch_size,)
    weights: jax.Array  # float32 importance weights, max 1
    probabilities: jax.Array  # float32 P(i)


class TreeKernels(Protocol):
    """What the buffer needs from a set of sum-tree kernels (`hrl.replay.sumtree`, the
    reference; `hrl.replay.native`; `hrl.replay.pallas_kernels`), all with the reference's
    semantics over the same `SumTree` pytree:

    * `update(tree, indices, priorities) -> tree` and `sample_from_bits(tree, bits, stratified)
      -> indices` (required);
    * optional fast paths, used when present: `update_trees_words(trees, indices, words)` (the
      sum and min trees in one launch), `threefry_key_words` + `sample_with_key` (bits, descent
      and leaf reads in one call), `gather_fields` (sampled rows straight into fields),
      `replay_update` (the whole `update` bookkeeping and both trees in one call).
    """

    def update(self, tree: sumtree.SumTree, indices, priorities) -> sumtree.SumTree: ...

    def sample_from_bits(self, tree: sumtree.SumTree, bits, stratified: bool = True): ...


def importance_weights(leaf, total, min_total, size, beta):
    """(P(i), IS weight) of sampled leaves: P(i) = leaf / total and the weight
    (N P_i)^-b / max_j (N P_j)^-b, the max over the buffer through the min tree's root
    `min_total`, or over the batch when it is None. Shared by every buffer, so that they agree
    to the bit."""
    # One reciprocal, then products: XLA rewrites x / broadcast(t) as x * (1 / t) in some
    # programs and not in others, so a plain division would round differently by context.
    inv_total = jnp.float32(1.0) / jnp.maximum(total, jnp.float32(1e-30))
    probs = leaf * inv_total
    p_min = jnp.min(probs) if min_total is None else min_total * inv_total
    # (N P_i)^-b / (N P_min)^-b = (P_min / P_i)^b; computed as a ratio for range.
    weights = jnp.power(p_min / jnp.maximum(probs, jnp.float32(1e-30)), jnp.float32(beta))
    weights = jnp.where((size > 0) & (probs > 0), jnp.minimum(weights, 1.0), 0.0)
    return probs, weights


def raw_priorities(td_errors, eps: float):
    """The priority a TD error gives an item, before alpha: |td| + eps (float32). What
    `update` writes for a sampled item and what `add` takes as `priorities`, so an item's
    first priority computed elsewhere (an Ape-X actor: `hrl.runtime.executors.ray_actors`)
    means what the learner's later ones do; alpha and the tree's format apply in the buffer."""
    return jnp.abs(jnp.asarray(td_errors, jnp.float32)) + jnp.float32(eps)


def host_add_priorities(priorities, m: int, max_priority) -> np.ndarray:
    """`add`'s priorities on a host buffer, as `PrioritizedReplay.add` treats them under jit:
    float32 of shape (m,) (ValueError otherwise), NaN, inf and negative entries replaced by
    the largest priority seen (`max_priority`). O(m)."""
    raw = np.asarray(jax.device_get(priorities), np.float32)
    if raw.shape != (m,):
        raise ValueError(f"add: priorities must have shape {(m,)}, got {raw.shape}")
    return np.where(np.isfinite(raw) & (raw >= 0), raw, np.float32(max_priority)).astype(
        np.float32)


def _is_concrete(*xs) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def check_indices_filled(indices: np.ndarray, size: int) -> None:
    """ValueError naming the first update index outside the filled range [0, size)."""
    out = (indices < 0) | (indices >= size)
    if out.any():
        i = int(np.argmax(out))
        raise ValueError(
            f"update: index {int(indices[i])} at position {i} is outside the filled range "
            f"[0, {size})"
        )


def check_td_finite(td_errors: np.ndarray) -> None:
    """ValueError naming the first TD error that is not finite."""
    bad = ~np.isfinite(td_errors)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"update: td_errors must be finite; entry {i} is {td_errors[i]}")


@dataclasses.dataclass(frozen=True)
class PrioritizedReplay:
    """Static configuration plus the pure functions over `ReplayState`."""

    capacity: int
    alpha: float = 0.6
    eps: float = 1e-6
    fanout: int = 16
    fmt: PriorityFormat = dataclasses.field(default_factory=lambda: parse_format("float32"))
    weights: str = "global"
    # Sum-tree kernels: "xla" (pure jnp, the reference), "native" (C++ FFI, CPU), "pallas"
    # (GPU; interpret mode elsewhere), "auto" (native on a CPU, pallas on a GPU, else xla).
    impl: str = "auto"

    def __post_init__(self):
        if not isinstance(self.capacity, int) or self.capacity < 1:
            raise ValueError(f"replay capacity must be a positive int, got {self.capacity!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"replay alpha must be in [0, 1], got {self.alpha}")
        if not self.eps > 0.0:
            raise ValueError(f"replay eps must be > 0, got {self.eps}")
        if self.weights not in ("global", "batch"):
            raise ValueError(f"replay weights must be 'global' or 'batch', got {self.weights!r}")
        if self.impl not in IMPLS:
            raise ValueError(f"replay impl must be one of {', '.join(IMPLS)}; got {self.impl!r}")
        if self.impl == "native":
            reason = native.unavailable_reason()
            if reason is not None:
                raise ValueError(f"replay impl 'native' is unavailable: {reason}")

    @property
    def kernels(self):
        """The module whose `update` / `sample_from_bits` run the tree. "auto": the C++ kernels
        on a CPU where they build, the Pallas kernels on a GPU, else the jnp reference.

        See `TreeKernels` for what a kernel set provides; without the optional fast paths the
        buffer composes the same steps from `update` and `sample_from_bits`."""
        if self.impl == "xla":
            return sumtree
        if self.impl == "pallas":
            return pallas_kernels
        if self.impl == "auto" and jax.default_backend() == "gpu":
            return pallas_kernels.PerDeviceKernels  # Pallas on the GPU, native on a CPU
        return native if native.available() else sumtree

    _kernels = kernels  # the former name, still read by tests and callers

    # ------------------------------------------------------------------ state
    def init(self, example_item) -> ReplayState:
        """Empty buffer whose items look like `example_item` (one transition, unbatched): zero
        rows, empty trees, max priority 1. O(N) memory and time (the ring and the trees are
        allocated once, so that every later call is in place under jit)."""
        layout = RowLayout.of(example_item)
        return ReplayState(
            rows=jnp.zeros((self.capacity, layout.row_words), jnp.uint32),
            tree=sumtree.init(self.capacity, self.fanout, self.fmt),
            min_tree=(
                sumtree.init(self.capacity, self.fanout, MinFloat32())
                if self.weights == "global"
                else None
            ),
            insert_pos=jnp.int32(0),
            size=jnp.int32(0),
            max_priority=jnp.float32(1.0),
            added=jnp.int32(0),
            layout=layout,
        )

    def check_items(self, layout: RowLayout, items) -> int:
        """The batch size M of `items` (leading dimension), or a ValueError naming the leaf
        whose structure, shape or dtype differs from `layout`'s, or when M > capacity. Reads
        shapes and dtypes only (no copy, no device call): O(leaves). M = 0 is allowed (an
        empty add is a no-op)."""
        got = jax.tree.structure(items)
        if got != layout.treedef:
            raise ValueError(f"items have structure {got}, buffer holds {layout.treedef}")
        batch = None
        for name, shape, dtype, new in zip(
            layout.names, layout.shapes, layout.dtypes, jax.tree.leaves(items), strict=True
        ):
            # Shape and dtype only (the dtype as JAX would convert it): no copy to the device.
            arr = new if isinstance(new, (np.ndarray, jax.Array)) else np.asarray(new)
            if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape:
                raise ValueError(f"item leaf {name}: expected shape (M, *{shape}), got {arr.shape}")
            if arr.dtype != dtype and jax.dtypes.canonicalize_dtype(arr.dtype) != dtype:
                got = jax.dtypes.canonicalize_dtype(arr.dtype)
                raise ValueError(f"item leaf {name}: expected dtype {dtype}, got {got}")
            if batch is None:
                batch = arr.shape[0]
            elif arr.shape[0] != batch:
                raise ValueError(
                    f"item leaf {name}: batch size {arr.shape[0]} != {batch} of other leaves"
                )
        if batch > self.capacity:
            raise ValueError(f"adding {batch} items at once exceeds capacity {self.capacity}")
        return batch

    def _priority(self, raw):
        return jnp.power(raw, jnp.float32(self.alpha))

    def _set_priorities(self, state: ReplayState, indices, stored) -> ReplayState:
        """Write priorities already raised to alpha into the sum tree and the min tree."""
        kernels = self.kernels
        min_tree = state.min_tree
        if min_tree is not None and hasattr(kernels, "update_trees_words"):  # one launch
            trees = (state.tree, min_tree)
            words = tuple(t.fmt.encode(stored) for t in trees)
            tree, min_tree = kernels.update_trees_words(trees, indices, words)
            return state.replace(tree=tree, min_tree=min_tree)
        tree = kernels.update(state.tree, indices, stored)
        if min_tree is not None:
            min_tree = kernels.update(min_tree, indices, stored)
        return state.replace(tree=tree, min_tree=min_tree)

    def size(self, state: ReplayState) -> jax.Array:
        """Filled slots (int32 scalar; `state.size`). O(1)."""
        return state.size

    # ------------------------------------------------------------------ operations
    def add(self, state: ReplayState, items, priorities=None) -> ReplayState:
        """Write a batch of M transitions into the ring (oldest overwritten first).

        New items get `priorities` (raw, before alpha) if given, else the largest priority
        seen so far. O(M) writes + one tree update of M leaves, O(M K log_K N).

        M = 0 returns `state` unchanged (the policy of every buffer, `hrl.replay.interface`):
        M is a static shape, so under jit this costs nothing and emits no program.
        """
        m = self.check_items(state.layout, items)
        if m == 0:
            if priorities is not None:
                self.check_priorities(priorities, (0,), "add")
            return state
        slots = (state.insert_pos + jnp.arange(m, dtype=jnp.int32)) % self.capacity
        new_rows = state.rows.at[slots].set(state.layout.pack(items), unique_indices=True)
        if priorities is None:
            raw = jnp.full((m,), state.max_priority, jnp.float32)
        else:
            raw = self.check_priorities(priorities, (m,), "add")
            # Inside jit (outside, bad values raised above): a NaN, inf or negative priority
            # would poison the root for good; the item gets the largest priority seen instead.
            bad = jnp.logical_not(jnp.isfinite(raw)) | (raw < 0)
            raw = jnp.where(bad, state.max_priority, raw)
        state = state.replace(
            rows=new_rows,
            insert_pos=(state.insert_pos + m) % self.capacity,
            size=jnp.minimum(state.size + m, self.capacity),
            max_priority=jnp.maximum(state.max_priority, jnp.max(raw)),
            added=state.added + m,
        )
        return self._set_priorities(state, slots, self._priority(raw))

    def check_priorities(self, values, shape, where: str):
        """`values` as float32 of `shape`, or a ValueError (saying `where`) for another shape
        and, for concrete values, for NaN, inf or negative entries. O(M)."""
        values = jnp.asarray(values, jnp.float32)
        if values.shape != shape:
            raise ValueError(f"{where}: priorities must have shape {shape}, got {values.shape}")
        if _is_concrete(values):
            v = np.asarray(values)
            bad = ~np.isfinite(v) | (v < 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(
                    f"{where}: priorities must be finite and >= 0; entry {i} is {v[i]}"
                )
        return values

    def sample(self, state: ReplayState, key, batch_size: int, beta: float = 0.4) -> Sample:
        """Draw `batch_size` transitions with P(i) = p_i / sum p (stratified), with IS weights.

        Guarantees: the same key gives the same indices on every kernel set (the bits come
        from `jax.random.bits`); indices lie in the filled part; weights are in [0, 1].
        O(B K D) gathers in the tree (D = log_K N levels) plus the gather of B rows.
        Stratified so that a batch covers the priority mass evenly (lower variance than B
        independent draws at the same cost).
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if _is_concrete(state.size):
            size = int(state.size)
            if size == 0:
                raise ValueError("cannot sample from an empty replay buffer; add items first")
            if batch_size > size:
                raise ValueError(f"batch_size {batch_size} exceeds the {size} items in the buffer")
        tree, kernels = state.tree, self.kernels
        fast = hasattr(kernels, "sample_with_key")
        key_words = kernels.threefry_key_words(key) if fast else None
        if key_words is not None:
            # One custom call: the same bits, descent, clamp and leaf reads as below.
            indices, words = kernels.sample_with_key(
                tree, key_words, state.size, batch_size, rows=state.rows
            )
            leaf = tree.fmt.decode(words, tree.depth, tree.depth, tree.fanout)
        else:
            bits = jax.random.bits(key, (batch_size,), jnp.uint32)
            indices = kernels.sample_from_bits(tree, bits, True)
            indices = jnp.minimum(indices, jnp.maximum(state.size - 1, 0))
            leaf = sumtree.leaf_values(tree, indices)
        min_total = None if state.min_tree is None else sumtree.total(state.min_tree)
        probs, weights = importance_weights(leaf, sumtree.total(tree), min_total, state.size, beta)
        if key_words is None:
            # Make every read of the trees above feed `indices` (0 * x is not folded for
            # floats), so that XLA orders those reads before the in-place `update` of the
            # same step; without this data dependency XLA copies the leaf level (O(N)) on
            # every step. (The one-call path reads the leaves inside the call whose output
            # `indices` is, so only the two 1-word roots are read outside it.)
            ordering = (jnp.sum(probs) + jnp.sum(weights)) * jnp.float32(0.0)
            indices = jnp.where(ordering == 0.0, indices, 0)
        if hasattr(kernels, "gather_fields"):
            items = kernels.gather_fields(state.rows, indices, state.layout)
        else:
            items = state.layout.unpack(jnp.take(state.rows, indices, axis=0, mode="clip"))
        return Sample(items=items, indices=indices, weights=weights, probabilities=probs)

    def update(self, state: ReplayState, indices, td_errors) -> ReplayState:
        """New priorities |td| + eps for sampled indices. Duplicates: the last one wins.

        O(B K D): B leaves written and their ancestors recomputed from their children (not
        patched by deltas, so float rounding never accumulates in the tree). See the module
        docstring for out-of-range indices and non-finite TD errors."""
        indices = jnp.asarray(indices)
        td = jnp.asarray(td_errors, jnp.float32)
        if indices.ndim != 1 or td.shape != indices.shape:
            raise ValueError(
                f"update: indices {indices.shape} and td_errors {td.shape} must be equal 1-D"
            )
        if _is_concrete(indices, td, state.size):
            check_indices_filled(np.asarray(indices), int(state.size))
            check_td_finite(np.asarray(td))
        raw = raw_priorities(td, self.eps)
        finite = jnp.isfinite(raw)
        # Non-finite TD errors take the largest priority seen before this update.
        stored = self._priority(jnp.where(finite, raw, state.max_priority))
        kernels = self.kernels
        if hasattr(kernels, "replay_update"):  # the steps below in one call (no XLA bookkeeping)
            tree, min_tree, max_priority = kernels.replay_update(
                state.tree, state.min_tree, indices, raw, stored, state.size, state.max_priority
            )
            return state.replace(tree=tree, min_tree=min_tree, max_priority=max_priority)
        valid = (indices >= 0) & (indices < state.size)
        max_priority = jnp.maximum(state.max_priority, jnp.max(jnp.where(valid & finite, raw, 0.0)))
        indices = jnp.where(valid, indices, self.capacity)  # out of range -> dropped
        state = state.replace(max_priority=max_priority)
        return self._set_priorities(state, indices, stored)


def make_prioritized_replay(
    capacity: int,
    alpha: float = 0.6,
    eps: float = 1e-6,
    fanout: int = 16,
    fmt: str | PriorityFormat = "float32",
    weights: str = "global",
    impl: str = "auto",
) -> PrioritizedReplay:
    """Bind the static settings of a prioritized replay buffer (see the module docstring):
    the thin variant `make_replay` builds for `replay.backend: jax` on one device. Validates
    the settings (ValueError naming the setting); O(1), nothing is allocated until `init`."""
    return PrioritizedReplay(
        capacity=capacity,
        alpha=float(alpha),
        eps=float(eps),
        fanout=fanout,
        fmt=parse_format(fmt),
        weights=weights,
        impl=impl,
    )


# The `ReplayConfig` keys a variant's tree reads, read in this one place (`tree_settings`), so
# that a tree setting reaches every variant `make_replay` builds. The host trees take all but
# `impl` (their backend is their implementation).
TREE_SETTINGS = ("alpha", "eps", "fanout", "fmt", "weights", "impl")


def tree_settings(replay_cfg) -> dict:
    """The tree settings of a `ReplayConfig` (`TREE_SETTINGS`), as the keyword arguments of
    `make_prioritized_replay` and `make_sharded_replay`. O(1)."""
    return {key: getattr(replay_cfg, key) for key in TREE_SETTINGS}
