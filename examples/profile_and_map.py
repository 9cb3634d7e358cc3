"""Profile a machine for a config of your own and rank its mappings, at a tiny size.

The profiler times each of the five primitives on the placements this machine has (here only
the JAX CPU ones: the host loop's calls and the fused scan), fits a latency model per
primitive, and `hrl map` ranks every mapping of the primitives onto the devices named. A real
profile uses `hrl profile CONFIG --grid quick` (minutes) or `--grid full` (an hour or more);
this example's grid is the smallest one a fit accepts (two sizes per call) so that it finishes
in well under a minute, which is enough to see the flow, not to trust the numbers.

    .venv/bin/python examples/profile_and_map.py --out /tmp/hrl-map-example

The same from the command line, at the quick grid:

    .venv/bin/hrl profile examples/corridor.yaml --backends jax --run-dir runs/profile-corridor
    .venv/bin/hrl map examples/corridor.yaml --profile runs/profile-corridor --devices cpu
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hrl.cli import main as hrl_main
from hrl.config import load_config, to_dict
from hrl.mapping.profile import Profiler, write_profile

CONFIG = "experiments/configs/dqn_cartpole.yaml"
# Every call at two sizes (what a fit needs), the fewest compilations that gives.
TINY_GRID = {"num_envs": (1, 4), "width": (8,), "batch": (4, 8), "capacity": (64,),
             "fanout": (4,), "repeats": 2, "scan": 2}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--out", default="runs/profile-example")
    args = parser.parse_args(argv)
    out = Path(args.out)
    cfg = load_config(args.config)
    profiler = Profiler(cfg, grid=TINY_GRID, backends=("jax",), progress=False, loops=False)
    rows = profiler.run()
    write_profile(rows, out, to_dict(cfg), profiler.skipped, profiler.speed)
    print(f"profile: {len(rows)} rows in {out}/profile.csv")
    status = hrl_main(["map", args.config, "--profile", str(out), "--devices", "cpu",
                       "--out", str(out / "map")])
    if status != 0:
        raise SystemExit(status)
    print(f"report: {out / 'map' / 'report.md'}")
    return out / "map"


if __name__ == "__main__":
    main()
