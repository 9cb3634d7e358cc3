"""Checkpoints of the whole `TrainState` with orbax: networks, optimizer states, replay buffer
(items, sum tree, min tree, ring position, max priority), env state, n-step window, pending
priority updates, PRNG key and counters. Restoring into the structure of a freshly built state
gives back every array bit for bit, so a resumed run continues exactly where it stopped.

Layout: RUN_DIR/checkpoints/step_<env_steps>/ (orbax), beside it info_step_<env_steps>.json (its
counters and wall time) and, for host (gymnasium) envs, host_envs_step_<env_steps>.pkl (their
simulators' state, which lives outside the pytree; a pickle, so resume only run directories you
trust), for the distributed executor actors_step_<env_steps>.pkl (its workers' actors' states,
`Executor.actors_state`; a pickle too), plus RUN_DIR/checkpoints/latest.json, written last,
so a checkpoint is only ever announced once it is complete. At least two checkpoints are kept:
when the newest one cannot be read (a truncated copy, a full disk), `restore_newest` falls back
to the one before.

Restoring never casts: the arrays of a checkpoint must have the shapes and dtypes of the state
the config builds, or `CheckpointMismatch` names the first that differs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import jax
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils

_checkpointer = None


def _get_checkpointer():
    global _checkpointer
    if _checkpointer is None:
        _checkpointer = ocp.StandardCheckpointer()
    return _checkpointer


class CheckpointMismatch(ValueError):
    """The checkpoint holds arrays of other shapes/dtypes than the config builds."""


class CheckpointUnreadable(OSError):
    """The checkpoint's files cannot be read (truncated, garbled, missing)."""


def _beside(path: str | Path, kind: str) -> Path:
    """The file of `kind` kept beside checkpoint `path` (a step_* directory)."""
    path = Path(path)
    return path.parent / f"{kind}_{path.name}.pkl"


def _bytes_or_none(file: Path) -> bytes | None:
    try:
        return file.read_bytes()
    except FileNotFoundError:
        return None


def host_state_file(path: str | Path) -> Path:
    """Where the host envs' state of checkpoint `path` (a step_* directory) is kept."""
    return _beside(path, "host_envs")


def read_host_state(path: str | Path) -> bytes | None:
    """The host envs' state saved with checkpoint `path`, or None if it has none."""
    return _bytes_or_none(host_state_file(path))


def actors_state_file(path: str | Path) -> Path:
    """Where the executor's actors' state of checkpoint `path` (a step_* directory) is kept."""
    return _beside(path, "actors")


def read_actors_state(path: str | Path) -> bytes | None:
    """The executor's actors' state saved with checkpoint `path`, or None if it has none."""
    return _bytes_or_none(actors_state_file(path))


def save_checkpoint(run_dir: str | Path, state, info: dict, keep: int = 2,
                    host_state: bytes | None = None, actors_state: bytes | None = None) -> Path:
    """Write `state` (a pytree), `info` (JSON: counters, wall time), `host_state` (bytes
    from a host env's `save_state()`, if any) and `actors_state` (the executor's, if any:
    `Executor.actors_state`); keep the newest `keep` (at least two, so a newest
    checkpoint that turns out unreadable leaves one to fall back to)."""
    keep = max(keep, 2)
    root = Path(run_dir).resolve() / "checkpoints"
    name = f"step_{int(info['env_steps']):012d}"
    path = root / name
    ckpt = _get_checkpointer()
    if jax.process_count() > 1:
        # Several processes (hrl launch): each writes its own shards of the global arrays and
        # process 0 the metadata (orbax multi-host); the bookkeeping below is process 0's.
        if jax.process_index() == 0:
            root.mkdir(parents=True, exist_ok=True)
            if path.exists():
                shutil.rmtree(path)
        multihost_utils.sync_global_devices(f"hrl checkpoint {name} start")
        ckpt.save(path, state)
        ckpt.wait_until_finished()
        multihost_utils.sync_global_devices(f"hrl checkpoint {name} written")
        if jax.process_index() != 0:
            return path
    else:
        root.mkdir(parents=True, exist_ok=True)
        if path.exists():
            shutil.rmtree(path)
        ckpt.save(path, jax.device_get(state))
        ckpt.wait_until_finished()
    if host_state is not None:
        host_state_file(path).write_bytes(host_state)
    if actors_state is not None:
        actors_state_file(path).write_bytes(actors_state)
    else:  # a file left by an earlier run of this step must not pass for this one's
        actors_state_file(path).unlink(missing_ok=True)
    record = json.dumps({"name": name, **info}, indent=1)
    (root / f"info_{name}.json").write_text(record)
    (root / "latest.json.tmp").write_text(record)
    (root / "latest.json.tmp").replace(root / "latest.json")
    old = sorted(p for p in root.glob("step_*") if p.is_dir() and p.name != name)
    for stale in old[: max(len(old) - (keep - 1), 0)]:
        shutil.rmtree(stale, ignore_errors=True)
        (root / f"info_{stale.name}.json").unlink(missing_ok=True)
        host_state_file(stale).unlink(missing_ok=True)
        actors_state_file(stale).unlink(missing_ok=True)
    return path


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def checkpoints_newest_first(run_dir: str | Path) -> list[tuple[Path, dict]]:
    """Every checkpoint of a run with its info, newest first: the one latest.json announces,
    then the other step_* directories (an unannounced one may be incomplete; it comes after)."""
    root = Path(run_dir).resolve() / "checkpoints"
    if not root.is_dir():
        return []
    latest = _read_json(root / "latest.json")
    announced = latest.get("name") if latest else None
    dirs = sorted((p for p in root.glob("step_*") if p.is_dir()), reverse=True)
    order = [p for p in dirs if p.name == announced] + [p for p in dirs if p.name != announced]
    found = []
    for path in order:
        info = latest if path.name == announced else _read_json(root / f"info_{path.name}.json")
        found.append((path, info or {"name": path.name}))
    return found


def latest_checkpoint(run_dir: str | Path) -> tuple[Path, dict] | None:
    """The newest checkpoint (path, info), or None when the run has none."""
    found = checkpoints_newest_first(run_dir)
    return found[0] if found else None


def _dotted(path) -> str:
    """`replay.tree.levels.0` for a pytree key path (attribute, dict key or index)."""
    parts = []
    for entry in path:
        for attr in ("name", "key", "idx"):
            if hasattr(entry, attr):
                parts.append(str(getattr(entry, attr)))
                break
    return ".".join(parts)


def _leaf_specs(tree) -> dict[str, tuple[tuple[int, ...], str]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {_dotted(p): (tuple(leaf.shape), str(leaf.dtype)) for p, leaf in flat}


def check_checkpoint_matches(path: str | Path, like) -> None:
    """Refuse (`CheckpointMismatch`) a checkpoint whose arrays differ in name, shape or dtype
    from the pytree `like`, instead of letting the restore cast them (a float32 sum tree read
    as uint32 is garbage). `CheckpointUnreadable` when its metadata cannot be read."""
    path = Path(path).resolve()
    try:
        meta = _get_checkpointer().metadata(path)
        tree = getattr(meta, "item_metadata", None)
        tree = getattr(tree, "tree", tree)
    except Exception as err:  # orbax raises many kinds for damaged files
        raise CheckpointUnreadable(f"{path}: {err}") from err
    if tree is None:
        raise CheckpointUnreadable(f"{path}: its metadata cannot be read")
    saved, wanted = _leaf_specs(tree), _leaf_specs(like)
    for key in sorted(saved.keys() | wanted.keys()):
        if saved.get(key) != wanted.get(key):
            def show(spec):
                return "nothing" if spec is None else f"{spec[1]} {spec[0]}"
            raise CheckpointMismatch(
                f"checkpoint {path.name}: '{key}' holds {show(saved.get(key))}, but this "
                f"config builds {show(wanted.get(key))} (was the run's config.yaml edited?)"
            )


def restore_checkpoint(path: str | Path, like):
    """Read a checkpoint into the structure of the pytree `like`, whose shapes and dtypes it
    must hold exactly (`CheckpointMismatch` otherwise; `CheckpointUnreadable` if damaged)."""
    check_checkpoint_matches(path, like)
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    try:
        return _get_checkpointer().restore(Path(path).resolve(), abstract)
    except Exception as err:  # orbax/tensorstore raise many kinds for damaged files
        raise CheckpointUnreadable(f"{path}: {type(err).__name__}: {err}") from err


def restore_newest(
    run_dir: str | Path, like, warn: Callable[[str], None]
) -> tuple[object, dict, Path] | None:
    """(state, info, path) of the newest readable checkpoint; for each unreadable newer one,
    `warn` is called with a line naming it. None when the run has no checkpoint at all; a
    mismatch with `like` is raised, not skipped (an older checkpoint would mismatch too)."""
    candidates = checkpoints_newest_first(run_dir)
    if not candidates:
        return None
    for path, info in candidates:
        try:
            return restore_checkpoint(path, like), info, path
        except CheckpointUnreadable as err:
            warn(f"warning: checkpoint {path} is unreadable, falling back to an older one "
                 f"({str(err).splitlines()[0][:200]})")
    raise CheckpointUnreadable(
        f"no readable checkpoint in {Path(run_dir) / 'checkpoints'} (all "
        f"{len(candidates)} are damaged)"
    )
