"""How JAX's CPU backend runs a training process: its dispatch and its intra-op threads.

Both are fixed when the backend starts, once per process, so `start_cpu_backend(cfg)` must be
the first use of JAX in the process (`hrl.runtime.build_run.build` calls it first); later it changes
nothing. Neither changes what a run computes beyond float rounding (sync and async give the
same bits; a different thread count may split a matrix product differently).

Why the thread count: on a machine of at most 2 cores, XLA:CPU splitting a program over two
threads competes with the process's own Python thread (the host loops' dispatch, a host env,
the pipelined executor's other side) for the same two cores. At small sizes the split costs
more than it gains; at larger ones (a 256-wide MLP, a conv net) a process with two threads
runs in one of two modes, fixed for its life: as fast as one thread, or many times slower, each
kernel waiting on a thread the scheduler has not run. Which mode a process lands in is chance,
so `auto` gives every single-device MLP run one thread there: the fused loop, the host loops
and the pipelined executor's actors' process alike. A conv net keeps XLA's default: its collapse
came from the optimizer's flat parameter vector and the convolution's lowering
(`hrl.agents.networks.SlicedConv`, `flatten_small`), both gone, and on MinAtar two threads now
run faster than one (experiments/results/peers/minatar/summary.md).
`experiments/bench/bench_cpu_threads.py` measures both (results in
experiments/results/cpu_threads/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from typing import Any

import jax
from jax._src import xla_bridge  # the one way to ask whether the backends have started

from hrl.config import RunConfig
from hrl.runtime.executor_choice import runs_host_loop

# The dispatch `auto` gives a host loop on one device, per dependency mode; the mapping model
# prices each mode's bookkeeping with the profile's rows in the same dispatch. Relaxed runs
# sync too: what overlaps there is the replay thread (`SequentialLoop._overlapped_round`), not
# async dispatch (experiments/bench/bench_relaxed.py and experiments/mapping/validate_mapping.py
# measure both).
HOST_LOOP_DISPATCH = {"strict": "sync", "relaxed": "sync"}


def cpu_dispatch_of(cfg: RunConfig) -> str:
    """`train.cpu_dispatch` resolved: "sync" or "async" (see the key's comment)."""
    t = cfg.train
    if t.cpu_dispatch != "auto":
        return t.cpu_dispatch
    one_device = t.devices == 1
    return HOST_LOOP_DISPATCH[t.dependency] if runs_host_loop(cfg) and one_device else "async"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cpu_threads_of(cfg: RunConfig) -> int | None:
    """`train.cpu_threads` resolved: XLA:CPU's intra-op threads, or None for XLA's default
    (one per usable core). A number above the usable cores is capped to them, with a
    one-line warning. `auto` is 1 for a single-device MLP run on a machine of at most 2
    cores (module docstring: two threads there are a lottery between full speed and a
    collapse). Elsewhere it keeps the default: conv nets, which two threads speed up there;
    larger machines; and the data-parallel loop over virtual devices, not measured."""
    n = cfg.train.cpu_threads
    if n != "auto":
        cores = usable_cores()
        if n > cores:
            # Capped, not refused: a config written on a larger machine still runs here.
            # More intra-op threads than cores only adds threads waiting for a core.
            warnings.warn(f"train.cpu_threads={n} is more than this machine's {cores} usable "
                          f"cores: running with {cores}", stacklevel=2)
            return cores
        return n
    conv = getattr(cfg.agent, "network", "mlp") in ("conv", "minatar")
    return 1 if cfg.train.devices == 1 and usable_cores() <= 2 and not conv else None


def cpu_devices_of(cfg: RunConfig) -> int:
    """The XLA CPU devices the config's placement names: one more than its highest `cpu:N`
    (1 when it names none)."""
    indices = [int(where.partition(":")[2] or 0) for where in cfg.placement.values()
               if where.startswith("cpu")]
    return max(indices, default=0) + 1


DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def with_cpu_device_count(flags: str, count: int) -> str:
    """XLA_FLAGS text `flags` asking for `count` virtual CPU devices: a count already there is
    replaced, every other flag kept."""
    kept = [f for f in flags.split() if not f.startswith(DEVICE_COUNT_FLAG)]
    return " ".join([*kept, f"{DEVICE_COUNT_FLAG}={count}"])


def ensure_cpu_devices(count: int, env: dict | None = None) -> None:
    """Ask XLA for `count` virtual CPU devices in `env` (default: this process's environment),
    unless its XLA_FLAGS already says how many or `count` is 1. In this process it only works
    before JAX starts its backends (`start_cpu_backend`, or a CLI before it); GPUs are not
    affected."""
    env = os.environ if env is None else env
    flags = env.get("XLA_FLAGS", "")
    if count > 1 and DEVICE_COUNT_FLAG not in flags:
        env["XLA_FLAGS"] = with_cpu_device_count(flags, count)


def running_cpu_dispatch() -> str:
    """The CPU dispatch this process's JAX runs in, "sync" or "async" (what
    `start_cpu_backend` set, or JAX's default)."""
    return "async" if jax.config.read("jax_cpu_enable_async_dispatch") else "sync"


def start_cpu_backend(cfg: RunConfig, dispatch: str | None = None,
                      min_cpu_devices: int = 1) -> bool:
    """Start JAX's backends with the config's CPU dispatch (or `dispatch`, "sync" or "async"),
    intra-op threads and the CPU devices its placement names (`placement.sample: cpu:1` makes
    two; at least `min_cpu_devices`), unless they have started already: then nothing changes,
    this process's environment included (a device count written there now would reach only
    its child processes). True if the settings were applied. XLA gives each CPU device a
    thread at least, so with D devices the intra-op threads are max(D, train.cpu_threads)."""
    if xla_bridge.backends_are_initialized():
        return False
    dispatch = dispatch or cpu_dispatch_of(cfg)
    if dispatch not in ("sync", "async"):
        raise ValueError(f"dispatch must be 'sync' or 'async', got {dispatch!r}")
    ensure_cpu_devices(max(cpu_devices_of(cfg), min_cpu_devices))
    jax.config.update("jax_cpu_enable_async_dispatch", dispatch == "async")
    threads = cpu_threads_of(cfg)
    if threads is not None:
        _start_with_threads(threads)
    return True


# XLA:CPU reads this variable once, when its client starts, to size the intra-op pool
# (`DefaultThreadPoolSize` in XLA's CPU client; without it, one thread per core of the
# affinity mask).
POOL_SIZE_VARIABLE = "NPROC"


def _start_with_threads(threads: int) -> None:
    """Start the backend with an intra-op pool of `threads` threads (at least one per CPU
    device). The variable is set only while the client starts and then restored, so child
    processes and later code see the environment they had. Unlike narrowing the affinity
    mask while the backend starts, it touches no thread's mask and takes counts above the
    core count."""
    before = os.environ.get(POOL_SIZE_VARIABLE)
    os.environ[POOL_SIZE_VARIABLE] = str(threads)
    try:
        jax.devices()
    finally:
        if before is None:
            del os.environ[POOL_SIZE_VARIABLE]
        else:
            os.environ[POOL_SIZE_VARIABLE] = before


def run_json_child(args: list[str], what: str, timeout: float, cwd=None, env=None,
                   tail: int = 3000) -> Any:
    """Run `python *args` in a fresh process, whose CPU backend starts anew (its own dispatch
    and threads), and return the JSON of the last line it printed. RuntimeError naming `what`,
    with the end of its stderr, when it fails or runs past `timeout` seconds."""
    try:
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"{what} took over {timeout:g} s") from err
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed: {done.stderr.strip()[-tail:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
