"""DQN network: an MLP from observation to one Q-value per discrete action."""

from __future__ import annotations

from hrl.agents.common import MLP


def make_q_network(hidden_sizes: tuple[int, ...], num_actions: int, activation: str) -> MLP:
    """Q(s, .): (B, *obs_shape) -> (B, num_actions)."""
    return MLP(hidden_sizes=hidden_sizes, out_size=num_actions, activation=activation)
