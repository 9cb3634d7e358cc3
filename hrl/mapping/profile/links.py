"""Link rows: what moving data costs between the places a mapping puts its calls.

`link:host` (a host-memory copy), `link:cpu-device` (a batch from the second XLA CPU device
into a call on the first), `link:gpu` (a batch from the CPU into a call on the GPU),
`link:process` (one way through the pipelined executor's queues),
`link:thread` (a hand-off to a second thread and back) and `link:cpu-collective` (a ring step
of a psum between virtual CPU devices, in a child process that has them). Each probe takes
the `Profiler` it records into and appends one row per size (`link_row`: no primitive, env
or network; `work` is the bytes moved). Cost: `repeats` timed moves per size.
"""

from __future__ import annotations

import multiprocessing

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from hrl.mapping.profile.grids import (
    COLLECTIVE_CALL,
    COLLECTIVE_DEVICES,
    COLLECTIVE_MIN_SCAN,
    COLLECTIVE_SIZES,
    CPU_DEVICE_CALL,
    GPU_CALL,
    HANDOFF_CALL,
)
from hrl.mapping.profile.rows import ProfileRow
from hrl.mapping.profile.spawn import collective_link_subprocess
from hrl.mapping.profile.timers import interleaved_times, median_time, thread_handoff_time
from hrl.runtime.executors import put_for_call


def link_row(call: str, nbytes: int, times: dict, repeats: int) -> ProfileRow:
    """A link row: `times` for moving `nbytes` (no primitive, env or network)."""
    return ProfileRow.from_dict({
        "call": call, "placement": "host", "mode": "host", "env": "", "algo": "",
        "num_envs": 0, "width": 0, "batch": 0, "capacity": 0, "fanout": 0, "depth": 0,
        "work": float(nbytes), **times, "repeats": repeats})


def profile_host_link(prof, repeats: int) -> None:
    """Host memory copy (jax CPU array -> numpy -> new buffer), 1 KiB .. 16 MiB."""
    for nbytes in (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 24):
        x = jnp.ones((nbytes // 4,), jnp.float32)
        t = median_time(lambda x=x: np.array(x, copy=True), repeats)
        prof.rows.append(link_row("link:host", nbytes, t, repeats))


def placed_call(device):
    """What `HostCalls.put` does to a call's arguments placed on `device` (None: unplaced,
    passed as they are)."""
    if device is None:
        return lambda *args: args
    sharding = SingleDeviceSharding(device)
    return lambda *args: put_for_call(args, sharding)


def profile_cpu_device_link(prof, repeats: int) -> None:
    """A batch of transitions from the second CPU device into a call on the first, moved by
    the host loop's own `put_for_call` (each array a view of its host memory, which the
    jitted call copies in or aliases): `batch_move_rows`. Only in a process with two CPU
    devices (`hrl profile` makes them); skipped, with why, otherwise."""
    cpus = jax.devices("cpu")
    if len(cpus) < 2:
        prof.skipped.append(f"{CPU_DEVICE_CALL}: this process has one CPU device")
        return
    batch_move_rows(prof, CPU_DEVICE_CALL, source=cpus[1], target=cpus[0], repeats=repeats)


def profile_gpu_link(prof, repeats: int) -> None:
    """A batch of transitions from the CPU device into a call on the GPU, moved by the host
    loop's own `put_for_call` (one `device_put` of the batch's arrays): `batch_move_rows`.
    What the mixed mappings pay each time an array crosses between the CPU's primitives and
    the GPU's. Skipped, with why, where JAX sees no GPU."""
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        prof.skipped.append(f"{GPU_CALL}: JAX sees no GPU")
        return
    batch_move_rows(prof, GPU_CALL, source=jax.devices("cpu")[0], target=gpu, repeats=repeats)


def batch_move_rows(prof, call_name: str, source, target, repeats: int) -> None:
    """Rows `call_name` of moving a batch of transitions (and its IS weights) from device
    `source` into a jitted call on `target`, as the host loop moves it (`put_for_call`): the
    call with the batch on `source` minus the same call with it on `target` already,
    interleaved, at batch sizes 32 .. 16384 (the differences floored at 0)."""
    call = jax.jit(lambda anchor, *xs: anchor + sum(x.reshape(-1)[0].astype(jnp.float32)
                                                    for x in xs))
    anchor = jax.device_put(jnp.zeros((), jnp.float32), target)
    to_target = placed_call(target)
    for batch in (32, 256, 2048, 16384):
        leaves = [np.zeros((batch, *v.shape), v.dtype) for v in prof.target.example.values()]
        leaves.append(np.ones((batch,), np.float32))  # the IS weights
        there = jax.device_put(leaves, source)
        here = jax.device_put(leaves, target)
        t, saved = interleaved_times(
            {"cross": lambda there=there: call(*to_target(anchor, *there)),
             "local": lambda here=here: call(*to_target(anchor, *here))},
            repeats, paired=("cross", "local"))
        prof.rows.append(link_row(call_name, sum(x.nbytes for x in leaves), {
            "latency_s": max(saved["latency_s"], 0.0), "cpu_s": max(saved["cpu_s"], 0.0),
            "p10_s": max(t["cross"]["p10_s"] - t["local"]["p10_s"], 0.0),
            "p90_s": max(t["cross"]["p90_s"] - t["local"]["p90_s"], 0.0)}, repeats))


def _echo(inbox, outbox) -> None:
    """The far end of `profile_process_link`: send every message back until None."""
    while (item := inbox.get()) is not None:
        outbox.put(item)


def profile_process_link(prof, repeats: int) -> None:
    """One way between two processes through the multiprocessing queues the pipelined
    executor's process actors use (pickle, pipe, unpickle), 1 KiB .. 4 MiB of numpy: half
    a round trip to a spawned echo process."""
    ctx = multiprocessing.get_context("spawn")
    there, back = ctx.Queue(), ctx.Queue()
    echo = ctx.Process(target=_echo, args=(there, back), daemon=True)
    echo.start()
    try:
        for nbytes in (1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22):
            x = np.ones((nbytes // 4,), np.float32)

            def round_trip(x=x):
                there.put(x)
                return back.get(timeout=60)

            round_trip()  # the echo process starts (imports numpy) on the first message
            t = median_time(round_trip, repeats)
            prof.rows.append(link_row("link:process", nbytes, {k: v / 2 for k, v in t.items()},
                                      repeats))
    finally:
        there.put(None)
        echo.join(timeout=10)


def profile_thread_handoff(prof, repeats: int) -> None:
    """A hand-off to a second thread and back (`link:thread`): what the relaxed dependency
    pays per SGD step to run update and sample beside train
    (`SequentialLoop._overlapped_round`, a ThreadPoolExecutor of one thread).
    `timers.thread_handoff_time`."""
    prof.rows.append(link_row(HANDOFF_CALL, 0, thread_handoff_time(repeats), repeats))


def profile_collective_link(prof, repeats: int, scan: int) -> None:
    """A ring step of a collective between virtual CPU devices (`link:cpu-collective`):
    `collective_timings` in a child started with two virtual CPU devices (JAX reads
    XLA_FLAGS when it starts, so this process cannot grow its own). At least
    COLLECTIVE_MIN_SCAN steps per timed call and 5 repeats whatever the grid: the row is
    a difference of two timings, which a short scan would leave in the noise, and the
    child's start, not the steps, is most of its cost. Skipped, with why, when it fails."""
    repeats, scan = max(repeats, 5), max(scan, COLLECTIVE_MIN_SCAN)
    try:
        for nbytes, t in collective_link_subprocess(repeats, scan):
            prof.rows.append(link_row(COLLECTIVE_CALL, nbytes, t, repeats))
    except RuntimeError as err:
        prof.skipped.append(f"{COLLECTIVE_CALL}: {err}")


def collective_timings(sizes=COLLECTIVE_SIZES, repeats: int = 5,
                       scan: int = 100) -> list[tuple[int, dict]]:
    """Per ring step of an all-reduce between the first two CPU devices of this process.

    For each size n (bytes of float32), a jitted `shard_map` runs `scan` steps of
    `x = psum(x) * 0.5` inside one lax.scan (dispatch amortised; every step depends on the
    last, so none is hoisted), and the same scan without the psum; the difference per step is
    one all-reduce of n bytes. A ring all-reduce over D devices is 2 (D - 1) messages of n / D
    bytes (the model of `hrl.mapping.scaling`), so on two devices it is two messages of n / 2:
    the rows returned are (n / 2, half the all-reduce's time), the time of one ring step, and
    a fit of latency + bytes / bandwidth over them prices a message of the data-parallel
    loop's collectives, the meeting of the devices' threads (the rendezvous) included.
    Needs two CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=2 before JAX
    starts), else RuntimeError; `spawn.collective_link_subprocess` starts a process that has
    them."""
    cpus = jax.devices("cpu")
    if len(cpus) < COLLECTIVE_DEVICES:
        raise RuntimeError(f"collective_timings needs {COLLECTIVE_DEVICES} CPU devices, this "
                           f"process has {len(cpus)}")
    mesh = Mesh(np.array(cpus[:COLLECTIVE_DEVICES]), ("d",))

    def program(reduce: bool):
        def body(x):
            def step(c, _):
                return (jax.lax.psum(c, "d") if reduce else c + c) * 0.5, None
            return jax.lax.scan(step, x, None, length=scan)[0]
        # check_vma=False: psum's result is replicated while the carry is per device.
        return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"),
                                     check_vma=False))

    with_psum, without = program(True), program(False)
    out = []
    for nbytes in sizes:
        words = max(1, nbytes // 4)
        x = jax.device_put(jnp.ones((COLLECTIVE_DEVICES * words,), jnp.float32),
                           jax.sharding.NamedSharding(mesh, P("d")))
        t = median_time(lambda x=x: with_psum(x), repeats)
        base = median_time(lambda x=x: without(x), repeats)
        # Two ring steps per psum on two devices; the step's own compute (the base scan's
        # median wall, or CPU, time) taken out of every figure.
        step = {k: max(v - base["cpu_s" if k == "cpu_s" else "latency_s"], 0.0) / (2 * scan)
                for k, v in t.items()}
        out.append((words * 4 // 2, step))
    return out
