"""FPGA replay-manager architecture exploration (MODELLED, not measured on a board).

    .venv/bin/python experiments/mapping/map_fpga_explore.py

For each Alveo board (U200, U250, U280: public resource counts, hrl/mapping/fpga.py) and buffer
sizes N = 2**12 .. 2**24: every (K, lanes) architecture with D = ceil(log_K N), whether it fits
the board, its utilisation, and the modelled time of one sample batch of B = 256 at 200 MHz.
The timing uses the RTL's measured cycle table when experiments/results/rtl/cycles.csv exists,
else its documented pipeline; logic is calibrated on fpga_rtl/syn/resources.csv when it exists.
Writes experiments/results/mapping/fpga_explore.csv and fpga_explore.png.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "results" / "mapping"
BATCH = 256


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hrl.mapping import fpga
    from hrl.mapping.profile import rtl_cycle_rows
    from hrl.mapping.rtl_tables import logic_from_profile, rmm_timing_from_profile

    tables = {"rows": rtl_cycle_rows()}
    timing = rmm_timing_from_profile(tables)
    logic = logic_from_profile(tables)
    rows = []
    for board in fpga.BOARDS.values():
        for log_n in range(12, 25, 2):
            for r in fpga.explore(1 << log_n, board, BATCH, timing, logic):
                rows.append(r)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "fpga_explore.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, board in enumerate(fpga.BOARDS):
        ns, best_t, best_lab = [], [], []
        for log_n in range(12, 25, 2):
            fit = [r for r in rows if r["board"] == board and r["capacity"] == 1 << log_n
                   and r["fits"]]
            if fit:
                b = min(fit, key=lambda r: r["sample_s"])
                ns.append(1 << log_n)
                best_t.append(b["sample_cycles"] / (b["clock_mhz"] * 1e6) * 1e6)
                best_lab.append(f"K{b['fanout']}P{b['lanes']}")
        axes[0].plot(ns, best_t, "o-", color=f"C{i}", label=board)
        for x, y, lab in zip(ns, best_t, best_lab, strict=True):
            axes[0].annotate(lab, (x, y), fontsize=6, color=f"C{i}")
        mem = [max(r["util_bram36"], r["util_uram"]) for r in rows
               if r["board"] == board and r["fanout"] == 16 and r["lanes"] == 1]
        caps = [r["capacity"] for r in rows
                if r["board"] == board and r["fanout"] == 16 and r["lanes"] == 1]
        axes[1].plot(caps, mem, "o-", color=f"C{i}", label=f"{board} K=16 P=1")
    axes[0].set(xscale="log", xlabel="buffer size N",
                ylabel=f"sample batch B={BATCH}, kernel cycles / clock [us]",
                title="fastest fitting RMM (modelled; + invocation overhead per call)")
    axes[1].axhline(0.7, color="k", ls="--", lw=0.8)
    axes[1].set(xscale="log", xlabel="buffer size N", ylabel="BRAM/URAM share (max)",
                title="on-chip memory, K=16 P=1 (usable 70%)")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "fpga_explore.png", dpi=120)
    print(f"timing: {timing.source}; logic: {logic.source}")
    print(f"-> {OUT / 'fpga_explore.csv'} and {OUT / 'fpga_explore.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
