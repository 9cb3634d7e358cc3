"""A learner outside JAX on the prioritized replay, through `ReplayHandle`.

Tabular Q-learning in NumPy on a corridor: states 0..N-1, actions left/right, reward 1 for
reaching the right end. The learner is plain NumPy, standing in for a PyTorch network (torch is
not among hrl's dependencies; the calls to the handle are the same with torch tensors turned
into NumPy arrays with `.numpy()`). Each step the handle writes the last batch's TD errors as
priorities and draws the next batch in one call (`update_and_sample`).

    .venv/bin/python examples/numpy_dqn.py --steps 3000
"""

from __future__ import annotations

import argparse

import numpy as np

from hrl.replay import ReplayHandle
from hrl.replay.buffer import make_prioritized_replay


def collect(rng: np.random.Generator, n_states: int, count: int) -> dict:
    """`count` random-policy transitions of the corridor, as NumPy arrays."""
    s = rng.integers(0, n_states - 1, count).astype(np.int32)
    a = rng.integers(0, 2, count).astype(np.int32)
    s2 = np.clip(s + np.where(a == 1, 1, -1), 0, n_states - 1).astype(np.int32)
    r = (s2 == n_states - 1).astype(np.float32)
    return {"obs": s, "action": a, "reward": r, "next_obs": s2, "done": r.copy()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--states", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    n, gamma, lr, batch = args.states, 0.9, 0.5, 32

    data = collect(rng, n, 4096)
    rb = make_prioritized_replay(capacity=4096, alpha=0.6)
    handle = ReplayHandle(rb, rb.init({k: v[0] for k, v in data.items()}), batch_size=batch)
    handle.add(data)  # NumPy in; NumPy or jax arrays out

    # A PRNG key is two uint32 words (what jax.random.PRNGKey(seed) holds): any pair will do,
    # e.g. [seed, step], so a NumPy learner never needs to import jax.
    def key(step: int) -> np.ndarray:
        return np.array([args.seed, step], np.uint32)

    q = np.zeros((n, 2), np.float32)
    sample = handle.sample(key(0), beta=0.4)
    for step in range(1, args.steps + 1):
        item = {k: np.asarray(v) for k, v in sample.items.items()}
        target = item["reward"] + gamma * (1 - item["done"]) * q[item["next_obs"]].max(axis=1)
        td = target - q[item["obs"], item["action"]]
        np.add.at(q, (item["obs"], item["action"]), lr * np.asarray(sample.weights) * td)
        beta = 0.4 + 0.6 * step / args.steps
        sample = handle.update_and_sample(sample.indices, td, key(step), beta)

    greedy_right = int((q[:-1].argmax(axis=1) == 1).sum())
    print(f"greedy policy goes right in {greedy_right} of {n - 1} states "
          f"(Q of the last step: {q[n - 2].round(3).tolist()}); replay path: {handle.path}")
    return {"greedy_right": greedy_right, "states": n - 1, "path": handle.path}


if __name__ == "__main__":
    main()
