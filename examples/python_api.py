"""hrl from Python, start to end: a config built in code, a network of your own
(`register_network`), a JAX env of your own (examples/corridor_jax.py), then train, load the
trained policy, act with it and evaluate it.

    .venv/bin/python examples/python_api.py --steps 4000
"""

from __future__ import annotations

import argparse

import flax.linen as nn
import jax
import jax.numpy as jnp

import hrl
from hrl.agents import DQNConfig, register_network
from hrl.config import EnvConfig, ReplayConfig, RunConfig, TrainConfig


class DuelingQ(nn.Module):
    """A dueling Q head (Wang et al. 2016): Q = V + A - mean(A), over one hidden layer."""

    out_size: int  # the number of actions: hrl calls the factory with it

    @nn.compact
    def __call__(self, obs):
        x = nn.relu(nn.Dense(64)(obs.astype(jnp.float32)))
        value, advantage = nn.Dense(1)(x), nn.Dense(self.out_size)(x)
        return value + advantage - advantage.mean(axis=-1, keepdims=True)


# `agent.network: dueling` now names it (in this process: register it again before loading
# the run elsewhere). The factory takes the output size and returns the flax module.
register_network("dueling", DuelingQ)


def make_config(steps: int) -> RunConfig:
    """The config of examples/corridor_jax.yaml with the dueling network, written in code."""
    cfg = RunConfig(
        algo="dqn",
        name="corridor-dueling",
        env=EnvConfig(name="jax:examples.corridor_jax:make_corridor", num_envs=4,
                      kwargs={"length": 8, "max_episode_steps": 32}),
        agent=DQNConfig(network="dueling", target_update_period=50, tau=1.0,
                        eps_decay_steps=2000),
        replay=ReplayConfig(capacity=10_000, n_step=3),
        train=TrainConfig(total_env_steps=steps, batch_size=32, train_ratio=0.25,
                          rollout_length=8, learning_starts=256, chunk_env_steps=512,
                          eval_every=256, eval_episodes=8),
    )
    cfg.validate()  # what loading a YAML file checks: a bad value is one ConfigError line
    return cfg


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--run-dir", default="runs/python-api")
    args = parser.parse_args(argv)
    summary = hrl.train(make_config(args.steps), run_dir=args.run_dir, progress=False)

    policy = hrl.load(args.run_dir)                 # the latest checkpoint; best=True: the best
    obs = jax.nn.one_hot(jnp.arange(8), 8)          # a batch: every cell of the corridor
    greedy = policy.act(obs)                        # int32 (8,), argmax Q
    noisy = policy.explore(obs, jax.random.PRNGKey(0))  # epsilon-greedy, as in training
    result = hrl.evaluate(policy)                   # the returns `hrl eval` reports
    print(f"{summary['env_steps']:,} env steps; greedy actions {greedy.tolist()}; "
          f"eval return {result['eval_return']:.2f} over {result['episodes']} episodes")
    return {"summary": summary, "greedy": greedy, "explore": noisy, "eval": result}


if __name__ == "__main__":
    main()
