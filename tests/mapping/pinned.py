"""What `hrl map` and the held-out validation predict from the committed profiles
(experiments/results/mapping/), in a form a test can pin: `test_pinned_outputs.py` compares
today's with the copy in `data/pinned_outputs.json`, which

    .venv/bin/python tests/mapping/pinned.py

rewrites (do so only where a change to the model is meant to move a prediction, and say which
moved and by how much in the commit).

`hrl map` is pinned through the calls it makes (`plan.plan`, `ranking.rank_mappings`,
`report.write_report`) without its speed check, which times this machine now: the report's
text, and per dependency mode and executor the ten fastest mappings and a digest of all.
The held-out validation is pinned through `instantiate.choose` on the settings of a draw
(`experiments/mapping/heldout.py`), unscaled: every ranked mapping's seconds and the pick.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results" / "mapping"
CONFIGS = ROOT / "experiments" / "configs"
PINNED = Path(__file__).resolve().parent / "data" / "pinned_outputs.json"

# (name, config, profile dir, devices, max devices of the auto ranking): as
# experiments/mapping/map_report.py runs `hrl map`, and the gymnasium profile's default.
MAPS = [
    ("dqn_cartpole", "dqn_cartpole.yaml", "profile",
     ["cpu*8", "pocl", "gpu", "fpga:u200", "fpga:u250"], 8),
    ("ddpg_pendulum", "ddpg_pendulum.yaml", "profile-ddpg",
     ["cpu*8", "pocl", "gpu", "fpga:u200", "fpga:u250"], 8),
    ("dqn_cartpole_gymnasium", "dqn_cartpole_gymnasium.yaml", "profile-gymnasium", None, 1),
]
# The held-out draw whose predictions are pinned (heldout/heldout-seed9.*), and how many of
# its settings (each costs one ranking).
HELDOUT_SEED = 9
HELDOUT_SETTINGS = 8
HELDOUT_PROFILES = {"gymnax": "heldout/profile", "gymnasium": "heldout/profile-gymnasium"}
HELDOUT_CONFIGS = {"gymnax": "dqn_cartpole.yaml", "gymnasium": "dqn_cartpole_gymnasium.yaml"}


def _f(x: float) -> float | str:
    return float(x) if math.isfinite(x) else str(x)


def map_outputs(name: str, config: str, profile_dir: str, devices, max_devices: int) -> dict:
    from hrl.config import load_config
    from hrl.mapping.plan import plan
    from hrl.mapping.profile.io import load_profile
    from hrl.mapping.ranking import rank_mappings
    from hrl.mapping.report import write_report
    from hrl.mapping.workload import workload_from_config

    cfg = load_config(CONFIGS / config)
    profile = load_profile(RESULTS / profile_dir)
    staleness = max(1, cfg.train.staleness)
    result = plan(workload_from_config(cfg), profile, devices, staleness)
    ranking = rank_mappings(cfg, profile, staleness=staleness, max_devices=max_devices,
                            available_devices=max_devices)
    e = result.exploration
    times = {}
    for mode in ("strict", "relaxed"):
        for executor in ("auto", "pipelined", "pipelined-thread"):
            t = e.times(mode, executor)
            finite = np.isfinite(t)
            times[f"{mode}/{executor}"] = {
                "finite": int(finite.sum()), "sum": float(t[finite].sum()),
                "top": [[e.mapping(r), _f(t[r])] for r in e.top(mode, 10, executor)]}
    with tempfile.TemporaryDirectory() as tmp:
        write_report(result, Path(tmp), profile, f"hrl map: {cfg.name}", ranking)
        report = (Path(tmp) / "report.md").read_text()
    return {"report": report, "times": times,
            "ranking": [[m.label, _f(m.seconds), m.uncertainty, m.runnable]
                        for m in ranking.mappings]}


def heldout_outputs(seed: int = HELDOUT_SEED, n: int = HELDOUT_SETTINGS) -> list[dict]:
    sys.path.insert(0, str(ROOT / "experiments" / "mapping"))
    import heldout  # experiments/mapping/heldout.py

    from hrl.config import load_config
    from hrl.mapping.instantiate import choose
    from hrl.mapping.profile.io import load_profile

    profiles = {k: load_profile(RESULTS / d) for k, d in HELDOUT_PROFILES.items()}
    out = []
    for s in heldout.draw(16, seed)[:n]:
        cfg = load_config(CONFIGS / HELDOUT_CONFIGS[s.env], heldout.run_overrides(s))
        choice = choose(cfg, profiles[s.env], backends=("jax", "opencl"))
        out.append({"setting": s.name, "pick": choice.mapping.label,
                    "kept_default": choice.kept_default,
                    "ranked": [[m.label, m.executor, _f(m.seconds), m.uncertainty]
                               for m in choice.ranked]})
    return out


def outputs() -> dict:
    return {"maps": {m[0]: map_outputs(*m) for m in MAPS}, "heldout": heldout_outputs()}


if __name__ == "__main__":
    PINNED.parent.mkdir(exist_ok=True)
    PINNED.write_text(json.dumps(outputs(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")
