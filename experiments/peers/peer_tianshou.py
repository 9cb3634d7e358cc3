"""Tianshou (PyTorch, CPU): its DQN with PrioritizedVectorReplayBuffer and its DDPG, trained by
its OffPolicyTrainer on gymnasium envs in a DummyVectorEnv.

    .peers/tianshou/bin/python experiments/peers/peer_tianshou.py --task dqn --envs 8 --seconds 30

The trainer collects M env steps (one vector step), then makes M gradient steps of batch 32
(`update_step_num_gradient_steps_per_sample=1`). Epsilon is set in `training_fn`, the trainer's
hook for it; the same hook ends the run at the time budget (by raising, caught here). Before
the trainer starts, `learning_starts` uniform-random steps fill the buffer (Tianshou's usual
warm-up: its trainer has no learning_starts). Tianshou's DQN clips no gradients (its optimizer
wrapper takes max_grad_norm, its DQN passes none).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DDPG, DQN, Tracker, emit, peer_args, versions_of  # noqa: E402

T_START = time.perf_counter()


class _Budget(Exception):
    pass


def main(argv=None) -> dict:
    args = peer_args(__doc__.split("\n")[0], argv)
    import gymnasium as gym
    import torch
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, PrioritizedVectorReplayBuffer, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    tracker = Tracker(args.task)
    m = args.envs

    class Returns(gym.Wrapper):
        """Reports each finished episode's return to the tracker."""

        def reset(self, **kwargs):
            self._ret = 0.0
            return self.env.reset(**kwargs)

        def step(self, action):
            obs, r, term, trunc, info = self.env.step(action)
            self._ret += float(r)
            if term or trunc:
                tracker.episode(self._ret)
            return obs, r, term, trunc, info

    env_id = "CartPole-v1" if args.task == "dqn" else "Pendulum-v1"
    tracker.start()
    envs = DummyVectorEnv([lambda: Returns(gym.make(env_id)) for _ in range(m)])
    envs.seed(args.seed)
    obs_space, act_space = envs.observation_space[0], envs.action_space[0]
    if args.task == "dqn":
        from tianshou.algorithm.modelfree.dqn import DQN as TSDQN
        from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy

        s = DQN
        net = Net(state_shape=obs_space.shape, action_shape=act_space.n,
                  hidden_sizes=list(s["hidden"]))
        policy = DiscreteQLearningPolicy(model=net, action_space=act_space,
                                         observation_space=obs_space, eps_training=s["eps_start"])
        algo = TSDQN(policy=policy, optim=AdamOptimizerFactory(lr=s["learning_rate"]),
                     gamma=s["gamma"], target_update_freq=s["target_update_period"],
                     is_double=True, huber_loss_delta=1.0)
        buffer = PrioritizedVectorReplayBuffer(s["buffer_size"], m, alpha=s["alpha"],
                                               beta=s["beta"])
        replay = "Tianshou PrioritizedVectorReplayBuffer (segment tree)"
    else:
        from tianshou.algorithm.modelfree.ddpg import DDPG as TSDDPG
        from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
        from tianshou.exploration import GaussianNoise
        from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic

        s = DDPG
        bound = float(act_space.high[0])
        actor = ContinuousActorDeterministic(
            preprocess_net=Net(state_shape=obs_space.shape, hidden_sizes=list(s["hidden"])),
            action_shape=act_space.shape, max_action=bound)
        critic = ContinuousCritic(preprocess_net=Net(
            state_shape=obs_space.shape, action_shape=act_space.shape,
            hidden_sizes=list(s["hidden"]), concat=True))
        policy = ContinuousDeterministicPolicy(
            actor=actor, exploration_noise=GaussianNoise(sigma=s["noise_scale"] * bound),
            action_space=act_space, observation_space=obs_space)
        algo = TSDDPG(policy=policy, policy_optim=AdamOptimizerFactory(lr=s["actor_lr"]),
                      critic=critic, critic_optim=AdamOptimizerFactory(lr=s["critic_lr"]),
                      tau=s["tau"], gamma=s["gamma"])
        buffer = VectorReplayBuffer(s["buffer_size"], m)
        replay = "Tianshou VectorReplayBuffer (uniform, as its DDPG examples)"

    updates = [0]
    update = algo.update

    def counted_update(*a, **kw):
        updates[0] += 1
        return update(*a, **kw)

    algo.update = counted_update
    collector = Collector(algo, envs, buffer, exploration_noise=True)
    collector.reset()
    collector.collect(n_step=s["learning_starts"], random=True)
    warm = s["learning_starts"] + (-s["learning_starts"]) % m  # collect rounds up to M

    def training_fn(epoch: int, env_step: int) -> None:
        steps = warm + env_step
        if args.task == "dqn":
            frac = min(steps / s["eps_decay_steps"], 1.0)
            policy.set_eps_training(s["eps_start"] + frac * (s["eps_end"] - s["eps_start"]))
        tracker.check(steps, updates[0])
        if tracker.over(args):
            raise _Budget

    params = OffPolicyTrainerParams(
        training_collector=collector, max_epochs=10**6, epoch_num_steps=10_000,
        collection_step_num_env_steps=m, update_step_num_gradient_steps_per_sample=1.0,
        batch_size=s["batch_size"], training_fn=training_fn, test_collector=None,
        verbose=False, show_progress=False,
    )
    try:
        algo.run_training(params)
    except _Budget:
        pass
    return emit(
        "tianshou", args, tracker,
        versions_of("tianshou", "torch", "gymnasium", "numpy"),
        env_impl="gymnasium (DummyVectorEnv)", loop="Tianshou OffPolicyTrainer", replay=replay,
        torch_threads=torch.get_num_threads(),
        process_start_to_train_s=round(tracker.t0 - T_START, 3),
    )


if __name__ == "__main__":
    main()
