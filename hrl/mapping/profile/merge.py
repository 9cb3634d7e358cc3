"""One profile from several rounds of the same rows: the merge rules.

Every function here returns the row objects it was given (dicts or `ProfileRow`s), never
copies, so a caller can compare what came out with what went in. Linear in the rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hrl.mapping.profile.rows import ProfileRow, as_row
from hrl.mapping.speed import steady_rounds

# What names a row: a second measurement of the same row agrees on all of these.
ROW_IDENTITY = ("call", "placement", "mode", "env", "algo", "num_envs", "width", "batch",
                "capacity", "fanout", "work", "rollout", "sgd", "dispatch", "iterations")

# Rows that are a difference or a ratio of interleaved timings (the relaxed overlap, the
# collective's psum, the move between CPU devices): the interleaving already cancels a slow
# spell, and the lowest of several rounds is the luckiest, not the truest, which would bias
# the mapping chosen towards the placement that was luckiest. Their first round stands.
DIFFERENCE_CALLS = ("overlap:loop", "overlap:thread", "link:cpu-collective",
                    "link:cpu-device")

MERGE_RULES = ("min", "median")

Row = ProfileRow | Mapping[str, Any]


def row_name(row: Row) -> tuple:
    """The row's identity (`ROW_IDENTITY`), equal for two measurements of the same row."""
    typed = as_row(row)
    return tuple(getattr(typed, k) for k in ROW_IDENTITY)


def merged_over_rounds(rows: list[Row]) -> bool:
    """Whether any of `rows` is one that `merge_rounds` picks from several rounds."""
    return any(as_row(r).call not in DIFFERENCE_CALLS for r in rows)


def merge_rounds(rounds: list[list[Row]], keep: str = "min",
                 steady: set[int] | None = None) -> list[Row]:
    """One profile from several measurements of the same rows (`ROW_IDENTITY`), in the first
    round's order; a row only some rounds have is kept as measured, and `DIFFERENCE_CALLS` as
    the first round measured them. Every other row is kept whole from one round, never mixed:
    - keep="min": the round where its latency was lowest. A shared machine's speed drifts
      over minutes, and a slow spell inflates the rows it covers; the lower of two rounds
      measured minutes apart rarely falls in one.
    - keep="median": the round of its median latency (the lower middle one of an even count,
      so two rounds keep the lower). A row whose time varies a lot between runs is otherwise
      kept at its luckiest, while a run is compared at its median over rounds.
    `steady` (`hrl.mapping.speed.steady_rounds`): where given, a row is chosen among the
    measurements of those rounds only, if any of them measured it. Raises ValueError for any
    other `keep`."""
    if keep not in MERGE_RULES:
        raise ValueError(f"merge_rounds: keep must be one of {MERGE_RULES}, got {keep!r}")
    seen_rows: dict[tuple, list[tuple[int, Row]]] = {}
    for index, rows in enumerate(rounds):
        seen: dict[tuple, int] = {}
        for row in rows:
            name = row_name(row)
            seen[name] = seen.get(name, 0) + 1
            key = (*name, seen[name])  # repeated names (none today) pair up in order
            if key not in seen_rows:
                seen_rows[key] = [(index, row)]
            elif merged_over_rounds([row]):
                seen_rows[key].append((index, row))
    out = []
    for measured in seen_rows.values():
        chosen = [row for index, row in measured if steady is None or index in steady]
        # stable: ties keep the earlier round
        ranked = sorted(chosen or [row for _, row in measured],
                        key=lambda r: as_row(r).latency_s or 0.0)
        out.append(ranked[0] if keep == "min" else ranked[(len(ranked) - 1) // 2])
    return out


def merged_rows(profile: Mapping[str, Any], keep: str) -> list[Row]:
    """The rows of a loaded profile merged again from the rounds it keeps ("rounds", see
    `merge_rounds`, from its `steady_rounds` where it has reference samples), with its rows
    that no round measured (the RTL tables, rows an `hrl profile --only` refreshed); a
    profile without rounds as it is."""
    rounds = profile.get("rounds") or []
    if not rounds:
        return profile["rows"]
    names = {row_name(r) for rows in rounds for r in rows}
    # Every such row, even several of one name (the RTL tables' rows share theirs).
    extra = [r for r in profile["rows"] if row_name(r) not in names]
    steady = steady_rounds(profile.get("speed_reference"))
    return (merge_rounds(rounds, keep, steady)
            + extra)
