"""MinAtar DQN throughput: hrl against a PureJaxRL/purejaxql-style jitted DQN on flashbax doing
the same work, side by side in one run, as a ratio.

    python experiments/peers/minatar_throughput.py [--game breakout] [--seconds 40] [--rounds 3]

The work, the same for both (experiments/configs/dqn_minatar_breakout.yaml): gymnax MinAtar,
M envs stepped L times per iteration (`--envs`, `--rollout`), then M * L / 4 SGD steps of batch
32 (train ratio 0.25) on MinAtar's published network (one 3x3 conv of 16 filters, SAME padding
as hrl's `agent.network: minatar`, then 128 hidden units), double DQN, Huber loss, Adam with
global-norm clipping, prioritized replay (alpha 0.6) over a 100k buffer, a hard target copy
every 1,000 SGD steps, epsilon-greedy actions. Each side runs in a fresh process (`--worker`),
its chunks of iterations in one jitted `lax.scan` each; the timed window starts at the first
chunk that ran SGD steps (compilation and `learning_starts` are left out) and runs for
`--seconds`. Rounds interleave the two sides, so a slow spell of the shared machine falls on
both; each figure is the median over rounds, and the ratio is hrl's over the peer's.

The peer is written for this comparison, after PureJaxRL's and purejaxql's structure (not
their code): flax + optax + flashbax's prioritised flat buffer, each transition with its own
s' (flashbax's `first` of a pair only). hrl runs the fused loop as `hrl train` runs it, and
again on one intra-op thread and on a thread per core (`train.cpu_threads`; `auto` gives a conv
net XLA's default, a thread per core, as the peer runs), so the hrl sides say how much of the
ratio is the thread count. The peer runs on XLA's default threads and, as `peer-1thread`, on
one (XLA:CPU's intra-op pool sized by the variable `hrl train` sets for `train.cpu_threads`),
so hrl is compared with the peer at the same thread count too.

Writes experiments/results/peers/minatar/<cores>core-<game>/ (or --out): throughput.csv (one
row per side and round), throughput.md (medians and ratios) and throughput.png;
`minatar_summary.py` gathers every run into one table.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_jax_flashbax import make_sgd_step  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `write` imports hrl when the script runs from a plain checkout
from hrl.runtime.cpu_backend import POOL_SIZE_VARIABLE  # noqa: E402

CONFIG = ROOT / "experiments" / "configs" / "dqn_minatar_breakout.yaml"
OUT = ROOT / "experiments" / "results" / "peers" / "minatar"
GAMES = {"breakout": "Breakout-MinAtar", "space_invaders": "SpaceInvaders-MinAtar",
         "asterix": "Asterix-MinAtar", "freeway": "Freeway-MinAtar"}
# The settings both sides take (the config's, but learning from 1,000 transitions so that the
# timed window opens soon).
S = {"batch_size": 32, "train_ratio": 0.25, "capacity": 100_000, "learning_rate": 2.5e-4,
     "max_grad_norm": 10.0, "gamma": 0.99, "target_update_period": 1000, "eps_start": 1.0,
     "eps_end": 0.1, "eps_decay_steps": 50_000, "alpha": 0.6, "beta": 0.4,
     "learning_starts": 1000, "conv_filters": 16, "hidden": 128}
# hrl as `hrl train` runs it (`train.cpu_threads: auto`), hrl on one intra-op thread and on
# every core (`train.cpu_threads` 1 and the machine's cores), the peer (XLA's default: a
# thread per core) and the peer on one intra-op thread.
SIDES = ("hrl", "hrl-1thread", "hrl-allthreads", "peer", "peer-1thread")
HRL_THREADS = {"hrl": "auto", "hrl-1thread": 1, "hrl-allthreads": os.cpu_count() or 1}
PEER_THREADS = {"peer": None, "peer-1thread": 1}  # None: XLA's default
# Which peer side each hrl side is compared with at the same thread count.
SAME_THREADS = {"hrl-1thread": "peer-1thread", "hrl-allthreads": "peer"}


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", choices=sorted(GAMES), default="breakout")
    p.add_argument("--envs", type=int, default=8, help="M envs per actor step (default 8)")
    p.add_argument("--rollout", type=int, default=8, help="L actor steps per iteration")
    p.add_argument("--seconds", type=float, default=40.0, help="timed seconds per run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (default experiments/results/peers/minatar/"
                   "<cores>core-<game>)")
    p.add_argument("--sides", default=",".join(SIDES),
                   help="comma-separated subset of " + ", ".join(SIDES) + " (default: all); "
                   "the peer is always run, as the ratio's denominator")
    p.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)  # a child: one run
    args = p.parse_args(argv)
    if args.envs < 1 or args.rollout < 1 or (args.envs * args.rollout) % 4:
        p.error(f"--envs x --rollout must be a positive multiple of 4 (train ratio 0.25), got "
                f"{args.envs} x {args.rollout}")
    sides = [x for x in args.sides.split(",") if x]
    if not set(sides) <= set(SIDES):
        p.error(f"--sides: unknown side(s) {sorted(set(sides) - set(SIDES))}; known: "
                f"{', '.join(SIDES)}")
    args.sides = [x for x in SIDES if x in sides or x == "peer"]
    args.out = args.out or OUT / f"{os.cpu_count()}core-{args.game}"
    if args.seconds <= 0 or args.rounds < 1:
        p.error(f"--seconds must be > 0 and --rounds >= 1, got {args.seconds}, {args.rounds}")
    return args


def timed(run_chunk, state, counts, seconds: float) -> dict:
    """Runs chunks until `seconds` past the first chunk that ran SGD steps; env steps and SGD
    steps per second over that window. `counts(state)` -> (env steps, SGD steps)."""
    import jax

    mark, t_start = None, time.perf_counter()
    while True:
        state = jax.block_until_ready(run_chunk(state))
        now = time.perf_counter()
        steps, sgd = counts(state)
        if mark is None:
            if sgd > 0:
                mark = (now, steps, sgd)
            elif now - t_start > 600:
                raise RuntimeError("no SGD step within 600 s")
            continue
        if now - mark[0] >= seconds:
            dt = now - mark[0]
            return {"env_steps_per_s": (steps - mark[1]) / dt,
                    "sgd_steps_per_s": (sgd - mark[2]) / dt, "timed_s": dt,
                    "setup_s": mark[0] - t_start, "device": jax.devices()[0].device_kind}


def run_hrl(args) -> dict:
    from hrl.config import load_config
    from hrl.runtime import build, initial_state

    steps = args.envs * args.rollout
    cfg = load_config(CONFIG, [
        f"env.name=gymnax:{GAMES[args.game]}", f"env.num_envs={args.envs}",
        f"train.rollout_length={args.rollout}", f"train.batch_size={S['batch_size']}",
        f"train.train_ratio={S['train_ratio']}", f"replay.capacity={S['capacity']}",
        f"replay.alpha={S['alpha']}", f"replay.beta_start={S['beta']}",
        f"replay.beta_end={S['beta']}", f"agent.learning_rate={S['learning_rate']}",
        f"agent.target_update_period={S['target_update_period']}",
        f"train.learning_starts={S['learning_starts']}", "train.executor=fused",
        f"train.chunk_env_steps={max(1, 2048 // steps) * steps}", "train.eval_every=0",
        f"train.cpu_threads={HRL_THREADS[args.worker]}",
        "train.total_env_steps=1000000000", "log.progress=false"])
    built = build(cfg)
    iters = cfg.train.chunk_env_steps // steps

    def run_chunk(state):
        return built.loop.run(state, iters)[0]

    return timed(run_chunk, initial_state(built),
                 lambda s: (int(s.env_steps), int(s.updates)), args.seconds)


def make_peer(game: str, num_envs: int, rollout: int):
    """(init, run_chunk) of the peer: one jitted scan per chunk of iterations; its SGD step is
    peer_jax_flashbax's (`make_sgd_step`)."""
    import flashbax as fbx
    import flax.linen as nn
    import gymnax
    import jax
    import jax.numpy as jnp
    import optax

    env, env_params = gymnax.make(GAMES[game])
    n_actions = env.action_space(env_params).n
    sgd_per_iter = int(num_envs * rollout * S["train_ratio"])

    class QNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(S["conv_filters"], (3, 3), padding="SAME")(
                x.astype(jnp.float32)))
            x = nn.relu(nn.Dense(S["hidden"])(x.reshape(x.shape[0], -1)))
            return nn.Dense(n_actions)(x)

    net = QNet()
    tx = optax.chain(optax.clip_by_global_norm(S["max_grad_norm"]),
                     optax.adam(S["learning_rate"]))
    buffer = fbx.make_prioritised_flat_buffer(
        max_length=S["capacity"], min_length=S["batch_size"],
        sample_batch_size=S["batch_size"], add_batch_size=num_envs,
        priority_exponent=S["alpha"], device="cpu")

    def init(key):
        k_env, k_net, key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_env, num_envs), env_params)
        params = net.init(k_net, obs[:1])
        item = {"obs": obs[0], "action": jnp.int32(0), "reward": jnp.float32(0),
                "next_obs": obs[0], "done": jnp.float32(0)}
        return {"key": key, "obs": obs, "env_state": env_state, "params": params,
                "target": params, "opt": tx.init(params), "buffer": buffer.init(item),
                "env_steps": jnp.int32(0), "updates": jnp.int32(0)}

    sgd_step = make_sgd_step(net, tx, buffer, S)

    def actor_step(st, key):
        k_act, k_eps, k_env = jax.random.split(key, 3)
        frac = jnp.minimum(st["env_steps"] / S["eps_decay_steps"], 1.0)
        eps = S["eps_start"] + frac * (S["eps_end"] - S["eps_start"])
        greedy = jnp.argmax(net.apply(st["params"], st["obs"]), axis=1)
        rand = jax.random.randint(k_act, (num_envs,), 0, n_actions)
        action = jnp.where(jax.random.uniform(k_eps, (num_envs,)) < eps, rand, greedy)
        obs, env_state, reward, term, _, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_env, num_envs), st["env_state"], action, env_params)
        # gymnax auto-resets: s' is the last state before it (`final_observation`), so a
        # time-limit truncation bootstraps from it and only termination stops the bootstrap.
        buf = buffer.add(st["buffer"], {"obs": st["obs"], "action": action.astype(jnp.int32),
                                        "reward": reward.astype(jnp.float32),
                                        "next_obs": info["final_observation"],
                                        "done": term.astype(jnp.float32)})
        return {**st, "obs": obs, "env_state": env_state, "buffer": buf,
                "env_steps": st["env_steps"] + num_envs}, None

    def iteration(st, _):
        key, k_roll, k_sgd = jax.random.split(st["key"], 3)
        st, _ = jax.lax.scan(actor_step, {**st, "key": key}, jax.random.split(k_roll, rollout))
        rows = S["capacity"] // num_envs
        size = jnp.minimum(st["env_steps"] // num_envs, rows) * num_envs
        carry = (st["params"], st["target"], st["opt"], st["buffer"], st["updates"], size)

        def learn(c):
            return jax.lax.scan(sgd_step, c, jax.random.split(k_sgd, sgd_per_iter))[0]

        ready = (st["env_steps"] >= S["learning_starts"]) & buffer.can_sample(st["buffer"])
        params, target, opt, buf, updates, _ = jax.lax.cond(ready, learn, lambda c: c, carry)
        return {**st, "params": params, "target": target, "opt": opt, "buffer": buf,
                "updates": updates}, None

    iters = max(1, 2048 // (num_envs * rollout))

    @jax.jit
    def run_chunk(st):
        return jax.lax.scan(iteration, st, None, length=iters)[0]

    return jax.jit(init), run_chunk


def run_peer(args) -> dict:
    import jax

    init, run_chunk = make_peer(args.game, args.envs, args.rollout)
    return timed(run_chunk, init(jax.random.PRNGKey(0)),
                 lambda s: (int(s["env_steps"]), int(s["updates"])), args.seconds)


def child(side: str, args) -> dict:
    """One run of `side` in a fresh Python; its result line."""
    cmd = [sys.executable, __file__, "--worker", side, "--game", args.game, "--envs",
           str(args.envs), "--rollout", str(args.rollout), "--seconds", str(args.seconds)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if PEER_THREADS.get(side) is not None:  # the pool size hrl's cpu_threads sets, for the peer
        env[POOL_SIZE_VARIABLE] = str(PEER_THREADS[side])
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False, env=env)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode or not lines:
        raise RuntimeError(f"{side} run failed (exit {done.returncode}): "
                           f"{done.stderr.strip().splitlines()[-1:]}")
    return json.loads(lines[-1][len("RESULT "):])


def _threads(side: str):
    """The intra-op threads a side runs on, as the table shows them."""
    if side in HRL_THREADS:
        return HRL_THREADS[side]
    return PEER_THREADS[side] or "XLA default"


def _same(med: dict, side: str, peer: str) -> float:
    return med[side]["sgd_steps_per_s"] / med[peer]["sgd_steps_per_s"]


def write(rows: list[dict], args) -> None:
    from matplotlib.figure import Figure

    from hrl.mapping.profile import cpu_name

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "throughput.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    med = {side: {k: statistics.median(r[k] for r in rows if r["side"] == side)
                  for k in ("env_steps_per_s", "sgd_steps_per_s")} for side in args.sides}
    ratio = {side: {k: med[side][k] / med["peer"][k] for k in med[side]} for side in args.sides}
    devices = sorted({str(r.get("device", "cpu")) for r in rows})
    import jax

    lines = [
        f"# MinAtar DQN throughput: hrl against a jitted DQN on flashbax ({args.game})", "",
        f"{cpu_name()}, {os.cpu_count()} cores, JAX device {', '.join(devices)}, jax "
        f"{jax.__version__}. Regenerate: "
        f"`.venv/bin/python experiments/peers/minatar_throughput.py --game {args.game} "
        f"--envs {args.envs} --rollout {args.rollout} --seconds {args.seconds:g} --rounds "
        f"{args.rounds}" + (f" --sides {','.join(args.sides)}`" if args.sides != list(SIDES)
                              else "`") + ".", "",
        f"M={args.envs} envs x L={args.rollout} actor steps, then {args.envs * args.rollout // 4} "
        "SGD steps of batch 32 per iteration; each run in a fresh process, timed for "
        f"{args.seconds:g} s from its first chunk with SGD steps; sides interleaved over "
        f"{args.rounds} rounds, medians shown (the script's docstring says what both do).", "",
        "| side | intra-op threads | env steps/s | SGD steps/s | / peer |", "|---|---|---|---|---|",
        *(f"| {side} | {_threads(side)} | "
          f"{med[side]['env_steps_per_s']:,.0f} | {med[side]['sgd_steps_per_s']:,.0f} | "
          f"**{ratio[side]['sgd_steps_per_s']:.2f}x** |" for side in args.sides), "",
        "`hrl` is the kit as `hrl train` runs it (`train.cpu_threads: auto`).", "",
        *(f"At the same threads, {side} / {peer}: **{_same(med, side, peer):.2f}x** SGD "
          f"steps/s." for side, peer in SAME_THREADS.items()
          if side in args.sides and peer in args.sides), ""]
    (args.out / "throughput.md").write_text("\n".join(lines))
    fig = Figure(figsize=(6, 3.2), dpi=110)
    ax = fig.subplots()
    for i, side in enumerate(args.sides):
        xs = [r["round"] for r in rows if r["side"] == side]
        ax.plot(xs, [r["sgd_steps_per_s"] for r in rows if r["side"] == side], "o-",
                color=f"C{i}", label=f"{side}: median {med[side]['sgd_steps_per_s']:,.0f}")
    ax.set_xlabel("round")
    ax.set_ylabel("SGD steps/s (batch 32)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"MinAtar {args.game} DQN: hrl / peer = "
                 + (f"{ratio['hrl']['sgd_steps_per_s']:.2f}x (as hrl train runs it)"
                    if "hrl" in ratio else "see the table"), fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out / "throughput.png")
    print("\n".join(lines))


def main(argv=None) -> int:
    args = _parse(argv)
    if args.worker:
        got = (run_peer if args.worker in PEER_THREADS else run_hrl)(args)
        print("RESULT " + json.dumps(got), flush=True)
        return 0
    rows = []
    for r in range(args.rounds):
        for side in args.sides:
            got = child(side, args)
            rows.append({"round": r + 1, "side": side,
                         **{k: round(v, 2) if isinstance(v, float) else v
                            for k, v in got.items()}})
            print(f"round {r + 1}/{args.rounds} {side}: {got['env_steps_per_s']:,.0f} env "
                  f"steps/s, {got['sgd_steps_per_s']:,.0f} SGD steps/s", flush=True)
    write(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
