"""`Profiler`: times the primitives, links and loops of one run config over a grid.

It composes the probes (`primitives`, `links`, `loops`, `overlap`) into a list of tasks
(`tasks`), runs them once per round and merges the rounds (`run`, `merge.merge_rounds`).
The probes append `ProfileRow`s to `rows`; a probe that cannot run here appends to
`skipped` why. Start JAX's CPU backend with `start_profiling_backend` before constructing
one. Cost: the sum of its probes' (see each), times the grid's rounds for the rows that
merge over rounds.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable

import jax
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hrl.mapping.devices import SECOND_CPU, XLA_TREE
from hrl.mapping.profile import links, loops, merge, overlap, primitives
from hrl.mapping.profile.context import LoopContext, build_context
from hrl.mapping.profile.grids import (
    GRIDS,
    LINK_ROWS,
    LOOP_KINDS,
    LOOP_ONLY,
    PROFILE_DISPATCH,
    Setting,
)
from hrl.mapping.profile.io import rtl_cycle_rows
from hrl.mapping.profile.rows import ProfileRow
from hrl.mapping.profile.target import Target
from hrl.mapping.speed import reference_time
from hrl.runtime.cpu_backend import running_cpu_dispatch, start_cpu_backend


def start_profiling_backend(cfg, second_cpu: bool) -> None:
    """Start JAX's CPU backend as a profile is taken (before any JAX): a second CPU device to
    time the tree on where `second_cpu` (placement cpu:1), the intra-op threads a run of `cfg`
    gets (train.cpu_threads), so that the profile prices what runs, and the host loops'
    dispatch (PROFILE_DISPATCH). `hrl profile`, the validation and `hrl map --calibrate`
    (whose reference workload must run as it ran in the profile) start it this way."""
    start_cpu_backend(cfg, dispatch=PROFILE_DISPATCH, min_cpu_devices=2 if second_cpu else 1)


class Profiler:
    """Times the primitives of one run config over a grid (see the module docstring)."""

    def __init__(self, cfg, grid: str | dict = "quick", backends=("jax", "xla", "opencl", "rtl"),
                 progress: bool = True, loops: bool = True, only=None):
        """`only`: measure just these link rows (names of `LINK_ROWS`) and loops' rows
        (names of `LOOP_ONLY`), nothing else. ValueError for an unknown merge rule."""
        self.cfg = cfg
        self.grid = GRIDS[grid] if isinstance(grid, str) else grid
        self.backends = tuple(backends)
        self.progress = progress
        self.loops = loops
        self.only = None if only is None else tuple(only)
        self.rows: list[ProfileRow] = []
        self.merge = self.grid.get("merge", "min")
        if self.merge not in merge.MERGE_RULES:
            raise ValueError(f"grid merge must be one of {merge.MERGE_RULES}, got "
                             f"{self.merge!r}")
        self.rounds: list[list[ProfileRow]] = []  # each round's rows, before merging
        # the reference workload's time at the start and the end of each round
        # (`hrl.mapping.speed`): how fast the machine ran while it was profiled
        self.speed: list[dict] = []
        # the CPU dispatch is fixed once the backend has started (`start_profiling_backend`)
        self.target = Target(cfg, running_cpu_dispatch())
        self.jax_placements = [("cpu", jax.devices("cpu")[0])]
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        if gpus:
            self.jax_placements.append(("gpu", gpus[0]))
        # A second XLA CPU device holds only the tree (`placement.sample/update: cpu:1`): the
        # learner stays on cpu:0. Profiled where this process has one (`hrl profile` asks for
        # two CPU devices when it profiles the jax tree). (placement, device, replay.impl)
        # of each; the same buffer with its tree in plain XLA ops (`replay.impl: xla`) on
        # the learner's device is placement `cpu-xla` (backend name `xla`).
        cpus = jax.devices("cpu")
        self.tree_placements = ([(SECOND_CPU, cpus[1], "auto")]
                                if len(cpus) > 1 and "jax" in self.backends else [])
        if "xla" in self.backends:
            self.tree_placements.append((XLA_TREE, cpus[0], "xla"))
        self.skipped: list[str] = []
        self._contexts: dict[tuple[int, int, int], LoopContext] = {}

    @property
    def dispatch(self) -> str:
        return self.target.dispatch

    def between(self, call: str, device, s: Setting) -> Callable[[], None] | None:
        """What runs between two timed calls of `call` on `device` (None: the host) at setting
        `s`: the loop context at its sizes (built once per sizes), or nothing off the CPU, where
        a GPU's calls are not the host's caches' to lose."""
        if device is not None and device.platform != "cpu":
            return None
        key = (s.num_envs, s.width, s.batch)
        if key not in self._contexts:
            self._contexts[key] = build_context(self.target, self.grid["capacity"][0],
                                                self.grid["fanout"][0], *key)
        return self._contexts[key].around(call)

    def env_names(self) -> list[str]:
        """The envs whose step this profile times: the config's, then the grid's "envs"."""
        return list(dict.fromkeys([self.target.env_name, *self.grid.get("envs", ())]))

    # The probes, by the names tests and `hrl profile --only` reach them.
    def _host_backends(self) -> list[tuple[str, str]]:
        return primitives.host_backends(self)

    def _profile_thread_handoff(self, repeats: int) -> None:
        links.profile_thread_handoff(self, repeats)

    def _profile_cpu_device_link(self, repeats: int) -> None:
        links.profile_cpu_device_link(self, repeats)

    def link_tasks(self, names=LINK_ROWS) -> list[tuple[str, Callable[[], None]]]:
        """The link measurements named (`LINK_ROWS`), in LINK_ROWS order. ValueError for an
        unknown name."""
        unknown = sorted(set(names) - set(LINK_ROWS))
        if unknown:
            raise ValueError(f"unknown link rows {unknown}; choose from {list(LINK_ROWS)}")
        rep, scan = self.grid["repeats"], self.grid["scan"]
        every = {"host": ("host memory copy", lambda: links.profile_host_link(self, rep)),
                 "process": ("process link", lambda: links.profile_process_link(self, rep)),
                 "cpu-collective": ("collective between 2 virtual CPU devices",
                                    lambda: links.profile_collective_link(self, rep, scan)),
                 "thread": ("thread hand-off", lambda: self._profile_thread_handoff(rep)),
                 "cpu-device": ("between two CPU devices",
                                lambda: self._profile_cpu_device_link(rep)),
                 "gpu": ("between the CPU and the GPU",
                         lambda: links.profile_gpu_link(self, rep))}
        return [every[n] for n in LINK_ROWS if n in names]

    def tasks(self) -> list[tuple[str, Callable[[], None]]]:
        """(label, task) of everything this profile measures, in order; each task appends
        its rows to `rows`. Building the list measures nothing."""
        g = self.grid
        rep, scan = g["repeats"], g["scan"]
        if self.only is not None:
            kinds = [LOOP_ONLY[n] for n in self.only if n in LOOP_ONLY]
            return self.link_tasks([n for n in self.only if n not in LOOP_ONLY]) + (
                [("the runtime's loops (bookkeeping)",
                  lambda: loops.profile_loops(self, rep, kinds))] if kinds else [])
        base = Setting(num_envs=g["num_envs"][0], width=g["width"][0], batch=g["batch"][0],
                       capacity=g["capacity"][0], fanout=g["fanout"][0])

        def envs_upto(s):
            return [m for m in g["num_envs"] if m <= s.capacity]

        out = []
        for placement, device in self.jax_placements:
            # The config's env, and the grid's other "envs" (one profile for a family of
            # envs that share the learner's network: the MinAtar games).
            for env_name, m in itertools.product(self.env_names(), g["num_envs"]):
                s = dataclasses.replace(base, num_envs=m)
                out.append((f"env {env_name} M={m} on {placement}",
                            lambda p=placement, d=device, s=s, e=env_name:
                            primitives.profile_env(self, p, d, s, rep, scan, e)))
            for m, w in itertools.product(g["num_envs"], g["width"]):
                s = dataclasses.replace(base, num_envs=m, width=w)
                out.append((f"infer M={m} width={w} on {placement}",
                            lambda p=placement, d=device, s=s: primitives.profile_learner(
                                self, p, d, s, rep, scan, ("infer",))))
            for b, w in itertools.product(g["batch"], g["width"]):
                s = dataclasses.replace(base, batch=b, width=w)
                out.append((f"train B={b} width={w} on {placement}",
                            lambda p=placement, d=device, s=s: primitives.profile_learner(
                                self, p, d, s, rep, scan, ("train",))))
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                out.append((f"replay N={n} K={k} on {placement}",
                            lambda p=placement, d=device, s=s: primitives.profile_replay_jax(
                                self, p, d, s, rep, scan, g["batch"], envs_upto(s))))
        for placement, device, impl in self.tree_placements:
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                out.append((f"replay N={n} K={k} on {placement}",
                            lambda p=placement, d=device, s=s, i=impl:
                            primitives.profile_replay_jax(self, p, d, s, rep, scan, g["batch"],
                                                          envs_upto(s), fused=False, impl=i)))
            # The XLA tree sits in train's queue: it has no relaxed overlap to measure.
            if placement == SECOND_CPU and self.loops:
                out.append((f"relaxed overlap on {placement}",
                            lambda p=placement: overlap.profile_overlap(self, p, "jax", rep)))
        for name, backend in self._host_backends():
            reps = rep if name != "rtl" else 3  # the RTL simulation's calls are slow
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                out.append((f"replay N={n} K={k} on {name}",
                            lambda name=name, b=backend, s=s, reps=reps:
                            primitives.profile_backend(self, name, b, s, reps, g["batch"],
                                                       envs_upto(s))))
            if self.loops:  # a relaxed loop's thread, measured like the loops: a subprocess
                out.append((f"relaxed overlap on {name}",
                            lambda name=name, b=backend, reps=reps: overlap.profile_overlap(
                                self, name, b, reps)))
        # Between CPU devices only where the tree has a second one to sit on; to the GPU only
        # where there is one.
        second_cpu = any(p == SECOND_CPU for p, _, _ in self.tree_placements)
        gpu = any(p == "gpu" for p, _ in self.jax_placements)
        out += self.link_tasks([n for n in LINK_ROWS if (n != "cpu-device" or second_cpu)
                                and (n != "gpu" or gpu)])
        if self.loops:  # one task per loop, so that a time limit can fall between them;
            # the host loop's first: every mapping but the fused loop's pays it
            out += [(f"the {kind} loop (bookkeeping)",
                     lambda k=kind: loops.profile_loops(self, rep, [k]))
                    for kind in sorted(LOOP_KINDS, key=lambda k: k != "host")]
            if any(p == "gpu" for p, _ in self.jax_placements):
                out.append(("the fused loop on the GPU (bookkeeping)",
                            lambda: loops.profile_gpu_fused_loop(self, rep)))
        return out

    def _time_reference(self, round_: int) -> None:
        if self.only is None:  # a profile's rows, not a refresh of a few links
            self.speed.append({**reference_time(), "round": round_})

    def run(self, deadline: float | None = None) -> list[ProfileRow]:
        """Every task once per round (a later round only the tasks whose rows merge over
        rounds), the rounds merged by the grid's rule, then the RTL's tables (a whole
        profile only). `deadline` (a `time.monotonic()` instant): a task not started by then
        is left out, and `skipped` says which (a profile in the minutes a lent machine
        gives). ValueError for rounds < 1."""
        tasks = self.tasks()
        rounds = int(self.grid.get("rounds", 1))
        if rounds < 1:
            raise ValueError(f"grid rounds must be >= 1, got {rounds}")
        measured = []
        with Progress(TextColumn("[bold]profile"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.description}"), TimeElapsedColumn(),
                      disable=not self.progress) as bar:
            job = bar.add_task("", total=len(tasks) * rounds)
            for r in range(rounds):
                self.rows, again = [], []
                self._time_reference(r)
                for label, fn in tasks:
                    bar.update(job, description=f"round {r + 1}: {label}" if rounds > 1
                               else label)
                    if deadline is not None and time.monotonic() > deadline:
                        self.skipped.append(f"{label}: not measured, past the time limit")
                        bar.advance(job)
                        continue
                    before = len(self.rows)
                    fn()
                    bar.advance(job)
                    # A later round measures again only what it could improve: not a task
                    # that was skipped or measured only rows whose first round stands.
                    if merge.merged_over_rounds(self.rows[before:]):
                        again.append((label, fn))
                    else:
                        bar.update(job, total=bar.tasks[job].total - (rounds - 1 - r))
                measured.append(self.rows)
                self._time_reference(r)
                tasks = again
        self.rounds = measured if rounds > 1 else []
        self.rows = merge.merge_rounds(measured, self.merge, merge.steady_rounds(self.speed))
        self.skipped = list(dict.fromkeys(self.skipped))  # a part skipped in every round
        if self.only is None:
            self.rows.extend(rtl_cycle_rows())
        return self.rows
