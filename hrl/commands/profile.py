"""`hrl profile CONFIG.yaml [--set k=v ...] [--grid quick|full] [--run-dir DIR]`: time every
primitive on every placement present and write profile.csv / profile.json.

`--only host,process,cpu-collective,thread,cpu-device,gpu` measures just those link rows; into an
existing profile (`--run-dir` holding one) they replace its rows of those links, e.g. to add the
collective between virtual CPU devices to a profile measured before it existed:
`hrl profile CONFIG --grid full --only cpu-collective --run-dir DIR`. `--only rtl-tables` re-reads
the RTL's cycle, kernel-cycle and resource tables (after the RTL changed) the same way, and
`--only loop-fused,loop-host,loop-pipelined` times those loops' rows again (`loop:<kind>`)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from hrl.config import ConfigError, load_config, to_dict
from hrl.mapping.profile import (
    GRIDS,
    LINK_ROWS,
    LOOP_ONLY,
    RTL_TABLE_CALLS,
    Profiler,
    load_profile,
    profile_grid,
    rtl_cycle_rows,
    start_profiling_backend,
    update_profile,
    write_profile,
)
from hrl.mapping.profile.io import GRID_SIZES

HELP = "microbenchmark the five primitives on every device/backend present (for `hrl map`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config",
                        help="YAML run config, e.g. experiments/configs/dqn_cartpole.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config key (repeatable)")
    parser.add_argument("--grid", default="quick", choices=["quick", "full"],
                        help="size grid (see hrl.mapping.profile.GRIDS; default quick)")
    parser.add_argument("--backends", default="jax,xla,opencl,rtl",
                        help="replay backends to time, comma separated (default "
                             "jax,xla,opencl,rtl; xla: the JAX buffer's tree in plain XLA ops, "
                             "placement cpu-xla)")
    parser.add_argument("--run-dir", help="output directory (default runs/profile-<name>-<time>)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--only", metavar="LINKS",
                        help="measure only these link rows, comma separated, of host, process, "
                             "cpu-collective, thread, cpu-device, gpu (a few seconds), of the "
                             "loops' rows loop-fused, loop-host, loop-pipelined (minutes), "
                             "and/or re-read rtl-tables "
                             "(the RTL's cycle, kernel-cycle and resource CSVs); with a --run-dir "
                             "that holds a profile, its rows of those are replaced and the rest "
                             "kept")


def run(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config, args.overrides)
    except (ConfigError, FileNotFoundError) as err:
        print(f"hrl profile: error: {err}", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - {"jax", "xla", "opencl", "rtl"})
    if unknown:
        print(f"hrl profile: error: --backends: unknown {unknown}; choose from jax, xla, opencl, "
              "rtl", file=sys.stderr)
        return 2

    only = None
    if args.only is not None:
        only = [n.strip() for n in args.only.split(",") if n.strip()]
        choices = (*LINK_ROWS, *LOOP_ONLY, "rtl-tables")
        bad = sorted(set(only) - set(choices)) or ([] if only else ["(none)"])
        if bad:
            print(f"hrl profile: error: --only: unknown {bad}; choose from "
                  f"{', '.join(choices)}", file=sys.stderr)
            return 2
    console = Console()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / f"profile-{cfg.name}-{stamp}"
    if only is not None and "rtl-tables" in only and not (run_dir / "profile.json").is_file():
        print("hrl profile: error: --only rtl-tables refreshes an existing profile: give "
              "--run-dir a directory holding one", file=sys.stderr)
        return 2
    links = None if only is None else [n for n in only if n != "rtl-tables"]
    rows, skipped, speed, rounds, merge = [], [], [], [], "min"
    grid = GRIDS[args.grid]
    if links is None or links:
        start_profiling_backend(cfg, second_cpu="jax" in backends)
        grid = GRIDS[args.grid]
        if only is not None and (run_dir / "profile.json").is_file():
            grid = profile_grid(load_profile(run_dir), grid)  # refresh at its own sizes
        profiler = Profiler(cfg, grid=grid, backends=backends, progress=not args.no_progress,
                            only=links)
        rows, skipped, speed = profiler.run(), profiler.skipped, profiler.speed
        rounds, merge = profiler.rounds, profiler.merge
    if only is not None and (run_dir / "profile.json").is_file():
        calls = [f"loop:{LOOP_ONLY[n]}" if n in LOOP_ONLY else f"link:{n}" for n in links]
        if "rtl-tables" in only:
            rows, calls = rows + rtl_cycle_rows(), calls + list(RTL_TABLE_CALLS)
        csv_path, json_path = update_profile(run_dir, rows, calls, skipped)
    else:
        csv_path, json_path = write_profile(rows, run_dir, to_dict(cfg), skipped, speed, rounds,
                                            merge, {k: grid[k] for k in GRID_SIZES})
    for s in skipped:
        console.print(f"[yellow]skipped:[/yellow] {s}")
    console.print(f"{len(rows)} rows -> {csv_path} and {json_path}")
    console.print(f"next: hrl map {args.config} --profile {run_dir}")
    return 0
