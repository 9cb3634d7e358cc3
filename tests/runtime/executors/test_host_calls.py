"""`HostCalls.act` with `lean_act` (the actors' processes: a host env's n-step windows once per
iteration, inference on the leaves it reads, the keys moved at once) against the call-by-call
program: the same actors' state, transitions, episode ends and returns, bit for bit, across
iterations and episode ends."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tiny_runs import CONFIGS, SMALL, assert_trees_equal

from hrl.config import load_config
from hrl.runtime import build, initial_state
from hrl.runtime.executors.host_calls import HostCalls
from hrl.runtime.iteration import actor_of

CASES = {
    # discrete actions, M = 4, n = 3: episodes end inside the windows
    "dqn": ("dqn_cartpole_gymnasium", [*SMALL, "train.rollout_length=16"]),
    # continuous actions, an exploration carry (OU noise), n = 3; 240 steps cross the
    # 200-step time limit (a truncation: the window bootstraps)
    "ddpg_ou": ("ddpg_pendulum", ["env.name=gymnasium:Pendulum-v1", "env.num_envs=2",
                                   "agent.actor_hidden_sizes=[16,16]",
                                   "agent.noise=ou", "agent.random_steps=0", "replay.n_step=3",
                                   "train.rollout_length=48"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lean_act_equals_the_calls_one_by_one(case):
    config, overrides = CASES[case]
    cfg = load_config(CONFIGS / f"{config}.yaml", [*overrides, "train.executor=sequential"])
    built = build(cfg)
    calls = built.loop.calls
    assert not calls.lean_act and not calls.env_is_jax
    lean = HostCalls(calls.prims, calls.schedule, False, lean_act=True)
    state = initial_state(built)
    simulators = built.env.save_state()
    runs = []
    for host_calls in (calls, lean):
        built.env.load_state(simulators)
        actor, key, steps, outs = actor_of(state), state.key, 0, []
        for t in range(5):
            inputs = host_calls.inputs_from(key, steps, t)
            actor, batch, completed, returns, steps = host_calls.act(
                state.agent, actor, inputs.act_env, steps)
            key = inputs.key
            outs.append(jax.device_get((actor, batch, completed, returns, steps)))
        runs.append(outs)
    one_by_one, lean_runs = runs
    ends = sum(int(np.sum(completed)) for _, _, completed, _, _ in one_by_one)
    assert ends > 0  # the windows crossed episode ends
    assert_trees_equal(one_by_one, lean_runs)
