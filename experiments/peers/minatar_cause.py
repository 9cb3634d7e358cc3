"""Why hrl's MinAtar DQN collapsed on two intra-op threads: the SGD step of MinAtar's network
(one 3x3 conv of 16 filters, 128 hidden units, batch 32, double-DQN Huber loss, Adam after
global-norm clipping), 16 steps per jitted `lax.scan`, in a 2x2 grid:

* convolution as `lax.conv` (flax `nn.Conv`) or as slices and one matmul (hrl's `SlicedConv`);
* the optimizer on each parameter array, or on one flat vector of all 205,907 (`optax.flatten`,
  what hrl's optimizer did for every network before).

    python experiments/peers/minatar_cause.py [--threads 1 2] [--seconds 1.0]

Each thread count runs in a fresh process (XLA:CPU sizes its pool once, `NPROC`); inside it
the four cases are interleaved over 3 rounds and the median ms per SGD step is kept. Writes
experiments/results/peers/minatar/cause.csv and cause.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "peers" / "minatar"
CASES = ("conv-op+per-array", "conv-op+flat", "sliced+per-array", "sliced+flat")


def worker(seconds: float) -> dict:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    from hrl.agents.networks import ConvMLP

    class ConvOp(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (3, 3), padding="SAME")(x.astype(jnp.float32)))
            x = nn.relu(nn.Dense(128)(x.reshape(x.shape[0], -1)))
            return nn.Dense(3)(x)

    obs = jax.random.bernoulli(jax.random.PRNGKey(1), 0.1, (32, 10, 10, 4))
    act, w = jnp.zeros(32, jnp.int32), jnp.ones(32)

    def make(net, flat):
        tx = optax.chain(optax.clip_by_global_norm(10.0), optax.adam(2.5e-4))
        tx = optax.flatten(tx) if flat else tx
        p = net.init(jax.random.PRNGKey(0), obs[:1])

        @jax.jit
        def run(c):
            def body(c, _):
                params, target, opt = c

                def loss_fn(p):
                    q = net.apply(p, obs)
                    qt = jnp.take_along_axis(q, act[:, None], axis=1)[:, 0]
                    best = jnp.argmax(net.apply(p, obs), 1)
                    qn = jnp.take_along_axis(net.apply(target, obs), best[:, None], axis=1)[:, 0]
                    td = qt - jax.lax.stop_gradient(1.0 + 0.99 * qn)
                    return jnp.mean(w * optax.huber_loss(td)), td

                (_, _), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
                step, opt = tx.update(g, opt, params)
                return (optax.apply_updates(params, step), target, opt), None

            return jax.lax.scan(body, c, None, length=16)[0]

        return run, (p, p, tx.init(p))

    sliced = ConvMLP(((16, 3, 1),), (128,), 3)
    cases = dict(zip(CASES, (make(ConvOp(), False), make(ConvOp(), True),
                             make(sliced, False), make(sliced, True)), strict=True))
    state = {k: jax.block_until_ready(f(s)) for k, (f, s) in cases.items()}
    times = {k: [] for k in cases}
    for _ in range(3):
        for k, (f, _) in cases.items():
            t0, n = time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds:
                state[k] = jax.block_until_ready(f(state[k]))
                n += 1
            times[k].append((time.perf_counter() - t0) / n / 16 * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print("RESULT " + json.dumps(worker(a.seconds)), flush=True)
        return 0
    rows = []
    for t in a.threads:
        done = subprocess.run([sys.executable, __file__, "--worker", "--seconds",
                               str(a.seconds)], capture_output=True, text=True, check=True,
                              env={**os.environ, "NPROC": str(t), "PYTHONPATH": str(ROOT)})
        got = json.loads(done.stdout.split("RESULT ")[-1])
        rows += [{"threads": t, "case": k, "ms_per_sgd_step": round(v, 3)} for k, v in got.items()]
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "cause.csv").open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    cmd = ("python experiments/peers/minatar_cause.py --threads "
           + " ".join(map(str, a.threads)) + f" --seconds {a.seconds:g}")
    lines = ["# Why hrl's MinAtar DQN collapsed on 2 threads: ms per SGD step", "",
             f"Regenerate: `{cmd}` (the script's docstring says what is timed). "
             f"{os.cpu_count()} cores; medians of 3 interleaved rounds per process.", "",
             "| threads | " + " | ".join(CASES) + " |", "|---|" + "---|" * len(CASES)]
    for t in a.threads:
        ms = {r["case"]: r["ms_per_sgd_step"] for r in rows if r["threads"] == t}
        lines.append(f"| {t} | " + " | ".join(f"{ms[c]:.2f}" for c in CASES) + " |")
    (OUT / "cause.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
