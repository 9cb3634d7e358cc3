"""Agents: DQN and DDPG as static configs plus pure functions over `AgentState`.

    agent = make_dqn(DQNConfig(...), env.spec)      # or make_ddpg(DDPGConfig(...), env.spec)
    state = agent.init(key)
    actions = agent.act(state, obs, key, env_step, explore=True)           # "infer"
    state, td_errors, metrics = agent.train_step(state, batch, weights)    # "train"

Each algorithm reads top to bottom in three files: networks.py, losses.py, agent.py.
"""

from hrl import threefry_cpu
from hrl.agents.common import BATCH_KEYS, Agent, AgentState
from hrl.agents.ddpg.agent import DDPG, DDPGConfig, OUNoise, make_ddpg
from hrl.agents.dqn.agent import DQN, DQNConfig, make_dqn
from hrl.agents.networks import ConvMLP, register_network

threefry_cpu.install()  # same bits, fewer CPU kernels per jax.random call

__all__ = [
    "BATCH_KEYS",
    "DDPG",
    "DQN",
    "Agent",
    "AgentState",
    "ConvMLP",
    "DDPGConfig",
    "DQNConfig",
    "OUNoise",
    "make_ddpg",
    "make_dqn",
    "register_network",
]
