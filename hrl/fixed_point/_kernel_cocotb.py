"""Host driver of the FPGA learner's kernel `hrl_learn_kernel` inside a cocotb simulation.

Drives the kernel as an XRT host does, in the form of the replay kernel's driver
(`hrl.replay.backends._rtl_cocotb`): a program (`kernel_program.Program`) laid out in device
memory (an AxiRam model of the card's DDR; writing it directly is `xrt::bo::sync`), its
addresses and counts written through the AXI4-Lite control port (AxiLiteMaster), ap_start
set, the control register polled until ap_done, the stores read back from memory. Used by the
kernel's testbench (`sim/hrl_learn_kernel/`). Imported only inside a simulator.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from hrl.fixed_point.kernel_program import REG, KernelShape, Program, read_store

AP_START, AP_DONE, AP_IDLE, AP_READY = 1, 2, 4, 8
CLOCK_NS = 5  # 200 MHz, as the replay kernel's driver assumes
POLL_EVERY = 8  # cycles between ap_done polls


@dataclasses.dataclass
class RunResult:
    """One kernel run: the stores by name (int32 rows x cols), the kernel's cycles (0x40,
    ap_start seen to ap_done), the engine's (0x44), the saturations (0x48), the status
    bits (0x4c)."""

    outputs: dict
    cycles: int
    engine_cycles: int
    saturations: int
    status: int


class LearnerKernelDriver:
    """Clock, bus models and an XRT-like `run` for one `hrl_learn_kernel` instance.

    `mem_size`: bytes of the device-memory model; `base`: the device address of the program
    area (only its low bits address the model, so a base above 2**32 exercises the 64-bit
    address registers)."""

    def __init__(self, dut, mem_size: int = 1 << 22, base: int = 0x3_0000_0000):
        # cocotb: importable only inside a running simulation (this code runs there)
        import cocotb
        from cocotb.clock import Clock
        from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

        self.dut = dut
        cocotb.start_soon(Clock(dut.ap_clk, CLOCK_NS, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.ap_clk,
                                  dut.ap_rst_n, reset_active_level=False)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_gmem"), dut.ap_clk, dut.ap_rst_n,
                          reset_active_level=False, size=mem_size)
        for log in (self.axil.write_if.log, self.axil.read_if.log, self.ram.write_if.log,
                    self.ram.read_if.log):
            log.setLevel(logging.WARNING)
        dut.ap_rst_n.value = 0
        self.mem_size, self.base = mem_size, base
        self.shape: KernelShape | None = None

    def set_backpressure(self, generator_factory) -> None:
        """Pause every AXI4 channel of the memory model with generators from the factory
        (None: no pauses)."""
        for ch in (self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                   self.ram.write_if.b_channel, self.ram.read_if.ar_channel,
                   self.ram.read_if.r_channel):
            ch.set_pause_generator(generator_factory() if generator_factory else None)

    async def reset(self) -> KernelShape:
        """Pulse ap_rst_n; returns the kernel's parameters from its config registers."""
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import RisingEdge

        self.dut.ap_rst_n.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.ap_clk)
        self.dut.ap_rst_n.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.ap_clk)
        self.shape = KernelShape.from_config(*[await self.read_reg(f"config{i}")
                                               for i in range(4)])
        return self.shape

    async def read_reg(self, name: str) -> int:
        return await self.axil.read_dword(REG[name])

    async def write_reg(self, name: str, value: int) -> None:
        await self.axil.write_dword(REG[name], value & 0xFFFFFFFF)

    def _offset(self, address: int) -> int:
        return address % self.mem_size

    async def run(self, program: Program, arrays: dict, timeout_cycles: int = 10**7,
                  base: int | None = None, keep_ops: bool = False) -> RunResult:
        """Lay the program out at `base` (default the driver's), launch, wait for ap_done,
        read the stores back. keep_ops: run the op table the kernel holds (`Program.image`)."""
        # cocotb: importable only inside a running simulation (this code runs there)
        from cocotb.triggers import Timer

        base = self.base if base is None else base
        words, regs, outs = program.image(arrays, keep_ops)
        self.ram.write(self._offset(base), words.tobytes())
        for name, value in regs.items():
            await self.write_reg(name, value)
        await self.write_reg("prog", base)
        await self.axil.write_dword(REG["prog"] + 4, base >> 32)
        await self.axil.write_dword(REG["control"], AP_START)
        waited = 0
        while True:
            status = await self.axil.read_dword(REG["control"])
            if status & AP_DONE:
                break
            await Timer(CLOCK_NS * POLL_EVERY, unit="ns")
            waited += POLL_EVERY
            if waited > timeout_cycles:
                raise TimeoutError(f"hrl_learn_kernel: no ap_done after {waited} cycles")
        outputs = {}
        for name, (offset, rows, cols) in outs.items():
            raw = self.ram.read(self._offset(base + offset), 4 * rows * cols)
            outputs[name] = read_store(np.frombuffer(raw, np.uint32)).reshape(rows, cols)
        return RunResult(outputs, await self.read_reg("cycles"),
                         await self.read_reg("engine_cycles"), await self.read_reg("sat"),
                         await self.read_reg("status"))
