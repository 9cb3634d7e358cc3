"""Placeholder until the config split lands: the learning schedule of a train ratio."""

from hrl.config import updates_schedule

__all__ = ["updates_schedule"]
