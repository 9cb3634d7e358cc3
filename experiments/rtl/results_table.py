"""The one writer of the learning module's cycle tables: a CSV of every column and a
markdown table of the same rows between a header and a footer of text.

experiments/rtl/{forward,step,learner}_cycles.py write their results through `write`, so
the CSV and the markdown of a table always hold the same rows and the same figures.
"""

from __future__ import annotations

import csv
from pathlib import Path


def markdown_rows(rows: list[dict], columns: list[str]) -> list[str]:
    """A markdown table (header, rule, one line per row) of `columns` of `rows`."""
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows])


def write(out: Path, stem: str, rows: list[dict], columns: list[str], head: list[str],
          foot: list[str] = (), md_columns: list[str] | None = None) -> Path:
    """`out/stem.csv` (every column of `columns`) and `out/stem.md`: the lines of `head`, the
    table of `md_columns` (default: `columns`), the lines of `foot`. Returns the md path."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    lines = [*head, "", *markdown_rows(rows, md_columns or columns)]
    if foot:
        lines += ["", *foot]
    md = out / f"{stem}.md"
    md.write_text("\n".join(lines) + "\n")
    return md
