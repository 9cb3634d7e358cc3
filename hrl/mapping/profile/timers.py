"""Timers every probe uses: the median of repeated calls, calls taken in turns, a call
repeated inside one jitted scan, a hand-off to a second thread.

Each timer waits for its call's result (`jax.block_until_ready`) and excludes warm-up
(compilation, first touch), so a figure is the steady-state cost of one call. Each reports
wall seconds (median, p10, p90) and process CPU seconds (median): on a shared machine the
wall time includes the time other processes hold the cores, the CPU time does not, so the
CPU figure stays comparable between a profile and a later run under a different load.
Cost: (warm-ups + repeats) calls of the function timed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping.profile.grids import HANDOFF_BATCH


def median_time(fn: Callable[[], object], repeats: int,
                between: Callable[[], None] | None = None) -> dict[str, float]:
    """Median wall and CPU seconds of `fn()` (waited for), after two warm-up calls; `between`
    (untimed) runs before each call, as the calls around it in a loop do (`LoopContext`),
    and the result then says `"context": "loop"`."""
    jax.block_until_ready(fn())  # warm-up: compilation and first-touch excluded
    jax.block_until_ready(fn())
    wall, cpu = [], []
    for _ in range(repeats):
        if between is not None:
            between()
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    q = np.quantile(wall, [0.1, 0.9])
    out = {"latency_s": statistics.median(wall), "p10_s": float(q[0]), "p90_s": float(q[1]),
           "cpu_s": statistics.median(cpu)}
    if between is not None:
        out["context"] = "loop"  # the row says it was timed between the loop's other calls
    return out


def interleaved_times(fns: dict[str, Callable[[], object]], repeats: int,
                      paired: tuple[str, str]) -> tuple[dict[str, dict], dict[str, float]]:
    """`median_time` of several functions that take turns (one call of each per round, the
    order rotating), so a slow spell of a shared machine falls on all of them alike. Returns
    their timings and the median over rounds of the paired difference fns[a] - fns[b] of
    `paired` = (a, b), {"latency_s", "cpu_s"}."""
    names = list(fns)
    for fn in fns.values():  # warm-up: compilation and first-touch excluded
        jax.block_until_ready(fn())
        jax.block_until_ready(fn())
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for i in range(repeats):
        for n in names[i % len(names):] + names[:i % len(names)]:
            c0, t0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(fns[n]())
            wall[n].append(time.perf_counter() - t0)
            cpu[n].append(time.process_time() - c0)
    out = {}
    for n in names:
        q = np.quantile(wall[n], [0.1, 0.9])
        out[n] = {"latency_s": statistics.median(wall[n]), "p10_s": float(q[0]),
                  "p90_s": float(q[1]), "cpu_s": statistics.median(cpu[n])}
    a, b = paired
    diff = {"latency_s": statistics.median(np.subtract(wall[a], wall[b])),
            "cpu_s": statistics.median(np.subtract(cpu[a], cpu[b]))}
    return out, {k: float(v) for k, v in diff.items()}


def copy_tree(tree):
    """A copy of a device pytree that a donating call may consume."""
    return jax.tree.map(jnp.copy, tree)


def scan_time(step: Callable, carry, n: int, repeats: int) -> dict[str, float]:
    """Per-call time of `step` repeated n times inside one jitted lax.scan (the fused loop's
    cost of the call: dispatch amortised over n). At least 5 timed scans."""
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    run = jax.jit(lambda c: jax.lax.scan(lambda c, k: (step(c, k), None), c, keys)[0])
    t = median_time(lambda: run(carry), max(5, repeats // 3))
    return {k: v / n for k, v in t.items()}


def thread_handoff_time(repeats: int) -> dict[str, float]:
    """`median_time` of one hand-off of a no-op job to a ThreadPoolExecutor of one thread and
    back, timed HANDOFF_BATCH round trips at a time so the figure stands well above the
    timer's resolution."""
    with ThreadPoolExecutor(1) as pool:
        def round_trips():
            for _ in range(HANDOFF_BATCH):
                pool.submit(int).result()

        t = median_time(round_trips, repeats)
    return {k: v / HANDOFF_BATCH for k, v in t.items()}
