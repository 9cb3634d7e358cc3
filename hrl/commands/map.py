"""`hrl map CONFIG.yaml --profile DIR [--devices cpu*4,pocl,gpu,fpga:u250] [--staleness s]`:
predict every mapping of the primitives onto the devices, and the data-parallel loop on D
devices of a kind given a count (`cpu*4`), print the best ones and write the report
(Markdown, HTML, CSV, PNG) into the output directory. The report opens with the mappings the
runtime can run, ranked by `ranking.rank_mappings` (the ranking `hrl train --mapping auto`
picks from), the one it picks marked."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import jax
from rich.console import Console

from hrl.config import ConfigError, load_config
from hrl.mapping import parallel
from hrl.mapping.devices import SECOND_CPU
from hrl.mapping.plan import plan
from hrl.mapping.platform import GpuSpec
from hrl.mapping.profile import load_profile, profile_rows, start_profiling_backend
from hrl.mapping.ranking import rank_mappings
from hrl.mapping.report import print_summary, write_report
from hrl.mapping.speed import speed_check
from hrl.mapping.workload import workload_from_config

HELP = "explore every primitive->device mapping and report the best (needs `hrl profile`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML run config")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config key (repeatable)")
    parser.add_argument("--profile", help="profile directory or profile.json from `hrl profile` "
                        "(without one only modelled devices can be used)")
    parser.add_argument("--devices", help="comma separated: cpu, gpu, pocl, rtl, fpga:u200, "
                        "fpga:u250, fpga:u280, each with an optional learner array "
                        "fpga:BOARD:RxC (default 16x16, e.g. fpga:u250:8x32) (default: every "
                        "device in the profile); "
                        "cpu*N or gpu*N: N devices of that kind (virtual CPU devices share "
                        "the profiled machine's cores; GPUs have their own), which adds the "
                        "data-parallel fused loop on D = 1..N of them (train.devices: D) to "
                        "the candidates, e.g. --devices 'cpu*4,pocl' (quote it for the shell)")
    parser.add_argument("--scaling", default="weak", choices=["weak", "strong"],
                        help="how D devices share work: weak (default; each device does the "
                        "config's whole iteration, D times the env steps) or strong (the "
                        "config's iteration split D ways, as train.devices=D runs it); "
                        "candidates are ranked by predicted env steps/s either way")
    parser.add_argument("--staleness", type=int, default=None,
                        help="relaxed-mode staleness s (default: train.staleness, at least 1)")
    parser.add_argument("--gpu-spec", help="YAML GPU spec for a modelled gpu "
                        "(default hrl/mapping/specs/gpu_h100_sxm.yaml)")
    parser.add_argument("--metric", default="wall", choices=["wall", "cpu"],
                        help="fit the profile's wall times (default) or its CPU times (stable "
                             "on a shared, loaded machine)")
    parser.add_argument("--calibrate", action="store_true",
                        help="kept for older scripts: the speed check it asked for is always "
                             "on (the profile's reference workload timed now, a fraction of "
                             "a second; a warning and scaled predictions when this machine "
                             "runs faster or slower than when it was profiled)")
    parser.add_argument("--out", help="report directory (default: PROFILE_DIR/map-<config>)")


def run(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config, args.overrides)
    except (ConfigError, FileNotFoundError) as err:
        print(f"hrl map: error: {err}", file=sys.stderr)
        return 2

    console = Console()
    try:
        profile = load_profile(args.profile) if args.profile else None
        devices = [d.strip() for d in args.devices.split(",")] if args.devices else None
        if profile is None and devices is None:
            raise ValueError("give --profile DIR (from `hrl profile`) or --devices with "
                             "modelled devices only (gpu, fpga:<board>)")
        staleness = args.staleness if args.staleness is not None else max(1, cfg.train.staleness)
        scale, warning = _speed_scale_now(cfg, profile) if profile else (None, None)
        if warning:
            console.print(f"[yellow]warning:[/yellow] {warning}")
        spec = GpuSpec.load(args.gpu_spec) if args.gpu_spec else None
        workload = workload_from_config(cfg)
        result = plan(workload, profile, devices, staleness, spec, metric=args.metric,
                      scaling=args.scaling)
        ranking = _auto_ranking(cfg, profile, devices, staleness, args.metric, result)
    except ValueError as err:
        print(f"hrl map: error: {err}", file=sys.stderr)
        return 2
    if scale is not None and scale != 1.0:
        result.notes.append(_calibration_note(result, scale))
    print_summary(result, console, ranking)
    if args.out:
        out = Path(args.out)
    elif args.profile:
        base = Path(args.profile)
        out = (base if base.is_dir() else base.parent) / f"map-{cfg.name}"
    else:
        out = Path("runs") / f"map-{cfg.name}"
    write_report(result, out, profile, f"hrl map: {cfg.name}", ranking)
    (out / "request.json").write_text(json.dumps({
        "config": str(args.config), "overrides": args.overrides, "profile": args.profile,
        "devices": devices, "staleness": staleness, "gpu_spec": args.gpu_spec,
        "metric": args.metric, "scaling": args.scaling, "speed_scale": scale}, indent=1))
    console.print(f"report: {out / 'report.md'} and {out / 'report.html'}")
    return 0


def _auto_ranking(cfg, profile: dict | None, devices: list[str] | None, staleness: int,
                  metric: str, result):
    """`rank_mappings` for the report: the mappings `hrl train --mapping auto` ranks, in the
    config's dependency mode at `staleness`. A `KIND*N` device of the JAX backend's kind
    adds the data-parallel loop on D = 2..N, as `--mapping-devices N` does (on a CPU,
    `hrl train` makes the N virtual devices, so they count as present). None without a
    profile; where nothing the runtime can run was measured, None and a note in `result`.
    It ranks on every placement the profile measured, whatever `--devices` narrows the
    exploration to, since that is what `--mapping auto` ranks."""
    if profile is None:
        return None
    counts = parallel.parse_devices(devices)[1] if devices else {}
    kind = jax.default_backend()
    n = counts.get(kind, 1)
    try:
        return rank_mappings(cfg, profile, staleness=staleness, metric=metric, max_devices=n,
                             available_devices=n if kind == "cpu" else None)
    except ValueError as err:
        result.notes.append(f"--mapping auto: {err}")
        return None


def _speed_scale_now(cfg, profile: dict) -> tuple[float, str | None]:
    """`speed.speed_check` on `profile`, timed in a CPU backend started as the profiler starts
    it (a second CPU device where the profile has the tree on one, the config's intra-op
    threads, the profile's dispatch). ValueError when the machine is too far from the
    profiled one's speed."""
    flags = os.environ.get("XLA_FLAGS")
    try:
        start_profiling_backend(cfg, second_cpu=any(r.placement == SECOND_CPU
                                                     for r in profile_rows(profile)))
    finally:
        # The second CPU device is this process's own: processes started after it (a caller
        # that runs `hrl map` in-process, then starts children) get the environment as it was.
        if flags is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = flags
    return speed_check(profile)


def _calibration_note(result, scale: float) -> str:
    exp = result.exploration
    chosen = ", ".join(f"{mode} {exp.times(mode)[exp.best(mode)] * scale * 1e3:.3f} ms"
                       for mode in ("strict", "relaxed"))
    return (f"speed: this machine runs the reference workload at {scale:.3f}x its time in "
            f"the profile, so every predicted time is {scale:.3f}x here now (the ranking "
            f"does not change); the chosen mappings' iteration now: {chosen}")
