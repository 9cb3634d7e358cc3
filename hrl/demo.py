"""`make demo`: DQN with prioritized replay learns CartPole-v1 on this CPU, with a progress bar.

Runs experiments/configs/dqn_cartpole.yaml through the same `hrl train` runtime (one fused,
jitted loop) until CartPole is solved: the mean return of the last 10 episodes reaches 475
(500 is the maximum) at some episode's end (`hrl.runtime.aggregate.first_solved`, the rule the
summary and the learning table use; the chunk running at that episode finishes, and the demo
reports the solving episode). The budget is a wide margin over the config's own: seeds differ in how
long they take (and so do CPUs), so the demo only fails when learning really broke. Prints the
time to solve and where it went (imports, compilation, training), and where the curve and
the metrics are.

    python -m hrl.demo [--set key=value ...]
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import argparse  # noqa: E402
import sys  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

from rich.console import Console  # noqa: E402

from hrl.compile_cache import enable_compile_cache  # noqa: E402
from hrl.config import ConfigError, load_config  # noqa: E402
from hrl.runtime import train  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "dqn_cartpole.yaml"
SOLVED = 475.0
# Env steps the demo may take: about 3x what the slowest of the seeds in
# experiments/results/learning/ needed (experiments/learning/learning_quality.py).
BUDGET = 81_920


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hrl.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a key of the demo config")
    parser.add_argument("--run-dir", help="default: runs/demo-<UTC time>")
    args = parser.parse_args(argv)

    console = Console()
    console.print(
        "[bold]hrl demo[/bold]: DQN + prioritized replay (K-ary sum tree) on CartPole-v1; "
        f"stops when the mean return of the last 10 episodes reaches {SOLVED:.0f}.\n"
        f"config: {CONFIG}"
    )
    enable_compile_cache()
    try:
        cfg = load_config(CONFIG, [f"train.total_env_steps={BUDGET}", *args.overrides])
    except ConfigError as err:
        console.print(f"[red]demo: error: {err}")
        return 2
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / f"demo-{stamp}"
    imports = time.perf_counter() - _T0
    summary = train(cfg, run_dir=run_dir, progress=True, solved_return=SOLVED)
    wall = time.perf_counter() - _T0
    solved = summary["solved_at_env_steps"]
    recent = summary["recent_return"]
    if solved is not None:
        console.print(
            f"[green bold]solved in {wall:.1f} s[/]: mean return of the last 10 episodes "
            f"{summary['solved_window_return']:.1f} at the episode ending at env step "
            f"{solved:,} (the chunk ran on to {summary['env_steps']:,} env steps, "
            f"{summary['updates']:,} SGD updates)"
        )
    else:
        console.print(
            f"[red bold]not solved within {summary['env_steps']:,} env steps[/] (about 3x "
            f"what the slowest seed of experiments/results/learning/ needed): mean return of "
            f"the last 10 episodes "
            f"{recent if recent is None else round(recent, 1)}"
        )
    first = summary["first_chunk_s"] or 0.0
    rest = summary["wall_s_this_session"] - summary["init_s"] - first
    console.print(
        f"wall {wall:.1f} s = imports {imports:.1f} s + set-up {summary['init_s']:.1f} s "
        f"(networks, buffer, envs; compiled) + first chunk {first:.1f} s (compilation "
        f"and {cfg.train.chunk_env_steps:,} env steps) + training {rest:.1f} s; "
        f"{summary['env_steps_per_s']:,.0f} env steps/s, "
        f"{summary['updates_per_s']:,.0f} SGD updates/s"
    )
    console.print(f"learning curve: {run_dir / 'learning_curve.png'}")
    console.print(f"metrics:        {run_dir / 'metrics.csv'}  (one row per chunk)")
    console.print(f"episodes:       {run_dir / 'episodes.csv'}  (env step, return)")
    console.print(f"checkpoint:     {run_dir / 'checkpoints'}  "
                  f"(continue: hrl train --resume {run_dir})")
    return 0 if solved is not None else 1


if __name__ == "__main__":
    sys.exit(main())
