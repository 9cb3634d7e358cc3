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
from hrl.config.rules import check_limit, check_tolerance, round_samples, updates_schedule
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
    "round_samples",
    "to_dict",
    "updates_schedule",
]
