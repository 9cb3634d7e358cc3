"""The `opencl` replay backend: a pyopencl host driver for the kernels in `kernels/sumtree.cl`.

Runs on any OpenCL device: PoCL's CPU device on a machine without accelerators, a GPU, or an
FPGA. By default the kernels are built from source; given `xclbin=PATH` the driver loads that
binary instead (`cl.Program(ctx, [device], [binary])`), which must provide the same kernel
names and arguments (the contract is the kernel file; see its header).

Per operation the host issues one kernel launch: `update` is a single work-group that
resolves duplicates (last in batch order wins) and recomputes the ancestors level by level
between work-group barriers; `sample_from_bits` is one work item per sample.

Agreement with the JAX reference (`hrl.replay.sumtree`):
* fixed point: bit for bit, every word of every level and every sampled index.
* float32: leaves are bit for bit. A parent is the float32 sum of its K children; the kernels
  add left to right while XLA picks its own order (it differs between shapes), so a word at
  level l may differ. Both are within the recursive-summation bound of the exact sum S of the
  node's leaves, |w - S| <= ((1 + g)**(D - l) - 1) * S with g = (K-1)u / (1 - (K-1)u) and
  u = 2**-24 (`float32_level_bound`), so two backends differ by at most twice that (tested).
  Sampling: given the same tree words, the kernel performs the reference's float operations
  in the same order (XLA CPU's cumsum adds left to right for K = 4 and 16; the test checks
  that before relying on it), so the indices are identical (tested). On trees that differ
  within the bound, every index i either backend returns has priority > 0 and an exact prefix
  interval [P_i, P_i+1) that holds the target frac * S_root up to 4 * D * K * u * S_root
  (tested), so the two can differ only for targets that close to a boundary.
  Subnormal priorities are outside these statements: XLA CPU flushes them to zero, OpenCL
  devices need not.

Compiled programs are cached per OpenCL context, and backends on the same device share a
context, so a second backend costs no compilation.

On a machine whose only OpenCL platform is PoCL's CPU driver, the default device is PoCL's
`basic` device, which runs each kernel in the thread that waits for it, rather than its
`pthread` device, which hands the kernel to worker threads and wakes the caller when they are
done. A replay buffer issues one small kernel per call, and the hand-offs cost more than the
kernel (`experiments/bench/bench_relaxed.py` measures both devices; the figures are in
experiments/results and the README).
Unless the process has set `POCL_DEVICES` itself, the first use of this module asks PoCL for
both devices (`basic pthread`); `replay.opencl_device: pthread` picks the other one.

The RTL replay kernel (`hrl_rmm_kernel`, fpga_rtl/) has its own host driver,
`hrl.replay.backends.rtl_kernel`; `open_opencl_backend` (what `make_backend("opencl", ...)`
calls) hands over to it for `device="rtl-sim"` (the kernel in a Verilog simulation) and for
an xclbin that holds `hrl_rmm_kernel` (the kernel on a card).
"""

from __future__ import annotations

import os
import threading
import weakref
from importlib import resources

import numpy as np

from hrl.replay.backends import base
from hrl.replay.backends.rtl_kernel import RmmKernelBackend, is_rmm_xclbin, open_rtl_sim
from hrl.replay.formats import FixedPoint, PriorityFormat, log2_exact

INSTALL_HINT = (
    "install an OpenCL platform: on Debian/Ubuntu `apt-get install pocl-opencl-icd "
    "ocl-icd-libopencl1` (a CPU device), or `pip install 'pyopencl[pocl]'`; for a GPU or an "
    "FPGA, its vendor's OpenCL runtime (ICD)"
)

# Kernel names per format: the host contract an xclbin must also satisfy.
KERNEL_NAMES = {
    "float32": {"update_words": "hrl_update_words_f32", "sample": "hrl_sample_f32"},
    "fixed": {
        "update_words": "hrl_update_words_fixed",
        "update_priorities": "hrl_update_priorities_fixed",
        "sample": "hrl_sample_fixed",
    },
}

_UPDATE_LOCAL_SIZE = 256  # one work-group per update; enough to hide memory latency on GPUs
_SAMPLE_LOCAL_SIZE = 64

_lock = threading.Lock()
_contexts: dict[int, object] = {}  # device int_ptr -> shared Context
_programs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Context -> {key: Program}


def float32_level_bound(level: int, depth: int, fanout: int) -> float:
    """Relative bound on |word - exact sum of its leaves| for a float32 word at `level`
    (0 = root, `depth` = leaves), any summation order, priorities >= 0 (Higham, recursive
    summation: gamma_{K-1} per level, compounded over the levels below)."""
    u = 2.0**-24
    gamma = (fanout - 1) * u / (1 - (fanout - 1) * u)
    return (1 + gamma) ** (depth - level) - 1


# PoCL's drivers, the in-thread one first (module docstring); read once, when PoCL starts.
POCL_DEVICES_DEFAULT = "basic pthread"


def _import_pyopencl():
    os.environ.setdefault("POCL_DEVICES", POCL_DEVICES_DEFAULT)
    try:
        # pyopencl: optional, loaded only when an OpenCL tree is built
        import pyopencl as cl
    except ImportError as e:
        raise base.BackendUnavailableError(
            f"replay backend 'opencl' needs pyopencl ({e}): `pip install 'hrl[hw]'` or "
            f"`pip install pyopencl`, then {INSTALL_HINT}"
        ) from None
    return cl


def list_devices():
    """Every OpenCL device as (platform, device), or BackendUnavailableError with what to
    install."""
    cl = _import_pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise base.BackendUnavailableError(f"no OpenCL platform found ({e}); {INSTALL_HINT}") \
            from None
    found = []
    for platform in platforms:
        try:
            found += [(platform, device) for device in platform.get_devices()]
        except cl.Error:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
    if not found:
        names = [p.name for p in platforms]
        raise base.BackendUnavailableError(
            f"OpenCL platforms {names} have no devices; {INSTALL_HINT}"
        )
    return found


def _pick_device(device, platform, prefer_accelerator: bool):
    cl = _import_pyopencl()
    found = list_devices()
    if platform is not None:
        found = [(p, d) for p, d in found if str(platform).lower() in p.name.lower()]
        if not found:
            names = sorted({p.name for p, _ in list_devices()})
            raise base.BackendUnavailableError(
                f"no OpenCL platform matches platform={platform!r}; available: {names}"
            )
    if isinstance(device, cl.Device):
        return device
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        if not 0 <= device < len(found):
            raise ValueError(f"device={device} is out of range [0, {len(found)}) "
                             f"(devices: {[d.name for _, d in found]})")
        return found[device][1]
    if isinstance(device, str):
        matches = [d for _, d in found if device.lower() in d.name.lower()]
        if not matches:
            raise base.BackendUnavailableError(
                f"no OpenCL device name contains device={device!r}; "
                f"available: {[d.name for _, d in found]}"
            )
        return matches[0]
    if device is not None:
        raise ValueError(f"device must be None, an index, a name substring or a "
                         f"pyopencl.Device, got {device!r}")
    order = ([cl.device_type.ACCELERATOR, cl.device_type.GPU] if prefer_accelerator
             else [cl.device_type.GPU, cl.device_type.ACCELERATOR])
    for kind in order:
        for _, d in found:
            if d.type & kind:
                return d
    in_thread = [d for _, d in found if d.name.startswith("basic-")]  # PoCL's naming
    return in_thread[0] if in_thread else found[0][1]


def _shared_context(device):
    cl = _import_pyopencl()
    with _lock:
        ctx = _contexts.get(device.int_ptr)
        if ctx is None:
            ctx = _contexts[device.int_ptr] = cl.Context([device])
        return ctx


def kernel_source() -> str:
    """The OpenCL C source of every kernel (package data)."""
    path = resources.files("hrl.replay.backends").joinpath("kernels/sumtree.cl")
    return path.read_text(encoding="utf-8")


def _program(ctx, device, xclbin: str | None):
    """The built program for (context, source or binary), compiled at most once."""
    cl = _import_pyopencl()
    if xclbin is None:
        key = ("source", kernel_source())
    else:
        path = os.path.abspath(os.fspath(xclbin))
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"xclbin={xclbin!r} is not a file; give the path of an FPGA binary built "
                f"with the vendor tools (Vitis v++) for this device, or leave xclbin unset "
                f"to build the kernels from source"
            )
        stat = os.stat(path)
        key = ("binary", path, stat.st_mtime_ns, stat.st_size)
    with _lock:
        cache = _programs.setdefault(ctx, {})
        if key in cache:
            return cache[key]
    if xclbin is None:
        # -cl-std=CL1.2: every device has it; no fast-math flags (results must round exactly).
        try:
            program = cl.Program(ctx, key[1]).build(options=["-cl-std=CL1.2"],
                                                    devices=[device])
        except cl.Error as e:
            raise base.BackendUnavailableError(
                f"OpenCL device {device.name!r} failed to build the replay kernels "
                f"(hrl/replay/backends/kernels/sumtree.cl, OpenCL C 1.2): {e}"
            ) from None
    else:
        with open(key[1], "rb") as f:
            binary = f.read()
        try:
            program = cl.Program(ctx, [device], [binary]).build(devices=[device])
        except cl.Error as e:
            raise base.BackendUnavailableError(
                f"OpenCL device {device.name!r} rejected xclbin={xclbin!r} ({e}); an xclbin "
                f"runs only on the FPGA platform it was built for (install the board's XRT "
                f"runtime and platform, and pick that device)"
            ) from None
    with _lock:
        return _programs[ctx].setdefault(key, program)


RTL_SIM_DEVICE = "rtl-sim"


def open_opencl_backend(capacity: int, fanout: int = 16,
                        fmt: PriorityFormat | str = "float32", *, device=None, platform=None,
                        xclbin: str | os.PathLike | None = None, local_size: int | None = None,
                        lanes: int | None = None, seed: int | None = None,
                        simulator: str | None = None, bus_model: str | None = None):
    """The `opencl` replay backend on `device`.

    * `device="rtl-sim"`: the RTL kernel `hrl_rmm_kernel` in simulation
      (`rtl_kernel.open_rtl_sim`; options `lanes`, `seed`, `simulator`, `bus_model`);
    * `xclbin=PATH` of a binary holding `hrl_rmm_kernel`: that kernel on the card, through
      pyopencl and the vendor's ICD (`rtl_kernel.RmmKernelBackend`; option `seed`);
    * otherwise the kernels of `kernels/sumtree.cl` (`OpenCLBackend`: device, platform,
      xclbin, local_size).
    """
    rtl_options = {"lanes": lanes, "seed": seed, "simulator": simulator,
                   "bus_model": bus_model}
    if isinstance(device, str) and device == RTL_SIM_DEVICE:
        extra = {k: v for k, v in (("platform", platform), ("xclbin", xclbin),
                                   ("local_size", local_size)) if v is not None}
        if extra:
            raise ValueError(f"option(s) {sorted(extra)} do not apply to device='rtl-sim' "
                             f"(the simulated RTL kernel); its options are "
                             f"{sorted(rtl_options)}")
        given = {k: v for k, v in rtl_options.items() if v is not None}
        return open_rtl_sim(capacity, fanout, fmt, **given)
    if xclbin is not None and os.path.isfile(xclbin):
        if is_rmm_xclbin(xclbin):
            extra = sorted(k for k, v in rtl_options.items() if v is not None and k != "seed")
            if extra or local_size is not None:
                raise ValueError(f"option(s) {extra + (['local_size'] if local_size else [])}"
                                 f" do not apply to an xclbin of hrl_rmm_kernel (its shape is "
                                 f"the binary's); only seed does")
            cl = _import_pyopencl()
            dev = _pick_device(device, platform, prefer_accelerator=True)
            with open(xclbin, "rb") as f:
                binary = f.read()
            return RmmKernelBackend(capacity, fanout, fmt, cl=cl, device=dev, binary=binary,
                                    seed=0 if seed is None else seed)
    given = sorted(k for k, v in rtl_options.items() if v is not None)
    if given:
        raise ValueError(f"option(s) {given} apply only to the RTL kernel (device='rtl-sim' "
                         f"or an xclbin of hrl_rmm_kernel), got device={device!r}")
    return OpenCLBackend(capacity, fanout, fmt, device=device, platform=platform,
                         xclbin=xclbin, local_size=local_size)


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, int(n)).bit_length() - 1)


class OpenCLBackend:
    """The sum tree in one OpenCL buffer on one device.

    Options: `device` (None = first GPU, else accelerator, else any; an index into all
    devices; a substring of the device name; or a `pyopencl.Device`), `platform` (substring of
    the platform name), `xclbin` (path of an FPGA binary to load instead of the source),
    `local_size` (work-group size of the update kernel, a power of two).
    """

    name = "opencl"

    def __init__(self, capacity: int, fanout: int = 16, fmt: PriorityFormat | str = "float32",
                 *, device=None, platform=None, xclbin: str | os.PathLike | None = None,
                 local_size: int | None = None):
        self.fmt, self.depth, sizes = base.tree_geometry(capacity, fanout, fmt)
        self.capacity, self.fanout = int(capacity), int(fanout)
        self._log2_fanout = log2_exact(self.fanout)
        self._fixed = isinstance(self.fmt, FixedPoint)
        self._dtype = base.word_dtype(self.fmt)
        if sum(sizes) >= 2**32:
            raise ValueError(f"capacity={capacity} with fanout={fanout} needs {sum(sizes)} "
                             f"tree words; the kernels address at most 2**32 - 1")
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uint32)
        self._offsets = offsets  # level l at [offsets[l], offsets[l + 1]); D + 2 entries

        cl = self._cl = _import_pyopencl()
        self.device = _pick_device(device, platform, prefer_accelerator=xclbin is not None)
        self.context = _shared_context(self.device)
        self.queue = cl.CommandQueue(self.context, self.device)
        program = _program(self.context, self.device, xclbin)
        names = KERNEL_NAMES["fixed" if self._fixed else "float32"]
        available = set(program.get_info(cl.program_info.KERNEL_NAMES).split(";"))
        missing = sorted(set(names.values()) - available)
        if missing:
            raise base.BackendUnavailableError(
                f"the OpenCL program{' in xclbin=' + repr(xclbin) if xclbin else ''} lacks "
                f"kernels {missing} (has {sorted(available)}); it must be built from "
                f"hrl/replay/backends/kernels/sumtree.cl or match its kernel names and arguments"
            )
        self._kernels = {op: cl.Kernel(program, name) for op, name in names.items()}

        limit = min([self.device.max_work_group_size] + [
            kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device)
            for kernel in self._kernels.values()])
        if local_size is None:
            local_size = min(_UPDATE_LOCAL_SIZE, limit)
        elif (not isinstance(local_size, (int, np.integer)) or local_size < 1
              or local_size & (local_size - 1) or local_size > limit):
            raise ValueError(f"local_size must be a power of two in [1, {limit}] on "
                             f"{self.device.name!r}, got {local_size!r}")
        self.local_size = _pow2_floor(local_size)
        self._sample_local = min(_SAMPLE_LOCAL_SIZE, self.local_size)

        mf = cl.mem_flags
        self._tree_buf = cl.Buffer(self.context, mf.READ_WRITE, int(offsets[-1]) * 4)
        self._offset_buf = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                     hostbuf=offsets)
        self._owner_buf = cl.Buffer(self.context, mf.READ_WRITE, self.capacity * 4)
        cl.enqueue_fill_buffer(self.queue, self._owner_buf, np.int32(-1), 0, self.capacity * 4)
        self._batch_capacity = 0
        self._pending: list = []
        self._root = np.zeros(1, self._dtype)
        # Whether `_root` is the tree's root now: a sample reads it beside its indices, and
        # the buffer asks for the total right after (saves a blocking round trip per sample).
        self._root_current = False
        self.reset()

    # ------------------------------------------------------------------ buffers

    def _batch_buffers(self, n: int):
        """Staging buffers for a batch of n items, grown to a power of two when too small."""
        if n > self._batch_capacity:
            cl = self._cl
            cap = 1 << (n - 1).bit_length()
            mf = cl.mem_flags
            self._idx_buf = cl.Buffer(self.context, mf.READ_ONLY, cap * 4)
            self._val_buf = cl.Buffer(self.context, mf.READ_ONLY, cap * 4)
            self._out_buf = cl.Buffer(self.context, mf.WRITE_ONLY, cap * 4)
            self._batch_capacity = cap

    def _write_inputs(self, *pairs) -> None:
        """Copy host arrays into device buffers without waiting. Each copy's event keeps its
        host array alive and waits for the copy when dropped; holding the latest call's
        events means a call waits at most for the previous call's input copies."""
        self._pending = [self._cl.enqueue_copy(self.queue, buf, host, is_blocking=False)
                         for buf, host in pairs]

    def _launch_update(self, kernel, idx: np.ndarray, values: np.ndarray, *extra) -> None:
        self._root_current = False
        self._batch_buffers(idx.shape[0])
        self._write_inputs((self._idx_buf, idx), (self._val_buf, values))
        kernel.set_args(self._tree_buf, self._offset_buf, self._owner_buf, self._idx_buf,
                        self._val_buf, np.uint32(idx.shape[0]), np.uint32(self.depth),
                        np.uint32(self._log2_fanout), *extra)
        self._cl.enqueue_nd_range_kernel(self.queue, kernel, (self.local_size,),
                                         (self.local_size,))

    # ------------------------------------------------------------------ protocol

    def reset(self) -> None:
        self._root_current = False
        self._cl.enqueue_fill_buffer(self.queue, self._tree_buf, self._dtype.type(0), 0,
                                     int(self._offsets[-1]) * 4)

    def update(self, indices, priorities) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_priorities(priorities, idx.shape[0])
        if not idx.size:
            return
        if self._fixed:
            self._launch_update(self._kernels["update_priorities"], idx, values,
                                np.uint32(self.fmt.leaf_frac_bits),
                                np.uint32(self.fmt.max_word))
        else:
            self._launch_update(self._kernels["update_words"], idx, values)

    def update_words(self, indices, words) -> None:
        idx = base.check_indices(indices, self.capacity)
        values = base.check_words(words, idx.shape[0], self.fmt)
        if idx.size:
            self._launch_update(self._kernels["update_words"], idx, values)

    def sample_from_bits(self, bits, stratified: bool = True) -> np.ndarray:
        cl = self._cl
        bits = base.check_bits(bits)
        n = bits.shape[0]
        self._batch_buffers(n)
        self._write_inputs((self._val_buf, bits))
        kernel = self._kernels["sample"]
        kernel.set_args(self._tree_buf, self._offset_buf, self._val_buf, self._out_buf,
                        np.uint32(n), np.uint32(self.depth), np.uint32(self._log2_fanout),
                        np.uint32(bool(stratified)))
        local = self._sample_local
        cl.enqueue_nd_range_kernel(self.queue, kernel, (-(-n // local) * local,), (local,))
        out = np.empty(n, np.int32)
        root_read = cl.enqueue_copy(self.queue, self._root, self._tree_buf, is_blocking=False)
        cl.enqueue_copy(self.queue, out, self._out_buf, is_blocking=True)  # in order: both done
        del root_read
        self._root_current = True
        base.require_nonempty(self._root[0])
        return out

    def total(self) -> float:
        if not self._root_current:
            self._cl.enqueue_copy(self.queue, self._root, self._tree_buf, is_blocking=True)
            self._root_current = True
        return base.decode_root(self.fmt, self._root[0], self.depth, self.fanout)

    def level_words(self) -> list[np.ndarray]:
        flat = np.empty(int(self._offsets[-1]), self._dtype)
        self._cl.enqueue_copy(self.queue, flat, self._tree_buf, is_blocking=True)
        levels = [flat[:1].copy()]
        for level in range(1, self.depth + 1):
            words = flat[self._offsets[level]:self._offsets[level + 1]]
            levels.append(words.reshape(-1, self.fanout).copy())
        return levels

    def load_level_words(self, levels) -> None:
        levels = base.check_levels(levels, self.capacity, self.fanout, self.fmt)
        flat = np.concatenate([level.reshape(-1) for level in levels])
        self._root_current = False
        self._cl.enqueue_copy(self.queue, self._tree_buf, flat, is_blocking=True)

    def finish(self) -> None:
        """Wait until every operation issued so far has completed on the device."""
        self.queue.finish()
