"""A held-out draw stopped part way resumes (`validate_mapping.py --held-out N --resume`): the
settings its CSV holds whole are read back, not measured again, and the report is the one an
unbroken run writes. The measurement is a stand-in (seconds from the mapping's label), so the
test checks the bookkeeping, not a timing."""

import csv
import sys
import zlib
from pathlib import Path

from pinned import CONFIGS, HELDOUT_CONFIGS, HELDOUT_PROFILES, RESULTS, ROOT
from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, str(ROOT / "experiments" / "mapping"))
import heldout  # noqa: E402  (experiments/mapping/heldout.py)


def _run(out: Path, measured: list, resume: bool) -> dict:
    from hrl.mapping.profile.io import load_profile

    def measure(config, overrides, iterations):
        measured.append(tuple(overrides))
        # As the CSV writes it (6 significant digits), so a value read back is the same float.
        crc = zlib.crc32(" ".join(overrides).encode())
        return {"wall_s": round(0.01 + crc % 1000 * 1e-5, 5)}

    profiles = {k: load_profile(RESULTS / d) for k, d in HELDOUT_PROFILES.items()}
    configs = {k: CONFIGS / c for k, c in HELDOUT_CONFIGS.items()}
    return heldout.run(2, 3, configs, profiles, measure, out, ("jax", "opencl"),
                       Console(quiet=True), Progress, resume=resume)


def _truncate(csv_path: Path) -> tuple[list[dict], int]:
    """The CSV as a run stopped during its second setting leaves it: that setting's rows are
    gone but one. Returns the first setting's rows and how many runs were dropped."""
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    assert len(settings) == 2
    kept = [r for r in rows if r["setting"] == settings[0]]
    partial = kept + [r for r in rows if r["setting"] == settings[1]][:1]
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(partial)
    return kept, len(rows) - len(kept)


def test_resume_measures_only_what_is_missing(tmp_path, monkeypatch):
    import hrl.mapping.speed

    # The speed check times a reference workload; here it reads what `scale` says.
    scale = [1.5]
    monkeypatch.setattr(hrl.mapping.speed, "speed_check", lambda profile: (scale[0], None))
    csv_path, md_path = tmp_path / "heldout-seed3.csv", tmp_path / "heldout-seed3.md"
    first = []
    whole = _run(tmp_path, first, resume=False)
    report = md_path.read_text()

    _, dropped = _truncate(csv_path)
    again = []
    assert _run(tmp_path, again, resume=True) == whole
    assert len(again) == dropped and set(again) < set(first)  # the second setting, whole
    assert md_path.read_text() == report

    # A resumed setting keeps the scale it was measured with; the rest take today's.
    kept, dropped = _truncate(csv_path)
    scale[0] = 1.25
    _run(tmp_path, again, resume=True)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[: len(kept)] == kept
    assert {r["speed_scale"] for r in rows[len(kept) :]} == {"1.25"}

    # Without --resume everything is measured again.
    fresh = []
    _run(tmp_path, fresh, resume=False)
    assert len(fresh) == len(first)
