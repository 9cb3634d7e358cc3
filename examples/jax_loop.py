"""The prioritized replay buffer inside your own jitted JAX training loop.

A linear model learns y = x . w_true from noisy data stored in the buffer. Each step samples a
batch by priority, takes an importance-weighted SGD step and writes the new absolute errors
back as priorities, all inside one `lax.scan`: the buffer's functions are pure
(`f(state, ...) -> state`), so they jit, scan and vmap like any JAX code.

    .venv/bin/python examples/jax_loop.py --steps 2000
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from hrl.replay.buffer import make_prioritized_replay


def make_train(steps: int, batch_size: int = 64, capacity: int = 4096, dim: int = 8):
    """`train(key) -> (w, losses)`: fill the buffer, then `steps` prioritized SGD steps."""
    rb = make_prioritized_replay(capacity=capacity, alpha=0.6, fanout=16)

    def train(key):
        k_w, k_x, k_noise, k_loop = jax.random.split(key, 4)
        w_true = jax.random.normal(k_w, (dim,))
        xs = jax.random.normal(k_x, (capacity, dim))
        ys = xs @ w_true + 0.1 * jax.random.normal(k_noise, (capacity,))
        state = rb.init({"x": xs[0], "y": ys[0]})  # one item, no batch dimension
        state = rb.add(state, {"x": xs, "y": ys})  # new items get the largest priority seen

        def step(carry, k):
            state, w, t = carry
            beta = 0.4 + 0.6 * t / steps  # annealed towards 1
            batch = rb.sample(state, k, batch_size=batch_size, beta=beta)
            x, y = batch.items["x"], batch.items["y"]

            def loss_fn(w):
                err = x @ w - y
                return jnp.mean(batch.weights * err**2), err

            (loss, err), grad = jax.value_and_grad(loss_fn, has_aux=True)(w)
            state = rb.update(state, batch.indices, err)  # |err| + eps becomes the priority
            return (state, w - 0.05 * grad, t + 1), loss

        keys = jax.random.split(k_loop, steps)
        (state, w, _), losses = jax.lax.scan(step, (state, jnp.zeros(dim), 0), keys)
        return w, losses, w_true

    return train


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args(argv)
    train = jax.jit(jax.vmap(make_train(args.steps)))  # several seeds in one program
    w, losses, w_true = train(jax.random.split(jax.random.PRNGKey(0), args.seeds))
    first, last = float(losses[:, :10].mean()), float(losses[:, -10:].mean())
    error = float(jnp.abs(w - w_true).max())
    print(f"weighted loss {first:.3f} -> {last:.4f} over {args.steps} steps, "
          f"{args.seeds} seeds; largest weight error {error:.3f}")
    return {"first_loss": first, "last_loss": last, "weight_error": error}


if __name__ == "__main__":
    main()
