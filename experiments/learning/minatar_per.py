"""DQN with prioritized replay against DQN with uniform replay on MinAtar (gymnax).

    python experiments/learning/minatar_per.py [--games breakout space_invaders]
                                               [--seeds 3] [--work DIR]
                                               [--budget cpu|cpu-100k|cpu-500k|published]

Per game, two variants that differ in one key: `replay.alpha` 0.6 (PER, beta annealed 0.4 to
1) and 0 (uniform: every priority^0 = 1, so sampling is uniform and every importance weight
is 1). Everything else is experiments/configs/dqn_minatar_breakout.yaml with the game's env:
MinAtar's published network (16 3x3 filters, 128 hidden units), bool observations in the
replay. Each variant trains `--seeds` seeds vmapped in one jitted program, with evaluation
(greedy policy, 10 episodes per seed on env copies of their own) along the way and at the end.

Reported per game and variant (rliable's way, `hrl.runtime.aggregate`): the IQM over seeds of
the final eval return and of the final training return (mean of the last 20 episodes), each
with its 95% bootstrap interval; per game, PER minus uniform of the final eval IQM, with a
95% bootstrap interval (seeds resampled within each variant).

Budgets:
* `cpu` (default): 16,384 env steps per seed, one SGD step per 4 env steps (4,096 SGD steps),
  epsilon 1 to 0.1 over the first 8,192 steps, learning from 2,000 transitions, the target
  copied every 250 SGD steps (the published 1,000 would copy it 4 times), evaluation every
  4,096 steps. Sized for a 2-core CPU (the learner, not the env, sets the cost): a
  game's two variants fit in a few minutes there (minatar_per.md records the wall time).
* `cpu-100k`: the `cpu` schedule over 100,000 env steps (epsilon decayed over the first
  50,000), the first step count the published curves can be read at.
* `cpu-500k`: 500,000 env steps, the issue's floor for this comparison: epsilon decayed over
  the first 100,000 (the published schedule's), a 100k replay, one SGD step per 4 env steps,
  checkpoints every 50,000 steps. Run it with `--work DIR`: a stopped invocation, run again,
  resumes each variant from its last checkpoint and reads the ones already finished.
* `published`: the MinAtar paper's DQN schedule (Young & Tian 2019): 5M env steps, one SGD
  step per env step, batch 32, a 100k replay, target copied every 1,000 SGD steps, epsilon 1
  to 0.1 over 100k steps, learning from 5,000 transitions; evaluation every 250k steps. For a
  GPU machine; the script is the same.

Writes experiments/results/minatar/: minatar_per.{csv,md} (rows of games not re-run are
kept), and per game <game>.png (training and eval IQM curves with their intervals, both
variants) beside <game>_curves.csv (the same numbers); budgets other than `cpu` add theirs to
the name (breakout_cpu-100k.png).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure

from hrl import envs
from hrl.compile_cache import enable_compile_cache
from hrl.config import load_config
from hrl.envs.spec import random_actions
from hrl.mapping.profile import cpu_name
from hrl.runtime import train
from hrl.runtime.aggregate import aggregate_curve, bootstrap_ci, iqm, summarize
from hrl.runtime.checkpoint import latest_checkpoint
from hrl.runtime.metrics import read_episodes, read_eval_rows

ROOT = Path(__file__).resolve().parents[1]  # experiments/
CONFIG = ROOT / "configs" / "dqn_minatar_breakout.yaml"
OUT = ROOT / "results" / "minatar"
GAMES = {
    "breakout": "gymnax:Breakout-MinAtar",
    "space_invaders": "gymnax:SpaceInvaders-MinAtar",
    "asterix": "gymnax:Asterix-MinAtar",
    "freeway": "gymnax:Freeway-MinAtar",
}
VARIANTS = {"per": ["replay.alpha=0.6"], "uniform": ["replay.alpha=0.0"]}
BUDGETS = {
    "cpu": ["train.total_env_steps=16384", "train.train_ratio=0.25",
            "agent.eps_decay_steps=8192", "train.learning_starts=2000",
            "agent.target_update_period=250",
            "train.chunk_env_steps=4096", "train.eval_every=4096"],
    # The same schedule as `cpu` run 6x longer: the first step count the published curves
    # can be read at (`PUBLISHED_DQN`).
    "cpu-100k": ["train.total_env_steps=100000", "train.train_ratio=0.25",
                 "agent.eps_decay_steps=50000", "train.learning_starts=2000",
                 "agent.target_update_period=250",
                 "train.chunk_env_steps=10000", "train.eval_every=20000"],
    # The budget for the comparison: 500k env steps, epsilon decayed over the first
    # 100k as in the published schedule, the `cpu` schedule's SGD step per 4 env steps (a
    # quarter of the published one's: the published curves had 4x the SGD steps at equal
    # frames), checkpointed every 50k so a stopped study continues (`--work`).
    "cpu-500k": ["train.total_env_steps=500000", "train.train_ratio=0.25",
                 "agent.eps_decay_steps=100000", "train.learning_starts=5000",
                 "agent.target_update_period=250", "replay.capacity=100000",
                 "train.chunk_env_steps=10000", "train.eval_every=50000",
                 "log.checkpoint_every=50000"],
    "published": ["train.total_env_steps=5000000", "train.train_ratio=1.0",
                  "train.batch_size=32", "replay.capacity=100000",
                  "agent.target_update_period=1000", "agent.eps_decay_steps=100000",
                  "train.learning_starts=5000", "train.chunk_env_steps=50000",
                  "train.eval_every=250000"],
}
# The published DQN curves (Young & Tian 2019, "MinAtar", Figure: mean over 30 runs of the
# moving average of training returns over 100 episodes, against frames = env steps), as
# digitized from the pixels of the figure in the MinAtar repository
# (github.com/kenjyoung/MinAtar, img/learning_curves.gif): for each env step count, the
# median row of the DQN curve's pixels within +-3 columns, mapped through the axis ticks. One
# pixel is 0.04 return units on Breakout and 0.45 on Space Invaders; the curves' own spread
# across seeds is drawn there as a band a few pixels wide. Training returns at epsilon 0.1, so
# they compare with the training curve, not the greedy eval.
PUBLISHED_DQN = {
    "breakout": {100_000: 4.3, 250_000: 6.6, 500_000: 8.3, 1_000_000: 9.2, 2_000_000: 9.6,
                 3_000_000: 9.9, 4_000_000: 9.9, 5_000_000: 10.0},
    "space_invaders": {100_000: 15.8, 250_000: 21.9, 500_000: 27.7, 1_000_000: 32.9,
                       2_000_000: 41.0, 3_000_000: 43.7, 4_000_000: 43.7, 5_000_000: 43.3},
}


def published_at(game: str, env_steps: int) -> float | None:
    """The published DQN training return at `env_steps`, linear between the digitized points
    (`PUBLISHED_DQN`); None outside them (the curve below 100k steps is too steep to read)."""
    points = PUBLISHED_DQN.get(game)
    if not points or not min(points) <= env_steps <= max(points):
        return None
    steps = sorted(points)
    return float(np.interp(env_steps, steps, [points[k] for k in steps]))


FIELDS = ("game", "variant", "budget", "seeds", "env_steps", "final_eval_iqm",
          "final_eval_ci_low", "final_eval_ci_high", "final_train_iqm", "final_train_ci_low",
          "final_train_ci_high", "per_minus_uniform_eval_iqm", "diff_ci_low", "diff_ci_high",
          "random_policy_return", "published_dqn_train_return", "wall_s")


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--games", nargs="+", choices=sorted(GAMES),
                   default=["breakout", "space_invaders"])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", choices=sorted(BUDGETS), default="cpu")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a further config override, for both variants (e.g. a smoke test)")
    p.add_argument("--out", type=Path, default=OUT, help=f"default {OUT}")
    p.add_argument("--work", type=Path, default=None,
                   help="keep the runs in WORK/<budget>/<game>-<variant>/ (default: a temporary "
                        "directory): a run there with a checkpoint is resumed, a finished one "
                        "is read, not rerun")
    return p.parse_args()


def run_variant(game: str, variant: str, args, work: Path) -> dict:
    cfg = load_config(CONFIG, [f"env.name={GAMES[game]}", f"seeds={args.seeds}",
                               "log.progress=false", *BUDGETS[args.budget], *args.overrides,
                               *VARIANTS[variant]])
    run_dir = work / f"{game}-{variant}"
    summary = train(cfg, run_dir=run_dir, progress=False,
                    resume=latest_checkpoint(run_dir) is not None)
    # Every session's wall time, compilation included, when the run was resumed or read back
    # finished (the summary carries the total over sessions).
    wall = summary["wall_s_total"]
    dirs = [run_dir / f"seed-{r['seed']}" for r in summary["per_seed"]]
    if len(dirs) == 1:
        dirs = [run_dir]
    evals = [read_eval_rows(d) for d in dirs]
    logs = [read_episodes(d) for d in dirs]
    window = cfg.log.return_window
    grid = np.linspace(0, summary["env_steps"], 101)[1:].astype(np.int64)
    return {
        "finals": np.array([r["final_eval_return"] for r in summary["per_seed"]]),
        "train_finals": np.array([np.mean(r[-window:]) for _, r in logs]),
        "eval_steps": np.array([r["env_steps"] for r in evals[0]]),
        "eval_table": np.array([[r["eval_return"] for r in e] for e in evals]),  # (S, T)
        "curve": aggregate_curve(logs, window, grid), "window": window,
        "env_steps": summary["env_steps"], "wall_s": wall, "seeds": len(dirs),
    }


def random_return(game: str, episodes: int = 64, seed: int = 0) -> float:
    """Mean return of the uniformly random policy: the first episode of each of `episodes`
    env copies (episodes end within the env's 1000 or 2500 step limit)."""
    env = envs.make_env(GAMES[game], episodes)
    limit = env.spec.max_episode_steps

    def run(key):
        state, _ = env.reset(key)

        def step(carry, k):
            state, ended, returns = carry
            k_act, k_env = jax.random.split(k)
            state, out = env.step(state, random_actions(env.spec, k_act), k_env)
            returns = jnp.where(out.completed & ~ended, out.completed_return, returns)
            return (state, ended | out.completed, returns), None

        init = (state, jnp.zeros(episodes, bool), jnp.zeros(episodes, jnp.float32))
        return jax.lax.scan(step, init, jax.random.split(key, limit))[0][2]

    return float(np.mean(jax.jit(run)(jax.random.PRNGKey(seed))))


def iqm_difference_ci(a, b, reps: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of IQM(a) - IQM(b), seeds resampled within each."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    da = iqm(a[rng.integers(0, len(a), (reps, len(a)))], axis=1)
    db = iqm(b[rng.integers(0, len(b), (reps, len(b)))], axis=1)
    return float(np.percentile(da - db, 2.5)), float(np.percentile(da - db, 97.5))


def plot_game(out: Path, game: str, results: dict, budget: str) -> None:
    fig = Figure(figsize=(10, 4), dpi=110)
    train_ax, eval_ax = fig.subplots(1, 2)
    for i, (variant, r) in enumerate(results.items()):
        c = r["curve"]
        train_ax.plot(c["env_steps"], c["iqm"], color=f"C{i}", label=f"{variant}: IQM")
        train_ax.fill_between(c["env_steps"], c["iqm_ci_low"], c["iqm_ci_high"],
                              color=f"C{i}", alpha=0.2)
        rows = [summarize(r["eval_table"][:, j]) for j in range(len(r["eval_steps"]))]
        eval_ax.errorbar(r["eval_steps"], [x["iqm"] for x in rows],
                         yerr=[[x["iqm"] - x["iqm_ci_low"] for x in rows],
                               [x["iqm_ci_high"] - x["iqm"] for x in rows]],
                         fmt="o-", color=f"C{i}", capsize=3, label=f"{variant}: IQM, 95% CI")
    published = {k: v for k, v in PUBLISHED_DQN.get(game, {}).items() if k <= r["env_steps"]}
    if published:
        train_ax.plot(list(published), list(published.values()), "k--", marker="s",
                      markersize=3, label="published DQN (Young & Tian 2019), digitized")
    train_ax.set_title(f"{game}: training return (mean of last {r['window']} episodes)")
    eval_ax.set_title(f"{game}: eval return (greedy, 10 episodes per seed)")
    for ax in (train_ax, eval_ax):
        ax.set_xlabel("environment steps (per seed)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"DQN, PER vs uniform replay, MinAtar ({budget} budget, "
                 f"{r['seeds']} seeds)", fontsize=9)
    fig.tight_layout()
    stem = game if budget == "cpu" else f"{game}_{budget}"  # one figure per budget
    fig.savefig(out / f"{stem}.png")
    with (out / f"{stem}_curves.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("kind", "variant", "env_steps", "iqm", "iqm_ci_low", "iqm_ci_high"))
        for variant, r in results.items():
            c = r["curve"]
            for j in range(len(c["env_steps"])):
                w.writerow(("train", variant, int(c["env_steps"][j]), f"{c['iqm'][j]:.4g}",
                            f"{c['iqm_ci_low'][j]:.4g}", f"{c['iqm_ci_high'][j]:.4g}"))
            for j, step in enumerate(r["eval_steps"]):
                s = summarize(r["eval_table"][:, j])
                w.writerow(("eval", variant, int(step), f"{s['iqm']:.4g}",
                            f"{s['iqm_ci_low']:.4g}", f"{s['iqm_ci_high']:.4g}"))


def rows_of(game: str, results: dict, budget: str, random: float) -> list[dict]:
    low, high = iqm_difference_ci(results["per"]["finals"], results["uniform"]["finals"])
    diff = float(iqm(results["per"]["finals"]) - iqm(results["uniform"]["finals"]))
    rows = []
    for variant, r in results.items():
        ev, tr = bootstrap_ci(r["finals"]), bootstrap_ci(r["train_finals"])
        rows.append({
            "game": game, "variant": variant, "budget": budget, "seeds": r["seeds"],
            "env_steps": r["env_steps"], "final_eval_iqm": round(float(iqm(r["finals"])), 2),
            "final_eval_ci_low": round(ev[0], 2), "final_eval_ci_high": round(ev[1], 2),
            "final_train_iqm": round(float(iqm(r["train_finals"])), 2),
            "final_train_ci_low": round(tr[0], 2), "final_train_ci_high": round(tr[1], 2),
            "per_minus_uniform_eval_iqm": round(diff, 2), "diff_ci_low": round(low, 2),
            "diff_ci_high": round(high, 2), "random_policy_return": round(random, 2),
            "published_dqn_train_return": (None if (x := published_at(game, r["env_steps"]))
                                           is None else round(x, 1)),
            "wall_s": round(r["wall_s"], 1),
        })
    return rows


def write_tables(out: Path, rows: list[dict]) -> None:
    path = out / "minatar_per.csv"
    old = []
    if path.exists():  # keep rows of games not re-run this time
        redone = {(r["game"], r["budget"]) for r in rows}
        old = [r for r in csv.DictReader(path.read_text().splitlines())
               if (r["game"], r["budget"]) not in redone]
    rows = old + rows
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "# DQN on MinAtar: prioritized replay (alpha 0.6) against uniform replay (alpha 0)",
        "",
        f"{cpu_name()}, {os.cpu_count()} cores, jax {jax.__version__}. Regenerate: "
        "`nice -n 19 python experiments/learning/minatar_per.py --games GAME` (the `cpu` "
        "rows; one game per invocation keeps each under ten minutes here), with `--budget "
        "cpu-100k` the 110k-step rows, and `--budget cpu-500k --games breakout space_invaders "
        "--work DIR` the 509k-step rows (about 75 min for the four variants here; run again, "
        "it resumes from DIR's checkpoints); `--budget published` on a GPU.",
        "",
        "Final eval: the greedy policy on 10 fresh episodes per seed at the end of the budget; "
        "final train: the mean of the last 20 training episodes (epsilon 0.1); IQM over seeds "
        "with 95% bootstrap intervals; PER - uniform resamples seeds within each variant. "
        "Random policy: the mean return of 64 episodes of uniformly random actions. Wall "
        "seconds include compilation and were measured under `nice -n 19` on a shared "
        "machine. Published DQN: the training return of Young & Tian (2019) at the same env "
        "steps, digitized from the pixels of their learning-curve figure (`PUBLISHED_DQN` "
        "in the script says how), compared with the final train IQM; none below 100k steps, "
        "where their curve is too steep to read. Obando-Ceron & Castro (2021) publish no "
        "data this script could read, so it is not drawn.",
        "",
        "| game | variant | budget | seeds | env steps | final eval IQM [95% CI] | final "
        "train IQM [95% CI] | PER - uniform, eval IQM [95% CI] | random policy | published "
        "DQN, train | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['game']} | {r['variant']} | {r['budget']} | {r['seeds']} | "
            f"{int(r['env_steps']):,} | {r['final_eval_iqm']} [{r['final_eval_ci_low']}, "
            f"{r['final_eval_ci_high']}] | {r['final_train_iqm']} [{r['final_train_ci_low']}, "
            f"{r['final_train_ci_high']}] | {r['per_minus_uniform_eval_iqm']} "
            f"[{r['diff_ci_low']}, {r['diff_ci_high']}] | {r.get('random_policy_return', '')} | "
            f"{r.get('published_dqn_train_return') or '-'} | {r['wall_s']} |")
    (out / "minatar_per.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    enable_compile_cache()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) if args.work is None else args.work / args.budget
        for game in args.games:
            results = {v: run_variant(game, v, args, work) for v in VARIANTS}
            plot_game(args.out, game, results, args.budget)
            rows = rows_of(game, results, args.budget, random_return(game))
            for row in rows:
                print(row, flush=True)
            write_tables(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
