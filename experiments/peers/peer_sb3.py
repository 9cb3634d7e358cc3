"""Stable-Baselines3 (PyTorch, CPU): its DQN and DDPG on gymnasium envs in a DummyVecEnv.

    .peers/sb3/bin/python experiments/peers/peer_sb3.py --task dqn --envs 8 --seconds 30

SB3 ships no prioritized replay (its buffers: ReplayBuffer, DictReplayBuffer, NStepReplayBuffer;
sb3-contrib has none either), so its DQN samples uniformly: the row is labelled so. SB3's DQN is
not double DQN. `train_freq=1` vector step and `gradient_steps=M`: one SGD step per env step.
The time budget is enforced by a callback that stops `learn`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DDPG, DQN, Tracker, emit, peer_args, versions_of  # noqa: E402

T_START = time.perf_counter()
TOTAL = 10**7  # nominal length of `learn`; the callback ends it at the budget


def main(argv=None) -> dict:
    args = peer_args(__doc__.split("\n")[0], argv)
    import numpy as np
    import torch
    from stable_baselines3 import DDPG as SB3DDPG
    from stable_baselines3 import DQN as SB3DQN
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    torch.set_num_threads(args.torch_threads)
    tracker = Tracker(args.task)

    class Budget(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals.get("infos", ()):
                if "episode" in info:
                    tracker.episode(info["episode"]["r"])
            tracker.check(self.model.num_timesteps, self.model._n_updates)
            return not tracker.over(args)

    tracker.start()
    m = args.envs
    if args.task == "dqn":
        s = DQN
        env = make_vec_env("CartPole-v1", n_envs=m, seed=args.seed)
        model = SB3DQN(
            "MlpPolicy", env,
            learning_rate=s["learning_rate"],
            buffer_size=s["buffer_size"],
            learning_starts=s["learning_starts"],
            batch_size=s["batch_size"],
            tau=1.0,
            gamma=s["gamma"],
            train_freq=1,
            gradient_steps=m * s["sgd_steps_per_env_step"],
            target_update_interval=s["target_update_period"],  # SB3 counts env steps
            exploration_fraction=s["eps_decay_steps"] / TOTAL,
            exploration_initial_eps=s["eps_start"],
            exploration_final_eps=s["eps_end"],
            max_grad_norm=s["max_grad_norm"],
            policy_kwargs={"net_arch": list(s["hidden"])},
            seed=args.seed,
            device="cpu",
        )
        replay = "SB3 ReplayBuffer (uniform: SB3 has no prioritized replay)"
    else:
        s = DDPG
        env = make_vec_env("Pendulum-v1", n_envs=m, seed=args.seed)
        n_act = env.action_space.shape[0]
        bound = float(env.action_space.high[0])
        model = SB3DDPG(
            "MlpPolicy", env,
            learning_rate=s["actor_lr"],
            buffer_size=s["buffer_size"],
            learning_starts=s["learning_starts"],
            batch_size=s["batch_size"],
            tau=s["tau"],
            gamma=s["gamma"],
            train_freq=1,
            gradient_steps=m * s["sgd_steps_per_env_step"],
            action_noise=NormalActionNoise(np.zeros(n_act), s["noise_scale"] * bound
                                           * np.ones(n_act)),
            policy_kwargs={"net_arch": {"pi": list(s["hidden"]), "qf": list(s["hidden"])}},
            seed=args.seed,
            device="cpu",
        )
        replay = "SB3 ReplayBuffer (uniform)"
    model.learn(total_timesteps=TOTAL, callback=Budget())
    return emit(
        "sb3", args, tracker,
        {**versions_of("stable_baselines3", "torch", "gymnasium", "numpy")},
        env_impl="gymnasium (DummyVecEnv)", loop="SB3 learn()", replay=replay,
        torch_threads=torch.get_num_threads(),
        process_start_to_train_s=round(tracker.t0 - T_START, 3),
    )


if __name__ == "__main__":
    main()
