"""Logic depth of the RMM's per-level datapath steps from yosys, per parameter set.

    python fpga_rtl/syn/run_timing.py        # every (K, W, P) of run_syn.SETS ->
                                              # syn/timing.{csv,md}, table in docs/hardware.md
    python fpga_rtl/syn/run_timing.py --rev REV --step descend --no-readme --out F.csv
                                              # the step as it was at git revision REV

A level of hrl_rmm is a registered memory read followed by a step: `hrl_descend_step`
(sample: K-child prefix sums, compare, remainder) or `hrl_update_step` (update: forwarding
select for P lanes, K-input adder tree, ceil(sum/K)). The steps are pipelined (parameter
LPS, adder levels per register stage, at its RTL default), so a step holds several
register-to-register stages; before that change (revisions up to c581805) a step was one
combinational stage from the memory output to the next level's registers. Each step is
synthesized alone (`synth_xilinx -family xcup -flatten`, the update step as the last lane,
LANE = P-1, which has the most forwarding) and measured two ways, over all its stages
(input ports and flip-flop outputs to flip-flop inputs and output ports):

* `lut_levels`: yosys `ltp` over LUT and MUXF cells only (carry chains and flip-flops cut),
  the cells of the longest path -- a lower bound on the logic levels for the carry chains,
  pessimistic for MUXF7/8 (in-slice muxes counted like a LUT);
* `sta_ns`: yosys `sta` with the delays of yosys's Xilinx cell models
  (`+/xilinx/cells_sim.v`: LUT, MUXF, CARRY4 and flip-flop clock-to-out arcs,
  7-series-derived figures; no routing), carry chains included.

Clock rule (UltraScale+, -2): a register-to-register path costs about 1 ns of fixed time
(clock-to-out of the memory or flip-flop, setup, clock skew and uncertainty) plus its
logic; the logic is taken as the larger of 0.5 ns per LUT level (a LUT plus an average
route) and the yosys `sta` figure (which includes the carry chains). So `est_MHz` =
1000 / (1 + max(0.5 * lut_levels, sta_ns)): 200 MHz needs <= 8 LUT levels and <= 4 ns,
300 MHz <= 4 levels and <= 2.3 ns. A rule of thumb for a first estimate, not a Vivado
timing report. The step's first stage starts at the memory's output and its last stage
ends at the next level's registers or the next read address; the address mux and the
memory's own clock-to-out and setup are in the 1 ns only.

The fraction multipliers of hrl_rmm (mulhi(r, stride) + i*stride, frac * root) map to
DSP48E2 cascades, which yosys has no timing model for; they are not measured here. They are
followed by MUL_REGS registers (hrl_mul_pipe), for the DSPs' MREG/PREG and cascade stages.
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
sys.path.insert(0, str(SYN))

from run_syn import SETS, replace_section  # noqa: E402

COLUMNS = ["step", "K", "W", "P", "lut_levels", "sta_ns", "est_MHz", "LUT", "CARRY",
           "seconds"]


def est_mhz(lut_levels: float, sta_ns: float) -> float:
    """The clock rule of the module docstring."""
    return round(1000.0 / (1.0 + max(0.5 * float(lut_levels), float(sta_ns))))


def step_script(step: str, k: int, w: int, p: int, node_bits: int, src_dir: Path) -> str:
    if step == "descend":
        params, src = f"-set K {k} -set W {w}", "hrl_descend_step.v"
    else:
        params = f"-set K {k} -set W {w} -set P {p} -set LANE {p - 1} -set NW {node_bits}"
        src = "hrl_update_step.v"
    top = f"hrl_{step}_step"
    return (f"read_verilog -sv {src_dir}/{src}\n"
            f"chparam {params} {top}\n"
            f"synth_xilinx -family xcup -top {top} -flatten\n"
            f"tee -o stat.txt stat\n"
            f"tee -o ltp.txt ltp t:LUT* t:MUXF* w:*\n"
            f"read_verilog -lib -specify +/xilinx/cells_sim.v\n"
            f"tee -o sta.txt sta\n")


def measure(step: str, k: int, w: int, p: int, node_bits: int, rev: str | None = None) -> dict:
    tag = f"{step}-K{k}-W{w}" + (f"-P{p}" if step == "update" else "") + (
        f"-{rev}" if rev else "")
    work = ROOT / "sim_build" / f"timing-{tag}"
    work.mkdir(parents=True, exist_ok=True)
    src_dir = FPGA / "rtl"
    if rev:  # the step's source at that revision
        src_dir = work
        name = f"hrl_{step}_step.v"
        text = subprocess.run(["git", "show", f"{rev}:fpga_rtl/rtl/{name}"], cwd=ROOT,
                              check=True, capture_output=True, text=True).stdout
        (work / name).write_text(text)
    (work / "run.ys").write_text(step_script(step, k, w, p, node_bits, src_dir))
    t0 = time.time()
    with open(work / "yosys.log", "w") as log:
        res = subprocess.run(["yosys", "-q", "-s", "run.ys"], cwd=work, stdout=log,
                             stderr=subprocess.STDOUT)
    seconds = time.time() - t0
    if res.returncode != 0:
        raise RuntimeError(f"yosys failed for {tag}; see {work / 'yosys.log'}")
    ltp = re.search(r"length=(\d+)", (work / "ltp.txt").read_text())
    sta = re.search(r"Latest arrival time in '\S+' is (\d+)", (work / "sta.txt").read_text())
    stat = (work / "stat.txt").read_text()
    cells = {name: int(n) for name, n in re.findall(r"^\s+(\S+)\s+(\d+)\s*$", stat, re.M)}
    # ltp's length is the number of selected cells (LUTs, MUXFs) on the longest path.
    return {"step": step + (f"@{rev}" if rev else ""), "K": k, "W": w,
            "P": p if step == "update" else "",
            "lut_levels": int(ltp.group(1)) if ltp else "",
            "sta_ns": round(int(sta.group(1)) / 1000, 2) if sta else "",
            "LUT": sum(v for c, v in cells.items() if re.fullmatch(r"LUT[1-6]", c)),
            "CARRY": cells.get("CARRY4", 0) + cells.get("CARRY8", 0),
            "seconds": round(seconds)}


def with_estimate(row: dict) -> dict:
    return {**row, "est_MHz": est_mhz(row["lut_levels"], row["sta_ns"])}


def markdown(rows: list[dict]) -> str:
    out = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    for r in rows:
        out += "| " + " | ".join(str(r[c]) for c in COLUMNS) + " |\n"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-readme", action="store_true")
    ap.add_argument("--rev", default=None, help="measure the steps as at this git revision")
    ap.add_argument("--step", choices=["descend", "update"], default=None,
                    help="only this step (default: both)")
    ap.add_argument("--out", default=str(SYN / "timing.csv"))
    ap.add_argument("--tabulate", action="store_true",
                    help="no yosys: rewrite the table (and README) from --out")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.tabulate:
        rows = [with_estimate(r) for r in csv.DictReader(out.read_text().splitlines())]
        return write(rows, out, not args.no_readme)
    jobs = []
    for k, d, p, w in SETS:
        s = (k - 1).bit_length()
        jobs.append(("descend", k, w, 1, 0))
        jobs.append(("update", k, w, p, d * s + 1))
    seen, rows = set(), []
    for step, k, w, p, nb in jobs:
        key = (step, k, w, p if step == "update" else 0)
        if key in seen or (args.step and step != args.step):
            continue
        seen.add(key)
        rows.append(with_estimate(measure(step, k, w, p, nb, args.rev)))
        print(rows[-1], flush=True)
    return write(rows, out, not args.no_readme)


def per_set(rows: list[dict]) -> str:
    """Per parameter set of run_syn.SETS: the slowest of its two steps by the rule."""
    est = {(r["step"], int(r["K"]), int(r["W"]), str(r["P"])): int(r["est_MHz"]) for r in rows}
    out = ("| K | D | P | W | descend est. MHz | update est. MHz | set est. MHz |\n"
           "|---|---|---|---|---|---|---|\n")
    for k, d, p, w in SETS:
        a, b = est.get(("descend", k, w, "")), est.get(("update", k, w, str(p)))
        if a is None or b is None:
            continue
        out += f"| {k} | {d} | {p} | {w} | {a} | {b} | {min(a, b)} |\n"
    return out


CLOCK_TABLE = ROOT / "hrl" / "mapping" / "rmm_clock.py"


def write_clock_table(rows: list[dict], path: Path = CLOCK_TABLE) -> None:
    """The per-step estimates as a small Python table for hrl.mapping.fpga."""
    desc = {(int(r["K"]), int(r["W"])): int(r["est_MHz"]) for r in rows
            if r["step"] == "descend"}
    upd = {(int(r["K"]), int(r["W"]), int(r["P"])): int(r["est_MHz"]) for r in rows
           if r["step"] == "update"}
    path.write_text(
        '"""Estimated clock of the RMM RTL per step, from fpga_rtl/syn/timing.csv.\n\n'
        'Generated by fpga_rtl/syn/run_timing.py (do not edit). The rule (UltraScale+ -2):\n'
        'est_MHz = 1000 / (1 + max(0.5 ns x LUT levels, yosys sta ns)) per register-to-register\n'
        'stage of the step; see docs/hardware.md, "Clock and logic depth".\n"""\n\n'
        "# (K, W) -> MHz of hrl_descend_step\n"
        "DESCEND_MHZ = {\n" + "".join(f"    {k!r}: {v},\n" for k, v in sorted(desc.items()))
        + "}\n"
        "# (K, W, P) -> MHz of hrl_update_step (the last of P lanes)\n"
        "UPDATE_MHZ = {\n" + "".join(f"    {k!r}: {v},\n" for k, v in sorted(upd.items()))
        + "}\n")


def write(rows: list[dict], out: Path, readme: bool) -> int:
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(rows)
    if not any("@" in str(r["step"]) for r in rows):
        table += "\nPer parameter set (the slower step; multipliers not included):\n\n"
        table += per_set(rows)
        if out.resolve() == (SYN / "timing.csv").resolve():
            write_clock_table(rows)
    out.with_suffix(".md").write_text(table)
    if readme:
        replace_section(FPGA.parent / "docs" / "hardware.md", "timing", table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
