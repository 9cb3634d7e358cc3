"""Watch a run from Python and stop it on your own rule: `train(..., callbacks=[...])`.

Each callback is called at every chunk's end with a `ChunkEnd`: the run's counters and the
metrics rows just written to metrics.csv (`end.row`: the first seed's). One that returns a true
value stops the run there, with a checkpoint, so `train(..., resume=True)` (or
`hrl train --resume RUN_DIR`) continues it exactly:

    .venv/bin/python examples/callbacks.py --bar 150 --run-dir runs/callbacks
    .venv/bin/hrl train --resume runs/callbacks        # on to train.total_env_steps
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hrl.config import load_config
from hrl.runtime import ChunkEnd, train

CONFIG = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "dqn_cartpole.yaml"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bar", type=float, default=150.0,
                    help="stop once the mean return of the recent episodes reaches this")
    ap.add_argument("--run-dir", default="runs/callbacks")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="config overrides, as hrl train --set takes them")
    args = ap.parse_args(argv)
    cfg = load_config(CONFIG, args.set)

    history = []

    def keep(end: ChunkEnd) -> None:  # watch: keep what you want of every row
        history.append((end.env_steps, end.row["recent_return"], end.row["td_abs"]))

    def good_enough(end: ChunkEnd) -> bool:  # stop: a true value ends the run here
        return end.row["recent_return"] >= args.bar

    summary = train(cfg, args.run_dir, progress=False, callbacks=[keep, good_enough])
    for steps, recent, td in history:
        print(f"{steps:>8,} env steps  recent return {recent:7.1f}  |td| {td:.3f}")
    print(f"stopped by: {summary['stopped_by'] or 'the budget'} at {summary['env_steps']:,} "
          f"env steps")
    return {"summary": summary, "history": history}


if __name__ == "__main__":
    main()
