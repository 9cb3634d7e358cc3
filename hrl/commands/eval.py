"""`hrl eval RUN_DIR [--best] [--episodes N]`: the greedy (DQN) or deterministic (DDPG)
policy of a run's latest (or best) checkpoint on fresh episodes.

The episodes are those of `hrl.runtime.evaluation`: env copies and keys of their own, the key
folded from the seed and the checkpoint's env step, so with the run's `train.eval_episodes`
this repeats the run's own evaluation at that step exactly. Writes RUN_DIR/eval_<latest|best>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from hrl.compile_cache import enable_compile_cache
from hrl.config import ConfigError, load_run_config
from hrl.runtime.build_run import build, initial_state, seed_list
from hrl.runtime.checkpoint import restore_newest
from hrl.runtime.evaluation import make_evaluator
from hrl.runtime.metrics import eval_row

HELP = "evaluate a run's latest (or best) checkpoint: greedy/deterministic policy, fresh episodes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a run directory written by `hrl train`")
    parser.add_argument("--best", action="store_true",
                        help="the checkpoint with the best eval return (RUN_DIR/best/), not the "
                        "latest (needs a run with train.eval_every > 0)")
    parser.add_argument("--episodes", type=int, metavar="N",
                        help="episodes per seed (default: the run's train.eval_episodes)")


def evaluate_run(run_dir: str | Path, best: bool = False, episodes: int | None = None) -> dict:
    """{'checkpoint', 'env_steps', 'per_seed': [{'seed', eval row}...]} of a run directory.
    Seeds run one after another (a host loop) are evaluated from their seed-<s>/ directories."""
    run_dir = Path(run_dir)
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (not a run directory?)")
    cfg = load_run_config(path)
    if episodes is not None and episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}")
    built = build(dataclasses.replace(cfg, seeds=1))
    seeds = seed_list(cfg)
    if len(seeds) > 1 and not built.loop.runs_seeds_at_once:
        rows = [evaluate_run(run_dir / f"seed-{s}", best, episodes)["per_seed"][0]
                for s in seeds]
        return {"run_dir": str(run_dir), "checkpoint": "best" if best else "latest",
                "per_seed": rows}
    if len(seeds) > 1:
        built.loop.close()
        built = build(cfg)
    like = initial_state(built, seeds if len(seeds) > 1 else None)
    where = run_dir / "best" if best else run_dir
    found = restore_newest(where, like, warn=lambda line: print(line, file=sys.stderr))
    if found is None:
        raise ConfigError(f"no checkpoint in {where / 'checkpoints'}"
                          + (" (the run had no evaluation: train.eval_every 0)" if best else ""))
    state, info, ckpt = found
    built.loop.close()
    steps = int(info["env_steps"])
    evaluator = make_evaluator(cfg, built.agent, episodes)
    returns = evaluator.returns(state.agent, np.asarray(seeds) if len(seeds) > 1 else seeds[0],
                                steps)
    returns = np.asarray(returns).reshape(len(seeds), -1)
    return {"run_dir": str(run_dir), "checkpoint": str(ckpt), "env_steps": steps,
            "per_seed": [{"seed": s, **eval_row(steps, r)}
                         for s, r in zip(seeds, returns, strict=True)]}


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
