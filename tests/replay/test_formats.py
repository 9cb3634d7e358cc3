"""Fixed-point arithmetic against Python integers: the rules every backend must share."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hrl.replay import formats

U32 = st.integers(0, 2**32 - 1)


@given(st.lists(U32, min_size=1, max_size=64), st.lists(U32, min_size=1, max_size=64))
@settings(max_examples=50, deadline=None)
def test_mulhi_is_the_high_word_of_the_64_bit_product(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    got = np.asarray(formats.mulhi_u32(np.array(a, np.uint32), np.array(b, np.uint32)))
    assert got.tolist() == [(x * y) >> 32 for x, y in zip(a, b, strict=True)]


@pytest.mark.parametrize("k", [2, 4, 16, 64])
@pytest.mark.parametrize("w", [8, 20, 32])
def test_combine_is_round_up_mean_without_overflow(k, w):
    rng = np.random.default_rng(k * w)
    top = 2**w - 1
    kids = rng.integers(0, top, size=(200, k), endpoint=True, dtype=np.uint64)
    kids[0] = top  # the worst case must still fit
    kids[1] = 0
    kids[2, 0] = 1  # one LSB must not vanish
    kids[2, 1:] = 0
    got = np.asarray(formats.FixedPoint(w, 0).combine(jnp.asarray(kids, jnp.uint32), k))
    want = [-(-int(sum(int(x) for x in row)) // k) for row in kids]
    assert got.tolist() == want
    assert got[0] == top and got[2] == 1


def test_encode_rounds_half_to_even_and_saturates():
    fmt = formats.FixedPoint(word_bits=16, leaf_int_bits=8)  # LSB = 1/256
    lsb = 2.0**-8
    cases = {
        0.0: 0,
        lsb: 1,
        0.5 * lsb: 1,  # positive never encodes to zero
        1e-30: 1,
        2.5 * lsb: 2,  # half to even
        3.5 * lsb: 4,
        1.0: 256,
        255.99: 65533,  # rint(255.99 * 256) = 65533
        256.0: 65535,  # saturates at 2**16 - 1
        1e30: 65535,
    }
    got = np.asarray(fmt.encode(jnp.array(list(cases), jnp.float32))).tolist()
    assert got == list(cases.values())


def test_encode_saturates_full_32_bit_words():
    fmt = formats.FixedPoint(word_bits=32, leaf_int_bits=4)
    got = np.asarray(fmt.encode(jnp.array([15.0, 16.0, 1e9], jnp.float32))).tolist()
    assert got == [15 * 2**28, 2**32 - 1, 2**32 - 1]


def test_level_formats_follow_the_paper_layout():
    # The paper's K=4 FPGA tree: 32-bit words, 20/22/24/26 integer bits from leaf to root.
    fmt = formats.FixedPoint(32, 20)
    assert [fmt.int_bits(lvl, 3, 4) for lvl in (3, 2, 1, 0)] == [20, 22, 24, 26]
    word = jnp.uint32(3 << 6)  # at the root (6 fractional bits) this is 3.0
    assert float(fmt.decode(word, 0, 3, 4)) == 3.0


@pytest.mark.parametrize("batch", [1, 3, 256, 4096])
def test_stratified_fractions_fall_in_their_slice(batch):
    bits = np.array([0, 2**32 - 1] * (batch // 2) + [2**31] * (batch % 2), np.uint32)
    frac = np.asarray(formats.stratify_bits(jnp.asarray(bits), batch)).astype(np.int64)
    i = np.arange(batch)
    assert np.all(frac >= i * (2**32 // batch) - batch)
    assert np.all(frac < (i + 1) * (2**32 / batch))
    assert np.all(np.diff(frac) > 0) if batch > 1 else True


def test_level_sizes_cover_capacity():
    for n in [1, 2, 5, 16, 17, 1000, 2**20]:
        for k in [2, 4, 16, 64]:
            sizes = formats.level_sizes(n, k)
            assert sizes[0] == 1 and sizes[-1] >= n
            assert len(sizes) == formats.tree_depth(n, k) + 1
            for upper, lower in zip(sizes[:-1], sizes[1:], strict=True):
                assert lower % k == 0 and upper * k >= lower


@pytest.mark.parametrize("spec", ["fixed:40:4", "fixed:16:17", "fixed:x:y", "fixed:1", "int8"])
def test_bad_format_specs_are_rejected(spec):
    with pytest.raises(ValueError):
        formats.parse_format(spec)
