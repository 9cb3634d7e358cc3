"""Replay benchmark: time per batch of sample+update and of insert, hrl vs cpprb vs flashbax.

    python experiments/bench/bench_replay.py --quick        # small grid, about a minute (make demo)
    python experiments/bench/bench_replay.py                # full grid (N x B x K), long
    python experiments/bench/bench_replay.py --headline 5   # N=2^20, B=256, K=16, 5 rounds
    python experiments/bench/bench_replay.py --headline 5 --sync-dispatch   # jitted calls
                                                      # on the calling thread (no hand-off)

Every library runs in this process on the same sizes and the same small transition
(obs f32[4], action i32, reward f32, next_obs f32[4], done f32; 44 bytes).

What one timed call does:
* sample+update, all libraries: draw B indices with P(i) ~ p_i (hrl: stratified), compute IS
  weights with beta = 0.4, gather the B transitions, then write B new priorities
  (|td| + eps) ** alpha, alpha = 0.6, for the sampled indices.
  - hrl: `PrioritizedReplay.sample` + `.update` in ONE jitted call, state donated (updated in
    place). IS weights normalised by the buffer-wide minimum priority (hrl keeps a min tree,
    updated in the same call). Transitions are stored as packed rows (`hrl.replay.rows`).
    Paths: `xla` (pure-JAX sum tree, XLA gathers), `native` (C++ FFI kernels, CPU: one call
    draws the Threefry bits, descends and reads the sampled leaves, one gathers the rows,
    one updates each tree in place) and `pallas` (Pallas kernels, GPU: one kernel descends,
    one writes the leaves and one per level recomputes the parents; `--libraries hrl-pallas`).
  - cpprb: `PrioritizedReplayBuffer.sample(B, beta)` then `.update_priorities(idx, p)`: two
    Python calls into C++; IS weights normalised by its min segment tree.
  - flashbax: `sample` + `set_priorities` of the prioritised flat buffer in ONE jitted call,
    state donated, its path for the device JAX runs on (`device=` the default backend);
    flashbax returns probabilities, the IS weights are
    computed in the same call and normalised by the batch maximum (flashbax keeps no min tree).
* insert: add B transitions at the ring position with the max priority seen.
  hrl: `PrioritizedReplay.add`, jitted, donated; cpprb: `add(**batch)`; flashbax: `add`, jitted,
  donated, add_batch_size = B. Per call, and for hrl and flashbax also in a scan (the same add
  inside `lax.scan`, S batches).

Modes: `per-call` times one call from Python, dispatch included (what a Python training loop
pays). `handle` (hrl native only) times one `hrl.replay.ReplayHandle.update_and_sample` call:
the same work through the per-call API, on its direct path (NumPy state, one ctypes call into
the native kernels, no XLA; NumPy TD errors; input checks included); `handle-jit` the same on
the handle's jitted path (packed, donated state; a program XLA:CPU runs inline). `scan` runs
S steps inside one jitted `lax.scan` and reports total / S (what a fully jitted training
loop pays); cpprb has no such mode.
cpprb and flashbax use binary trees, so their cells do not depend on K; their one
measurement per (N, B) is repeated in every K row.

Statistics: warm-up calls first, then R timed calls; the median (and quartiles) of wall time.
The machine may be shared: the load average at start is written next to the results; ratios
are taken between libraries measured back to back in the same run.
Outputs (experiments/results/replay/): replay_bench.{csv,md,png} (replay_quick.* with --quick,
headline.{csv,md} and headline_raw.csv with --headline; a `_sync` suffix with --sync-dispatch,
a `_gpu` suffix when JAX runs on a GPU).
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from hrl.mapping.profile import cpu_name
from hrl.replay import ReplayHandle, native, pallas_kernels
from hrl.replay import sumtree as sumtree_module
from hrl.replay.buffer import make_prioritized_replay
from hrl.runtime.cpu_backend import running_cpu_dispatch

ALPHA, BETA, EPS = 0.6, 0.4, 1e-6
OBS = 4
OUT_DIR = Path(__file__).resolve().parents[1] / "results" / "replay"
console = Console()

HRL_PATHS = ("native", "xla", "pallas")
# flashbax runs on whatever device JAX has (its scan path on a CPU, its GPU path on a GPU).
FLASHBAX_PATH = f"jax-{jax.default_backend()}"
FULL_GRID = dict(n=[2**14, 2**17, 2**20, 2**23], b=[32, 256, 4096], k=[2, 4, 16, 64])
QUICK_GRID = dict(n=[2**14, 2**20], b=[256], k=[16])


@dataclass
class Row:
    library: str  # hrl | cpprb | flashbax
    path: str  # hrl: xla | native; others: the library's own
    mode: str  # per-call | scan
    op: str  # sample+update | insert
    n: int
    b: int
    k: int  # 2 for the binary trees of cpprb and flashbax
    median_us: float
    p25_us: float
    p75_us: float
    cpu_us: float  # median process CPU time per call (see `timed`)
    reps: int


def example_item():
    return {
        "obs": np.zeros(OBS, np.float32),
        "action": np.int32(0),
        "reward": np.float32(0),
        "next_obs": np.zeros(OBS, np.float32),
        "done": np.float32(0),
    }


def random_items(rng, m):
    return {
        "obs": rng.standard_normal((m, OBS)).astype(np.float32),
        "action": rng.integers(0, 2, m).astype(np.int32),
        "reward": rng.standard_normal(m).astype(np.float32),
        "next_obs": rng.standard_normal((m, OBS)).astype(np.float32),
        "done": (rng.random(m) < 0.05).astype(np.float32),
    }


def timed(call, reps: int, warmup: int) -> np.ndarray:
    """(reps, 2): wall and process-CPU seconds per call; `call(i)` blocks until done.

    CPU time (all threads of this process) is the work a call costs; on a shared machine the
    wall time adds waiting for a core, which hits XLA's thread hand-offs harder than cpprb's
    calls that run on the caller's thread. Both are reported.
    """
    for i in range(warmup):
        call(i)
    out = np.empty((reps, 2))
    for i in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        call(warmup + i)
        out[i] = time.perf_counter() - t0, time.process_time() - c0
    return out


class Carry:
    """The donated state threaded from one timed call to the next."""

    def __init__(self, state):
        self.state = state


def step_inputs(rng, b: int, count: int, seed: int):
    """`count` PRNG keys and `count` TD-error batches of size b, as device arrays."""
    keys = jax.random.split(jax.random.PRNGKey(seed), count)
    tds = jnp.asarray(rng.standard_normal((count, b)).astype(np.float32))
    return keys, tds


def time_calls(carry: Carry, step_jit, keys, tds, reps: int, warmup: int) -> np.ndarray:
    """One jitted `step_jit(state, key, td) -> (state, out)` per timed call (per-call mode).
    keys and tds are lists of ready device arrays: indexing a jax array per call would add a
    dispatch of its own to every timed call."""

    def call(i):
        carry.state, out = step_jit(carry.state, keys[i % len(keys)], tds[i % len(tds)])
        jax.block_until_ready(out)

    return timed(call, reps, warmup)


def time_handle(rb, carry: Carry, b: int, keys, tds, reps: int, warmup: int,
                path: str = "direct") -> np.ndarray:
    """Per call through `hrl.replay.ReplayHandle` (modes `handle`: its direct path,
    `handle-jit`: its jitted path): one `update_and_sample(previous indices, td, key)` per
    timed call, input checks included, the TD errors as NumPy arrays (what a NumPy or PyTorch
    learner hands over). The handle works on its own copy of the filled state."""
    handle = ReplayHandle(rb, carry.state, b, path=path)
    tds_np = [np.asarray(t).copy() for t in tds]
    last = [handle.sample(keys[0], BETA)]

    ready = handle.path == "direct"  # NumPy results, ready when the call returns

    def call(i):
        last[0] = handle.update_and_sample(
            last[0].indices, tds_np[i % len(tds_np)], keys[i % len(keys)], BETA
        )
        if not ready:
            jax.block_until_ready(last[0])

    return timed(call, reps, warmup)


def stacked_batches(batches, steps: int):
    """`steps` insert batches (cycling through `batches`) stacked on a leading axis: the xs
    of an insert scan."""
    return jax.tree.map(lambda *a: jnp.stack(a), *[batches[i % len(batches)]
                                                   for i in range(steps)])


def time_scan(carry: Carry, step, xs, reps: int, scan_steps: int) -> np.ndarray:
    """`step(state, *x) -> (state, out)` over the leading axis of xs in one jitted lax.scan
    (scan mode); returned per step."""
    loop_jit = jax.jit(
        lambda state, xs: jax.lax.scan(lambda s, x: step(s, *x), state, xs), donate_argnums=0
    )

    def call(i):
        carry.state, out = loop_jit(carry.state, xs)
        jax.block_until_ready(out)

    return timed(call, max(5, reps // 5), 1) / scan_steps


# ----------------------------------------------------------------------------- hrl


def make_hrl(path: str, n: int, k: int):
    return make_prioritized_replay(capacity=n, alpha=ALPHA, eps=EPS, fanout=k, impl=path)


def bench_hrl(path, n, b, k, reps, warmup, scan_steps, rng, want):
    rb = make_hrl(path, n, k)
    rows = []
    add = jax.jit(rb.add, donate_argnums=0)
    state = rb.init(example_item())
    if "insert" in want:
        batches = [random_items(rng, b) for _ in range(8)]
        batches = [jax.device_put(x) for x in batches]

        def insert(i):
            nonlocal state
            state = add(state, batches[i % len(batches)])
            jax.block_until_ready(state)

        t = timed(insert, reps, warmup)
        rows.append(("per-call", "insert", t))
        carry = Carry(state)
        rows.append(("scan", "insert",
                     time_scan(carry, lambda s, items: (rb.add(s, items), jnp.int32(0)),
                               (stacked_batches(batches, scan_steps),), reps, scan_steps)))
        state = carry.state
    # Fill to capacity with random priorities (chunks keep the compile small).
    chunk = min(n, 2**16)
    fill = jax.jit(lambda s, items, p: rb.add(s, items, p), donate_argnums=0)
    for _ in range(0, n, chunk):  # n is a power of two >= chunk
        pri = (rng.random(chunk) + 0.01).astype(np.float32)
        items = random_items(rng, chunk)
        state = fill(state, items, pri)
    jax.block_until_ready(state)

    def step(state, key, td):
        sample = rb.sample(state, key, b, BETA)
        if path != "native":  # the native sample reads the trees inside its one call
            td = ordered_after(td, sample.probabilities, sample.weights)
        state = rb.update(state, sample.indices, td)
        return state, (sample.items, sample.weights, sample.indices)

    carry = Carry(state)
    del state  # from here on the state lives in `carry`, donated call after call
    keys, tds = (list(x) for x in step_inputs(rng, b, 64, seed=0))
    skeys, stds = step_inputs(rng, b, scan_steps, seed=1)
    if "sample+update" in want:
        step_jit = jax.jit(step, donate_argnums=0)
        per_call = time_calls(carry, step_jit, keys, tds, reps, warmup)
        rows.append(("per-call", "sample+update", per_call))
        in_scan = time_scan(carry, step, (skeys, stds), reps, scan_steps)
        rows.append(("scan", "sample+update", in_scan))


    if "breakdown" in want:
        # Where the time goes: the sum tree alone (random bits -> indices -> new leaf
        # priorities; no IS weights, no min tree, no transition gather), the floor of a
        # per-call step (a jitted no-op taking and returning the same donated state), and
        # the two halves of a sample+update step, each alone in a fused loop: the sample
        # (bits, descent, IS weights, transition gather) and the update (bookkeeping and
        # both trees) at sorted random indices, as stratified sampling hands them over.
        def tree_step(state, key, td):
            if path == "native":  # the buffer's one-call path: bits drawn in the kernel
                words = native.threefry_key_words(key)
                indices, _ = native.sample_with_key(state.tree, words, state.size, b)
                return state.replace(tree=native.update(state.tree, indices, td)), indices
            kernels = pallas_kernels if path == "pallas" else sumtree_module
            bits = jax.random.bits(key, (b,), jnp.uint32)
            indices = kernels.sample_from_bits(state.tree, bits)
            return state.replace(tree=kernels.update(state.tree, indices, td)), indices

        def sample_step(state, key, td):
            sample = rb.sample(state, key, b, BETA)
            return state, (sample.items, sample.weights, sample.indices)

        def update_step(state, indices, td):
            return rb.update(state, indices, td), indices

        def noop(state, key, td):
            return state, td

        for name, fn in (("tree-only", tree_step), ("no-op (dispatch floor)", noop)):
            fn_jit = jax.jit(fn, donate_argnums=0)
            rows.append(("per-call", name, time_calls(carry, fn_jit, keys, tds, reps, warmup)))
        sidx = jnp.asarray(np.sort(rng.integers(0, n, (scan_steps, b)), axis=1), jnp.int32)
        for name, fn, xs in (
            ("tree-only", tree_step, (skeys, stds)),
            ("no-op (dispatch floor)", noop, (skeys, stds)),  # the scan's own cost per step
            ("sample only", sample_step, (skeys, stds)),
            ("update only", update_step, (sidx, stds)),
        ):
            rows.append(("scan", name, time_scan(carry, fn, xs, reps, scan_steps)))
    if path == "native" and "sample+update" in want:  # last: each handle copies the state
        for mode, handle_path in (("handle-jit", "jit"), ("handle", "direct")):
            rows.append((mode, "sample+update",
                         time_handle(rb, carry, b, keys, tds, reps, warmup, handle_path)))
    del carry
    return [Row("hrl", path, mode, op, n, b, k, *stats(t)) for mode, op, t in rows]


def ordered_after(x, *reads):
    """`x`, made data-dependent on `reads` (x + 0 * sum(reads); XLA cannot fold 0 * float).

    Sampling reads the tree (the sampled leaves, the roots) and the update then writes it in
    place. XLA:CPU orders a read before an in-place write only through a data dependency;
    without one it copies every read level (the whole leaf level, O(N), on every step). A
    training step has the dependency only if its new priorities depend on the sampled
    probabilities or weights, which TD errors usually do not; here the random TD errors get
    it explicitly for the libraries whose sample reads the tree with XLA ops (hrl xla,
    flashbax). hrl native does not need it: its tree reads happen inside the custom call
    whose indices the update consumes (tests/replay/test_buffer.py checks the compiled step).
    """
    dep = sum(jnp.sum(r) for r in reads)
    return x + jnp.zeros_like(x) * dep


def stats(t: np.ndarray):
    wall, cpu = t[:, 0] * 1e6, t[:, 1] * 1e6
    return (
        float(np.median(wall)),
        float(np.percentile(wall, 25)),
        float(np.percentile(wall, 75)),
        float(np.median(cpu)),
        len(t),
    )


# ----------------------------------------------------------------------------- cpprb


def bench_cpprb(n, b, reps, warmup, rng, want):
    import cpprb

    env_dict = {
        "obs": {"shape": OBS},
        "action": {"dtype": np.int32},
        "reward": {},
        "next_obs": {"shape": OBS},
        "done": {},
    }
    rb = cpprb.PrioritizedReplayBuffer(n, env_dict, alpha=ALPHA, eps=EPS)
    rows = []
    if "insert" in want:
        batches = [random_items(rng, b) for _ in range(8)]
        t = timed(lambda i: rb.add(**batches[i % 8]), reps, warmup)
        rows.append(("per-call", "insert", t))
    chunk = min(n, 2**16)
    for _ in range(0, n, chunk):
        rb.add(**random_items(rng, chunk), priorities=(rng.random(chunk) + 0.01))
    if "sample+update" in want:
        tds = np.abs(rng.standard_normal((64, b))).astype(np.float64) + EPS

        def one(i):
            s = rb.sample(b, beta=BETA)
            rb.update_priorities(s["indexes"], tds[i % 64])

        rows.append(("per-call", "sample+update", timed(one, reps, warmup)))
    return [Row("cpprb", "c++", mode, op, n, b, 2, *stats(t)) for mode, op, t in rows]


# ----------------------------------------------------------------------------- flashbax


def bench_flashbax(n, b, reps, warmup, scan_steps, rng, want):
    import flashbax as fbx

    rows = []
    item = jax.tree.map(jnp.asarray, example_item())
    if "insert" in want:
        fb = fbx.make_prioritised_flat_buffer(
            max_length=n,
            min_length=2 * b,  # (s, s') pairs: two steps per add row before sampling
            sample_batch_size=b,
            add_batch_size=b,
            priority_exponent=ALPHA,
            device=jax.default_backend(),
        )
        state = fb.init(item)
        add = jax.jit(fb.add, donate_argnums=0)
        batches = [jax.device_put(random_items(rng, b)) for _ in range(8)]

        def insert(i):
            nonlocal state
            state = add(state, batches[i % 8])
            jax.block_until_ready(state)

        rows.append(("per-call", "insert", timed(insert, reps, warmup)))
        carry = Carry(state)
        rows.append(("scan", "insert",
                     time_scan(carry, lambda s, items: (fb.add(s, items), jnp.int32(0)),
                               (stacked_batches(batches, scan_steps),), reps, scan_steps)))
        del state, carry
    if "sample+update" in want:
        # The sum tree is filled directly (flashbax's own add would take minutes at N = 2^23)
        # and the buffer marked full. flashbax's tree is a heap-ordered binary tree: level d
        # starts at node 2^d - 1 (flashbax.buffers.sum_tree.get_tree_index).
        rows_added = min(n, 1024)
        fb = fbx.make_prioritised_flat_buffer(
            max_length=n,
            min_length=2 * rows_added,  # (s, s') pairs: two steps per add row
            sample_batch_size=b,
            add_batch_size=rows_added,
            priority_exponent=ALPHA,
            device=jax.default_backend(),
        )
        state = fb.init(item)
        tree = state.sum_tree_state
        leaves = np.zeros(2**tree.tree_depth, np.float32)
        leaves[: tree.capacity] = (rng.random(tree.capacity) + 0.01) ** ALPHA
        levels = [leaves]
        while levels[-1].size > 1:
            levels.append(levels[-1].reshape(-1, 2).sum(axis=1, dtype=np.float32))
        nodes = np.concatenate(levels[::-1]).astype(np.float32)
        state = state.replace(
            sum_tree_state=tree.replace(nodes=jnp.asarray(nodes, tree.nodes.dtype)),
            is_full=jnp.asarray(True),
            running_index=jnp.asarray(state.experience["obs"].shape[1], jnp.int32),
        )

        def step(state, key, td):
            sample = fb.sample(state, key)
            p = sample.probabilities
            w = jnp.power(n * jnp.maximum(p, 1e-30), -BETA)
            w = w / jnp.max(w)
            td = ordered_after(td, p)
            state = fb.set_priorities(state, sample.indices, jnp.abs(td) + EPS)
            return state, (sample.experience, w, sample.indices)

        carry = Carry(state)
        del state
        keys, tds = (list(x) for x in step_inputs(rng, b, 64, seed=0))
        skeys, stds = step_inputs(rng, b, scan_steps, seed=1)
        step_jit = jax.jit(step, donate_argnums=0)
        per_call = time_calls(carry, step_jit, keys, tds, reps, warmup)
        rows.append(("per-call", "sample+update", per_call))
        in_scan = time_scan(carry, step, (skeys, stds), reps, scan_steps)
        rows.append(("scan", "sample+update", in_scan))
        del carry
    return [Row("flashbax", FLASHBAX_PATH, mode, op, n, b, 2, *stats(t)) for mode, op, t in rows]


# ----------------------------------------------------------------------------- report

COLUMNS = [
    ("hrl", "native", "handle"),
    ("hrl", "native", "handle-jit"),
    ("hrl", "native", "per-call"),
    ("hrl", "native", "scan"),
    ("hrl", "xla", "per-call"),
    ("hrl", "xla", "scan"),
    ("hrl", "pallas", "per-call"),
    ("hrl", "pallas", "scan"),
    ("flashbax", FLASHBAX_PATH, "per-call"),
    ("flashbax", FLASHBAX_PATH, "scan"),
    ("cpprb", "c++", "per-call"),
]


def label(col) -> str:
    lib, path, mode = col
    if mode == "handle":
        return f"{lib} {path} ReplayHandle per-call"
    if mode == "handle-jit":
        return f"{lib} {path} ReplayHandle jitted path per-call"
    return f"{lib} {path} {mode}" if lib == "hrl" else f"{lib} {mode}"


def lookup(rows, col, op, n, b, k):
    lib, path, mode = col
    for r in rows:
        if (r.library, r.path, r.mode, r.op, r.n, r.b) == (lib, path, mode, op, n, b) and (
            lib != "hrl" or r.k == k
        ):
            return r
    return None


def ratio(base, x) -> str:
    """base / x for wall time (and for CPU time in brackets)."""
    if not (base and x):
        return "-"
    return f"{base.median_us / x.median_us:.1f}x ({base.cpu_us / x.cpu_us:.1f}x)"


def markdown(rows, grid, op, header: str) -> str:
    cols = [
        c
        for c in COLUMNS
        if any(
            lookup(rows, c, op, n, b, k) for n in grid["n"] for b in grid["b"] for k in grid["k"]
        )
    ]
    lines = [header, ""]
    lines.append(
        "| N | B | K | "
        + " | ".join(label(c) + " (us)" for c in cols)
        + " | cpprb / hrl native ReplayHandle | cpprb / hrl native per-call"
        " | cpprb / hrl native scan | flashbax / hrl best scan |"
    )
    lines.append("|" + "---|" * (3 + len(cols) + 4))
    for n in grid["n"]:
        for b in grid["b"]:
            for k in grid["k"]:
                cells = [lookup(rows, c, op, n, b, k) for c in cols]
                if not any(cells):
                    continue
                cpprb = lookup(rows, ("cpprb", "c++", "per-call"), op, n, b, k)
                nat = lookup(rows, ("hrl", "native", "per-call"), op, n, b, k)
                handle = lookup(rows, ("hrl", "native", "handle"), op, n, b, k)
                nat_scan = lookup(rows, ("hrl", "native", "scan"), op, n, b, k)
                fbx = lookup(rows, ("flashbax", FLASHBAX_PATH, "scan"), op, n, b, k)
                hrl_scan = [lookup(rows, ("hrl", p, "scan"), op, n, b, k) for p in HRL_PATHS]
                best = min((r for r in hrl_scan if r), key=lambda r: r.median_us, default=None)
                lines.append(
                    f"| 2^{int(np.log2(n))} | {b} | {k} | "
                    + " | ".join(f"{c.median_us:.1f} ({c.cpu_us:.1f})" if c else "-" for c in cells)
                    + f" | {ratio(cpprb, handle)} | {ratio(cpprb, nat)} | {ratio(cpprb, nat_scan)}"
                    + f" | {ratio(fbx, best)} |"
                )
    return "\n".join(lines) + "\n"


def plot(rows, grid, path: Path):
    """Process CPU time per batch vs N (B=256, K=16 where measured): steadier than wall time
    on a shared machine; the markdown table has both."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = 256 if 256 in grid["b"] else grid["b"][0]
    k = 16 if 16 in grid["k"] else grid["k"][0]
    colors = dict(zip(COLUMNS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ["sample+update", "insert"], strict=True):
        for col in COLUMNS:
            pts = [(n, lookup(rows, col, op, n, b, k)) for n in grid["n"]]
            pts = [(n, r.cpu_us) for n, r in pts if r]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, marker="o", color=colors[col], label=label(col))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("capacity N")
        ax.set_ylabel("CPU time per batch (us, median)")
        ax.set_title(f"{op}, B={b} (hrl K={k}; cpprb, flashbax binary)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def read_csv(path: Path) -> list[Row]:
    """Rows written by `write_csv` (for --replot)."""
    with path.open() as f:
        out = []
        for rec in csv.DictReader(f):
            out.append(
                Row(
                    rec["library"],
                    rec["path"],
                    rec["mode"],
                    rec["op"],
                    *(int(rec[c]) for c in ("n", "b", "k")),
                    *(float(rec[c]) for c in ("median_us", "p25_us", "p75_us", "cpu_us")),
                    int(rec["reps"]),
                )
            )
    return out


def write_csv(rows, path: Path, extra: dict):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(Row.__dataclass_fields__) + list(extra))
        for r in rows:
            w.writerow(list(vars(r).values()) + list(extra.values()))


def round_ratios(rows) -> str:
    """Per round, cpprb's per-call time over hrl native's (scan and per call), measured back
    to back in that round: on a machine whose speed drifts, these ratios are steadier than
    ratios of medians pooled over rounds."""

    def pick(group, lib, path, mode):
        for r in group:
            if (r.library, r.path, r.mode, r.op) == (lib, path, mode, "sample+update"):
                return r.median_us
        return None

    lines = [
        "## cpprb / hrl native, round by round (sample+update)",
        "",
        "| round | cpprb per-call (us) | hrl native scan (us) | hrl native per-call (us) "
        "| hrl ReplayHandle per-call (us) | its jitted path (us) | cpprb / hrl scan "
        "| cpprb / hrl per-call | cpprb / hrl ReplayHandle | ReplayHandle: jitted / direct |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    scan_ratios, call_ratios, handle_ratios, path_ratios = [], [], [], []
    for r in sorted({r for r, _ in rows}):
        group = [row for i, row in rows if i == r]
        cp = pick(group, "cpprb", "c++", "per-call")
        sc = pick(group, "hrl", "native", "scan")
        pc = pick(group, "hrl", "native", "per-call")
        hd = pick(group, "hrl", "native", "handle")
        hj = pick(group, "hrl", "native", "handle-jit")
        if None in (cp, sc, pc):
            continue
        scan_ratios.append(cp / sc)
        call_ratios.append(cp / pc)
        hd_cell, hd_ratio, hj_cell, path_ratio = "-", "-", "-", "-"
        if hd is not None:
            handle_ratios.append(cp / hd)
            hd_cell, hd_ratio = f"{hd:.1f}", f"{cp / hd:.1f}x"
        if hd is not None and hj is not None:
            path_ratios.append(hj / hd)
            hj_cell, path_ratio = f"{hj:.1f}", f"{hj / hd:.2f}x"
        lines.append(
            f"| {r + 1} | {cp:.1f} | {sc:.1f} | {pc:.1f} | {hd_cell} | {hj_cell} "
            f"| {cp / sc:.1f}x | {cp / pc:.1f}x | {hd_ratio} | {path_ratio} |"
        )
    if scan_ratios:
        median = lambda xs: f"**{np.median(xs):.2f}x**" if xs else "-"  # noqa: E731
        lines.append(
            f"| median | | | | | | **{np.median(scan_ratios):.1f}x** "
            f"| **{np.median(call_ratios):.1f}x** | {median(handle_ratios)} "
            f"| {median(path_ratios)} |"
        )
    return "\n".join(lines) + "\n"


def machine_note() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    dispatch = running_cpu_dispatch()
    model = cpu_name()
    gpus = sorted({d.device_kind for d in jax.devices() if d.platform == "gpu"})
    return (
        (f"{', '.join(gpus)} (the GPU kernels' device) on a host of " if gpus else "")
        + f"{model}, {os.cpu_count()} CPUs, load average "
        f"{load:.1f} at start; jax {jax.__version__} ({dispatch} CPU dispatch), "
        f"python {sys.version.split()[0]}"
    )


# ----------------------------------------------------------------------------- main


def run_grid(grid, libraries, reps, warmup, scan_steps, want, progress, task):
    rows = []
    rng = np.random.default_rng(0)
    for n in grid["n"]:
        for b in grid["b"]:
            if b > n:
                continue
            if "cpprb" in libraries:
                progress.update(task, description=f"cpprb N=2^{int(np.log2(n))} B={b}")
                rows += bench_cpprb(n, b, reps, warmup, rng, want)
                progress.advance(task)
            if "flashbax" in libraries:
                progress.update(task, description=f"flashbax N=2^{int(np.log2(n))} B={b}")
                rows += bench_flashbax(n, b, reps, warmup, scan_steps, rng, want)
                progress.advance(task)
            for k in grid["k"]:
                for path in HRL_PATHS:
                    if f"hrl-{path}" not in libraries:
                        continue
                    progress.update(
                        task, description=f"hrl {path} N=2^{int(np.log2(n))} B={b} K={k}"
                    )
                    rows += bench_hrl(path, n, b, k, reps, warmup, scan_steps, rng, want)
                    progress.advance(task)
                    gc.collect()
            gc.collect()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small grid (N=2^14,2^20; B=256; K=16)"
    )
    parser.add_argument(
        "--headline",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only N=2^20, B=256, K=16, sample+update, ROUNDS interleaved rounds",
    )
    parser.add_argument("--reps", type=int, default=None, help="timed calls per cell")
    parser.add_argument("--log2-n", help="override the grid's N, e.g. 14,17,20,23")
    parser.add_argument("--b", help="override the grid's B, e.g. 32,256,4096")
    parser.add_argument("--k", help="override the grid's K, e.g. 2,4,16,64")
    parser.add_argument("--libraries", default="hrl-native,hrl-xla,cpprb,flashbax")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument(
        "--replot", type=Path, metavar="CSV", help="only redraw the PNG of a replay_bench CSV"
    )
    parser.add_argument(
        "--sync-dispatch",
        action="store_true",
        help="run jitted calls on the calling thread (jax_cpu_enable_async_dispatch=False): "
        "what a Python loop that waits for every call can choose to pay",
    )
    args = parser.parse_args(argv)
    if args.sync_dispatch:
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    if args.replot:
        rows = read_csv(args.replot)
        grid = {key: sorted({getattr(r, key) for r in rows}) for key in ("n", "b", "k")}
        plot(rows, grid, args.replot.with_suffix(".png"))
        console.print(f"wrote {args.replot.with_suffix('.png')}")
        return
    libraries = set(args.libraries.split(","))
    unknown = libraries - {f"hrl-{p}" for p in HRL_PATHS} - {"cpprb", "flashbax"}
    if unknown:
        parser.error(f"unknown --libraries entries {sorted(unknown)}")
    if "hrl-native" in libraries and not native.available():
        console.print(f"[yellow]native kernels unavailable: {native.unavailable_reason()}")
        libraries.discard("hrl-native")
    args.out.mkdir(parents=True, exist_ok=True)
    note = machine_note()
    if args.headline:
        grid = dict(n=[2**20], b=[256], k=[16])
        reps, warmup, scan_steps = args.reps or 200, 20, 100
        want = ("sample+update", "breakdown")
        stem, rounds = "headline", args.headline
    else:
        grid = dict(QUICK_GRID if args.quick else FULL_GRID)
        if args.log2_n:
            grid["n"] = [2 ** int(x) for x in args.log2_n.split(",")]
        if args.b:
            grid["b"] = [int(x) for x in args.b.split(",")]
        if args.k:
            grid["k"] = [int(x) for x in args.k.split(",")]
        reps = args.reps or (40 if args.quick else 100)
        warmup, scan_steps = 5, (20 if args.quick else 50)
        want = ("sample+update", "insert", "breakdown")
        stem, rounds = ("replay_quick" if args.quick else "replay_bench"), 1
    if args.sync_dispatch:
        stem += "_sync"
    if jax.default_backend() != "cpu":  # GPU results sit beside the CPU ones, not over them
        stem += f"_{jax.default_backend()}"
    cells = sum(1 for n in grid["n"] for b in grid["b"] if b <= n)
    per_cell = (
        ("cpprb" in libraries)
        + ("flashbax" in libraries)
        + len(grid["k"]) * sum(f"hrl-{p}" in libraries for p in HRL_PATHS)
    )
    rows = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("replay benchmark", total=cells * per_cell * rounds)
        for r in range(rounds):
            for row in run_grid(grid, libraries, reps, warmup, scan_steps, want, progress, task):
                rows.append((r, row))
    flat = [row for _, row in rows]
    if rounds > 1:
        # One figure per (library, path, mode): the median over rounds of the round medians.
        merged = {}
        for _, row in rows:
            merged.setdefault(
                (row.library, row.path, row.mode, row.op, row.n, row.b, row.k), []
            ).append(row)
        flat = []
        for group in merged.values():
            meds = np.array([g.median_us for g in group])
            g0 = group[0]
            flat.append(
                Row(
                    g0.library,
                    g0.path,
                    g0.mode,
                    g0.op,
                    g0.n,
                    g0.b,
                    g0.k,
                    float(np.median(meds)),
                    float(meds.min()),
                    float(meds.max()),
                    float(np.median([g.cpu_us for g in group])),
                    sum(g.reps for g in group),
                )
            )
    if rounds > 1:
        write_csv([row for _, row in rows], args.out / f"{stem}_raw.csv", {"note": note})
    write_csv(flat, args.out / f"{stem}.csv", {"note": note})
    spread = (
        "p25/p75 columns of the CSV: min/max of the round medians"
        if rounds > 1
        else "quartiles in the CSV"
    )
    kind = "headline" if args.headline else "quick" if args.quick else "grid"
    flags = " ".join(sys.argv[1:]) if argv is None else " ".join(argv)
    md = [
        f"# Replay benchmark ({kind})",
        "",
        f"Machine: {note}. Each cell: median wall time per batch in microseconds, "
        f"and in brackets the median process CPU time ({spread}).",
        f"Regenerate: `python experiments/bench/bench_replay.py {flags}`."
        " What each call does: see the docstring of experiments/bench/bench_replay.py.",
        "",
    ]
    md.append(
        markdown(
            flat, grid, "sample+update", "## sample+update (IS weights, gather, priority update)"
        )
    )
    if "insert" in want:
        md.append(markdown(flat, grid, "insert", "## insert (B transitions, max priority)"))
    if "breakdown" in want:
        md.append(
            markdown(
                flat,
                grid,
                "tree-only",
                "## hrl sum tree alone (bits, descent, leaf update; no weights, no gather)",
            )
        )
        md.append(
            markdown(
                flat,
                grid,
                "no-op (dispatch floor)",
                "## hrl floor: a jitted no-op on the same donated state (per call: the "
                "dispatch; scan: the loop's own cost per step)",
            )
        )
        for op, title in (
            ("sample only", "## hrl sample alone (bits, descent, IS weights, transition gather)"),
            ("update only", "## hrl update alone (bookkeeping, sum tree and min tree)"),
        ):
            md.append(markdown(flat, grid, op, title))
    if rounds > 1:
        md.append(round_ratios(rows))
    (args.out / f"{stem}.md").write_text("\n".join(md))
    if not args.headline:
        plot(flat, grid, args.out / f"{stem}.png")
    console.print("\n".join(md))
    console.print(f"wrote {args.out}/{stem}.csv, .md" + ("" if args.headline else ", .png"))


if __name__ == "__main__":
    main()
