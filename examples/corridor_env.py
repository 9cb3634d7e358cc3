"""A gymnasium environment of your own, trained by hrl.

`Corridor-v0`: the agent starts at the left end of a corridor of `length` cells and moves left
or right; reaching the right end pays 1 and ends the episode, every step costs 0.01, and an
episode is cut after `4 * length` steps. Importing this module registers it, so hrl finds it as
`gymnasium:examples.corridor_env:Corridor-v0` (gymnasium's "module:id" form: hrl imports the
module first), from `hrl train` and from the Python API alike:

    .venv/bin/hrl train examples/corridor.yaml
    .venv/bin/python examples/corridor_env.py --steps 4000
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from hrl.config import load_config
from hrl.runtime.run import train


class Corridor(gym.Env):
    """Observation: one-hot position (float32, `length` values); actions: 0 left, 1 right."""

    def __init__(self, length: int = 8):
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.pos = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length, np.float32)
        obs[self.pos] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return self._obs(), {}

    def step(self, action):
        self.pos = int(np.clip(self.pos + (1 if action == 1 else -1), 0, self.length - 1))
        done = self.pos == self.length - 1
        return self._obs(), (1.0 if done else -0.01), done, False, {}


if "Corridor-v0" not in gym.registry:
    gym.register("Corridor-v0", entry_point=Corridor, max_episode_steps=32)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--run-dir", default=None)
    args = parser.parse_args(argv)
    cfg = load_config("examples/corridor.yaml", [f"train.total_env_steps={args.steps}",
                                                 "log.progress=false"])
    summary = train(cfg, run_dir=args.run_dir)
    print(f"{summary['env_steps']:,} env steps; mean return of the last "
          f"{summary['return_window']} episodes: {summary['recent_return']}")
    return summary


if __name__ == "__main__":
    main()
