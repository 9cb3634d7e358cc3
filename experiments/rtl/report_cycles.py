"""Measure hrl_rmm cycle counts per parameter set and write the cycle table.

    .venv/bin/python experiments/rtl/report_cycles.py   # every set -> experiments/results/rtl/
                                                        # cycles.csv, cycles.md and the table
                                                        # in docs/hardware.md
    .venv/bin/python experiments/rtl/report_cycles.py --sim verilator

Each set runs the cocotb test `test_cycles` (sim/hrl_rmm/test_hrl_rmm.py): latency of one update and
one sample in an idle pipeline, throughput of 256-group streams of each kind, and the
alternating batch pattern of a PRB (B updates, then B stratified LFSR samples, 8 rounds).
Figures are clock cycles from the simulation; Mops/s assume the 200 MHz clock of the README.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "rtl"
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(ROOT / "fpga_rtl" / "syn"))

import rmm_runner  # noqa: E402

CLOCK_MHZ = 200
SETS = [(4, 4, 1, 32), (16, 3, 1, 32), (4, 3, 4, 24), (16, 2, 2, 32), (4, 7, 2, 32)]
COLUMNS = [
    ("K", "K"), ("D", "D"), ("P", "P"), ("W", "W"),
    ("update_latency", "update latency (cyc)"),
    ("sample_latency", "sample latency (cyc)"),
    ("update_ops_per_cycle", "updates/cyc"),
    ("sample_ops_per_cycle", "samples/cyc"),
    ("sample_lfsr_ops_per_cycle", "LFSR samples/cyc"),
    ("bubbles_update_to_sample", "bubbles upd->smp"),
    ("bubbles_sample_to_update", "bubbles smp->upd"),
    ("alternating_batch", "alt. batch B"),
    ("alternating_ops_per_cycle", "alt. ops/cyc"),
    ("peak_mops", f"peak Mops/s @{CLOCK_MHZ} MHz"),
]


def measure(sim: str, k: int, d: int, p: int, w: int) -> dict:
    prm = {"K": k, "D": d, "P": p, "W": w}
    out = rmm_runner.BUILD / f"cycles-{rmm_runner.case_name(sim, prm)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    rmm_runner.run_case(
        sim, prm, testcase="test_cycles", env={"RMM_REPORT": str(out)}, suffix="-cycles"
    )
    row = json.loads(out.read_text())
    row["peak_mops"] = row["update_ops_per_cycle"] * CLOCK_MHZ
    return row


def fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(c[1] for c in COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    return head + "".join(
        "| " + " | ".join(fmt(r[c[0]]) for c in COLUMNS) + " |\n" for r in rows
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite docs/hardware.md")
    args = ap.parse_args(argv)
    reason = rmm_runner.missing_tool(args.sim)
    if reason:
        ap.error(reason)
    from rich.progress import Progress
    from run_syn import replace_section

    rows = []
    with Progress() as progress:
        task = progress.add_task(f"cycle counts ({args.sim})", total=len(SETS))
        for k, d, p, w in SETS:
            rows.append(measure(args.sim, k, d, p, w))
            progress.console.print(f"K={k} D={d} P={p} W={w}: {rows[-1]}")
            progress.advance(task)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "cycles.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[c[0] for c in COLUMNS], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(rows)
    (OUT / "cycles.md").write_text(table)
    if not args.no_readme:
        replace_section(ROOT / "docs" / "hardware.md", "cycles", table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
