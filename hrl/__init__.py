"""hrl: deep RL with a prioritized replay buffer, mapped onto CPUs, GPUs and FPGAs."""

__version__ = "0.1.0"
