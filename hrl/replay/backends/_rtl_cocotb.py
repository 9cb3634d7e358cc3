"""Host driver of the RTL kernel `hrl_rmm_kernel` inside a cocotb simulation.

Drives the kernel exactly as an XRT host does: buffers are placed in device memory (an
AxiRam model of the card's DDR; writing it directly is the equivalent of `xrt::bo::sync`),
the arguments are written through the AXI4-Lite control port (AxiLiteMaster), ap_start is
set, the control register is polled until ap_done, and results are read back from memory.
Used by the kernel testbench (`sim/hrl_rmm_kernel/test_hrl_rmm_kernel.py`) and, through the device
primitives `write_mem`, `read_mem`, `write_dword`, `read_dword` and `launch`, by the
simulator process of the `rtl-sim` OpenCL device (`hrl/replay/backends/_rtl_server.py`).
Imported only inside a simulator.

The register map is documented in `fpga_rtl/rtl/hrl_rmm_kernel.v` and fpga_rtl/README.md.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

UINT32_MAX = (1 << 32) - 1

# Register offsets (bytes) of s_axi_control.
REG = {
    "control": 0x00, "gie": 0x04, "ier": 0x08, "isr": 0x0C,
    "command": 0x10, "count": 0x18, "level": 0x20, "row": 0x28, "seed": 0x30,
    "indices": 0x38, "words": 0x40, "randoms": 0x48, "results": 0x50,
    "cycles": 0x60, "root": 0x64, "config": 0x68,
}
CMD = {"update": 0, "sample": 1, "sample_lfsr": 2, "sample_lfsr_iid": 3, "read_tree": 4,
       "clear": 5}
AP_START, AP_DONE, AP_IDLE, AP_READY = 1, 2, 4, 8
CLOCK_NS = 5  # 200 MHz, the clock assumed in fpga_rtl/README.md


@dataclasses.dataclass
class RunResult:
    """One kernel run: `words` read back from the results buffer (uint32), the kernel's
    own cycle count (register 0x60), the root word (0x64) and the cycles the host saw
    from the ap_start write to the ap_done read (including AXI-Lite traffic)."""

    words: np.ndarray
    cycles: int
    root: int
    host_cycles: int


class KernelDriver:
    """Clock, bus models and an XRT-like `run` for one `hrl_rmm_kernel` instance.

    `mem_size`: bytes of the device-memory model. `base`: device address of the buffer
    area; only its low bits address the model (it wraps at mem_size), so a base above
    2**32 exercises the 64-bit address registers. `misalign`: byte offset of each buffer
    from a 4 KiB boundary (so bursts must be split there)."""

    def __init__(self, dut, mem_size: int = 1 << 24, base: int = 0x4_0000_0000,
                 misalign: int = 0, start_clock: bool = True):
        # cocotb: importable only inside a running simulation (this code runs there)
        import cocotb
        from cocotb.clock import Clock
        from cocotbext.axi import (
            AxiBus,
            AxiLiteBus,
            AxiLiteMaster,
            AxiRam,
            AxiRamRead,
            AxiReadBus,
        )

        self.dut = dut
        if start_clock:
            cocotb.start_soon(Clock(dut.ap_clk, CLOCK_NS, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.ap_clk,
                                  dut.ap_rst_n, reset_active_level=False)
        # The card's memory, seen through the kernel's two masters: gmem0 (indices in,
        # results out) and gmem1 (words / randoms in, read only), one array.
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_gmem0"), dut.ap_clk, dut.ap_rst_n,
                          reset_active_level=False, size=mem_size)
        self.ram1 = AxiRamRead(AxiReadBus.from_prefix(dut, "m_axi_gmem1"), dut.ap_clk,
                               dut.ap_rst_n, reset_active_level=False, size=mem_size,
                               mem=self.ram.mem)
        # Per-transaction INFO logs of the bus models would dominate the run time.
        self.axil.write_if.log.setLevel(logging.WARNING)
        self.axil.read_if.log.setLevel(logging.WARNING)
        self.ram.write_if.log.setLevel(logging.WARNING)
        self.ram.read_if.log.setLevel(logging.WARNING)
        self.ram1.log.setLevel(logging.WARNING)
        dut.ap_rst_n.value = 0
        self.mem_size, self.base, self.misalign = mem_size, base, misalign
        self.config = None

    @property
    def cycle(self) -> int:
        """Clock cycles since time 0 (from the simulator's time, no per-cycle coroutine)."""
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.utils import get_sim_time

        return int(get_sim_time("ns")) // CLOCK_NS

    def set_backpressure(self, generator_factory) -> None:
        """Pause every AXI4 channel of the memory model with generators from the factory
        (None: no pauses)."""
        chans = [self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                 self.ram.write_if.b_channel, self.ram.read_if.ar_channel,
                 self.ram.read_if.r_channel, self.ram1.ar_channel, self.ram1.r_channel]
        for ch in chans:
            ch.set_pause_generator(generator_factory() if generator_factory else None)

    async def reset(self) -> dict:
        """Pulse ap_rst_n; returns the kernel's parameters from the config register."""
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import RisingEdge

        self.dut.ap_rst_n.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.ap_clk)
        self.dut.ap_rst_n.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.ap_clk)
        self.config = decode_config(await self.read_reg("config"))
        return self.config

    async def read_reg(self, name: str) -> int:
        return await self.axil.read_dword(REG[name])

    # Device primitives (the same as DirectKernelDriver's), for the `rtl-sim` OpenCL device.

    async def cycles(self, n: int) -> None:
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import Timer

        await Timer(CLOCK_NS * max(1, n), unit="ns")

    async def write_dword(self, offset: int, value: int) -> None:
        await self.axil.write_dword(offset, value & UINT32_MAX)

    async def read_dword(self, offset: int) -> int:
        return await self.axil.read_dword(offset)

    def write_mem(self, address: int, words) -> None:
        arr = np.asarray(words, np.uint32).reshape(-1)
        self.ram.write(address % self.mem_size, arr.astype("<u4").tobytes())

    def read_mem(self, address: int, count: int) -> np.ndarray:
        raw = self.ram.read(address % self.mem_size, 4 * count)
        return np.frombuffer(raw, "<u4").astype(np.uint32)

    async def write_reg(self, name: str, value: int) -> None:
        await self._write(REG[name], value & UINT32_MAX)

    async def write_addr(self, name: str, address: int) -> None:
        await self._write(REG[name], address & UINT32_MAX)
        await self._write(REG[name] + 4, address >> 32 & UINT32_MAX)

    async def _write(self, offset: int, value: int) -> None:
        await self.axil.write_dword(offset, value)

    def _layout(self, count: int, result_words: int) -> dict[str, int]:
        """Device addresses of the four buffers for one run (4 KiB apart + misalign)."""
        page = 4096
        n = max(1, count) * 4
        off = self.misalign
        out = {}
        for name, size in (("indices", n), ("words", n), ("randoms", n),
                           ("results", max(4, result_words * 4))):
            out[name] = self.base + off
            off += -(-size // page) * page + page  # next page boundary, then one gap page
        end = (off + page) & ~(page - 1)
        if end > self.mem_size:
            raise ValueError(f"run needs {end} bytes of device memory, model has "
                             f"mem_size={self.mem_size}")
        return out

    async def run(self, command: str, count: int, *, indices=None, words=None, randoms=None,
                  level: int = 0, row: int = 0, seed: int = 0,
                  poll_every: int = 0) -> RunResult:
        """One kernel run, as a host runtime does it. Returns what the kernel wrote."""
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import Timer

        if command not in CMD:
            raise ValueError(f"unknown kernel command {command!r}; choose from {sorted(CMD)}")
        k = self.config["K"]
        result_words = {"read_tree": count * k}.get(command,
                                                    2 * count if "sample" in command else 0)
        addr = self._layout(count, result_words)
        for name, data in (("indices", indices), ("words", words), ("randoms", randoms)):
            if data is not None:
                arr = np.asarray(data, np.uint32)
                if arr.shape != (count,):
                    raise ValueError(f"{name} must have shape ({count},), got {arr.shape}")
                self.ram.write(addr[name] % self.mem_size, arr.astype("<u4").tobytes())
        await self.write_reg("command", CMD[command])
        await self.write_reg("count", count)
        await self.write_reg("level", level)
        await self.write_reg("row", row)
        await self.write_reg("seed", seed)
        for name in ("indices", "words", "randoms", "results"):
            await self.write_addr(name, addr[name])
        start = self.cycle
        await self.axil.write_dword(REG["control"], AP_START)
        if poll_every:  # a run takes at least a cycle per item: no point polling sooner
            await Timer(CLOCK_NS * max(1, count), unit="ns")
        while True:
            status = await self.read_reg("control")
            if status & AP_DONE:
                break
            if poll_every:
                await Timer(CLOCK_NS * poll_every, unit="ns")
        host_cycles = self.cycle - start
        if not status & AP_IDLE:
            raise AssertionError(f"ap_done without ap_idle: control=0x{status:x}")
        cycles = await self.read_reg("cycles")
        root = await self.read_reg("root")
        raw = self.ram.read(addr["results"] % self.mem_size, result_words * 4)
        out = np.frombuffer(raw, "<u4").astype(np.uint32)
        return RunResult(words=out, cycles=cycles, root=root, host_cycles=host_cycles)

    # Convenience wrappers with the result layouts unpacked.

    async def update(self, indices, words) -> RunResult:
        idx = np.asarray(indices, np.uint32)
        return await self.run("update", idx.shape[0], indices=idx, words=words)

    async def sample(self, command: str, count: int, randoms=None):
        """(leaf indices, random words used, RunResult) for a SAMPLE* command."""
        res = await self.run(command, count, randoms=randoms)
        pairs = res.words.reshape(count, 2)
        return pairs[:, 0].copy(), pairs[:, 1].copy(), res

    async def read_level(self, level: int, rows: int) -> np.ndarray:
        """`rows` rows of `level` as a (rows, K) uint32 array (level 0: root in [0, 0])."""
        res = await self.run("read_tree", rows, level=level, row=0)
        return res.words.reshape(rows, self.config["K"])


class DirectKernelDriver:
    """Device primitives for the simulation top `hrl_rmm_kernel_sim` (kernel + Verilog
    memory model `sim/hdl/hrl_sim_axi_ram.v`), without per-cycle Python: the AXI4-Lite
    transfers are driven on the signals directly (a few cycles each) and the memory array is
    written and read through the simulator (the equivalent of the DMA behind
    `clEnqueueWriteBuffer`), so the simulator runs at its own speed while the kernel works.
    Used by the `rtl-sim` OpenCL device (`_rtl_server.py`)."""

    def __init__(self, dut, read_config=None):
        # cocotb: importable only inside a running simulation (this code runs there)
        import cocotb
        from cocotb.clock import Clock

        self.dut = dut
        # `read_config(read_dword)`: the kernel's parameters from its registers (another
        # kernel on the same memory model: the learner's, `_rtl_server`); default the RMM's.
        self._read_config = read_config
        self.mem = dut.ram_inst.mem
        self.mem_size = 4 * len(self.mem)
        cocotb.start_soon(Clock(dut.ap_clk, CLOCK_NS, unit="ns").start())
        dut.ap_rst_n.value = 0
        for name, value in (("awvalid", 0), ("wvalid", 0), ("arvalid", 0), ("bready", 1),
                            ("rready", 1), ("wstrb", 0xF), ("awaddr", 0), ("araddr", 0),
                            ("wdata", 0)):
            getattr(dut, f"s_axi_control_{name}").value = value
        self.config = None

    @property
    def cycle(self) -> int:
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.utils import get_sim_time

        return int(get_sim_time("ns")) // CLOCK_NS

    async def cycles(self, n: int) -> None:
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import Timer

        await Timer(CLOCK_NS * max(1, n), unit="ns")

    async def _edge(self) -> None:
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import RisingEdge

        await RisingEdge(self.dut.ap_clk)

    async def write_dword(self, offset: int, value: int) -> None:
        d = self.dut
        d.s_axi_control_awaddr.value = offset
        d.s_axi_control_wdata.value = value & UINT32_MAX
        d.s_axi_control_awvalid.value = 1
        d.s_axi_control_wvalid.value = 1
        aw = w = False
        while not (aw and w):
            await self._edge()  # values read here are those the edge sampled
            if not aw and int(d.s_axi_control_awready.value):
                aw = True
                d.s_axi_control_awvalid.value = 0
            if not w and int(d.s_axi_control_wready.value):
                w = True
                d.s_axi_control_wvalid.value = 0
        while True:  # bready is always high: the response is taken on its first edge
            await self._edge()
            if int(d.s_axi_control_bvalid.value):
                return

    async def read_dword(self, offset: int) -> int:
        d = self.dut
        d.s_axi_control_araddr.value = offset
        d.s_axi_control_arvalid.value = 1
        while True:
            await self._edge()
            if int(d.s_axi_control_arready.value):
                d.s_axi_control_arvalid.value = 0
                break
        while True:  # rready is always high
            await self._edge()
            if int(d.s_axi_control_rvalid.value):
                return d.s_axi_control_rdata.value.to_unsigned()

    async def reset(self) -> dict:
        self.dut.ap_rst_n.value = 0
        await self.cycles(4)
        self.dut.ap_rst_n.value = 1
        await self.cycles(2)
        await self._edge()
        if self._read_config is not None:
            self.config = await self._read_config(self.read_dword)
        else:
            self.config = decode_config(await self.read_dword(REG["config"]))
        return self.config

    def _word(self, address: int, count: int) -> int:
        first = (address // 4) % len(self.mem)
        if address % 4 or first + count > len(self.mem):
            raise ValueError(f"device memory access of {count} words at 0x{address:x} is "
                             f"unaligned or past the model's {self.mem_size} bytes")
        return first

    def write_mem(self, address: int, words) -> None:
        arr = np.asarray(words, np.uint32).reshape(-1)
        first = self._word(address, arr.size)
        for i, v in enumerate(arr.tolist()):
            self.mem[first + i].value = v

    def read_mem(self, address: int, count: int) -> np.ndarray:
        first = self._word(address, count)
        return np.array([self.mem[first + i].value.to_unsigned() for i in range(count)],
                        np.uint32)


def decode_config(cfg: int) -> dict[str, int]:
    """The kernel's config register (0x68): K, D, P, W one byte each."""
    return {"K": cfg & 0xFF, "D": cfg >> 8 & 0xFF, "P": cfg >> 16 & 0xFF, "W": cfg >> 24 & 0xFF}


async def launch(drv, writes, items: int, poll_every: int,
                 cycles_offset: int = REG["cycles"]) -> dict:
    """One kernel launch as XRT performs it for an ap_ctrl_hs kernel: every argument
    register written (`writes`: (offset, value) pairs, as the runtime derives them from the
    kernel's metadata), ap_start set, the control register polled until ap_done. The host
    sleeps `items` cycles first (a run takes at least a cycle per item) and then polls every
    `poll_every` cycles. Returns the simulated times (ns) of the ap_start write and of the
    read that saw ap_done, and the kernel's own cycle count (register `cycles_offset`, the
    RMM's 0x60, which the simulation reads for profiling; a board's OpenCL host cannot)."""
    for offset, value in writes:
        await drv.write_dword(offset, value)
    start = drv.cycle
    await drv.write_dword(REG["control"], AP_START)
    await drv.cycles(items)
    while True:
        status = await drv.read_dword(REG["control"])
        if status & AP_DONE:
            break
        await drv.cycles(poll_every)
    end = drv.cycle
    if not status & AP_IDLE:
        raise AssertionError(f"ap_done without ap_idle: control=0x{status:x}")
    kernel_cycles = await drv.read_dword(cycles_offset)
    return {"start_ns": start * CLOCK_NS, "end_ns": end * CLOCK_NS,
            "kernel_cycles": kernel_cycles}
