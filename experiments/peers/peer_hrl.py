"""hrl, run the way `hrl train` runs it: `build` + `initial_state` + the loop's chunks.

    python experiments/peers/peer_hrl.py --task dqn --envs 8 --seconds 30 --variant gymnax
    python experiments/peers/peer_hrl.py --task dqn --envs 1 --variant gymnasium

--variant gymnax: JAX CartPole-v1 / Pendulum-v1 (gymnax), the fused loop (one jitted lax.scan
per chunk). --variant gymnasium: gymnasium's CartPole-v1 / Pendulum-v1 stepped on the host (the
envs the Python peers step), the host loop (each primitive its own jitted call).
Replay: hrl's prioritized buffer, K=16 sum tree, native C++ kernels where they build.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DDPG, DQN, Tracker, emit, peer_args, versions_of  # noqa: E402

T_START = time.perf_counter()


def config(task: str, variant: str, num_envs: int, seed: int) -> dict:
    env_id = "CartPole-v1" if task == "dqn" else "Pendulum-v1"
    name = f"{variant}:{env_id}"
    # Chunks of 512 env steps: short enough to see the bar and the budget within ~0.1 s.
    chunk = max(1, 512 // num_envs) * num_envs
    train = {
        "total_env_steps": 10**9,
        "gamma": 0.99,
        "train_ratio": 1.0,  # one SGD step per env step: M SGD steps per vector step
        "rollout_length": 1,
        "chunk_env_steps": chunk,
        "executor": "fused" if variant == "gymnax" else "sequential",
    }
    if task == "dqn":
        s = DQN
        agent = {
            "hidden_sizes": list(s["hidden"]),
            "learning_rate": s["learning_rate"],
            "max_grad_norm": s["max_grad_norm"],
            "double": True,
            "target_update_period": s["target_update_period"],
            "tau": 1.0,
            "eps_start": s["eps_start"],
            "eps_end": s["eps_end"],
            "eps_decay_steps": s["eps_decay_steps"],
        }
        replay = {"capacity": s["buffer_size"], "alpha": s["alpha"], "beta_start": s["beta"],
                  "beta_end": s["beta"], "fanout": 16, "n_step": 1}
        train.update(batch_size=s["batch_size"], learning_starts=s["learning_starts"],
                     solved_return=s["solved_return"])
    else:
        s = DDPG
        agent = {
            "actor_hidden_sizes": list(s["hidden"]),
            "critic_hidden_sizes": list(s["hidden"]),
            "actor_learning_rate": s["actor_lr"],
            "critic_learning_rate": s["critic_lr"],
            "tau": s["tau"],
            "noise": "gaussian",
            "noise_scale": s["noise_scale"],
            "random_steps": s["learning_starts"],
        }
        replay = {"capacity": s["buffer_size"], "alpha": 0.6, "beta_start": 0.4,
                  "beta_end": 0.4, "fanout": 16, "n_step": 1}
        train.update(batch_size=s["batch_size"], learning_starts=s["learning_starts"])
    return {
        "algo": task,
        "seed": seed,
        "name": f"peers_{task}_{variant}_m{num_envs}",
        "env": {"name": name, "num_envs": num_envs},
        "agent": agent,
        "replay": replay,
        "train": train,
        "log": {"progress": False},
    }


def main(argv=None) -> dict:
    args = peer_args(__doc__.split("\n")[0], argv)
    args.variant = args.variant or "gymnax"
    import jax
    import numpy as np

    from hrl.config import config_from_dict
    from hrl.replay import native
    from hrl.runtime import build, initial_state
    from hrl.runtime.chunk_log import episodes_of

    cfg = config_from_dict(config(args.task, args.variant, args.envs, args.seed))
    tracker = Tracker(args.task)
    tracker.start()
    built = build(cfg)
    state = initial_state(built)
    chunk_iters = max(1, cfg.train.chunk_env_steps // cfg.env_steps_per_iter)
    first_chunk_s = None
    while True:
        before = int(state.env_steps)
        state, out = built.loop.run(state, chunk_iters)
        jax.block_until_ready(state)
        if first_chunk_s is None:
            first_chunk_s = tracker.elapsed()
        _, returns = episodes_of(out, before, args.envs)
        for r in np.asarray(returns):
            tracker.episode(r)
        tracker.check(int(state.env_steps), int(state.updates))
        if tracker.over(args):
            break
    return emit(
        "hrl", args, tracker,
        {"hrl": "this repo", **versions_of("jax", "jaxlib", "flax", "optax", "gymnax",
                                            "gymnasium")},
        env_impl=("gymnax (JAX)" if args.variant == "gymnax" else "gymnasium (host, numpy)"),
        loop=("fused lax.scan" if cfg.train.executor in ("auto", "fused")
              and args.variant == "gymnax" else "host loop"),
        replay=f"hrl PER, K=16 sum tree ({'native C++' if native.available() else 'jnp'})",
        first_chunk_incl_compile_s=round(first_chunk_s, 3),
        process_start_to_train_s=round(tracker.t0 - T_START, 3),
        threads=os.cpu_count(),
    )


if __name__ == "__main__":
    main()
