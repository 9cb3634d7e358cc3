"""RLlib (Ray, PyTorch on the CPU, new API stack): its DQN, whose default replay is the
PrioritizedEpisodeReplayBuffer (alpha 0.6, beta 0.4), on gymnasium CartPole-v1.

    .peers/rllib/bin/python experiments/peers/peer_rllib.py --task dqn --envs 8 --seconds 60

One process: the env runner and the learner are local (num_env_runners=0, num_learners=0),
the M envs a gymnasium vector env inside the runner. rollout_fragment_length=1 and
training_intensity=32 (transitions replayed per transition sampled): RLlib's round-robin then
makes M updates of batch 32 after each vector step of M envs, one SGD step per env step.
`min_sample_timesteps_per_iteration=200`: each `train()` iteration (the granularity of the
budget and of the time-to-solved check) is about 200 env steps.
The Q network: encoder 64x64 (fcnet_hiddens), linear head, dueling off (RLlib's default is a
dueling head of [256]). RLlib ships no DDPG or TD3 in this version (removed from RLlib;
its continuous off-policy algorithm is SAC), so this peer has no Pendulum row.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DQN, Tracker, emit, peer_args, versions_of  # noqa: E402

T_START = time.perf_counter()


def _get(result: dict, *path, default=None):
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return default
        result = result[key]
    return result


def main(argv=None) -> dict:
    args = peer_args(__doc__.split("\n")[0], argv)
    if args.task != "dqn":
        raise SystemExit("peer_rllib: RLlib ships no DDPG/TD3 in this version")
    import ray
    import torch
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    torch.set_num_threads(args.torch_threads)
    tracker = Tracker(args.task)
    s = DQN
    m = args.envs

    def on_episode_end(*, episode, prev_episode_chunks=None, **_):
        total = episode.get_return() + sum(c.get_return() for c in prev_episode_chunks or ())
        tracker.episode(total)

    tracker.start()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=m, rollout_fragment_length=1,
                     num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(s["hidden"]),
                                                   head_fcnet_hiddens=[]))
        .training(
            lr=s["learning_rate"],
            gamma=s["gamma"],
            train_batch_size_per_learner=s["batch_size"],
            training_intensity=float(s["batch_size"] * s["sgd_steps_per_env_step"]),
            num_steps_sampled_before_learning_starts=s["learning_starts"],
            target_network_update_freq=s["target_update_period"],  # env steps sampled
            tau=1.0,
            epsilon=[(0, s["eps_start"]), (s["eps_decay_steps"], s["eps_end"])],
            grad_clip=s["max_grad_norm"],
            grad_clip_by="global_norm",
            double_q=True,
            dueling=False,
            n_step=1,
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer",
                                  "capacity": s["buffer_size"], "alpha": s["alpha"],
                                  "beta": s["beta"]},
        )
        .reporting(metrics_num_episodes_for_smoothing=s["return_window"],
                   min_sample_timesteps_per_iteration=200, min_time_s_per_iteration=None)
        .callbacks(on_episode_end=on_episode_end)
        .debugging(seed=args.seed, log_level="ERROR")
    )
    algo = config.build_algo()
    buffer_type = type(algo.local_replay_buffer).__name__
    updates = iterations = 0
    while True:
        result = algo.train()
        iterations += 1
        env_steps = _get(result, "env_runners", "num_env_steps_sampled_lifetime", default=0)
        trained = _get(result, "learners", "__all_modules__", "num_env_steps_trained_lifetime")
        if trained is None:
            trained = _get(result, "learners", "default_policy",
                           "num_module_steps_trained_lifetime", default=0)
        updates = int(trained) // s["batch_size"]
        tracker.check(int(env_steps), updates)
        if tracker.over(args):
            break
    row = emit(
        "rllib", args, tracker,
        versions_of("ray", "torch", "gymnasium", "numpy"),
        env_impl="gymnasium (vector env in a local EnvRunner)", loop="RLlib Algorithm.train()",
        replay=f"RLlib {buffer_type}",
        torch_threads=torch.get_num_threads(), train_iterations=iterations,
        process_start_to_train_s=round(tracker.t0 - T_START, 3),
    )
    algo.stop()
    ray.shutdown()
    return row


if __name__ == "__main__":
    main()
