"""The run configuration: a typed schema (`schema.py`), the rules that tie keys together
(`rules.py`), and reading and writing YAML with `--set` overrides (`loading.py`).

    from hrl.config import load_config
    cfg = load_config("experiments/configs/dqn_cartpole.yaml", ["train.total_env_steps=20000"])

The config imports nothing from the runtime: it describes a run, the runtime runs it.
"""

from hrl.config.loading import (
    apply_override,
    config_from_dict,
    dump_config,
    load_config,
    load_run_config,
    parse_yaml,
    to_dict,
)
from hrl.config.rules import (
    IN_ORDER_EXECUTORS,
    check_limit,
    check_tolerance,
    resolve_next_obs,
    round_samples,
    updates_schedule,
)
from hrl.config.schema import (
    OLD_DEFAULTS,
    PLACEMENT_VALUE,
    PRIMITIVES,
    REMOVED_KEYS,
    ConfigError,
    EnvConfig,
    LogConfig,
    ReplayConfig,
    RunConfig,
    TrainConfig,
    agent_config_class,
)

__all__ = [
    "IN_ORDER_EXECUTORS",
    "OLD_DEFAULTS",
    "PLACEMENT_VALUE",
    "PRIMITIVES",
    "REMOVED_KEYS",
    "ConfigError",
    "EnvConfig",
    "LogConfig",
    "ReplayConfig",
    "RunConfig",
    "TrainConfig",
    "agent_config_class",
    "apply_override",
    "check_limit",
    "check_tolerance",
    "config_from_dict",
    "dump_config",
    "load_config",
    "load_run_config",
    "parse_yaml",
    "resolve_next_obs",
    "round_samples",
    "to_dict",
    "updates_schedule",
]
