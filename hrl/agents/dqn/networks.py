"""DQN network: observation to one Q-value per discrete action, as the config's network spec
says (`hrl.agents.networks`: an MLP, a conv stack with an MLP head, MinAtar's torso, or a
registered module)."""

from __future__ import annotations

import flax.linen as nn

from hrl.agents.networks import make_network


def make_q_network(hidden_sizes: tuple[int, ...], num_actions: int, activation: str,
                   network: str = "mlp", conv_layers=()) -> nn.Module:
    """Q(s, .): (B, *obs_shape) -> (B, num_actions)."""
    return make_network(network, hidden_sizes, conv_layers, num_actions, activation)
