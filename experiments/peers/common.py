"""What every peer script shares: the settings both tasks fix, the FLOP count, the episode
bookkeeping and the one-line JSON result. Standard library only: each peer imports it from its
own virtual environment (a script's folder is on its `sys.path`).

Every script takes the same arguments (`peer_args`) and prints one line per run,
`PEER_RESULT {json}`, which `run_peers.py` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import deque

# DQN + prioritized replay, CartPole-v1: what the issue fixes (one SGD step of batch 32 per env
# step, a 64x64 MLP, a 50k replay) and the rest of hrl's dqn_cartpole settings, given to every
# peer through its own keyword for it. Where a peer cannot take one, run_peers.py says so.
DQN = {
    "hidden": (64, 64),
    "batch_size": 32,
    "buffer_size": 50_000,
    "sgd_steps_per_env_step": 1,
    "learning_rate": 1e-3,
    "gamma": 0.99,
    "learning_starts": 1_000,  # transitions in the buffer before the first SGD step
    "target_update_period": 100,  # SGD steps (= env steps here) between hard target copies
    "eps_start": 1.0,
    "eps_end": 0.02,
    "eps_decay_steps": 10_000,  # env steps, linear
    "alpha": 0.6,  # priority exponent
    "beta": 0.4,  # importance-weight exponent (hrl anneals it to 1.0; see run_peers.py)
    "max_grad_norm": 10.0,
    "solved_return": 475.0,
    "return_window": 10,  # episodes in the mean that must reach solved_return
}

# DDPG, Pendulum-v1: hrl's ddpg_pendulum settings (64x64 actor and critic, batch 128).
DDPG = {
    "hidden": (64, 64),
    "batch_size": 128,
    "buffer_size": 100_000,
    "sgd_steps_per_env_step": 1,
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
    "gamma": 0.99,
    "tau": 0.005,
    "noise_scale": 0.1,  # Gaussian exploration noise, times the action bound (2)
    "learning_starts": 1_000,  # uniform random actions until then
}

OBS = {"dqn": 4, "ddpg": 3}
ACT = {"dqn": 2, "ddpg": 1}


def mlp_flops(sizes) -> int:
    """Multiply-adds x 2 of one forward pass of a dense MLP per sample (biases and activations
    left out: they are O(width), the matmuls O(width^2))."""
    return sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def flops_per_env_step(task: str) -> dict:
    """Network FLOPs one env step costs at one SGD step per env step, counted from the algorithm
    (the same count for every peer, whatever its implementation does extra):

    DQN (double): act: Q(s) 1 F; SGD step of batch B: Q(s) forward + backward (3 F: the backward
    is 2 F, gradients for weights and inputs), Q_target(s') and Q_online(s') for the double-DQN
    argmax (2 F): B x 5 F.
    DDPG: act: mu(s) 1 Fa. Critic step: mu_target(s') Fa + Q_target(s', a') Fc + Q(s, a) forward
    and backward 3 Fc; actor step: mu(s) Fa + Q(s, mu(s)) Fc forward, backward through both
    2 Fc + 2 Fa: B x (4 Fa + 7 Fc).
    """
    if task == "dqn":
        s = DQN
        f = mlp_flops([OBS["dqn"], *s["hidden"], ACT["dqn"]])
        act, train = f, s["batch_size"] * 5 * f
    else:
        s = DDPG
        fa = mlp_flops([OBS["ddpg"], *s["hidden"], ACT["ddpg"]])
        fc = mlp_flops([OBS["ddpg"] + ACT["ddpg"], *s["hidden"], 1])
        act, train = fa, s["batch_size"] * (4 * fa + 7 * fc)
    return {"act": act, "train": train, "per_env_step": act + train * s["sgd_steps_per_env_step"]}


def peer_args(description: str, argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--task", choices=("dqn", "ddpg"), default="dqn")
    p.add_argument("--envs", type=int, default=1, help="M parallel envs")
    p.add_argument("--seconds", type=float, default=30.0,
                   help="DQN: wall limit from the start of set-up (the run stops earlier once "
                   "solved if --stop-when-solved); DDPG: seconds measured after learning started")
    p.add_argument("--stop-when-solved", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", default="", help="a peer's variant (hrl: gymnax | gymnasium)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads (PyTorch peers); 1 measured 4.7x faster than 2 "
                   "for these 64x64 nets on the 2 shared cores")
    return p.parse_args(argv)


class Tracker:
    """Env steps, SGD updates and finished episodes against wall time since `start()`.

    Throughput is taken over the window from the first check at which learning had started
    (buffer past learning_starts) to the last check; time to solved is the wall time at the
    first check that saw the mean of the last `window` returns reach the bar.
    """

    def __init__(self, task: str):
        self.task = task
        self.window = DQN["return_window"]
        self.bar = DQN["solved_return"] if task == "dqn" else None
        self.returns: deque = deque(maxlen=self.window)
        self.episodes = 0
        self.t0 = None
        self.mark = None  # (wall, env_steps, updates) when learning had started
        self.last = (0.0, 0, 0)
        self.solved_s = None
        self.solved_env_steps = None
        self.learning_starts = DQN["learning_starts"] if task == "dqn" else DDPG["learning_starts"]

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def episode(self, ret: float) -> None:
        self.returns.append(float(ret))
        self.episodes += 1

    def check(self, env_steps: int, updates: int) -> None:
        now = self.elapsed()
        self.last = (now, int(env_steps), int(updates))
        if self.mark is None and updates > 0 and env_steps >= self.learning_starts:
            self.mark = self.last
        if (self.bar is not None and self.solved_s is None and len(self.returns) == self.window
                and sum(self.returns) / self.window >= self.bar):
            self.solved_s, self.solved_env_steps = now, int(env_steps)

    def over(self, args) -> bool:
        """Whether the run is done. DQN: --seconds of wall time from the start of set-up (the
        limit for time to solved), or solved with --stop-when-solved. DDPG (throughput only):
        --seconds of training after learning started, so a peer's set-up (numba or XLA
        compiles, Ray start) does not eat its measuring window; at most 300 s more in all."""
        now = self.elapsed()
        if self.task == "ddpg":
            return (self.mark is not None and self.last[0] - self.mark[0] >= args.seconds) or (
                now >= args.seconds + 300)
        return now >= args.seconds or (args.stop_when_solved and self.solved)

    @property
    def solved(self) -> bool:
        return self.solved_s is not None

    def result(self) -> dict:
        wall, steps, updates = self.last
        out = {
            "wall_s": round(wall, 3),
            "env_steps": steps,
            "updates": updates,
            "episodes": self.episodes,
            "recent_return": (round(sum(self.returns) / len(self.returns), 2)
                              if self.returns else None),
            "solved_s": None if self.solved_s is None else round(self.solved_s, 3),
            "solved_env_steps": self.solved_env_steps,
            "env_steps_per_s": None,
            "updates_per_s": None,
            "timed_s": None,
        }
        if self.mark is not None and wall > self.mark[0]:
            dt = wall - self.mark[0]
            out["timed_s"] = round(dt, 3)
            out["env_steps_per_s"] = (steps - self.mark[1]) / dt
            out["updates_per_s"] = (updates - self.mark[2]) / dt
        return out


def emit(peer: str, args: argparse.Namespace, tracker: Tracker, versions: dict, **extra) -> dict:
    row = {
        "peer": peer,
        "variant": args.variant,
        "task": args.task,
        "num_envs": args.envs,
        "seed": args.seed,
        "budget_s": args.seconds,
        **tracker.result(),
        "load_avg_1min": os.getloadavg()[0],
        "python": platform.python_version(),
        "versions": versions,
        **extra,
    }
    flops = flops_per_env_step(args.task)["per_env_step"]
    row["flops_per_env_step"] = flops
    row["gflops_per_s"] = (None if row["env_steps_per_s"] is None
                           else flops * row["env_steps_per_s"] / 1e9)
    print("PEER_RESULT " + json.dumps(row), flush=True)
    sys.stdout.flush()
    return row


def versions_of(*names: str) -> dict:
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
