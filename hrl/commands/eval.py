"""`hrl eval RUN_DIR [--best] [--episodes N]`: the greedy (DQN) or deterministic (DDPG)
policy of a run's latest (or best) checkpoint on fresh episodes.

The episodes are those of `hrl.runtime.evaluation`: env copies and keys of their own, the key
folded from the seed and the checkpoint's env step, so with the run's `train.eval_episodes`
this repeats the run's own evaluation at that step exactly. Writes RUN_DIR/eval_<latest|best>.json.
From Python: `hrl.evaluate(RUN_DIR)` (the same dict), or `hrl.evaluate(hrl.load(RUN_DIR))`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hrl.api import evaluate_run
from hrl.compile_cache import enable_compile_cache

HELP = "evaluate a run's latest (or best) checkpoint: greedy/deterministic policy, fresh episodes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a run directory written by `hrl train`")
    parser.add_argument("--best", action="store_true",
                        help="the checkpoint with the best eval return (RUN_DIR/best/), not the "
                        "latest (needs a run with train.eval_every > 0)")
    parser.add_argument("--episodes", type=int, metavar="N",
                        help="episodes per seed (default: the run's train.eval_episodes)")


def run(args: argparse.Namespace) -> int:
    enable_compile_cache()
    result = evaluate_run(args.run_dir, args.best, args.episodes)
    for row in result["per_seed"]:
        print(f"seed {row['seed']}: eval return {row['eval_return']:.1f} (min "
              f"{row['eval_return_min']:.1f}, max {row['eval_return_max']:.1f}) over "
              f"{row['episodes']} episodes at env step {row['env_steps']:,}")
    out = Path(args.run_dir) / f"eval_{'best' if args.best else 'latest'}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"written: {out}")
    return 0
