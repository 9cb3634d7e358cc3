"""The pipelined executor (`hrl.runtime.executors.pipelined`) against the sequential one: depth 0
is it bit for bit, lagging weights are reproducible, process actors equal thread actors, and
both host executors store next_obs once and train as stored."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tiny_runs import CONFIGS, SMALL, _small_run, assert_trees_equal

from hrl.runtime import (
    build,
    initial_state,
)


@pytest.mark.parametrize("config", ["dqn_cartpole_gymnasium", "dqn_cartpole"])
def test_pipelined_depth_0_equals_sequential_bit_for_bit(config):
    """Strict, depth 0, weights every iteration: the pipelined executor (actors in a thread) is
    the sequential host loop exactly, with a host env and with a JAX env."""
    seq_built, seq, seq_out = _small_run(config, ["train.executor=sequential"])
    pip_built, pip, pip_out = _small_run(
        config, ["train.executor=pipelined", "train.pipeline_depth=0"])
    assert type(seq_built.loop).__name__ == "SequentialLoop"
    assert type(pip_built.loop).__name__ == "PipelinedLoop"
    assert int(seq.updates) > 0
    assert_trees_equal(seq, pip)
    np.testing.assert_array_equal(seq_out.completed_return, pip_out.completed_return)


@pytest.mark.parametrize(("config", "executor"), [("dqn_cartpole", "sequential"),
                                                ("dqn_cartpole_gymnasium", "pipelined")])
def test_host_executors_store_next_obs_once_by_default_and_train_as_stored(config, executor):
    """The default `replay.next_obs: auto` is next_slot under the host loop and the pipelined
    executor (a JAX env; a gymnasium env, whose final observations come from its auto-reset
    info, with the actors a step ahead): fewer bytes per transition, and the stored layout's
    run bit for bit, with the configs' 3-step windows: the items one episode end cuts share
    its side entry, so an untrained policy's short episodes fit the default side store.
    (dqn_cartpole adds 4 x 64 items at once: 1024 slots give the side store room for them,
    512 would resolve to stored.)"""
    from hrl.replay.factory import replay_bytes_per_item

    sets = [f"train.executor={executor}", "replay.capacity=1024"]
    built, slot, out = _small_run(config, sets)
    stored_built, stored, out_s = _small_run(config, [*sets, "replay.next_obs=stored"])
    assert type(built.replay).__name__ == "NextSlotReplay"
    assert type(stored_built.replay).__name__ == "PrioritizedReplay"
    assert int(slot.updates) > 0 and int(slot.replay.lost) == 0
    assert_trees_equal(stored.agent, slot.agent)
    assert_trees_equal(stored.replay.tree, slot.replay.inner.tree)
    assert_trees_equal(out_s, out)
    assert replay_bytes_per_item(built.replay, built.example_transition) < \
        replay_bytes_per_item(stored_built.replay, stored_built.example_transition)


def test_pipelined_with_lagging_weights_is_reproducible():
    """depth 2, weights every 3 iterations, relaxed s=2: two runs give the same state (the
    weights each actor iteration uses follow from the schedule, not from thread timing), and
    that state differs from the sequential run's (the actors did act with older weights)."""
    lag = ["train.executor=pipelined", "train.pipeline_depth=2", "train.weight_sync_period=3",
           "train.dependency=relaxed", "train.staleness=2"]
    _, first, _ = _small_run("dqn_cartpole_gymnasium", lag)
    _, again, _ = _small_run("dqn_cartpole_gymnasium", lag)
    assert_trees_equal(first, again)
    _, seq, _ = _small_run("dqn_cartpole_gymnasium", ["train.executor=sequential",
                                                         "train.dependency=relaxed",
                                                         "train.staleness=2"])
    assert int(first.updates) == int(seq.updates) > 0
    differs = [not np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(first.agent), jax.tree.leaves(seq.agent),
                               strict=True)]
    assert any(differs)


def test_process_actors_equal_thread_actors_bit_for_bit():
    """Lagging weights (depth 2, weights every 3 iterations, relaxed s=2) over two chunks with
    gymnasium envs: actors in their own process give the thread actors' state exactly (the
    process is kept across chunks; the host envs' state crosses at each chunk's ends)."""
    lag = ["train.executor=pipelined", "train.pipeline_depth=2", "train.weight_sync_period=3",
           "train.dependency=relaxed", "train.staleness=2"]
    finals = {}
    for actors in ("thread", "process"):
        from hrl.config import load_config

        cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                          SMALL + lag + [f"train.actors={actors}"])
        built = build(cfg)
        state = initial_state(built)
        for _ in range(2):
            state, out = built.loop.run(state, 14)
        built.loop.close()
        sims = [(e.unwrapped.state.tolist(), e.unwrapped.np_random.bit_generator.state,
                 e._elapsed_steps) for e in built.env.envs]
        finals[actors] = (jax.device_get(state), out, sims)
    (thread, thread_out, thread_env), (process, process_out, process_env) = finals.values()
    assert int(thread.updates) > 0
    assert_trees_equal(thread, process)
    np.testing.assert_array_equal(thread_out.completed_return, process_out.completed_return)
    assert thread_env == process_env  # the envs' simulators came back to this process
