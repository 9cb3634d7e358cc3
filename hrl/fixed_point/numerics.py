"""Fixed-point numerics of the FPGA learning module: the one definition of its narrowing.

The learner's RTL (`fpga_rtl/rtl/hrl_learn_*`), any OpenCL kernel and the executors'
fixed-point learner match these rules bit for bit; `tests/fixed_point/test_numerics.py`
checks them against unbounded Python integers. The rules, in full:

* A format `Fx(width, frac)` is signed two's complement: a word `q` with
  `-2**(width-1) <= q <= 2**(width-1) - 1` stands for `q * 2**-frac`. `width` is 2..30 (so
  every intermediate below fits an int32 with room for a carry); `frac` may be negative or
  larger than `width`.
* **Products and sums are exact.** A multiply-accumulate keeps the full product of its two
  operands (`frac_a + frac_b` fractional bits) and sums any number of them without rounding
  or overflow; the hardware's accumulator is wide enough by construction
  (`width_a + width_b - 1 + ceil(log2 K)` bits for a K-term dot product), so the order of the
  sum does not matter and the array may tile it any way it likes.
* **Every narrowing rounds to nearest, ties to even, then saturates.** Narrowing a value `v`
  held with `f_in` fractional bits to `Fx(w, f)` shifts right by `s = f_in - f` (left when
  `s < 0`, which is exact), rounds the bits shifted out to nearest with ties to the even
  result, and clamps the result into the format's range. A clamp is a saturation; each
  operation returns how many of its outputs saturated, so a run can count them.
* A fused multiply-add `multiply_add(x, a, y, b, z, c, out)` = `x * y + z`, the product
  exact and `z` preloaded into the accumulator (as `matmul`'s bias), rounds once. The
  optimizer (momentum, weight step) and the target update (Polyak) are built from it.
* Floats enter through `quantize` (round half to even, saturate; NaN counts as a saturation
  to 0) and leave through `dequantize` (exact for words of up to 24 bits).

Everything is int32 with explicit carries (an exact sum is kept as two int32 words,
`hi * 2**24 + lo` with `0 <= lo < 2**24`), so it needs no 64-bit mode in JAX and maps one to
one onto Verilog. Shapes and formats are static; values are traced, so all of it jits and
vmaps.
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp

MAX_WIDTH = 30
LO_BITS = 24  # the low word of an exact sum: value = hi * 2**LO_BITS + lo, 0 <= lo < 2**LO_BITS
LO_MASK = (1 << LO_BITS) - 1
# The partial products of one operand chunk against the other operand are summed in int32;
# each partial sum stays within 2**PARTIAL_BITS, leaving a bit for the carries folded in.
PARTIAL_BITS = 30


@dataclasses.dataclass(frozen=True)
class Fx:
    """A signed fixed-point format: `width` bits in all, `frac` of them fractional."""

    width: int
    frac: int

    def __post_init__(self):
        if not isinstance(self.width, int) or not 2 <= self.width <= MAX_WIDTH:
            raise ValueError(
                f"fixed-point width must be an int in 2..{MAX_WIDTH}, got {self.width!r}")
        if not isinstance(self.frac, int):
            raise ValueError(f"fixed-point frac must be an int, got {self.frac!r}")

    @property
    def min_int(self) -> int:
        return -(1 << (self.width - 1))

    @property
    def max_int(self) -> int:
        return (1 << (self.width - 1)) - 1

    @property
    def lsb(self) -> float:
        """The value of one least significant bit."""
        return 2.0**-self.frac

    @property
    def max_value(self) -> float:
        return self.max_int * self.lsb

    def __str__(self) -> str:
        return f"Q{self.width}.{self.frac}"


def _count(mask) -> jnp.ndarray:
    return jnp.sum(mask, dtype=jnp.int32)


def quantize(x, fmt: Fx):
    """float -> words of `fmt`: round half to even, saturate. Returns (words int32, n_saturated).

    Scaling by a power of two is exact in float32 (outside under/overflow), so the only
    rounding is the one `rint` does. NaN maps to 0 and counts as saturated.
    """
    x = jnp.asarray(x, jnp.float32)
    r = jnp.rint(x * jnp.float32(2.0**fmt.frac))
    # Compare against powers of two: max_int itself may not be representable in float32.
    high = r >= jnp.float32(2.0 ** (fmt.width - 1))
    low = r < jnp.float32(-(2.0 ** (fmt.width - 1)))
    nan = jnp.isnan(r)
    safe = jnp.where(high | low | nan, 0.0, r).astype(jnp.int32)
    q = jnp.where(high, fmt.max_int, jnp.where(low, fmt.min_int, safe)).astype(jnp.int32)
    return q, _count(high | low | nan)


def dequantize(q, fmt: Fx):
    """words of `fmt` -> float32 (exact while |q| < 2**24)."""
    return jnp.asarray(q, jnp.int32).astype(jnp.float32) * jnp.float32(fmt.lsb)


def _wide(x):
    """An int32 value as an exact sum (hi, lo)."""
    x = jnp.asarray(x, jnp.int32)
    return x >> LO_BITS, x & LO_MASK


def _add_shifted(hi, lo, part, shift: int):
    """(hi, lo) + part * 2**shift, exact, for |part| < 2**PARTIAL_BITS and 0 <= shift <= 24."""
    if not 0 <= shift <= LO_BITS:
        raise ValueError(f"internal: shift {shift} outside 0..{LO_BITS}")
    keep = LO_BITS - shift
    lo = lo + ((part & ((1 << keep) - 1)) << shift)  # < 2**25
    hi = hi + (part >> keep) + (lo >> LO_BITS)
    return hi, lo & LO_MASK


def narrow_wide(hi, lo, frac_in: int, out: Fx):
    """The exact value `hi * 2**24 + lo` (with `frac_in` fractional bits) narrowed to `out`.

    Round to nearest, ties to even, then saturate. Returns (words int32, n_saturated).
    Requires `|hi| < 2**30`, which every sum this module builds satisfies, and
    `frac_in - out.frac >= -4` (a wider left shift of a wide value is never needed).
    """
    s = frac_in - out.frac
    if s < -4:
        raise ValueError(
            f"narrowing from {frac_in} to {out.frac} fractional bits shifts left by {-s} > 4")
    hi = jnp.asarray(hi, jnp.int32)
    lo = jnp.asarray(lo, jnp.int32)
    if s <= LO_BITS:
        m = LO_BITS - s  # the weight of hi in output units: value / 2**s = hi * 2**m + lo / 2**s
        # Clip hi so that hi * 2**m + (lo >> s) fits in int32; a clipped hi saturates anyway,
        # since |hi * 2**m| >= 2**30 - 2**28 exceeds every format's range (width <= 30).
        bound = 1 << (30 - m)
        hi_c = jnp.clip(hi, -bound, bound - 1)
        if s > 0:
            floor = hi_c * (1 << m) + (lo >> s)
            rem = lo & ((1 << s) - 1)
            half = 1 << (s - 1)
            up = (rem > half) | ((rem == half) & ((floor & 1) == 1))
        else:
            floor = hi_c * (1 << m) + (lo << -s)
            up = jnp.zeros_like(floor, dtype=bool)
    else:
        t = s - LO_BITS  # >= 1: value / 2**s = (hi + lo / 2**24) / 2**t
        floor = hi >> t
        rem_hi = hi & ((1 << t) - 1)  # remainder = rem_hi * 2**24 + lo; half = 2**(t-1) * 2**24
        half_hi = 1 << (t - 1)
        above = (rem_hi > half_hi) | ((rem_hi == half_hi) & (lo > 0))
        tie = (rem_hi == half_hi) & (lo == 0)
        up = above | (tie & ((floor & 1) == 1))
    y = floor + up.astype(jnp.int32)
    high = y > out.max_int
    low = y < out.min_int
    y = jnp.clip(y, out.min_int, out.max_int).astype(jnp.int32)
    return y, _count(high | low)


def narrow(x, frac_in: int, out: Fx):
    """int32 words with `frac_in` fractional bits narrowed to `out` (any shift, either way)."""
    x = jnp.asarray(x, jnp.int32)
    s = frac_in - out.frac
    if s < 0:
        # A left shift is exact; clamp first so the shift cannot overflow int32.
        k = -s
        over = x > (out.max_int >> k)
        under = x < -((-out.min_int) >> k)  # x << k < min_int, rounding the bound up
        y = jnp.where(over, out.max_int, jnp.where(under, out.min_int, x << k))
        return y.astype(jnp.int32), _count(over | under)
    return narrow_wide(*_wide(x), frac_in, out)


def _chunk_plan(a: Fx, b: Fx, terms: int) -> tuple[int, int]:
    """(chunk bits, chunk count) that split `a` so each partial sum stays in PARTIAL_BITS."""
    kbits = max(terms - 1, 0).bit_length()
    chunk = PARTIAL_BITS - (b.width - 1) - kbits
    if chunk < 1:
        raise ValueError(
            f"a {terms}-term sum of {a} x {b} products does not fit the exact accumulator")
    if a.width + b.width - 2 + kbits - LO_BITS >= 30:
        raise ValueError(f"a {terms}-term sum of {a} x {b} products exceeds the exact accumulator")
    count = max(1, math.ceil(a.width / chunk))
    if chunk * (count - 1) > LO_BITS:
        raise ValueError(f"operand {a} too wide for a {terms}-term exact sum against {b}")
    return chunk, count


def _exact(x, a: Fx, y, b: Fx, terms: int, product):
    """The exact sum of products `product(x, y)` as (hi, lo), by splitting x into chunks.

    x = sum_j chunk_j * 2**(c*j) (low chunks unsigned, the top one signed), so
    product(x, y) = sum_j product(chunk_j, y) * 2**(c*j), each partial exact in int32.
    """
    chunk, count = _chunk_plan(a, b, terms)
    x = jnp.asarray(x, jnp.int32)
    y = jnp.asarray(y, jnp.int32)
    hi = lo = None
    for j in range(count):
        piece = x >> (chunk * j)
        if j < count - 1:
            piece = piece & ((1 << chunk) - 1)
        part = product(piece, y)
        if hi is None:
            hi, lo = jnp.zeros_like(part), jnp.zeros_like(part)
        hi, lo = _add_shifted(hi, lo, part, chunk * j)
    return hi, lo


def matmul(x, a: Fx, w, b: Fx, out: Fx, bias=None, bias_fmt: Fx | None = None):
    """x @ w (+ bias) with exact accumulation, narrowed once to `out`.

    x: (..., K) in `a`, w: (K, N) in `b`, bias: (N,) in `bias_fmt`. This is the one product
    the learning module's array computes, in all three of its modes: activations x weights
    (forward), deltas x weights^T (backward) and activations^T x deltas (weight gradient);
    the caller transposes. The bias enters the accumulator exactly (aligned to the
    products' `a.frac + b.frac` fractional bits, which must be at least `bias_fmt.frac`), as
    the hardware preloads it, so a biased layer rounds once. Cost: ceil(width_a / chunk)
    int32 matmuls, chunk = 30 - (width_b - 1) - ceil(log2 K) bits.
    Returns (words int32 of shape (..., N), n_saturated).
    """
    terms = w.shape[0]

    def product(p, q):
        return jnp.matmul(p, q, preferred_element_type=jnp.int32)

    hi, lo = _exact(x, a, w, b, terms, product)
    if bias is not None:
        if bias_fmt is None:
            raise ValueError("matmul: a bias needs its format (bias_fmt)")
        shift = a.frac + b.frac - bias_fmt.frac
        if not 0 <= shift <= LO_BITS or bias_fmt.width + shift - LO_BITS >= 29:
            raise ValueError(f"matmul: bias {bias_fmt} cannot be aligned to {a} x {b} products")
        bhi, blo = _wide(jnp.zeros_like(hi))
        bhi, blo = _add_shifted(bhi, blo, jnp.broadcast_to(jnp.asarray(bias, jnp.int32), hi.shape),
                                shift)
        lo = lo + blo
        hi = hi + bhi + (lo >> LO_BITS)
        lo = lo & LO_MASK
    return narrow_wide(hi, lo, a.frac + b.frac, out)


def _preload(hi, lo, z, c: Fx, frac_products: int, what: str):
    """(hi, lo) + z (in format `c`) aligned to `frac_products` fractional bits, exact."""
    shift = frac_products - c.frac
    if not 0 <= shift <= LO_BITS or c.width + shift - LO_BITS >= 29:
        raise ValueError(f"{what}: {c} cannot be aligned to products with {frac_products} "
                         "fractional bits")
    zhi, zlo = _add_shifted(jnp.zeros_like(hi), jnp.zeros_like(lo),
                            jnp.broadcast_to(jnp.asarray(z, jnp.int32), hi.shape), shift)
    lo = lo + zlo
    return hi + zhi + (lo >> LO_BITS), lo & LO_MASK


def multiply_add(x, a: Fx, y, b: Fx, z, c: Fx, out: Fx):
    """x * y + z elementwise (broadcasting), exact, narrowed once to `out`.

    `z` enters the accumulator exactly, aligned to the product's `a.frac + b.frac` fractional
    bits (which must be at least `c.frac`, at most 24 more), as a DSP's post-adder does.
    Returns (words int32, n_saturated).
    """
    hi, lo = _exact(x, a, y, b, 1, jnp.multiply)
    shape = jnp.broadcast_shapes(jnp.shape(hi), jnp.shape(z))
    hi, lo = jnp.broadcast_to(hi, shape), jnp.broadcast_to(lo, shape)
    hi, lo = _preload(hi, lo, z, c, a.frac + b.frac, "multiply_add")
    return narrow_wide(hi, lo, a.frac + b.frac, out)


def multiply(x, a: Fx, y, b: Fx, out: Fx):
    """x * y elementwise (broadcasting), the exact product narrowed to `out`."""
    hi, lo = _exact(x, a, y, b, 1, jnp.multiply)
    return narrow_wide(hi, lo, a.frac + b.frac, out)


def add(x, a: Fx, y, b: Fx, out: Fx):
    """x + y elementwise, exact, then narrowed to `out` (operands aligned to the finer grid)."""
    f = max(a.frac, b.frac)
    if f - min(a.frac, b.frac) + max(a.width, b.width) > 30:
        raise ValueError(f"aligning {a} and {b} for a sum needs more than 30 bits")
    xs = jnp.asarray(x, jnp.int32) << (f - a.frac)
    ys = jnp.asarray(y, jnp.int32) << (f - b.frac)
    return narrow(xs + ys, f, out)
