"""Prioritized replay: the K-ary sum tree, its priority formats and the replay buffer.

The JAX code here is the reference semantics for every backend (OpenCL kernels, RTL).
"""

from hrl import threefry_cpu
from hrl.replay import formats, sumtree
from hrl.replay.buffer import PrioritizedReplay, ReplayState, Sample, make_prioritized_replay
from hrl.replay.formats import FixedPoint, Float32, MinFloat32, parse_format
from hrl.replay.handle import ReplayHandle
from hrl.replay.rows import RowLayout
from hrl.replay.sharded import ShardedReplay, make_sharded_replay
from hrl.replay.sumtree import SumTree

threefry_cpu.install()  # same bits, fewer CPU kernels per jax.random call

__all__ = [
    "FixedPoint",
    "Float32",
    "MinFloat32",
    "PrioritizedReplay",
    "ReplayHandle",
    "ReplayState",
    "RowLayout",
    "Sample",
    "ShardedReplay",
    "SumTree",
    "formats",
    "make_prioritized_replay",
    "make_sharded_replay",
    "parse_format",
    "sumtree",
]
