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

    Returns (loss, (td_errors, q_mean)).
    """
    next_action = actor_apply(target_actor_params, batch["next_obs"])
    q_next = critic_apply(target_critic_params, batch["next_obs"], next_action)
    target = jax.lax.stop_gradient(batch["reward"] + batch["discount"] * q_next)
    q = critic_apply(critic_params, batch["obs"], batch["action"])
    td = target - q
    if huber_delta is None:
        per_sample = 0.5 * jnp.square(td)
    else:
        per_sample = optax.huber_loss(td, delta=huber_delta)
    return jnp.mean(weights * per_sample), (td, jnp.mean(q))


def actor_loss(actor_params, critic_params, obs, actor_apply, critic_apply):
    """-mean Q(s, mu(s)): ascend the critic along the actor's actions (unweighted)."""
    return -jnp.mean(critic_apply(critic_params, obs, actor_apply(actor_params, obs)))
