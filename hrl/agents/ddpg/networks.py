"""DDPG networks: a deterministic actor squashed into the action box, and a Q(s, a) critic."""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import MLP


class Actor(nn.Module):
    """mu(s): tanh of an MLP, rescaled from [-1, 1] to [low, high] per component."""

    hidden_sizes: tuple[int, ...]
    action_shape: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs):
        size = int(np.prod(self.action_shape))
        # A small last-layer init keeps tanh out of saturation at the start (Lillicrap et al.).
        x = MLP(self.hidden_sizes, size, self.activation, out_scale=1e-2)(obs)
        low = jnp.asarray(self.low, jnp.float32)
        high = jnp.asarray(self.high, jnp.float32)
        action = low + (jnp.tanh(x) + 1.0) * 0.5 * (high - low)
        return action.reshape(obs.shape[0], *self.action_shape)


class Critic(nn.Module):
    """Q(s, a): an MLP on the concatenated observation and action, (B,); with `heads` > 1,
    that many independent MLPs, (heads, B) (TD3's twin critics)."""

    hidden_sizes: tuple[int, ...]
    activation: str = "relu"
    heads: int = 1

    @nn.compact
    def __call__(self, obs, action):
        b = obs.shape[0]
        x = jnp.concatenate([obs.reshape(b, -1), action.reshape(b, -1)], axis=-1)
        qs = [MLP(self.hidden_sizes, 1, self.activation)(x)[:, 0] for _ in range(self.heads)]
        return qs[0] if self.heads == 1 else jnp.stack(qs)
