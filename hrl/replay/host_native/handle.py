"""The replay buffer for callers outside a fused loop: one call per operation.

    handle = ReplayHandle(rb, rb.init(example_item), batch_size=256)
    handle.add(transitions)                                  # leading batch dimension M
    sample = handle.sample(key, beta=0.4)                    # first batch
    for step in ...:
        td = learner(sample)                                 # PyTorch, NumPy, a jitted step
        sample = handle.update_and_sample(sample.indices, td, next_key, beta)

Inside a jitted `lax.scan` the buffer's pure functions cost what their kernels cost. Called
from Python, every jitted call also pays XLA:CPU's dispatch: a cost per array in and out,
and, for a program its cost model does not rate "cheap" (1000 flops or more), a hand-off to
XLA's thread pool and back (async dispatch), which costs the most on a loaded machine. The
handle cuts both, and with the native kernels on a CPU skips XLA altogether
(`experiments/bench/bench_replay.py` measures each path):

* it owns the state, in three arrays instead of 17 (native kernels: the rows, both trees'
  levels packed in one word array, the four scalars in one uint32[4]);
* `update_and_sample` is one call for what a learner does every step anyway: the previous
  batch's priority update, then the next batch's draw (results equal `PrioritizedReplay.update`
  then `.sample`, bit for bit: tests/replay/test_handle.py);
* `path="direct"` (the default where it applies): the state in NumPy arrays, every operation
  one ctypes call into the C++ kernels, results as NumPy arrays (`packed.DirectState`);
* `path="jit"` (where the direct path would not give XLA's bits, or when asked for): the
  state donated on every call, every step three custom calls and XLA's two pow()s, a program
  XLA:CPU runs inline on the calling thread even with async dispatch.

With other kernels (`impl="xla"`, a GPU) the handle keeps the `ReplayState` pytree and jits the
buffer's own functions, state donated: the same API and results, without the packing.

Inputs are checked as the buffer checks concrete values outside jit (`PrioritizedReplay`):
a ValueError that names the argument. An empty `add` (M = 0) is a no-op, as for every buffer
(`hrl.replay.interface`). `ReplayHandle.state` returns a copy of the state as a
`ReplayState` (O(N); for inspection, checkpoints and tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hrl.replay import native
from hrl.replay.buffer import (
    PrioritizedReplay,
    ReplayState,
    Sample,
    check_indices_filled,
    check_td_finite,
)
from hrl.replay.formats import FixedPoint, Float32
from hrl.replay.host_native.packed import (
    ADDED,
    INSERT_POS,
    MAX_PRIORITY,
    SIZE,
    DirectState,
    Packing,
    direct_unavailable,
    packed_available,
)


class ReplayHandle:
    """A `PrioritizedReplay` state held by the handle, with one call per operation: `path`
    "auto" (direct where it gives XLA's bits, else jit), "direct" (an error says why where it
    cannot) or "jit"; see the module docstring. Not thread-safe; one handle per learner."""

    def __init__(self, replay: PrioritizedReplay, state: ReplayState, batch_size: int,
                 path: str = "auto"):
        if path not in ("auto", "direct", "jit"):
            raise ValueError(f"path must be 'auto', 'direct' or 'jit', got {path!r}")
        if not isinstance(replay, PrioritizedReplay):
            raise TypeError(f"replay must be a PrioritizedReplay, got {type(replay).__name__}")
        if not isinstance(state, ReplayState):
            raise TypeError(f"state must be a ReplayState, got {type(state).__name__}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.replay = replay
        self.batch_size = batch_size
        self._template = state
        self._layout = state.layout
        self._size = int(state.size)
        self.packed = packed_available(replay)
        if self.packed:
            self._packing = Packing.of(replay, state)
            scalars, trees = jax.jit(self._packing.pack)(state)
            self._arrays = {"scalars": scalars, "trees": trees, "rows": jnp.array(state.rows)}
        else:
            self._arrays = {"state": jax.tree.map(jnp.array, state)}  # a copy we may donate
        self.path = self._choose_path(path)
        self._direct = None
        if self.path == "direct":
            a = self._arrays
            self._direct = DirectState(replay, a.pop("scalars"), a.pop("trees"), a.pop("rows"),
                                       self._layout, self._packing.level_shapes,
                                       self._packing.has_min, batch_size)
        self._calls: dict = {}
        self._last_indices = None  # indices of the last sample drawn here
        self._typed_key: dict = {}  # key dtype -> is a typed PRNG key

    def _choose_path(self, path: str) -> str:
        """"direct" (NumPy state, ctypes calls: `packed.DirectState`) where it gives the jitted
        path's bits, else "jit"; asking for "direct" where it cannot says why."""
        if path == "jit":
            return "jit"
        if not self.packed:
            why = ("it needs the native kernels, a Float32 or FixedPoint tree and partitionable "
                   "threefry keys")
        else:
            why = direct_unavailable(self.replay)
        if why is None:
            return "direct"
        if path == "direct":
            raise ValueError(f"path='direct' is not available for this buffer: {why}")
        return "jit"

    # ------------------------------------------------------------------ state
    @property
    def capacity(self) -> int:
        """Slots in the ring (the buffer's `capacity`)."""
        return self.replay.capacity

    @property
    def size(self) -> int:
        """Filled slots (tracked on the host: reading it costs no device call)."""
        return self._size

    @property
    def state(self) -> ReplayState:
        """A copy of the buffer's state as a `ReplayState` (O(N))."""
        if not self.packed:
            return jax.tree.map(jnp.array, self._arrays["state"])
        unpack = jax.jit(lambda s, t, r: self._packing.unpack(self._template, s, t, r))
        if self._direct is not None:
            return self._direct.replay_state(unpack)
        a = self._arrays
        return unpack(a["scalars"], a["trees"], jnp.array(a["rows"]))

    # ------------------------------------------------------------------ checks
    def _check_key(self, key):
        if isinstance(key, np.ndarray) and self._direct is not None:
            if key.shape != (2,) or key.dtype != np.uint32:
                raise ValueError(f"key must be one PRNG key (jax.random.key or "
                                 f"jax.random.PRNGKey), got shape {key.shape} dtype {key.dtype}")
            return key
        if not isinstance(key, jax.Array):
            key = jnp.asarray(key)
        dtype = key.dtype
        typed = self._typed_key.get(dtype)
        if typed is None:
            typed = self._typed_key[dtype] = bool(jnp.issubdtype(dtype, jax.dtypes.prng_key))
        if (typed and key.shape != ()) or (not typed and key.shape != (2,)):
            raise ValueError(
                f"key must be one PRNG key (jax.random.key or jax.random.PRNGKey), got shape "
                f"{key.shape} dtype {dtype}"
            )
        if not typed and dtype != jnp.uint32:
            raise ValueError(f"key must be a PRNG key, got an array of dtype {dtype}")
        if self._direct is not None:  # the key's two words, on the host
            return np.ascontiguousarray(jax.random.key_data(key) if typed else key)
        return key

    def _check_sampleable(self):
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer; add items first")
        if self.batch_size > self._size:
            raise ValueError(
                f"batch_size {self.batch_size} exceeds the {self._size} items in the buffer"
            )

    def _check_update(self, indices, td_errors):
        """(indices, td_errors) to pass on, or a ValueError naming the bad argument. Indices
        this handle's last sample returned are in range by construction (clamped to the
        filled part, which never shrinks) and go through unread. The direct path's C++ step
        checks that the TD errors are finite itself, before it changes anything."""
        b = self.batch_size
        if indices is not self._last_indices:
            idx = np.asarray(indices)
            if idx.shape != (b,) or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError(
                    f"indices must be {b} integers (the batch size), got shape {idx.shape} "
                    f"dtype {idx.dtype}"
                )
            check_indices_filled(idx, self._size)
            indices = np.ascontiguousarray(idx, np.int32)
        td = np.asarray(td_errors)
        if td.shape != (b,):
            raise ValueError(f"td_errors must have shape ({b},), got {td.shape}")
        if td.dtype != np.float32:
            td = td.astype(np.float32)
            td_errors = td
        if self._direct is None:
            check_td_finite(td)
        return indices, td_errors  # a jax array goes on as it is (no copy in)

    # ------------------------------------------------------------------ operations
    def add(self, items, priorities=None) -> None:
        """`PrioritizedReplay.add` on the held state (donated: written in place). O(M) row
        writes and one tree update of M leaves, O(M K log_K N); M = 0 is a no-op."""
        m = self.replay.check_items(self._layout, items)
        if priorities is not None:
            priorities = self.replay.check_priorities(priorities, (m,), "add")
        if m == 0:  # the empty add: a no-op, as for every buffer
            return
        if self._direct is not None:
            self._direct.add(items, None if priorities is None else np.asarray(priorities))
            self._size = min(self._size + m, self.replay.capacity)
            return
        fn = self._call("add", priorities is not None)
        a = self._arrays
        if self.packed:
            a["scalars"], a["trees"], a["rows"] = fn(
                a["scalars"], a["trees"], a["rows"], items, priorities
            )
        else:
            a["state"] = fn(a["state"], items, priorities)
        self._size = min(self._size + m, self.replay.capacity)

    def sample(self, key, beta: float = 0.4) -> Sample:
        """`PrioritizedReplay.sample(state, key, batch_size, beta)`, bit for bit: one call,
        O(B K log_K N). ValueError on an empty buffer or a batch larger than it."""
        self._check_sampleable()
        key = self._check_key(key)
        beta = np.float32(beta)
        if self._direct is not None:
            sample = self._direct.sample(key, beta)
            self._last_indices = sample.indices
            return sample
        fn = self._call("sample", key.dtype)
        a = self._arrays
        if self.packed:
            sample = fn(a["scalars"], a["trees"], a["rows"], key, beta)
        else:
            sample = fn(a["state"], key, beta)
        self._last_indices = sample.indices
        return sample

    def update(self, indices, td_errors) -> None:
        """`PrioritizedReplay.update(state, indices, td_errors)` on the held state, bit for
        bit: one call, O(B K log_K N). ValueError for indices outside the filled part or
        non-finite TD errors (as the buffer outside jit), nothing changed."""
        idx, td = self._check_update(indices, td_errors)
        if self._direct is not None:
            self._direct.update(idx, np.ascontiguousarray(td, np.float32))
            return
        fn = self._call("update", None)
        a = self._arrays
        if self.packed:
            a["scalars"], a["trees"] = fn(a["scalars"], a["trees"], idx, td)
        else:
            a["state"] = fn(a["state"], idx, td)

    def update_and_sample(self, indices, td_errors, key, beta: float = 0.4) -> Sample:
        """`update(indices, td_errors)` then `sample(key, beta)`, in one call; equal to the two
        calls (and to `PrioritizedReplay.update` then `.sample`) bit for bit. O(B K log_K N);
        one call instead of two because a learner makes both every step."""
        idx, td = self._check_update(indices, td_errors)
        self._check_sampleable()
        key = self._check_key(key)
        beta = np.float32(beta)
        if self._direct is not None:
            sample = self._direct.update_and_sample(
                idx, np.ascontiguousarray(td, np.float32), key, beta)
            self._last_indices = sample.indices
            return sample
        fn = self._call("update_and_sample", key.dtype)
        a = self._arrays
        if self.packed:
            a["scalars"], a["trees"], sample = fn(
                a["scalars"], a["trees"], a["rows"], idx, td, key, beta
            )
        else:
            a["state"], sample = fn(a["state"], idx, td, key, beta)
        self._last_indices = sample.indices
        return sample

    # ------------------------------------------------------------------ the jitted calls
    def _call(self, op: str, variant):
        fn = self._calls.get((op, variant))
        if fn is None:
            build = self._packed_fn if self.packed else self._pytree_fn
            fn = self._calls[(op, variant)] = build(op, variant)
        return fn

    def _pytree_fn(self, op: str, variant):
        rb, b = self.replay, self.batch_size
        if op == "add":
            if variant:
                return jax.jit(lambda s, items, p: rb.add(s, items, p), donate_argnums=0)
            return jax.jit(lambda s, items, p: rb.add(s, items), donate_argnums=0)
        if op == "sample":
            return jax.jit(lambda s, key, beta: rb.sample(s, key, b, beta))
        if op == "update":
            return jax.jit(rb.update, donate_argnums=0)

        def update_and_sample(s, idx, td, key, beta):
            s = rb.update(s, idx, td)
            return s, rb.sample(s, key, b, beta)

        return jax.jit(update_and_sample, donate_argnums=0)

    def _packed_fn(self, op: str, variant):
        native.ensure_registered()
        rb, pk, layout = self.replay, self._packing, self._layout
        fmt = rb.fmt
        depth = len(pk.level_shapes) - 1
        suffix = "f32" if isinstance(fmt, Float32) else "u32"
        if isinstance(fmt, FixedPoint):
            encode_scale = np.float32(2.0**fmt.leaf_frac_bits)
            max_word = fmt.max_word
            leaf_scale = np.float32(2.0 ** -fmt.frac_bits(depth, depth, pk.fanout))
            root_scale = np.float32(2.0 ** -fmt.frac_bits(0, depth, pk.fanout))
        else:
            encode_scale, max_word = np.float32(1.0), 0
            leaf_scale = root_scale = np.float32(1.0)
        level_rows = np.asarray([1] + [s[0] for s in pk.level_shapes[1:]], np.int64)
        alpha = jnp.float32(rb.alpha)
        no_key = jnp.zeros((2,), jnp.uint32)

        def step_call(upd_idx, raw, stored, key_words, scalars, trees, rows, b):
            call = jax.ffi.ffi_call(
                f"hrl_handle_step_{suffix}",
                (
                    jax.ShapeDtypeStruct((4,), jnp.uint32),
                    jax.ShapeDtypeStruct(trees.shape, jnp.uint32),
                    jax.ShapeDtypeStruct((b,), jnp.int32),
                    jax.ShapeDtypeStruct((b,), jnp.float32),
                    jax.ShapeDtypeStruct((b,), jnp.float32),
                ),
                input_output_aliases={4: 0, 5: 1},
            )
            return call(
                upd_idx,
                raw,
                stored,
                key_words,
                scalars,
                trees,
                rows,
                fanout=np.int64(pk.fanout),
                capacity=np.int64(pk.capacity),
                level_rows=level_rows,
                has_min=pk.has_min,
                stratified=True,
                encode_scale=encode_scale,
                max_word=np.int64(max_word),
                leaf_scale=leaf_scale,
                root_scale=root_scale,
            )

        def prepared(td, scalars):
            """(raw, stored) of PrioritizedReplay.update: |td| + eps, then ** alpha."""
            raw, pre = jax.ffi.ffi_call(
                "hrl_handle_prep",
                (
                    jax.ShapeDtypeStruct(td.shape, jnp.float32),
                    jax.ShapeDtypeStruct(td.shape, jnp.float32),
                ),
            )(td, scalars, eps=np.float32(rb.eps))
            return raw, jnp.power(pre, alpha)

        def key_words_of(key):
            typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
            return jax.random.key_data(key) if typed else key

        def draw(scalars, trees, rows, upd_idx, raw, stored, key, beta):
            b = self.batch_size
            scalars, trees, idx, probs, ratio = step_call(
                upd_idx, raw, stored, key_words_of(key), scalars, trees, rows, b
            )
            w = jnp.power(ratio, jnp.asarray(beta, jnp.float32))
            weights, *fields = jax.ffi.ffi_call(
                "hrl_handle_finish",
                (jax.ShapeDtypeStruct((b,), jnp.float32),)
                + tuple(
                    jax.ShapeDtypeStruct((b,) + shape, dtype)
                    for shape, dtype in zip(layout.shapes, layout.dtypes, strict=True)
                ),
            )(
                w,
                probs,
                scalars,
                idx,
                rows,
                offsets=np.asarray(layout.offsets, np.int64),
                sizes=np.asarray(layout.field_sizes, np.int64),
            )
            items = layout.treedef.unflatten(list(fields))
            sample = Sample(items=items, indices=idx, weights=weights, probabilities=probs)
            return scalars, trees, sample

        empty_i = jnp.zeros((0,), jnp.int32)
        empty_f = jnp.zeros((0,), jnp.float32)

        if op == "sample":

            def sample(scalars, trees, rows, key, beta):
                return draw(scalars, trees, rows, empty_i, empty_f, empty_f, key, beta)[2]

            return jax.jit(sample)
        if op == "update_and_sample":

            def update_and_sample(scalars, trees, rows, idx, td, key, beta):
                raw, stored = prepared(td, scalars)
                return draw(scalars, trees, rows, idx, raw, stored, key, beta)

            return jax.jit(update_and_sample, donate_argnums=(0, 1))
        if op == "update":

            def update(scalars, trees, idx, td):
                raw, stored = prepared(td, scalars)
                no_rows = jnp.zeros((0,), jnp.uint32)
                out = step_call(idx, raw, stored, no_key, scalars, trees, no_rows, 0)
                return out[0], out[1]

            return jax.jit(update, donate_argnums=(0, 1))

        def add(scalars, trees, rows, items, priorities):
            # PrioritizedReplay.add, with the tree writes in the packed kernel.
            m = jax.tree.leaves(items)[0].shape[0]
            as_i32 = lambda x: jax.lax.bitcast_convert_type(x, jnp.int32)  # noqa: E731
            insert_pos, size, added = (as_i32(scalars[i]) for i in (INSERT_POS, SIZE, ADDED))
            max_priority = jax.lax.bitcast_convert_type(scalars[MAX_PRIORITY], jnp.float32)
            slots = (insert_pos + jnp.arange(m, dtype=jnp.int32)) % rb.capacity
            rows = rows.at[slots].set(layout.pack(items), unique_indices=True)
            if priorities is None:
                raw = jnp.full((m,), max_priority, jnp.float32)
            else:
                raw = jnp.asarray(priorities, jnp.float32)
                bad = jnp.logical_not(jnp.isfinite(raw)) | (raw < 0)
                raw = jnp.where(bad, max_priority, raw)
            new = [None] * 4
            new[INSERT_POS] = (insert_pos + m) % rb.capacity
            new[SIZE] = jnp.minimum(size + m, rb.capacity)
            new[MAX_PRIORITY] = jnp.maximum(max_priority, jnp.max(raw))
            new[ADDED] = added + m
            scalars = jnp.stack([jax.lax.bitcast_convert_type(x, jnp.uint32) for x in new])
            stored = jnp.power(raw, alpha)
            no_rows = jnp.zeros((0,), jnp.uint32)
            out = step_call(slots, raw, stored, no_key, scalars, trees, no_rows, 0)
            return out[0], out[1], rows

        if variant:
            return jax.jit(add, donate_argnums=(0, 1, 2))
        without = lambda s, t, r, items, p: add(s, t, r, items, None)  # noqa: E731
        return jax.jit(without, donate_argnums=(0, 1, 2))


