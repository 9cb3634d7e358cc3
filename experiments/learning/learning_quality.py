"""Learning quality over seeds: how many of 10 seeds reach each task's bar within its budget.

    .venv/bin/python experiments/learning/learning_quality.py [--configs dqn_cartpole ...]
                                                     [--seeds 10]
                                                     [--isa avx2]
                                                     [--set KEY=VALUE --tag +NAME]

Each config of experiments/configs runs `--seeds` seeds (vmapped in one jitted program when
its loop is fused, one after another otherwise) to its full budget. Per config:

* success: seeds whose mean return of the last 10 episodes reached `train.solved_return` at
  some episode end (`hrl.runtime.aggregate.first_solved`, the rule the demo and the summary
  use);
* final eval return: the greedy (DQN) or deterministic (DDPG) policy at the end of the budget
  on 10 fresh episodes per seed (`train.eval_every`), IQM over seeds with a 95% bootstrap
  interval, and the seeds whose final eval return is at or past the bar ("end at the bar");
* env steps to the bar (median, 90th percentile) and wall seconds to it (median; wall of the
  whole S-seed program, compilation included);
* final return (mean of the last 10 episodes): IQM with a 95% bootstrap interval;
* throughput: env steps/s summed over the S seeds beside one seed alone (steady chunks only),
  measured in the same invocation.

`--isa avx2` sets XLA_FLAGS=--xla_cpu_max_isa=AVX2 (before JAX starts), so XLA:CPU compiles as
for a CPU without AVX-512 and the learning is checked on floats another machine would give.

Writes experiments/results/learning/learning_quality[_avx2].{csv,md}, and per config the
aggregate curve <config>[_avx2].{csv,png}, every seed's episodes <config>[_avx2]_episodes.csv and
every seed's outcome (steps to the bar, final return, final eval return, whether it ends at the
bar) <config>[_avx2]_seeds.csv.
"""

from __future__ import annotations

import argparse
import os
import sys

ISA_FLAG = "--xla_cpu_max_isa=AVX2"


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", nargs="+", default=[
        "dqn_cartpole", "dqn_cartpole_gymnasium", "dqn_acrobot", "ddpg_pendulum",
        "ddpg_brax_inverted_pendulum",
    ])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--isa", choices=["default", "avx2"], default="default")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for every config run (a remedy under test)")
    p.add_argument("--tag", default="", help="appended to each row's config name (and file "
                   "names) when --set changes the configs, e.g. +lr_decay")
    return p.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None and ARGS.isa == "avx2":  # must precede the first JAX import
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + ISA_FLAG).strip()

import csv  # noqa: E402
import dataclasses  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from hrl.config import load_config  # noqa: E402
from hrl.mapping.profile import cpu_name  # noqa: E402
from hrl.runtime import build, initial_state, train  # noqa: E402
from hrl.runtime.aggregate import aggregate_curve, plot_curves, write_curve_csv  # noqa: E402
from hrl.runtime.metrics import read_episodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "learning"

# Published results for the same tasks, for the README's table (sources in its footnotes).
REFERENCE = {
    "dqn_cartpole": "SB3 zoo DQN: 500 at 50k steps; CleanRL DQN: ~500 at 500k",
    "dqn_cartpole_gymnasium": "SB3 zoo DQN: 500 at 50k steps; CleanRL DQN: ~500 at 500k",
    "dqn_acrobot": "SB3 zoo DQN: -76 at 100k steps",
    "ddpg_pendulum": "SB3 zoo DDPG: -150 at 20k steps",
    "ddpg_brax_inverted_pendulum": "SB3 zoo TD3 (PyBullet InvertedPendulum): 1000 at 300k",
}

FIELDS = (
    "config", "isa", "seeds", "solved", "threshold", "budget_env_steps",
    "median_steps_to_solved", "p90_steps_to_solved", "median_wall_s_to_solved",
    "final_iqm", "final_iqm_ci_low", "final_iqm_ci_high", "final_median",
    "final_eval_iqm", "final_eval_ci_low", "final_eval_ci_high", "ended_at_bar",
    "env_steps_per_s_seeds", "env_steps_per_s_one_seed", "seeds_speedup", "wall_s", "fused",
    "reference",
)


def steady_rate(seed_dir: Path) -> float:
    """Median env steps/s of one run's chunks after the first (compilation) chunk."""
    rows = list(csv.DictReader((seed_dir / "metrics.csv").read_text().splitlines()))
    rates = [float(r["chunk_env_steps_per_s"]) for r in rows[1:]] or [
        float(r["chunk_env_steps_per_s"]) for r in rows
    ]
    return float(np.median(rates))


def one_seed_rate(cfg, chunks: int = 3) -> float:
    """Env steps/s of seed `cfg.seed` alone in the fused loop: compile, then time chunks."""
    built = build(dataclasses.replace(cfg, seeds=1))
    state = initial_state(built)
    n = max(1, cfg.train.chunk_env_steps // built.schedule.env_steps_per_iter)
    state, _ = built.loop.run(state, n)
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(chunks):
        state, _ = built.loop.run(state, n)
    jax.block_until_ready(state)
    return chunks * n * built.schedule.env_steps_per_iter / (time.perf_counter() - start)


def evaluate(name: str, seeds: int, isa: str, work: Path, overrides=(), tag: str = "") -> dict:
    base = [f"seeds={seeds}", "log.progress=false", *overrides]
    cfg = load_config(ROOT / "configs" / f"{name}.yaml", base)
    # One evaluation, at the end of the budget (the first chunk end at or past it).
    cfg = load_config(ROOT / "configs" / f"{name}.yaml",
                      [*base, f"train.eval_every={cfg.train.total_env_steps}"])
    name = name + tag
    threshold = cfg.train.solved_return
    if threshold is None:
        raise SystemExit(f"{name}: the config sets no train.solved_return")
    t0 = time.perf_counter()
    summary = train(cfg, run_dir=work / name, progress=True)
    wall = time.perf_counter() - t0
    per_seed = summary["per_seed"]
    seed_dirs = [work / name / f"seed-{r['seed']}" for r in per_seed]
    if len(per_seed) == 1:
        seed_dirs = [work / name]
    reached = [r["steps_to_solved"] for r in per_seed if r["steps_to_solved"] is not None]
    walls = [r["wall_s_to_solved"] for r in per_seed if r["wall_s_to_solved"] is not None]
    summed = float(np.mean([steady_rate(d) for d in seed_dirs]))
    if summary["fused"]:
        summed *= len(per_seed)
        single = one_seed_rate(cfg)
    else:  # one after another: a seed alone is exactly what ran
        single = summed
    suffix = "" if isa == "default" else f"_{isa}"
    logs = [read_episodes(d) for d in seed_dirs]
    grid = np.linspace(0, summary["env_steps"], 201)[1:].astype(np.int64)
    curve = aggregate_curve(logs, cfg.log.return_window, grid)
    write_curve_csv(OUT / f"{name}{suffix}.csv", curve)
    plot_curves(OUT / f"{name}{suffix}.png", {f"{len(per_seed)} seeds": curve},
                f"{cfg.algo.upper()} + PER, {cfg.env.name} ({isa} ISA)",
                cfg.log.return_window, threshold)
    with (OUT / f"{name}{suffix}_episodes.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("seed", "env_steps", "episode_return"))
        for row, (steps, returns) in zip(per_seed, logs, strict=True):
            writer.writerows((row["seed"], int(s), f"{float(r):.6g}")
                             for s, r in zip(steps, returns, strict=True))
    with (OUT / f"{name}{suffix}_seeds.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("seed", "steps_to_solved", "final_return", "final_eval_return",
                         "ends_at_bar"))
        writer.writerows((r["seed"], _shown(r["steps_to_solved"]), _g(r["recent_return"]),
                          _g(r["final_eval_return"]), int(r["ends_at_bar"])) for r in per_seed)
    final = summary["final_return"]
    final_eval = summary["final_eval_return"]
    return {
        "config": name, "isa": isa, "seeds": len(per_seed), "solved": len(reached),
        "threshold": threshold, "budget_env_steps": cfg.train.total_env_steps,
        "median_steps_to_solved": int(np.median(reached)) if reached else "",
        "p90_steps_to_solved": int(np.percentile(reached, 90)) if reached else "",
        "median_wall_s_to_solved": round(float(np.median(walls)), 1) if walls else "",
        "final_iqm": round(final["iqm"], 1), "final_iqm_ci_low": round(final["iqm_ci_low"], 1),
        "final_iqm_ci_high": round(final["iqm_ci_high"], 1),
        "final_median": round(final["median"], 1),
        "final_eval_iqm": round(final_eval["iqm"], 1),
        "final_eval_ci_low": round(final_eval["iqm_ci_low"], 1),
        "final_eval_ci_high": round(final_eval["iqm_ci_high"], 1),
        "ended_at_bar": summary["seeds_ending_at_bar"],
        "env_steps_per_s_seeds": round(summed), "env_steps_per_s_one_seed": round(single),
        "seeds_speedup": round(summed / single, 2), "wall_s": round(wall, 1),
        "fused": summary["fused"],
        "reference": REFERENCE.get(name.removesuffix(tag) if tag else name, ""),
    }


def _shown(value) -> str:
    """A table cell; '-' for a row written before the column existed."""
    return "-" if value in (None, "") else str(value)


def _g(value) -> str:
    """A number to 6 significant digits; '' for none (fewer episodes than the window)."""
    return "" if value is None else f"{float(value):.6g}"


def write_tables(rows: list[dict], isa: str) -> None:
    suffix = "" if isa == "default" else f"_{isa}"
    path = OUT / f"learning_quality{suffix}.csv"
    old = []
    if path.exists():  # keep rows of configs not re-run this time
        names = {r["config"] for r in rows}
        old = [r for r in csv.DictReader(path.read_text().splitlines())
               if r["config"] not in names]
    rows = old + rows
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        f"# Learning quality over seeds ({isa} ISA)",
        "",
        f"{cpu_name()}, {os.cpu_count()} cores, jax "
        f"{jax.__version__}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}. Regenerate: "
        f"`python experiments/learning/learning_quality.py{' --isa avx2' if suffix else ''}`.",
        "",
        "| config | solved | end at the bar (eval) | bar | budget | median steps to bar | p90 "
        "| median wall s to bar | final IQM [95% CI] | final eval IQM [95% CI] "
        "| env steps/s: seeds summed / one seed (ratio) | wall s (all seeds) | published |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['solved']}/{r['seeds']} | "
            f"{_shown(r.get('ended_at_bar'))}/{r['seeds']} | {float(r['threshold']):g} | "
            f"{int(r['budget_env_steps']):,} | {r['median_steps_to_solved']} | "
            f"{r['p90_steps_to_solved']} | {r['median_wall_s_to_solved']} | "
            f"{r['final_iqm']} [{r['final_iqm_ci_low']}, {r['final_iqm_ci_high']}] | "
            f"{_shown(r.get('final_eval_iqm'))} [{_shown(r.get('final_eval_ci_low'))}, "
            f"{_shown(r.get('final_eval_ci_high'))}] | "
            f"{int(float(r['env_steps_per_s_seeds'])):,} / "
            f"{int(float(r['env_steps_per_s_one_seed'])):,} ({r['seeds_speedup']}x) | "
            f"{_shown(r.get('wall_s'))} | {r['reference']} |"
        )
    (OUT / f"learning_quality{suffix}.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ARGS.configs:
            row = evaluate(name, ARGS.seeds, ARGS.isa, Path(tmp), ARGS.overrides, ARGS.tag)
            print(row, flush=True)
            rows.append(row)
            write_tables([rows[-1]], ARGS.isa)
    return 0


if __name__ == "__main__":
    sys.exit(main())
