"""The sum-tree operations of `hrl.replay.sumtree` as Pallas kernels (GPU; interpreted elsewhere).

Same signatures, same `SumTree` pytree, same semantics as the reference, so the buffer
switches with `impl="pallas"` (the default on a GPU):

* `sample_from_bits`: one kernel; each program descends a block of samples from the root to the
  leaves, reading a node's K children as K gathers and keeping the prefix sum in registers.
  Indices equal the reference's on the same tree, in both formats: fixed point is integer
  arithmetic, and the float32 prefix is summed left to right as XLA's `cumsum` does (and the
  chosen child's exclusive prefix is formed as `inclusive - child`, as the reference does).
* `update_words`: the reference's last-wins mask (a stable argsort of the B indices, in XLA),
  then one kernel writes the winning leaves and one kernel per level rewrites every touched
  parent from its K children, bottom up. Parents are recomputed, never incremented: O(B K D)
  reads, no O(N) pass. Duplicate parents in a batch are written with the same value by
  whichever program gets there, so the order of writes cannot matter. Each kernel aliases its
  level to its output (in place under jit with the tree donated or carried by `lax.scan`).
  Fixed point and the min tree are bit-exact with the reference; a float32 parent is the
  left-to-right sum of its children, which can differ from XLA's reduction order by float
  rounding: |parent - reference| <= (K - 1) * 2**-24 * parent per level (tested).

The kernels compile through Pallas' Triton backend on a GPU. Anywhere else they run in
Pallas' interpret mode (the same kernel bodies as JAX ops): that is how the CPU tests check
them, and it is slow, so on a CPU `impl="auto"` never picks them. `HRL_PALLAS_INTERPRET=1`
forces interpret mode on a GPU too.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plt

from hrl.replay import native, sumtree
from hrl.replay.formats import (
    FixedPoint,
    Float32,
    MinFloat32,
    log2_exact,
    mulhi_u32,
    stratify_bits,
)
from hrl.replay.sumtree import SumTree

# Samples (or batch entries) per program. A power of two (Triton's rule for block shapes);
# 128 keeps K=64 children of a block (64 x 128 words) in registers on a GPU.
BLOCK = 128


def interpret_mode() -> bool:
    """True where the kernels run as JAX ops (no GPU, or forced by HRL_PALLAS_INTERPRET=1)."""
    return jax.default_backend() != "gpu" or os.environ.get("HRL_PALLAS_INTERPRET") == "1"


def _compiler_params():
    return None if interpret_mode() else plt.CompilerParams(num_warps=4)


def _kind(fmt) -> str:
    if isinstance(fmt, Float32):
        return "f32"
    if isinstance(fmt, FixedPoint):
        return "fixed"
    if isinstance(fmt, MinFloat32):
        return "min"
    raise ValueError(f"the Pallas kernels do not support a tree of format {fmt!r}")


def _padded(x: jax.Array, fill) -> tuple[jax.Array, int]:
    """Pad a 1-D batch to a whole number of blocks (at least one)."""
    n = x.shape[0]
    full = max(BLOCK, -(-n // BLOCK) * BLOCK)
    return jnp.pad(x, (0, full - n), constant_values=fill), full


def _whole(shape):
    """Block spec giving every program the whole array (gathers and scatters index into it)."""
    return pl.BlockSpec(shape, lambda i: (0,) * len(shape))


def _blocked():
    return pl.BlockSpec((BLOCK,), lambda i: (i,))


def _flat_levels(tree: SumTree) -> list[jax.Array]:
    """Level l >= 1 as one flat row-major array: node j's children are j*K .. j*K + K-1.
    (A reshape of a contiguous array: no copy.)"""
    return [level.reshape(-1) for level in tree.levels]


# --------------------------------------------------------------------------- sampling


def _descend_float_block(levels, fractions, k: int):
    root = levels[0][0]
    target = fractions.astype(jnp.float32) * jnp.float32(2.0**-32) * root
    node = jnp.zeros(fractions.shape, jnp.int32)
    for level in levels[1:]:
        base = node * k
        inclusive = jnp.zeros(fractions.shape, jnp.float32)
        found = jnp.zeros(fractions.shape, jnp.bool_)
        child = jnp.zeros(fractions.shape, jnp.int32)
        picked = jnp.zeros(fractions.shape, jnp.float32)
        last_nonzero = jnp.zeros(fractions.shape, jnp.int32)
        last_nonzero_excl = jnp.zeros(fractions.shape, jnp.float32)
        for c in range(k):
            value = level[base + c]
            # Left to right, as XLA's cumsum; the prefix is monotone (children >= 0), so the
            # first child whose inclusive prefix exceeds the target is the reference's count.
            inclusive = value if c == 0 else inclusive + value
            exclusive = inclusive - value
            hit = jnp.logical_not(found) & (inclusive > target)
            child = jnp.where(hit, c, child)
            picked = jnp.where(hit, exclusive, picked)
            found = found | hit
            nonzero = value > 0
            last_nonzero = jnp.where(nonzero, c, last_nonzero)
            last_nonzero_excl = jnp.where(nonzero, exclusive, last_nonzero_excl)
        # Past the end only through float rounding: the last non-zero child.
        child = jnp.where(found, child, last_nonzero)
        picked = jnp.where(found, picked, last_nonzero_excl)
        target = jnp.maximum(target - picked, jnp.float32(0.0))
        node = base + child
    return node


def _descend_fixed_block(levels, fractions, k: int):
    s = log2_exact(k)
    mask = jnp.uint32(k - 1)
    root = levels[0][0]
    t = mulhi_u32(fractions, jnp.broadcast_to(root, fractions.shape))
    low = fractions * root  # the low word of the 64-bit product (uint32 wraps)
    node = jnp.zeros(fractions.shape, jnp.int32)
    for depth_index, level in enumerate(levels[1:], start=1):
        shift = 32 - depth_index * s
        digit = (low >> jnp.uint32(shift)) & mask if shift >= 0 else jnp.zeros_like(low)
        base = node * k
        zeros_u = jnp.zeros(fractions.shape, jnp.uint32)
        lo_cum, hi_sum, wrapped = zeros_u, zeros_u, zeros_u
        found = jnp.zeros(fractions.shape, jnp.bool_)
        child = jnp.zeros(fractions.shape, jnp.int32)
        p_excl = zeros_u
        last_nonzero = jnp.zeros(fractions.shape, jnp.int32)
        last_nonzero_value = zeros_u
        for c in range(k):
            value = level[base + c]
            exclusive = wrapped  # sum of the children before c, mod 2**32
            wrapped = wrapped + value
            # Inclusive prefix P = hi * K + lo, split at log2(K) so nothing overflows.
            lo_cum = lo_cum + (value & mask)
            hi_sum = hi_sum + (value >> jnp.uint32(s))
            hi = hi_sum + (lo_cum >> jnp.uint32(s))
            lo = lo_cum & mask
            le = (hi < t) | ((hi == t) & (lo <= digit))  # P_incl <= T, T = t*K + d
            hit = jnp.logical_not(found) & jnp.logical_not(le)
            child = jnp.where(hit, c, child)
            p_excl = jnp.where(hit, exclusive, p_excl)
            found = found | hit
            nonzero = value > 0
            last_nonzero = jnp.where(nonzero, c, last_nonzero)
            last_nonzero_value = jnp.where(nonzero, value, last_nonzero_value)
        remainder = ((t << jnp.uint32(s)) | digit) - p_excl
        t = jnp.where(found, remainder, last_nonzero_value - jnp.uint32(1))
        node = base + jnp.where(found, child, last_nonzero)
    return node


def _sample_kernel(fractions_ref, *refs, depth: int, k: int, fixed: bool):
    level_refs, (indices_ref,) = refs[: depth + 1], refs[depth + 1 :]
    fractions = fractions_ref[...]
    descend = _descend_fixed_block if fixed else _descend_float_block
    indices_ref[...] = descend(level_refs, fractions, k)


def sample_fractions(tree: SumTree, fractions: jax.Array) -> jax.Array:
    """Leaf indices for B 32-bit fractions of the total (already stratified or not)."""
    kind = _kind(tree.fmt)
    if kind == "min":
        raise ValueError("a min tree cannot be sampled")
    fractions = jnp.asarray(fractions, jnp.uint32)
    n = fractions.shape[0]
    fractions, full = _padded(fractions, 0)
    levels = _flat_levels(tree)
    call = pl.pallas_call(
        functools.partial(
            _sample_kernel, depth=tree.depth, k=tree.fanout, fixed=kind == "fixed"
        ),
        out_shape=jax.ShapeDtypeStruct((full,), jnp.int32),
        grid=(full // BLOCK,),
        in_specs=[_blocked()] + [_whole(level.shape) for level in levels],
        out_specs=_blocked(),
        interpret=interpret_mode(),
        compiler_params=_compiler_params(),
        name="hrl_sumtree_sample",
    )
    return call(fractions, *levels)[:n]


def sample_from_bits(tree: SumTree, bits, stratified: bool = True) -> jax.Array:
    """As `sumtree.sample_from_bits`: indices for B uniform 32-bit words."""
    bits = jnp.asarray(bits, jnp.uint32)
    if bits.ndim != 1:
        raise ValueError(f"bits must be 1-D, got shape {bits.shape}")
    fractions = stratify_bits(bits, bits.shape[0]) if stratified else bits
    return sample_fractions(tree, fractions)


@functools.partial(jax.jit, static_argnames=("batch_size", "stratified"))
def sample(tree: SumTree, key: jax.Array, batch_size: int, stratified: bool = True):
    """As `sumtree.sample`."""
    bits = jax.random.bits(key, (batch_size,), jnp.uint32)
    return sample_from_bits(tree, bits, stratified)


# --------------------------------------------------------------------------- update


def _combine_children(level_ref, base, k: int, kind: str):
    """A parent word from its K children, in the format's own rule (see `formats`)."""
    s = jnp.uint32(log2_exact(k))
    total = hi = lo = None
    for c in range(k):
        value = level_ref[base + c]
        if kind == "fixed":  # ceil(sum / K), split at log2(K) so nothing overflows
            hi = value >> s if hi is None else hi + (value >> s)
            lo = value & jnp.uint32(k - 1) if lo is None else lo + (value & jnp.uint32(k - 1))
        elif total is None:
            total = value
        elif kind == "min":
            total = jnp.minimum(total, value)
        else:
            total = total + value
    if kind == "fixed":
        return hi + ((lo + jnp.uint32(k - 1)) >> s)
    return total


def _nowhere(ref) -> int:
    """The address of a masked-off lane in a scatter: one past the end. A GPU never touches it
    (the store is masked); interpret mode's scatter drops it. (An in-range address would not
    do: interpret mode writes masked lanes back with their old value, racing the real write.)"""
    return ref.shape[0]


def _write_leaves_kernel(target_ref, words_ref, leaves_in_ref, leaves_ref, *, size: int):
    del leaves_in_ref  # the same buffer as leaves_ref (aliased)
    target = target_ref[...]
    keep = (target >= 0) & (target < size)
    plt.store(leaves_ref.at[jnp.where(keep, target, _nowhere(leaves_ref))], words_ref[...],
              mask=keep)


def _recompute_kernel(nodes_ref, children_ref, parents_in_ref, parents_ref, *, k: int,
                      kind: str, rows: int):
    del parents_in_ref  # the same buffer as parents_ref (aliased)
    node = nodes_ref[...]
    live = (node >= 0) & (node < rows)
    parent = _combine_children(children_ref, jnp.where(live, node, 0) * k, k, kind)
    plt.store(parents_ref.at[jnp.where(live, node, _nowhere(parents_ref))], parent, mask=live)


def _aliased_call(kernel, out: jax.Array, *operands: jax.Array):
    """One program per block of the batch (operands[0]); `out` is updated in place."""
    batch = operands[0].shape[0]
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype),
        grid=(batch // BLOCK,),
        in_specs=[_blocked() if x.ndim == 1 and x.shape[0] == batch and i < 2 else _whole(x.shape)
                  for i, x in enumerate(operands)] + [_whole(out.shape)],
        out_specs=_whole(out.shape),
        input_output_aliases={len(operands): 0},
        interpret=interpret_mode(),
        compiler_params=_compiler_params(),
        name="hrl_sumtree_update",
    )(*operands, out)


# Batches up to this size are updated by ONE program: duplicates resolved in the kernel
# (O(B^2) compares, no sort), leaves written, then every level recomputed bottom up with a
# barrier between levels; one launch per update instead of a sort and D + 1 launches. Larger
# batches spread each level over many programs (one launch per level) instead.
ONE_PROGRAM_MAX_BATCH = 1024


def _barrier():
    """All threads of the program see each other's stores (interpret mode runs in order)."""
    if not interpret_mode():
        plt.debug_barrier()


def _one_program_kernel(idx_ref, *refs, kinds, depths, k: int, capacity: int, blocks: int):
    """Update T trees (the sum tree and the buffer's min tree, say) sharing the indices."""
    n_trees = len(kinds)
    word_refs = refs[:n_trees]
    level_refs = []
    pos = n_trees
    for depth in depths:  # the inputs (aliased, unused), then the outputs
        pos += depth + 1
    for depth in depths:
        level_refs.append(refs[pos : pos + depth + 1])
        pos += depth + 1
    lanes = jnp.arange(BLOCK, dtype=jnp.int32)

    def keep_block(b):
        """Lanes of block b whose index is in range and not written again later in the batch."""
        mine = idx_ref[pl.ds(b * BLOCK, BLOCK)]
        me = b * BLOCK + lanes

        def later(c, dup):
            theirs = idx_ref[pl.ds(c * BLOCK, BLOCK)]
            them = c * BLOCK + lanes
            same = (theirs[None, :] == mine[:, None]) & (them[None, :] > me[:, None])
            return dup | (jnp.max(same.astype(jnp.int32), axis=1) > 0)

        dup = jax.lax.fori_loop(b, blocks, later, jnp.zeros((BLOCK,), jnp.bool_))
        keep = (mine >= 0) & (mine < capacity) & jnp.logical_not(dup)
        return mine, keep

    def write_leaves(b, carry):
        mine, keep = keep_block(b)
        for t in range(n_trees):
            leaves = level_refs[t][-1]
            words = word_refs[t][pl.ds(b * BLOCK, BLOCK)]
            plt.store(leaves.at[jnp.where(keep, mine, _nowhere(leaves))], words, mask=keep)
        return carry

    jax.lax.fori_loop(0, blocks, write_leaves, 0)
    _barrier()
    for height in range(1, max(depths) + 1):  # parents one level up from the leaves, and so on
        def recompute(b, carry, height=height):
            mine = idx_ref[pl.ds(b * BLOCK, BLOCK)]
            live = (mine >= 0) & (mine < capacity)
            for t in range(n_trees):
                if height > depths[t]:
                    continue
                levels = level_refs[t]
                level = depths[t] - height
                node = jnp.where(live, mine, 0) // (k**height)
                rows = levels[level + 1].shape[0] // k
                ok = live & (node < rows)
                parent = _combine_children(levels[level + 1], node * k, k, kinds[t])
                target = jnp.where(ok, node, _nowhere(levels[level]))
                plt.store(levels[level].at[target], parent, mask=ok)
            return carry

        jax.lax.fori_loop(0, blocks, recompute, 0)
        _barrier()


def update_trees_words(trees: tuple[SumTree, ...], indices, words: tuple) -> tuple[SumTree, ...]:
    """`update_words` on several trees of the same capacity and fanout at the same indices
    (the buffer's sum tree and min tree): one launch for all of them when the batch is small
    enough for one program, else each tree on its own."""
    indices = sumtree._check_indices(trees[0], indices)
    words = tuple(jnp.asarray(w, t.fmt.dtype) for t, w in zip(trees, words, strict=True))
    for w in words:
        if w.shape != indices.shape:
            raise ValueError(f"priorities shape {w.shape} != indices shape {indices.shape}")
    if indices.shape[0] > ONE_PROGRAM_MAX_BATCH:
        return tuple(_update_per_level(t, indices, w) for t, w in zip(trees, words, strict=True))
    t0 = trees[0]
    for t in trees[1:]:
        if (t.capacity, t.fanout) != (t0.capacity, t0.fanout):
            raise ValueError("trees updated together must share capacity and fanout")
    idx, full = _padded(indices, -1)
    padded_words = [_padded(w, 0)[0] for w in words]
    flat = [_flat_levels(t) for t in trees]
    levels_in = [x for levels in flat for x in levels]
    out = pl.pallas_call(
        functools.partial(
            _one_program_kernel,
            kinds=tuple(_kind(t.fmt) for t in trees),
            depths=tuple(t.depth for t in trees),
            k=t0.fanout,
            capacity=t0.capacity,
            blocks=full // BLOCK,
        ),
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype) for x in levels_in],
        grid=(1,),
        in_specs=[_whole(x.shape) for x in (idx, *padded_words, *levels_in)],
        out_specs=[_whole(x.shape) for x in levels_in],
        input_output_aliases={1 + len(trees) + i: i for i in range(len(levels_in))},
        interpret=interpret_mode(),
        compiler_params=_compiler_params(),
        name="hrl_sumtree_update_one_program",
    )(idx, *padded_words, *levels_in)
    result, pos = [], 0
    for t in trees:
        n = t.depth + 1
        shaped = tuple(x.reshape(old.shape) for x, old in zip(out[pos : pos + n], t.levels,
                                                              strict=True))
        result.append(t.replace(levels=shaped))
        pos += n
    return tuple(result)


def update_words(tree: SumTree, indices, words) -> SumTree:
    """Set raw leaf words (already in the tree's format) and fix every ancestor, in place.

    Duplicates: last in batch order wins. Out-of-range indices are dropped, never wrapped.
    """
    return update_trees_words((tree,), indices, (words,))[0]


def _update_per_level(tree: SumTree, indices: jax.Array, words: jax.Array) -> SumTree:
    """Large batches: the last-wins mask by a stable sort (XLA), one launch writes the leaves
    and one launch per level recomputes the touched parents, each over many programs."""
    kind = _kind(tree.fmt)
    k = tree.fanout
    keep = sumtree.last_occurrence_mask(indices)
    in_range = (indices >= 0) & (indices < tree.capacity)
    target, _ = _padded(jnp.where(keep & in_range, indices, -1), -1)
    words, _ = _padded(words, 0)
    node, _ = _padded(jnp.where(in_range, indices, -1), -1)
    levels = _flat_levels(tree)
    levels[-1] = _aliased_call(
        functools.partial(_write_leaves_kernel, size=tree.capacity), levels[-1], target, words
    )
    for level in range(tree.depth - 1, -1, -1):
        node = jnp.where(node >= 0, node // k, -1)  # the ancestor at `level`
        rows = tree.levels[level + 1].shape[0]
        levels[level] = _aliased_call(
            functools.partial(_recompute_kernel, k=k, kind=kind, rows=rows),
            levels[level],
            node,
            levels[level + 1],
        )
    shaped = tuple(flat.reshape(old.shape) for flat, old in zip(levels, tree.levels, strict=True))
    return tree.replace(levels=shaped)


def update(tree: SumTree, indices, priorities) -> SumTree:
    """As `sumtree.update`: set leaf priorities (encoded by the tree's format)."""
    return update_words(tree, indices, tree.fmt.encode(priorities))


def _cpu_kernels():
    """The kernels of a computation placed on a CPU: the native C++ ones where they build
    (what `impl="auto"` runs on a CPU-only machine), else the jnp reference. Both agree bit
    for bit. The native library builds on the first call, not at import."""
    return native if native.available(placed_on_cpu=True) else sumtree


class PerDeviceKernels:
    """The kernel set `impl="auto"` uses where JAX's default backend is a GPU: the Pallas
    kernels in computations placed on the GPU, the CPU's kernels (`_cpu_kernels`: native, or
    the jnp reference) in those placed on a CPU (`lax.platform_dependent` lowers only the
    branch of the device a computation runs on). So a tree placed on the CPU of a GPU machine
    runs the kernels it would run on a CPU-only one."""

    @staticmethod
    def sample_from_bits(tree: SumTree, bits, stratified: bool = True) -> jax.Array:
        return jax.lax.platform_dependent(
            tree, bits,
            cuda=functools.partial(sample_from_bits, stratified=stratified),
            default=functools.partial(_cpu_kernels().sample_from_bits, stratified=stratified),
        )

    @staticmethod
    def update(tree: SumTree, indices, priorities) -> SumTree:
        return jax.lax.platform_dependent(tree, indices, priorities, cuda=update,
                                          default=_cpu_kernels().update)

    @staticmethod
    def update_trees_words(trees, indices, words):
        def on_cpu(trees, indices, words):
            cpu = _cpu_kernels()
            return tuple(cpu.update_words(t, indices, w)
                         for t, w in zip(trees, words, strict=True))

        return jax.lax.platform_dependent(trees, indices, words, cuda=update_trees_words,
                                          default=on_cpu)
