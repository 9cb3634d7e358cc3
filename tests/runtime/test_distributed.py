"""The distributed-actors executor (Ape-X on Ray): with one worker it is the pipelined executor
with process actors bit for bit; with several, the fixed schedule reproduces a run exactly even
when a worker is killed mid-run (Ray restarts it, the learner puts its state back); workers
never outlive their learner. Ray starts once for the module's tests that use it."""

from __future__ import annotations

import os
import signal
import time

import jax
import numpy as np
import pytest
from test_runtime import assert_trees_equal, tiny_config

from hrl.config import ConfigError
from hrl.envs import make_env
from hrl.runtime import build, initial_state

ray = pytest.importorskip("ray")

from hrl.runtime.executors import start_ray  # noqa: E402
from hrl.runtime.executors.ray_actors import RayUnavailable, check_reachable  # noqa: E402

CHUNKS, ITERS = 2, 12


@pytest.fixture(scope="module")
def local_ray():
    start_ray()
    yield
    ray.shutdown()


def _run(overrides: dict, kill_at: int | None = None):
    """CHUNKS chunks of ITERS iterations; `kill_at`: SIGKILL worker 1 at that learner step."""
    cfg = tiny_config(**{"train.executor": "distributed", "train.pipeline_depth": 2,
                         **overrides})
    built = build(cfg)
    loop, state = built.loop, initial_state(built)
    if kill_at is not None:
        learn, steps = loop._learn, []

        def learn_then_kill(*args):
            steps.append(1)
            if len(steps) == kill_at:
                os.kill(loop.actor_pids()[1], signal.SIGKILL)
            return learn(*args)

        loop._learn = learn_then_kill
    outs = []
    try:
        for _ in range(CHUNKS):
            state, out = loop.run(state, ITERS)
            outs.append(out)
    finally:
        loop.close()
    return jax.device_get(state), outs, loop


def _returns(outs):
    return np.concatenate([np.asarray(o.completed_return) for o in outs])


def test_one_worker_is_the_pipelined_executor_with_process_actors(local_ray):
    piped = tiny_config(**{"train.executor": "pipelined", "train.actors": "process",
                           "train.pipeline_depth": 2})
    built = build(piped)
    loop, ref = built.loop, initial_state(built)
    try:
        outs = []
        for _ in range(CHUNKS):
            ref, out = loop.run(ref, ITERS)
            outs.append(out)
    finally:
        loop.close()
    state, got, _ = _run({"train.num_actors": 1})
    assert_trees_equal(jax.device_get(ref), state)
    np.testing.assert_array_equal(_returns(outs), _returns(got))


def test_a_killed_worker_is_restarted_and_the_fixed_schedule_gives_the_same_run(local_ray,
                                                                               capfd):
    whole, whole_out, _ = _run({"train.num_actors": 2})
    killed, killed_out, loop = _run({"train.num_actors": 2}, kill_at=7)
    assert loop.restarts >= 1 and "actor worker 1 died" in capfd.readouterr().err
    assert int(killed.updates) > 0 and int(killed.iteration) == CHUNKS * ITERS
    # The replay is valid: every transition inserted once, the tree's sums consistent, and
    # the whole state what the run without a fault reached, bit for bit.
    sch_inserts = CHUNKS * ITERS * 4 * 4  # iterations x rollout_length x num_envs
    assert int(killed.replay.size) == min(sch_inserts, 1000)
    assert_trees_equal(whole, killed)
    np.testing.assert_array_equal(_returns(whole_out), _returns(killed_out))


@pytest.mark.slow
def test_workers_do_not_outlive_their_learner_and_free_mode_runs(local_ray):
    cfg = tiny_config(**{"train.executor": "distributed", "train.num_actors": 2,
                         "train.actor_schedule": "free"})
    built = build(cfg)
    loop, state = built.loop, initial_state(built)
    state, out = loop.run(state, ITERS)
    assert int(state.iteration) == ITERS and np.asarray(out.trained).any()
    pids = loop.actor_pids()
    loop.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_cluster_address_that_does_not_answer_is_one_line():
    with pytest.raises(RayUnavailable, match="cannot reach the Ray cluster at 127.0.0.1:1 "):
        check_reachable("127.0.0.1:1")
    with pytest.raises(RayUnavailable, match="HOST:PORT"):
        check_reachable("no-port")


def test_distributed_config_mistakes_are_one_line():
    with pytest.raises(ConfigError, match="'train.num_actors'"):
        tiny_config(**{"train.executor": "distributed", "train.num_actors": 0})
    with pytest.raises(ConfigError, match="train.actor_schedule"):
        tiny_config(**{"train.executor": "distributed", "train.actor_schedule": "fast"})


def test_a_gymnasium_env_of_a_module_imports_it():
    """`gymnasium:module:id`: the module registers the id (in the learner and every worker)."""
    env = make_env("gymnasium:experiments.bench.latency_env:SlowCartPole-v0", 2)
    assert not env.spec.is_jax
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        make_env("gymnasium:no_such_module:Env-v0", 1)
