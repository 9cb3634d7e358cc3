"""A JAX environment of your own, trained by hrl: the corridor of `corridor_env.py`, written
with gymnax's API so that it steps inside the jitted training loop (no host round trip).

The gymnax API is four methods, pure functions of explicit state:

    obs, state = env.reset(key, params)
    obs, state, reward, done, info = env.step(key, state, action, params)
    env.action_space(params)          # .n (discrete) or .shape/.low/.high (continuous)
    env.default_params                # optional; params may be None

hrl finds it by the name `jax:examples.corridor_jax:make_corridor` (module, then factory; the
factory's keyword arguments come from the config's env.kwargs), or takes the object itself:
`hrl.train(cfg, env=Corridor())`. hrl vmaps it over env.num_envs copies and resets finished
episodes itself.

    .venv/bin/hrl train examples/corridor_jax.yaml
    .venv/bin/python examples/corridor_jax.py --steps 4000
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

import hrl
from hrl.config import load_config


class Discrete(NamedTuple):
    n: int


class State(NamedTuple):
    pos: jax.Array  # int32 cell, 0 .. length - 1
    time: jax.Array  # int32 steps in this episode


@dataclasses.dataclass(frozen=True)
class Corridor:
    """Start at the left end of `length` cells; 0 moves left, 1 right; reaching the right
    end pays 1 and ends the episode; every other step costs 0.01; the observation is the
    one-hot position. hrl cuts episodes at `max_episode_steps` (env.kwargs) if given."""

    length: int = 8

    default_params = None

    def action_space(self, params):
        return Discrete(2)

    def _obs(self, pos):
        return jax.nn.one_hot(pos, self.length, dtype=jnp.float32)

    def reset(self, key, params):
        del key, params  # always the left end
        state = State(jnp.int32(0), jnp.int32(0))
        return self._obs(state.pos), state

    def step(self, key, state, action, params):
        del key, params  # deterministic
        pos = jnp.clip(state.pos + jnp.where(action == 1, 1, -1), 0, self.length - 1)
        done = pos == self.length - 1
        reward = jnp.where(done, 1.0, -0.01).astype(jnp.float32)
        return self._obs(pos), State(pos, state.time + 1), reward, done, {}


def make_corridor(length: int = 8) -> Corridor:
    """The factory `jax:examples.corridor_jax:make_corridor` names."""
    return Corridor(length)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--run-dir", default="runs/corridor-jax")
    args = parser.parse_args(argv)
    cfg = load_config("examples/corridor_jax.yaml",
                      [f"train.total_env_steps={args.steps}"])
    summary = hrl.train(cfg, run_dir=args.run_dir)
    policy = hrl.load(args.run_dir)
    # The greedy policy from the left end: all rights reach the goal in length - 1 steps.
    obs, _ = Corridor(cfg.env.kwargs.get("length", 8)).reset(jax.random.PRNGKey(0), None)
    first_action = int(policy.act(obs[None])[0])
    result = hrl.evaluate(policy)
    print(f"trained {summary['env_steps']:,} env steps; first greedy action {first_action} "
          f"(1 = right); eval return {result['eval_return']:.2f}")
    return {"summary": summary, "first_action": first_action, "eval": result}


if __name__ == "__main__":
    main()
