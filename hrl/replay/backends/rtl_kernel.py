"""OpenCL host driver of the RTL replay manager kernel `hrl_rmm_kernel` (fpga_rtl/).

One driver, two devices. On an Alveo card it runs on pyopencl over the vendor's ICD (XRT)
with the real xclbin; here the very same code runs on `hrl.replay.backends.rtl_sim`, a thin
device layer with pyopencl's names that executes every call on the kernel in a Verilog
simulation. Selected by the `opencl` backend: `make_backend("opencl", ..., device="rtl-sim")`
(config: `replay.backend: opencl`, `replay.opencl_device: rtl-sim`), or
`make_backend("opencl", ..., xclbin=PATH)` with an xclbin that holds `hrl_rmm_kernel`. The
name 'rtl' is kept as a shorthand for the first (`open_rtl_sim`).

What the driver does, as a board's host program does it: `Program(ctx, [device], [binary])`
(the xclbin, or `rtl_sim.sim_binary(K, D, P, W)`), `Kernel(program, "hrl_rmm_kernel")`, five
buffers made once (indices, words, randoms, results, and a row buffer for the root), and per
operation: `enqueue_copy` of the inputs, `set_arg` of the nine arguments in the order of
`fpga_rtl/vitis/kernel.xml` (command, count, level, row, seed as uint32; indices, words,
randoms, results as buffers), `enqueue_nd_range_kernel(queue, kernel, (1,), (1,))` (XRT runs
an RTL kernel as a task), and a blocking `enqueue_copy` of the results.

An OpenCL host cannot read the kernel's status registers (cycles 0x60, root 0x64), so the
root (for `total()` and the empty-tree check) is read with a READ_TREE run of level 0 when an
update has changed it since the last read, enqueued behind the operation that needs it
(one wait for both). The kernel's shape (K, D, P, W) is the binary's; the driver checks K
when it starts (a READ_TREE row of level 0 writes exactly K words) and the capacity must
need depth D at that fanout.

The RTL is fixed point only: fmt is a `FixedPoint` ('fixed', 'fixed:W:I'), priorities are
encoded on the host with `FixedPoint.encode`, exactly as the reference does; results are bit
for bit those of `hrl.replay.sumtree` (tests/replay/test_backends_rtl.py,
tests/runtime/test_runtime_host.py).
"""

from __future__ import annotations

import os

import numpy as np

from hrl.replay.backends import base, rtl_sim
from hrl.replay.formats import UINT32_MAX, FixedPoint, PriorityFormat, stratify_bits

KERNEL_NAME = "hrl_rmm_kernel"
# The kernel's arguments in kernel.xml order (tests check the two agree).
ARG_NAMES = ("command", "count", "level", "row", "seed", "indices", "words", "randoms",
             "results")
CMD = {"update": 0, "sample": 1, "sample_lfsr": 2, "sample_lfsr_iid": 3, "read_tree": 4,
       "clear": 5}
MAX_RUN = 1 << 16  # items per kernel run (buffer size); larger calls are split
MAX_FANOUT = 64  # the kernel's largest K: the root-row buffer holds that many words
SENTINEL = np.uint32(UINT32_MAX)


class RmmKernelBackend:
    """The sum tree in `hrl_rmm_kernel` on an OpenCL device (a card, or `rtl_sim`).

    `cl`: the OpenCL module (pyopencl, or `hrl.replay.backends.rtl_sim`); `device`: its
    device; `binary`: the program binary (xclbin bytes, or `rtl_sim.sim_binary(...)`);
    `seed`: the kernel's LFSR seed (loaded by every `reset`)."""

    name = "opencl"

    def __init__(self, capacity: int, fanout: int, fmt: PriorityFormat | str, *, cl, device,
                 binary: bytes, seed: int = 0):
        tree_fmt, depth, sizes = base.tree_geometry(capacity, fanout, fmt)
        if not isinstance(tree_fmt, FixedPoint):
            raise ValueError(
                f"the RTL replay kernel is fixed point only (it keeps FixedPoint words), "
                f"got fmt={tree_fmt.name!r}; use fmt='fixed' or 'fixed:W:I'")
        if not isinstance(seed, (int, np.integer)) or not 0 <= seed <= UINT32_MAX:
            raise ValueError(f"seed must be an int in [0, 2**32-1], got {seed!r}")
        self.fmt, self.depth, self._sizes = tree_fmt, depth, sizes
        self.capacity, self.fanout, self.seed = int(capacity), int(fanout), int(seed)
        self._cl, self.device = cl, device
        self.context = cl.Context([device])
        try:
            self._open(binary)
        except BaseException:
            self.close()  # a started simulation ends with the failed backend
            raise

    def _open(self, binary: bytes) -> None:
        cl, device = self._cl, self.device
        self.queue = cl.CommandQueue(
            self.context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.program = cl.Program(self.context, [device], [binary]).build()
        names = self.program.get_info(cl.program_info.KERNEL_NAMES).split(";")
        if KERNEL_NAME not in names:
            raise base.BackendUnavailableError(
                f"the program binary has kernels {names}, not {KERNEL_NAME!r}: build the "
                f"xclbin from fpga_rtl/ (fpga_rtl/vitis/build_xclbin.sh)")
        self.kernel = cl.Kernel(self.program, KERNEL_NAME)
        mf = cl.mem_flags
        self._buf = {
            "indices": cl.Buffer(self.context, mf.READ_ONLY, 4 * MAX_RUN),
            "words": cl.Buffer(self.context, mf.READ_ONLY, 4 * MAX_RUN),
            "randoms": cl.Buffer(self.context, mf.READ_ONLY, 4 * MAX_RUN),
            "results": cl.Buffer(self.context, mf.WRITE_ONLY, 8 * MAX_RUN),
            "root_row": cl.Buffer(self.context, mf.READ_WRITE, 4 * MAX_FANOUT),
        }
        self._runs: list[tuple[str, int, object]] = []  # (command, count, event)
        self._root: int | None = None  # None: changed since it was last read
        self._check_fanout()
        self.reset()

    # ------------------------------------------------------------------ kernel runs

    def _launch(self, command: str, count: int, *, level: int = 0, row: int = 0,
                results: str = "results"):
        """Set the nine arguments (kernel.xml order) and enqueue one run; returns its event."""
        b = self._buf
        self.kernel.set_args(np.uint32(CMD[command]), np.uint32(count), np.uint32(level),
                             np.uint32(row), np.uint32(self.seed), b["indices"], b["words"],
                             b["randoms"], b[results])
        event = self._cl.enqueue_nd_range_kernel(self.queue, self.kernel, (1,), (1,))
        self._runs.append((command, int(count), event))
        return event

    def _write(self, name: str, array) -> None:
        self._cl.enqueue_copy(self.queue, self._buf[name],
                              np.ascontiguousarray(array, np.uint32), is_blocking=False)

    def _read(self, name: str, words: int, blocking: bool = True) -> np.ndarray:
        out = np.empty(words, np.uint32)
        self._cl.enqueue_copy(self.queue, out, self._buf[name], is_blocking=blocking)
        return out

    def _enqueue_root_read(self) -> np.ndarray | None:
        """Enqueue a READ_TREE of the root row if the root is stale; the array it fills."""
        if self._root is not None:
            return None
        self._launch("read_tree", 1, level=0, row=0, results="root_row")
        return self._read("root_row", self.fanout, blocking=False)

    def _root_word(self) -> int:
        row = self._enqueue_root_read()
        if row is not None:
            self.queue.finish()
            self._root = int(row[0])
        return self._root

    def _check_fanout(self) -> None:
        """The binary's K: a READ_TREE of one row writes exactly K words."""
        self._write("root_row", np.full(MAX_FANOUT, SENTINEL))
        self._launch("read_tree", 1, level=0, row=0, results="root_row")
        row = self._read("root_row", MAX_FANOUT)
        k = int(np.argmax(row == SENTINEL)) if (row == SENTINEL).any() else MAX_FANOUT
        if k != self.fanout:
            raise ValueError(f"fanout={self.fanout} but the kernel in the binary was built "
                             f"with K={k}; use the binary built for this fanout")

    # ------------------------------------------------------------------ protocol

    def reset(self) -> None:
        self._launch("clear", 0)
        self.queue.finish()
        self._root = 0

    def update(self, indices, priorities) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_priorities(priorities, idx.shape[0])
        if idx.size:
            self._update_words(idx, np.asarray(self.fmt.encode(values), np.uint32))

    def update_words(self, indices, words) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_words(words, idx.shape[0], self.fmt)
        if idx.size:
            self._update_words(idx, values)

    def _update_words(self, idx: np.ndarray, words: np.ndarray) -> None:
        # Runs in order: the kernel applies items sequentially, so the last duplicate wins
        # across runs too. Nothing is waited for: the next read waits for all of it.
        for c in range(0, idx.size, MAX_RUN):
            part = slice(c, c + MAX_RUN)
            self._write("indices", idx[part].astype(np.uint32))
            self._write("words", words[part])
            self._launch("update", idx[part].size)
        self._root = None

    def _sample(self, command: str, count: int, randoms=None) -> np.ndarray:
        """Enqueue one SAMPLE* run (and the root read it needs); the {index, word} pairs."""
        if self._root is not None:
            base.require_nonempty(self._root)
        if randoms is not None:
            self._write("randoms", randoms)
        self._launch(command, count)
        row = self._enqueue_root_read()
        pairs = self._read("results", 2 * count)  # waits for everything enqueued
        if row is not None:
            self._root = int(row[0])
            base.require_nonempty(self._root)
        return pairs.reshape(count, 2)

    def sample_from_bits(self, bits, stratified: bool = True) -> np.ndarray:
        bits = base.check_bits(bits)
        fractions = (np.asarray(stratify_bits(bits, bits.shape[0]), np.uint32) if stratified
                     else bits)
        out = [self._sample("sample", fractions[c:c + MAX_RUN].size, fractions[c:c + MAX_RUN])
               [:, 0] for c in range(0, fractions.size, MAX_RUN)]
        if not out:
            return np.zeros(0, np.int32)
        return np.concatenate(out).astype(np.int32)

    def sample_lfsr(self, batch_size: int, stratified: bool = True):
        """`batch_size` samples drawn by the kernel's own generators (SAMPLE_LFSR runs):
        (indices int32, the uint32 words drawn). `sample_from_bits(words, stratified)` on
        any backend gives the same indices. Not part of the backend protocol."""
        if not isinstance(batch_size, (int, np.integer)) or not 1 <= batch_size <= MAX_RUN:
            raise ValueError(f"batch_size must be an int in [1, {MAX_RUN}], got {batch_size!r}")
        pairs = self._sample("sample_lfsr" if stratified else "sample_lfsr_iid", batch_size)
        return pairs[:, 0].astype(np.int32), pairs[:, 1].copy()

    def total(self) -> float:
        return base.decode_root(self.fmt, self._root_word(), self.depth, self.fanout)

    def level_words(self) -> list[np.ndarray]:
        levels = [np.array([self._root_word()], np.uint32)]
        k = self.fanout
        step = 2 * MAX_RUN // k  # rows per READ_TREE run: the results buffer's size
        for level in range(1, self.depth + 1):
            rows = self._sizes[level] // k
            parts = []
            for row in range(0, rows, step):
                n = min(step, rows - row)
                self._launch("read_tree", n, level=level, row=row)
                parts.append(self._read("results", n * k))
            levels.append(np.concatenate(parts).reshape(rows, k))
        return levels

    def load_level_words(self, levels) -> None:
        """Restore a tree: the RTL has no write port for inner nodes, so the leaves are
        written (one UPDATE of every leaf after a CLEAR) and the kernel recomputes every
        parent; the result is then read back and must equal `levels` (it does for any tree
        a backend produced). Levels whose parents do not follow from their leaves raise a
        ValueError (and leave the tree with those leaves)."""
        levels = base.check_levels(levels, self.capacity, self.fanout, self.fmt)
        self.reset()
        leaves = levels[-1].reshape(-1)[: self.capacity]
        self._update_words(np.arange(self.capacity, dtype=np.int32), leaves)
        got = self.level_words()
        for level, (a, b) in enumerate(zip(got, levels, strict=True)):
            if not np.array_equal(a, b):
                raise ValueError(
                    f"level {level} of the given tree does not follow from its leaves "
                    f"(parent = ceil(sum/K)); the RTL kernel can only restore consistent "
                    f"trees")

    def finish(self) -> None:
        """Wait until every operation issued so far has completed on the device."""
        self.queue.finish()

    def close(self) -> None:
        """Give the device back (ends the simulation on rtl-sim)."""
        release = getattr(self.context, "release", None)
        if release is not None:
            release()

    # ------------------------------------------------------------------ measurement

    @property
    def stats(self) -> list[dict]:
        """Per completed kernel run: command, count, `host_ns` (the event's profile, queued
        to complete) and `cycles` (the kernel's cycle register: rtl-sim only, else None)."""
        return [{"command": cmd, "count": n, "cycles": getattr(ev, "kernel_cycles", None),
                 "host_ns": int(ev.profile.end - ev.profile.start)}
                for cmd, n, ev in self._runs]

    def cycles_summary(self) -> dict[str, dict[str, float]]:
        """Per command: runs, items, kernel cycles in total and per item (rtl-sim)."""
        out: dict[str, dict[str, float]] = {}
        for s in self.stats:
            row = out.setdefault(s["command"], {"runs": 0, "items": 0, "cycles": 0})
            row["runs"] += 1
            row["items"] += s["count"]
            row["cycles"] += s["cycles"] or 0
        for row in out.values():
            row["cycles_per_item"] = row["cycles"] / max(1, row["items"])
        return out


def is_rmm_xclbin(path: str | os.PathLike) -> bool:
    """Whether the FPGA binary at `path` holds `hrl_rmm_kernel` (an xclbin's metadata
    sections name its kernels in plain text)."""
    with open(path, "rb") as f:
        return KERNEL_NAME.encode() in f.read()


def open_rtl_sim(capacity: int, fanout: int = 16, fmt: PriorityFormat | str = "fixed", *,
                 lanes: int = 1, seed: int = 0, simulator: str | None = None,
                 bus_model: str = "verilog", build_dir: str | os.PathLike | None = None,
                 timeout: float = 600.0) -> RmmKernelBackend:
    """The RTL kernel for this tree (K = fanout, D = its depth, W = the format's word bits,
    P = `lanes`) on the `rtl-sim` device, driven by `RmmKernelBackend`. `simulator`:
    'verilator', 'icarus' or None (Verilator if installed); `bus_model`: 'verilog' (memory
    model in Verilog, no Python per cycle) or 'cocotbext'; `build_dir`: where the RTL is
    built (default sim_build/rtlsim-..., or under env HRL_RTL_BUILD); `timeout`: seconds to
    wait for the simulator."""
    tree_fmt, depth, _ = base.tree_geometry(capacity, fanout, fmt)
    if not isinstance(tree_fmt, FixedPoint):
        raise ValueError(
            f"the RTL replay kernel is fixed point only (it keeps FixedPoint words), "
            f"got fmt={tree_fmt.name!r}; use fmt='fixed' or 'fixed:W:I'")
    if not isinstance(lanes, (int, np.integer)) or isinstance(lanes, bool) \
            or not 1 <= lanes <= 16:
        raise ValueError(f"lanes must be an int in [1, 16], got {lanes!r}")
    device = rtl_sim.Device(simulator=simulator, bus_model=bus_model, build_dir=build_dir,
                            timeout=timeout)
    binary = rtl_sim.sim_binary(fanout, depth, lanes, tree_fmt.word_bits)
    backend = RmmKernelBackend(capacity, fanout, tree_fmt, cl=rtl_sim, device=device,
                               binary=binary, seed=seed)
    backend.simulator, backend.bus_model, backend.lanes = device.simulator, bus_model, lanes
    return backend
