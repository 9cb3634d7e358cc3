"""The host loop's calls around a timed call (`LoopContext`).

A host loop makes its calls in a fixed cycle (`LOOP_CYCLE`, insert, once per iteration,
sitting where sample does). Each `dispatched` row is timed after the calls that precede it
in this cycle: they evict its code and data from the caches and the predictors, so a call
costs more in the loop than repeated alone, and a row timed alone underprices the loop (the
comparison is in experiments/results/mapping/). Building a context costs one small buffer
fill and a compilation of each call; it is built once per (envs, width, batch).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping.profile.target import Target
from hrl.mapping.profile.timers import copy_tree
from hrl.runtime.executors import HostCalls
from hrl.runtime.iteration import Schedule

LOOP_CYCLE = ("env", "infer", "sample", "train", "update")


class LoopContext:
    """The host loop's calls at one setting (`LOOP_CYCLE`, the runtime's own primitives on
    the first CPU device: the env, infer, the native tree's sample and update, the packed
    SGD step), which `around(call)` runs, untimed, between two timed calls of `call`."""

    def __init__(self, calls: dict[str, Callable[[], object]]):
        self.calls = calls

    def around(self, call: str) -> Callable[[], None]:
        """The calls that come between two of `call`'s in the loop's cycle, in order."""
        at = LOOP_CYCLE.index("sample" if call == "insert" else call)
        order = LOOP_CYCLE[at + 1:] + LOOP_CYCLE[:at]
        fns = [self.calls[c] for c in order]

        def run() -> None:
            for fn in fns:
                jax.block_until_ready(fn())

        return run


def build_context(target: Target, capacity: int, fanout: int, num_envs: int, width: int,
                  batch: int) -> LoopContext:
    """The loop context of `target` at these sizes, on the first CPU device: the sequential
    executor's own calls (`hrl.runtime.executors.HostCalls`: the placed, jitted infer and env
    step, the donated update, the packed SGD step), each feeding the next as in the loop
    (actions into the env, td errors into update)."""
    rng = np.random.default_rng(7)
    cpu = jax.devices("cpu")[0]
    agent = target.agent(width)
    replay = target.replay(capacity, fanout)
    tree = target.filled_replay(replay, cpu, rng)
    prims = target.prims(agent, replay, batch, num_envs)
    schedule = Schedule(num_envs=num_envs, rollout_length=1, updates_per_round=1, period=1,
                        batch_size=batch, learning_starts=0, staleness=0, n_step=1, gamma=0.99,
                        total_env_steps=10**7, beta_start=0.4, beta_end=1.0)
    calls = HostCalls(prims, schedule, target.spec.is_jax)
    actor, learner = calls.actor_calls(), calls.learner_calls(None, wait_train=True)
    with jax.default_device(cpu):
        agent_state = agent.init(jax.random.PRNGKey(0))
        env_state, obs = prims.env_reset(jax.random.PRNGKey(1))
        carry = agent.init_carry(num_envs)
        start = jnp.zeros((num_envs,), bool)
        beta = np.float32(0.4)
        drawn = calls.sample(tree, jax.random.PRNGKey(2), beta)
        # Host keys, as the loop passes them (one transfer per iteration, not per call).
        keys = itertools.cycle(np.asarray(jax.random.split(jax.random.PRNGKey(3), 1024)))
    # The first train call packs the agent (as a learning round's first step does).
    packed, td, _ = learner.train(agent_state, drawn.items, drawn.weights)
    live = {"env": env_state, "obs": obs, "actions": None, "packed": packed, "td": td,
            "tree": copy_tree(tree)}

    def env_call():
        actions = live["actions"]
        if actions is None:
            actions = target.random_actions(num_envs, rng)
        live["env"], out = actor.env_step(live["env"], actions, next(keys))
        live["obs"] = out.obs
        return out.reward

    def infer_call():
        _, live["actions"] = actor.infer(agent_state, carry, live["obs"], next(keys), 0, start)
        return live["actions"]

    def train_call():
        live["packed"], live["td"], _ = learner.train(live["packed"], drawn.items,
                                                      drawn.weights)
        return live["td"]

    def update_call():
        live["tree"] = learner.update(live["tree"], drawn.indices, live["td"], True)
        return live["tree"]

    return LoopContext({"env": env_call, "infer": infer_call, "train": train_call,
                        "sample": lambda: learner.sample(tree, next(keys), beta).indices,
                        "update": update_call})
