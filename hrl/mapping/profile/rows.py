"""`ProfileRow`: one measurement of a profile, typed.

profile.json keeps rows as JSON objects (format `hrl-profile-1`, unchanged); in memory the
profiler and the model hold `ProfileRow`s, read by attribute. `from_dict` / `to_dict`
convert losslessly: a field absent on disk is None in memory and absent again on the way
back, and a key no field names (an RTL table's CSV columns, a figure only some rows carry)
is kept in `extra`. Placements are normalized on the way in (`hrl.mapping.devices`), so an
older profile's `cpu1` reads as `cpu:1`.

A row also answers `row["key"]`, `row.get("key")` and `"key" in row` as its dict form does:
a bridge for callers outside `hrl.mapping` that still read rows as dicts (experiments/);
code in `hrl.mapping` reads attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from hrl.mapping.devices import normalize_placement


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    """One timed call, link, loop or table row. None: the row does not carry the field."""

    call: str  # "sample", "train:dqn", "env:gymnax:CartPole-v1", "link:host", "loop:fused", ...
    # "cpu", "cpu-fused", "cpu:1", "pocl", "host", "loop", "rtl-cycles", ...: every row the
    # profiler writes has one (None only in a hand-built row that does not need it)
    placement: str | None = None
    mode: str | None = None  # "dispatched", "fused", "host", "loop", "table"
    env: str | None = None
    algo: str | None = None
    num_envs: int | None = None
    width: int | None = None
    batch: int | None = None
    capacity: int | None = None
    fanout: int | None = None
    depth: int | None = None
    work: float | None = None  # the call's work (`Workload.work`) or a link's bytes
    latency_s: float | None = None  # median wall seconds per call
    p10_s: float | None = None
    p90_s: float | None = None
    cpu_s: float | None = None  # median process CPU seconds per call
    context: str | None = None  # "loop": timed between the loop's other calls
    repeats: int | None = None
    dispatch: str | None = None  # CPU dispatch the row was measured in ("sync", "async")
    rollout: int | None = None  # loop rows: actor steps L per iteration
    sgd: int | None = None  # loop rows: SGD steps U per iteration
    iterations: int | None = None  # loop rows: iterations per call
    # overlap rows (`overlap:loop`): per SGD step, the strict sequential loop's two sides,
    # each loop's strict and relaxed time and what relaxed saved
    train_s: float | None = None
    replay_s: float | None = None
    strict_s: float | None = None
    saved_s: float | None = None
    saved_cpu_s: float | None = None
    pipelined_strict_s: float | None = None
    pipelined_relaxed_s: float | None = None
    pipelined_saved_s: float | None = None
    # older profiles' `overlap:thread` rows: the share hidden, as stored
    overlap: float | None = None
    overlap_cpu: float | None = None
    overlap_pipelined: float | None = None
    source: str | None = None  # table rows: the CSV they were read from
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # every other key

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileRow:
        """The row of a dict (as profile.json stores it); unknown keys go to `extra`.
        A table row's CSV columns all go to `extra`, whatever their names."""
        if isinstance(data, ProfileRow):
            return data
        table = data.get("mode") == "table"
        known = _TABLE_FIELDS if table else _FIELDS
        kw = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        if kw.get("placement") is not None:
            kw["placement"] = normalize_placement(kw["placement"])
        return cls(**kw, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The dict profile.json stores: the fields the row carries, then `extra`."""
        out = {f: getattr(self, f) for f in _FIELDS if getattr(self, f) is not None}
        out.update(self.extra)
        return out

    def replace(self, **changes) -> ProfileRow:
        return dataclasses.replace(self, **changes)

    # -- the dict bridge (see the module docstring)
    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        if key in _FIELDS:
            value = getattr(self, key)
            return default if value is None else value
        return self.extra.get(key, default)

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def keys(self):
        return self.to_dict().keys()


_MISSING = object()
_FIELDS = tuple(f.name for f in dataclasses.fields(ProfileRow) if f.name != "extra")
_TABLE_FIELDS = ("call", "placement", "mode", "source")


def as_row(row: ProfileRow | Mapping[str, Any]) -> ProfileRow:
    """`row` as a ProfileRow (a dict converted, a row as it is)."""
    return row if isinstance(row, ProfileRow) else ProfileRow.from_dict(row)


def as_rows(rows: Iterable[ProfileRow | Mapping[str, Any]]) -> list[ProfileRow]:
    return [as_row(r) for r in rows]


def profile_rows(profile: Mapping[str, Any] | None) -> list[ProfileRow]:
    """The rows of a profile (loaded, or a dict with "rows" of dicts or rows) as ProfileRows;
    [] for None or a profile without rows. Linear in the rows; no copy of a typed row."""
    return as_rows((profile or {}).get("rows", ()))


def row_dicts(rows: Iterable[ProfileRow | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`rows` as the dicts profile.json stores."""
    return [r.to_dict() if isinstance(r, ProfileRow) else dict(r) for r in rows]
