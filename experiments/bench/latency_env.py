"""A latency-bound host env for the distributed-actors benchmark: gymnasium's CartPole whose
every step first waits `delay_s` (default 5 ms), as a remote simulator, a robot or a game
server answers after a round trip. Waiting, not computing: the step holds no core.

    env.name: "gymnasium:experiments.bench.latency_env:SlowCartPole-v0"

(gymnasium imports the module named before the colon, which registers the id; the repository
root must be on the path of every process that builds the env, Ray's workers included.)
"""

from __future__ import annotations

import time

import gymnasium as gym
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

DELAY_S = 0.005


class SlowCartPole(CartPoleEnv):
    """CartPole-v1 whose step waits `delay_s` before it simulates."""

    def __init__(self, delay_s: float = DELAY_S, **kwargs):
        super().__init__(**kwargs)
        self.delay_s = delay_s

    def step(self, action):
        time.sleep(self.delay_s)
        return super().step(action)


if "SlowCartPole-v0" not in gym.registry:
    gym.register("SlowCartPole-v0", entry_point=SlowCartPole, max_episode_steps=500)
