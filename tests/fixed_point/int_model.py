"""The Python-int model of a narrowing that the fixed-point tests check the JAX reference
against: unbounded integers, written from `hrl.fixed_point.numerics`' docstring and
independent of its int32 carries."""

from __future__ import annotations

from hrl.fixed_point.numerics import Fx


def rne(v: int, s: int) -> int:
    """round(v / 2**s), ties to even, for a Python int (s may be negative: an exact shift)."""
    if s <= 0:
        return v << -s
    q, r = divmod(v, 1 << s)  # floor division: 0 <= r < 2**s
    half = 1 << (s - 1)
    return q + (1 if r > half or (r == half and q & 1) else 0)


def sat(v: int, f: Fx) -> tuple[int, int]:
    """v clamped into `f`, and 1 if that changed it (a saturation), else 0."""
    c = min(max(v, f.min_int), f.max_int)
    return c, int(c != v)
