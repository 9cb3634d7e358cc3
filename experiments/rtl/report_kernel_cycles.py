"""Cycles per batch of the XRT kernel hrl_rmm_kernel in simulation, incl. AXI, against the
batch size B and the lane count P.

    .venv/bin/python experiments/rtl/report_kernel_cycles.py    # Verilator; writes
        experiments/results/rtl/kernel_cycles.csv, kernel_cycles_fit.csv and the tables in
        docs/hardware.md
    .venv/bin/python experiments/rtl/report_kernel_cycles.py --sim icarus --no-readme

Each batch is one kernel run through the OpenCL host driver on the rtl-sim device
(`make_backend("opencl", ..., device="rtl-sim", lanes=P)`), exactly as a training loop
issues it. The fit (kernel_cycles_fit.csv) is least squares of kernel cycles = fixed +
per_item * B over the batches >= 256, per (K, D, P, command); hrl.mapping.fpga reads it.
`kernel cycles`: the kernel's own counter (register 0x60: ap_start seen to ap_done: the
argument already in registers, all AXI4 reads of the inputs, the tree operations, all AXI4
writes of the results acknowledged, the root latched). `host cycles`: what the host saw
from its ap_start write to the AXI4-Lite read that returned ap_done (the backend's host
sleeps one cycle per item, then polls every 8 cycles, so this includes up to ~8 cycles of
polling slack); argument writes before ap_start are not included (they change only when
the batch size does). Time = cycles / clock (200 MHz assumed, see README "Clock"). Cycle
counts are a property of the RTL and the memory model; they are exact for the default memory
model (sim/hdl/hrl_sim_axi_ram.v: read data one cycle after the address, one burst at a
time per direction), so on a board DDR latency (~100+ cycles per burst round trip) comes
on top.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CLOCK_MHZ = 200.0
CLOCK_NS = 1e3 / CLOCK_MHZ
SETS = [  # (capacity, fanout, format, lanes)
    (4096, 16, "fixed", 1),
    (4096, 16, "fixed", 2),
    (4096, 16, "fixed", 4),
    (1000, 4, "fixed", 1),
]
BATCHES = (1, 32, 256, 1024, 4096)
FIT_MIN_BATCH = 256
COLUMNS = ["N", "K", "D", "P", "W", "command", "batch", "kernel_cycles", "cycles_per_item",
           "us_at_200MHz", "host_cycles"]
FIT_COLUMNS = ["K", "D", "P", "W", "command", "fixed_cycles", "cycles_per_item",
               "batches"]


def measure(simulator: str, sets, batches) -> list[dict]:
    from rich.progress import Progress

    sys.path.insert(0, str(ROOT))
    from hrl.replay.backends import make_backend

    rows = []
    with Progress() as bar:
        job = bar.add_task("kernel runs", total=len(sets) * len(batches))
        for capacity, fanout, fmt, lanes in sets:
            bar.update(job, description=f"build/start N={capacity} K={fanout} P={lanes}")
            tree = make_backend("opencl", capacity, fanout, fmt, device="rtl-sim",
                                lanes=lanes, simulator=simulator)
            rng = np.random.default_rng(0)
            fill = rng.choice(capacity, min(capacity, 4096), replace=False)
            tree.update(fill, rng.uniform(0.1, 2.0, fill.size).astype(np.float32))
            for b in batches:
                bar.update(job, description=f"N={capacity} K={fanout} P={lanes} batch {b}")
                start = len(tree.stats)
                idx = rng.integers(0, capacity, b)
                tree.update(idx, rng.uniform(0.1, 2.0, b).astype(np.float32))
                tree.sample_from_bits(rng.integers(0, 2**32, b, dtype=np.uint64)
                                      .astype(np.uint32), True)
                tree.sample_lfsr(b, True)
                names = {"update": "update", "sample": "sample (host bits)",
                         "sample_lfsr": "sample (kernel LFSR)"}
                # The root reads the driver adds after an update are runs of their own.
                for s in [s for s in tree.stats[start:] if s["command"] in names]:
                    rows.append({
                        "N": capacity, "K": fanout, "D": tree.depth, "P": lanes,
                        "W": tree.fmt.word_bits,
                        "command": names[s["command"]], "batch": b,
                        "kernel_cycles": s["cycles"],
                        "cycles_per_item": round(s["cycles"] / b, 2),
                        "us_at_200MHz": round(s["cycles"] / CLOCK_MHZ, 3),
                        "host_cycles": round(s["host_ns"] / CLOCK_NS),
                    })
                bar.advance(job)
            tree.close()
    return rows


def fit(rows: list[dict]) -> list[dict]:
    """kernel cycles = fixed + per_item * B, least squares over B >= FIT_MIN_BATCH."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["batch"] >= FIT_MIN_BATCH:
            groups.setdefault((r["K"], r["D"], r["P"], r["W"], r["command"]), []).append(r)
    out = []
    for (k, d, p, w, command), group in groups.items():
        b = np.array([r["batch"] for r in group], float)
        c = np.array([r["kernel_cycles"] for r in group], float)
        if np.ptp(b) == 0:
            continue
        per_item, fixed = np.polyfit(b, c, 1)
        out.append({"K": k, "D": d, "P": p, "W": w, "command": command,
                    "fixed_cycles": round(float(fixed), 1),
                    "cycles_per_item": round(float(per_item), 4),
                    "batches": "/".join(str(int(x)) for x in b)})
    return out


def markdown(rows: list[dict], columns=COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in columns) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", default="verilator", choices=["icarus", "verilator"])
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--out", default=str(ROOT / "experiments" / "results" / "rtl"
                                         / "kernel_cycles.csv"))
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    rows = measure(args.sim, SETS, batches)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    fitted = fit(rows)
    fit_out = Path(args.out).with_name(Path(args.out).stem + "_fit.csv")
    with open(fit_out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIT_COLUMNS)
        w.writeheader()
        w.writerows(fitted)
    table = markdown(fitted, FIT_COLUMNS) + "\n\nPer run:\n\n" + markdown(rows)
    print(table)
    if not args.no_readme:
        readme = ROOT / "docs" / "hardware.md"
        text = readme.read_text()
        begin, end = "<!-- kernel-cycles:begin -->", "<!-- kernel-cycles:end -->"
        if begin not in text:
            raise SystemExit(f"{readme} has no {begin} marker")
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end),
                      lambda _: f"{begin}\n{table}\n{end}", text, flags=re.S)
        readme.write_text(text)
        print(f"table written to {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
