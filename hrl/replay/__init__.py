"""Prioritized replay: the K-ary sum tree, its priority formats and the replay buffers.

The top level is what a caller needs to hold any buffer: `make_replay(cfg.replay, ...)`, which
builds the one a config asks for (its docstring has the table); the protocols every buffer
implements (`Replay`: `init`, `add`, `sample`, `update`, `size`; the host ones `HostReplay`,
adding `sync_backend`); the `Sample` they return; and `ReplayHandle`, a buffer bound to its
state for callers outside any loop. The variants live one level down, each with its state
type and its factory:

* `hrl.replay.buffer`: `PrioritizedReplay` (`make_prioritized_replay`), pure JAX,
  `replay.backend: jax`; the reference semantics for every backend (the native and Pallas
  kernels, OpenCL, RTL), with `sumtree` and `formats`;
* `hrl.replay.sharded`: `ShardedReplay` (`make_sharded_replay`), one shard per device,
  `train.devices > 1`;
* `hrl.replay.host_native`: `HostNativeReplay` (`make_host_native_replay`), NumPy + C++
  kernels, `native_host`;
* `hrl.replay.host_buffer`: `HostPrioritizedReplay` (`make_host_replay`), the tree on a
  `hrl.replay.backends` backend, `replay.backend: jax_host`, `opencl` or `rtl`;
* `hrl.replay.next_slot`: `NextSlotReplay` (`make_next_slot_replay`), `PrioritizedReplay`
  with next_obs stored once, read from the next slot (`replay.next_obs: next_slot`, and where
  `auto` resolves to it: `hrl.replay.factory.resolve_next_obs`).

The top level stays this small on purpose (tests/test_structure.py holds it to these names):
one way in, and a variant named where it is defined.
"""

from hrl import threefry_cpu
from hrl.replay.buffer import Sample
from hrl.replay.factory import make_replay
from hrl.replay.host_native import ReplayHandle
from hrl.replay.interface import HostReplay, Replay

threefry_cpu.install()  # same bits, fewer CPU kernels per jax.random call

__all__ = ["HostReplay", "Replay", "ReplayHandle", "Sample", "make_replay"]
