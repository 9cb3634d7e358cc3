"""Learning is unchanged by data parallelism: the same config on 1 and on D devices, over seeds.

    .venv/bin/python experiments/learning/learning_devices.py [--config dqn_cartpole] [--seeds 8]
                                                     [--devices 2] [--set KEY=VALUE ...]

Runs the config (`--set` overrides applied to every run, by default the ones that let 2
devices split the actors evenly) with `--seeds` seeds vmapped in one program, three ways:
on one device (the fused loop), on D virtual CPU devices with global sharded sampling (the
default), and on D devices with local sampling. Same seeds, same schedule, same total env
steps; per way: seeds reaching the config's bar, final return (mean of the last 10
episodes) as IQM with a 95% bootstrap interval, and the median env steps to the bar.
Single runs are not bitwise comparable across device counts (other actors' keys, another
reduction order), so the comparison is over the seeds' distribution.

Writes experiments/results/scaling/learning_devices.{csv,md,png}.
"""

from __future__ import annotations

import argparse
import os
import sys

from hrl.runtime.cpu_backend import with_cpu_device_count

MAX_DEVICES = 8


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="dqn_cartpole")
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--set", dest="overrides", action="append",
                   default=None, metavar="KEY=VALUE")
    return p.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:  # virtual CPU devices must be asked for before JAX starts
    os.environ["XLA_FLAGS"] = with_cpu_device_count(os.environ.get("XLA_FLAGS", ""), ARGS.devices)

import csv  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from hrl.config import load_config  # noqa: E402
from hrl.mapping.profile import cpu_name  # noqa: E402
from hrl.runtime import train  # noqa: E402
from hrl.runtime.aggregate import aggregate_curve, plot_curves  # noqa: E402
from hrl.runtime.metrics import read_episodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]  # experiments/
OUT = ROOT / "results" / "scaling"
# dqn_cartpole has one actor; two (x 32 steps: the same 64 env steps per iteration) split
# evenly over 2 devices.
DEFAULT_SET = ["env.num_envs=2", "train.rollout_length=32"]


def evaluate(label: str, overrides: list[str], work: Path) -> tuple[dict, dict]:
    cfg = load_config(ROOT / "configs" / f"{ARGS.config}.yaml",
                      [f"seeds={ARGS.seeds}", "log.progress=false", *overrides])
    t0 = time.perf_counter()
    summary = train(cfg, run_dir=work / label, progress=True)
    wall = time.perf_counter() - t0
    per_seed = summary["per_seed"]
    reached = [r["steps_to_solved"] for r in per_seed if r["steps_to_solved"] is not None]
    final = summary["final_return"]
    logs = [read_episodes(work / label / f"seed-{r['seed']}") for r in per_seed]
    grid = np.linspace(0, summary["env_steps"], 201)[1:].astype(np.int64)
    row = {
        "run": label, "devices": cfg.train.devices, "sampling": cfg.replay.sampling,
        "seeds": len(per_seed), "solved": len(reached), "threshold": cfg.train.solved_return,
        "budget_env_steps": cfg.train.total_env_steps,
        "median_steps_to_solved": int(np.median(reached)) if reached else "",
        "final_iqm": round(final["iqm"], 1), "final_iqm_ci_low": round(final["iqm_ci_low"], 1),
        "final_iqm_ci_high": round(final["iqm_ci_high"], 1),
        "final_median": round(final["median"], 1), "wall_s": round(wall, 1),
        "params_agree": summary.get("params_agree", ""),
    }
    return row, aggregate_curve(logs, cfg.log.return_window, grid)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    base = DEFAULT_SET if ARGS.overrides is None else ARGS.overrides
    d = ARGS.devices
    ways = [("1 device", []),
            (f"{d} devices, global sampling", [f"train.devices={d}"]),
            (f"{d} devices, local sampling", [f"train.devices={d}", "replay.sampling=local"])]
    rows, curves = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in ways:
            row, curve = evaluate(label, [*base, *extra], Path(tmp))
            print(row, flush=True)
            rows.append(row)
            curves[label] = curve
    with (OUT / "learning_devices.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    threshold = rows[0]["threshold"]
    cfg_name = ARGS.config
    plot_curves(OUT / "learning_devices.png", curves,
                f"{cfg_name}: {ARGS.seeds} seeds on 1 and {d} devices", 10, threshold)
    lines = [
        f"# Learning on 1 and {d} devices ({cfg_name}, {ARGS.seeds} seeds)",
        "",
        f"{cpu_name()}, {os.cpu_count()} cores (the {d} devices "
        f"are virtual CPU devices sharing them), jax {jax.__version__}; overrides: "
        f"{' '.join(base) or 'none'}. Regenerate: "
        "`python experiments/learning/learning_devices.py`.",
        "",
        "| run | solved | bar | budget | median steps to bar | final IQM [95% CI] | median "
        "| wall s | parameters equal on every device |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['solved']}/{r['seeds']} | {float(r['threshold']):g} | "
            f"{int(r['budget_env_steps']):,} | {r['median_steps_to_solved']} | "
            f"{r['final_iqm']} [{r['final_iqm_ci_low']}, {r['final_iqm_ci_high']}] | "
            f"{r['final_median']} | {r['wall_s']} | {r['params_agree']} |")
    (OUT / "learning_devices.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
