"""`make_replay`: the one place that turns a `ReplayConfig` into a buffer."""

from __future__ import annotations

from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.host_buffer import make_host_replay
from hrl.replay.host_native import make_host_native_replay
from hrl.replay.interface import Replay
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


def make_replay(replay_cfg, *, batch_size: int | None = None, devices: int = 1,
                axis: str | None = None) -> Replay:
    """The replay buffer a `ReplayConfig` (`hrl.config`) asks for, chosen by this table (the
    code below is the same table, row for row):

    | replay.backend | devices | replay.impl    | buffer (thin factory)                      |
    |----------------|---------|----------------|--------------------------------------------|
    | jax            | 1       | any            | PrioritizedReplay (make_prioritized_replay)|
    | jax            | D > 1   | any            | ShardedReplay (make_sharded_replay)        |
    | native_host    | 1       | native or auto | HostNativeReplay (make_host_native_replay) |
    | jax_host       | 1       | not read       | HostPrioritizedReplay, `jax` tree backend  |
    | opencl         | 1       | not read       | HostPrioritizedReplay, `opencl` backend    |
    | rtl            | 1       | not read       | HostPrioritizedReplay, `rtl` backend       |
    | other than jax | D > 1   |                | ValueError naming replay.backend           |

    "any" impl: auto, xla, native or pallas, as `PrioritizedReplay` takes them. The sharded
    buffer holds D shards of capacity / D over the mesh axis `axis` ("devices" when None) and
    samples as replay.sampling says. native_host needs `batch_size` (its output block is laid
    out once) and the C++ kernels (auto where they build). The host tree backends
    (`make_host_replay`, `host_buffer.HOST_BACKENDS`) read replay.opencl_device for opencl;
    rtl takes fixed point only.

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
    if devices > 1:
        if backend != "jax":
            raise ValueError(f"config key 'replay.backend': train.devices > 1 shards the replay "
                             f"over the devices, which needs backend 'jax' (got {backend!r})")
        return make_sharded_replay(
            r.capacity, devices, "devices" if axis is None else axis, sampling=r.sampling,
            alpha=r.alpha, eps=r.eps, fanout=r.fanout, fmt=r.fmt, weights=r.weights,
            impl=r.impl,
        )
    if backend == "jax":
        return make_prioritized_replay(r.capacity, alpha=r.alpha, eps=r.eps, fanout=r.fanout,
                                       fmt=r.fmt, weights=r.weights, impl=r.impl)
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


__all__ = ["VARIANTS", "make_replay"]
