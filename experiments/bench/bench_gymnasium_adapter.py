"""The gymnasium adapter's step against the same step through gymnasium's SyncVectorEnv.

    .venv/bin/python experiments/bench/bench_gymnasium_adapter.py [--envs 1 8] [--rounds 3]

`GymnasiumVecEnv` steps its M copies in its own loop (the outputs are SyncVectorEnv's in
SAME_STEP mode bit for bit: tests/envs/test_envs.py). The reference here is the adapter as it
was before, on SyncVectorEnv: the vector env's step, then the same casts, final observations
and episode bookkeeping. Per M (CartPole-v1) and per kind of call, back to back and after a
5 ms wait (a latency-bound env's actor), the thread CPU per step of each, both in one process,
in interleaved rounds; the median round and the ratio. Writes
experiments/results/train/gymnasium_adapter.csv.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import gymnasium as gym
import jax
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from probe_wait_cost import cpu_us_per_call  # beside this script

from hrl.envs.gymnasium_env import GymnasiumVecEnv
from hrl.envs.spec import EnvState, StepOut, book_step, init_bookkeeping

OUT = Path(__file__).resolve().parents[1] / "results" / "train" / "gymnasium_adapter.csv"
ENV_ID = "CartPole-v1"


class SyncVectorReference:
    """The adapter's former step: gymnasium's SyncVectorEnv, then the same post-processing."""

    def __init__(self, m: int):
        self.m = m
        self.vec = SyncVectorEnv([lambda: gym.make(ENV_ID) for _ in range(m)],
                                 autoreset_mode=AutoresetMode.SAME_STEP)

    def reset(self, key):
        obs, _ = self.vec.reset(seed=int(jax.random.randint(key, (), 0, 2**31 - 1)))
        ret, length = init_bookkeeping(self.m, np)
        return EnvState(None, ret, length), np.asarray(obs, np.float32)

    def step(self, state, actions):
        obs, reward, terminated, truncated, info = self.vec.step(actions.astype(np.int64))
        obs = np.asarray(obs, np.float32)
        reward = np.asarray(reward, np.float32)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool) & ~terminated
        next_obs_true = obs.copy()
        if "_final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                next_obs_true[i] = info["final_obs"][i]
        ret, length, fields = book_step(np.asarray(state.episode_return),
                                        np.asarray(state.episode_length), reward, terminated,
                                        truncated)
        return EnvState(None, ret, length), StepOut(obs=obs, reward=reward,
                                                    next_obs_true=next_obs_true, **fields)


def cpu_us_per_step(make, m: int, wait_s: float, steps: int) -> float:
    """Thread CPU per step of `make(m)` stepping CartPole (`probe_wait_cost.cpu_us_per_call`)."""
    env = make(m)
    carry = [env.reset(jax.random.PRNGKey(0))[0]]
    actions = np.zeros(m, np.int32)

    def step():
        carry[0], _ = env.step(carry[0], actions)

    return cpu_us_per_call(step, steps, wait_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    sides = {"adapter": lambda m: GymnasiumVecEnv(ENV_ID, m),
             "sync_vector_env": SyncVectorReference}
    rows = []
    for m in args.envs:
        for wait in (0.0, 0.005):
            got = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, make in sides.items():
                    got[name].append(cpu_us_per_step(make, m, wait, args.steps))
            own, ref = (float(np.median(got[k])) for k in ("adapter", "sync_vector_env"))
            rows.append({"env": ENV_ID, "num_envs": m, "wait_ms": wait * 1e3,
                         "rounds": args.rounds, "adapter_cpu_us": round(own, 1),
                         "sync_vector_env_cpu_us": round(ref, 1),
                         "ratio": round(ref / own, 2)})
            print(rows[-1], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
