"""Evaluation of the trained policy, as SB3's zoo and CleanRL report it: the greedy (DQN) or
deterministic (DDPG: the actor's mean, no noise) policy on `train.eval_episodes` fresh
episodes, one per env copy of its own.

The evaluation envs are copies apart from the training envs, and their keys are their own:
`eval_key(seed, env_steps)` folds a fixed stream tag, the run's seed and the env step of the
evaluation into a key that nothing in training ever draws, so evaluating changes nothing in
the `TrainState` and a run with evaluation trains bit for bit as one without; a resumed run
evaluates at the same env steps with the same keys, so its evaluations are the same too.

A JAX env (gymnax, brax) evaluates in one jitted `lax.while_loop` over the E copies (vmapped
over stacked seeds, whose loops run until every seed's episodes have ended); a host env
(gymnasium) is stepped in a Python loop with the jitted policy. Each copy runs one episode
from its reset to its first end; the return of that episode is its score. Cost: about the
longest episode's steps of E env copies and E policy evaluations per step.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl import envs
from hrl.config import RunConfig

# Tag of the evaluation's key stream ("eval" in ASCII): folded into the seed's root key, it
# gives keys that the training's splits of the same root never produce.
EVAL_STREAM = 0x6576616C


def eval_key(seed, env_steps) -> jax.Array:
    """The key of the evaluation of seed `seed` at `env_steps` (see the module docstring)."""
    root = jax.random.fold_in(jax.random.PRNGKey(seed), EVAL_STREAM)
    return jax.random.fold_in(root, env_steps)


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluator:
    """E env copies and the agent's deterministic policy; `returns(agent_state, seed, step)`
    gives the E episode returns, float32 (E,), or (S, E) for agent states stacked over S
    seeds (`seeds` then an array of S)."""

    env: Any
    agent: Any
    episodes: int

    def returns(self, agent_state, seed, env_steps: int) -> np.ndarray:
        if self.env.spec.is_jax:
            seeds = np.asarray(seed, np.int32)
            if seeds.ndim:
                return np.asarray(self._vmapped(agent_state, jnp.asarray(seeds),
                                                jnp.int32(env_steps)))
            return np.asarray(self._one(agent_state, jnp.int32(seed), jnp.int32(env_steps)))
        return self._host(agent_state, int(seed), env_steps)

    # -- JAX envs: one jitted loop -------------------------------------------------------
    def _episode_returns(self, agent_state, seed, env_steps):
        k_reset, k_steps = jax.random.split(eval_key(seed, env_steps))
        env_state, obs = self.env.reset(k_reset)
        e = self.episodes

        def running(carry):
            return ~jnp.all(carry[3])

        def step(carry):
            env_state, obs, key, ended, returns = carry
            key, k = jax.random.split(key)
            env_state, out = self.env.step(env_state, self.agent.policy(agent_state, obs), k)
            first = out.completed & ~ended
            returns = jnp.where(first, out.completed_return, returns)
            return env_state, out.obs, key, ended | out.completed, returns

        carry = (env_state, obs, k_steps, jnp.zeros((e,), bool), jnp.zeros((e,), jnp.float32))
        return jax.lax.while_loop(running, step, carry)[4]

    @functools.cached_property
    def _one(self):
        return jax.jit(self._episode_returns)

    @functools.cached_property
    def _vmapped(self):
        return jax.jit(jax.vmap(self._episode_returns, in_axes=(0, 0, None)))

    # -- host envs: a Python loop --------------------------------------------------------
    @functools.cached_property
    def _policy(self):
        return jax.jit(self.agent.policy)

    def _host(self, agent_state, seed: int, env_steps: int) -> np.ndarray:
        env_state, obs = self.env.reset(eval_key(seed, env_steps))
        ended = np.zeros(self.episodes, bool)
        returns = np.zeros(self.episodes, np.float32)
        while not ended.all():
            env_state, out = self.env.step(env_state, np.asarray(self._policy(agent_state, obs)))
            first = np.asarray(out.completed) & ~ended
            returns[first] = np.asarray(out.completed_return)[first]
            ended |= np.asarray(out.completed)
            obs = out.obs
        return returns


def make_evaluator(cfg: RunConfig, agent, episodes: int | None = None) -> Evaluator:
    """An evaluator of `episodes` (default `train.eval_episodes`) env copies of the run's env."""
    episodes = cfg.train.eval_episodes if episodes is None else episodes
    return Evaluator(envs.make_env(cfg.env.name, episodes, **cfg.env.kwargs), agent, episodes)
