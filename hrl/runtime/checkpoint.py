"""Checkpoints of the whole `TrainState` with orbax: networks, optimizer states, replay buffer
(items, sum tree, min tree, ring position, max priority), env state, n-step window, pending
priority updates, PRNG key and counters. Restoring into the structure of a freshly built state
gives back every array bit for bit, so a resumed run continues exactly where it stopped.

Layout: RUN_DIR/checkpoints/step_<env_steps>/ (orbax) plus RUN_DIR/checkpoints/latest.json,
written last, so a checkpoint is only ever announced once it is complete.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import orbax.checkpoint as ocp

_checkpointer = None


def _get_checkpointer():
    global _checkpointer
    if _checkpointer is None:
        _checkpointer = ocp.StandardCheckpointer()
    return _checkpointer


def save_checkpoint(run_dir: str | Path, state, info: dict, keep: int = 2) -> Path:
    """Write `state` (a pytree) and `info` (JSON: counters, wall time); keep the newest `keep`."""
    root = Path(run_dir).resolve() / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"step_{int(info['env_steps']):012d}"
    path = root / name
    if path.exists():
        shutil.rmtree(path)
    ckpt = _get_checkpointer()
    ckpt.save(path, jax.device_get(state))
    ckpt.wait_until_finished()
    (root / "latest.json.tmp").write_text(json.dumps({"name": name, **info}, indent=1))
    (root / "latest.json.tmp").replace(root / "latest.json")
    old = sorted(p for p in root.glob("step_*") if p.is_dir() and p.name != name)
    for stale in old[: max(len(old) - (keep - 1), 0)]:
        shutil.rmtree(stale, ignore_errors=True)
    return path


def latest_checkpoint(run_dir: str | Path) -> tuple[Path, dict] | None:
    root = Path(run_dir).resolve() / "checkpoints"
    marker = root / "latest.json"
    if not marker.is_file():
        return None
    info = json.loads(marker.read_text())
    return root / info["name"], info


def restore_checkpoint(path: str | Path, like):
    """Read a checkpoint into the structure (and dtypes/shapes) of the pytree `like`."""
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    try:
        return _get_checkpointer().restore(Path(path).resolve(), abstract)
    except (ValueError, KeyError) as err:
        raise ValueError(
            f"checkpoint {path} does not match this run's state (was the config changed in a "
            f"way that changes shapes, e.g. num_envs, capacity, network sizes?): {err}"
        ) from err
