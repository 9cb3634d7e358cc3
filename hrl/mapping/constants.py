"""The executor model's constants for one workload: what `dse.explore` prices the loops with.

`calibration.calibrate` fits them from a profile (each with the rows it comes from) and
`Calibration.constants(workload)` evaluates them at a workload; a test or a what-if builds
them by hand, as a `LoopConstants` or as a dict of its field names (`LoopConstants.of`: a
misspelt name is an error, never a constant of 0).

Every constant that stands for a time is >= 0 (ValueError otherwise): where a fit would give
a negative time, the model's structure for that executor is what changes (a fused loop faster
than its calls timed apart does not pay their fixed per-call costs in full, `FusedLoopCosts`,
instead of paying them plus a negative bookkeeping term).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType


def _time(name: str, value) -> float:
    """`value` as seconds: a finite float >= 0 (ValueError naming `name` otherwise)."""
    x = float(value)
    if not math.isfinite(x) or x < 0.0:
        raise ValueError(f"{name} is a time and must be finite and >= 0 seconds, got {x!r}")
    return x


@dataclasses.dataclass(frozen=True)
class FusedLoopCosts:
    """One iteration of a fused loop (the whole iteration in one jitted scan) on its device:

        its calls, as timed apart - unpaid + bookkeeping

    `bookkeeping` (seconds >= 0): the scan's own cost per iteration (its dispatch per call
    spread over the call's iterations included). `unpaid` (seconds >= 0, at most the calls'
    fixed costs): the part of its calls' fixed per-call costs (the intercepts of their
    models `a + b * work`) that the fused program does not pay, since XLA shares work across
    one program's calls (`calibration.fit_loop`). The default, neither, is the sum of the
    calls: what a fused loop costs where none was measured."""

    bookkeeping: float = 0.0
    unpaid: float = 0.0

    def __post_init__(self):
        _time("fused-loop bookkeeping", self.bookkeeping)
        _time("fused-loop unpaid fixed cost", self.unpaid)


@dataclasses.dataclass(frozen=True)
class LoopConstants:
    """The loops' constants at one workload, seconds per iteration unless said otherwise.

    host: the sequential host loop's own bookkeeping (its Python and dispatch around the
      calls); host_actor: the part of it per actor step, which the pipelined executor's
      actor side pays; host_relaxed, host_actor_relaxed: the same in relaxed dependency,
      where the host loop runs in another CPU dispatch (None: as in strict).
    fused: the fused loop on every exclusive placement; fused_by_placement: on the named
      ones, where their own loop rows were measured.
    pipelined_wait: what each side of the pipelined executor (process actors) loses waking
      the other.
    replay_handoff: seconds per SGD step to hand the relaxed dependency's replay work to a
      thread and back (the thread actors' hand-off per iteration too).
    replay_overlap, replay_overlap_pipelined: per tree placement, the share (not a time: it
      may be below 0) of the shorter side that the relaxed dependency's thread hides in the
      sequential and in the pipelined executor (1 where absent; the pipelined falls back to
      the sequential's)."""

    host: float = 0.0
    host_actor: float = 0.0
    host_relaxed: float | None = None
    host_actor_relaxed: float | None = None
    fused: FusedLoopCosts = FusedLoopCosts()
    fused_by_placement: Mapping[str, FusedLoopCosts] = dataclasses.field(default_factory=dict)
    pipelined_wait: float = 0.0
    replay_handoff: float = 0.0
    replay_overlap: Mapping[str, float] = dataclasses.field(default_factory=dict)
    replay_overlap_pipelined: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("host", "host_actor", "host_relaxed", "host_actor_relaxed",
                     "pipelined_wait", "replay_handoff"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _time(name, value))
        fused = self.fused if isinstance(self.fused, FusedLoopCosts) else FusedLoopCosts(self.fused)
        object.__setattr__(self, "fused", fused)
        object.__setattr__(self, "fused_by_placement", MappingProxyType({
            k: v if isinstance(v, FusedLoopCosts) else FusedLoopCosts(v)
            for k, v in self.fused_by_placement.items()}))
        for name in ("replay_overlap", "replay_overlap_pipelined"):
            object.__setattr__(self, name, MappingProxyType(
                {k: float(v) for k, v in getattr(self, name).items()}))

    @classmethod
    def of(cls, given: LoopConstants | Mapping | None) -> LoopConstants:
        """`given` as LoopConstants: itself, the defaults for None, or a dict of field names
        (a float for a fused loop reads as its bookkeeping); an unknown name is a
        ValueError naming it."""
        if isinstance(given, LoopConstants):
            return given
        given = dict(given or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(f"unknown loop constant(s) {unknown}; known: {sorted(known)}")
        return cls(**given)

    def fused_on(self, placement: str) -> FusedLoopCosts:
        return self.fused_by_placement.get(placement, self.fused)

    def relaxed(self) -> tuple[float, float]:
        """(host, host_actor) in relaxed dependency."""
        return (self.host if self.host_relaxed is None else self.host_relaxed,
                self.host_actor if self.host_actor_relaxed is None
                else self.host_actor_relaxed)

    def overlap(self, placement: str, executor: str = "sequential") -> float:
        """The replay thread's share at a tree `placement` in `executor` (module docstring)."""
        sequential = self.replay_overlap.get(placement, 1.0)
        if executor == "pipelined":
            return self.replay_overlap_pipelined.get(placement, sequential)
        return sequential
