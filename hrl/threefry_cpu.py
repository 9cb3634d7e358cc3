"""Threefry-2x32 lowered as straight-line code on the CPU (same bits, a fifth of the kernels).

JAX lowers its `threefry2x32` primitive on the CPU as a `fori_loop` of 5 trips (to keep compile
times down). Inside a fused training step that loop is a while loop in XLA:CPU: each trip runs
its body as about 16 separate kernels (13 of them copies of the loop carry), so every
`jax.random` call costs some 80 kernel launches. One DQN iteration at M=1 makes about a dozen
such calls (key splits, epsilon-greedy draws, the env's reset draw): 74 of its 264 kernel
launches (`experiments/bench/profile_fused_step.py`).

`install()` registers, for the CPU only, a lowering of the same primitive written out round by
round, which XLA fuses into a few kernels. Threefry-2x32 with 20 rounds is fully specified
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), so the bits are the
same as JAX's own lowering: `tests/test_threefry_cpu.py` checks the published known-answer
vectors and `jax.random` output against a process where this lowering is not installed.
hrl installs it on import (set HRL_THREEFRY_ROLLED=1 to keep JAX's loop); it changes how
every CPU program in the process is compiled, never what it computes.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(v, r: int):
    return (v << np.uint32(r)) | (v >> np.uint32(32 - r))


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32, 20 rounds, on uint32 arrays (broadcasting); returns the two output words."""
    ks = (key1, key2, key1 ^ key2 ^ _PARITY)
    x = [x1 + ks[0], x2 + ks[1]]
    for block in range(5):  # 5 blocks of 4 rounds, a key injection after each
        for r in _ROTATIONS[block % 2]:
            x[0] = x[0] + x[1]
            x[1] = _rotl(x[1], r) ^ x[0]
        x[0] = x[0] + ks[(block + 1) % 3]
        x[1] = x[1] + ks[(block + 2) % 3] + np.uint32(block + 1)
        # Each round reads both words twice, so the 20 rounds form a DAG that XLA:CPU of jax
        # 0.11 expands into a tree when it fuses them: compiling a program that draws one random
        # number took minutes. A barrier per block bounds that at 4 rounds and costs nothing
        # measurable on jax 0.10 (bench_train M=1 and M=64, interleaved).
        x = list(jax.lax.optimization_barrier(tuple(x)))
    return x[0], x[1]


def _lowering(key1, key2, x1, x2):
    shape = jnp.broadcast_shapes(key1.shape, key2.shape, x1.shape, x2.shape)
    args = (jnp.broadcast_to(a, shape) for a in (key1, key2, x1, x2))
    return threefry2x32(*args)


_installed = False


def install() -> bool:
    """Register the straight-line CPU lowering (once per process). Returns whether it is on."""
    global _installed
    if os.environ.get("HRL_THREEFRY_ROLLED", "") not in ("", "0"):
        return False
    if not _installed:
        mlir.register_lowering(
            threefry2x32_p, mlir.lower_fun(_lowering, multiple_results=True), platform="cpu"
        )
        _installed = True
    return True
