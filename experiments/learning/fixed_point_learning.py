"""The fixed-point learner (hrl.fixed_point, `agent.numerics: fixed`) over 10 vmapped seeds,
beside the float32 learner, on the float learner's configs.

    .venv/bin/python experiments/learning/fixed_point_learning.py [--configs dqn_cartpole ...]
                [--seeds 10] [--variant NAME] [--report-only]

Each variant is a config plus the overrides that select the fixed-point learner (its formats
and its optimizer, momentum SGD; see VARIANTS). Runs train into experiments/results/
fixed_point/runs/<variant>/ (not committed: the per-seed logs are regenerated), and the
report reads them back:

* <variant>.csv / .png: the aggregate curve (median and IQR of the last-10-episode return over
  seeds) beside the float32 learner's curve of the same config
  (experiments/results/learning/<config>.csv, from learning_quality.py);
* <variant>_seeds.csv: per seed, env steps to the bar, final return, final greedy eval return,
  whether it ends at the bar;
* fixed_point_learning.{csv,md}: one row per variant with the issue's criteria: final eval
  at the bar on >= 8/10 seeds, and the median env steps to the bar within 1.5x the float
  learner's (from learning_quality.csv).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

from hrl.config import load_config
from hrl.runtime import train
from hrl.runtime.aggregate import aggregate_curve, first_solved, plot_curves, write_curve_csv
from hrl.runtime.metrics import read_episodes, read_eval_rows

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "fixed_point"
FLOAT = ROOT / "results" / "learning"

FIXED = ["agent.numerics=fixed", "agent.optimizer=sgd", "agent.max_grad_norm=null"]
# Adam (the fixed-point optimizer unit's, no bias correction) at the float configs' rates; the
# fixed-point learner has no global-norm clipping.
FIXED_ADAM = ["agent.numerics=fixed", "agent.optimizer=adam", "agent.max_grad_norm=null"]
# variant -> (config, overrides). The formats are the defaults of agent.fixed_point unless a
# variant names others.
VARIANTS = {
    # The float32 learner with the fixed-point learner's algorithm (Adam without bias
    # correction, no clipping): what the arithmetic alone costs is the difference to it.
    "dqn_cartpole_float_adam_uncorrected": ("dqn_cartpole", [
        "agent.optimizer=adam_uncorrected", "agent.max_grad_norm=null"]),
    # ... and the float learner's Adam (bias-corrected) without clipping: which of the two
    # differences from the float config matters.
    "dqn_cartpole_float_adam_noclip": ("dqn_cartpole", ["agent.max_grad_norm=null"]),
    "dqn_cartpole_fixed_adam": ("dqn_cartpole", FIXED_ADAM),
    "ddpg_pendulum_fixed_adam": ("ddpg_pendulum", FIXED_ADAM),
    # The formats of one algorithm on the other (agent.fixed_point.second and rsqrt default per
    # algorithm, hrl.fixed_point.formats.SECOND_DEFAULT): DDPG with DQN's second moment (up to
    # 256, so |grad| <= 16), which its batch-summed critic gradients saturate; DQN with DDPG's
    # (six fewer fractional bits, so a floor of about 0.17 on the root).
    "ddpg_pendulum_fixed_adam_v20": ("ddpg_pendulum", [
        *FIXED_ADAM, "agent.fixed_point.second=[29,20]", "agent.fixed_point.rsqrt=[24,12]"]),
    # DQN with a coarser second moment than its default Q29.22: a floor (an epsilon on the
    # root) of about 0.022 in place of 0.011, about a quarter of DQN's typical batch-summed
    # gradient (the float learner's epsilon is negligible against its gradients).
    "dqn_cartpole_fixed_adam_v20": ("dqn_cartpole", [
        *FIXED_ADAM, "agent.fixed_point.second=[29,20]"]),
    "dqn_cartpole_fixed_adam_v14": ("dqn_cartpole", [
        *FIXED_ADAM, "agent.fixed_point.second=[29,14]", "agent.fixed_point.rsqrt=[24,18]"]),
    # DQN with 18-bit operand weights (Q18.14 in place of Q16.12): the DSP48E2's multiplier
    # is 27 x 18, so an 18-bit weight against a 16-bit activation or an 18-bit delta costs no
    # second DSP; four more fractional bits on every weight the array reads.
    "dqn_cartpole_fixed_adam_w18": ("dqn_cartpole", [
        *FIXED_ADAM, "agent.fixed_point.weight=[18,14]"]),
    "dqn_cartpole_fixed": ("dqn_cartpole", [*FIXED, "agent.learning_rate=0.005",
                                            "agent.fixed_point.lr_frac=28"]),
    "dqn_cartpole_fixed_lr2e-3": ("dqn_cartpole", [*FIXED, "agent.learning_rate=0.002"]),
    "dqn_cartpole_fixed_w12": ("dqn_cartpole", [
        *FIXED, "agent.learning_rate=0.005", "agent.fixed_point.act=[12,6]",
        "agent.fixed_point.weight=[12,9]"]),
    "ddpg_pendulum_fixed": ("ddpg_pendulum", [
        *FIXED, "agent.actor_learning_rate=0.0005", "agent.critic_learning_rate=0.002"]),
    "ddpg_pendulum_fixed_lr1e-3": ("ddpg_pendulum", [
        *FIXED, "agent.actor_learning_rate=0.0002", "agent.critic_learning_rate=0.001"]),
}

FIELDS = ("variant", "config", "seeds", "solved", "ended_at_bar", "threshold", "env_steps",
          "budget_env_steps", "complete", "median_steps_to_solved",
          "float_median_steps_to_solved", "steps_ratio", "final_eval_median",
          "recent_return_median", "saturations_per_step", "wall_s", "overrides", "meets_issue")


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", nargs="+", default=["dqn_cartpole_fixed_adam",
                                                     "ddpg_pendulum_fixed_adam"])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--report-only", action="store_true",
                   help="read the runs already under results/fixed_point/runs")
    return p.parse_args()


def run(variant: str, seeds: int) -> None:
    name, overrides = VARIANTS[variant]
    base = [f"seeds={seeds}", "log.progress=false", *overrides]
    cfg = load_config(ROOT / "configs" / f"{name}.yaml", base)
    cfg = load_config(ROOT / "configs" / f"{name}.yaml",
                      [*base, f"train.eval_every={cfg.train.total_env_steps}"])
    t0 = time.perf_counter()
    train(cfg, run_dir=OUT / "runs" / variant, progress=True)
    (OUT / "runs" / variant / "wall_s.txt").write_text(f"{time.perf_counter() - t0:.1f}\n")


def _float_row(config: str) -> dict:
    path = FLOAT / "learning_quality.csv"
    for r in csv.DictReader(path.read_text().splitlines()):
        if r["config"] == config:
            return r
    return {}


def _saturations(seed_dir: Path) -> float:
    """Mean saturation count per SGD step over the run's logged chunks."""
    path = seed_dir / "metrics.csv"
    rows = list(csv.DictReader(path.read_text().splitlines())) if path.exists() else []
    values = [float(r["saturations"]) for r in rows if r.get("saturations") not in (None, "")]
    return float(np.mean(values)) if values else float("nan")


def report(variant: str) -> dict:
    """The variant's curve, seeds and row, from the per-seed logs under runs/<variant>/. A run
    still going (or stopped) is reported as far as its logs reach: `env_steps` says where,
    `complete` whether the budget was trained."""
    name, overrides = VARIANTS[variant]
    run_dir = OUT / "runs" / variant
    cfg = load_config(ROOT / "configs" / f"{name}.yaml", overrides)
    threshold = cfg.train.solved_return
    window = cfg.log.return_window
    seed_dirs = sorted(run_dir.glob("seed-*"), key=lambda d: int(d.name.split("-")[1]))
    logs = [read_episodes(d) for d in seed_dirs]
    complete = (run_dir / "summary.json").exists()
    reached_steps = int(min(int(s[-1]) if len(s) else 0 for s, _ in logs))
    grid = np.linspace(0, max(reached_steps, 1), 201)[1:].astype(np.int64)
    curve = aggregate_curve(logs, window, grid)
    write_curve_csv(OUT / f"{variant}.csv", curve)
    kind = "fixed point" if cfg.agent.numerics == "fixed" else f"float32 {cfg.agent.optimizer}"
    curves = {f"{kind}, {len(seed_dirs)} seeds": curve}
    float_csv = FLOAT / f"{name}.csv"
    if float_csv.exists():
        rows = list(csv.DictReader(float_csv.read_text().splitlines()))
        curves["float32 (learning_quality.py)"] = {
            k: np.asarray([float(r[k]) if r[k] != "" else np.nan for r in rows])
            for k in rows[0]}
    state = "" if complete else f" (stopped at {reached_steps:,} of {cfg.train.total_env_steps:,})"
    plot_curves(OUT / f"{variant}.png", curves, f"{variant} beside float32{state}",
                window, float(threshold))
    per_seed = []
    for d, (steps, returns) in zip(seed_dirs, logs, strict=True):
        solved = first_solved(steps, returns, window, threshold)
        evals = read_eval_rows(d)
        final_eval = evals[-1]["eval_return"] if evals else None
        per_seed.append({
            "seed": int(d.name.split("-")[1]), "steps_to_solved": solved[0] if solved else None,
            "recent_return": float(np.mean(returns[-window:])) if len(returns) else None,
            "final_eval_return": final_eval,
            "ends_at_bar": final_eval is not None and final_eval >= threshold,
            "saturations_per_step": _saturations(d)})
    with (OUT / f"{variant}_seeds.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(per_seed[0]))
        w.writeheader()
        w.writerows(per_seed)
    reached = [r["steps_to_solved"] for r in per_seed if r["steps_to_solved"] is not None]
    fl = _float_row(name)
    med = int(np.median(reached)) if reached else None
    fmed = int(fl["median_steps_to_solved"]) if fl.get("median_steps_to_solved") else None
    ratio = round(med / fmed, 2) if med and fmed else None
    evals = [r["final_eval_return"] for r in per_seed if r["final_eval_return"] is not None]
    ended = sum(r["ends_at_bar"] for r in per_seed)
    wall = (run_dir / "wall_s.txt").read_text().strip() if (run_dir / "wall_s.txt").exists() \
        else ""
    return {
        "variant": variant, "config": name, "seeds": len(per_seed), "solved": len(reached),
        "ended_at_bar": ended, "threshold": threshold, "env_steps": reached_steps,
        "budget_env_steps": cfg.train.total_env_steps, "complete": complete,
        "median_steps_to_solved": med or "", "float_median_steps_to_solved": fmed or "",
        "steps_ratio": ratio or "",
        "final_eval_median": round(float(np.median(evals)), 1) if evals else "",
        "recent_return_median": round(float(np.median(
            [r["recent_return"] for r in per_seed if r["recent_return"] is not None])), 1),
        "saturations_per_step": round(float(np.nanmean(
            [r["saturations_per_step"] for r in per_seed])), 3),
        "wall_s": wall, "overrides": " ".join(overrides),
        "meets_issue": bool(complete and ended >= 0.8 * len(per_seed) and ratio is not None
                            and ratio <= 1.5),
    }


READING = """
## How to read it

- `*_fixed_adam`: the fixed-point learner as configured by default (`agent.numerics=fixed`,
  Adam with the host's bias correction, the algorithm's formats), at the float configs'
  rates. It has no global-norm clipping, so `agent.max_grad_norm=null`.
- `*_v14`, `*_v20`: the second moment as Q29.14 (with the root as Q24.18) or Q29.20 (root
  Q24.12). The defaults are Q29.22 for DQN and Q29.14 for DDPG: why the default differs per
  algorithm. Runs made before the defaults changed are listed under the name of the config
  they ran (the same overrides): `ddpg_pendulum_fixed_adam` ran as
  `ddpg_pendulum_fixed_adam_v14`, `dqn_cartpole_fixed_adam` as
  `dqn_cartpole_fixed_adam_v22` (`agent.fixed_point.second=[29,22]`), and the two `_v20`
  rows as the defaults of their time.
- `dqn_cartpole_fixed_adam_w18`: the operand weights as Q18.14 in place of Q16.12 (free on
  a DSP48's 27 x 18 multiplier). It ended at the bar on 9/10 seeds where 16 bits ended on
  7/10, so Q18.14 is now DQN's default (`hrl.fixed_point.formats.WEIGHT_DEFAULT`; DDPG keeps
  Q16.12, with which it met the bar): the other DQN rows ran with Q16.12 weights
  (`agent.fixed_point.weight=[16,12]`), and the `_w18` row is the default DQN learner.
- `dqn_cartpole_float_adam_noclip`: a float32 control, the float learner's Adam without
  clipping: what the fixed-point learner should match, the arithmetic being the only
  difference. `dqn_cartpole_float_adam_uncorrected`: float32 with the same Adam without its bias
  correction (`agent.optimizer=adam_uncorrected`), the algorithm of the module's unit alone.
- The momentum-SGD rows (`dqn_cartpole_fixed`, `dqn_cartpole_fixed_lr2e-3`,
  `ddpg_pendulum_fixed`) are an earlier session's runs, stopped part way (`complete` False);
  kept as they ran. A float32 control with plain SGD (`hrl train
  experiments/configs/dqn_cartpole.yaml --seeds 4 --set agent.optimizer=sgd --set
  agent.learning_rate=0.02 --set agent.max_grad_norm=null --set train.total_env_steps=15360`,
  `float32_sgd_control.csv` and `.png`) collapsed as they did: the optimizer, not the words,
  failed there, which is why the learner's optimizer is now Adam.
"""


def write_tables(rows: list[dict]) -> None:
    path = OUT / "fixed_point_learning.csv"
    old = []
    if path.exists():
        names = {r["variant"] for r in rows}
        old = [r for r in csv.DictReader(path.read_text().splitlines())
               if r["variant"] not in names]
    rows = old + rows
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# The fixed-point learner beside float32",
        "",
        f"{os.cpu_count()} cores. Regenerate: `python experiments/learning/"
        "fixed_point_learning.py --variants <names>` (runs, then this table); the float32 "
        "columns are experiments/results/learning/learning_quality.csv. The issue's bar: final "
        "greedy eval at the bar on >= 8/10 seeds, median env steps to the bar within 1.5x the "
        "float learner's.",
        "",
        "| variant | env steps trained / budget | solved | end at the bar (eval) | median steps "
        "to bar | float32 median | ratio | final eval median | last-10 return median | "
        "saturations / SGD step | meets the issue | wall s | overrides |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {int(r['env_steps']):,} / {int(r['budget_env_steps']):,} | "
            f"{r['solved']}/{r['seeds']} | {r['ended_at_bar']}/{r['seeds']} "
            f"| {r['median_steps_to_solved']} | {r['float_median_steps_to_solved']} | "
            f"{r['steps_ratio']} | {r['final_eval_median']} | {r['recent_return_median']} | "
            f"{r['saturations_per_step']} | "
            f"{r['meets_issue']} | {r['wall_s']} | `{r['overrides']}` |")
    (OUT / "fixed_point_learning.md").write_text("\n".join(lines) + "\n" + READING)


def main() -> int:
    args = _parse()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for variant in args.variants:
        if not args.report_only:
            run(variant, args.seeds)
        rows.append(report(variant))
        print(rows[-1], flush=True)
        write_tables([rows[-1]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
