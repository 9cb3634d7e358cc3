"""`replay.backend: native_host` (hrl.replay.host_native): the host loops' replay held in NumPy
and stepped by the C++ kernels gives the jitted buffer's run bit for bit, strict and relaxed,
resumes exactly from a checkpoint, and treats non-finite TD errors as the jitted buffer does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_runs import assert_trees_equal, tiny_config

from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.host_native import HostNativeReplay, HostNativeState
from hrl.runtime import build, initial_state, train
from hrl.runtime.checkpoint import latest_checkpoint, restore_checkpoint

native = pytest.importorskip("hrl.replay.native")
pytestmark = pytest.mark.skipif(not native.available(), reason="native kernels do not build here")


# tiny_config's run with a buffer small enough to wrap, two SGD steps per round, the native
# kernels and the host loop; next_obs in every row, the layout the host buffer keeps (the jax
# buffer's whole state is compared with it).
HOST_RUN = {"seed": 5, "replay.capacity": 300, "replay.impl": "native",
            "train.total_env_steps": 4096, "train.train_ratio": 0.5,
            "train.executor": "sequential", "replay.next_obs": "stored"}


def _cfg(**overrides):
    return tiny_config(**{**HOST_RUN, **overrides})


@pytest.mark.parametrize("overrides", [
    {},
    {"train.dependency": "relaxed", "train.staleness": 2},
    {"replay.fmt": "fixed", "replay.weights": "batch"},
    {"train.executor": "pipelined", "train.pipeline_depth": 2, "train.weight_sync_period": 3,
     "train.dependency": "relaxed", "train.staleness": 2},
], ids=["strict", "relaxed2", "fixed-batchweights", "pipelined-relaxed2"])
def test_host_loop_run_equals_the_jitted_buffer_bit_for_bit(overrides):
    """40 iterations (640 env steps, the ring wrapped twice, 36 learning rounds of 2 SGD
    steps), sequential or pipelined: agent, actors, counters, logs and the whole buffer equal
    the jax backend's."""
    runs = {}
    for backend in ("jax", "native_host"):
        built = build(_cfg(**{"replay.backend": backend, **overrides}))
        assert built.loop.name in ("sequential", "pipelined")
        state, out = built.loop.run(initial_state(built), 40)
        runs[backend] = built, jax.device_get(state), out
    (_, ref, ref_out), (built, got, out) = runs["jax"], runs["native_host"]
    assert isinstance(got.replay, HostNativeState) and int(got.updates) > 0
    assert_trees_equal(got.replace(replay=None), ref.replace(replay=None))
    assert_trees_equal(built.replay.replay_state(got.replay), ref.replay)
    for name in ("td_abs", "completed", "completed_return"):
        np.testing.assert_array_equal(getattr(out, name), getattr(ref_out, name), err_msg=name)


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path):
    """A run stopped half way and resumed (the buffer copied back into the kernels' arrays)
    ends where the uninterrupted run ends, checkpoint for checkpoint."""
    cfg = _cfg(**{"replay.backend": "native_host", "train.total_env_steps": 768})
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    half = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=384)
    assert half["interrupted"] and full["updates"] > 0
    resumed = train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    assert resumed["env_steps"] == 768 and resumed["updates"] == full["updates"]
    like = initial_state(build(cfg))
    assert_trees_equal(restore_checkpoint(latest_checkpoint(tmp_path / "split")[0], like),
                       restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like))
    assert ((tmp_path / "full" / "episodes.csv").read_text()
            == (tmp_path / "split" / "episodes.csv").read_text())


def test_nonfinite_td_errors_take_the_largest_priority_as_under_jit():
    """NaN and inf TD errors: the jitted update's fallback (largest priority so far), not the
    ReplayHandle's refusal; the buffer equals PrioritizedReplay's word for word."""
    rb = make_prioritized_replay(64, alpha=0.6, fanout=4, impl="native")
    example = {"obs": jnp.zeros(3, jnp.float32), "action": jnp.int32(0)}
    host = HostNativeReplay(rb, batch_size=8)
    hs = host.init(example)
    ref = rb.init(example)
    items = {"obs": jnp.arange(60, dtype=jnp.float32).reshape(20, 3),
             "action": jnp.arange(20, dtype=jnp.int32)}
    hs = host.add(hs, items)
    ref = rb.add(ref, items)
    key = jax.random.PRNGKey(1)
    got = host.sample(hs, np.asarray(key), 8, 0.5)
    want = rb.sample(ref, key, 8, jnp.float32(0.5))
    assert_trees_equal(got, want)
    td = np.array([0.5, np.nan, 3.0, -np.inf, 0.0, 7.0, np.inf, -2.0], np.float32)
    hs = host.update(hs, got.indices, td)
    ref = jax.jit(rb.update)(ref, want.indices, jnp.asarray(td))
    assert_trees_equal(host.replay_state(hs), ref)
    assert float(ref.max_priority) == pytest.approx(7.0 + 1e-6)


def test_a_restored_copy_is_loaded_and_a_wrong_layout_is_refused():
    rb = make_prioritized_replay(32, fanout=4, impl="native")
    example = {"obs": jnp.zeros(2, jnp.float32)}
    host = HostNativeReplay(rb, batch_size=4)
    hs = host.add(host.init(example), {"obs": jnp.ones((10, 2), jnp.float32)})
    copy = jax.tree.map(np.array, hs)  # what a checkpoint restore gives
    host.init(example)  # the kernels' arrays emptied
    host.sync_backend(copy)
    assert int(host._state().size) == 10
    assert_trees_equal(host._state(), copy)
    bad = copy.replace(rows=np.zeros((16, copy.rows.shape[1]), np.uint32))
    with pytest.raises(ValueError, match=r"rows: expected uint32\[32, "):
        host.sync_backend(bad)
    with pytest.raises(ValueError, match="batch_size 8 differs from the 4"):
        host.sample(copy, np.asarray(jax.random.PRNGKey(0)), 8, 0.4)


def test_config_refuses_native_host_where_the_kernels_do_not_apply():
    with pytest.raises(ValueError, match="'native_host' needs the native C\\+\\+ kernels"):
        build(_cfg(**{"replay.backend": "native_host", "replay.impl": "xla"}))
    with pytest.raises(ValueError, match="'native_host' is not available with replay.alpha=0.5"):
        build(_cfg(**{"replay.backend": "native_host", "replay.alpha": 0.5}))
