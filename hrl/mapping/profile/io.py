"""profile.csv / profile.json: write, update and load a profile, and describe the machine.

profile.json (format `hrl-profile-1`) keeps rows as JSON objects (`ProfileRow.to_dict`);
`load_profile` returns them as `ProfileRow`s, every placement in its current spelling
(`hrl.mapping.devices.normalize_placement`), so a committed profile with older spellings
reads as a new one. Each function reads or writes one file of a few MB at most.
"""

from __future__ import annotations

import csv
import json
import os
import platform as py_platform
import time
from pathlib import Path

import jax

from hrl.mapping.profile.grids import (
    ROW_FIELDS,
    RTL_CYCLE_CSVS,
    RTL_KERNEL_CSVS,
    RTL_LEARNER_CSVS,
    RTL_LEARNER_KERNEL_CSVS,
    RTL_LEARNER_RESOURCE_CSVS,
    RTL_RESOURCE_CSVS,
    RTL_TABLE_CALLS,
)
from hrl.mapping.profile.merge import merged_rows
from hrl.mapping.profile.rows import ProfileRow, as_rows, row_dicts
from hrl.mapping.speed import steady_rounds

FORMAT = "hrl-profile-1"
# The checkout this package was imported from (a table's CSV is looked up there too).
REPO_ROOT = Path(__file__).resolve().parents[3]


def find_repo_file(candidates) -> Path | None:
    """The first of `candidates` (paths relative to a checkout) that exists under the working
    directory or this checkout; None if none does."""
    for c in candidates:
        for base in (Path.cwd(), REPO_ROOT):
            if (base / c).is_file():
                return base / c
    return None


def rtl_cycle_rows() -> list[ProfileRow]:
    """The RTL's cycle tables (core, kernel, learner) and yosys resource tables (the RMM's,
    the learner's) as profile rows (`RTL_TABLE_CALLS`: `rtl-cycles`, `rtl-kernel-cycles`,
    `rtl-resources`, `rtl-learner-cycles`, `rtl-learner-kernel`, `rtl-learner-resources`;
    mode `table`, the CSV's columns in `extra`), for those that exist; they feed the FPGA
    model, not a fit."""
    out = []
    for call, names in zip(RTL_TABLE_CALLS, (RTL_CYCLE_CSVS, RTL_KERNEL_CSVS, RTL_RESOURCE_CSVS,
                                            RTL_LEARNER_CSVS, RTL_LEARNER_KERNEL_CSVS,
                                            RTL_LEARNER_RESOURCE_CSVS), strict=True):
        path = find_repo_file(names)
        if path is None:
            continue
        with open(path) as f:
            out += [ProfileRow.from_dict({"call": call, "placement": call, "mode": "table",
                                          "source": str(path), **r})
                    for r in csv.DictReader(f)]
    return out


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() often says only
    "x86_64"), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return py_platform.processor() or py_platform.machine()


def machine_info() -> dict:
    """Python, machine, CPU count and model, JAX version and devices (and each accelerator's
    model): what a profile was taken on (starts JAX's backends if they have not started)."""
    return {"python": py_platform.python_version(), "machine": py_platform.machine(),
            "processor": py_platform.processor(), "cpus": os.cpu_count(),
            "jax": jax.__version__, "jax_devices": [str(d) for d in jax.devices()],
            "accelerators": [d.device_kind for d in jax.devices() if d.platform != "cpu"],
            "cpu_model": cpu_name()}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_profile(rows, run_dir: Path, cfg_dict: dict, skipped=(),
                  speed=(), rounds=(), merge: str = "min",
                  grid: dict | None = None) -> tuple[Path, Path]:
    """profile.csv (timed rows, `ROW_FIELDS`) and profile.json (rows, config, machine, the
    reference workload's samples, `speed`: `Profiler.speed`, each round's rows before they
    were merged, `rounds`: `Profiler.rounds`, the rule that merged them, `merge`, and the
    grid measured, `grid`) in `run_dir`. Rows: ProfileRows or dicts."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = row_dicts(rows)
    timed = [r for r in rows if not r["call"].startswith(("rtl-", "loop:"))]
    csv_path = run_dir / "profile.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(timed)
    json_path = run_dir / "profile.json"
    json_path.write_text(json.dumps({
        "format": FORMAT, "created": _now(),
        "machine": machine_info(), "config": cfg_dict, "skipped": list(skipped),
        "speed_reference": list(speed), "rows": rows,
        **({"rounds": [row_dicts(r) for r in rounds], "merge": merge} if rounds else {}),
        **({"grid": grid} if grid else {}),
    }, indent=1, default=str))
    return csv_path, json_path


def update_profile(run_dir: Path, rows, calls, skipped=()) -> tuple[Path, Path]:
    """Replace the rows of `calls` in the profile of `run_dir` with `rows` (`hrl profile
    --only`), keeping every other row, its config and machine; the update, with this
    machine's description, is listed under "updates" in profile.json."""
    data = load_profile(run_dir)
    calls = set(calls)
    kept = [r for r in data["rows"] if r.call not in calls]
    updates = data.get("updates", []) + [{
        "created": _now(), "calls": sorted(calls),
        "machine": machine_info(), "skipped": list(skipped)}]
    # A refreshed row replaces the rounds' rows too: merging again keeps the new one.
    rounds = [[r for r in rows_ if r.call not in calls] for rows_ in data.get("rounds", [])]
    csv_path, json_path = write_profile(kept + as_rows(rows), Path(run_dir), data["config"],
                                        data.get("skipped", []), data.get("speed_reference", []),
                                        rounds, data.get("merge", "min"), data.get("grid"))
    new = json.loads(json_path.read_text())
    new.update(created=data.get("created", new["created"]), machine=data["machine"],
               updates=updates)
    json_path.write_text(json.dumps(new, indent=1, default=str))
    return csv_path, json_path


# The sizes of a grid (`grids.GRIDS`), as `profile_grid` reads them back.
GRID_SIZES = ("num_envs", "width", "batch", "capacity", "fanout")


def profile_grid(profile: dict, base: dict) -> dict:
    """The grid `profile` was measured over: its stored "grid", else the sizes its primitive
    rows ran at; `base` (a grid) for the rest (repeats, scan). What `hrl profile --only`
    refreshes rows of an existing profile at, so that refreshed loop rows sit where its
    primitives were measured (`grids.loop_sizes`)."""
    if profile.get("grid"):
        return {**base, **profile["grid"]}
    prims = [r for r in profile["rows"] if r.width and r.batch and r.num_envs
             and not r.call.startswith(("loop:", "link:", "overlap:", "rtl-"))]
    if not prims:
        return base
    return {**base, **{k: tuple(sorted({getattr(r, k) for r in prims if getattr(r, k)}))
                       for k in GRID_SIZES}}


def load_profile(path: str | Path) -> dict:
    """A profile.json (or the run directory holding it), its "rows" and every round of
    "rounds" as ProfileRows in the current placement spelling; the rest as stored. Where
    the profile kept its rounds and its reference samples name them, "rows" are merged again
    from its steady rounds (`merge.merged_rows`, by its own "merge" rule, "min" where it
    names none), so a profile taken before the profiler left out rounds measured in a slow
    spell is read as one taken after. ValueError when it does not exist or is not an hrl
    profile."""
    path = Path(path)
    if path.is_dir():
        path = path / "profile.json"
    if not path.is_file():
        raise ValueError(f"profile {str(path)!r} does not exist; run `hrl profile CONFIG` first")
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not an hrl profile (format {data.get('format')!r})")
    data["rows"] = as_rows(data.get("rows", []))
    if "rounds" in data:
        data["rounds"] = [as_rows(r) for r in data["rounds"]]
        if data["rounds"] and steady_rounds(data.get("speed_reference")) is not None:
            data["rows"] = merged_rows(data, data.get("merge", "min"))
    return data
