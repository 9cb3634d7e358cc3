"""The fused executor (`hrl.runtime.executors.fused`): the iteration as one lax.scan gives the
host loop's run."""

from __future__ import annotations

import jax
import numpy as np
from tiny_runs import ITERATIONS, run_iterations, tiny_config


def test_fused_loop_matches_host_loop():
    """The same iteration run as one lax.scan and as separate jitted primitive calls (with
    two priority updates in flight, so both drivers' relaxed queues are exercised)."""
    deps = {"train.dependency": "relaxed", "train.staleness": 2}
    fused, out_f = run_iterations(tiny_config(**deps), ITERATIONS, fused=True)
    host, out_h = run_iterations(tiny_config(**deps), ITERATIONS, fused=False)
    # Integer state (counters, indices, ring position, actions taken) must agree exactly; the
    # float state to XLA's fusion-dependent rounding.
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(fused),
                            jax.tree.leaves(host), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        name = jax.tree_util.keystr(path)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(out_f.completed, out_h.completed)
    # Staleness 2 really does change the trajectory (the strict run is the same program as
    # in the test above, so it comes from the compilation cache).
    strict, _ = run_iterations(tiny_config(), ITERATIONS, fused=True)
    assert int(strict.updates) == int(fused.updates) > 0
    assert not np.array_equal(np.asarray(strict.replay.inner.tree.levels[-1]),
                              np.asarray(fused.replay.inner.tree.levels[-1]))
