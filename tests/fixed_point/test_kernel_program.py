"""The FPGA learner kernel's programs (`hrl.fixed_point.kernel_program`), without a simulator:
the refusals of what the kernel cannot hold (one line naming the key and the limit), the
config registers' round trip, the image's layout (offsets inside one block, 64-byte aligned,
the descriptors' words) and the forward pass's op table against the formats. The kernel
running these programs bit for bit: sim/hrl_learn_kernel/ (tests/rtl/test_rtl_learn_kernel.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.numerics import Fx

SHAPE = kp.KernelShape(r=4, c=4, aw=16, bw=16, ow=24, nmax=64, nl=3, bmax=32, bsmax=24)


def test_config_registers_round_trip():
    """The registers 0x50..0x58 (as hrl_learn_kernel packs them) give the parameters back."""
    p = kp.hdl_params(SHAPE)
    words = (p["R"] | p["C"] << 8 | p["NL"] << 16 | p["OW"] << 24,
             p["NMAX"] | p["BMAX"] << 16, p["AW"] | p["BW"] << 8 | p["BSMAX"] << 16)
    assert kp.KernelShape.from_config(*words) == SHAPE


@pytest.mark.parametrize("dims,batch,fmt,message", [
    ((4, 64, 64, 64, 2), 1, FxFormats(), r"agent.network: 4-64-64-64-2 has 4 layers; .*NL=3"),
    ((4, 128, 2), 1, FxFormats(), r"agent.network: 4-128-2 has a layer 128 wide; .*NMAX=64"),
    ((4, 64, 2), 33, FxFormats(), r"batch: 33 is outside .*1..BMAX=32"),
    ((4, 64, 2), 0, FxFormats(), r"batch: 0 is outside"),
    ((4, 64, 2), 1, FxFormats(act=Fx(18, 8)), r"agent.fixed_point.act: 18 bits exceed .*AW=16"),
    ((4, 64, 2), 1, FxFormats(value=Fx(28, 8)),
     r"agent.fixed_point.value: 28 bits exceed .*OW=24"),
])
def test_refuses_what_the_kernel_cannot_hold(dims, batch, fmt, message):
    with pytest.raises(ValueError, match=message) as err:
        SHAPE.refuse(dims, batch, fmt)
    assert "\n" not in str(err.value)


def test_forward_image_layout():
    """Descriptors first, then the op table and the store descriptors, then each matrix, every
    block on a 64-byte boundary and addressed by its offset; the loads' words are the arrays'
    (two's complement), the ops' fields the formats' shifts and widths."""
    f, dims, batch = FxFormats(), (4, 9, 2), 3
    prog = kp.forward_program(SHAPE, dims, batch, f)
    rng = np.random.default_rng(0)
    arrays = {"x": rng.integers(-300, 300, (batch, 4)), "w0": rng.integers(-9, 9, (4, 9)),
              "b0": rng.integers(-9, 9, (1, 9)), "w1": rng.integers(-9, 9, (9, 2)),
              "b1": rng.integers(-9, 9, (1, 2))}
    words, regs, outs = prog.image(arrays)
    assert regs["n_loads"] == 5 and regs["n_ops"] == 2 and regs["n_stores"] == 1
    assert regs["ops_at"] == 5 * 64 and regs["st_at"] == regs["ops_at"] + 2 * 64
    for i, m in enumerate(prog.loads):
        d = words[16 * i:16 * i + 16]
        assert tuple(d[:5]) == (m.sel, m.base, m.slog, m.rows, m.cols)
        assert d[5] % 64 == 0 and d[6] == 0
        got = words[d[5] // 4:d[5] // 4 + m.rows * m.cols].view(np.int32)
        np.testing.assert_array_equal(got, np.ravel(arrays[m.name]))
    ops = words[regs["ops_at"] // 4:regs["ops_at"] // 4 + 32].reshape(2, 16).view(np.int32)
    field = {name: ops[:, i] for i, name in enumerate(kp.FIELDS)}
    np.testing.assert_array_equal(field["relu"], [1, 0])
    np.testing.assert_array_equal(field["width"], [f.act.width, f.value.width])
    np.testing.assert_array_equal(
        field["shift"], [f.weight.frac, f.act.frac + f.weight.frac - f.value.frac])
    np.testing.assert_array_equal(field["y_base"][:1], field["x_base"][1:])
    offset, rows, cols = outs["y"]
    assert (rows, cols) == (batch, 2) and offset % 64 == 0
    assert offset + 4 * rows * cols <= 4 * len(words)


def test_weights_apart():
    """The weights program loads every W and b and runs nothing; the pass without them loads
    only x: an inference between two SGD steps moves its input and its Q values."""
    w = kp.weights_program(SHAPE, (4, 64, 64, 2))
    assert [m.name for m in w.loads] == ["w0", "b0", "w1", "b1", "w2", "b2"]
    assert len(w.ops) == 0 and not w.stores
    fwd = kp.forward_program(SHAPE, (4, 64, 64, 2), 1, FxFormats(), load_weights=False)
    assert [m.name for m in fwd.loads] == ["x"] and len(fwd.ops) == 3
    assert [(m.sel, m.base) for m in w.loads] == [
        (m.sel, m.base) for m in kp.forward_program(SHAPE, (4, 64, 64, 2), 1, FxFormats()).loads
        if m.name != "x"]


def test_kept_op_table_moves_none():
    """keep_ops: ops_at says so (0xffffffff) and the image carries no op words; the rest of
    the program is laid out as without it."""
    prog = kp.forward_program(SHAPE, (4, 9, 2), 1, FxFormats(), load_weights=False)
    x = np.ones((1, 4), np.int32)
    words, regs, outs = prog.image({"x": x})
    kept, kregs, kouts = prog.image({"x": x}, keep_ops=True)
    assert kregs["ops_at"] == kp.KEEP_OPS and kregs["n_ops"] == 2
    assert len(kept) == len(words) - 2 * kp.DESC_WORDS
    assert kregs["st_at"] == regs["st_at"] - 2 * 64
    assert kouts["y"][0] == outs["y"][0] - 2 * 64
