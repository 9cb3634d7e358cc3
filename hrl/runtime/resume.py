"""What `hrl train --resume` may change, and the config a resumed run continues with."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

from hrl.config import ConfigError, RunConfig, dump_config, load_run_config, to_dict
from hrl.runtime.checkpoint import latest_checkpoint

# What may change when a run is resumed: how long it goes on, what is reported, and how often
# it checkpoints. Every other key shapes the state in the checkpoint (formats, sizes, networks)
# or the trajectory it continues (seed, schedule, chunking), so changing it would corrupt the
# state or silently not apply.
RESUMABLE_KEYS = (
    "train.total_env_steps",
    "train.actors",  # thread and process actors give the same results bit for bit
    # The limiter changes when the actors run, never what they compute.
    "train.samples_per_insert",
    "train.samples_per_insert_tolerance",
    "train.cpu_dispatch",  # where XLA:CPU runs a call, never what it computes
    "train.solved_return",
    "train.eval_every",  # evaluation never touches the training state
    "train.eval_episodes",
    "log.checkpoint_every",
    "log.progress",
    "log.return_window",
    "log.tensorboard",  # writers beside metrics.csv: what is logged, never what is computed
    "log.wandb",
    "log.wandb_project",
)
_WHY_FIXED = {
    "replay.fmt": "the checkpoint holds that format",
    "seed": "the checkpoint continues that seed's trajectory",
    "seeds": "the checkpoint holds that many runs",
}


def _flat(tree: dict, prefix: str = "") -> dict:
    """{"train.batch_size": 64, ...} of a nested config dict (dict-valued keys such as
    env.kwargs and placement compare as a whole)."""
    flat = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted not in ("env.kwargs", "placement"):
            flat.update(_flat(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def resume_changes(saved: RunConfig, cfg: RunConfig) -> dict[str, tuple]:
    """{key: (saved value, new value)} of the keys `cfg` changes; `ConfigError` naming the
    first key that may not change at resume (see RESUMABLE_KEYS)."""
    before, after = _flat(to_dict(saved)), _flat(to_dict(cfg))
    changed = {k: (before.get(k), after.get(k)) for k in sorted(before.keys() | after.keys())
               if before.get(k) != after.get(k)}
    for key, (old, _new) in changed.items():
        if key not in RESUMABLE_KEYS:
            why = _WHY_FIXED.get(key, "the checkpoint was made with it")
            raise ConfigError(
                f"config key '{key}': cannot change at resume (the run was started with "
                f"{old!r}; {why}); only {', '.join(RESUMABLE_KEYS)} may change"
            )
    return changed


def with_checkpoint_every(cfg: RunConfig, checkpoint_every: int) -> RunConfig:
    return dataclasses.replace(
        cfg, log=dataclasses.replace(cfg.log, checkpoint_every=checkpoint_every)
    )


def check_resume_changes(run_dir: Path, cfg: RunConfig, checkpoint_every: int) -> dict:
    """The changes to RUN_DIR/config.yaml this resume makes (with the checkpoint period it
    runs at); refuses any that may not change. A run directory without config.yaml (a seed's
    directory written by an older version) has nothing to compare against."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    return resume_changes(load_run_config(path),
                          with_checkpoint_every(cfg, checkpoint_every))


def record_resume(run_dir: Path, cfg: RunConfig, checkpoint_every: int, changed: dict,
                   checkpoint: str | None, env_steps: int | None) -> None:
    """RUN_DIR/config.yaml takes the accepted changes (so the next resume keeps them, the
    checkpoint period included); RUN_DIR/resumes.jsonl gets one line per resume."""
    if changed:
        text = dump_config(with_checkpoint_every(cfg, checkpoint_every))
        (run_dir / "config.yaml.tmp").write_text(text)
        (run_dir / "config.yaml.tmp").replace(run_dir / "config.yaml")
    record = {
        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "checkpoint": checkpoint,
        "env_steps": env_steps,
        "changed": {k: {"from": old, "to": new} for k, (old, new) in changed.items()},
    }
    with (run_dir / "resumes.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


def _has_checkpoint(run_dir: Path) -> bool:
    """A checkpoint in RUN_DIR, or in one of its seed-<s>/ directories (seeds run one after
    another)."""
    return latest_checkpoint(run_dir) is not None or any(
        latest_checkpoint(d) is not None for d in run_dir.glob("seed-*") if d.is_dir()
    )


def resume_config(run_dir: str | Path, overrides=()) -> RunConfig:
    """The config a run was started with (RUN_DIR/config.yaml, `load_run_config`: a key
    added since with a new default keeps the old one), plus `--set` overrides of the
    keys that may change at resume (`ConfigError` for any other, and when RUN_DIR holds no
    checkpoint: both found before anything compiles)."""
    run_dir = Path(run_dir)
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"--resume {run_dir}: {path} not found (not a run directory?)")
    saved = load_run_config(path)
    cfg = load_run_config(path, overrides)
    resume_changes(saved, cfg)
    if not _has_checkpoint(run_dir):
        raise ConfigError(
            f"--resume {run_dir}: no checkpoint in {run_dir / 'checkpoints'} (the run stopped "
            "before its first checkpoint; start it again instead)"
        )
    return cfg
