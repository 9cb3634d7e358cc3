"""The relaxed-overlap probe (`hrl.mapping.profile.overlap`): it times the runtime's own loops in
both dependencies."""


import numpy as np
import pytest
from tiny_profiles import CONFIG


@pytest.mark.parametrize("backend,executors", [
    ("opencl", ("sequential",)),
    pytest.param("jax", ("sequential", "pipelined"), marks=pytest.mark.long),
])
def test_relaxed_overlap_probe_times_the_runtime_loops(backend, executors):
    """`overlap:loop`: the runtime's loops in strict and relaxed dependency with the tree on
    PoCL or (jax) on a second XLA CPU device the probe's process makes itself, measured in a
    fresh process. The row holds what relaxed saved per SGD step and the two sides the strict
    loop's timers saw; the overlap is formed in `plan`, with the profile's link:thread."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile.spawn import overlap_rows_subprocess
    from hrl.replay.backends import BackendUnavailableError, opencl

    if backend == "opencl":
        try:
            opencl.list_devices()
        except BackendUnavailableError as e:
            pytest.skip(f"no OpenCL platform: {e}")
    (row,) = overlap_rows_subprocess(to_dict(load_config(CONFIG)), backend, 256, 4,
                                     [(8, 16)], repeats=3, executors=executors)
    for key in ("train_s", "replay_s", "strict_s", "relaxed_s"):
        assert row[key] > 0, key
    # an SGD step of the strict loop holds both sides, and the loop's glue besides
    assert row["strict_s"] > row["train_s"] + row["replay_s"]
    assert row["saved_s"] == pytest.approx(row["strict_s"] - row["relaxed_s"], abs=0.3 * (
        row["strict_s"] + row["relaxed_s"]))  # a median of paired differences, not of each
    assert np.isfinite(row["saved_cpu_s"])
    # one hand-off figure, the profile's link:thread: the probe times none of its own
    assert not any(k.startswith(("overlap", "handoff")) for k in row)
    assert ("pipelined_saved_s" in row) == ("pipelined" in executors)
    if "pipelined" in executors:
        assert row["pipelined_strict_s"] > 0 and row["pipelined_relaxed_s"] > 0


def test_overlap_loops_are_the_runtime_s_in_both_modes():
    """The loops an overlap row compares differ in their dependency alone, and put the tree
    where the row says: the JAX tree on the second CPU device, a host backend as itself."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.devices import SECOND_CPU_PLACEMENT
    from hrl.mapping.profile.overlap import overlap_loop_config

    base = to_dict(load_config(CONFIG))
    strict, relaxed = (overlap_loop_config(base, "jax", 1024, 4, 64, 32, "pipelined", r)
                       for r in (False, True))
    assert (strict.train.dependency, strict.train.staleness) == ("strict", 0)
    assert (relaxed.train.dependency, relaxed.train.staleness) == ("relaxed", 1)
    assert to_dict(strict)["train"] | {"dependency": "relaxed", "staleness": 1} == \
        to_dict(relaxed)["train"]
    for cfg in (strict, relaxed):
        assert cfg.placement == SECOND_CPU_PLACEMENT and cfg.train.executor == "pipelined"
        assert cfg.train.actors == "process" and tuple(cfg.agent.hidden_sizes) == (64, 64)
        assert cfg.replay.capacity == 1024 and cfg.train.batch_size == 32
    pocl = overlap_loop_config(base, "opencl", 1024, 4, 64, 32, "sequential", True)
    assert pocl.replay.backend == "opencl" and pocl.train.executor == "sequential"
