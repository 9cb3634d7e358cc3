"""hrl: deep RL with a prioritized replay buffer, mapped onto CPUs, GPUs and FPGAs.

    import hrl
    hrl.train(cfg, run_dir="runs/x")     # cfg: hrl.config.RunConfig (load_config or built)
    policy = hrl.load("runs/x")          # the trained agent: policy.act(obs), policy.explore
    hrl.evaluate(policy)                 # the returns `hrl eval runs/x` reports

See `hrl.api` and docs/guides/python.md.
"""

import importlib

__version__ = "0.1.0"

# The names of `hrl.api`, loaded on first use (PEP 562): `import hrl.replay` in a simulator's
# golden model or a worker process must not bring in the runtime, orbax and Ray with it.
API = ("Policy", "evaluate", "load", "train")

__all__ = [*API, "__version__"]


def __getattr__(name: str):
    if name in API:
        return getattr(importlib.import_module("hrl.api"), name)
    raise AttributeError(f"module 'hrl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
