"""hrl beside its peers, in one session, interleaved: each round runs every peer once per
setting, the peers' order rotating from round to round, so the machine's drift (other tenants,
clocks) hits all alike.

    make peers                                   # builds the peers' venvs, then this script
    .venv/bin/python experiments/peers/run_peers.py [--rounds 2] [--seconds 60] [--quick]
    .venv/bin/python experiments/peers/run_peers.py --report-only   # tables, plot, README rows
                                                                    # from peers.csv again

Peers (each runs as a subprocess of its own venv; one `PEER_RESULT {json}` line per run):
  hrl-gymnax     hrl's fused loop on gymnax (JAX) envs                    (.venv)
  hrl-gymnasium  hrl's host loop on gymnasium envs, the envs the Python peers step (.venv)
  jax-flashbax   a PureJaxRL-style jitted DQN with flashbax's prioritized buffer (.venv)
  sb3            Stable-Baselines3 DQN (uniform replay: it has no PER) and DDPG (.peers/sb3)
  tianshou       Tianshou DQN + PrioritizedVectorReplayBuffer, DDPG (.peers/tianshou)
  rllib          RLlib DQN + PrioritizedEpisodeReplayBuffer; no DDPG/TD3 in RLlib (.peers/rllib)
Settings: experiments/peers/common.py (DQN, DDPG); what each peer's defaults differ in is in
DEFAULTS_DIFFER below and in peers.md.

Three parts:
* DQN + PER on CartPole-v1, M = 1 and 8 envs: each run trains from scratch for at most
  --seconds (stopping when the mean of the last 10 returns reaches 475), and reports env steps/s
  and SGD updates/s over the part after learning started, and the wall time to 475 (from the
  start of set-up, compiles included, imports not);
* DDPG on Pendulum-v1, M = 1: --ddpg-seconds of training after learning started, the same
  rates, and the network FLOP rate (common.flops_per_env_step) against this CPU's peak
  (float32 1024x1024 GEMM, numpy and jax, best of both, measured at each round's start and end);
* replay, N=2^20, B=256, K=16: sample+update and insert per call and in a fused lax.scan
  (experiments/bench/bench_replay.py's measurements, hrl native vs cpprb vs flashbax; cpprb has no
  fused mode).

Writes experiments/results/peers/peers.{csv,md,png} and, with --readme, the rows between the
`<!-- peers:begin -->` and `<!-- peers:end -->` markers of docs/index.md (the site's home).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "experiments" / "results" / "peers"
MARK = "PEER_RESULT "
README_BEGIN, README_END = "<!-- peers:begin -->", "<!-- peers:end -->"

sys.path.insert(0, str(HERE))
from common import DDPG, DQN, flops_per_env_step  # noqa: E402

MAIN = "main"  # the interpreter running this script (.venv)
PEERS = {
    # name: (venv, script, extra args, tasks)
    "hrl-gymnax": (MAIN, "peer_hrl.py", ["--variant", "gymnax"], ("dqn", "ddpg")),
    "hrl-gymnasium": (MAIN, "peer_hrl.py", ["--variant", "gymnasium"], ("dqn", "ddpg")),
    "jax-flashbax": (MAIN, "peer_jax_flashbax.py", [], ("dqn",)),
    "sb3": (".peers/sb3", "peer_sb3.py", [], ("dqn", "ddpg")),
    "tianshou": (".peers/tianshou", "peer_tianshou.py", [], ("dqn", "ddpg")),
    "rllib": (".peers/rllib", "peer_rllib.py", [], ("dqn",)),
}
REPLAY_LIBS = ("hrl", "cpprb", "flashbax")

# Where a peer's defaults differ from the settings given to every peer (common.py), and what
# this comparison does about it. No peer is tuned down: each takes the shared settings through
# its own keywords, and torch peers run with 1 intra-op thread (4.7x faster than 2 for SB3's
# DQN on this 2-core machine).
DEFAULTS_DIFFER = [
    ("all torch peers", "torch uses every core for intra-op parallelism",
     "torch.set_num_threads(1): measured 4.7x faster than 2 threads here (SB3 DQN, M=1)"),
    ("hrl", "beta annealed 0.4 -> 1.0 over training; 128x128 net, batch 64, 3-step returns in "
     "its dqn_cartpole config", "beta fixed at 0.4, 64x64, batch 32, 1-step, like the others"),
    ("sb3", "no prioritized replay (SB3 and sb3-contrib ship none); DQN not double; lr 1e-4, "
     "train_freq 4, target update 10k, learning_starts 100, eps_end 0.05",
     "uniform ReplayBuffer (labelled); the shared lr, train_freq 1 with M gradient steps, "
     "target 100, learning_starts 1000, eps 1 -> 0.02 over 10k"),
    ("tianshou", "no gradient clipping in its DQN; no learning_starts in its trainer; MSE loss; "
     "beta fixed", "1000 random warm-up steps before the trainer (its usual idiom); Huber "
     "(huber_loss_delta=1); no clipping (not exposed by its DQN)"),
    ("rllib", "lr 5e-4, dueling head of [256] on a 256x256 encoder, grad_clip 40, target "
     "update 500, eps 1 -> 0.05 over 10k, replay ratio 1 batch per fragment; no DDPG or TD3",
     "the shared lr, a 64x64 encoder with a linear head, dueling off, clip 10, target 100, "
     "training_intensity 32; no Pendulum row"),
    ("jax-flashbax", "(written here; PureJaxRL's DQN uses uniform flashbax buffers, 10 envs, "
     "batch 64)", "the shared settings, flashbax's prioritised flat buffer"),
    ("sb3, tianshou (DDPG)", "uniform replay", "hrl's DDPG uses its prioritized replay"),
]


# ----------------------------------------------------------------------------- running


def venv_python(venv: str) -> Path:
    return Path(sys.executable) if venv == MAIN else ROOT / venv / "bin" / "python"


def available(peer: str) -> str | None:
    """None when the peer can run, else why not."""
    venv = PEERS[peer][0]
    py = venv_python(venv)
    if not py.exists():
        return f"{venv} not built (make peers builds it)"
    return None


def parse_results(text: str) -> list[dict]:
    """The `PEER_RESULT {json}` lines of a peer's output, in order; other lines ignored."""
    rows = []
    for line in text.splitlines():
        at = line.find(MARK)
        if at >= 0:
            rows.append(json.loads(line[at + len(MARK):]))
    return rows


def run_one(python: Path, script: str, args: list[str], timeout: float, log) -> tuple[list, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONWARNINGS", "ignore")
    env["RAY_AUTH_MODE"] = "disabled"
    cmd = [str(python), str(HERE / script), *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=ROOT)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = f"timed out after {timeout:.0f} s", -9
    log.write(f"$ {' '.join(cmd)}\n{out}\n{err[-4000:]}\nrc={rc}\n\n")
    log.flush()
    rows = parse_results(out)
    error = "" if rows else (err.strip().splitlines() or [f"rc={rc}"])[-1][:300]
    return rows, error


def measure_peak(size: int = 1024, reps: int = 20) -> dict:
    """float32 GEMM GFLOP/s on this CPU, numpy (its BLAS) and jax (XLA), best of `reps`."""
    out = {}
    a = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    flop = 2 * size**3
    a @ a
    best = min(_timeit(lambda: a @ a) for _ in range(reps))
    out["numpy"] = flop / best / 1e9
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(a)
    f = jax.jit(lambda m: m @ m)
    f(x).block_until_ready()
    best = min(_timeit(lambda: f(x).block_until_ready()) for _ in range(reps))
    out["jax"] = flop / best / 1e9
    out["peak"] = max(out["numpy"], out["jax"])
    return out


def _timeit(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def schedule(args) -> list[dict]:
    """Every run of the session, in order: round by round, DQN (M by M), DDPG, replay; the
    peers' order rotates by one each round."""
    runs = []
    names = [p for p in args.peers if p in PEERS]
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)] if names else []
        for m in args.envs if "dqn" in args.parts else ():
            for p in order:
                if "dqn" in PEERS[p][3]:
                    runs.append({"round": r, "peer": p, "task": "dqn", "num_envs": m})
        if args.ddpg_seconds > 0 and "ddpg" in args.parts:
            for p in order:
                if "ddpg" in PEERS[p][3]:
                    runs.append({"round": r, "peer": p, "task": "ddpg", "num_envs": 1})
        if not args.skip_replay and "replay" in args.parts:
            libs = list(REPLAY_LIBS[r % 3:] + REPLAY_LIBS[: r % 3])
            for lib in libs:
                runs.append({"round": r, "peer": lib, "task": "replay", "num_envs": None})
    return runs


def execute(run: dict, args, log) -> list[dict]:
    if run["task"] == "replay":
        extra = ["--library", run["peer"], "--reps", str(args.replay_reps), "--log2-n",
                 str(args.replay_log2_n)]
        rows, error = run_one(Path(sys.executable), "peer_replay.py", extra, 900, log)
    else:
        venv, script, fixed, _ = PEERS[run["peer"]]
        seconds = args.seconds if run["task"] == "dqn" else args.ddpg_seconds
        extra = [*fixed, "--task", run["task"], "--envs", str(run["num_envs"]), "--seconds",
                 str(seconds), "--seed", str(run["round"])]
        if run["task"] == "dqn":
            extra.append("--stop-when-solved")
        rows, error = run_one(venv_python(venv), script, extra, seconds + 300, log)
    if not rows:
        return [{**run, "error": error}]
    return [{**row, **run, "error": ""} for row in rows]


# ----------------------------------------------------------------------------- report


CSV_FIELDS = [
    "round", "peer", "task", "num_envs", "variant", "op", "mode", "env_impl", "loop", "replay",
    "env_steps_per_s", "updates_per_s", "gflops_per_s", "peak_gflops", "solved_s",
    "solved_env_steps", "env_steps", "updates", "episodes", "recent_return", "wall_s",
    "timed_s", "first_chunk_incl_compile_s", "process_start_to_train_s", "median_us", "p25_us",
    "p75_us", "cpu_us", "reps", "n", "b", "k", "path", "budget_s", "load_avg_1min", "versions",
    "error",
]


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            row = dict(row)
            if isinstance(row.get("versions"), dict):
                row["versions"] = json.dumps(row["versions"], sort_keys=True)
            w.writerow(row)


def read_csv(path: Path) -> list[dict]:
    rows = []
    numeric = {"env_steps_per_s", "updates_per_s", "gflops_per_s", "peak_gflops", "solved_s",
               "solved_env_steps", "env_steps", "updates", "episodes", "recent_return",
               "wall_s", "timed_s", "first_chunk_incl_compile_s", "process_start_to_train_s",
               "median_us", "p25_us", "p75_us", "cpu_us", "reps", "n", "b", "k", "budget_s",
               "load_avg_1min", "round", "num_envs"}
    with path.open() as f:
        for row in csv.DictReader(f):
            for key in numeric & row.keys():
                row[key] = float(row[key]) if row[key] not in ("", None) else None
            for key in ("round", "num_envs", "n", "b", "k"):
                if row.get(key) is not None:
                    row[key] = int(row[key])
            row["versions"] = json.loads(row["versions"]) if row.get("versions") else {}
            rows.append(row)
    return rows


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def aggregate(rows: list[dict]) -> dict:
    """Medians over rounds: training rows per (task, peer, M); replay rows per (peer, op,
    mode). Each carries how many runs it has, and for DQN how many reached 475."""
    train, replay = {}, {}
    for row in rows:
        if row.get("error"):
            continue
        if row["task"] == "replay":
            replay.setdefault((row["peer"], row["op"], row["mode"]), []).append(row)
        else:
            train.setdefault((row["task"], row["peer"], row["num_envs"]), []).append(row)
    out_train = {}
    for key, group in train.items():
        peak = _median(r.get("peak_gflops") for r in group)
        gflops = _median(r.get("gflops_per_s") for r in group)
        solved = [r["solved_s"] for r in group if r.get("solved_s") is not None]
        out_train[key] = {
            "runs": len(group),
            "env_steps_per_s": _median(r.get("env_steps_per_s") for r in group),
            "updates_per_s": _median(r.get("updates_per_s") for r in group),
            "gflops_per_s": gflops,
            "peak_gflops": peak,
            "peak_fraction": (gflops / peak) if gflops and peak else None,
            "solved_runs": len(solved),
            "solved_s": _median(solved),
            "solved_env_steps": _median(r.get("solved_env_steps") for r in group
                                        if r.get("solved_s") is not None),
            "budget_s": group[0].get("budget_s"),
            "env_impl": group[0].get("env_impl", ""),
            "replay": group[0].get("replay", ""),
            "loop": group[0].get("loop", ""),
            "recent_return": _median(r.get("recent_return") for r in group),
        }
    out_replay = {}
    for key, group in replay.items():
        out_replay[key] = {
            "runs": len(group),
            "median_us": _median(r["median_us"] for r in group),
            "min_us": min(r["median_us"] for r in group),
            "max_us": max(r["median_us"] for r in group),
            "path": group[0].get("path", ""),
        }
    return {"train": out_train, "replay": out_replay}


def versions(rows: list[dict]) -> dict:
    """peer -> {package: version}, from the runs' own reports."""
    out = {}
    for row in rows:
        if row.get("versions"):
            out.setdefault(row["peer"], {}).update(row["versions"])
    return out


def _fmt(x, digits: int = 0, suffix: str = "") -> str:
    if x is None:
        return "-"
    return f"{x:,.{digits}f}{suffix}"


def _solved(a: dict) -> str:
    if not a["solved_runs"]:
        return f"not within {a['budget_s']:.0f} s (0/{a['runs']})"
    return f"{a['solved_s']:.1f} s ({a['solved_runs']}/{a['runs']})"


def dqn_table(agg: dict, peers: list[str], envs: list[int]) -> list[str]:
    lines = [
        "| peer | env | replay | M | env steps/s | SGD updates/s | GFLOP/s | time to 475 "
        "(solved runs) | env steps to 475 |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for m in envs:
        for p in peers:
            a = agg["train"].get(("dqn", p, m))
            if a is None:
                continue
            lines.append(
                f"| {p} | {a['env_impl']} | {a['replay']} | {m} | {_fmt(a['env_steps_per_s'])} "
                f"| {_fmt(a['updates_per_s'])} | {_fmt(a['gflops_per_s'], 2)} | {_solved(a)} | "
                f"{_fmt(a['solved_env_steps'])} |")
    return lines


def ddpg_table(agg: dict, peers: list[str]) -> list[str]:
    lines = [
        "| peer | env | replay | env steps/s | SGD updates/s | network GFLOP/s | of peak |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for p in peers:
        a = agg["train"].get(("ddpg", p, 1))
        if a is None:
            continue
        frac = None if a["peak_fraction"] is None else 100 * a["peak_fraction"]
        lines.append(
            f"| {p} | {a['env_impl']} | {a['replay']} | {_fmt(a['env_steps_per_s'])} | "
            f"{_fmt(a['updates_per_s'])} | {_fmt(a['gflops_per_s'], 2)} | {_fmt(frac, 2, '%')} |")
    return lines


def replay_table(agg: dict) -> list[str]:
    lines = [
        "| library | op | mode | median us per call or step (min-max over rounds) | runs |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for (lib, op, mode), a in sorted(agg["replay"].items()):
        lines.append(f"| {lib} ({a['path']}) | {op} | {mode} | {a['median_us']:.0f} "
                     f"({a['min_us']:.0f}-{a['max_us']:.0f}) | {a['runs']} |")
    return lines


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores visible, {platform.system()}"


def markdown(rows: list[dict], meta: dict) -> str:
    agg = aggregate(rows)
    peers = [p for p in PEERS if any(r["peer"] == p for r in rows)]
    envs = sorted({r["num_envs"] for r in rows if r["task"] == "dqn" and r.get("num_envs")})
    loads = [r["load_avg_1min"] for r in rows if r.get("load_avg_1min") is not None]
    peaks = [r["peak_gflops"] for r in rows if r.get("peak_gflops")]
    dqn_f, ddpg_f = flops_per_env_step("dqn"), flops_per_env_step("ddpg")
    rep = next((r for r in rows if r["task"] == "replay" and r.get("n")), None)
    size = (f"N=2^{int(np.log2(rep['n']))}, B={rep['b']}, K={rep['k']}" if rep
            else "N=2^20, B=256, K=16")
    lines = [
        "# hrl beside its peers",
        "",
        f"Machine: {meta.get('machine', machine())}. Command: `{meta.get('command', '')}`.",
        *[f"Re-run afterwards, replacing those rows: `{x['command']}` ({x['started']} to "
          f"{x['finished']})." for x in meta.get("rerun", [])],
        f"Rounds: {meta.get('rounds', '?')}, peers interleaved (order rotating by round); "
        f"every figure is the median over rounds. 1-minute load average during the runs: "
        f"{min(loads):.1f} to {max(loads):.1f} (other tenants share the 2 cores: absolute "
        "rates are lowered, ratios within a round less so)." if loads else "",
        f"CPU peak (float32 1024x1024 GEMM, best of numpy and jax, at each round's start and "
        f"end): {min(peaks):.1f} to {max(peaks):.1f} GFLOP/s." if peaks else "",
        "",
        "## Versions",
        "",
        "| peer | versions |",
        "| --- | --- |",
    ]
    for peer, v in versions(rows).items():
        lines.append(f"| {peer} | {', '.join(f'{k} {x}' for k, x in sorted(v.items()))} |")
    lines += [
        "",
        "## DQN + prioritized replay, CartPole-v1",
        "",
        "Every peer: one SGD step of batch 32 per env step, a 64x64 ReLU MLP, a 50k replay, "
        "learning after 1000 transitions, Adam lr 1e-3, gamma 0.99, hard target copy every 100 "
        "SGD steps, epsilon 1 -> 0.02 over 10k env steps, PER alpha 0.6 and beta 0.4 (where "
        "the peer has PER). Rates are over the part of each run after learning started; each "
        f"run stops at 475 (mean of the last 10 episodes) or after {meta.get('seconds', '?')} s; "
        "time to 475 counts from the start of set-up (env, networks, buffer, compiles; imports "
        "not). GFLOP/s: network FLOPs per env step from the algorithm "
        f"(common.flops_per_env_step: {dqn_f['per_env_step']:,} = act {dqn_f['act']:,} + "
        f"train {dqn_f['train']:,}) times env steps/s.",
        "",
        *dqn_table(agg, peers, envs),
        "",
        "## DDPG, Pendulum-v1 (M = 1)",
        "",
        "64x64 actor and critic, batch 128, one SGD step per env step, 100k replay, Gaussian "
        f"noise 0.1 x the action bound, each run measured for {meta.get('ddpg_seconds', '?')} s "
        "after learning started (set-up and the 1000 random steps not counted). Network "
        f"FLOPs per env step {ddpg_f['per_env_step']:,} (act {ddpg_f['act']:,} + train "
        f"{ddpg_f['train']:,}: B x (4 Fa + 7 Fc), see common.py). "
        "RLlib and the jax-flashbax script have no DDPG row (RLlib ships neither DDPG nor TD3).",
        "",
        *ddpg_table(agg, peers),
        "",
        f"## Replay operations, {size} (K for hrl; cpprb and flashbax use binary trees)",
        "",
        "experiments/bench/bench_replay.py's measurements, one library per process per round. "
        "per-call: one call from Python (jitted for hrl and flashbax, dispatch included); "
        "scan: S steps in one jitted lax.scan, total / S (cpprb has no such mode), for "
        "sample+update and for insert.",
        "",
        *replay_table(agg),
        "",
        "## Where the peers' defaults differ, and what was done",
        "",
        "| peer | its default | here |",
        "| --- | --- | --- |",
        *[f"| {a} | {b} | {c} |" for a, b, c in DEFAULTS_DIFFER],
        "",
    ]
    skipped = meta.get("skipped") or {}
    errors = [r for r in rows if r.get("error")]
    if skipped or errors:
        lines += ["## Not run / failed", ""]
        lines += [f"* {p}: {why}" for p, why in skipped.items()]
        lines += [f"* round {r['round']} {r['peer']} {r['task']} M={r.get('num_envs')}: "
                  f"{r['error']}" for r in errors]
        lines.append("")
    return "\n".join(x for x in lines if x is not None) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = aggregate(rows)
    peers = [p for p in PEERS if any(r["peer"] == p for r in rows)]
    envs = sorted({r["num_envs"] for r in rows if r["task"] == "dqn" and r.get("num_envs")})
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5), dpi=100)
    width = 0.8 / max(len(envs), 1)
    for i, m in enumerate(envs):
        vals = [(agg["train"].get(("dqn", p, m)) or {}).get("env_steps_per_s") or 0
                for p in peers]
        ax[0].bar(np.arange(len(peers)) + i * width, vals, width, label=f"M={m}")
    ax[0].set_xticks(np.arange(len(peers)) + width * (len(envs) - 1) / 2, peers, rotation=30,
                     ha="right")
    ax[0].set_yscale("log")
    ax[0].set_title("DQN+PER CartPole: env steps/s (1 SGD step each)", fontsize=10)
    ax[0].legend()
    dpeers = [p for p in peers if ("ddpg", p, 1) in agg["train"]]
    fr = [100 * (agg["train"][("ddpg", p, 1)]["peak_fraction"] or 0) for p in dpeers]
    ax[1].bar(dpeers, fr, color="tab:green")
    ax[1].set_yscale("log")
    ax[1].set_title("DDPG Pendulum: network FLOP rate, % of CPU peak", fontsize=10)
    ax[1].tick_params(axis="x", rotation=30)
    keys = sorted(agg["replay"])
    ax[2].barh([f"{lib} {op} {mode}" for lib, op, mode in keys],
               [agg["replay"][k]["median_us"] for k in keys], color="tab:purple")
    ax[2].set_xscale("log")
    ax[2].set_title("replay: us per call / step (log)", fontsize=10)
    for a in ax:
        a.grid(alpha=0.3, which="both", axis="y" if a is not ax[2] else "x")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def readme_rows(rows: list[dict]) -> str:
    """The README's comparison table, from the results."""
    agg = aggregate(rows)
    t = agg["train"]

    def rate(task, p, m):
        a = t.get((task, p, m))
        return "-" if a is None or a["env_steps_per_s"] is None else f"{a['env_steps_per_s']:,.0f}"

    def solved(p, m):
        a = t.get(("dqn", p, m))
        if a is None:
            return "-"
        return f"{a['solved_s']:.0f} s" if a["solved_runs"] else f"> {a['budget_s']:.0f} s"

    v = versions(rows)
    names = {
        "hrl-gymnax": "hrl (gymnax, fused)",
        "hrl-gymnasium": "hrl (gymnasium, host loop)",
        "jax-flashbax": ("PureJaxRL-style + flashbax "
                         f"{v.get('jax-flashbax', {}).get('flashbax', '')}"),
        "sb3": f"SB3 {v.get('sb3', {}).get('stable_baselines3', '')} (uniform replay)",
        "tianshou": f"Tianshou {v.get('tianshou', {}).get('tianshou', '')}",
        "rllib": f"RLlib {v.get('rllib', {}).get('ray', '')}",
    }
    lines = [
        "| peer | DQN+PER CartPole env steps/s, M=1 / M=8 (1 SGD step of batch 32 each) | "
        "time to 475, M=1 / M=8 | DDPG Pendulum env steps/s (% of CPU peak) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for p in PEERS:
        if not any((task, p, m) in t for task in ("dqn", "ddpg") for m in (1, 8)):
            continue
        d = t.get(("ddpg", p, 1))
        ddpg = "-" if d is None else (f"{d['env_steps_per_s']:,.0f} "
                                      f"({100 * (d['peak_fraction'] or 0):.2f}%)")
        lines.append(f"| {names[p]} | {rate('dqn', p, 1)} / {rate('dqn', p, 8)} | "
                     f"{solved(p, 1)} / {solved(p, 8)} | {ddpg} |")
    r = agg["replay"]
    for op in ("sample+update", "insert"):
        cells = []
        for lib in REPLAY_LIBS:
            for mode in ("per-call", "scan"):
                a = r.get((lib, op, mode))
                if a:
                    cells.append(f"{lib} {mode} {a['median_us']:.0f} us")
        if cells:
            lines.append(f"| replay {op}, N=2^20, B=256, K=16 | {'; '.join(cells)} | | |")
    return "\n".join(lines)


def replace_marked_block(path: Path, begin: str, end: str, body: str) -> bool:
    """Write `body` between the lines `begin` and `end` of the file at `path` (the markers
    kept, what stood between them replaced). False, and nothing written, when the file has
    no `begin` followed by an `end`."""
    text = path.read_text()
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if stop < 0:
        return False
    path.write_text(text[:start] + begin + "\n" + body + "\n" + text[stop:])
    return True


def update_readme(readme: Path, rows: list[dict]) -> bool:
    return replace_marked_block(readme, README_BEGIN, README_END, readme_rows(rows))


def report(rows: list[dict], meta: dict, out: Path, readme: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "peers.csv")
    (out / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    (out / "peers.md").write_text(markdown(rows, meta))
    plot(rows, out / "peers.png")
    if readme is not None and not update_readme(readme, rows):
        print(f"{readme}: no {README_BEGIN} ... {README_END} markers; rows not written")


# ----------------------------------------------------------------------------- main


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=60.0,
                   help="DQN: wall limit per run (it stops earlier at 475)")
    p.add_argument("--ddpg-seconds", type=float, default=20.0, help="0: no DDPG part")
    p.add_argument("--envs", type=int, nargs="+", default=[1, 8])
    p.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    p.add_argument("--skip-replay", action="store_true")
    p.add_argument("--parts", nargs="+", default=["dqn", "ddpg", "replay"],
                   choices=["dqn", "ddpg", "replay"])
    p.add_argument("--merge", action="store_true",
                   help="keep the other parts' rows of the existing peers.csv and replace only "
                   "those of --parts")
    p.add_argument("--replay-reps", type=int, default=100)
    p.add_argument("--replay-log2-n", type=int, default=20)
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 1 round, 15 s DQN, 12 s DDPG, replay at N=2^16, 20 reps; "
                   "writes to experiments/results/peers/quick/")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--readme", action="store_true", help="rewrite the peers rows of docs/index.md")
    p.add_argument("--report-only", action="store_true",
                   help="only rebuild peers.md, peers.png (and README rows) from peers.csv")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.ddpg_seconds = 1, 15.0, 12.0
        args.replay_reps, args.replay_log2_n = 20, 16
        if args.out == OUT:
            args.out = OUT / "quick"
    readme = ROOT / "docs" / "index.md" if args.readme else None
    if args.report_only:
        rows = read_csv(args.out / "peers.csv")
        meta_path = args.out / "meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        report(rows, meta, args.out, readme)
        print(f"wrote {args.out}/peers.md, peers.png" + (", README rows" if readme else ""))
        return

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    skipped = {peer: why for peer in args.peers if (why := available(peer))}
    args.peers = [peer for peer in args.peers if peer not in skipped]
    for peer, why in skipped.items():
        print(f"skip {peer}: {why}")
    runs = schedule(args)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": "python experiments/peers/run_peers.py " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "machine": machine(), "rounds": args.rounds, "seconds": args.seconds,
        "ddpg_seconds": args.ddpg_seconds, "envs": args.envs, "skipped": skipped,
        "settings": {"dqn": DQN, "ddpg": DDPG}, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_avg_start": os.getloadavg(),
    }
    rows = []
    with (args.out / "runs.log").open("a" if args.merge else "w") as log, Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    ) as progress:
        task = progress.add_task("peers", total=len(runs))
        peak_round, peaks = None, []
        for run in runs:
            if run["round"] != peak_round:  # each round's start (and its predecessor's end)
                peaks.append(measure_peak())
                peak_round = run["round"]
            progress.update(task, description=f"round {run['round']} {run['peer']} "
                            f"{run['task']} M={run['num_envs']}")
            got = execute(run, args, log)
            for row in got:
                row["peak_gflops"] = peaks[-1]["peak"]
                line = (f"{row['peer']:14s} {row['task']:6s} M={row.get('num_envs')} "
                        f"{row.get('op', '')} {row.get('mode', '')}")
                if row.get("error"):
                    line += f" FAILED: {row['error']}"
                elif row["task"] == "replay":
                    line += f" {row['median_us']:.0f} us"
                else:
                    line += (f" {row['env_steps_per_s'] or 0:,.0f} env steps/s, solved "
                             f"{row.get('solved_s')}")
                progress.console.print(line)
            rows += got
            progress.advance(task)
        peaks.append(measure_peak())
    meta["peaks"] = peaks
    meta["load_avg_end"] = os.getloadavg()
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    if args.merge and (args.out / "peers.csv").exists():
        kept = [r for r in read_csv(args.out / "peers.csv") if r["task"] not in args.parts]
        old = args.out / "meta.json"
        old_meta = json.loads(old.read_text()) if old.exists() else {}
        meta = {**old_meta, "rerun": [*old_meta.get("rerun", []), meta]}
        rows = kept + rows
    report(rows, meta, args.out, readme)
    print(f"wrote {args.out}/peers.csv, peers.md, peers.png"
          + (", README rows" if readme else ""))


if __name__ == "__main__":
    main()
