"""Priority formats: the single definition of how sum-tree words are stored and combined.

Two formats share one interface. `Float32` keeps IEEE single floats at every level.
`FixedPoint` is the variable-precision unsigned fixed point used by the hardware tree; the
OpenCL kernels (`hrl/replay/backends/kernels`) and the RTL (`fpga_rtl/`) match it bit for
bit, and the tests check that they do. The rules, in full:

* Every level stores unsigned words of `word_bits` bits (W <= 32).
* A leaf word `q` stands for the priority `q * 2**-F_D` where `F_D = word_bits - leaf_int_bits`.
  Each level up keeps `log2(K)` more integer bits, hence `log2(K)` fewer fractional bits:
  `F_l = F_D - (D - l) * log2(K)`. `F_l` may be negative (a coarse grid); that is allowed.
* Encoding a leaf (float32 -> word): `q = rint(p * 2**F_D)` (round half to even, exact because
  scaling by a power of two is exact), then saturate into `[0, 2**W - 1]`; a positive
  *normal* priority (>= 2**-126, the smallest normal float32) never encodes to 0 but to 1
  (one LSB), so an item with priority > 0 stays sampleable. Subnormal inputs count as zero,
  as on CPUs and GPUs that flush them. NaN, inf and negative values are rejected before
  encoding (see `buffer`).
* A parent word is the sum of its K children in its own units, rounded UP:
  `parent = ceil(sum(children) / K)`. Rounding up means a non-empty subtree never reads as
  empty, so every non-zero leaf stays reachable; it cannot overflow because
  `ceil(K * (2**W - 1) / K) = 2**W - 1`. No level but the leaves ever saturates.
* Sampling descends with a target in child units: `T = t * K + d`, where `t` is the remainder
  carried from the level above and `d` is the next `log2(K)` bits of the random product (see
  `sumtree`). The chosen child is the first whose inclusive prefix sum exceeds `T`; if none
  does (possible only by the <= K-1 LSB of round-up slack) the last non-zero child is taken and
  the remainder becomes that child's value minus one.

All arithmetic below is uint32 with explicit carries, so it needs no 64-bit mode in JAX and
maps one to one onto OpenCL C and Verilog.
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np

UINT32_MAX = (1 << 32) - 1


def log2_exact(k: int, name: str = "fanout") -> int:
    """log2 of a power of two, or a ValueError that names the parameter."""
    if not isinstance(k, (int, np.integer)) or k < 2 or (k & (k - 1)) != 0:
        raise ValueError(f"{name} must be a power of two >= 2, got {k!r}")
    return int(k).bit_length() - 1


@dataclasses.dataclass(frozen=True)
class Float32:
    """IEEE float32 at every level; parents are recomputed from children (no drift)."""

    name: str = "float32"

    @property
    def dtype(self):
        return jnp.float32

    def validate(self, fanout: int, depth: int) -> None:
        del fanout, depth

    def encode(self, priorities):
        """Negative priorities are clamped to 0 (as fixed point saturates them): a sum tree
        never holds a negative word, so no subtree can cancel another. Subnormal priorities
        may read as 0, as on every device that flushes them (XLA:CPU does)."""
        p = jnp.asarray(priorities, jnp.float32)
        # A select, not max(p, 0): other values keep their bits (max would flush subnormals).
        return jnp.where(p < 0, jnp.float32(0.0), p)

    def decode(self, words, level: int, depth: int, fanout: int):
        del level, depth, fanout
        return jnp.asarray(words, jnp.float32)

    def combine(self, children, fanout: int):
        """Parent values from children of shape (..., K)."""
        del fanout
        return jnp.sum(children, axis=-1)

    @property
    def empty_word(self):
        return jnp.float32(0)


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """Variable-precision unsigned fixed point (see the module docstring for every rule).

    `word_bits`: W, bits per word at every level (8..32).
    `leaf_int_bits`: integer bits at the leaves; the leaf resolution is 2**-(W - leaf_int_bits).
    The paper's K=4, 4-level FPGA tree is `FixedPoint(32, 20)` (20/22/24/26 integer bits).
    """

    word_bits: int = 32
    leaf_int_bits: int = 20
    name: str = "fixed"

    def __post_init__(self):
        if not 8 <= self.word_bits <= 32:
            raise ValueError(f"word_bits must be in [8, 32], got {self.word_bits}")
        if not 0 <= self.leaf_int_bits <= self.word_bits:
            raise ValueError(
                f"leaf_int_bits must be in [0, word_bits={self.word_bits}], "
                f"got {self.leaf_int_bits}"
            )

    @property
    def dtype(self):
        return jnp.uint32

    @property
    def leaf_frac_bits(self) -> int:
        return self.word_bits - self.leaf_int_bits

    @property
    def max_word(self) -> int:
        return (1 << self.word_bits) - 1

    def frac_bits(self, level: int, depth: int, fanout: int) -> int:
        """Fractional bits of a word at `level` (0 = root, `depth` = leaves)."""
        return self.leaf_frac_bits - (depth - level) * log2_exact(fanout)

    def int_bits(self, level: int, depth: int, fanout: int) -> int:
        return self.word_bits - self.frac_bits(level, depth, fanout)

    def validate(self, fanout: int, depth: int) -> None:
        # The sampling product carries log2(K) digits per level below the root in one
        # 32-bit word (see sumtree.sample_from_bits).
        if depth * log2_exact(fanout) > 32:
            raise ValueError(
                f"fixed point needs depth*log2(fanout) <= 32, got depth={depth}, "
                f"fanout={fanout}; use a larger fanout or a smaller capacity"
            )

    def encode(self, priorities):
        """float -> leaf word: rint(p * 2**F), saturated to [0, 2**W-1]; normal p > 0 gives >= 1."""
        p = jnp.asarray(priorities, jnp.float32)
        scaled = jnp.rint(p * jnp.float32(2.0**self.leaf_frac_bits))
        q = jnp.clip(scaled, 0.0, jnp.float32(self.max_word))
        # float32 cannot hold 2**32-1; values at or above 2**32 saturate explicitly.
        word = jnp.where(
            q >= jnp.float32(2.0**32), jnp.uint32(self.max_word), q.astype(jnp.uint32)
        )
        word = jnp.minimum(word, jnp.uint32(self.max_word))
        normal = p >= jnp.float32(np.finfo(np.float32).tiny)  # subnormals count as zero
        return jnp.where(normal & (word == 0), jnp.uint32(1), word)

    def decode(self, words, level: int, depth: int, fanout: int):
        f = self.frac_bits(level, depth, fanout)
        return jnp.asarray(words).astype(jnp.float32) * jnp.float32(2.0**-f)

    def combine(self, children, fanout: int):
        """ceil(sum(children) / K) in uint32 without overflow: split each child at log2(K)."""
        s = log2_exact(fanout)
        mask = jnp.uint32(fanout - 1)
        hi = jnp.sum(children >> s, axis=-1, dtype=jnp.uint32)
        lo = jnp.sum(children & mask, axis=-1, dtype=jnp.uint32)
        return hi + ((lo + mask) >> s)

    @property
    def empty_word(self):
        return jnp.uint32(0)


@dataclasses.dataclass(frozen=True)
class MinFloat32:
    """Not a priority format but a reduction: parents hold the MINIMUM of their children and
    empty leaves are +inf. A SumTree with this format is a min tree (used by the buffer to
    normalise importance weights with the smallest priority). Sampling is undefined on it."""

    name: str = "min-float32"

    @property
    def dtype(self):
        return jnp.float32

    def validate(self, fanout: int, depth: int) -> None:
        del fanout, depth

    def encode(self, priorities):
        return jnp.asarray(priorities, jnp.float32)

    def decode(self, words, level: int, depth: int, fanout: int):
        del level, depth, fanout
        return jnp.asarray(words, jnp.float32)

    def combine(self, children, fanout: int):
        del fanout
        return jnp.min(children, axis=-1)

    @property
    def empty_word(self):
        return jnp.float32(jnp.inf)


PriorityFormat = Float32 | FixedPoint | MinFloat32


def parse_format(spec: str | PriorityFormat) -> PriorityFormat:
    """'float32', 'fixed' or 'fixed:W:I' (word bits, leaf integer bits) -> a format."""
    if isinstance(spec, (Float32, FixedPoint, MinFloat32)):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"priority format must be a string or a format, got {type(spec)}")
    parts = spec.split(":")
    if parts[0] == "float32" and len(parts) == 1:
        return Float32()
    if parts[0] == "fixed" and len(parts) in (1, 3):
        if len(parts) == 1:
            return FixedPoint()
        try:
            return FixedPoint(int(parts[1]), int(parts[2]))
        except ValueError as e:
            raise ValueError(f"bad fixed-point format {spec!r}: {e}") from None
    raise ValueError(f"unknown priority format {spec!r}; use 'float32', 'fixed' or 'fixed:W:I'")


def mulhi_u32(a, b):
    """High 32 bits of the 64-bit product of two uint32 arrays, in uint32 arithmetic."""
    a = jnp.asarray(a, jnp.uint32)
    b = jnp.asarray(b, jnp.uint32)
    m16 = jnp.uint32(0xFFFF)
    a0, a1 = a & m16, a >> 16
    b0, b1 = b & m16, b >> 16
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> 16) + (p01 & m16) + (p10 & m16)
    return p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16)


def stratify_bits(bits, batch_size: int):
    """Uniform 32-bit fractions, one per stratum: frac_i = i*stride + mulhi(bits_i, stride).

    stride = floor((2**32 - 1) / B), so frac_i < B * stride < 2**32 and sample i falls in the
    i-th 1/B slice of the total. The RTL's LFSR mode computes the same thing.
    """
    stride = jnp.uint32(UINT32_MAX // batch_size)
    i = jnp.arange(batch_size, dtype=jnp.uint32)
    return i * stride + mulhi_u32(bits, stride)


def tree_depth(capacity: int, fanout: int) -> int:
    """D = ceil(log_K N), at least 1, computed in integers."""
    log2_exact(fanout)
    depth, span = 1, fanout
    while span < capacity:
        depth, span = depth + 1, span * fanout
    return depth


def level_sizes(capacity: int, fanout: int) -> tuple[int, ...]:
    """Words stored per level, root first. Level l >= 1 holds n_{l-1} * K words, where n_l is
    the number of live nodes of level l (n_D = capacity), so each node's K children are one
    contiguous row and no level is padded beyond one row."""
    depth = tree_depth(capacity, fanout)
    nodes = [capacity]
    for _ in range(depth):
        nodes.append(math.ceil(nodes[-1] / fanout))
    nodes = nodes[::-1]  # nodes[lvl] = live nodes at level lvl; nodes[0] == 1
    return (1,) + tuple(nodes[lvl - 1] * fanout for lvl in range(1, depth + 1))
