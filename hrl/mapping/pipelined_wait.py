"""The pipelined executor's one constant: the wait its two processes lose per iteration.

With process actors the actors' side and the learner's side run at the same time, and the
formula (`hrl.mapping.dse`) takes the slower side. At depth 1 the two sides meet once per
iteration: the learner blocks on the queue until the actors' transitions arrive, the actors
until they may start the next iteration, and a blocked process is woken by the queue's feeder
thread and the scheduler. That wake-up is not the process link's transfer (`link:process`
prices the bytes, both ends) and does not shrink with the work, so it is priced per iteration:

    pipelined = max(actor side + wait, learner side + wait, host CPU busy / cores)

`wait` is measured by the profiler's own whole iterations of the pipelined executor (rows
`loop:pipelined`, several rollouts and SGD counts at the grid's smallest sizes): per row, its
measured iteration less the slower side the formula gives without it; the median over the
rows, and never below 0 (a wait cannot save time). Its leave-one-out error (each row predicted
with the wait of the others) is the executor's error that `hrl.mapping.uncertainty` turns
into each pipelined mapping's uncertainty. Nothing here reads a validation run.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hrl.mapping import dse
from hrl.mapping.workload import PRIMITIVES, Workload


@dataclasses.dataclass(frozen=True)
class PipelinedWait:
    """`seconds` per iteration on each side; `loo_error`: median relative error of a row's
    iteration predicted with the wait of the other rows (None: too few rows to tell)."""

    seconds: float
    loo_error: float | None
    rows: int
    source: str


def fit_wait(cases: list[tuple[Workload, float]], placement, host, process_link, cores: int,
             what: str = "loop:pipelined rows") -> PipelinedWait | None:
    """The wait (module docstring) from whole pipelined iterations `cases` (workload, measured
    seconds per iteration) of the host loop's `placement`, with the host loop's bookkeeping
    `host` (a `calibration.LoopOverhead`), the process link and the cores the formula uses
    everywhere else; None without cases. Costs one small exploration per case."""
    if not cases:
        return None
    cpu_only = {p: placement.name for p in PRIMITIVES}
    sides, shared, measured = [], [], []
    for w, seconds in cases:
        exp = dse.explore([placement], w, loop_overhead={
            "host": host(w), "host_actor": host.actor_part(w)},
            process_link=process_link, host_cores=cores)
        actor, learner, cpu = exp.pipelined_bounds(exp.row_of(cpu_only), "strict")
        sides.append(max(actor, learner))
        shared.append(cpu)
        measured.append(seconds)
    sides, shared, measured = map(np.asarray, (sides, shared, measured))
    residual = measured - sides

    def wait_of(keep) -> float:
        return max(float(np.median(residual[keep])), 0.0)

    n = len(cases)
    wait = wait_of(np.ones(n, bool))
    loo = None
    if n > 2:
        loo = float(np.median([
            abs(max(sides[i] + wait_of(np.arange(n) != i), shared[i]) / measured[i] - 1.0)
            for i in range(n)]))
    return PipelinedWait(wait, loo, n, (
        f"{wait * 1e6:.0f} us per iteration, the median over {n} {what} of the measured "
        "iteration less the formula's slower side"
        + (f"; leave-one-out error of the iteration {loo:.0%} median" if loo is not None
           else "")))
