"""Data parallelism (`train.devices`): the fused iteration under shard_map, gradients averaged.

One device runs the single-device program bit for bit (DQN) and several keep identical
parameters on every device; the multi-device checks run in a subprocess on virtual CPU devices
(their number must be set before JAX starts, and this process has already started it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_runs import assert_trees_equal, tiny_config

from hrl.config import ConfigError
from hrl.replay.sharded import make_sharded_replay
from hrl.runtime.build_run import build, initial_state
from hrl.runtime.executors import AXIS, DataParallelLoop, make_mesh
from hrl.runtime.iteration import init_train_state
from hrl.runtime.primitives import make_primitives

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train.devices": 0}, "config key 'train.devices': must be >= 1, got 0"),
        ({"train.devices": 3}, "'train.devices': must divide env.num_envs (4): each device "
                               "takes an equal share, got 3"),
        ({"train.devices": 2, "train.batch_size": 17, "train.learning_starts": 64},
         "must divide train.batch_size (17)"),
        ({"train.devices": 2, "replay.capacity": 999}, "must divide replay.capacity (999)"),
        ({"train.devices": 2, "train.executor": "sequential"}, "set train.executor to fused"),
        ({"train.devices": 2, "replay.backend": "jax_host"}, "needs replay.backend 'jax'"),
        ({"replay.sampling": "both"}, "config key 'replay.sampling'"),
    ],
)
def test_bad_device_settings_are_one_line_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as err:
        tiny_config(**overrides)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_more_devices_than_present_names_the_key_and_the_range():
    n = len(jax.devices())
    with pytest.raises(ValueError, match=rf"'train.devices': must be in \[1, {n}\].*got {n + 1}"):
        make_mesh(n + 1)


def _one_device_data_parallel(built):
    """`built`'s run as a data-parallel loop over a mesh of one device."""
    r = built.cfg.replay
    replay = make_sharded_replay(r.capacity, 1, AXIS, alpha=r.alpha, eps=r.eps, fanout=r.fanout,
                                 fmt=r.fmt, weights=r.weights, impl=r.impl)
    agent = dataclasses.replace(built.agent, grad_axis=AXIS)
    prims = make_primitives(built.env, agent, replay, built.schedule.batch_size)
    loop = DataParallelLoop(prims, built.schedule, replay, make_mesh(1))
    init = functools.partial(init_train_state, prims, replay, agent, built.env.spec,
                             built.schedule, built.example_transition)
    state = loop.init_state(lambda s, i: init(s, actor_index=i), jnp.int32(built.cfg.seed))
    return loop, state


def test_one_device_reproduces_the_fused_loop_bit_for_bit():
    # The sharded replay with one shard, the pmean over one device and device 0's keys are the
    # single-device run; the whole state (replay, networks, optimizer, actors) must agree.
    # next_obs in every row: the sharded replay's layout (the fused default is next_slot).
    built = build(tiny_config(**{"replay.impl": "xla", "train.dependency": "relaxed",
                                 "train.staleness": 1, "replay.next_obs": "stored"}))
    ref, ref_out = built.loop.run(initial_state(built), 40)
    loop, state = _one_device_data_parallel(built)
    got, out = loop.run(state, 40)
    assert int(got.updates) == int(ref.updates) > 0
    unstack = lambda tree: jax.tree.map(lambda x: np.asarray(x)[0], tree)  # noqa: E731
    for name in ("agent", "key", "env_steps", "iteration"):
        assert_trees_equal(getattr(got, name), getattr(ref, name))
    for name in ("replay", "obs", "nstep", "pending"):
        assert_trees_equal(unstack(getattr(got, name)), getattr(ref, name))
    np.testing.assert_array_equal(out.completed_return, ref_out.completed_return)
    np.testing.assert_array_equal(out.td_abs, ref_out.td_abs)


def check_on_devices(out_path: str) -> None:
    """Run in a subprocess with 4 virtual CPU devices (see the test below)."""
    assert jax.device_count() == 4, jax.devices()
    result = {}
    for name, devices, overrides in (
        ("dqn-global", 2, {}),
        ("dqn-local-fixed", 4, {"replay.sampling": "local", "replay.fmt": "fixed"}),
        ("ddpg-global", 4, {"env.name": "gymnax:Pendulum-v1", "algo": "ddpg", "agent": {}}),
    ):
        cfg = tiny_config(**{"train.devices": devices, "replay.impl": "xla", **overrides})
        built = build(cfg)
        state, out = built.loop.run(initial_state(built), 40)
        copies = [[np.asarray(s.data) for s in leaf.addressable_shards]
                  for leaf in jax.tree.leaves(state.agent)]
        obs = np.asarray(state.obs)
        shard_rows = np.asarray(state.replay.rows)
        result[name] = {
            "devices": devices,
            "copies": len(copies[0]),
            "params_equal": all(all(np.array_equal(c[0], x) for x in c) for c in copies),
            "actors_differ": all(not np.array_equal(obs[0], obs[j]) for j in range(1, devices)),
            "shards_differ": all(not np.array_equal(shard_rows[0], shard_rows[j])
                                 for j in range(1, devices)),
            "sizes": np.asarray(state.replay.size).tolist(),
            "max_priority": np.asarray(state.replay.max_priority).tolist(),
            "env_steps": int(state.env_steps),
            "updates": int(state.updates),
            "episodes_shape": list(out.completed.shape),
            "finite": bool(all(np.isfinite(np.asarray(x)).all()
                               for x in jax.tree.leaves(state.agent.params))),
        }
    # Seeds vmapped inside every device: S independent data-parallel runs in one program.
    cfg = tiny_config(**{"train.devices": 2, "replay.impl": "xla", "seeds": 2})
    built = build(cfg)
    state, out = built.loop.run_seeds(initial_state(built, [3, 4]), 40)
    kernel = jax.tree.leaves(state.agent.params)[0]
    copies = [np.asarray(s.data) for s in kernel.addressable_shards]
    result["seeds"] = {
        "params_equal": all(np.array_equal(copies[0], c) for c in copies),
        "seeds_differ": not np.array_equal(copies[0][0], copies[0][1]),
        "episodes_shape": list(out.completed.shape),
        "env_steps": np.asarray(state.env_steps).tolist(),
    }
    Path(out_path).write_text(json.dumps(result))


def test_several_devices_keep_one_set_of_parameters(tmp_path):
    out = tmp_path / "result.json"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    code = (f"import sys; sys.path[:0] = [{str(Path(__file__).parent)!r}, "
            f"{str(ROOT / 'tests')!r}]; "
            f"import test_data_parallel as t; t.check_on_devices({str(out)!r})")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    seeds = result.pop("seeds")
    assert seeds["params_equal"] and seeds["seeds_differ"], seeds
    assert seeds["episodes_shape"] == [2, 40, 4, 4] and seeds["env_steps"] == [640, 640], seeds
    one = tiny_config()
    iters, per_iter = 40, one.env.num_envs * one.train.rollout_length
    for name, r in result.items():
        devices = r["devices"]
        assert r["copies"] == devices, (name, r)
        assert r["params_equal"] and r["finite"], (name, r)
        assert r["actors_differ"] and r["shards_differ"], (name, r)
        # The schedule counts over all devices: the single-device config's env steps and
        # updates (n-step warm-up: none, n_step is 1), each device holding its share.
        assert r["env_steps"] == iters * per_iter, (name, r)
        assert r["sizes"] == [iters * per_iter // devices] * devices, (name, r)
        assert len(set(r["max_priority"])) == 1 or "local" in name, (name, r)
        assert r["episodes_shape"] == [iters, one.train.rollout_length, one.env.num_envs]
    # The same schedule whatever the algorithm, the devices and the sampling.
    assert len({r["updates"] for r in result.values()}) == 1
    assert result["dqn-global"]["updates"] > 0
