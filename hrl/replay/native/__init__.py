"""Native (C++ via XLA FFI) CPU kernels for the K-ary sum tree.

Drop-in replacements for `hrl.replay.sumtree.update_words / update / sample_from_bits /
sample` over the same `SumTree` pytree; `total`, `leaves` and `probabilities` are cheap and
stay in `hrl.replay.sumtree`. The buffer's own fast path (`hrl.replay.buffer`) adds
`sample_with_key` (Threefry bits, descent and leaf reads in one call), `gather_fields` and
`replay_update` (bookkeeping and both trees in one call); each is tested
bit for bit against the pure-JAX steps it replaces. The library is compiled on first use (see
`build`).

    from hrl.replay import native
    if native.available():
        tree = native.update(tree, indices, priorities)
"""

from __future__ import annotations

import functools

import jax

from hrl.replay.native._build import (
    NativeBuildError,
    build,
    cache_dir,
    ensure_registered,
    library,
    library_path,
)
from hrl.replay.native._ops import (
    gather_fields,
    replay_update,
    sample,
    sample_from_bits,
    sample_with_key,
    threefry_key_words,
    update,
    update_words,
)

__all__ = [
    "NativeBuildError",
    "available",
    "build",
    "cache_dir",
    "ensure_registered",
    "gather_fields",
    "library",
    "library_path",
    "replay_update",
    "sample",
    "sample_from_bits",
    "sample_with_key",
    "threefry_key_words",
    "unavailable_reason",
    "update",
    "update_words",
]


@functools.cache
def unavailable_reason(placed_on_cpu: bool = False) -> str | None:
    """None if the native kernels can be used in this process, else why not. They run on a
    CPU device only: a computation left on the default device needs the default backend to
    be the CPU, one placed on a CPU device (`placed_on_cpu`, as `pallas_kernels`'
    `PerDeviceKernels` places them on a GPU machine) does not."""
    if not placed_on_cpu and jax.default_backend() != "cpu":
        return f"the native kernels are CPU-only and the default backend is {jax.default_backend()}"
    try:
        ensure_registered()
    except NativeBuildError as e:
        return str(e)
    return None


def available(placed_on_cpu: bool = False) -> bool:
    """True if the kernels are built (building them now if needed) and can run where the
    computation does (`unavailable_reason`)."""
    return unavailable_reason(placed_on_cpu) is None
