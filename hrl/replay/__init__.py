"""Prioritized replay: the K-ary sum tree, its priority formats and the replay buffers.

The JAX code here (`sumtree`, `formats`, `buffer`) is the reference semantics for every backend
(the native and Pallas kernels, OpenCL, RTL). Every buffer implements one protocol
(`hrl.replay.interface.Replay`: `init`, `add`, `sample`, `update`, `size`; the host ones
`HostReplay`, adding `sync_backend`), and `make_replay(cfg.replay, ...)` picks the one a
config asks for (its docstring has the table):

* `PrioritizedReplay` (`make_prioritized_replay`): pure JAX, `replay.backend: jax`;
* `ShardedReplay` (`make_sharded_replay`): one shard per device, `train.devices > 1`;
* `HostNativeReplay` (`make_host_native_replay`): NumPy + C++ kernels, `native_host`;
* `HostPrioritizedReplay` (`make_host_replay`): the tree on a `hrl.replay.backends` backend,
  `replay.backend: jax_host`, `opencl` or `rtl`;
* `ReplayHandle`: `PrioritizedReplay` bound to its state, one call per operation;
* `NextSlotReplay` (`make_next_slot_replay`): `PrioritizedReplay` with next_obs stored once,
  read from the next slot (`replay.next_obs: next_slot`, and where `auto` resolves to it:
  `resolve_next_obs`).
"""

from hrl import threefry_cpu
from hrl.replay import formats, sumtree
from hrl.replay.buffer import PrioritizedReplay, ReplayState, Sample, make_prioritized_replay
from hrl.replay.factory import make_replay, resolve_next_obs
from hrl.replay.formats import FixedPoint, Float32, MinFloat32, parse_format
from hrl.replay.host_buffer import (
    HOST_BACKENDS,
    HostPrioritizedReplay,
    HostReplayState,
    make_host_replay,
)
from hrl.replay.host_native import (
    HostNativeReplay,
    HostNativeState,
    ReplayHandle,
    make_host_native_replay,
)
from hrl.replay.interface import HostReplay, Replay
from hrl.replay.next_slot import NextSlotReplay, NextSlotState, make_next_slot_replay
from hrl.replay.rows import RowLayout
from hrl.replay.sharded import ShardedReplay, make_sharded_replay
from hrl.replay.sumtree import SumTree

threefry_cpu.install()  # same bits, fewer CPU kernels per jax.random call

__all__ = [
    "HOST_BACKENDS",
    "FixedPoint",
    "Float32",
    "HostNativeReplay",
    "HostNativeState",
    "HostPrioritizedReplay",
    "HostReplay",
    "HostReplayState",
    "MinFloat32",
    "NextSlotReplay",
    "NextSlotState",
    "PrioritizedReplay",
    "Replay",
    "ReplayHandle",
    "ReplayState",
    "RowLayout",
    "Sample",
    "ShardedReplay",
    "SumTree",
    "formats",
    "make_host_native_replay",
    "make_host_replay",
    "make_next_slot_replay",
    "make_prioritized_replay",
    "make_replay",
    "make_sharded_replay",
    "parse_format",
    "resolve_next_obs",
    "sumtree",
]
