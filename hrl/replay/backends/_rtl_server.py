"""The simulator side of the `rtl-sim` OpenCL device: a cocotb "test" that serves device
operations on the simulated kernel.

Started by `hrl.replay.backends.rtl_sim` (when a program is built for the device) through
the cocotb runner, as the test module of a `hrl_rmm_kernel_sim` (bus model 'verilog') or
`hrl_rmm_kernel` (bus model 'cocotbext') simulation, or of the learner's
`hrl_learn_kernel_sim` (HRL_RTL_KERNEL=hrl_learn_kernel; 'verilog' only). It connects back
over the authenticated local socket named in HRL_RTL_ADDRESS / HRL_RTL_AUTHKEY, resets the
kernel, sends ("ready", config) and then executes what the device layer's command queue flushes:

    ("batch", [op, ...]) -> ("ok", [reply, ...]) where op is one of
        ("write_mem", address, uint32 array)          -> None  (clEnqueueWriteBuffer)
        ("read_mem", address, words)                  -> uint32 array (clEnqueueReadBuffer)
        ("launch", [(offset, value), ...], items)     -> {"start_ns", "end_ns",
                                                          "kernel_cycles"}
    ("quit",) ends the simulation.

A failed batch answers ("error", traceback text) and the server keeps serving. Simulated
time advances only inside a launch; between batches the simulator is paused.
"""

from __future__ import annotations

import os
import traceback
from multiprocessing.connection import Client

import cocotb

from hrl.fixed_point.kernel_program import REG as LEARNER_REG
from hrl.fixed_point.kernel_program import read_params
from hrl.replay.backends._rtl_cocotb import REG, DirectKernelDriver, KernelDriver, launch

POLL_EVERY = 8  # cycles between ap_done polls once the run's minimum time has passed


async def _execute(drv, op, cycles_offset: int):
    kind = op[0]
    if kind == "write_mem":
        drv.write_mem(op[1], op[2])
        return None
    if kind == "read_mem":
        return drv.read_mem(op[1], op[2])
    if kind == "launch":
        return await launch(drv, op[1], op[2], POLL_EVERY, cycles_offset)
    raise ValueError(f"unknown device operation {kind!r}")


@cocotb.test()
async def serve(dut):
    address = os.environ["HRL_RTL_ADDRESS"]
    authkey = bytes.fromhex(os.environ["HRL_RTL_AUTHKEY"])
    learner = os.environ.get("HRL_RTL_KERNEL", "hrl_rmm_kernel") == "hrl_learn_kernel"
    cycles_offset = LEARNER_REG["cycles"] if learner else REG["cycles"]
    if learner:
        # hrl_learn_kernel_sim: the learner's kernel on the same Verilog memory model.
        if os.environ.get("HRL_RTL_BUS", "verilog") != "verilog":
            raise ValueError("the learner's kernel runs on the 'verilog' memory model only")
        drv = DirectKernelDriver(dut, read_config=read_params)
    elif os.environ.get("HRL_RTL_BUS", "verilog") == "verilog":
        # hrl_rmm_kernel_sim: the memory is a Verilog model, no Python runs per cycle.
        drv = DirectKernelDriver(dut)
    else:
        # the bare kernel with cocotbext-axi bus models (as in the testbench; slower)
        drv = KernelDriver(dut, mem_size=int(os.environ["HRL_RTL_MEM"]))
    config = await drv.reset()
    conn = Client(address, family="AF_UNIX", authkey=authkey)
    conn.send(("ready", {**config, "mem_size": drv.mem_size}))
    try:
        while True:
            try:
                request = conn.recv()
            except EOFError:  # the device layer went away: end the simulation
                return
            if request[0] == "quit":
                conn.send(("ok", None))
                return
            try:
                if request[0] != "batch":
                    raise ValueError(f"unknown request {request[0]!r}")
                replies = [await _execute(drv, op, cycles_offset) for op in request[1]]
                conn.send(("ok", replies))
            except Exception:  # noqa: BLE001 - report to the device layer, keep serving
                conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()
