"""The iteration (`hrl.runtime.iteration`): strict == relaxed(0) bit for bit, every kernel of the
fused program attributed to its primitive, next_obs from the next slot trains as stored."""

from __future__ import annotations

import sys

import pytest
from tiny_runs import ITERATIONS, ROOT, STORED, assert_trees_equal, run_iterations, tiny_config

from hrl.runtime import (
    build,
    initial_state,
)


def test_relaxed_with_zero_staleness_equals_strict_bit_for_bit():
    strict, out_s = run_iterations(tiny_config(), ITERATIONS)
    relaxed, out_r = run_iterations(
        tiny_config(**{"train.dependency": "relaxed", "train.staleness": 0}), ITERATIONS
    )
    assert int(strict.updates) > 0
    assert_trees_equal(strict, relaxed)
    assert_trees_equal(out_s, out_r)


def test_every_kernel_of_the_fused_program_is_attributed_to_its_primitive():
    """The `hrl.<primitive>` name scopes reach the compiled program's metadata, and the
    profiler script (experiments/bench/profile_fused_step.py) reads them back per kernel."""
    sys.path.insert(0, str(ROOT / "experiments" / "bench"))
    try:
        from profile_fused_step import PRIMITIVES, kernel_owners
    finally:
        sys.path.pop(0)
    built = build(tiny_config())
    hlo = built.loop._run.lower(initial_state(built), 2).compile().as_text()
    owners = set(kernel_owners(hlo).values())
    assert set(PRIMITIVES) <= owners
    # Control flow is not a kernel of its own; tuple-typed custom calls are.
    fake = (
        '  %ffi_call.7 = (s32[2]{0}, /*index=1*/f32[2]{0}) custom-call(%a), '
        'metadata={op_name="jit(f)/hrl.sample/ffi_call"}\n'
        '  %cond.3 = f32[] conditional(%p, %a, %b), metadata={op_name="jit(f)/hrl.train/cond"}\n'
        '  %copy.1 = f32[] copy(%x)\n'
    )
    assert kernel_owners(fake) == {"ffi_call.7": "sample", "copy.1": "loop (carry, keys, counters)"}


@pytest.mark.parametrize("n_step", [1, pytest.param(3, marks=pytest.mark.long)])
def test_next_obs_from_the_next_slot_trains_exactly_as_stored(n_step):
    """The default `replay.next_obs: auto` is next_slot in a fused run (next_obs rebuilt from
    the next slot, the tail and the side store) and gives the stored layout's training run:
    the same networks, priorities and episodes, bit for bit, through the ring's wrap-around
    (203 slots < 30 iterations x 16)."""
    base = {"replay.n_step": n_step, "replay.capacity": 203}  # wraps; no multiple of M
    stored, out_s = run_iterations(tiny_config(**base, **STORED), ITERATIONS)
    default = tiny_config(**base)
    assert type(build(default).replay).__name__ == "NextSlotReplay"
    slot, out_n = run_iterations(default, ITERATIONS)
    assert int(slot.updates) > 0 and int(slot.replay.lost) == 0
    assert int(slot.replay.inner.added) > 203
    assert_trees_equal(stored.agent, slot.agent)
    assert_trees_equal(stored.replay.tree, slot.replay.inner.tree)
    assert_trees_equal(out_s, out_n)
