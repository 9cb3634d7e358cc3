"""Predicted against measured iteration time, for every mapping that can run on this machine.

A mapping runs through the runtime (`hrl.runtime.run.build`), exactly as `hrl train` would run
it; its iteration time is the wall time of `loop.run(state, n)` over n iterations after a
warm-up that fills the buffer past `learning_starts` and compiles everything. The prediction
comes from `ranking.predicted_seconds` (the one ranking, `hrl.mapping.ranking.rank_mappings`) on a
profile taken beforehand (`hrl profile`), never from these runs.

Runnable here (what the runtime can instantiate on a CPU-only machine):
* `cpu-fused`: everything in the fused jitted loop (replay.backend=jax, train.executor=fused);
* `cpu`: the host loop, every primitive its own jitted call on the CPU (train.executor=sequential);
* `cpu-xla`: the same with the tree in plain XLA ops instead of the native kernels
  (replay.impl=xla);
* `replay-on-cpu1`: the host loop with the JAX replay tree on a second XLA CPU device
  (placement `cpu:1`, `hrl.mapping.devices.SECOND_CPU`: sample and update on cpu:1, infer
  and train on cpu:0);
* `pocl` / `rtl`: the host loop with the replay tree on the OpenCL backend (PoCL) or the RTL
  in simulation (replay.backend=opencl / rtl), when the runtime supports host replay backends;
* `... pipelined`: the host-loop mappings again, run by the pipelined executor with its actors
  in a process of their own (train.executor=pipelined, train.actors=process, depth 1);
* `... pipelined-thread`: the same with the actors in a thread of the learner's process
  (train.actors=thread).

Runnable where JAX's default backend is a GPU (`gpu_mappings`), instead of the above, whose
unplaced primitives would run on that GPU: `gpu-fused`, `gpu`, and the mixed `train-on-gpu`
and `train+replay-on-gpu` (env and inference on the CPU), each host loop also pipelined.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time

import jax
import numpy as np

from hrl.mapping.devices import (
    BACKENDS,
    RANKED_EXECUTORS,
    SECOND_CPU,
    SECOND_CPU_LABEL,
    SECOND_CPU_PLACEMENT,
    THREAD_ACTORS,
    XLA_TREE,
    normalize_placement,
)
from hrl.mapping.workload import PRIMITIVES
from hrl.replay.backends import FIXED_POINT_ONLY
from hrl.runtime.build_run import build, initial_state


@dataclasses.dataclass(frozen=True)
class RunnableMapping:
    label: str
    mapping: dict  # primitive -> placement name (as in the exploration)
    overrides: tuple[str, ...]  # config overrides that make the runtime run it
    # The executor that runs it, as the exploration prices it (`devices.PRICED_EXECUTORS`:
    # fused, sequential, pipelined, or pipelined-thread for the pipelined executor's thread
    # actors).
    executor: str

    def __post_init__(self):
        if self.executor not in RANKED_EXECUTORS:
            raise ValueError(f"executor must be one of {RANKED_EXECUTORS}, got "
                             f"{self.executor!r}")


def gpu_mappings() -> list[RunnableMapping]:
    """The GPU's mappings (a process whose JAX default backend is a GPU runs them): everything
    on the GPU, in the fused loop (`gpu-fused`) and in the host loop (`gpu`), and the paper's
    mixed mappings, the env and inference on the CPU with the learner on the GPU and the tree
    on the CPU (`train-on-gpu`) or on the GPU beside it (`train+replay-on-gpu`). Every
    primitive of a host-loop entry is placed, so that none runs on the default device by
    accident. The tree kernels are `replay.impl: auto`'s: Pallas on the GPU, the native C++
    ones on the CPU."""
    auto = ("replay.backend=jax", "replay.impl=auto")

    def host_loop(label: str, **where) -> RunnableMapping:
        placed = tuple(f"placement.{p}={d}" for p, d in where.items())
        return RunnableMapping(label, dict(where), ("train.executor=sequential", *auto, *placed),
                               "sequential")

    cpu_actors = dict(env="cpu", infer="cpu")
    return [
        RunnableMapping("gpu-fused", {p: "gpu-fused" for p in PRIMITIVES},
                        ("train.executor=fused", *auto), "fused"),
        host_loop("gpu", **{p: "gpu" for p in PRIMITIVES}),
        host_loop("train-on-gpu", **cpu_actors, sample="cpu", update="cpu", train="gpu"),
        host_loop("train+replay-on-gpu", **cpu_actors, sample="gpu", update="gpu", train="gpu"),
    ]


def uses_gpu(mapping: dict) -> bool:
    """Whether a catalogue mapping places any primitive on a GPU."""
    return any(p.removesuffix("-fused") == "gpu" for p in mapping.values())


def runnable_mappings(backends=BACKENDS, gpu: bool = False) -> list[RunnableMapping]:
    """The mappings above whose trees `backends` names (`xla`: the JAX tree in plain XLA ops
    on the learner's device; `cpu:1` or `cpu1`: the JAX tree on cpu:1), and with `gpu` the GPU's
    (`gpu_mappings`); each host loop also in the pipelined executor."""
    # The tree kernels the profile timed at these placements (`replay.impl: auto`, native on a
    # CPU), whatever a config asks for.
    native = ("replay.backend=jax", "replay.impl=auto")
    out = [
        RunnableMapping("cpu-fused", {p: "cpu-fused" for p in PRIMITIVES},
                        ("train.executor=fused", *native), "fused"),
        RunnableMapping("cpu", {p: "cpu" for p in PRIMITIVES},
                        ("train.executor=sequential", *native), "sequential"),
    ]
    if "xla" in backends:
        m = {p: "cpu" for p in PRIMITIVES}
        m.update(sample=XLA_TREE, update=XLA_TREE)
        out.append(RunnableMapping(f"replay-on-{XLA_TREE}", m, (
            "train.executor=sequential", "replay.backend=jax", "replay.impl=xla"), "sequential"))
    backends = {normalize_placement(b) for b in backends}
    if SECOND_CPU in backends:
        m = {p: "cpu" for p in PRIMITIVES}
        m.update(sample=SECOND_CPU, update=SECOND_CPU)
        out.append(RunnableMapping(SECOND_CPU_LABEL, m, (
            "train.executor=sequential", *native,
            *(f"placement.{p}={d}" for p, d in SECOND_CPU_PLACEMENT.items())), "sequential"))
    host_replay = importlib.util.find_spec("hrl.replay.host_buffer") is not None
    for backend, place in (("opencl", "pocl"), ("rtl", "rtl")):
        if backend in backends and host_replay:
            m = {p: "cpu" for p in PRIMITIVES}
            m.update(sample=place, update=place)
            # A fixed-point-only tree (the RTL) asks for fixed point; `instantiate.overrides_for`
            # keeps a config's own fixed:W:I.
            fmt = ("replay.fmt=fixed",) if backend in FIXED_POINT_ONLY else ()
            out.append(RunnableMapping(f"replay-on-{place}", m,
                                       ("train.executor=sequential",
                                        f"replay.backend={backend}", *fmt), "sequential"))
    if gpu:
        out += gpu_mappings()
    host_loops = [m for m in out if m.executor != "fused"]
    for actors, executor, suffix in (("process", "pipelined", "pipelined"),
                                     ("thread", THREAD_ACTORS, THREAD_ACTORS)):
        pipelined = ("train.executor=pipelined", f"train.actors={actors}",
                     "train.pipeline_depth=1")
        out += [RunnableMapping(f"{m.label} {suffix}", m.mapping,
                                (*pipelined, *m.overrides[1:]), executor)
                for m in host_loops]
    return out


def mode_overrides(mode: str, staleness: int) -> tuple[str, ...]:
    if mode == "strict":
        return ("train.dependency=strict", "train.staleness=0")
    return ("train.dependency=relaxed", f"train.staleness={staleness}")


def measure_iteration(cfg, iterations: int, repeats: int = 3) -> dict:
    """Median wall and CPU seconds per iteration of the runtime's loop for `cfg` (after
    warm-up), and the env steps and SGD steps of one iteration."""
    with WarmLoop(cfg, iterations) as run:
        run.step()
        wall, cpu = [], []
        for _ in range(repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            run.step()
            wall.append((time.perf_counter() - t0) / iterations)
            cpu.append((time.process_time() - c0) / iterations)
    return {"wall_s": float(np.median(wall)), "cpu_s": float(np.median(cpu)),
            "env_steps_per_iter": run.schedule.env_steps_per_iter,
            "sgd_per_iter": run.sgd_per_iteration}


class WarmLoop:
    """The runtime's loop for `cfg`, built and run past its warm-up (the buffer filled past
    learning_starts, every path compiled), then stepped `iterations` at a time (`step`), each
    step checked to have trained in every learning round. A context manager: leaving it
    closes the loop (the pipelined executor's actors' process)."""

    def __init__(self, cfg, iterations: int):
        built = build(cfg)
        self.loop, self.schedule, self.iterations = built.loop, built.schedule, iterations
        sch = self.schedule
        self.sgd_per_iteration = sch.updates_per_round / sch.period
        try:
            self.state = initial_state(built)
            warm = -(-sch.learning_starts // sch.env_steps_per_iter) + 2 * sch.period
            self.state, _ = self.loop.run(self.state, warm)
        except BaseException:
            self.close()
            raise

    def step(self):
        """Run `iterations` more; returns the state (ready)."""
        sch = self.schedule
        self.state, out = self.loop.run(self.state, self.iterations)
        jax.block_until_ready(self.state)
        if not np.all(out.trained[sch.period - 1::sch.period]):
            raise RuntimeError("validation run did not train in every learning round; raise "
                               "the warm-up or lower train.learning_starts")
        return self.state

    def close(self) -> None:
        if hasattr(self.loop, "close"):
            self.loop.close()  # the pipelined executor's actors' process

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
