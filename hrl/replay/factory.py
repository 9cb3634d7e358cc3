"""`make_replay`: the one place that turns a `ReplayConfig` into a buffer; `resolve_next_obs`:
the one place that decides where that buffer keeps next_obs."""

from __future__ import annotations

import jax
import numpy as np

from hrl.replay.buffer import make_prioritized_replay, tree_settings
from hrl.replay.formats import level_sizes
from hrl.replay.host_buffer import make_host_replay
from hrl.replay.host_native import make_host_native_replay
from hrl.replay.interface import Replay
from hrl.replay.next_slot import (
    NextSlotReplay,
    NextSlotState,
    make_next_slot_replay,
    takes_add,
)
from hrl.replay.rows import RowLayout
from hrl.replay.sharded import make_sharded_replay

# replay.backend -> the variant built for one device (more devices: only "jax", sharded).
# The host tree backends' names in hrl.replay.backends are host_buffer.HOST_BACKENDS.
VARIANTS = {
    "jax": "PrioritizedReplay",
    "native_host": "HostNativeReplay",
    "jax_host": "HostPrioritizedReplay",
    "opencl": "HostPrioritizedReplay",
    "rtl": "HostPrioritizedReplay",
}


def resolve_next_obs(replay, *, devices: int, num_envs: int | None, in_order: bool = False,
                     rollout_length: int | None = None) -> str:
    """Where a run's replay keeps next_obs: "stored" (in each row) or "next_slot" (rebuilt
    from the row inserted n_step * num_envs later, `hrl.replay.next_slot`). `replay`: the
    config's `ReplayConfig` (read: next_obs, backend, capacity, n_step). The one place
    `replay.next_obs` is resolved; `make_replay` builds what it says, the summary reports it.

    An explicit "stored" or "next_slot" is returned as it is (`make_replay` refuses a
    next_slot it cannot build, naming the key). "auto" is "next_slot" when all of these hold,
    else "stored":

    * `replay.backend` jax: the host, OpenCL and RTL buffers keep next_obs in their rows.
    * `devices` (train.devices) 1: the sharded replay keeps it in its rows.
    * `in_order`: whoever inserts adds the actors' M transitions per env step in the actors'
      order, so an item's successor is `stride` = n_step * M inserts later and only episode
      ends need a side entry (the executor says so: `Executor.inserts_in_order`; the
      distributed one's Ray workers' batches interleave, so nearly every item's successor
      would differ and need a side entry). False (a buffer built outside an hrl executor,
      whose insert order is unknown): stored.
    * `num_envs` and `rollout_length` given (an add inserts M = num_envs * rollout_length
      items) and the buffer takes such an add: capacity >= M + n_step * num_envs (the stride
      fits in the ring beside the add) and M <= the side store's entries (next_obs_side *
      capacity): `next_slot.takes_add`, the check `NextSlotReplay.add` makes.

    `next_slot` then samples what `stored` samples, bit for bit, while its side store
    (`replay.next_obs_side`) holds every episode end in the buffer; an overflow drops items
    and the run says so. O(1)."""
    if replay.next_obs != "auto":
        return replay.next_obs
    known = all(isinstance(x, int) and x >= 1 for x in (num_envs, rollout_length))
    fits = known and takes_add(replay.capacity, replay.n_step * num_envs,
                               replay.next_obs_side, num_envs * rollout_length)
    ok = replay.backend == "jax" and devices == 1 and in_order and fits
    return "next_slot" if ok else "stored"


def make_replay(replay_cfg, *, batch_size: int | None = None, devices: int = 1,
                axis: str | None = None, num_envs: int | None = None,
                rollout_length: int | None = None, in_order: bool = False) -> Replay:
    """The replay buffer a `ReplayConfig` (`hrl.config`) asks for, chosen by this table (the
    code below is the same table, row for row):

    | replay.backend | devices | replay.impl    | buffer (thin factory)                      |
    |----------------|---------|----------------|--------------------------------------------|
    | jax, stored    | 1       | any            | PrioritizedReplay (make_prioritized_replay)|
    | jax, next_slot | 1       | any            | NextSlotReplay over PrioritizedReplay      |
    | jax            | D > 1   | any            | ShardedReplay (make_sharded_replay)        |
    | native_host    | 1       | native or auto | HostNativeReplay (make_host_native_replay) |
    | jax_host       | 1       | not read       | HostPrioritizedReplay, `jax` tree backend  |
    | opencl         | 1       | not read       | HostPrioritizedReplay, `opencl` backend    |
    | rtl            | 1       | not read       | HostPrioritizedReplay, `rtl` backend       |
    | other than jax | D > 1   |                | ValueError naming replay.backend           |
    | next_slot      | D > 1   |                | ValueError naming replay.next_obs          |

    stored / next_slot: `replay.next_obs` as resolved (auto: `resolve_next_obs`, below).

    "any" impl: auto, xla, native or pallas, as `PrioritizedReplay` takes them. The sharded
    buffer holds D shards of capacity / D over the mesh axis `axis` ("devices" when None) and
    samples as replay.sampling says. native_host needs `batch_size` (its output block is laid
    out once) and the C++ kernels (auto where they build). The host tree backends
    (`make_host_replay`, `host_buffer.HOST_BACKENDS`) read replay.opencl_device for opencl;
    rtl takes fixed point only. "next_slot" is `replay.next_obs` as `resolve_next_obs`
    resolves it from the buffer's settings, `devices`, `num_envs`,
    `rollout_length` (an add inserts num_envs * rollout_length items) and `in_order` (the
    inserts come in the actors' order, `Executor.inserts_in_order`; False: unknown, so `auto`
    keeps next_obs in the rows). `NextSlotReplay`
    (`hrl.replay.next_slot`) needs `num_envs`, the actors inserting per env step (its stride
    is n_step * num_envs); an explicit next_slot any other buffer is asked for names the key.

    Placement (`cfg.placement`) does not choose the buffer: a JAX buffer's `sample`/`update`
    run on whichever device the runtime places them; a host buffer's run on the host thread
    (the runtime's `resolve_placement` refuses a device placement for them).

    Guarantees: the buffer implements `hrl.replay.interface.Replay` (the host ones
    `HostReplay`); a setting a variant cannot honour is a ValueError naming its config key
    (`replay.backend`, `replay.impl`, `replay.capacity`, `train.devices`). Cost: O(1), except
    what the chosen factory builds (the opencl and rtl backends allocate their device tree,
    O(N), and may compile a kernel). Shaped as one call so that the runtime, the profiler and
    tests all build a run's replay the same way, and the choice is written down once.
    """
    backend = replay_cfg.backend
    if backend not in VARIANTS:
        raise ValueError(f"config key 'replay.backend': expected one of {sorted(VARIANTS)}, "
                         f"got {backend!r}")
    if not isinstance(devices, int) or devices < 1:
        raise ValueError(f"config key 'train.devices': must be a positive int, got {devices!r}")
    r = replay_cfg
    next_obs = resolve_next_obs(r, devices=devices, num_envs=num_envs, in_order=in_order,
                                rollout_length=rollout_length)
    if next_obs != "stored" and (backend != "jax" or devices > 1):
        where = f"replay.backend {backend!r}" if backend != "jax" else "train.devices > 1"
        raise ValueError(f"config key 'replay.next_obs': {next_obs!r} is taken by "
                         f"replay.backend jax on one device only; {where} keeps next_obs in "
                         f"each row (use 'stored')")
    if devices > 1:
        if backend != "jax":
            raise ValueError(f"config key 'replay.backend': train.devices > 1 shards the replay "
                             f"over the devices, which needs backend 'jax' (got {backend!r})")
        return make_sharded_replay(r.capacity, devices, "devices" if axis is None else axis,
                                   sampling=r.sampling, **tree_settings(r))
    if backend == "jax" and next_obs == "next_slot":
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"config key 'env.num_envs': replay.next_obs 'next_slot' needs "
                             f"the actors' count (a positive int), got {num_envs!r}")
        inner = make_prioritized_replay(r.capacity, **tree_settings(r))
        # NextSlotReplay checks its stride against the ring (naming replay.capacity).
        return make_next_slot_replay(inner, r.n_step * num_envs, r.next_obs_side,
                                     group=num_envs)
    if backend == "jax":
        return make_prioritized_replay(r.capacity, **tree_settings(r))
    if backend == "native_host":
        if r.impl not in ("native", "auto"):
            raise ValueError(f"config key 'replay.impl': replay.backend 'native_host' needs the "
                             f"native C++ kernels (impl native, or auto on a CPU where they "
                             f"build), got {r.impl!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"config key 'train.batch_size': replay.backend 'native_host' needs "
                             f"the run's batch size (a positive int), got {batch_size!r}")
        return make_host_native_replay(r, batch_size)
    return make_host_replay(r)  # jax_host, opencl, rtl


def replay_memory_bytes(replay_cfg, example_item) -> int:
    """Memory one replay buffer of a `ReplayConfig` takes before it is built: its rows
    (`RowLayout.stored_bytes`, next_obs included: an upper bound for next_slot) plus the sum
    tree's words (and the min tree's, for global IS weights). O(leaves + tree depth)."""
    r = replay_cfg
    trees = sum(level_sizes(r.capacity, r.fanout)) * 4 * (2 if r.weights == "global" else 1)
    return r.capacity * RowLayout.of(example_item).stored_bytes + trees


def replay_bytes_per_item(replay, example_item) -> float:
    """Replay memory one transition costs in `replay`: its packed row
    (`RowLayout.stored_bytes`), or for `NextSlotReplay` the row without next_obs plus its link
    and share of the side store. O(leaves)."""
    if isinstance(replay, NextSlotReplay):
        return replay.bytes_per_item(example_item)
    return float(RowLayout.of(example_item).stored_bytes)


def next_obs_layout(replay) -> str:
    """Where the built buffer `replay` keeps next_obs: "next_slot" or "stored" (what
    `resolve_next_obs` chose for it). O(1)."""
    return "next_slot" if isinstance(replay, NextSlotReplay) else "stored"


def next_obs_lost(replay_state) -> int | None:
    """Items a `NextSlotReplay` dropped because its side store overflowed (summed over
    stacked seeds), None for a buffer that stores next_obs in its rows. One device read."""
    if not isinstance(replay_state, NextSlotState):
        return None
    return int(np.sum(jax.device_get(replay_state.lost)))


def next_obs_lost_warning(lost: int | None, before: int | None, env_steps: int) -> str | None:
    """The one-line warning a run prints at a chunk's end when its `NextSlotReplay` dropped
    items since the last check (`lost` and `before`: `next_obs_lost` now and then), else
    None."""
    if lost is None or lost <= (before or 0):
        return None
    return (f"warning: replay.next_obs next_slot dropped {lost - (before or 0):,} items whose "
            f"next_obs overflowed the side store ({lost:,} in all by env step {env_steps:,}; "
            f"they are never sampled, so sampling differs from the stored layout's): raise "
            f"replay.next_obs_side or set replay.next_obs: stored")


__all__ = [
    "VARIANTS",
    "make_replay",
    "next_obs_layout",
    "next_obs_lost",
    "next_obs_lost_warning",
    "replay_bytes_per_item",
    "replay_memory_bytes",
    "resolve_next_obs",
]
