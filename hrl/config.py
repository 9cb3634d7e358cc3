"""Typed run configuration: dataclasses read from YAML, overridden with `--set a.b=c`.

    cfg = load_config("experiments/configs/dqn_cartpole.yaml", ["train.total_env_steps=20000"])

Every key is checked before anything trains: an unknown key, a value of the wrong type or an
impossible value raises `ConfigError` whose message names the dotted key, e.g.
`config key 'train.batch_size': expected int, got str 'abc'`.

The `agent` section is typed by the algorithm's own config dataclass (`algo: dqn` ->
`hrl.agents.DQNConfig`), so the agents' hyperparameters are checked by the same rules without
being listed twice. The config is static: it lives outside every pytree and is never mutated.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key, on one line (a key or
    value holding a newline or another control character is shown escaped)."""

    def __init__(self, message: str):
        super().__init__("".join(c if c.isprintable() else c.encode("unicode_escape").decode()
                                 for c in str(message)))


# --------------------------------------------------------------------------- sections


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    name: str = "CartPole-v1"  # gymnax / brax / gymnasium id, see hrl.envs.make_env
    num_envs: int = 1  # M parallel actors (vectorized environment copies)
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)  # extra make_env options

    def validate(self, path: str) -> None:
        _require(self.num_envs >= 1, f"{path}.num_envs", "must be >= 1", self.num_envs)
        _require(bool(self.name), f"{path}.name", "must not be empty", self.name)


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    # "jax": the buffer inside the jitted loop; "jax_host", "opencl", "rtl": the tree on a
    # hrl.replay.backends backend driven from the host loop (items in host memory);
    # "native_host": the whole buffer in host memory, stepped by the C++ kernels from the host
    # loop (hrl.replay.host_native: the jitted buffer's results, outside XLA's queue)
    backend: str = "jax"
    capacity: int = 50_000
    alpha: float = 0.6  # priority exponent
    beta_start: float = 0.4  # importance-weight exponent, annealed linearly ...
    beta_end: float = 1.0  # ... to this value at the end of training
    eps: float = 1e-6  # added to |td| so no item starves
    fanout: int = 16  # K of the sum tree
    fmt: str = "float32"  # priority format, see hrl.replay.formats.parse_format
    weights: Literal["global", "batch"] = "global"
    n_step: int = 1  # n-step returns (1 = plain one-step transitions)
    # backend "jax": the sum-tree kernels, "native" (C++ on the CPU), "pallas" (GPU kernels;
    # interpret mode on a CPU, slow), "xla" (jnp) or "auto" (native on a CPU where it builds,
    # pallas on a GPU); same semantics (hrl.replay.native and hrl.replay.pallas_kernels state
    # their float32 caveats), so whole training runs may differ in the last bits between them
    impl: Literal["auto", "native", "pallas", "xla"] = "auto"
    # backend "opencl": the device (None: the first GPU, else accelerator, else PoCL's
    # in-thread "basic" CPU device where listed, else any; a
    # substring of the device name; or "rtl-sim": the RTL replay kernel in a Verilog
    # simulation, driven by the same OpenCL host driver as on a card; fixed point only)
    opencl_device: str | None = None
    # train.devices > 1 (one replay shard per device): "global", each SGD step's batch drawn
    # from all shards exactly as from one tree (the PER distribution of a single buffer; one
    # all-gather of the shard roots and a reduce-scatter of the batch per step); "local", each
    # device samples its own shard (no collective; the batch distribution then differs from
    # one buffer's unless the shard totals are equal). hrl.replay.sharded has the details.
    sampling: Literal["global", "local"] = "global"

    def validate(self, path: str) -> None:
        backends = ("jax", "jax_host", "native_host", "opencl", "rtl")
        _require(self.backend in backends, f"{path}.backend", f"must be one of {backends}",
                 self.backend)
        if self.opencl_device is not None:
            _require(self.backend == "opencl", f"{path}.opencl_device",
                     f"applies only to {path}.backend=opencl (backend is {self.backend!r})",
                     self.opencl_device)
            _require(isinstance(self.opencl_device, str) and self.opencl_device.strip() != "",
                     f"{path}.opencl_device", "must be a non-empty device name or 'rtl-sim'",
                     self.opencl_device)
        _require(self.capacity >= 1, f"{path}.capacity", "must be >= 1", self.capacity)
        _require(0.0 <= self.alpha <= 1.0, f"{path}.alpha", "must be in [0, 1]", self.alpha)
        for name in ("beta_start", "beta_end"):
            value = getattr(self, name)
            _require(0.0 <= value <= 1.0, f"{path}.{name}", "must be in [0, 1]", value)
        _require(self.eps > 0.0, f"{path}.eps", "must be > 0", self.eps)
        _require(
            2 <= self.fanout <= 64 and self.fanout & (self.fanout - 1) == 0,
            f"{path}.fanout",
            "must be a power of two in [2, 64]",
            self.fanout,
        )
        _require(self.n_step >= 1, f"{path}.n_step", "must be >= 1", self.n_step)
        from hrl.replay.formats import parse_format

        try:
            parse_format(self.fmt)
        except ValueError as err:
            raise ConfigError(f"config key '{path}.fmt': {err}") from None


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    total_env_steps: int = 50_000  # stop after this many environment steps (all actors)
    gamma: float = 0.99  # discount; the runtime folds it (and n) into each transition
    batch_size: int = 64  # B, transitions per SGD step
    train_ratio: float = 0.25  # SGD steps per environment step
    rollout_length: int = 1  # vector steps whose M*L transitions are inserted as one batch
    learning_starts: int = 1_000  # no SGD until the buffer holds this many transitions
    dependency: Literal["strict", "relaxed"] = "strict"
    staleness: int = 0  # relaxed: up to s priority updates in flight while sampling goes on
    fused: bool | None = None  # one jitted lax.scan; None = whenever env and replay are JAX
    # How the iteration's two programs (actors, learner) are scheduled: "fused" (one lax.scan),
    # "sequential" (the host loop: one primitive call after another), "pipelined" (actors in a
    # thread beside the learner, `pipeline_depth` iterations ahead at most, weights to the
    # actors every `weight_sync_period` iterations), "auto" (fused when it can, else sequential)
    executor: Literal["auto", "fused", "sequential", "pipelined"] = "auto"
    pipeline_depth: int = 1
    weight_sync_period: int = 1
    # Where the pipelined executor's actors run: "thread" (beside the learner, sharing its
    # GIL) or "process" (their own interpreter and XLA runtime; same results bit for bit).
    actors: Literal["thread", "process"] = "thread"
    # The samples-per-insert rate limiter (hrl.runtime.rate_limit; Reverb's
    # SampleToInsertRatio): transitions sampled per transition inserted, which the iteration
    # fixes at train_ratio * batch_size, so a value here must equal that product. `fused` and
    # `sequential` hold it by construction; `pipelined` blocks its actors when they would run
    # more than the tolerance (in samples; None: one learning round's, batch_size x SGD steps
    # per round, the least that cannot stall) ahead of the learner. None: off (the actors'
    # lead is bounded by pipeline_depth and weight_sync_period alone). On or off, results are
    # the same bit for bit: the limiter changes when the actors run, never which weights
    # they use.
    samples_per_insert: float | None = None
    samples_per_insert_tolerance: float | None = None
    # How XLA:CPU runs each jitted call: "async" (on XLA's worker thread while the caller goes
    # on; one device's calls still run in the order they were issued), "sync"
    # (on the calling thread: no hand-off and wake-up per call, which a loop that waits for
    # every call gains most from when another process shares the cores), "auto" (sync for a
    # host loop - executor sequential or pipelined, a host env or replay, a placement - on one
    # device, strict or relaxed; async otherwise). Process-wide and fixed when JAX's CPU
    # backend starts, so it applies only when the run's build is the first use of JAX in the
    # process. Results are the same bit for bit either way.
    cpu_dispatch: Literal["auto", "async", "sync"] = "auto"
    # XLA:CPU's intra-op threads (how many cores one jitted call may split its work over): a
    # number, or "auto" (1 for the fused loop on one device of a machine of at most 2
    # cores: there splitting its small programs costs more than it gains; else
    # XLA's default, one per core; hrl/runtime/cpu_backend.py has the measurements). Fixed
    # when JAX's CPU backend starts, as cpu_dispatch. Results may differ in float rounding (a
    # matrix product split differently), never in anything else.
    cpu_threads: Literal["auto"] | int = "auto"
    chunk_env_steps: int = 5_000  # env steps per jitted chunk (progress, checkpoints between)
    # The task's bar (mean return of the last log.return_window episodes): the summary reports
    # env steps and wall seconds to reach it, per seed. None: no bar for this task.
    solved_return: float | None = None
    # Data parallelism (Anakin): the fused iteration under shard_map over this many devices
    # (of all processes), each stepping env.num_envs / devices actors into its own replay shard
    # of replay.capacity / devices; gradients of each device's batch_size / devices samples are
    # averaged (pmean), so the parameters stay the same everywhere. 1: one device.
    devices: int = 1

    def validate(self, path: str, num_envs: int, capacity: int) -> None:
        _require(
            self.total_env_steps >= 1, f"{path}.total_env_steps", "must be >= 1",
            self.total_env_steps,
        )
        _require(0.0 <= self.gamma <= 1.0, f"{path}.gamma", "must be in [0, 1]", self.gamma)
        _require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1", self.batch_size)
        _require(
            self.batch_size <= capacity,
            f"{path}.batch_size",
            f"must be <= replay.capacity ({capacity})",
            self.batch_size,
        )
        _require(
            math.isfinite(self.train_ratio) and self.train_ratio > 0,
            f"{path}.train_ratio",
            "must be > 0",
            self.train_ratio,
        )
        _require(
            self.rollout_length >= 1, f"{path}.rollout_length", "must be >= 1",
            self.rollout_length,
        )
        _require(
            num_envs * self.rollout_length <= capacity,
            f"{path}.rollout_length",
            f"env.num_envs * rollout_length must be <= replay.capacity ({capacity})",
            self.rollout_length,
        )
        _require(
            self.learning_starts >= self.batch_size,
            f"{path}.learning_starts",
            f"must be >= train.batch_size ({self.batch_size})",
            self.learning_starts,
        )
        _require(
            self.learning_starts <= capacity,
            f"{path}.learning_starts",
            f"must be <= replay.capacity ({capacity})",
            self.learning_starts,
        )
        _require(self.staleness >= 0, f"{path}.staleness", "must be >= 0", self.staleness)
        _require(self.pipeline_depth >= 0, f"{path}.pipeline_depth", "must be >= 0",
                 self.pipeline_depth)
        _require(self.weight_sync_period >= 1, f"{path}.weight_sync_period", "must be >= 1",
                 self.weight_sync_period)
        _require(self.actors == "thread" or self.executor == "pipelined", f"{path}.actors",
                 "'process' runs the pipelined executor's actors; set train.executor: pipelined",
                 self.actors)
        _require(self.fused is None or self.executor == "auto"
                 or self.fused == (self.executor == "fused"), f"{path}.fused",
                 f"contradicts train.executor={self.executor!r}; set one of them", self.fused)
        _require(
            self.dependency == "relaxed" or self.staleness == 0,
            f"{path}.staleness",
            "must be 0 when train.dependency is 'strict'",
            self.staleness,
        )
        _require(
            self.chunk_env_steps >= 1, f"{path}.chunk_env_steps", "must be >= 1",
            self.chunk_env_steps,
        )
        _require(
            self.solved_return is None or math.isfinite(self.solved_return),
            f"{path}.solved_return", "must be a finite number (or null)", self.solved_return,
        )
        _require(self.devices >= 1, f"{path}.devices", "must be >= 1", self.devices)
        _require(self.cpu_threads == "auto" or self.cpu_threads >= 1, f"{path}.cpu_threads",
                 "must be >= 1 (or auto)", self.cpu_threads)
        if self.devices > 1:
            for key, value in (("env.num_envs", num_envs), ("train.batch_size", self.batch_size),
                               ("replay.capacity", capacity)):
                _require(value % self.devices == 0, f"{path}.devices",
                         f"must divide {key} ({value}): each device takes an equal share",
                         self.devices)
            _require(self.executor in ("auto", "fused") and self.fused is not False,
                     f"{path}.devices", "> 1 runs the fused loop on every device; set "
                     f"train.executor to fused or auto (got {self.executor!r})", self.devices)
        try:
            updates, _ = updates_schedule(self.train_ratio, num_envs * self.rollout_length)
        except ValueError as err:
            raise ConfigError(f"config key '{path}.train_ratio': {err}") from None
        self._validate_rate_limit(path, updates)

    def _validate_rate_limit(self, path: str, updates_per_round: int) -> None:
        from hrl.runtime.rate_limit import check_limit, check_tolerance

        spi, tol = self.samples_per_insert, self.samples_per_insert_tolerance
        if spi is None:
            _require(tol is None, f"{path}.samples_per_insert_tolerance",
                     f"applies only with {path}.samples_per_insert set (the limiter is off)", tol)
            return
        tol = self.rate_limit_tolerance(updates_per_round)
        try:
            check_limit(spi, tol, self.learning_starts)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        fixed = self.train_ratio * self.batch_size
        _require(
            abs(spi - fixed) <= 1e-6 * fixed, f"{path}.samples_per_insert",
            f"must equal {path}.train_ratio x {path}.batch_size = {self.train_ratio:g} x "
            f"{self.batch_size} = {fixed:g}, the samples per insert the iteration makes (for "
            f"{spi:g}, set {path}.train_ratio to {spi / self.batch_size:g})", spi)
        try:
            check_tolerance(tol, self.batch_size, updates_per_round)
        except ValueError as err:
            raise ConfigError(str(err)) from None

    def rate_limit_tolerance(self, updates_per_round: int) -> float | None:
        """The limiter's tolerance in samples (its default: one learning round's); None when
        the limiter is off."""
        if self.samples_per_insert is None:
            return None
        if self.samples_per_insert_tolerance is None:
            return float(self.batch_size * updates_per_round)
        return self.samples_per_insert_tolerance


def updates_schedule(train_ratio: float, env_steps_per_iter: int) -> tuple[int, int]:
    """(SGD steps per learning round, iterations between rounds) for a train ratio.

    An iteration makes `env_steps_per_iter` env steps. The ratio must come out whole one way or
    the other: 0.25 with 8 env steps -> 2 SGD steps every iteration; 1/64 with 16 env steps ->
    1 SGD step every 4 iterations.
    """
    per_iter = train_ratio * env_steps_per_iter
    if per_iter >= 1.0 - 1e-9:
        rounded = round(per_iter)
        if abs(per_iter - rounded) > 1e-6 * per_iter:
            raise ValueError(
                f"train_ratio {train_ratio} x {env_steps_per_iter} env steps per iteration = "
                f"{per_iter:g} SGD steps, which is not a whole number"
            )
        return int(rounded), 1
    period = 1.0 / per_iter
    rounded = round(period)
    if abs(period - rounded) > 1e-6 * period:
        raise ValueError(
            f"train_ratio {train_ratio} x {env_steps_per_iter} env steps per iteration = "
            f"{per_iter:g} SGD steps: 1/{per_iter:g} must be a whole number of iterations"
        )
    return 1, int(rounded)


@dataclasses.dataclass(frozen=True)
class LogConfig:
    run_dir: str | None = None  # default: runs/<config name>-<UTC time>
    metrics_format: Literal["csv", "jsonl"] = "csv"
    return_window: int = 10  # episodes in the "recent return" shown and logged
    checkpoint_every: int = 0  # env steps between checkpoints (0: only at the end / Ctrl-C)
    progress: bool = True  # rich progress bar

    def validate(self, path: str) -> None:
        _require(
            self.return_window >= 1, f"{path}.return_window", "must be >= 1", self.return_window
        )
        _require(
            self.checkpoint_every >= 0,
            f"{path}.checkpoint_every",
            "must be >= 0",
            self.checkpoint_every,
        )


# The five primitives of the training loop (hrl.runtime.primitives), by name.
PRIMITIVES = ("env", "infer", "sample", "update", "train")
# A placement value: `host` (the Python process: gymnasium envs, host replay backends) or a JAX
# device, `cpu`/`gpu` with an optional index (`cpu:1` needs two CPU devices, e.g. from
# XLA_FLAGS=--xla_force_host_platform_device_count=2).
PLACEMENT_VALUE = re.compile(r"^(host|cpu|gpu)(:\d+)?$")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The whole run. `agent` is the algorithm's config dataclass (see `agent_config_class`)."""

    algo: Literal["dqn", "ddpg"] = "dqn"
    seed: int = 0
    seeds: int = 1  # independent runs with seeds seed, seed+1, ...: vmapped in one jit if fused
    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    agent: Any = None
    replay: ReplayConfig = dataclasses.field(default_factory=ReplayConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    log: LogConfig = dataclasses.field(default_factory=LogConfig)
    name: str = "run"  # used in the default run directory name
    # Where each primitive runs, e.g. {infer: cpu:0, train: cpu:1, env: host}; a JAX device
    # placement runs the host loop (each primitive its own call on its device). Empty: default.
    placement: dict[str, str] = dataclasses.field(default_factory=dict)

    def validate(self) -> None:
        for name, where in self.placement.items():
            _require(name in PRIMITIVES, f"placement.{name}",
                     f"is not a primitive; use one of {', '.join(PRIMITIVES)}", name)
            _require(isinstance(where, str) and PLACEMENT_VALUE.match(where) is not None,
                     f"placement.{name}", "must be host, cpu, gpu, cpu:<i> or gpu:<i>", where)
        _require(self.seeds >= 1, "seeds", "must be >= 1", self.seeds)
        _require(
            0 <= self.seed and self.seed + self.seeds <= 2**31, "seed",
            f"seeds seed..seed+{self.seeds - 1} must lie in [0, 2**31)", self.seed,
        )
        self.env.validate("env")
        self.replay.validate("replay")
        self.train.validate("train", self.env.num_envs, self.replay.capacity)
        self.log.validate("log")
        if self.train.devices > 1:
            _require(self.replay.backend == "jax", "train.devices",
                     f"> 1 needs replay.backend 'jax' (got {self.replay.backend!r})",
                     self.train.devices)
            _require(not self.placement, "train.devices",
                     "> 1 places every primitive on every device; drop the placement",
                     self.train.devices)
        check = getattr(self.agent, "validate", None)
        if callable(check):
            try:
                check()
            except ConfigError:
                raise
            except ValueError as err:
                raise ConfigError(f"config key 'agent': {err}") from None

    @property
    def env_steps_per_iter(self) -> int:
        return self.env.num_envs * self.train.rollout_length


def agent_config_class(algo: str):
    """The config dataclass of an algorithm, owned by `hrl.agents`."""
    from hrl import agents

    classes = {"dqn": "DQNConfig", "ddpg": "DDPGConfig"}
    if algo not in classes:
        raise ConfigError(f"config key 'algo': expected one of {sorted(classes)}, got {algo!r}")
    return getattr(agents, classes[algo])


# --------------------------------------------------------------------------- parsing


def _require(ok: bool, key: str, what: str, value) -> None:
    if not ok:
        raise ConfigError(f"config key '{key}': {what}, got {value!r}")


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
    algo = data.get("algo", "dqn")
    algo = _coerce(algo, Literal["dqn", "ddpg"], "algo")
    agent_data = data.pop("agent", None)
    cfg = _from_dict(RunConfig, data, "")
    agent_cfg = _from_dict(agent_config_class(algo), agent_data, "agent")
    cfg = dataclasses.replace(cfg, agent=agent_cfg)
    cfg.validate()
    return cfg


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Read a YAML config, apply `--set` overrides, type-check and validate it."""
    path = Path(path)
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
    for assignment in overrides:
        apply_override(data, assignment)
    return config_from_dict(data)


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False)
