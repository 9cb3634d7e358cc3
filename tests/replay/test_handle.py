"""ReplayHandle (hrl/replay/handle.py): the per-call API equals PrioritizedReplay bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hrl.replay import native
from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.handle import ReplayHandle

needs_native = pytest.mark.skipif(not native.available(), reason="native kernels unavailable")


def item():
    return {"obs": np.zeros(3, np.float32), "action": np.int32(0), "done": np.float32(0)}


def items(rng, m):
    return {
        "obs": rng.standard_normal((m, 3)).astype(np.float32),
        "action": rng.integers(0, 4, m).astype(np.int32),
        "done": (rng.random(m) < 0.1).astype(np.float32),
    }


def assert_same(a, b, what):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb), what
    for x, y in zip(la, lb, strict=True):
        x, y = np.atleast_1d(np.asarray(x)), np.atleast_1d(np.asarray(y))
        assert x.dtype == y.dtype and x.shape == y.shape, (what, x.dtype, y.dtype)
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), what


def run_both(rb, batch, steps=12, beta=0.4, seed=0, path="auto", scale=1.0):
    """The reference (jitted PrioritizedReplay calls) and a handle through the same adds,
    samples and updates; every sample and the final state compared bit for bit. `scale`
    multiplies the added priorities and TD errors (tiny: subnormal floats)."""
    rng = np.random.default_rng(seed)
    state = rb.init(item())
    handle = ReplayHandle(rb, state, batch, path=path)
    add = jax.jit(rb.add)
    add_p = jax.jit(lambda s, i, p: rb.add(s, i, p))
    update = jax.jit(rb.update)
    sample = jax.jit(rb.sample, static_argnums=2)
    for j in range(3):  # the third add wraps the ring
        new = items(rng, 90)
        if j == 1:
            p = ((rng.random(90) + 0.01) * scale).astype(np.float32)
            state = add_p(state, new, p)
            handle.add(new, p)
        else:
            state = add(state, new)
            handle.add(new)
    assert handle.size == int(state.size)
    ref = sample(state, jax.random.PRNGKey(seed), batch, beta)
    got = handle.sample(jax.random.PRNGKey(seed), beta)
    assert_same(ref, got, "first sample")
    for t in range(steps):
        td = rng.standard_normal(batch).astype(np.float32) * np.float32(
            (10.0 if t % 2 else 0.1) * scale)
        key = jax.random.PRNGKey(seed + t + 1)
        state = update(state, ref.indices, td)
        ref = sample(state, key, batch, beta)
        if t % 3 == 0:  # the two calls ...
            handle.update(got.indices, td)
            got = handle.sample(key, beta)
        else:  # ... and the one call agree
            got = handle.update_and_sample(got.indices, td, key, beta)
        assert_same(ref, got, f"step {t}")
    assert_same(state, handle.state, "state")
    return handle


@needs_native
@pytest.mark.parametrize("path", ["direct", "jit"])
@pytest.mark.parametrize("fmt", ["float32", "fixed", "fixed:24:12"])
# fanout 64 (a third of the 36 cases) in the long tier; 4 and 16 in make test
@pytest.mark.parametrize("fanout", [4, 16, pytest.param(64, marks=pytest.mark.long)])
@pytest.mark.parametrize("weights", ["global", "batch"])
def test_native_handle_equals_buffer(fmt, fanout, weights, path):
    rb = make_prioritized_replay(200, fmt=fmt, fanout=fanout, weights=weights, impl="native")
    handle = run_both(rb, batch=32, path=path)
    assert handle.packed and handle.path == path


@needs_native
@pytest.mark.parametrize("path", ["direct", "jit"])
def test_native_handle_binary_tree_and_beta_one(path):
    rb = make_prioritized_replay(200, fanout=2, impl="native")
    run_both(rb, batch=16, beta=1.0, path=path)


@needs_native
@pytest.mark.parametrize("fmt", ["float32", "fixed"])
def test_direct_path_flushes_subnormals_as_xla_does(fmt):
    """XLA:CPU reads and writes subnormal floats as zero; the direct path's C++ runs in the
    same mode, so priorities, TD errors and eps far below float32's normal range give the
    reference's bits too."""
    rb = make_prioritized_replay(200, fmt=fmt, eps=1e-44, weights="batch", impl="native")
    run_both(rb, batch=16, steps=6, path="direct", scale=1e-39)


@needs_native
def test_handle_path_auto_takes_direct_where_it_matches_and_says_why_not():
    rb = make_prioritized_replay(64, impl="native")
    assert ReplayHandle(rb, rb.init(item()), 4).path == "direct"
    # x ** 0.5 with a constant exponent: XLA computes a square root, not powf; the handle
    # stays on the jitted path rather than round differently.
    half = make_prioritized_replay(64, alpha=0.5, impl="native")
    assert ReplayHandle(half, half.init(item()), 4).path == "jit"
    with pytest.raises(ValueError, match="powf and XLA:CPU's pow round differently"):
        ReplayHandle(half, half.init(item()), 4, path="direct")
    xla = make_prioritized_replay(64, impl="xla")
    with pytest.raises(ValueError, match="needs the native kernels"):
        ReplayHandle(xla, xla.init(item()), 4, path="direct")
    with pytest.raises(ValueError, match="path must be 'auto', 'direct' or 'jit'"):
        ReplayHandle(rb, rb.init(item()), 4, path="c")


@needs_native
def test_direct_sample_is_numpy_and_its_indices_read_only():
    """The handle passes its last sample's indices to the next update unchecked, so the
    caller must not be able to change them in place."""
    rb = make_prioritized_replay(64, impl="native")
    handle = ReplayHandle(rb, rb.init(item()), 4, path="direct")
    handle.add(items(np.random.default_rng(0), 20))
    s = handle.sample(np.asarray(jax.random.PRNGKey(0)))  # a NumPy key works too
    assert all(isinstance(x, np.ndarray) for x in jax.tree.leaves(s))
    with pytest.raises(ValueError, match="read-only"):
        s.indices[0] = 63


# Half a minute; the native handle's equality with the buffer is in make test.
@pytest.mark.long
def test_xla_handle_equals_buffer():
    rb = make_prioritized_replay(200, fanout=4, impl="xla")
    handle = run_both(rb, batch=16, steps=4)
    assert not handle.packed


@needs_native
def test_handle_program_is_cheap_for_xla_cpu():
    # (the jitted path: where the direct path cannot give XLA's bits)
    """The per-call program holds no XLA arithmetic but XLA's pow()s, so XLA:CPU's cost model
    rates it under 1000 flops and runs it on the calling thread (no async hand-off)."""
    rb = make_prioritized_replay(1024, impl="native")
    rng = np.random.default_rng(0)
    handle = ReplayHandle(rb, rb.init(item()), 64, path="jit")
    handle.add(items(rng, 500))
    s = handle.sample(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    fn = handle._call("update_and_sample", key.dtype)
    a = handle._arrays
    td = np.ones(64, np.float32)
    compiled = fn.lower(
        a["scalars"], a["trees"], a["rows"], s.indices, td, key, np.float32(0.4)
    ).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert cost.get("flops", 0.0) < 1000


@needs_native
@pytest.mark.parametrize("path", ["direct", "jit"])
def test_handle_typed_key_and_jax_inputs(path):
    rb = make_prioritized_replay(256, impl="native")
    rng = np.random.default_rng(1)
    state = jax.jit(rb.add)(rb.init(item()), items(rng, 200))
    handle = ReplayHandle(rb, state, 8, path=path)
    ref = jax.jit(rb.sample, static_argnums=2)(state, jax.random.key(3), 8, 0.5)
    got = handle.sample(jax.random.key(3), 0.5)
    assert_same(ref, got, "typed key")
    td = jnp.arange(8, dtype=jnp.float32)
    state = jax.jit(rb.update)(state, ref.indices, td)
    got = handle.update_and_sample(np.asarray(got.indices), td, jax.random.key(4), 0.5)
    assert_same(jax.jit(rb.sample, static_argnums=2)(state, jax.random.key(4), 8, 0.5), got, "")


@needs_native
@pytest.mark.parametrize("path", ["direct", "jit"])
def test_handle_state_is_a_copy_and_input_state_stays_valid(path):
    """The handle donates (or writes in place) only its own arrays: the state it was built
    from and the states it hands out stay readable after further calls."""
    rb = make_prioritized_replay(128, impl="native")
    rng = np.random.default_rng(2)
    state = jax.jit(rb.add)(rb.init(item()), items(rng, 100))
    handle = ReplayHandle(rb, state, 8, path=path)
    before = handle.state
    s = handle.sample(jax.random.PRNGKey(0))
    handle.update_and_sample(s.indices, np.full(8, 5.0, np.float32), jax.random.PRNGKey(1))
    handle.add(items(rng, 10))
    assert int(state.size) == 100 and int(before.size) == 100
    assert float(before.max_priority) == float(state.max_priority) == 1.0
    assert int(handle.state.size) == 110
    assert float(handle.state.max_priority) == pytest.approx(5.0 + 1e-6)


@pytest.mark.parametrize("impl, path", [("native", "direct"), ("native", "jit"),
                                        ("xla", "jit")])
def test_handle_bad_input_names_the_argument(impl, path):
    if impl == "native" and not native.available():
        pytest.skip("native kernels unavailable")
    rb = make_prioritized_replay(64, impl=impl)
    handle = ReplayHandle(rb, rb.init(item()), 4, path=path)
    with pytest.raises(ValueError, match="empty replay buffer"):
        handle.sample(jax.random.PRNGKey(0))
    handle.add(items(np.random.default_rng(0), 3))
    with pytest.raises(ValueError, match="batch_size 4 exceeds the 3 items"):
        handle.sample(jax.random.PRNGKey(0))
    handle.add(items(np.random.default_rng(1), 10))
    with pytest.raises(ValueError, match="key must be one PRNG key"):
        handle.sample(jnp.zeros((3,), jnp.uint32))
    with pytest.raises(ValueError, match="key must be a PRNG key"):
        handle.sample(jnp.zeros((2,), jnp.int32))
    good_idx, good_td = np.arange(4, dtype=np.int32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="indices must be 4 integers"):
        handle.update(np.arange(5), good_td)
    with pytest.raises(ValueError, match="indices must be 4 integers"):
        handle.update(np.zeros(4, np.float32), good_td)
    with pytest.raises(ValueError, match="index 13 at position 1 is outside the filled range"):
        handle.update(np.array([0, 13, 1, 2]), good_td)
    with pytest.raises(ValueError, match=r"td_errors must have shape \(4,\)"):
        handle.update(good_idx, np.zeros(3, np.float32))
    before = handle.state
    with pytest.raises(ValueError, match="td_errors must be finite; entry 2 is nan"):
        handle.update_and_sample(
            good_idx, np.array([0, 1, np.nan, 0], np.float32), jax.random.PRNGKey(0)
        )
    with pytest.raises(ValueError, match="td_errors must be finite; entry 0 is -inf"):
        handle.update(good_idx, np.array([-np.inf, 1, 0, 0], np.float32))
    assert_same(before, handle.state, "state after refused updates")
    with pytest.raises(ValueError, match="item leaf"):
        handle.add(
            {
                "obs": np.zeros((2, 4), np.float32),
                "action": np.zeros(2, np.int32),
                "done": np.zeros(2, np.float32),
            }
        )
    with pytest.raises(ValueError, match="add: priorities must be finite"):
        handle.add(items(np.random.default_rng(2), 2), np.array([1.0, -1.0], np.float32))
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        ReplayHandle(rb, rb.init(item()), 0)
    with pytest.raises(TypeError, match="state must be a ReplayState"):
        ReplayHandle(rb, {}, 4)
    assert handle.size == 13  # failed calls changed nothing
