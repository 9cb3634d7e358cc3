"""The run config's schema: typed sections, their defaults, and the rules their values obey.

Every rule raises `ConfigError` with a one-line message naming the dotted key, the value and
what it must be. The `agent` section is typed by the algorithm's own config dataclass
(`algo: dqn` -> `hrl.agents.DQNConfig`), so the agents' hyperparameters are checked by the
same rules without being listed twice. The config is static: frozen dataclasses, never mutated,
never inside a pytree. Reading YAML into these types is `loading.py`'s business.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Literal

from hrl import agents
from hrl.config.rules import check_limit, check_tolerance, updates_schedule
from hrl.replay.formats import parse_format

# Keys that once existed: a config that still sets one gets this instead of "unknown key".
REMOVED_KEYS = {
    "train.fused": "removed; set train.executor: auto | fused | sequential | pipelined",
}
# Keys whose default changed, with the value a run directory's config.yaml that lacks the key
# was written under (`loading.load_run_config`): such a run resumes as it was started.
# replay.next_obs: the key came in with "stored" as its default, now "auto"; a config.yaml
# written before the key existed has no line for it and kept next_obs in every row.
OLD_DEFAULTS = {
    "replay.next_obs": "stored",
}


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
    capacity: int = 50_000  # N, transitions held; the oldest is overwritten when full
    alpha: float = 0.6  # priority exponent
    beta_start: float = 0.4  # importance-weight exponent, annealed linearly ...
    beta_end: float = 1.0  # ... to this value at the end of training
    eps: float = 1e-6  # added to |td| so no item starves
    fanout: int = 16  # K of the sum tree
    fmt: str = "float32"  # priority format, see hrl.replay.formats.parse_format
    # importance weights normalised by the whole buffer's largest (a min tree) or the batch's
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
    # where a transition's next observation lives: "stored", in its own row beside obs (every
    # observation stored twice; every backend); "next_slot", read at sample time from the row
    # the same env wrote n_step steps later, a small tail for the newest rows and a side store
    # for episode ends (hrl.replay.next_slot: the same samples bit for bit while the side store
    # holds them all, about half the row for image observations; backend jax on one device);
    # "auto", next_slot where the run inserts the actors' transitions in their order (backend
    # jax, train.devices 1, executor fused, sequential or pipelined) and the buffer takes an
    # iteration's num_envs x rollout_length inserts (beside the n_step x num_envs stride, and
    # in the side store), else stored (hrl.replay.factory.resolve_next_obs; the summary's
    # replay_next_obs says which)
    next_obs: Literal["auto", "stored", "next_slot"] = "auto"
    # next_obs next_slot: side-store entries (episode ends' final observations, one per end:
    # the n-step windows it cuts share it) per replay slot; when more rows than that need one,
    # the oldest are dropped (never sampled again), counted in the summary's
    # replay_next_obs_lost and warned of at the chunk's end
    next_obs_side: float = 0.25

    def validate(self, path: str) -> None:
        backends = ("jax", "jax_host", "native_host", "opencl", "rtl")
        _require(self.backend in backends, f"{path}.backend", f"must be one of {backends}",
                 self.backend)
        _require(self.next_obs in ("auto", "stored", "next_slot"), f"{path}.next_obs",
                 "must be 'auto', 'stored' or 'next_slot'", self.next_obs)
        _require(self.next_obs != "next_slot" or self.backend == "jax", f"{path}.next_obs",
                 f"'next_slot' is taken by {path}.backend jax only; backend "
                 f"{self.backend!r} keeps next_obs in each row (use 'stored')", self.next_obs)
        _require(0.0 < self.next_obs_side <= 1.0, f"{path}.next_obs_side", "must be in (0, 1]",
                 self.next_obs_side)
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
    # relaxed: the next batch is drawn while up to `staleness` priority updates are in flight
    dependency: Literal["strict", "relaxed"] = "strict"
    staleness: int = 0  # relaxed: up to s priority updates in flight while sampling goes on
    # How the iteration's two programs (actors, learner) are scheduled: "fused" (one lax.scan),
    # "sequential" (the host loop: one primitive call after another), "pipelined" (actors in a
    # thread beside the learner, `pipeline_depth` iterations ahead at most, weights to the
    # actors every `weight_sync_period` iterations), "auto" (fused when it can, else sequential)
    executor: Literal["auto", "fused", "sequential", "pipelined", "distributed"] = "auto"
    pipeline_depth: int = 1  # pipelined: iterations the actors may run ahead of the learner
    weight_sync_period: int = 1  # pipelined: iterations between weight copies to the actors
    # Where the pipelined executor's actors run: "thread" (beside the learner, sharing its
    # GIL) or "process" (their own interpreter and XLA runtime; same results bit for bit).
    actors: Literal["thread", "process"] = "thread"
    # executor "distributed" (Ape-X on Ray, hrl.runtime.executors.ray_actors): num_actors
    # workers, each a Ray actor with its own env.num_envs envs, feed the learner; "fixed": the
    # learner takes their iterations in a fixed order (reproducible bit for bit), "free": as
    # they arrive (as fast as the workers go).
    num_actors: int = 1
    actor_schedule: Literal["fixed", "free"] = "fixed"
    # executor "distributed": each worker computes the priorities of the transitions it sends
    # (|TD error| + replay.eps from the weights it acted with, Ape-X's initial priorities) and
    # the learner inserts them with those instead of the largest priority seen. Off by
    # default: then every executor runs one algorithm (N = 1 is the pipelined executor bit for
    # bit); on, the workers also receive the target networks and run a TD forward pass.
    actor_priorities: bool = False
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
    samples_per_insert_tolerance: float | None = None  # limiter slack in samples (see above)
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
    # number, or "auto" (1 for an MLP run on one device of a machine of at most 2 cores: there
    # two threads compete with the process's Python thread, and a process may run many times
    # slower for it; else XLA's default, one per core; hrl/runtime/cpu_backend.py says why,
    # experiments/results/cpu_threads has the measurements). Fixed
    # when JAX's CPU backend starts, as cpu_dispatch. Results may differ in float rounding (a
    # matrix product split differently), never in anything else. XLA gives each CPU device
    # a thread at least (a placement on cpu:1 makes two devices).
    cpu_threads: Literal["auto"] | int = "auto"
    chunk_env_steps: int = 5_000  # env steps per jitted chunk (progress, checkpoints between)
    # The task's bar (mean return of the last log.return_window episodes): the summary reports
    # env steps and wall seconds to reach it, per seed. None: no bar for this task.
    solved_return: float | None = None
    # Evaluation (hrl.runtime.evaluation): every `eval_every` env steps (at the first chunk end
    # at or past each multiple, and once more at the end of the run), the greedy (DQN) or
    # deterministic (DDPG) policy plays `eval_episodes` episodes on env copies and keys of
    # its own; the checkpoint with the best mean eval return is kept in RUN_DIR/best/.
    # 0: no evaluation. Training is the same bit for bit either way.
    eval_every: int = 0
    eval_episodes: int = 10
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
        _require(self.num_actors >= 1, f"{path}.num_actors", "must be >= 1", self.num_actors)
        _require(not self.actor_priorities or self.executor == "distributed",
                 f"{path}.actor_priorities",
                 "true needs the distributed executor's workers; set train.executor: "
                 "distributed", self.actor_priorities)
        _require(self.actors == "thread" or self.executor == "pipelined", f"{path}.actors",
                 "'process' runs the pipelined executor's actors; set train.executor: pipelined",
                 self.actors)
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
        _require(self.eval_every >= 0, f"{path}.eval_every", "must be >= 0 (0: off)",
                 self.eval_every)
        _require(self.eval_episodes >= 1, f"{path}.eval_episodes", "must be >= 1",
                 self.eval_episodes)
        _require(self.devices >= 1, f"{path}.devices", "must be >= 1", self.devices)
        _require(self.cpu_threads == "auto" or self.cpu_threads >= 1, f"{path}.cpu_threads",
                 "must be >= 1 (or auto)", self.cpu_threads)
        if self.devices > 1:
            for key, value in (("env.num_envs", num_envs), ("train.batch_size", self.batch_size),
                               ("replay.capacity", capacity)):
                _require(value % self.devices == 0, f"{path}.devices",
                         f"must divide {key} ({value}): each device takes an equal share",
                         self.devices)
            _require(self.executor in ("auto", "fused"),
                     f"{path}.devices", "> 1 runs the fused loop on every device; set "
                     f"train.executor to fused or auto (got {self.executor!r})", self.devices)
        try:
            updates, _ = updates_schedule(self.train_ratio, num_envs * self.rollout_length)
        except ValueError as err:
            raise ConfigError(f"config key '{path}.train_ratio': {err}") from None
        self._validate_rate_limit(path, updates)

    def _validate_rate_limit(self, path: str, updates_per_round: int) -> None:
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


@dataclasses.dataclass(frozen=True)
class LogConfig:
    run_dir: str | None = None  # default: runs/<config name>-<UTC time>
    metrics_format: Literal["csv", "jsonl"] = "csv"  # RUN_DIR/metrics.csv or metrics.jsonl
    return_window: int = 10  # episodes in the "recent return" shown and logged
    checkpoint_every: int = 0  # env steps between checkpoints (0: only at the end / Ctrl-C)
    progress: bool = True  # rich progress bar
    tensorboard: bool = False  # TensorBoard event files in the run directory (tensorboardX)
    wandb: bool = False  # a Weights & Biases run (the optional `wandb` extra)
    wandb_project: str = "hrl"  # the W&B project of log.wandb

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
# XLA_FLAGS=--xla_force_host_platform_device_count=2), or `fpga` (DQN's infer and train,
# DDPG's train: the FPGA learner's kernel in an RTL simulation, `hrl.fixed_point.kernel_host`,
# `kernel_train` and `kernel_train_ddpg`).
PLACEMENT_VALUE = re.compile(r"^(host|cpu|gpu)(:\d+)?$|^fpga$")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The whole run. `agent` is the algorithm's config dataclass (see `agent_config_class`)."""

    algo: Literal["dqn", "ddpg"] = "dqn"  # the algorithm; types the agent section
    seed: int = 0  # the run's PRNG seed (the first of `seeds`)
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
                     f"placement.{name}", "must be host, cpu, gpu, cpu:<i>, gpu:<i> or fpga",
                     where)
            if where == "fpga":
                _check_fpga_placement(self, name)
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
    classes = {"dqn": "DQNConfig", "ddpg": "DDPGConfig"}
    if algo not in classes:
        raise ConfigError(f"config key 'algo': expected one of {sorted(classes)}, got {algo!r}")
    return getattr(agents, classes[algo])


def _check_fpga_placement(cfg: RunConfig, name: str) -> None:
    """`placement.<name>: fpga`: what the FPGA learner's kernel implements (DQN's Q network
    and, for train, its Adam SGD step; DDPG's Adam SGD step, for train only; in the
    fixed-point learner's words, called from the sequential executor's host loop). The
    network and the batch are checked against the kernel's parameters when the run is built
    (`hrl.runtime.build_run`)."""
    _require(name in ("infer", "train"), f"placement.{name}",
             "fpga places only infer and train (the FPGA learner's primitives; the replay's "
             "sample and update go to the RTL tree with replay.backend: rtl)", "fpga")
    _require(cfg.algo == "dqn" or (cfg.algo == "ddpg" and name == "train"),
             f"placement.{name}",
             "fpga runs DQN's Q network (infer, train) and DDPG's SGD step (train) only; "
             "DDPG's actor infers in JAX", cfg.algo)
    _require(getattr(cfg.agent, "numerics", None) == "fixed", "agent.numerics",
             f"placement.{name}: fpga computes in the fixed-point learner's words; set "
             "agent.numerics: fixed", getattr(cfg.agent, "numerics", None))
    if name == "train":
        _require(getattr(cfg.agent, "optimizer", None) == "adam", "agent.optimizer",
                 "placement.train: fpga: the FPGA learner's SGD step implements adam",
                 getattr(cfg.agent, "optimizer", None))
    _require(cfg.train.executor in ("auto", "sequential"), "train.executor",
             f"placement.{name}: fpga runs in the sequential executor's host loop",
             cfg.train.executor)
    _require(cfg.seeds == 1, "seeds", f"placement.{name}: fpga runs one seed at a time",
             cfg.seeds)


def _require(ok: bool, key: str, what: str, value) -> None:
    if not ok:
        raise ConfigError(f"config key '{key}': {what}, got {value!r}")
