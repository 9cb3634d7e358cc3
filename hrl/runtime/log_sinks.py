"""Optional metric writers beside metrics.csv: TensorBoard event files and Weights & Biases.

`make_sinks(log_cfg, seed_dir, ...)` returns the writers `log.tensorboard` and `log.wandb` ask
for; `MetricsLog` hands each of them every metrics row (scalars under `train/<column>` at the
row's env step) and every finished episode (`episode/return`, TensorBoard only: W&B keeps one
step counter per run and the chunk's row already carries the recent return).

TensorBoard: `tensorboardX` writes the event files (a dependency already, through brax; no
TensorFlow). W&B: the `wandb` package, an optional extra (`pip install -e '.[wandb]'`); its own
environment variables apply (`WANDB_MODE=offline` keeps the run under RUN_DIR/wandb/). A sink
costs one call per scalar per chunk, nothing inside the jitted loop.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hrl.config import ConfigError


class TensorBoardSink:
    """Event files in `log_dir` (one `events.out.tfevents.*` per session: a resume adds one)."""

    def __init__(self, log_dir: Path):
        from tensorboardX import SummaryWriter  # imported only when asked for

        self.writer = SummaryWriter(logdir=str(log_dir))

    def row(self, env_steps: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.writer.add_scalar(f"train/{name}", value, global_step=env_steps)
        self.writer.flush()

    def episodes(self, env_steps, returns) -> None:
        for step, ret in zip(env_steps, returns, strict=True):
            self.writer.add_scalar("episode/return", float(ret), global_step=int(step))

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    """One W&B run per seed directory, named after it, grouped by the run directory."""

    def __init__(self, log_dir: Path, project: str, group: str, config: dict[str, Any]):
        try:
            import wandb  # the optional extra
        except ImportError:
            raise ConfigError(
                "config key 'log.wandb': needs the wandb package, the optional extra: "
                "uv pip install -e '.[wandb]' (or pip install wandb)") from None
        self.run = wandb.init(project=project, name=f"{group}/{log_dir.name}"
                              if log_dir.name != group else group, group=group,
                              dir=str(log_dir), config=config, reinit="create_new")

    def row(self, env_steps: int, values: dict[str, float]) -> None:
        self.run.log({f"train/{k}": v for k, v in values.items()}, step=env_steps)

    def episodes(self, env_steps, returns) -> None:
        pass  # the row's recent_return carries them at the chunk's step

    def close(self) -> None:
        self.run.finish()


def scalars(values: dict) -> dict[str, float]:
    """The row's finite numbers, `env_steps` left out (it is the step)."""
    out = {}
    for name, value in values.items():
        if name == "env_steps" or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            out[name] = float(value)
    return out


def make_sinks(log_cfg, log_dir: Path, run_name: str, config: dict[str, Any]) -> list:
    """The writers `log_cfg` (a `LogConfig`) turns on, for one seed's log directory."""
    sinks: list = []
    if log_cfg.tensorboard:
        sinks.append(TensorBoardSink(log_dir))
    if log_cfg.wandb:
        sinks.append(WandbSink(log_dir, log_cfg.wandb_project, run_name, config))
    return sinks
