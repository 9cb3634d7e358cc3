"""The simulator side of the `rtl` replay backend: a cocotb "test" that serves kernel runs.

Started by `hrl.replay.backends.rtl.RTLBackend` through the cocotb runner (as the test
module of a `hrl_rmm_kernel` simulation). It connects back to the backend over the
authenticated local socket named in HRL_RTL_ADDRESS / HRL_RTL_AUTHKEY, resets the kernel,
then executes each request as an XRT host would (`_rtl_cocotb.KernelDriver.run`: buffers
into device memory, arguments over AXI4-Lite, ap_start, poll ap_done, results read back)
and answers with what the kernel wrote. Simulated time advances only inside a run; while
it waits for the next request the simulator is paused.

Requests are tuples: ("run", command, count, kwargs) -> ("ok", RunResult fields as a dict);
("config",) -> ("ok", {"K", "D", "P", "W"}); ("quit",) ends the simulation. A failed
request answers ("error", traceback text) and the server keeps serving.
"""

from __future__ import annotations

import os
import traceback
from multiprocessing.connection import Client

import cocotb

from hrl.replay.backends._rtl_cocotb import DirectKernelDriver, KernelDriver


@cocotb.test()
async def serve(dut):
    address = os.environ["HRL_RTL_ADDRESS"]
    authkey = bytes.fromhex(os.environ["HRL_RTL_AUTHKEY"])
    mem_size = int(os.environ.get("HRL_RTL_MEM", str(1 << 24)))
    max_count = int(os.environ.get("HRL_RTL_MAX_RUN", str(1 << 16)))
    if os.environ.get("HRL_RTL_BUS", "verilog") == "verilog":
        # hrl_rmm_kernel_sim: the memory is a Verilog model, no Python runs per cycle.
        drv = DirectKernelDriver(dut, max_count=max_count)
    else:
        # the bare kernel with cocotbext-axi bus models (as in the testbench; slower)
        drv = KernelDriver(dut, mem_size=mem_size, base=0x1_0000_0000, max_count=max_count,
                           cache_args=True)
    config = await drv.reset()
    conn = Client(address, family="AF_UNIX", authkey=authkey)
    conn.send(("ready", config))
    try:
        while True:
            try:
                request = conn.recv()
            except EOFError:  # the backend went away: end the simulation
                return
            if request[0] == "quit":
                conn.send(("ok", None))
                return
            try:
                if request[0] == "config":
                    reply = config
                elif request[0] == "run":
                    _, command, count, kwargs = request
                    res = await drv.run(command, count, poll_every=8, **kwargs)
                    reply = {"words": res.words, "cycles": res.cycles, "root": res.root,
                             "host_cycles": res.host_cycles, "sim_cycle": drv.cycle}
                else:
                    raise ValueError(f"unknown request {request[0]!r}")
                conn.send(("ok", reply))
            except Exception:  # noqa: BLE001 - report to the backend, keep serving
                conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()
