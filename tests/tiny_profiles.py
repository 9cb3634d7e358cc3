"""The tiny profile the mapping and command tests share: every call at two sizes (what a fit
needs), the fewest compilations that gives, on the jax backend only (the `tiny_profile`
fixture of conftest.py takes it once per test process)."""

from __future__ import annotations

# Every call at two sizes (what a fit needs), the fewest compilations that gives.
TINY_GRID = {"num_envs": (1, 4), "width": (8,), "batch": (4, 8), "capacity": (64,),
             "fanout": (4,), "repeats": 2, "scan": 2}
CONFIG = "experiments/configs/dqn_cartpole.yaml"


def make_tiny_profile(tmp_path_factory):
    """Profile CONFIG on TINY_GRID into a fresh directory: (that directory, the rows)."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import Profiler, write_profile

    cfg = load_config(CONFIG)
    prof = Profiler(cfg, grid=TINY_GRID, backends=("jax",), progress=False, loops=False)
    rows = prof.run()
    out = tmp_path_factory.mktemp("profile")
    write_profile(rows, out, to_dict(cfg), prof.skipped, prof.speed)
    return out, rows
