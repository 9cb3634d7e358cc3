"""DQN: networks.py, losses.py, agent.py."""
