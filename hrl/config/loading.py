"""Reading a run config: YAML (or a mapping) and `--set key=value` overrides, checked against the
schema (`schema.py`) into frozen dataclasses; and writing one back.

    cfg = load_config("experiments/configs/dqn_cartpole.yaml", ["train.total_env_steps=20000"])

Every key is checked before anything trains: an unknown key, a value of the wrong type or an
impossible value raises `ConfigError` naming the dotted key, on one line, e.g.
`config key 'train.batch_size': expected int, got str 'abc'`.

Why a loader of our own rather than pydantic (or msgspec, cattrs): the checks here walk the
dataclasses' own annotations (Literal, unions, tuples, nested sections, the agent's section
chosen by `algo`) and phrase every failure as one line naming the key, the form the CLI prints
and the tests hold; pydantic would add a dependency and a model layer beside the dataclasses,
and its multi-line, multi-error reports would need a translation of about the same size.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml

from hrl.config.schema import (
    OLD_DEFAULTS,
    REMOVED_KEYS,
    ConfigError,
    RunConfig,
    agent_config_class,
)


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(value, tp, key: str):
    """Check `value` against the annotation `tp`; return it converted (int -> float only)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in args:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(
            f"config key '{key}': expected {' or '.join(_type_name(a) for a in args)}, "
            f"got {type(value).__name__} {value!r}"
        )
    if origin is Literal:
        if value not in args:
            raise ConfigError(
                f"config key '{key}': expected one of {list(args)}, got {value!r}"
            )
        return value
    if dataclasses.is_dataclass(tp):
        return _from_dict(tp, value, key)
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(
                f"config key '{key}': expected a list, got {type(value).__name__} {value!r}"
            )
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
        if origin is tuple and args:
            if len(args) != len(value):
                raise ConfigError(
                    f"config key '{key}': expected {len(args)} entries, got {len(value)}"
                )
            pairs = enumerate(zip(args, value, strict=True))
            return tuple(_coerce(v, a, f"{key}[{i}]") for i, (a, v) in pairs)
        item = args[0] if args else Any
        converted = [_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(converted) if origin is tuple else converted
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(
                f"config key '{key}': expected a mapping, got {type(value).__name__} {value!r}"
            )
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(
                f"config key '{key}': expected bool, got {type(value).__name__} {value!r}"
            )
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                f"config key '{key}': expected int, got {type(value).__name__} {value!r}"
            )
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(
                f"config key '{key}': expected float, got {type(value).__name__} {value!r}"
            )
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(
                f"config key '{key}': expected str, got {type(value).__name__} {value!r}"
            )
        return value
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise ConfigError(
                f"config key '{key}': expected {tp.__name__}, got {type(value).__name__} {value!r}"
            )
        return value
    raise ConfigError(f"config key '{key}': unsupported annotation {tp!r}")


def _from_dict(cls, data, prefix: str):
    """Build dataclass `cls` from a mapping, checking every key against its annotations."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        where = f"config key '{prefix}'" if prefix else "config"
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__} {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else str(name)
        if name not in fields:
            close = [f for f in fields if f.lower().startswith(str(name)[:3].lower())]
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            raise ConfigError(
                f"config key '{key}': unknown key; valid keys here: {sorted(fields)}{hint}"
            )
        kwargs[name] = _coerce(value, hints[name], key)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"config key '{prefix or '<root>'}': {err}") from None


def to_dict(cfg) -> dict:
    """Plain nested dict of a config (for YAML dumps and run records)."""

    def plain(value):
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return plain(cfg)


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-3` as a float (YAML 1.1 demands `1.0e-3`)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def parse_yaml(text: str, where: str = "config"):
    """The YAML document `text`; `ConfigError` naming `where` and the line for a syntax
    error (a config file, or a --set value)."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML{at}: {problem}") from None


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `a.b.c=value` to the nested mapping `data` (value parsed as YAML)."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected KEY=VALUE, e.g. train.batch_size=128")
    key, raw = assignment.split("=", 1)
    key = key.strip()
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ConfigError(f"--set {assignment!r}: malformed key {key!r}")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(
                f"config key '{'.'.join(parts[: i + 1])}': is a value, cannot set {key!r}"
            )
        node = child
    node[parts[-1]] = parse_yaml(raw, f"--set {assignment!r}") if raw.strip() else ""


def config_from_dict(data: dict) -> RunConfig:
    """Typed, validated `RunConfig` from a nested mapping (the YAML document)."""
    if not isinstance(data, dict):
        raise ConfigError(f"config: expected a mapping at the top, got {type(data).__name__}")
    data = dict(data)
    _refuse_removed_keys(data)
    algo = data.get("algo", "dqn")
    algo = _coerce(algo, Literal["dqn", "ddpg"], "algo")
    agent_data = data.pop("agent", None)
    cfg = _from_dict(RunConfig, data, "")
    agent_cfg = _from_dict(agent_config_class(algo), agent_data, "agent")
    cfg = dataclasses.replace(cfg, agent=agent_cfg)
    cfg.validate()
    return cfg


def _refuse_removed_keys(data: dict) -> None:
    """A removed key gets its own message; `null` (no choice at all, as older run directories'
    config.yaml hold it) is dropped."""
    for dotted, why in REMOVED_KEYS.items():
        section, _, key = dotted.partition(".")
        values = data.get(section)
        if isinstance(values, dict) and key in values:
            if values[key] is not None:
                raise ConfigError(f"config key '{dotted}': {why}, got {values[key]!r}")
            data[section] = {k: v for k, v in values.items() if k != key}


def _read_mapping(path: Path) -> dict:
    """The top-level mapping of the YAML file `path`; `ConfigError` naming the file."""
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {str(path)!r}: cannot be read ({err})") from None
    data = parse_yaml(text, f"config file {str(path)!r}") or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(path)!r}: expected a mapping at the top")
    data.setdefault("name", path.stem)
    return data


def _loaded(data: dict, overrides) -> RunConfig:
    for assignment in overrides:
        apply_override(data, assignment)
    return config_from_dict(data)


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Read a YAML config, apply `--set` overrides, type-check and validate it."""
    return _loaded(_read_mapping(Path(path)), overrides)


def load_run_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """The config a run directory saved (RUN_DIR/config.yaml, every key written out by
    `dump_config`), read as `load_config` reads it except that a key of `OLD_DEFAULTS` the
    file lacks takes the value it had when the file was written, not today's default: a run
    written by an older version resumes (and is evaluated) with the state it checkpointed."""
    data = _read_mapping(Path(path))
    for dotted, value in OLD_DEFAULTS.items():
        section, _, key = dotted.partition(".")
        values = data.get(section)
        if values is None or isinstance(values, dict) and key not in values:
            data[section] = {**(values or {}), key: value}
    return _loaded(data, overrides)


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False)
