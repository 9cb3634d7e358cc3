"""The reciprocal square root of the optimizer unit: one table read and two shifts per word.

    rsqrt(v, v_fmt, out)        -> (words of `out`, n_sat)      1 / sqrt(max(v, 1 lsb))
    rsqrt_table(index_bits)     -> the table (numpy int32), as the RTL's ROM holds it

Adam divides each parameter's first moment by the square root of its second moment. A
divider and a square root per parameter would cost the update unit more than the rest of it;
a normalize-lookup-shift costs a leading-zero count, a ROM of 3 * 2**(T-2) words and a
barrel shift, and is exact by definition, so the RTL and any other implementation match it bit
for bit. The rule, in full, for a second-moment word V >= 0 of `v_fmt` (frac f):

1. V is clamped to >= 1 (Adam's epsilon is one lsb of the second moment) and, when f is odd,
   doubled with f incremented, so the exponent below halves exactly.
2. e = floor(log2 V) (31 - count of leading zeros); s = e rounded down to even, so
   V = y * 2**s with y in [1, 4).
3. Y = floor(V * 2**(T-2-s)): the top T bits of V, in [2**(T-2), 2**T) (a right shift that
   drops bits, or an exact left shift when V is short).
4. R = TABLE[Y - 2**(T-2)] = round(2**(P + (T-2)/2) / sqrt(Y)), which is about 2**P / sqrt(y),
   in (2**(P-1), 2**P]. The table is computed once in float64 here and written to the RTL's
   ROM from this function; it is data, not a formula either side re-derives.
5. The result 2**(out.frac + f/2) / sqrt(V) = R * 2**(out.frac + f/2 - P - s/2): a right
   shift of R rounding to nearest, ties to even, or a left shift; then saturation to `out`.

The relative error is below 2**-(T-1) (the truncation in 3), so T = 10 gives 0.2%, less than
the step's own rounding matters to Adam.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hrl.fixed_point.numerics import Fx

INDEX_BITS = 10  # T: the table's index is the top T bits of the normalized word (T even)
TABLE_BITS = 16  # P: TABLE[0] = 2**P, every entry in (2**(P-1), 2**P]


@functools.cache
def rsqrt_table(index_bits: int = INDEX_BITS, table_bits: int = TABLE_BITS) -> np.ndarray:
    """round(2**(P + (T-2)/2) / sqrt(Y)) for Y in [2**(T-2), 2**T): 3 * 2**(T-2) int32 words."""
    if index_bits % 2 or not 4 <= index_bits <= 16:
        raise ValueError(f"rsqrt index bits must be even and in 4..16, got {index_bits}")
    y = np.arange(1 << (index_bits - 2), 1 << index_bits, dtype=np.float64)
    table = np.rint(2.0 ** (table_bits + (index_bits - 2) // 2) / np.sqrt(y)).astype(np.int64)
    assert table[0] == 1 << table_bits and table.min() > 1 << (table_bits - 1)
    return table.astype(np.int32)


def _shift_right_even(x, k):
    """x >> k rounding to nearest, ties to even; x >= 0 int32, 0 <= k <= 30 (traced)."""
    q = jnp.right_shift(x, k)
    rem = x - jnp.left_shift(q, k)
    half = jnp.where(k > 0, jnp.left_shift(jnp.int32(1), jnp.maximum(k - 1, 0)), 0)
    up = (k > 0) & ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    return q + up.astype(jnp.int32)


def rsqrt(v, v_fmt: Fx, out: Fx, index_bits: int = INDEX_BITS):
    """1 / sqrt(v) for words v >= 0 of `v_fmt` (negative words read as 0), as words of `out`,
    by the rule of the module docstring. Returns (words int32, n_saturated)."""
    table = jnp.asarray(rsqrt_table(index_bits))
    f = v_fmt.frac
    v = jnp.maximum(jnp.asarray(v, jnp.int32), 1)
    if f % 2:
        v, f = v * 2, f + 1  # v < 2**29 (width <= 30), so the double fits
    e = 31 - jax.lax.clz(v)
    s = e - (e & 1)
    lead = index_bits - 2
    y = jnp.where(s >= lead, jnp.right_shift(v, jnp.maximum(s - lead, 0)),
                  jnp.left_shift(v, jnp.maximum(lead - s, 0)))
    r = table[y - (1 << lead)]
    k = TABLE_BITS + s // 2 - (out.frac + f // 2)  # right shift when > 0
    right = _shift_right_even(r, jnp.clip(k, 0, 30))
    left_by = jnp.clip(-k, 0, 30)
    fits = r <= jnp.right_shift(jnp.int32(out.max_int), left_by)
    left = jnp.where(fits, jnp.left_shift(r, left_by), out.max_int)
    words = jnp.where(k >= 0, right, left)
    sat = words > out.max_int
    words = jnp.minimum(words, out.max_int)
    n_sat = jnp.sum((sat | ((k < 0) & ~fits)).astype(jnp.int32))
    return words, n_sat
