"""One spelling per executor and device in the mapping model: the executors an exploration
prices and a ranking ranks are named once (`devices`), and the second CPU device is `cpu:1`
wherever a tree backend is named, the older `cpu1` read as it."""

import pytest

from hrl.mapping import dse
from hrl.mapping.devices import (
    BACKENDS,
    PRICED_EXECUTORS,
    RANKED_EXECUTORS,
    SECOND_CPU,
    SECOND_CPU_LABEL,
)
from hrl.mapping.ranking import RankedMapping
from hrl.mapping.validate import RunnableMapping, runnable_mappings
from hrl.runtime.executor_choice import EXECUTORS as RUNTIME_EXECUTORS


def test_executors_are_spelt_once():
    assert dse.EXECUTORS == ("auto", *PRICED_EXECUTORS)
    # Every priced executor is the runtime's, but the thread actors, which the runtime runs
    # as the pipelined executor with train.actors: thread.
    assert set(RANKED_EXECUTORS) - set(RUNTIME_EXECUTORS) == {"pipelined-thread"}
    assert {m.executor for m in runnable_mappings()} <= set(PRICED_EXECUTORS)
    with pytest.raises(ValueError, match="executor must be one of"):
        RankedMapping("x", {}, "threads", (), 1.0, True)
    with pytest.raises(ValueError, match="executor must be one of"):
        RunnableMapping("x", {}, (), "pipelined_thread")


def test_the_second_cpu_is_cpu_colon_1_and_cpu1_still_reads():
    assert SECOND_CPU in BACKENDS and "cpu1" not in BACKENDS
    for spelling in (SECOND_CPU, "cpu1"):
        got = {m.label: m.mapping for m in runnable_mappings(("jax", spelling))}
        assert got[SECOND_CPU_LABEL]["sample"] == SECOND_CPU
    assert SECOND_CPU_LABEL not in {m.label for m in runnable_mappings(("jax",))}
