"""Replay operations at N=2^20, B=256, K=16, one library per process: the measurements of
experiments/bench/bench_replay.py (imported, not copied), each row labelled with its mode.

    python experiments/peers/peer_replay.py --library hrl --reps 100

hrl: the native C++ path (`PrioritizedReplay`, sample+update in one jitted call per call, and
S steps in one `lax.scan`); cpprb: `PrioritizedReplayBuffer` from Python (per call only: it has
no fused mode); flashbax: its prioritised flat buffer, jitted per call and in a `lax.scan`.
What a call does is in bench_replay.py's docstring. One `PEER_RESULT` line per row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for bench_replay


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--library", choices=("hrl", "cpprb", "flashbax"), required=True)
    p.add_argument("--log2-n", type=int, default=20)
    p.add_argument("--b", type=int, default=256)
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--scan-steps", type=int, default=50)
    args = p.parse_args(argv)
    import bench_replay as br
    import numpy as np

    from hrl.replay import native

    n, b, k = 2**args.log2_n, args.b, args.k
    rng = np.random.default_rng(0)
    want = ("sample+update", "insert")
    warmup = 5
    if args.library == "hrl":
        path = "native" if native.available() else "xla"
        rows = br.bench_hrl(path, n, b, k, args.reps, warmup, args.scan_steps, rng, want)
    elif args.library == "cpprb":
        rows = br.bench_cpprb(n, b, args.reps, warmup, rng, want)
    else:
        rows = br.bench_flashbax(n, b, args.reps, warmup, args.scan_steps, rng, want)
    from importlib import metadata

    version = {"hrl": "this repo", "cpprb": metadata.version("cpprb"),
               "flashbax": metadata.version("flashbax")}[args.library]
    out = []
    for r in rows:
        if r.op not in want:
            continue
        row = {"peer": args.library, "task": "replay", "op": r.op, "mode": r.mode,
               "path": r.path, "n": r.n, "b": r.b, "k": r.k, "median_us": r.median_us,
               "p25_us": r.p25_us, "p75_us": r.p75_us, "cpu_us": r.cpu_us, "reps": r.reps,
               "load_avg_1min": os.getloadavg()[0],
               "versions": {args.library: version, "jax": metadata.version("jax")}}
        print("PEER_RESULT " + json.dumps(row), flush=True)
        out.append(row)
    return out


if __name__ == "__main__":
    main()
