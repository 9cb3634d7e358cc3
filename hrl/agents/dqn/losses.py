"""DQN loss: (double) Q-learning TD errors, Huber loss weighted by importance weights."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def td_errors(q_obs, q_next_online, q_next_target, action, reward, discount, double: bool):
    """Per-sample TD error  r + discount * Q_target(s', a*) - Q(s, a).

    a* = argmax_a Q_online(s', a) for double DQN (van Hasselt et al. 2016),
    argmax_a Q_target(s', a) for plain DQN. The target is held fixed (no gradient).
    """
    q_taken = jnp.take_along_axis(q_obs, action[:, None], axis=1)[:, 0]
    chooser = q_next_online if double else q_next_target
    best_next = jnp.argmax(chooser, axis=1)
    q_next = jnp.take_along_axis(q_next_target, best_next[:, None], axis=1)[:, 0]
    target = jax.lax.stop_gradient(reward + discount * q_next)
    return target - q_taken


def dqn_loss(params, target_params, batch, weights, apply_fn, double: bool, huber_delta: float):
    """mean_i w_i * huber(td_i). Returns (loss, (td_errors, q_taken_mean))."""
    q_obs = apply_fn(params, batch["obs"])
    q_next_online = apply_fn(params, batch["next_obs"])
    q_next_target = apply_fn(target_params, batch["next_obs"])
    td = td_errors(
        q_obs,
        q_next_online,
        q_next_target,
        batch["action"],
        batch["reward"],
        batch["discount"],
        double,
    )
    # huber(td) with the target fixed: optax.huber_loss(pred, target) = huber(pred - target).
    loss = jnp.mean(weights * optax.huber_loss(td, delta=huber_delta))
    return loss, (td, jnp.mean(q_obs))
