"""DDPG: networks.py, losses.py, agent.py."""
