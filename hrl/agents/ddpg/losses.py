"""DDPG losses: critic TD regression (IS-weighted) and the deterministic policy gradient."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def critic_loss(
    critic_params,
    target_actor_params,
    target_critic_params,
    batch,
    weights,
    actor_apply,
    critic_apply,
    huber_delta: float | None,
):
    """td = r + discount * Q'(s', mu'(s')) - Q(s, a); loss = mean(w * td^2 / 2) or Huber.

    Twin critics (Q of shape (2, B)): the target takes the smaller of the two target critics
    (clipped double Q, Fujimoto et al. 2018: DDPG's critic overestimates, and on tasks like
    inverted_pendulum the overestimate feeds back until the policy collapses); both regress
    on it and the first one's td errors are the new priorities.

    Returns (loss, (td_errors, q_mean)).
    """
    next_action = actor_apply(target_actor_params, batch["next_obs"])
    q_next = critic_apply(target_critic_params, batch["next_obs"], next_action)
    if q_next.ndim == 2:
        q_next = jnp.min(q_next, axis=0)
    target = jax.lax.stop_gradient(batch["reward"] + batch["discount"] * q_next)
    q = critic_apply(critic_params, batch["obs"], batch["action"])
    td = target - q
    if huber_delta is None:
        per_sample = 0.5 * jnp.square(td)
    else:
        per_sample = optax.huber_loss(td, delta=huber_delta)
    per_sample = per_sample.reshape(-1, td.shape[-1]).sum(axis=0)  # summed over critics
    td_first = td.reshape(-1, td.shape[-1])[0]
    return jnp.mean(weights * per_sample), (td_first, jnp.mean(q))


def actor_loss(actor_params, critic_params, obs, actor_apply, critic_apply):
    """-mean Q(s, mu(s)): ascend the (first) critic along the actor's actions (unweighted)."""
    q = critic_apply(critic_params, obs, actor_apply(actor_params, obs))
    return -jnp.mean(q.reshape(-1, q.shape[-1])[0])
