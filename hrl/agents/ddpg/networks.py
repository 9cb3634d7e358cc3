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
    """Q(s, a): an MLP on the concatenated observation and action."""

    hidden_sizes: tuple[int, ...]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs, action):
        b = obs.shape[0]
        x = jnp.concatenate([obs.reshape(b, -1), action.reshape(b, -1)], axis=-1)
        return MLP(self.hidden_sizes, 1, self.activation)(x)[:, 0]
