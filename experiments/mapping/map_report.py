"""Mapping reports for the shipped configs, from the profile measured on this machine.

    .venv/bin/python experiments/mapping/map_report.py [--profile DIR ...]

Runs `hrl map` for each config below with the devices present here (cpu, pocl when profiled)
plus modelled ones (gpu from public specs, fpga:u200 and fpga:u250 from the RTL model), the
CPU given as `cpu*8` (8 virtual CPU devices on the profiled machine's cores: the data-parallel
candidates, weak scaling), and writes each report to experiments/results/mapping/map-<config>/
(report.md, report.html, PNGs, mapping.json, data_parallel.csv, scaling.png). Modelled devices
are labelled as such in every table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "mapping"
CONFIGS = ["dqn_cartpole", "ddpg_pendulum"]
MODELLED = ["gpu", "fpga:u200", "fpga:u250"]
CPU_DEVICES = 8  # virtual CPU devices offered to the data-parallel candidates


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", action="append",
                    help="profile directory (repeatable; each config uses the first that "
                         "measures its algorithm); default: profile/ (DQN) and profile-ddpg/")
    args = ap.parse_args(argv)
    from hrl.cli import main as hrl
    from hrl.mapping.profile import load_profile

    paths = args.profile or [str(OUT / "profile"), str(OUT / "profile-ddpg")]
    profiles = [(path, load_profile(path)) for path in paths if Path(path).exists()]
    status = 0
    for name in CONFIGS:
        config = ROOT / "experiments" / "configs" / f"{name}.yaml"
        if not config.is_file():
            print(f"skip {name}: {config} does not exist")
            continue
        algo = "ddpg" if name.startswith("ddpg") else "dqn"
        found = [(path, p) for path, p in profiles
                 if algo in {r.get("algo") for r in p["rows"]}]
        if not found:
            print(f"skip {name}: no profile has {algo} rows (profile that config first: "
                  f"hrl profile {config} --run-dir {OUT / 'profile-' + algo})")
            continue
        path, profile = found[0]
        measured = sorted({r["placement"].removesuffix("-fused") for r in profile["rows"]
                           if r["placement"] in ("cpu", "pocl", "rtl", "gpu")})
        devices = ",".join([f"{d}*{CPU_DEVICES}" if d == "cpu" else d for d in measured]
                           + MODELLED)
        status |= hrl(["map", str(config), "--profile", path, "--devices", devices,
                       "--out", str(OUT / f"map-{name}")])
    return status


if __name__ == "__main__":
    sys.exit(main())
