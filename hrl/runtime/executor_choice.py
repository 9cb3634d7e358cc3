"""Which executor runs a config: decided here and nowhere else (imports nothing that runs JAX)."""

from __future__ import annotations

from hrl.config import RunConfig

EXECUTORS = ("fused", "data-parallel", "sequential", "pipelined", "distributed")


def env_is_jax(cfg: RunConfig) -> bool:
    """Whether the config's env is a JAX one (gymnax, brax), from its name alone."""
    return not cfg.env.name.startswith("gymnasium:")


def choose_executor(cfg: RunConfig, placed: bool | None = None) -> str:
    """The executor of `cfg`, one of `EXECUTORS`, from the config alone (so it can be asked
    before JAX's backend starts). `placed`: whether primitives are placed on devices (default:
    the config's `placement` is not empty).

    | train.devices | train.executor         | env and replay          | executor      |
    | ------------- | ---------------------- | ----------------------- | ------------- |
    | > 1           | auto, fused            | JAX                     | data-parallel |
    | 1             | auto                   | JAX, nothing placed     | fused         |
    | 1             | auto                   | otherwise               | sequential    |
    | 1             | fused                  | JAX, nothing placed     | fused         |
    | 1             | sequential, pipelined, | any                     | as named      |
    |               | distributed            |                         |               |

    Anything else is a one-line error naming the key."""
    t = cfg.train
    placed = bool(cfg.placement) if placed is None else placed
    can_fuse = env_is_jax(cfg) and cfg.replay.backend == "jax"
    if t.devices > 1:
        return "data-parallel"
    if t.executor == "auto":
        return "fused" if can_fuse and not placed else "sequential"
    if t.executor == "fused" and placed:
        raise ValueError(
            "config key 'train.executor': a placement of primitives on devices runs the host "
            "loop; set train.executor: sequential (or pipelined) or drop the placement")
    if t.executor == "fused" and not can_fuse:
        raise ValueError(
            "config key 'train.executor': fused needs a JAX environment and replay.backend "
            f"'jax' (got env {cfg.env.name}, backend {cfg.replay.backend!r}); set "
            "train.executor: sequential")
    return t.executor


def runs_host_loop(cfg: RunConfig) -> bool:
    """Whether the run's primitives are called one by one from Python (sequential or
    pipelined executor) rather than inside a fused program."""
    return choose_executor(cfg) in ("sequential", "pipelined", "distributed")
