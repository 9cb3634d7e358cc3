"""Mapping reports for the shipped configs, from the profile measured on this machine.

    .venv/bin/python experiments/map_report.py [--profile experiments/results/mapping/profile]

Runs `hrl map` for each config below with the devices present here (cpu, pocl when profiled)
plus modelled ones (gpu from public specs, fpga:u200 and fpga:u250 from the RTL model), and
writes each report to experiments/results/mapping/map-<config>/ (report.md, report.html, PNGs,
mapping.json). Modelled devices are labelled as such in every table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "experiments" / "results" / "mapping"
CONFIGS = ["dqn_cartpole", "ddpg_pendulum"]
MODELLED = ["gpu", "fpga:u200", "fpga:u250"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=str(OUT / "profile"))
    args = ap.parse_args(argv)
    from hrl.cli import main as hrl
    from hrl.mapping.profile import load_profile

    profile = load_profile(args.profile)
    algos = {r.get("algo") for r in profile["rows"]}
    measured = sorted({r["placement"].removesuffix("-fused") for r in profile["rows"]
                       if r["placement"] in ("cpu", "pocl", "rtl", "gpu")})
    status = 0
    for name in CONFIGS:
        config = ROOT / "experiments" / "configs" / f"{name}.yaml"
        if not config.is_file():
            print(f"skip {name}: {config} does not exist")
            continue
        algo = "ddpg" if name.startswith("ddpg") else "dqn"
        if algo not in algos:
            print(f"skip {name}: the profile has no {algo} rows (profile that config first)")
            continue
        devices = ",".join(measured + MODELLED)
        status |= hrl(["map", str(config), "--profile", args.profile, "--devices", devices,
                       "--out", str(OUT / f"map-{name}")])
    return status


if __name__ == "__main__":
    sys.exit(main())
