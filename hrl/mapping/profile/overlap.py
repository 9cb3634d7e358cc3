"""Overlap rows (`overlap:loop`): what relaxed dependency saves in the runtime's own loops
with the tree off the learner's device.

`profile_overlap` runs in the profiler's process and starts one child per host backend
(`spawn.overlap_rows_subprocess`); `overlap_rows` is what the child runs. A row holds what
was measured, not the overlap: `calibration.replay_overlap_from_profile` forms the overlap with the
profile's one hand-off figure (`link:thread`), which the model takes back off, so that the
model's saving at the measured point is the measured one. Cost: per (width, batch) point and
executor, two warm loops and OVERLAP_MIN_REPEATS (or more) timed runs of each.
"""

# `strict_step` is called inside the loop iteration that defines it, so binding the loop's
# variables late (ruff B023) cannot pick up a later iteration's values.
# ruff: noqa: B023

from __future__ import annotations

import itertools
import json
import statistics

from hrl.config import config_from_dict, to_dict
from hrl.mapping.devices import SECOND_CPU_PLACEMENT
from hrl.mapping.profile import spawn
from hrl.mapping.profile.grids import (
    OVERLAP_CALL,
    OVERLAP_EXECUTORS,
    OVERLAP_ITERATIONS,
    OVERLAP_LOOP,
    OVERLAP_MIN_REPEATS,
    Setting,
)
from hrl.mapping.profile.loops import set_width
from hrl.mapping.profile.timers import interleaved_times
from hrl.mapping.validate import WarmLoop
from hrl.replay.backends import format_for
from hrl.runtime.cpu_backend import start_cpu_backend


def overlap_loop_config(base: dict, backend: str, capacity: int, fanout: int, width: int,
                        batch: int, executor: str, relaxed: bool):
    """The config of one loop an `overlap:loop` row times: `base` (a config dict, not
    modified) with the tree on host backend `backend` ("jax": the JAX tree on the second XLA
    CPU device, the learner on the first), `OVERLAP_LOOP` envs, actor steps and SGD steps
    per iteration, the agent's layers `width` wide, sampling `batch`, run by `executor`
    (sequential, or pipelined with process actors one iteration ahead, as validation runs
    it), relaxed (staleness 1) or strict."""
    envs, steps, sgd = OVERLAP_LOOP
    data = json.loads(json.dumps(base))
    data["env"].update(num_envs=envs)
    set_width(data, width)
    data["replay"].update(backend=backend, capacity=capacity, fanout=fanout,
                          fmt=format_for(backend, data["replay"]["fmt"]))
    if backend == "jax":
        data["placement"] = dict(SECOND_CPU_PLACEMENT)
    data["train"].update(rollout_length=steps, batch_size=batch, train_ratio=sgd / (steps * envs),
                         learning_starts=min(4 * batch, capacity),
                         dependency="relaxed" if relaxed else "strict",
                         staleness=1 if relaxed else 0, total_env_steps=10**7,
                         executor=executor, actors="thread")
    if executor == "pipelined":
        data["train"].update(actors="process", pipeline_depth=1)
    data.setdefault("log", {})["progress"] = False
    return config_from_dict(data)


def overlap_rows(a: dict) -> list[dict]:
    """The child's side of `spawn.overlap_rows_subprocess` (`a`: {"base", "backend",
    "capacity", "fanout", "points", "executors", "repeats"}). Per (width, batch) point and
    executor, the runtime's own loop (`overlap_loop_config`) in strict and in relaxed
    dependency, timed in turns (`timers.interleaved_times`), and what relaxed saves per SGD
    step ("saved_s", the median of the paired differences). From the strict sequential loop's
    own timers: train's side and the replay's side (sample, update and insert) per SGD step.
    A hand-off is not timed here: the model prices it from `link:thread` alone, so a second
    figure for it would put the difference between the two into the model's saving. Must
    run in a process whose JAX has not started; a dict per point."""

    def config(width, batch, executor, relaxed):
        return overlap_loop_config(a["base"], a["backend"], a["capacity"], a["fanout"], width,
                                   batch, executor, relaxed)

    # the dispatch, threads and devices of a relaxed loop with this tree
    start_cpu_backend(config(*a["points"][0], "sequential", True))
    repeats = max(OVERLAP_MIN_REPEATS, a["repeats"])
    out = []
    for width, batch in a["points"]:
        row = {}
        for executor in a["executors"]:
            with (WarmLoop(config(width, batch, executor, False), OVERLAP_ITERATIONS) as strict,
                  WarmLoop(config(width, batch, executor, True), OVERLAP_ITERATIONS) as relaxed):
                sides = []  # the strict sequential loop's timers, per run: (train, replay)

                def strict_step(loop=strict.loop, step=strict.step):
                    before = dict(loop.timings)
                    state = step()
                    spent = {k: v - before[k] for k, v in loop.timings.items()}
                    sides.append((spent["train"], spent["sample"] + spent["update"]))
                    return state

                t, saved = interleaved_times(
                    {"strict": strict_step if executor == "sequential" else strict.step,
                     "relaxed": relaxed.step}, repeats, paired=("strict", "relaxed"))
                per_step = OVERLAP_ITERATIONS * strict.sgd_per_iteration
                if executor == "sequential":  # medians: a run can stall (XLA's thread pool)
                    row["train_s"] = statistics.median(train for train, _ in sides) / per_step
                    row["replay_s"] = statistics.median(replay for _, replay in sides) / per_step
            prefix = "" if executor == "sequential" else f"{executor}_"
            row.update({f"{prefix}strict_s": t["strict"]["latency_s"] / per_step,
                        f"{prefix}relaxed_s": t["relaxed"]["latency_s"] / per_step,
                        f"{prefix}saved_s": saved["latency_s"] / per_step})
            if executor == "sequential":
                row.update({"relaxed_cpu_s": t["relaxed"]["cpu_s"] / per_step,
                            "relaxed_p10_s": t["relaxed"]["p10_s"] / per_step,
                            "relaxed_p90_s": t["relaxed"]["p90_s"] / per_step,
                            "saved_cpu_s": saved["cpu_s"] / per_step})
        out.append(row)
    return out


def profile_overlap(prof, name: str, backend: str, repeats: int) -> None:
    """The `overlap:loop` rows of the tree on host backend `backend` (placement `name`) with
    train on the CPU, at the grid's first capacity and fan-out and every width and batch (the
    first width and batch, and the sequential executor only, for the RTL simulation, whose
    calls are slow). Measured in a fresh process, as a run with this tree starts; each row
    holds the loops' timings, from which `plan` forms the overlap. `backend` "jax": the JAX
    tree on the second CPU device (placement `cpu:1`). A child that fails is skipped, with
    why."""
    g = prof.grid
    executors = OVERLAP_EXECUTORS
    if backend == "rtl":
        points, executors = [(g["width"][0], g["batch"][0])], ("sequential",)
    else:
        points = list(itertools.product(g["width"], g["batch"]))
    try:
        got = spawn.overlap_rows_subprocess(to_dict(prof.target.cfg), backend, g["capacity"][0],
                                            g["fanout"][0], points, repeats, executors)
    except RuntimeError as err:
        prof.skipped.append(f"{OVERLAP_CALL} on {name}: {err}")
        return
    for (width, batch), m in zip(points, got, strict=True):
        s = Setting(num_envs=OVERLAP_LOOP[0], width=width, batch=batch,
                    capacity=g["capacity"][0], fanout=g["fanout"][0])
        prof.rows.append(prof.target.row(
            OVERLAP_CALL, name, "host", s, "sample",
            {"latency_s": m["relaxed_s"], "cpu_s": m["relaxed_cpu_s"],
             "p10_s": m["relaxed_p10_s"], "p90_s": m["relaxed_p90_s"]}, repeats,
            **{k: v for k, v in m.items() if not k.startswith("relaxed_")}))
