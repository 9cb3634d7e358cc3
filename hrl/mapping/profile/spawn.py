"""Start the profiler's probes in fresh processes: `python -m hrl.mapping.profile.child
PROBE JSON`, whose last stdout line is the probe's JSON result.

A probe runs in a child when what it measures is fixed when a process starts: JAX's CPU
dispatch and intra-op threads (the loops' rows, the overlap rows) or the number of virtual
CPU devices (the collective). Each launcher blocks until the child exits; its cost is the
child's start (a fresh Python importing JAX) plus the probe. Every launcher raises
RuntimeError with the end of the child's stderr when the child fails or times out.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from hrl.mapping.profile.grids import COLLECTIVE_DEVICES, OVERLAP_EXECUTORS
from hrl.runtime.cpu_backend import run_json_child, with_cpu_device_count

CHILD_MODULE = "hrl.mapping.profile.child"
# The checkout this package was imported from, put first on a child's PYTHONPATH.
REPO_ROOT = Path(__file__).resolve().parents[3]


def child_env(**extra) -> dict:
    """This process's environment for a child that imports hrl from this checkout, plus
    `extra`. The child sees no GPU (JAX_PLATFORMS=cpu): every child measures CPU loops and
    links, and on a GPU machine a child that started the GPU backend would take GPU memory
    beside its parent, enough to run both out of memory."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", **extra}


def run_probe(probe: str, args: dict, what: str, timeout: float, env: dict | None = None):
    """The JSON result of probe `probe` (`child.PROBES`) run with `args` in a fresh process."""
    return run_json_child(["-m", CHILD_MODULE, probe, json.dumps(args)], what, timeout,
                          env=env if env is not None else child_env(), tail=1000)


def collective_link_subprocess(repeats: int = 5, scan: int = 100,
                               timeout: float = 300.0) -> list[tuple[int, dict]]:
    """`links.collective_timings` in a fresh Python with two virtual CPU devices (and no GPU:
    JAX_PLATFORMS=cpu): [(bytes per ring step, timing)]."""
    env = child_env(XLA_FLAGS=with_cpu_device_count(os.environ.get("XLA_FLAGS", ""),
                                                     COLLECTIVE_DEVICES))
    pairs = run_probe("collective", {"repeats": repeats, "scan": scan},
                      "the collective probe", timeout, env=env)
    return [(int(n), t) for n, t in pairs]


def loop_rows_subprocess(base: dict, loop: str, dispatch: str, repeats: int,
                         settings, sizes, timeout: float = 900.0, builds: int = 2) -> list[dict]:
    """`loops.loop_rows` in a fresh Python started in CPU `dispatch` (see
    `loops.profile_loops`): per (L, U, N) of `settings` (N iterations per call), at `sizes`
    (a `grids.Setting`), the fastest of `builds` builds, {"wall_s", "cpu_s", "async"}."""
    args = {"base": base, "loop": loop, "dispatch": dispatch, "repeats": repeats,
            "settings": [list(x) for x in settings], "sizes": dataclasses.asdict(sizes),
            "builds": builds}
    return run_probe("loop", args, "the loop probe", timeout)


def overlap_rows_subprocess(base: dict, backend: str, capacity: int, fanout: int, points,
                            repeats: int, executors=OVERLAP_EXECUTORS,
                            timeout: float = 1800.0) -> list[dict]:
    """`overlap.overlap_rows` in a fresh Python (see `overlap.profile_overlap`): a dict per
    (width, batch) of `points`. ValueError unless `executors` starts with "sequential"."""
    if not executors or executors[0] != "sequential":
        raise ValueError(f"executors must start with 'sequential' (its timers give the two "
                         f"sides), got {list(executors)}")
    args = {"base": base, "backend": backend, "capacity": int(capacity),
            "fanout": int(fanout), "points": [list(p) for p in points],
            "executors": list(executors), "repeats": int(repeats)}
    return run_probe("overlap", args, "the relaxed-overlap probe", timeout)
