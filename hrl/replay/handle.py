"""`ReplayHandle`'s former home, kept for existing imports: it lives in `hrl.replay.host_native`
(import it from `hrl.replay`)."""

from hrl.replay.host_native import ReplayHandle

__all__ = ["ReplayHandle"]
