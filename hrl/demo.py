"""`make demo`: DQN with prioritized replay learns CartPole-v1 on this CPU, with a progress bar.

Runs experiments/configs/dqn_cartpole.yaml through the same `hrl train` runtime (one fused,
jitted loop) and stops as soon as the mean return of the last 10 episodes reaches 475 (the
CartPole-v1 "solved" bar; 500 is the maximum). Prints where the curve and the metrics are.

    python -m hrl.demo [--set key=value ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "dqn_cartpole.yaml"
SOLVED = 475.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hrl.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a key of the demo config")
    parser.add_argument("--run-dir", help="default: runs/demo-<UTC time>")
    args = parser.parse_args(argv)

    from rich.console import Console

    console = Console()
    console.print(
        "[bold]hrl demo[/bold]: DQN + prioritized replay (K-ary sum tree) on CartPole-v1; "
        f"stops when the mean return of the last 10 episodes reaches {SOLVED:.0f}.\n"
        f"config: {CONFIG}\nfirst the loop is compiled (tens of seconds), then it trains."
    )
    t0 = time.perf_counter()
    from hrl.config import ConfigError, load_config
    from hrl.runtime import train

    try:
        cfg = load_config(CONFIG, args.overrides)
    except ConfigError as err:
        console.print(f"[red]demo: error: {err}")
        return 2
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / f"demo-{stamp}"
    summary = train(cfg, run_dir=run_dir, progress=True, solved_return=SOLVED)
    wall = time.perf_counter() - t0
    solved = summary["solved_at_env_steps"]
    recent = summary["recent_return"]
    if solved is not None:
        console.print(
            f"[green bold]solved[/]: mean return of the last 10 episodes {recent:.1f} after "
            f"{solved:,} env steps and {summary['updates']:,} SGD updates"
        )
    else:
        console.print(
            f"[yellow]not solved within {summary['env_steps']:,} env steps[/]: mean return of "
            f"the last 10 episodes {recent if recent is None else round(recent, 1)}"
        )
    console.print(
        f"wall time {wall:.1f} s in total (training loop {summary['wall_s_this_session']:.1f} s, "
        f"incl. compilation); {summary['env_steps_per_s']:,.0f} env steps/s, "
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
