"""Building a run (`hrl.runtime.build_run`): the relaxed dependency's replay thread only for trees
off the learner's device."""

from __future__ import annotations

import jax
from tiny_runs import tiny_config

from hrl.runtime import (
    build,
)


def test_relaxed_overlaps_the_replay_only_off_the_learners_device():
    """The replay thread of relaxed dependency is for trees off the learner's device (where a
    hand-off costs less than it hides); the relaxed runs of both kinds are tested bit for bit
    (here and tests/runtime/test_runtime_host.py)."""
    from hrl.runtime.build_run import replay_off_learner

    cpu = jax.devices()[0]
    assert replay_off_learner("opencl", {}) and replay_off_learner("rtl", {})
    assert not replay_off_learner("jax", {}) and not replay_off_learner("native_host", {})
    assert not replay_off_learner("jax", {"sample": cpu, "update": cpu})
    assert not replay_off_learner("jax", {"sample": cpu, "train": cpu})
    other = jax.devices()[-1]
    if other != cpu:
        assert replay_off_learner("jax", {"sample": other, "update": other})
    loop = build(tiny_config(**{"train.dependency": "relaxed", "train.staleness": 2,
                                "train.executor": "sequential"})).loop
    assert not loop.overlap_replay
