"""n-step returns as a pure per-env accumulator.

    acc = nstep_init(example_transition, n=3, num_envs=M)
    acc, transition = nstep_push(acc, step, gamma)      # every env step, all M envs at once

The accumulator keeps the last n steps of every env (oldest first). Each push emits, for every
env, the transition that STARTS at the oldest step of the window (so output lags input by n-1
steps; the first n-1 emissions of a run are filler and the caller discards them):

    reward   = sum_{j<=k} gamma**j r_j
    next_obs = next_obs_true_k
    discount = gamma**(k+1) * (1 - terminated_k)

where k is the first step in the window whose episode ended (done), or n-1 if none did. So an
episode end cuts the return, a termination stops bootstrapping and a time-limit truncation
still bootstraps (from the true last observation, not the auto-reset one). Every step of every
env starts exactly one emitted transition, so nothing near an episode end is lost and the
output has a fixed shape (M transitions per push), which keeps it inside `lax.scan`.
With n = 1 this is exactly the one-step transition (obs, a, r, next_obs, gamma * (1 - term)).

Cost per push: O(n M) for the window shift plus O(n M) for the discounted sums.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class NStepState:
    """Last n steps of M envs; every leaf has shape (n, M, ...), index 0 = oldest."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array  # float32 (n, M)
    next_obs: jax.Array  # true next observation (before auto-reset)
    terminated: jax.Array  # bool (n, M)
    done: jax.Array  # bool (n, M): terminated | truncated
    n: int = struct.field(pytree_node=False)


def nstep_init(example_transition: dict, n: int, num_envs: int) -> NStepState:
    """An empty window for transitions shaped like `example_transition` (unbatched)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n_step must be a positive int, got {n!r}")

    def window(x):
        x = jnp.asarray(x)
        return jnp.zeros((n, num_envs) + x.shape, x.dtype)

    return NStepState(
        obs=window(example_transition["obs"]),
        action=window(example_transition["action"]),
        reward=jnp.zeros((n, num_envs), jnp.float32),
        next_obs=window(example_transition["next_obs"]),
        terminated=jnp.zeros((n, num_envs), bool),
        done=jnp.zeros((n, num_envs), bool),
        n=n,
    )


def nstep_push(
    state: NStepState, obs, action, reward, next_obs, terminated, done, gamma: float
) -> tuple[NStepState, dict]:
    """Append one step of M envs; emit the n-step transition of the oldest step in the window.

    Arguments have leading dimension M. Returns the new window and a transition dict
    {'obs', 'action', 'reward', 'next_obs', 'discount'} with leading dimension M.
    """

    def shift(window, new):
        new = jnp.asarray(new, window.dtype)
        return jnp.concatenate([window[1:], new[None]], axis=0)

    state = state.replace(
        obs=shift(state.obs, obs),
        action=shift(state.action, action),
        reward=shift(state.reward, reward),
        next_obs=shift(state.next_obs, next_obs),
        terminated=shift(state.terminated, terminated),
        done=shift(state.done, done),
    )
    n = state.n
    gamma = jnp.float32(gamma)
    # Step j is included if no episode ended at steps 0..j-1 of the window.
    ended_before = jnp.cumsum(state.done.astype(jnp.int32), axis=0) - state.done.astype(jnp.int32)
    included = ended_before == 0  # (n, M); step 0 always included
    powers = gamma ** jnp.arange(n, dtype=jnp.float32)
    ret = jnp.sum(jnp.where(included, state.reward * powers[:, None], 0.0), axis=0)
    last = jnp.sum(included.astype(jnp.int32), axis=0) - 1  # k per env
    env = jnp.arange(state.reward.shape[1])
    term_k = state.terminated[last, env]
    next_obs_k = state.next_obs[last, env]
    discount = gamma ** (last + 1).astype(jnp.float32) * (1.0 - term_k.astype(jnp.float32))
    transition = {
        "obs": state.obs[0],
        "action": state.action[0],
        "reward": ret.astype(jnp.float32),
        "next_obs": next_obs_k,
        "discount": discount.astype(jnp.float32),
    }
    return state, transition
