"""Replay backends behind one protocol: the same operations through `jax` (the reference) and
`opencl` (PoCL's CPU device here, any OpenCL device elsewhere) give the same trees and samples:
bit for bit in fixed point, within the stated bound in float32 (see
hrl/replay/backends/opencl.py). Plus every bad input and missing-runtime error.

OpenCL tests skip when no OpenCL platform is found, except under CI=true, where that fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.replay import backends
from hrl.replay.backends import BackendUnavailableError, TreeBackend, make_backend
from hrl.replay.formats import FixedPoint, Float32, parse_format, stratify_bits

U = 2.0**-24


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def opencl_available():
    from hrl.replay.backends import opencl

    try:
        opencl.list_devices()
    except BackendUnavailableError as e:
        if _in_ci():
            pytest.fail(f"CI=true but the opencl backend cannot run: {e}")
        pytest.skip(f"no OpenCL platform: {e}")


@pytest.fixture(params=["jax", pytest.param("opencl", marks=pytest.mark.hw)])
def backend_name(request):
    if request.param == "opencl":
        request.getfixturevalue("opencl_available")
    return request.param


# --------------------------------------------------------------------------- op streams


def _priorities(rng, n: int, fmt) -> np.ndarray:
    """Zeros, tiny, ordinary and huge priorities; in fixed point also exact rounding ties and
    values past the leaf range (saturation)."""
    p = (rng.random(n) * 10.0 ** rng.integers(-4, 4, n)).astype(np.float32)
    kind = rng.integers(0, 8, n)
    p[kind == 0] = 0.0
    p[kind == 1] = np.float32(1e-30)  # positive but below one LSB: encodes to 1
    if isinstance(fmt, FixedPoint):
        lsb = np.float32(2.0**-fmt.leaf_frac_bits)
        ties = (rng.integers(0, 1000, n) + np.float32(0.5)) * lsb
        p[kind == 2] = ties[kind == 2]
        p[kind == 3] = np.float32(2.0**fmt.leaf_int_bits) * 3  # saturates
    return p


def _op_stream(seed: int, capacity: int, fmt, n_ops: int):
    """Updates (raw words too) with duplicate-heavy and spread batches, and samples."""
    rng = np.random.default_rng(seed)
    # First a fill: every leaf, plus a quarter of them again (duplicates far apart in the
    # batch), so whole levels are recomputed at once.
    fill = rng.permutation(np.concatenate([np.arange(capacity),
                                           rng.integers(0, capacity, capacity // 4)]))
    yield "update", fill, _priorities(rng, fill.size, fmt)
    for step in range(n_ops):
        batch = int(rng.choice([3, 300]))  # 300 > one work-group of 256
        spread = capacity if rng.random() < 0.5 else max(2, batch // 4)  # duplicates
        indices = rng.integers(0, spread, batch) * (capacity // spread)
        kind = step % 3 if step else 0
        if kind == 0:
            yield "update", indices, _priorities(rng, batch, fmt)
        elif kind == 1 and isinstance(fmt, FixedPoint):
            words = rng.integers(0, fmt.max_word + 1, batch, dtype=np.uint64)
            words[rng.random(batch) < 0.3] = 0
            yield "update_words", indices, (words >> rng.integers(0, fmt.word_bits, batch,
                                                                   dtype=np.uint64))
        elif kind == 1:
            yield "update_words", indices, _priorities(rng, batch, fmt)
        else:
            yield "sample", rng.integers(0, 2**32, 200, dtype=np.uint32), bool(step % 2)


def _exact_node_sums(leaves: np.ndarray, capacity: int, fanout: int, depth: int, level: int,
                     size: int) -> np.ndarray:
    """Sum of the leaves under each word of `level`, in float64 (exact to ~1e-16 relative)."""
    shift = (depth - level) * (fanout.bit_length() - 1)
    node = np.arange(capacity) >> shift
    return np.bincount(node, weights=leaves[:capacity].astype(np.float64), minlength=size)


def _check_float_tree(levels, capacity, fanout, depth) -> list[np.ndarray]:
    """Every word within the stated bound of the exact sum of its leaves; returns the sums."""
    from hrl.replay.backends.opencl import float32_level_bound

    leaves = levels[-1].reshape(-1)
    sums = []
    for level in range(depth + 1):
        words = levels[level].reshape(-1).astype(np.float64)
        exact = _exact_node_sums(leaves, capacity, fanout, depth, level, words.size)
        bound = float32_level_bound(level, depth, fanout) * exact + 1e-12 * exact
        excess = np.abs(words - exact) - bound
        assert (excess <= 0).all(), (
            f"level {level}: word {np.argmax(excess)} off the exact sum by more than the bound"
        )
        sums.append(exact)
    return sums


def _check_float_samples(indices, bits, stratified, leaves, fanout, depth):
    """Each index has priority > 0 and its exact prefix interval holds the target, up to
    a tolerance covering the tree's bound and the descent's own rounding."""
    fractions = np.asarray(stratify_bits(jnp.asarray(bits), bits.shape[0])) if stratified \
        else bits
    prefix = np.concatenate([[0.0], np.cumsum(leaves.astype(np.float64))])
    total = prefix[-1]
    target = fractions.astype(np.float64) * 2.0**-32 * total
    tol = 4 * depth * fanout * U * total
    assert (leaves[indices] > 0).all(), "sampled a zero-priority leaf"
    assert (prefix[indices] - tol <= target).all() and (target <= prefix[indices + 1] + tol).all()


CASES = [  # (fanout, capacity): neither capacity is a power of the fanout
    (4, 1000),  # depth 5, last level partly filled
    (16, 4100),  # depth 4, the last subtree holds 4 of 4096 leaves
]
FORMATS = ["float32", "fixed", "fixed:16:6"]  # 16-bit words: coarse grid, leaves saturate


@pytest.mark.hw
@pytest.mark.parametrize("fmt_spec", FORMATS)
@pytest.mark.parametrize("fanout,capacity", CASES)
def test_same_op_stream_same_trees_and_samples(opencl_available, fanout, capacity, fmt_spec):
    fmt = parse_format(fmt_spec)
    ref = make_backend("jax", capacity, fanout, fmt, device="cpu")
    ocl = make_backend("opencl", capacity, fanout, fmt)
    depth = ref.depth
    for op, first, second in _op_stream(fanout * 1000 + capacity, capacity, fmt, n_ops=16):
        if op == "sample":
            got_ref = ref.sample_from_bits(first, second)
            got_ocl = ocl.sample_from_bits(first, second)
            if isinstance(fmt, FixedPoint):
                np.testing.assert_array_equal(got_ocl, got_ref)
            else:
                leaves = ref.level_words()[-1].reshape(-1)[:capacity]
                for got in (got_ref, got_ocl):
                    _check_float_samples(got, first, second, leaves, fanout, depth)
            continue
        getattr(ref, op)(first, second)
        getattr(ocl, op)(first, second)
        words_ref, words_ocl = ref.level_words(), ocl.level_words()
        assert [w.shape for w in words_ocl] == [w.shape for w in words_ref]
        assert [w.dtype for w in words_ocl] == [w.dtype for w in words_ref]
        if isinstance(fmt, FixedPoint):
            for level, (a, b) in enumerate(zip(words_ocl, words_ref, strict=True)):
                np.testing.assert_array_equal(a, b, err_msg=f"level {level} after {op}")
            assert ocl.total() == ref.total()
        else:
            np.testing.assert_array_equal(words_ocl[-1], words_ref[-1])  # leaves exact
            sums = _check_float_tree(words_ref, capacity, fanout, depth)
            _check_float_tree(words_ocl, capacity, fanout, depth)
            from hrl.replay.backends.opencl import float32_level_bound

            for level in range(depth + 1):
                diff = np.abs(words_ocl[level].reshape(-1).astype(np.float64)
                              - words_ref[level].reshape(-1))
                assert (diff <= 2 * float32_level_bound(level, depth, fanout) * sums[level]
                        + 1e-12 * sums[level]).all()


def _xla_cumsum_is_sequential(fanout: int) -> bool:
    rng = np.random.default_rng(0)
    x = (rng.random((256, fanout)) * 10.0 ** rng.integers(-6, 6, (256, fanout)))
    x = x.astype(np.float32)
    rows = rng.integers(0, 256, 512)
    got = np.asarray(jax.jit(lambda a, i: jnp.cumsum(a[i], axis=-1))(x, rows))
    seq = np.empty_like(x)
    seq[:, 0] = x[:, 0]
    for j in range(1, fanout):
        seq[:, j] = seq[:, j - 1] + x[:, j]
    return np.array_equal(got, seq[rows])


@pytest.mark.hw
@pytest.mark.parametrize("fanout,capacity", CASES)
def test_float32_samples_identical_on_identical_trees(opencl_available, fanout, capacity):
    """The float descent does the reference's operations in its order: same words, same
    indices (where XLA's cumsum adds left to right, as on XLA CPU for K <= 16)."""
    if not _xla_cumsum_is_sequential(fanout):
        pytest.skip(f"XLA's cumsum on {jax.devices()[0].platform} does not add left to right "
                    f"for K={fanout}; float samples agree only within the bound there")
    ref = make_backend("jax", capacity, fanout, "float32", device="cpu")
    ocl = make_backend("opencl", capacity, fanout, "float32")
    rng = np.random.default_rng(7)
    for op, first, second in _op_stream(3, capacity, Float32(), n_ops=6):
        if op != "sample":
            getattr(ref, op)(first, second)
    ocl.load_level_words(ref.level_words())
    for stratified in (True, False):
        bits = rng.integers(0, 2**32, 4096, dtype=np.uint32)
        np.testing.assert_array_equal(ocl.sample_from_bits(bits, stratified),
                                      ref.sample_from_bits(bits, stratified))


@pytest.mark.hw
def test_fixed_encoding_edge_values_match_reference(opencl_available):
    fmt = FixedPoint(32, 20)
    lsb = 2.0**-fmt.leaf_frac_bits
    values = np.array(
        [0.0, 1e-30, 0.5 * lsb, 1.5 * lsb, 2.5 * lsb, 1.0, 2.0**20 - lsb, 2.0**20, 3e38,
         np.finfo(np.float32).max, 123.456, lsb],
        np.float32,
    )
    indices = np.arange(values.size)
    ref = make_backend("jax", 64, 4, fmt, device="cpu")
    ocl = make_backend("opencl", 64, 4, fmt)
    ref.update(indices, values)
    ocl.update(indices, values)
    got, want = ocl.level_words()[-1].reshape(-1), ref.level_words()[-1].reshape(-1)
    np.testing.assert_array_equal(got, want)
    assert list(got[:5]) == [0, 1, 1, 2, 2]  # rint ties to even; positive never 0
    assert got[7] == got[8] == fmt.max_word  # saturation


@pytest.mark.hw
def test_subnormal_priority_counts_as_zero_on_every_backend(opencl_available):
    """formats: subnormal priorities count as zero, whether or not a device flushes them;
    the smallest normal float32 still encodes to one LSB."""
    tiny = np.finfo(np.float32).tiny
    for name in ("jax", "opencl"):
        tree = make_backend(name, 16, 4, "fixed")
        tree.update(np.array([3, 4]), np.array([1e-40, tiny], np.float32))
        assert tree.level_words()[-1].reshape(-1)[3:5].tolist() == [0, 1], name


def test_duplicates_last_in_batch_wins(backend_name):
    tree = make_backend(backend_name, 50, 4, "fixed")
    tree.update(np.array([5, 9, 5, 5, 9]), np.array([1.0, 2.0, 3.0, 4.0, 0.0]))
    leaves = tree.level_words()[-1].reshape(-1)
    assert leaves[5] == 4 * 2**12 and leaves[9] == 0
    # A batch larger than one work-group, every item on the same leaf.
    tree.update(np.full(1000, 7), np.arange(1000, dtype=np.float32))
    assert tree.level_words()[-1].reshape(-1)[7] == 999 * 2**12


@pytest.mark.hw
def test_load_level_words_restores_a_tree_exactly(opencl_available):
    ref = make_backend("jax", 300, 4, "fixed")
    ocl = make_backend("opencl", 300, 4, "fixed")
    rng = np.random.default_rng(2)
    ref.update(rng.integers(0, 300, 200), rng.random(200).astype(np.float32))
    ocl.load_level_words(ref.level_words())
    idx, pr = rng.integers(0, 300, 50), rng.random(50).astype(np.float32)
    ref.update(idx, pr)
    ocl.update(idx, pr)
    for a, b in zip(ocl.level_words(), ref.level_words(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_protocol_reset_total_and_empty_batch(backend_name):
    tree = make_backend(backend_name, 100, 16, "float32")
    assert isinstance(tree, TreeBackend) and tree.name == backend_name
    assert (tree.capacity, tree.fanout, tree.depth) == (100, 16, 2)
    tree.update(np.array([1, 99]), np.array([0.25, 2.0]))
    tree.update([], [])  # no-op
    tree.update_words(np.array([], np.int64), np.array([], np.float32))
    assert tree.total() == 2.25
    tree.reset()
    assert tree.total() == 0.0 and all((w == 0).all() for w in tree.level_words())
    with pytest.raises(ValueError, match="empty tree"):
        tree.sample_from_bits(np.array([1, 2], np.uint32))


def test_total_follows_every_write_after_a_sample(backend_name):
    """A sample reads the root beside its indices (the OpenCL driver keeps it for the total
    asked right after); every later write must make the total current again."""
    tree = make_backend(backend_name, 64, 4, "fixed")
    ref = make_backend("jax", 64, 4, "fixed")
    bits = np.arange(1, 9, dtype=np.uint32) * np.uint32(0x1F3D5B79)
    writes = [("update", np.array([3, 7]), np.array([0.5, 1.5], np.float32)),
              ("update_words", np.array([7, 9]), np.array([5, 6], np.uint32)),
              ("load_level_words", None, None), ("reset", None, None)]
    for op, idx, values in writes:
        if op != "reset":
            tree.update(np.array([1, 2]), np.array([0.25, 2.0], np.float32))
            ref.update(np.array([1, 2]), np.array([0.25, 2.0], np.float32))
            np.testing.assert_array_equal(tree.sample_from_bits(bits), ref.sample_from_bits(bits))
            assert tree.total() == ref.total()
        if op == "load_level_words":
            other = make_backend("jax", 64, 4, "fixed")
            other.update(np.arange(10), np.full(10, 3.0, np.float32))
            tree.load_level_words(other.level_words())
            ref.load_level_words(other.level_words())
        elif op == "reset":
            tree.reset()
            ref.reset()
        else:
            getattr(tree, op)(idx, values)
            getattr(ref, op)(idx, values)
        assert tree.total() == ref.total(), op


@pytest.mark.hw
def test_pocl_default_device_runs_kernels_in_the_callers_thread(opencl_available):
    """Without POCL_DEVICES set, PoCL lists its basic and pthread devices and the backend
    picks basic (hrl.replay.backends.opencl docstring); a POCL_DEVICES the user set stays."""
    script = textwrap.dedent("""
        import os
        from hrl.replay.backends import make_backend, opencl
        names = [d.name for _, d in opencl.list_devices()]
        print(os.environ["POCL_DEVICES"], "|", make_backend("opencl", 10).device.name, "|",
              ";".join(names))
    """)

    def run(**env_extra):
        env = {k: v for k, v in os.environ.items() if k != "POCL_DEVICES"}
        env.update(JAX_PLATFORMS="cpu", **env_extra)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return [part.strip() for part in out.stdout.strip().splitlines()[-1].split("|")]

    asked, picked, names = run()
    assert asked == "basic pthread"
    if not any(name.startswith("basic-") for name in names.split(";")):
        pytest.skip(f"no PoCL basic device among {names!r}")
    assert picked.startswith("basic-")
    asked, picked, _ = run(POCL_DEVICES="pthread")
    assert asked == "pthread" and not picked.startswith("basic-")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda t: t.update(np.array([100]), np.array([1.0])),
         r"indices\[0\]=100 .*\[0, capacity=100\)"),
        (lambda t: t.update(np.array([-1]), np.array([1.0])), r"indices\[0\]=-1"),
        (lambda t: t.update(np.array([[1]]), np.array([1.0])), "1-D integer"),
        (lambda t: t.update(np.array([1.0]), np.array([1.0])), "1-D integer"),
        (lambda t: t.update(np.array([1, 2]), np.array([1.0])), r"shape \(2,\)"),
        (lambda t: t.update(np.array([1]), np.array([np.nan])), r"priorities\[0\]=.*finite"),
        (lambda t: t.update(np.array([1]), np.array([-0.5])), r"priorities\[0\]=-0.5"),
        (lambda t: t.update(np.array([1]), np.array([1e39])), "float32 range"),
        (lambda t: t.update_words(np.array([1]), np.array([2**32])), r"words\[0\]=4294967296"),
        (lambda t: t.update_words(np.array([1]), np.array([0.5])), "must be integers"),
        (lambda t: t.sample_from_bits(np.array([], np.uint32)), "non-empty 1-D"),
        (lambda t: t.sample_from_bits(np.array([-3])), r"bits\[0\]=-3"),
        (lambda t: t.load_level_words([np.zeros(1, np.uint32)]), "expected 5 levels"),
    ],
)
def test_bad_input_names_the_problem(backend_name, call, message):
    tree = make_backend(backend_name, 100, 4, "fixed")
    with pytest.raises(ValueError, match=message):
        call(tree)


@pytest.mark.parametrize(
    "args,message",
    [
        ((0, 4, "float32"), "capacity must be a positive int"),
        ((2**31, 4, "float32"), r"capacity must be < 2\*\*31"),
        ((100, 3, "float32"), "fanout must be a power of two"),
        ((100, 128, "float32"), "fanout must be <= 64"),
        ((100, 4, "fixed:40:3"), "word_bits"),
        ((2**31 - 1, 64, "fixed"), r"depth\*log2\(fanout\) <= 32"),
    ],
)
def test_bad_construction_names_the_problem(backend_name, args, message):
    with pytest.raises(ValueError, match=message):
        make_backend(backend_name, *args)


def test_registry_errors():
    with pytest.raises(ValueError, match=r"unknown replay backend 'cuda'.*'jax', 'opencl', 'rtl'"):
        make_backend("cuda", 10)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['xclbin'\] .*'jax'"):
        make_backend("jax", 10, xclbin="x.xclbin")


def test_rtl_backend_without_its_module_says_what_to_install(monkeypatch):
    # Point 'rtl' at a module that does not exist, so the test holds once the real one lands.
    monkeypatch.setitem(backends.BACKENDS, "rtl", ("hrl.replay.backends._no_such_rtl", "X"))
    with pytest.raises(BackendUnavailableError,
                       match=r"hrl\.replay\.backends\.rtl.*iverilog.*verilator.*cocotb"):
        make_backend("rtl", 100, 4, "fixed")


@pytest.mark.hw
def test_opencl_option_errors(opencl_available, tmp_path):
    with pytest.raises(ValueError, match="local_size must be a power of two"):
        make_backend("opencl", 10, local_size=3)
    with pytest.raises(BackendUnavailableError, match="no OpenCL device name contains"):
        make_backend("opencl", 10, device="no-such-device-xyz")
    with pytest.raises(FileNotFoundError, match=r"xclbin=.*is not a file.*Vitis"):
        make_backend("opencl", 10, xclbin=tmp_path / "missing.xclbin")
    garbage = tmp_path / "garbage.xclbin"
    garbage.write_bytes(b"\x00not an fpga binary" * 64)
    with pytest.raises(BackendUnavailableError, match="rejected xclbin"):
        make_backend("opencl", 10, xclbin=garbage)


@pytest.mark.hw
def test_binary_program_path(opencl_available, tmp_path):
    """`xclbin=` loads a device binary instead of the source: here the device's own binary of
    the kernels (on a board, an FPGA binary with the same kernel names and arguments)."""
    import pyopencl as cl

    from hrl.replay.backends import opencl

    source_built = make_backend("opencl", 500, 4, "fixed")
    program = cl.Program(source_built.context, opencl.kernel_source()).build(
        options=["-cl-std=CL1.2"], devices=[source_built.device])
    path = tmp_path / "tree.bin"
    path.write_bytes(program.get_info(cl.program_info.BINARIES)[0])
    loaded = make_backend("opencl", 500, 4, "fixed", xclbin=path,
                          device=source_built.device)
    rng = np.random.default_rng(5)
    indices, priorities = rng.integers(0, 500, 300), rng.random(300).astype(np.float32)
    for tree in (source_built, loaded):
        tree.update(indices, priorities)
    assert loaded.total() > 0
    for a, b in zip(loaded.level_words(), source_built.level_words(), strict=True):
        np.testing.assert_array_equal(a, b)

    other = cl.Program(source_built.context, "__kernel void other(__global int *x) {}").build()
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(other.get_info(cl.program_info.BINARIES)[0])
    with pytest.raises(BackendUnavailableError, match=r"lacks kernels \['hrl_sample_fixed'"):
        make_backend("opencl", 10, 4, "fixed", xclbin=wrong, device=source_built.device)


@pytest.mark.hw
def test_programs_are_cached_per_context(opencl_available):
    from hrl.replay.backends import opencl

    first = make_backend("opencl", 10, 4, "fixed")
    second = make_backend("opencl", 20, 16, "float32")
    assert first.context is second.context
    source_programs = [k for k in opencl._programs[first.context] if k[0] == "source"]
    assert len(source_programs) == 1


@pytest.mark.hw
def test_missing_opencl_platform_says_what_to_install(tmp_path):
    """A real ICD loader with no vendors registered (a machine without an OpenCL device)."""
    pytest.importorskip("pyopencl")
    script = textwrap.dedent("""
        from hrl.replay.backends import BackendUnavailableError, make_backend
        try:
            make_backend("opencl", 10)
        except BackendUnavailableError as e:
            print("ERROR:", e)
    """)
    env = dict(os.environ, OCL_ICD_VENDORS=str(tmp_path), OPENCL_VENDOR_PATH=str(tmp_path),
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    if "ERROR:" not in out.stdout:
        pytest.skip("this pyopencl finds an OpenCL platform without the system ICD loader "
                    "(pyopencl[pocl] wheel); the no-platform path cannot be staged here")
    assert "no OpenCL platform found" in out.stdout
    assert "pocl-opencl-icd" in out.stdout and "pyopencl[pocl]" in out.stdout
