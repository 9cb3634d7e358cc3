"""`hrl train CONFIG.yaml [--set key=value ...] [--run-dir DIR] [--checkpoint-every N]`
and `hrl train --resume RUN_DIR [--set ...]`."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import numpy as np
from rich.console import Console

from hrl.commands._errors import error_line
from hrl.compile_cache import enable_compile_cache
from hrl.config import ConfigError, load_config
from hrl.mapping.instantiate import add_cli_arguments, apply_cli, print_comparison
from hrl.runtime.cpu_backend import ensure_cpu_devices
from hrl.runtime.executors.ray_actors import RayUnavailable
from hrl.runtime.jax_distributed import LAUNCHER, initialize_from_env
from hrl.runtime.lifetime import exit_with_parent
from hrl.runtime.resume import resume_config
from hrl.runtime.run import train

HELP = "train an agent from a YAML config (or resume a run directory)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", nargs="?", help="YAML config, e.g. experiments/configs/dqn_cartpole.yaml"
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a config key, e.g. --set train.batch_size=128 (repeatable)",
    )
    parser.add_argument(
        "--seeds", type=int, metavar="S",
        help="S independent runs (seeds seed..seed+S-1), vmapped in one jitted program when the "
        "loop is fused (same as --set seeds=S)",
    )
    parser.add_argument(
        "--devices", type=int, metavar="N",
        help="data parallelism over N devices (same as --set train.devices=N); on a CPU, N "
        "virtual devices are made when XLA_FLAGS does not set their number",
    )
    parser.add_argument(
        "--run-dir", help="where logs, curve and checkpoints go (default runs/<name>-<time>)"
    )
    parser.add_argument(
        "--resume", metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its latest checkpoint (its config.yaml is used)",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, metavar="N",
        help="checkpoint every N env steps (default: log.checkpoint_every; 0 = only at the end)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--ray-address", metavar="HOST:PORT",
        help="train.executor=distributed: the Ray cluster its actor workers join (default: "
        "RAY_ADDRESS, else a local Ray started quietly on this machine)",
    )
    add_cli_arguments(parser)  # --mapping auto --profile DIR


def run(args: argparse.Namespace) -> int:
    if args.seeds is not None:
        args.overrides = [*args.overrides, f"seeds={args.seeds}"]
    if args.devices is not None:
        args.overrides = [*args.overrides, f"train.devices={args.devices}"]
    try:
        if args.resume:
            if args.config:
                raise ConfigError(
                    "give either CONFIG or --resume RUN_DIR, not both (a resumed run keeps the "
                    "config in RUN_DIR/config.yaml; change keys with --set)"
                )
            if args.run_dir:
                raise ConfigError("--run-dir cannot be combined with --resume")
            cfg = resume_config(args.resume, args.overrides)
            run_dir = Path(args.resume)
        else:
            if not args.config:
                raise ConfigError("missing CONFIG.yaml (or --resume RUN_DIR)")
            cfg = load_config(args.config, args.overrides)
            run_dir = Path(args.run_dir) if args.run_dir else None
    except (ConfigError, FileNotFoundError) as err:
        print(f"hrl train: error: {error_line(err)}", file=sys.stderr)
        return 2
    if getattr(args, "ray_address", None):
        os.environ["RAY_ADDRESS"] = args.ray_address  # read where Ray starts (ray_actors)
    if os.environ.get(LAUNCHER, "").isdigit():  # one of a local launch's processes
        exit_with_parent(int(os.environ[LAUNCHER]), signal.SIGTERM)
    try:
        distributed = initialize_from_env()  # one process of an `hrl launch` run
    except ValueError as err:
        print(f"hrl train: error: {error_line(err)}", file=sys.stderr)
        return 2
    enable_compile_cache()

    console = Console()
    try:
        # --mapping auto starts no JAX backend here (its speed check runs in a child), so the
        # run's `start_cpu_backend` starts it with the chosen mapping's settings, as a run
        # given that mapping's config starts it.
        cfg, mapping_choice = apply_cli(args, cfg, console)
    except (ConfigError, ValueError) as err:
        print(f"hrl train: error: {error_line(err)}", file=sys.stderr)
        return 2
    if cfg.train.devices > 1 and not distributed:
        # The virtual CPU devices of the data-parallel loop (--devices, or the train.devices
        # --mapping auto chose), before the run starts JAX; a placement on cpu:1 makes its
        # own (`start_cpu_backend`).
        ensure_cpu_devices(cfg.train.devices)
    try:
        summary = train(
            cfg,
            run_dir=run_dir,
            resume=bool(args.resume),
            checkpoint_every=args.checkpoint_every,
            progress=False if args.no_progress else None,
        )
    except (ValueError, RayUnavailable) as err:
        print(f"hrl train: error: {error_line(err)}", file=sys.stderr)
        return 2
    _print_summary(console, summary)
    if not summary.get("already_finished"):
        print_comparison(console, mapping_choice, summary)
    return 130 if summary["interrupted"] else 0


def _print_summary(console, s: dict) -> None:
    if s.get("already_finished"):
        console.print(
            f"already finished: {s['env_steps']:,} env steps of train.total_env_steps="
            f"{s['total_env_steps']:,}; nothing to run. Train longer with: hrl train --resume "
            f"{s['run_dir']} --set train.total_env_steps=<more>")
        return
    ret = "n/a" if s["recent_return"] is None else f"{s['recent_return']:.1f}"
    console.print(
        f"{'interrupted' if s['interrupted'] else 'finished'}: {s['env_steps']:,} env steps, "
        f"{s['updates']:,} SGD updates in {s['wall_s_this_session']:.1f} s "
        f"({s['env_steps_per_s']:,.0f} env steps/s, {s['updates_per_s']:,.0f} updates/s, "
        f"compile and set-up included); "
        f"mean return of the last {s['return_window']} episodes: {ret}"
    )
    fpga = s.get("fpga_learner")
    if fpga:  # placement infer/train: fpga: what ran on the (simulated) learner kernel
        cycles = fpga.get("cycles_per_sgd_step")
        console.print(
            f"FPGA learner ({fpga['kernel']}, {fpga['device']}): {fpga['launches']:,} "
            f"launches" + (f", {fpga['sgd_steps']:,} SGD steps ({cycles:,.0f} cycles each), "
                           f"{fpga['step_saturations']:,} saturations in its steps, "
                           f"{fpga['inferences']:,} inferences, {fpga['state_loads']} state "
                           f"loads" if "sgd_steps" in fpga and cycles else ""))
    final_eval = s.get("final_eval_return")
    if final_eval:
        at_bar = (f"; {s['seeds_ending_at_bar']} of {final_eval['runs']} seeds end at the bar "
                  f"{s['solved_return']:g}" if "seeds_ending_at_bar" in s else "")
        console.print(
            f"final eval return (greedy/deterministic policy): IQM {final_eval['iqm']:.1f} "
            f"[95% CI {final_eval['iqm_ci_low']:.1f}, {final_eval['iqm_ci_high']:.1f}]{at_bar}; "
            f"best checkpoint in {s['run_dir']}/best (hrl eval {s['run_dir']} --best)"
        )
    run_dir = s["run_dir"]
    seeds = s["seeds"]
    if len(seeds) > 1:
        _print_seeds(console, s)
        console.print(
            f"run directory: {run_dir}  (seed-<s>/ per seed, aggregate.csv/png, checkpoints/)"
        )
    else:
        console.print(
            f"run directory: {run_dir}  (metrics, episodes.csv, learning_curve.png, checkpoints/)"
        )
    if s["interrupted"]:
        console.print(f"resume with: hrl train --resume {run_dir}")


def _print_seeds(console, s: dict) -> None:
    per_seed = s["per_seed"]
    console.print(
        f"{len(per_seed)} seeds: {s['env_steps_per_s']:,.0f} env steps/s summed over seeds "
        f"({s['env_steps_per_s_per_seed']:,.0f} per seed)"
    )
    final = s.get("final_return")
    if final:
        console.print(
            f"final return (mean of the last {s['return_window']} episodes) over seeds: IQM "
            f"{final['iqm']:.1f} [95% CI {final['iqm_ci_low']:.1f}, {final['iqm_ci_high']:.1f}], "
            f"median {final['median']:.1f} (IQR {final['q25']:.1f} to {final['q75']:.1f})"
        )
    if s.get("solved_return") is not None:
        reached = sorted(r["steps_to_solved"] for r in per_seed if r["steps_to_solved"])
        median = f", median {int(np.median(reached)):,} env steps to it" if reached else ""
        console.print(
            f"{s['solved_runs']} of {len(per_seed)} seeds reached {s['solved_return']:g}{median}"
        )
