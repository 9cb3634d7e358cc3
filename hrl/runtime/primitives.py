"""The five primitives of the training loop (env, infer, sample, update, train; the iteration
is spelled out in hrl/runtime/iteration.py) as separate pure functions with explicit inputs/outputs.

| primitive | function                                               | state it owns       |
| --------- | ------------------------------------------------------ | ------------------- |
| env       | env_step(env_state, actions, key) -> (env_state, out)  | EnvState            |
| infer     | infer(agent_state, carry, obs, key, env_step,          | reads AgentState,   |
|           |       episode_start) -> (carry, actions)               | actor noise carry   |
| sample    | sample(replay_state, key, beta) -> Sample              | reads ReplayState   |
| update    | update(replay_state, indices, td) -> replay_state;     | ReplayState         |
|           | insert(replay_state, transitions[, priorities])        |                     |
|           |   -> replay_state                                      |                     |
| train     | train(agent_state, batch, weights) -> (agent_state,    | AgentState          |
|           |                                        td, metrics)    |                     |

Nothing here knows where it runs: the fused executor traces them all into one `lax.scan`;
the host executors (`hrl.runtime.executors`) jit each one alone and moves its inputs to the
device the mapping assigns it, which is how the mapping framework places each primitive on its
own device or backend. The data that crosses primitives is exactly what the signatures show
(observations, actions, transitions, a batch with indices and weights, TD errors, weights for
inference), which is what a mapping's link costs are computed from.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from hrl.config import PRIMITIVES  # noqa: F401  (re-exported: the one definition)


@dataclasses.dataclass(frozen=True)
class Primitives:
    """Static bundle of the primitive functions for one run (built by `make_primitives`)."""

    env_reset: Callable[[Any], tuple[Any, Any]]
    env_step: Callable[[Any, Any, Any], tuple[Any, Any]]
    infer: Callable[[Any, Any, Any, Any], Any]
    sample: Callable[[Any, Any, Any], Any]
    update: Callable[[Any, Any, Any], Any]
    insert: Callable[[Any, Any], Any]
    train: Callable[[Any, Any, Any], tuple[Any, Any, Any]]


def make_primitives(env, agent, replay, batch_size: int, infer=None,
                    train=None) -> Primitives:
    """Bind the env, the agent and a replay buffer (any `hrl.replay` buffer) into the five
    primitives. `replay=None` (the pipelined executor's actors' process) leaves the replay's
    primitives None. `infer`, `train`: ones of the same signatures in place of the agent's
    (the FPGA learner's, `hrl.fixed_point.kernel_host.make_fpga_infer`,
    `hrl.fixed_point.kernel_train`)."""

    def agent_infer(agent_state, carry, obs, key, env_step, episode_start):
        return agent.act_with_carry(agent_state, carry, obs, key, env_step, True, episode_start)

    infer = agent_infer if infer is None else infer

    def sample(replay_state, key, beta):
        return replay.sample(replay_state, key, batch_size, beta)

    def update(replay_state, indices, td_errors):
        return replay.update(replay_state, indices, td_errors)

    def insert(replay_state, transitions, priorities=None):
        # `priorities`: the items' first priorities computed where they were acted (the
        # distributed executor's `train.actor_priorities`); None: the largest seen so far.
        if priorities is None:
            return replay.add(replay_state, transitions)
        return replay.add(replay_state, transitions, priorities)

    def agent_train(agent_state, batch, weights):
        return agent.train_step(agent_state, batch, weights)

    train = agent_train if train is None else train

    replay_side = replay is not None
    return Primitives(
        env_reset=env.reset,
        # a host env's step emits no HLO: unscoped, it costs no context manager per step
        env_step=_scoped("env", env.step) if env.spec.is_jax else env.step,
        infer=_scoped("infer", infer),
        sample=_scoped("sample", sample) if replay_side else None,
        update=_scoped("update", update) if replay_side else None,
        insert=_scoped("insert", insert) if replay_side else None,
        train=_scoped("train", train),
    )


def _scoped(name: str, fn: Callable) -> Callable:
    """`fn` under the name scope `hrl.<name>`: every HLO op it emits carries the primitive's
    name in its metadata, so a profile of a fused program can be split by primitive
    (`experiments/bench/profile_fused_step.py`). Metadata only: the program is unchanged."""

    @functools.wraps(fn)
    def wrapped(*args):
        with jax.named_scope(f"hrl.{name}"):
            return fn(*args)

    return wrapped


def beta_at(env_steps, total_env_steps: int, beta_start: float, beta_end: float):
    """Importance-weight exponent annealed linearly over the run."""
    frac = jnp.minimum(jnp.asarray(env_steps, jnp.float32) / jnp.float32(total_env_steps), 1.0)
    return jnp.float32(beta_start) + (jnp.float32(beta_end) - jnp.float32(beta_start)) * frac
