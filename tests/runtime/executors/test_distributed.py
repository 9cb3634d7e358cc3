"""The distributed-actors executor (Ape-X on Ray): with one worker it is the pipelined executor
with process actors bit for bit; with several, the fixed schedule reproduces a run exactly even
when a worker is killed mid-run (Ray restarts it, the learner puts its state back) and when the
run is stopped at a checkpoint and resumed (a host env's too), and a free-schedule run resumes
with the same counters and a valid replay; the workers' initial priorities are the ones the
learner computes from the same weights, and the ones inserted; workers never outlive their
learner. Ray starts once for the module's tests that use it."""

from __future__ import annotations

import csv
import os
import signal
import time

import jax
import numpy as np
import pytest
from tiny_runs import assert_trees_equal, tiny_config
from tree_checks import sequential_float_model, words

from hrl.config import ConfigError
from hrl.envs import make_env
from hrl.runtime import build, initial_state, train
from hrl.runtime.checkpoint import actors_state_file, latest_checkpoint, restore_checkpoint
from hrl.runtime.executors.actors import agent_iteration

ray = pytest.importorskip("ray")

from hrl.runtime.executors import start_ray  # noqa: E402
from hrl.runtime.executors.ray_actors import RayUnavailable, check_reachable  # noqa: E402

CHUNKS, ITERS = 2, 12


@pytest.fixture(scope="module")
def local_ray():
    start_ray()
    yield
    ray.shutdown()


def _run(overrides: dict, kill_at: int | None = None, record: dict | None = None):
    """CHUNKS chunks of ITERS iterations; `kill_at`: SIGKILL worker 1 at that learner step;
    `record`: filled with each iteration's agent before its learner step ("agents") and what
    the learner inserted ("inserted": (transitions, priorities) per iteration)."""
    cfg = tiny_config(**{"train.executor": "distributed", "train.pipeline_depth": 2,
                         **overrides})
    built = build(cfg)
    loop, state = built.loop, initial_state(built)
    if record is not None:
        learn, insert = loop._learn, loop.calls.insert
        record.update(agents={}, inserted=[])

        def learn_recorded(agent, *args):
            record["agents"][args[-2]] = jax.device_get(agent)  # args[-2]: the iteration
            return learn(agent, *args)

        def insert_recorded(replay, batch, *priorities):
            record["inserted"].append(jax.device_get((batch, *priorities)))
            return insert(replay, batch, *priorities)

        loop._learn, loop.calls.insert = learn_recorded, insert_recorded
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


# A minute with Ray's start; the config mistakes above stay in make test.
@pytest.mark.long
def test_one_worker_is_the_pipelined_executor_with_process_actors(local_ray):
    # The whole state, replay layout included: the distributed executor keeps next_obs in each
    # row (`replay.next_obs: auto` is stored there), so the pipelined run is asked for stored.
    piped = tiny_config(**{"train.executor": "pipelined", "train.actors": "process",
                           "train.pipeline_depth": 2, "replay.next_obs": "stored"})
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


# A minute or more; one_worker_is_the_pipelined_executor runs workers in make test.
@pytest.mark.long
def test_workers_start_their_cpu_backend_with_synchronous_dispatch(local_ray):
    """Each worker's first use of JAX is `actor_calls_of`, which sets its CPU backend as the
    actors' process's (synchronous dispatch; JAX's default is asynchronous)."""
    built = build(tiny_config(**{"env.name": "gymnasium:CartPole-v1",
                                 "train.executor": "distributed", "train.num_actors": 2}))
    loop = built.loop
    try:
        loop.run(initial_state(built), 2)
        assert ray.get([w.cpu_dispatch.remote() for w in loop._workers]) == ["sync", "sync"]
    finally:
        loop.close()


@pytest.mark.long  # minutes: a run, a killed worker and the run again
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
    for value in ("yes", 1):
        with pytest.raises(ConfigError) as err:
            tiny_config(**{"train.executor": "distributed", "train.actor_priorities": value})
        assert str(err.value) == (f"config key 'train.actor_priorities': expected bool, got "
                                  f"{type(value).__name__} {value!r}")
    with pytest.raises(ConfigError, match="^config key 'train.actor_priorities': true needs the "
                                          "distributed executor's workers.*got True$"):
        tiny_config(**{"train.executor": "pipelined", "train.actor_priorities": True})


# A minute; one_worker_is_the_pipelined_executor checks a run end to end in make test.
@pytest.mark.long
def test_actor_priorities_are_the_learners_from_the_same_weights_and_are_inserted(local_ray):
    """With train.actor_priorities each worker sends |td| + eps of its transitions from the
    weights it acted with (j*(t), the fixed schedule's); the learner computes the same from the
    same weights, bit for bit, and those are what it inserts. The run stays reproducible."""
    overrides = {"train.num_actors": 2, "train.actor_priorities": True}
    record: dict = {}
    state, _, loop = _run(overrides, record=record)
    assert loop.priorities is not None
    on_learner = jax.jit(loop.priorities)
    agents, inserted = record["agents"], record["inserted"]
    assert len(inserted) == CHUNKS * ITERS and sorted(agents) == list(range(CHUNKS * ITERS))
    for t, (batch, priorities) in enumerate(inserted):
        first = t - t % ITERS  # the chunk's first iteration
        j = agent_iteration(t, first, 2, 1)  # depth 2, weight_sync_period 1
        acted_with = agents[j + 1]  # the agent after learner iteration j (j = first - 1: the
        np.testing.assert_array_equal(on_learner(acted_with, batch), priorities)  # chunk's)
        assert priorities.dtype == np.float32 and (priorities > 0).all()
    # Not the largest priority seen: each transition's own, so they differ.
    assert len(np.unique(np.concatenate([p for _, p in inserted]))) > 100
    again, _, _ = _run(overrides)
    assert_trees_equal(state, again)


@pytest.mark.long
def test_a_run_stopped_at_a_checkpoint_and_resumed_is_the_uninterrupted_run(local_ray,
                                                                            tmp_path, capfd):
    """N = 2, fixed schedule: a run stopped after a checkpoint and resumed with --resume ends
    with the uninterrupted run's state, episodes and metrics: each worker's actors' state is
    saved beside the checkpoint and loaded back into it. Without it (deleted), the workers
    restart from the learner's actors' state, with a warning, and the run differs."""
    cfg = tiny_config(**{"train.executor": "distributed", "train.pipeline_depth": 2,
                         "train.num_actors": 2, "train.total_env_steps": 1024})
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    part = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=512)
    assert part["interrupted"] and part["env_steps"] == 512
    found = latest_checkpoint(tmp_path / "split")[0]
    assert actors_state_file(found).is_file()
    blob = actors_state_file(found).read_bytes()
    resumed = train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    assert resumed["env_steps"] == full["env_steps"] and resumed["updates"] == full["updates"]
    like = initial_state(build(cfg))
    end_full = restore_checkpoint(latest_checkpoint(tmp_path / "full")[0], like)
    assert_trees_equal(end_full,
                       restore_checkpoint(latest_checkpoint(tmp_path / "split")[0], like))
    episodes = (tmp_path / "full" / "episodes.csv").read_text()
    assert episodes == (tmp_path / "split" / "episodes.csv").read_text()
    assert episodes.count("\n") > 5
    assert _metrics(tmp_path / "full") == _metrics(tmp_path / "split")

    # The control: the same resume without the workers' states.
    train(cfg, run_dir=tmp_path / "lost", progress=False, stop_at_env_steps=512)
    lost = latest_checkpoint(tmp_path / "lost")[0]
    assert actors_state_file(lost).read_bytes() == blob  # the same stop, the same states
    actors_state_file(lost).unlink()
    capfd.readouterr()
    train(cfg, run_dir=tmp_path / "lost", resume=True, progress=False)
    assert "holds no state of the 2 actor workers" in capfd.readouterr().err
    assert (tmp_path / "full" / "episodes.csv").read_text() != \
        (tmp_path / "lost" / "episodes.csv").read_text()


def _stop_and_resume(cfg, tmp_path):
    """The run uninterrupted, and stopped after its checkpoint at 512 env steps then resumed:
    (summary, end state) of each, and the resumed run's stderr."""
    full = train(cfg, run_dir=tmp_path / "full", progress=False)
    part = train(cfg, run_dir=tmp_path / "split", progress=False, stop_at_env_steps=512)
    assert part["interrupted"] and part["env_steps"] == 512
    assert actors_state_file(latest_checkpoint(tmp_path / "split")[0]).is_file()
    resumed = train(cfg, run_dir=tmp_path / "split", resume=True, progress=False)
    like = initial_state(build(cfg))
    ends = [restore_checkpoint(latest_checkpoint(tmp_path / d)[0], like)
            for d in ("full", "split")]
    return (full, ends[0]), (resumed, ends[1])


# A minute or more; tests/runtime/test_resume.py checks exact resumes in make test.
@pytest.mark.long
def test_a_gymnasium_run_stopped_and_resumed_is_the_uninterrupted_run(local_ray, tmp_path,
                                                                      capfd):
    """N = 2, fixed schedule, a host env: each worker's simulators are saved beside the
    checkpoint with its actors' state, so the resumed run is the uninterrupted one bit for
    bit (state, episodes, metrics)."""
    cfg = tiny_config(**{"env.name": "gymnasium:CartPole-v1", "train.executor": "distributed",
                         "train.pipeline_depth": 2, "train.num_actors": 2,
                         "train.total_env_steps": 1024})
    (full, end_full), (resumed, end_split) = _stop_and_resume(cfg, tmp_path)
    assert "holds no state" not in capfd.readouterr().err
    assert resumed["env_steps"] == full["env_steps"] == 1024
    assert resumed["updates"] == full["updates"] > 0
    assert_trees_equal(end_full, end_split)
    episodes = (tmp_path / "full" / "episodes.csv").read_text()
    assert episodes == (tmp_path / "split" / "episodes.csv").read_text()
    assert episodes.count("\n") > 5
    assert _metrics(tmp_path / "full") == _metrics(tmp_path / "split")


@pytest.mark.long
def test_a_free_schedule_run_stopped_and_resumed_finishes_with_a_valid_replay(local_ray,
                                                                               tmp_path, capfd):
    """N = 2, free schedule. What may differ from the uninterrupted run: which worker's batch
    filled each iteration, so the transitions, the replay's contents and the weights. What must
    hold: every worker resumes from its own saved state, the run finishes with the same
    counters (env steps, iterations, SGD steps, transitions ever inserted) and the same key
    chain, and the replay is valid (filled as many slots as inserted, every filled slot a
    positive finite priority, every empty one zero, the tree's sums its leaves')."""
    cfg = tiny_config(**{"train.executor": "distributed", "train.actor_schedule": "free",
                         "train.num_actors": 2, "train.total_env_steps": 1024})
    (full, end_full), (resumed, end) = _stop_and_resume(cfg, tmp_path)
    assert "holds no state" not in capfd.readouterr().err
    assert not resumed["interrupted"]
    assert resumed["env_steps"] == full["env_steps"] == 1024
    assert resumed["updates"] == full["updates"] > 0
    for name in ("iteration", "env_steps", "updates", "key"):
        np.testing.assert_array_equal(getattr(end, name), getattr(end_full, name))
    replay = end.replay
    assert int(replay.added) == int(end_full.replay.added) > 0
    assert int(replay.size) == min(int(replay.added), 1000)
    leaves = np.asarray(replay.tree.levels[-1]).reshape(-1)
    size = int(replay.size)
    assert np.isfinite(leaves).all() and (leaves[:size] > 0).all()
    assert (leaves[size:] == 0).all()
    assert [w.tolist() for w in words(replay.tree)] == \
        [w.tolist() for w in sequential_float_model(replay.tree)]
    assert np.isfinite(float(replay.max_priority))


def _metrics(run_dir) -> list[dict]:
    """metrics.csv's rows without the wall-clock columns."""
    rows = csv.DictReader((run_dir / "metrics.csv").read_text().splitlines())
    return [{k: v for k, v in row.items() if k not in ("wall_s", "chunk_env_steps_per_s")}
            for row in rows]


def test_a_gymnasium_env_of_a_module_imports_it():
    """`gymnasium:module:id`: the module registers the id (in the learner and every worker)."""
    env = make_env("gymnasium:experiments.bench.latency_env:SlowCartPole-v0", 2)
    assert not env.spec.is_jax
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        make_env("gymnasium:no_such_module:Env-v0", 1)
