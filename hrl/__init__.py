"""hrl: deep RL with a prioritized replay buffer, mapped onto CPUs, GPUs and FPGAs.

    import hrl
    hrl.train(cfg, run_dir="runs/x")     # cfg: hrl.config.RunConfig (load_config or built)
    policy = hrl.load("runs/x")          # the trained agent: policy.act(obs), policy.explore
    hrl.evaluate(policy)                 # the returns `hrl eval runs/x` reports

See `hrl.api` and docs/guides/python.md.
"""

from hrl.api import Policy, evaluate, load, train

__version__ = "0.1.0"

__all__ = ["Policy", "__version__", "evaluate", "load", "train"]
