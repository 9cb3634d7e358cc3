"""A PureJaxRL-style DQN written for this comparison (not PureJaxRL's code): gymnax CartPole-v1,
M vmapped envs, flashbax's prioritised flat buffer, flax + optax, the whole chunk of env steps
and SGD steps in one jitted `lax.scan`.

    python experiments/peers/peer_jax_flashbax.py --task dqn --envs 8 --seconds 30

Per vector step: epsilon-greedy actions for the M envs, one gymnax step (auto-reset), one
`add` of M transitions, then M SGD steps of batch 32 (a `lax.scan`), each a flashbax
`sample` (P(i) ~ p_i^alpha), IS weights (N p_i)^-beta over their batch maximum, double-DQN
Huber loss, Adam with global-norm clipping, and `set_priorities` with |td| + 1e-6. The target
network is copied every 100 SGD steps. Each stored item carries its own s' (gymnax's
`final_observation`, so a time-limit truncation bootstraps from the true last state and only
termination stops the bootstrap); of flashbax's (first, second) pairs only `first` is used.
DQN only (no DDPG script for this peer).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DQN, Tracker, emit, peer_args, versions_of  # noqa: E402

T_START = time.perf_counter()


def make_sgd_step(net, tx, buffer, s: dict):
    """One SGD step of the peer's DQN, a `lax.scan` body over (params, target, opt, buffer,
    updates, size) and a key: a flashbax `sample` (P(i) ~ p_i^alpha), IS weights
    (N p_i)^-beta over their batch maximum, the double-DQN Huber loss, the optimizer `tx`,
    `set_priorities` with |td| + 1e-6, and a hard target copy every `s["target_update_period"]`
    SGD steps. `s`: the settings (beta, gamma, target_update_period). Shared by every script
    that runs this peer (`minatar_throughput.py` too)."""
    import jax
    import jax.numpy as jnp
    import optax

    def sgd_step(carry, key):
        params, target, opt, buf, updates, size = carry
        sample = buffer.sample(buf, key)
        first = sample.experience.first
        w = jnp.power(size * jnp.maximum(sample.probabilities, 1e-30), -s["beta"])
        w = w / jnp.max(w)

        def loss_fn(p):
            q = net.apply(p, first["obs"])
            q_taken = jnp.take_along_axis(q, first["action"][:, None], axis=1)[:, 0]
            next_online = net.apply(p, first["next_obs"])
            next_target = net.apply(target, first["next_obs"])
            best = jnp.argmax(next_online, axis=1)
            q_next = jnp.take_along_axis(next_target, best[:, None], axis=1)[:, 0]
            y = first["reward"] + s["gamma"] * (1.0 - first["done"]) * q_next
            td = q_taken - jax.lax.stop_gradient(y)
            return jnp.mean(w * optax.huber_loss(td)), td

        (_, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        step, opt = tx.update(grads, opt, params)
        params = optax.apply_updates(params, step)
        buf = buffer.set_priorities(buf, sample.indices, jnp.abs(td) + 1e-6)
        updates = updates + 1
        target = jax.tree.map(
            lambda t, o: jnp.where(updates % s["target_update_period"] == 0, o, t), target, params)
        return (params, target, opt, buf, updates, size), None

    return sgd_step


def make_train(num_envs: int, chunk_iters: int):
    import flashbax as fbx
    import flax.linen as nn
    import gymnax
    import jax
    import jax.numpy as jnp
    import optax

    s = DQN
    env, env_params = gymnax.make("CartPole-v1")
    n_actions = env.action_space(env_params).n

    class QNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in s["hidden"]:
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(n_actions)(x)

    net = QNet()
    tx = optax.chain(optax.clip_by_global_norm(s["max_grad_norm"]), optax.adam(s["learning_rate"]))
    buffer = fbx.make_prioritised_flat_buffer(
        max_length=s["buffer_size"],
        min_length=s["batch_size"],
        sample_batch_size=s["batch_size"],
        add_batch_size=num_envs,
        priority_exponent=s["alpha"],
        device="cpu",
    )
    rows = s["buffer_size"] // num_envs  # time steps the buffer holds per env

    def init(key):
        k_env, k_net, key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_env, num_envs), env_params)
        params = net.init(k_net, obs[0])
        item = {"obs": obs[0], "action": jnp.int32(0), "reward": jnp.float32(0),
                "next_obs": obs[0], "done": jnp.float32(0)}
        return {
            "key": key, "obs": obs, "env_state": env_state, "params": params,
            "target": params, "opt": tx.init(params), "buffer": buffer.init(item),
            "env_steps": jnp.int32(0), "updates": jnp.int32(0),
            "ep_return": jnp.zeros(num_envs, jnp.float32),
        }

    sgd_step = make_sgd_step(net, tx, buffer, s)

    def iteration(st, _):
        key, k_act, k_eps, k_env, k_sgd = jax.random.split(st["key"], 5)
        frac = jnp.minimum(st["env_steps"] / s["eps_decay_steps"], 1.0)
        eps = s["eps_start"] + frac * (s["eps_end"] - s["eps_start"])
        greedy = jnp.argmax(net.apply(st["params"], st["obs"]), axis=1)
        rand = jax.random.randint(k_act, (num_envs,), 0, n_actions)
        action = jnp.where(jax.random.uniform(k_eps, (num_envs,)) < eps, rand, greedy)
        obs, env_state, reward, term, trunc, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_env, num_envs), st["env_state"], action, env_params)
        done = term | trunc
        buf = buffer.add(st["buffer"], {"obs": st["obs"], "action": action.astype(jnp.int32),
                                        "reward": reward.astype(jnp.float32),
                                        "next_obs": info["final_observation"],
                                        "done": term.astype(jnp.float32)})
        env_steps = st["env_steps"] + num_envs
        ep_return = st["ep_return"] + reward
        # Pairs (s, s') exist for all but the newest time step of each env.
        size = (jnp.minimum(env_steps // num_envs, rows) - 1) * num_envs
        carry = (st["params"], st["target"], st["opt"], buf, st["updates"], size)

        def learn(c):
            return jax.lax.scan(sgd_step, c, jax.random.split(k_sgd, num_envs))[0]

        ready = (env_steps >= s["learning_starts"]) & buffer.can_sample(buf)
        params, target, opt, buf, updates, _ = jax.lax.cond(ready, learn, lambda c: c, carry)
        new = {"key": key, "obs": obs, "env_state": env_state, "params": params,
               "target": target, "opt": opt, "buffer": buf, "env_steps": env_steps,
               "updates": updates, "ep_return": jnp.where(done, 0.0, ep_return)}
        return new, (done, ep_return)

    @jax.jit
    def run_chunk(st):
        return jax.lax.scan(iteration, st, None, length=chunk_iters)

    return jax.jit(init), run_chunk


def main(argv=None) -> dict:
    args = peer_args(__doc__.split("\n")[0], argv)
    if args.task != "dqn":
        raise SystemExit("peer_jax_flashbax: DQN only")
    import jax
    import numpy as np

    chunk_iters = max(1, 512 // args.envs)
    tracker = Tracker(args.task)
    tracker.start()
    init, run_chunk = make_train(args.envs, chunk_iters)
    st = init(jax.random.PRNGKey(args.seed))
    first_chunk_s = None
    while True:
        st, (done, ret) = run_chunk(st)
        done, ret = np.asarray(done), np.asarray(ret)
        if first_chunk_s is None:
            first_chunk_s = tracker.elapsed()
        for r in ret[done]:  # time-major, then env order
            tracker.episode(r)
        tracker.check(int(st["env_steps"]), int(st["updates"]))
        if tracker.over(args):
            break
    return emit(
        "jax-flashbax", args, tracker,
        versions_of("flashbax", "jax", "jaxlib", "flax", "optax", "gymnax"),
        env_impl="gymnax (JAX)", loop="fused lax.scan",
        replay="flashbax prioritised flat buffer (binary sum tree)",
        first_chunk_incl_compile_s=round(first_chunk_s, 3),
        process_start_to_train_s=round(tracker.t0 - T_START, 3),
    )


if __name__ == "__main__":
    main()
