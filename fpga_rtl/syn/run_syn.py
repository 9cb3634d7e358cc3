"""Synthesize hrl_rmm with yosys (synth_xilinx -family xcup) per parameter set and tabulate.

    python fpga_rtl/syn/run_syn.py            # every set in SETS -> syn/resources.{csv,md}
                                              # and the table in docs/hardware.md
    python fpga_rtl/syn/run_syn.py --set 4,3,1,32

Flow: hierarchical (the default, `--flow hier`): synth_xilinx without -flatten, so every
distinct module parameterization (a level's RAM bank, the descend and update steps, the
FIFO) is synthesized once and `stat -top hrl_rmm` composes the counts by instance; the
P x P live-value-table copies and the D*P step instances no longer multiply yosys's work,
which is what let the large sets finish. Counts are somewhat higher than a flattened run
(no optimization across module boundaries, e.g. constant inputs of the root's step);
`--flow flat` runs the former flattened script. Each row records the yosys run time
(wall seconds on the machine that ran it, which is shared: a figure of effort, not a
benchmark).

Counts are yosys cell counts after synth_xilinx, not a placed-and-routed Vivado result:
LUT = LUT1..LUT6, LUTRAM = RAM* distributed-memory cells, FF = FD* flip-flops,
BRAM36 = RAMB36E2 + RAMB18E2/2, URAM = URAM288, DSP = DSP48E2, CARRY = CARRY8 + CARRY4.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import time
from pathlib import Path

SYN = Path(__file__).resolve().parent
FPGA = SYN.parent
ROOT = FPGA.parent
SCRIPT = SYN / "hrl_rmm.ys"
COLUMNS = ["K", "D", "P", "W", "leaves", "LUT", "LUTRAM", "FF", "BRAM36", "URAM", "DSP", "CARRY",
           "flow", "seconds"]

# The cycle table's sets (experiments/rtl/report_cycles.py) plus the paper's shapes.
SETS = [
    (4, 4, 1, 32),
    (16, 3, 1, 32),
    (4, 2, 2, 32),
    (4, 3, 4, 24),
    (16, 2, 2, 32),
    (4, 7, 1, 32),
    (64, 2, 1, 32),
    (4, 7, 2, 32),
]


def count_cells(stat: str) -> dict[str, float]:
    """Resource columns from the text of yosys `stat` (the flattened top) or `stat -top`
    (the totals of its design hierarchy section)."""
    if "=== design hierarchy ===" in stat:
        stat = stat.split("=== design hierarchy ===", 1)[1]
    cells: dict[str, int] = {}
    for name, n in re.findall(r"^\s+(\S+)\s+(\d+)\s*$", stat, flags=re.M):
        cells[name] = cells.get(name, 0) + int(n)
    lut = sum(v for k, v in cells.items() if re.fullmatch(r"LUT[1-6]", k))
    lutram = sum(v for k, v in cells.items() if re.fullmatch(r"RAM\d+[MXS].*", k))
    ff = sum(v for k, v in cells.items() if re.fullmatch(r"FD[RSCP]E(_1)?", k))
    bram = cells.get("RAMB36E2", 0) + cells.get("RAMB18E2", 0) / 2
    return {
        "LUT": lut,
        "LUTRAM": lutram,
        "FF": ff,
        "BRAM36": bram,
        "URAM": cells.get("URAM288", 0),
        "DSP": cells.get("DSP48E2", 0),
        # yosys 0.23 maps carry chains to CARRY4 even for xcup; both are counted.
        "CARRY": cells.get("CARRY8", 0) + cells.get("CARRY4", 0),
    }


def _up_to_date(stat: Path) -> bool:
    """True if `stat` is newer than the script and every RTL source (a finished run)."""
    if not stat.exists():
        return False
    inputs = [SCRIPT, Path(__file__), *sorted((FPGA / "rtl").glob("*.v"))]
    return all(stat.stat().st_mtime > p.stat().st_mtime for p in inputs)


def synthesize(params: dict[str, int], workdir: Path | None = None, force: bool = True,
               flow: str = "hier", timeout: float | None = None) -> dict:
    """Run the script for one parameter set; returns the table row. With force=False a
    finished run newer than the script and the RTL is reused. `flow`: 'hier' or 'flat'
    (see the module docstring). Raises subprocess.TimeoutExpired after `timeout` s."""
    if flow not in ("hier", "flat"):
        raise ValueError(f"flow must be 'hier' or 'flat', got {flow!r}")
    for key in ("K", "D", "P", "W"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    tag = "-".join(f"{k}{params[k]}" for k in ("K", "D", "P", "W"))
    workdir = Path(workdir or ROOT / "sim_build" / f"syn-{flow}-{tag}")
    workdir.mkdir(parents=True, exist_ok=True)
    row = {k: params[k] for k in ("K", "D", "P", "W")}
    row["leaves"] = params["K"] ** params["D"]
    row["flow"] = flow
    if not force and _up_to_date(workdir / "stat.txt"):
        row.update(count_cells((workdir / "stat.txt").read_text()))
        row["seconds"] = int(float((workdir / "seconds.txt").read_text()))
        return row
    (workdir / "stat.txt").unlink(missing_ok=True)
    chparam = "chparam " + " ".join(f"-set {k} {params[k]}" for k in ("K", "D", "P", "W"))
    script = SCRIPT.read_text().replace("# @CHPARAM@", chparam + " hrl_rmm")
    if flow == "hier":
        script = script.replace(" -flatten", "").replace("tee -o stat.txt stat",
                                                         "tee -o stat.txt stat -top hrl_rmm")
    script = script.replace("read_verilog -sv rtl/", f"read_verilog -sv {FPGA}/rtl/")
    script = re.sub(r"(?<= )rtl/", f"{FPGA}/rtl/", script)
    (workdir / "run.ys").write_text(script)
    log = workdir / "yosys.log"
    t0 = time.time()
    with open(log, "w") as f:
        res = subprocess.run(
            ["yosys", "-q", "-s", "run.ys"], cwd=workdir, stdout=f, stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    if res.returncode != 0:
        raise RuntimeError(f"yosys failed for {tag}; see {log}")
    seconds = time.time() - t0
    (workdir / "seconds.txt").write_text(f"{seconds:.0f}\n")
    row.update(count_cells((workdir / "stat.txt").read_text()))
    row["seconds"] = round(seconds)
    return row


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    body = ""
    for r in rows:
        body += "| " + " | ".join(
            f"{r[c]:g}" if isinstance(r[c], float) else str(r[c]) for c in COLUMNS
        ) + " |\n"
    return head + body


def replace_section(path: Path, marker: str, text: str) -> None:
    """Replace the text between `<!-- marker:begin -->` and `<!-- marker:end -->`."""
    src = path.read_text()
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if begin not in src or end not in src:
        raise ValueError(f"{path} has no {begin} ... {end} section")
    pre, rest = src.split(begin, 1)
    _, post = rest.split(end, 1)
    path.write_text(pre + begin + "\n" + text + end + post)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", action="append", default=[],
                    help="K,D,P,W (repeatable); default: every set in SETS")
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite docs/hardware.md")
    ap.add_argument("--force", action="store_true",
                    help="rerun yosys even where a run newer than the RTL exists")
    ap.add_argument("--cached-only", action="store_true",
                    help="tabulate only the sets with a finished run newer than the RTL")
    ap.add_argument("--flow", default="hier", choices=["hier", "flat"],
                    help="hierarchical synthesis composed by stat -top (default) or flattened")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="seconds per set; a set that takes longer is reported, not tabulated")
    args = ap.parse_args(argv)
    sets = SETS
    if args.set:
        try:
            sets = [tuple(int(v) for v in s.split(",")) for s in args.set]
        except ValueError:
            ap.error(f"--set takes K,D,P,W integers, got {args.set}")
        if any(len(s) != 4 for s in sets):
            ap.error(f"--set takes four integers K,D,P,W, got {args.set}")
    from rich.progress import Progress

    if args.cached_only:
        done = []
        for k, d, p, w in sets:
            tag = f"K{k}-D{d}-P{p}-W{w}"
            if _up_to_date(ROOT / "sim_build" / f"syn-{args.flow}-{tag}" / "stat.txt"):
                done.append((k, d, p, w))
            else:
                print(f"{tag}: no finished run, left out of the table")
        sets = done
    rows, unfinished = [], []
    with Progress() as progress:
        task = progress.add_task("yosys synth_xilinx", total=len(sets))
        for k, d, p, w in sets:
            try:
                rows.append(synthesize({"K": k, "D": d, "P": p, "W": w}, force=args.force,
                                       flow=args.flow, timeout=args.timeout))
                progress.console.print(f"K={k} D={d} P={p} W={w}: {rows[-1]}")
            except subprocess.TimeoutExpired:
                unfinished.append(f"K{k}-D{d}-P{p}-W{w}")
                progress.console.print(f"K={k} D={d} P={p} W={w}: did not finish in "
                                       f"{args.timeout:.0f} s")
            progress.advance(task)
    with open(SYN / "resources.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(rows)
    if unfinished:
        table += (f"\nNot finished within {args.timeout:.0f} s each: "
                  f"{', '.join(unfinished)}.\n")
    (SYN / "resources.md").write_text(table)
    if not args.no_readme and not args.set and rows:
        replace_section(FPGA.parent / "docs" / "hardware.md", "resources", table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
