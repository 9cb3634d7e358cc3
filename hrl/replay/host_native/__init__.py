"""The NumPy/ctypes host path of the replay buffer: the state in host arrays, each operation
one call into the C++ kernels (or, where those would not give XLA's bits, one jitted call).

* `ReplayHandle` (`handle.py`), the public face: a `PrioritizedReplay` bound to its state, one
  call per operation (`add`, `sample`, `update`, `update_and_sample`) for callers outside a
  fused loop (a NumPy or PyTorch learner);
* `HostNativeReplay` (`replay.py`): the same path in the `hrl.replay.interface.HostReplay`
  form the runtime's host loops call (`replay.backend: native_host`);
* `packed.py`: what both share, the packed layout of the state (`Packing`), when the path
  applies (`packed_available`, `direct_unavailable`) and the ctypes step (`DirectState`).

Every result equals `PrioritizedReplay`'s bit for bit (tests/replay/test_handle.py,
tests/replay/test_host_native.py).
"""

from hrl.replay.host_native.handle import ReplayHandle
from hrl.replay.host_native.replay import HostNativeReplay, HostNativeState, make_host_native_replay

__all__ = ["HostNativeReplay", "HostNativeState", "ReplayHandle", "make_host_native_replay"]
