"""The packed host state of the native path and its one ctypes call per operation.

`Packing` maps a `ReplayState`'s trees and scalars onto three arrays (scalars uint32[4], both
trees' levels in one uint32 array, the rows); `DirectState` holds them in NumPy and steps them
with one call into the native library (`hrl_direct_step` in native/sumtree_ffi.cc), no XLA
dispatch. It runs the same C++ step as the jitted path's custom call (`HandleStepCore`, then
`HandleFinishCore`), with the arithmetic XLA does between them done in C++ too: |td| + eps, a
NaN's fallback to the largest priority, and the two pow()s, with libm's powf, under the
flush-to-zero mode XLA:CPU runs in (set by the C++ entry point). XLA:CPU's pow gives powf's bits
there, which `powf_matches_xla` checks at run time (for the buffer's alpha as XLA folds it in,
and for a runtime beta) before anything takes this path; where they differ the caller stays on
the jitted path. So the results are the reference's bit for bit either way
(tests/replay/test_handle.py runs both paths). What this saves per call is measured by
`experiments/bench/bench_replay.py`.

Outputs are NumPy arrays (one allocation per sample, cut into the fields), which a NumPy or
PyTorch learner takes without a copy.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np

from hrl.replay import native
from hrl.replay.buffer import PrioritizedReplay, ReplayState, Sample
from hrl.replay.formats import FixedPoint, Float32
from hrl.replay.sumtree import SumTree

# Layout of the packed scalars (uint32[4]); max_priority is a float32's bits.
INSERT_POS, SIZE, MAX_PRIORITY, ADDED = range(4)
_ALIGN = 64  # bytes: each output array of a sample starts on a cache line
_ERR_BYTES = 512


def packed_available(replay: PrioritizedReplay) -> bool:
    """The packed native path: the C++ kernels, a Float32 or FixedPoint sum tree, and keys
    whose bits the kernels reproduce (partitionable Threefry)."""
    if replay.kernels is not native:
        return False
    if not isinstance(replay.fmt, (Float32, FixedPoint)):
        return False
    return bool(jax.config.jax_threefry_partitionable) and (
        jax.config.jax_default_prng_impl == "threefry2x32"
    )


@dataclasses.dataclass(frozen=True)
class Packing:
    """How a `ReplayState`'s trees and scalars map onto the packed arrays."""

    capacity: int
    fanout: int
    level_shapes: tuple  # shapes of the sum tree's levels (the min tree's are the same)
    has_min: bool

    @classmethod
    def of(cls, replay: PrioritizedReplay, state: ReplayState) -> Packing:
        return cls(capacity=replay.capacity, fanout=replay.fanout,
                   level_shapes=tuple(level.shape for level in state.tree.levels),
                   has_min=state.min_tree is not None)

    @property
    def tree_words(self) -> int:
        return sum(int(np.prod(s)) for s in self.level_shapes)

    def pack(self, state: ReplayState):
        trees = [state.tree] + ([state.min_tree] if self.has_min else [])
        words = [
            jax.lax.bitcast_convert_type(level.reshape(-1), jnp.uint32)
            for tree in trees
            for level in tree.levels
        ]
        scalars = jnp.stack(
            [
                jax.lax.bitcast_convert_type(jnp.asarray(x), jnp.uint32)
                for x in (state.insert_pos, state.size, state.max_priority, state.added)
            ]
        )
        return scalars, jnp.concatenate(words)

    def unpack(self, template: ReplayState, scalars, trees, rows) -> ReplayState:
        def tree_at(tree: SumTree, start: int) -> SumTree:
            levels, at = [], start
            for shape in self.level_shapes:
                n = int(np.prod(shape))
                word = trees[at : at + n]
                levels.append(jax.lax.bitcast_convert_type(word, tree.fmt.dtype).reshape(shape))
                at += n
            return tree.replace(levels=tuple(levels))

        i32 = lambda x: jax.lax.bitcast_convert_type(x, jnp.int32)  # noqa: E731
        return template.replace(
            rows=rows,
            tree=tree_at(template.tree, 0),
            min_tree=tree_at(template.min_tree, self.tree_words) if self.has_min else None,
            insert_pos=i32(scalars[INSERT_POS]),
            size=i32(scalars[SIZE]),
            max_priority=jax.lax.bitcast_convert_type(scalars[MAX_PRIORITY], jnp.float32),
            added=i32(scalars[ADDED]),
        )


def key_words(key) -> np.ndarray:
    """The two uint32 words of one threefry key (raw or typed, on the host or a device), as a
    contiguous host array; ValueError for anything else. O(1)."""
    if not (isinstance(key, np.ndarray) and key.dtype == np.uint32):
        dtype = getattr(key, "dtype", None)
        if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        key = np.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise ValueError(f"key must be one PRNG key, got shape {key.shape} dtype {key.dtype}")
    return np.ascontiguousarray(key)


class _Plan(ctypes.Structure):
    """Mirror of `HrlDirectPlan` (native/sumtree_ffi.cc): keep the field order."""

    _fields_ = [
        ("fixed_point", ctypes.c_int64),
        ("fanout", ctypes.c_int64),
        ("capacity", ctypes.c_int64),
        ("n_levels", ctypes.c_int64),
        ("level_rows", ctypes.c_void_p),
        ("has_min", ctypes.c_int64),
        ("total_words", ctypes.c_int64),
        ("encode_scale", ctypes.c_double),
        ("max_word", ctypes.c_int64),
        ("leaf_scale", ctypes.c_double),
        ("root_scale", ctypes.c_double),
        ("alpha", ctypes.c_double),
        ("eps", ctypes.c_double),
        ("table_rows", ctypes.c_int64),
        ("row_bytes", ctypes.c_int64),
        ("n_fields", ctypes.c_int64),
        ("offsets", ctypes.c_void_p),
        ("sizes", ctypes.c_void_p),
        ("nonfinite_to_max", ctypes.c_int64),
    ]


def _functions():
    lib = native.library()
    step = lib.hrl_direct_step
    p, i64, f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
    step.argtypes = [p, p, p, p, p, p, p, i64, p, f32, i64, p, p, p, p, p, i64]
    step.restype = ctypes.c_int
    powf = lib.hrl_powf
    powf.argtypes = [p, i64, f32, p]
    powf.restype = None
    return step, powf


def _probe_values() -> np.ndarray:
    """Positive floats over the whole range (log-uniform, subnormals included), the unit
    interval where IS ratios live, and the special values."""
    rng = np.random.default_rng(0)
    wide = np.exp2(rng.uniform(-149.0, 127.9, 1 << 15)).astype(np.float32)
    unit = rng.random(1 << 15, dtype=np.float32)
    special = np.array([0.0, 1.0, 1e-45, 1.17549435e-38, 3.4028235e38, np.inf, np.nan, 0.5,
                        2.0, 1e-6, 1.000001], np.float32)
    return np.concatenate([wide, unit, special])


@functools.cache
def powf_matches_xla(alpha: float) -> bool:
    """libm's powf gives XLA:CPU's bits for x ** alpha (alpha a compile-time constant, as in
    `PrioritizedReplay`) and for x ** beta (beta a runtime value, as the handle passes it)."""
    _, powf = _functions()
    x = _probe_values()
    mine = np.empty_like(x)

    def same(xla: np.ndarray, y: float) -> bool:
        powf(x.ctypes.data, x.size, np.float32(y), mine.ctypes.data)
        return np.array_equal(np.asarray(xla).view(np.uint32), mine.view(np.uint32))

    with jax.default_device(jax.devices("cpu")[0]):
        folded = jax.jit(lambda v: jnp.power(v, jnp.float32(alpha)))(x)
        if not same(folded, alpha):
            return False
        runtime = jax.jit(jnp.power)
        return all(same(runtime(x, np.float32(beta)), beta)
                   for beta in (0.4, 1.0, 0.5, 0.0, 0.123457, 0.999, 2.0))


def direct_unavailable(replay: PrioritizedReplay) -> str | None:
    """Why this buffer cannot take the direct path (None: it can). The caller has checked that
    the packed native kernels apply."""
    if sys.byteorder != "little":
        return "the rows' NumPy packing assumes a little-endian host"
    if not powf_matches_xla(float(replay.alpha)):
        return "libm's powf and XLA:CPU's pow round differently on this host"
    return None


class DirectState:
    """The packed state (scalars, trees, rows) in NumPy arrays, with one ctypes call per
    operation. `layout` is the rows' `RowLayout`; `level_shapes` as in `Packing`.
    `nonfinite_td`: "raise" (a ValueError naming the entry; nothing changes) or "max_priority"
    (the entry takes the largest priority so far, as `PrioritizedReplay.update` under jit)."""

    def __init__(self, replay: PrioritizedReplay, scalars, trees, rows, layout, level_shapes,
                 has_min: bool, batch_size: int, nonfinite_td: str = "raise"):
        if nonfinite_td not in ("raise", "max_priority"):
            raise ValueError(
                f"nonfinite_td must be 'raise' or 'max_priority', got {nonfinite_td!r}")
        self._step, _ = _functions()
        self.replay, self.layout, self.batch = replay, layout, batch_size
        self.scalars = np.array(scalars, np.uint32)  # writable host copies, updated in place
        self.trees = np.array(trees, np.uint32)
        self.rows = np.array(rows, np.uint32)
        fmt = replay.fmt
        depth = len(level_shapes) - 1
        fixed = isinstance(fmt, FixedPoint)
        self._keep = {  # arrays the plan points into
            "level_rows": np.asarray([1] + [s[0] for s in level_shapes[1:]], np.int64),
            "offsets": np.asarray(layout.offsets, np.int64),
            "sizes": np.asarray(layout.field_sizes, np.int64),
        }
        self.plan = _Plan(
            fixed_point=int(fixed), fanout=replay.fanout, capacity=replay.capacity,
            n_levels=len(level_shapes), level_rows=self._keep["level_rows"].ctypes.data,
            has_min=int(has_min), total_words=self.trees.size,
            encode_scale=float(np.float32(2.0**fmt.leaf_frac_bits)) if fixed else 1.0,
            max_word=fmt.max_word if fixed else 0,
            leaf_scale=float(np.float32(2.0 ** -fmt.frac_bits(depth, depth, replay.fanout)))
            if fixed else 1.0,
            root_scale=float(np.float32(2.0 ** -fmt.frac_bits(0, depth, replay.fanout)))
            if fixed else 1.0,
            alpha=float(np.float32(replay.alpha)), eps=float(np.float32(replay.eps)),
            table_rows=self.rows.shape[0], row_bytes=4 * self.rows.shape[1],
            n_fields=len(layout.offsets), offsets=self._keep["offsets"].ctypes.data,
            sizes=self._keep["sizes"].ctypes.data,
            nonfinite_to_max=int(nonfinite_td == "max_priority"),
        )
        self._plan_ptr = ctypes.addressof(self.plan)
        self._state_ptrs = (self.scalars.ctypes.data, self.trees.ctypes.data,
                            self.rows.ctypes.data)
        self._err = ctypes.create_string_buffer(_ERR_BYTES)
        # One block per sample: indices, probabilities, weights, then each field, each
        # starting on a cache line; the views below are cut from it.
        b = batch_size
        pieces = [((b,), np.dtype(np.int32)), ((b,), np.dtype(np.float32)),
                  ((b,), np.dtype(np.float32))]
        pieces += [((b, *shape), dtype) for shape, dtype in zip(layout.shapes, layout.dtypes,
                                                                strict=True)]
        self._pieces, at = [], 0
        for shape, dtype in pieces:
            self._pieces.append((shape, dtype, at))
            at += -(-int(np.prod(shape)) * dtype.itemsize // _ALIGN) * _ALIGN
        self._block_bytes = at
        self._field_ptrs = (ctypes.c_void_p * len(layout.offsets))()
        self._tail = (ctypes.addressof(self._field_ptrs), ctypes.addressof(self._err), _ERR_BYTES)

    def load(self, scalars, trees, rows) -> None:
        """Copy a packed state of this buffer's shapes in (a checkpoint restored)."""
        for name, given in (("scalars", scalars), ("trees", trees), ("rows", rows)):
            mine = getattr(self, name)
            given = np.asarray(given)
            if given.shape != mine.shape or given.dtype != mine.dtype:
                raise ValueError(f"{name}: expected {mine.dtype}{list(mine.shape)} (this "
                                 f"buffer's layout), got {given.dtype}{list(given.shape)}")
        for name, given in (("scalars", scalars), ("trees", trees), ("rows", rows)):
            np.copyto(getattr(self, name), given)  # in place: the plan points into these

    # ------------------------------------------------------------------ calls
    def _call(self, upd_idx, td, raw, u: int, key_words, beta: float, b: int):
        block = views = None
        out = (0, 0, 0)
        if b:
            block = np.empty(self._block_bytes + _ALIGN, np.uint8)
            base = block.ctypes.data
            shift = -base % _ALIGN
            base += shift
            views = [np.ndarray(shape, dtype, block, shift + at) for shape, dtype, at
                     in self._pieces]
            out = tuple(base + at for _, _, at in self._pieces[:3])
            for j, (_, _, at) in enumerate(self._pieces[3:]):
                self._field_ptrs[j] = base + at
        scalars, trees, rows = self._state_ptrs
        failed = self._step(
            self._plan_ptr, scalars, trees, rows,
            0 if upd_idx is None else upd_idx.ctypes.data,
            0 if td is None else td.ctypes.data,
            0 if raw is None else raw.ctypes.data, u,
            0 if key_words is None else key_words.ctypes.data, beta, b,
            *out, *self._tail)
        if failed == 2:  # checked in C++ before anything changed (cheaper than NumPy here)
            i = int(self._err.value)
            raise ValueError(f"update: td_errors must be finite; entry {i} is {td[i]}")
        if failed:  # a layout the callers' checks let through: a bug, not bad input
            raise RuntimeError(f"native replay step failed: {self._err.value.decode()}")
        if not b:
            return None
        idx, probs, weights, *fields = views
        # Read-only: the handle passes its own last indices on to the next update unchecked.
        idx.flags.writeable = False
        return Sample(items=self.layout.treedef.unflatten(fields), indices=idx,
                      weights=weights, probabilities=probs)

    def sample(self, key_words: np.ndarray, beta: float) -> Sample:
        return self._call(None, None, None, 0, key_words, beta, self.batch)

    def update(self, indices: np.ndarray, td: np.ndarray) -> None:
        self._call(indices, td, None, indices.shape[0], None, 0.0, 0)

    def update_and_sample(self, indices, td, key_words, beta: float) -> Sample:
        return self._call(indices, td, None, indices.shape[0], key_words, beta, self.batch)

    def add(self, items, priorities) -> None:
        """`PrioritizedReplay.add` of M items (a pytree of the layout's structure, on the host,
        checked; raw priorities checked finite and >= 0, or None for the largest so far)."""
        layout = self.layout
        leaves = [np.ascontiguousarray(leaf, dtype) for leaf, dtype
                  in zip(layout.treedef.flatten_up_to(items), layout.dtypes, strict=True)]
        m = leaves[0].shape[0]
        cap = self.replay.capacity
        insert_pos, size, _, added = self.scalars.view(np.int32).tolist()
        max_priority = float(self.scalars.view(np.float32)[MAX_PRIORITY])  # a float32, exactly
        if insert_pos + m <= cap:  # the rows in place
            slots = np.arange(insert_pos, insert_pos + m, dtype=np.int32)
            self.layout.pack_numpy(leaves, out=self.rows[insert_pos:insert_pos + m])
        else:  # the ring wraps
            slots = ((insert_pos + np.arange(m)) % cap).astype(np.int32)
            self.rows[slots] = self.layout.pack_numpy(leaves)
        if priorities is None:
            raw = np.full(m, max_priority, np.float32)
        else:
            raw = np.ascontiguousarray(priorities, np.float32)
            max_priority = max(max_priority, float(raw.max()))
        i32 = self.scalars.view(np.int32)
        i32[INSERT_POS] = (insert_pos + m) % cap
        i32[SIZE] = min(size + m, cap)
        i32[ADDED] = (added + m + 2**31) % 2**32 - 2**31  # wraps as XLA's int32 does
        self.scalars.view(np.float32)[MAX_PRIORITY] = max_priority
        self._call(slots, None, raw, m, None, 0.0, 0)

    def replay_state(self, unpack) -> ReplayState:
        """A copy of the state as a `ReplayState` (`unpack(scalars, trees, rows)`, jitted)."""
        return unpack(jnp.array(self.scalars), jnp.array(self.trees), jnp.array(self.rows))
