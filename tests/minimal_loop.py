"""A minimal fully jitted actor-learner loop (M vmapped envs, one prioritized replay, one agent).

Test-only: it checks that hrl.envs + hrl.agents + hrl.replay learn together, and it is the
loop the recommended hyperparameters were measured with. The real runtime lives in
hrl.runtime; this one keeps just enough to learn: per iteration, every env takes one step, the
M transitions go into the replay, then `train_per_iter` SGD steps (sample -> train ->
update priorities) once `learning_starts` transitions are stored.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hrl.envs.spec import example_transition
from hrl.replay import make_prioritized_replay


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    num_envs: int = 16
    gamma: float = 0.99
    replay_capacity: int = 50_000
    alpha: float = 0.6
    beta_start: float = 0.4
    beta_end: float = 1.0
    batch_size: int = 128
    train_per_iter: int = 4  # SGD steps per iteration of num_envs env steps
    learning_starts: int = 1_000  # transitions in replay before training starts
    iters_per_chunk: int = 250  # one jitted scan; progress is checked between chunks


@struct.dataclass
class Runner:
    env_state: object
    obs: jax.Array
    episode_start: jax.Array
    agent_state: object
    actor_carry: object
    replay: object
    env_steps: jax.Array
    key: jax.Array


def make_loop(env, agent, cfg: LoopConfig, total_iters: int):
    rb = make_prioritized_replay(cfg.replay_capacity, alpha=cfg.alpha)
    m = env.spec.num_envs

    def init(key) -> Runner:
        env_key, agent_key, key = jax.random.split(key, 3)
        env_state, obs = env.reset(env_key)
        return Runner(
            env_state=env_state,
            obs=obs,
            episode_start=jnp.ones((m,), bool),
            agent_state=agent.init(agent_key),
            actor_carry=agent.init_carry(m),
            replay=rb.init(example_transition(env.spec)),
            env_steps=jnp.int32(0),
            key=key,
        )

    def train_once(carry, key):
        agent_state, replay, beta = carry
        sample = rb.sample(replay, key, cfg.batch_size, beta)
        agent_state, td, metrics = agent.train_step(agent_state, sample.items, sample.weights)
        replay = rb.update(replay, sample.indices, td)
        return (agent_state, replay, beta), metrics["td_abs_mean"]

    def iteration(runner: Runner, _):
        key, act_key, step_key, train_key = jax.random.split(runner.key, 4)
        carry, actions = agent.act_with_carry(
            runner.agent_state,
            runner.actor_carry,
            runner.obs,
            act_key,
            runner.env_steps,
            True,
            runner.episode_start,
        )
        env_state, out = env.step(runner.env_state, actions, step_key)
        transitions = {
            "obs": runner.obs,
            "action": actions,
            "reward": out.reward,
            "next_obs": out.next_obs_true,
            "discount": cfg.gamma * (1.0 - out.terminated.astype(jnp.float32)),
        }
        replay = rb.add(runner.replay, transitions)
        progress = jnp.minimum(runner.env_steps / (total_iters * m), 1.0)
        beta = cfg.beta_start + progress * (cfg.beta_end - cfg.beta_start)

        def train(args):
            agent_state, replay = args
            (agent_state, replay, _), _ = jax.lax.scan(
                train_once,
                (agent_state, replay, beta),
                jax.random.split(train_key, cfg.train_per_iter),
            )
            return agent_state, replay

        agent_state, replay = jax.lax.cond(
            replay.size >= cfg.learning_starts,
            train,
            lambda args: args,
            (runner.agent_state, replay),
        )
        runner = Runner(
            env_state, out.obs, out.done, agent_state, carry, replay, runner.env_steps + m, key
        )
        return runner, (out.completed, out.completed_return)

    @jax.jit
    def run_chunk(runner: Runner):
        return jax.lax.scan(iteration, runner, None, length=cfg.iters_per_chunk)

    return jax.jit(init), run_chunk


def train(
    env,
    agent,
    cfg: LoopConfig,
    total_env_steps: int,
    seed: int = 0,
    solved_at: float | None = None,
    log=None,
):
    """Run until `total_env_steps` or until the mean of the last 10 episodes >= `solved_at`.

    Returns a dict: episode returns in completion order, env steps, wall time, solved flag.
    """
    total_iters = max(total_env_steps // env.spec.num_envs, 1)
    init, run_chunk = make_loop(env, agent, cfg, total_iters)
    runner = init(jax.random.key(seed))
    returns: list[float] = []
    start = time.perf_counter()
    solved = False
    iters = 0
    while iters < total_iters:
        runner, (completed, completed_return) = run_chunk(runner)
        iters += cfg.iters_per_chunk
        completed, completed_return = np.asarray(completed), np.asarray(completed_return)
        returns.extend(completed_return[completed].tolist())  # time-major: completion order
        last10 = float(np.mean(returns[-10:])) if len(returns) >= 10 else float("nan")
        if log is not None:
            log(
                f"env_steps={int(runner.env_steps)} episodes={len(returns)} last10={last10:.1f} "
                f"t={time.perf_counter() - start:.1f}s"
            )
        if solved_at is not None and last10 >= solved_at:
            solved = True
            break
    return {
        "returns": returns,
        "env_steps": int(runner.env_steps),
        "seconds": time.perf_counter() - start,
        "solved": solved,
        "last10": float(np.mean(returns[-10:])) if returns else float("nan"),
        "runner": runner,
    }
