"""Resources and a clock estimate of the FPGA learning module's RTL from yosys, per array size.

    python experiments/rtl/learner_resources.py        # every size in SIZES ->
        experiments/results/fpga_learner/resources.{csv,md}
    python experiments/rtl/learner_resources.py --size 8 --size 16
    python experiments/rtl/learner_resources.py --size 8x32   # an R x C array of SHAPES
    python experiments/rtl/learner_resources.py --array-only --size 32  # the array alone
    python experiments/rtl/learner_resources.py --kernel 4x4 16x16  # the training kernel ->
        experiments/results/fpga_learner/kernel.{csv,md}
    python experiments/rtl/learner_resources.py --units  # only the per-learner units ->
        experiments/results/fpga_learner/units.{csv,md}
    python experiments/rtl/learner_resources.py --table  # no synthesis: resources.md from
        resources.csv, the rows of runs finished since (sim_build/syn-learn), the clock of
        the existing resources.md

A size whose runs did not all finish has the rows of the modules that did, no total, and
the table's text names what is missing.

The same flow as the replay manager's (`fpga_rtl/syn/run_syn.py`): yosys `synth_xilinx
-family xcup` (UltraScale+, the Alveo U200 family), hierarchical, `stat -top` composing the
counts by instance; the cell counts are read by `run_syn.count_cells` (LUT, LUTRAM, FF,
BRAM36, URAM, DSP, CARRY). Each built module is synthesized as its own top at the learner's
formats (hrl.fixed_point.formats.FxFormats: 16-bit activations and weights, 18-bit deltas,
so 18 x 18 operands; 24-bit outputs; an exact 44-bit accumulator for K up to 256):
hrl_learn_mac_array (R = C = size; its processing element, hrl_learn_mac_pe, a module of
its own, mapped once and counted R x C times), hrl_learn_weight_bank (L = size lanes; one bank set
per matrix kind: weights, activations, deltas, each of DEPTH words per lane) and
hrl_learn_activation. `total` sums the array, the activation unit and three bank sets.
The arrays of SHAPES (R x C, not square: the 16 x 16's processing elements in a wider
shape) synthesize the array alone; their total takes the activation unit of C lanes and
the banks of max(R, C) lanes from the square size of that many lanes (the engine's banks:
hrl_learn_engine's header).

The per-learner units, which do not grow with the array (one sample or one parameter word a
cycle), are synthesized once at the same formats, into units.{csv,md}: the loss units
hrl_learn_loss_dqn (A = 2, CartPole's actions) and hrl_learn_loss_ddpg, and the target and
operand unit hrl_learn_target (P = 1 and 4 lanes), and one lane of the optimizer's Adam
(hrl_learn_adam, with its reciprocal square root and ROM). Every run writes them; `--units`
writes only them (a few minutes of yosys each at most).

Clock estimate: the narrowing unit (the array's deepest stage: a barrel shift of the
accumulator, the rounding compare, the clamp) is synthesized flattened alone and measured
by yosys `ltp` (LUT levels) and `sta` (yosys's Xilinx cell delays), with the RMM's rule
(fpga_rtl/syn/run_timing.py): est_MHz = 1000 / (1 + max(0.5 * lut_levels, sta_ns)). The
PE's 18 x 18 multiply maps to a DSP48E2; its 44-bit accumulate maps to LUTs and carry
chains in this flow; neither is timed by yosys here. A first estimate, not a Vivado timing report.
Each row records the yosys run time (wall seconds on a shared machine: effort, not a
benchmark).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "fpga_rtl" / "rtl"
sys.path.insert(0, str(ROOT / "fpga_rtl" / "syn"))

import run_syn  # noqa: E402

OUT = ROOT / "experiments" / "results" / "fpga_learner"
WORK = ROOT / "sim_build" / "syn-learn"
SIZES = [4, 8, 16, 32]
SHAPES = ["8x32"]  # arrays R x C of the same processing elements as a square size, wider
# The learner's operand, accumulator and output widths (see the module docstring).
ARRAY = {"AW": 18, "BW": 18, "BIASW": 16, "BSMAX": 24, "KMAX": 256, "ACCW": 44, "OW": 24,
         "TAGW": 8}
BANK_DEPTH = 1024  # words per lane: 16 lanes hold 16k words, a 128-128 MLP's weights
# The per-learner units at the learner's formats (hrl.fixed_point.formats.FxFormats): value
# Q24.8, prob Q17.15, delta Q18.12; master Q28.24, weight Q16.12, unit Q16.15.
LOSS_FORMATS = {"VW": 24, "VF": 8, "PW": 17, "PF": 15, "DW": 18, "DF": 12}
TARGET_FORMATS = {"P": 1, "MW": 28, "MF": 24, "WW": 16, "WF": 12, "UW": 16, "UF": 15}
# (module, sources, parameters set by chparam, parameters as reported). The DQN unit runs
# at its defaults, which are these: yosys cannot chparam its A (the action index width AB, a
# localparam, sizes a port declared before it).
UNITS = [
    ("hrl_learn_loss_dqn", ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v",
                            "hrl_learn_loss_dqn.v"], {},
     {"A": 2, **LOSS_FORMATS}),
    ("hrl_learn_loss_ddpg", ["hrl_learn_narrow.v", "hrl_delay.v", "hrl_learn_td.v",
                             "hrl_learn_loss_ddpg.v"], LOSS_FORMATS,
     LOSS_FORMATS),
    ("hrl_learn_target", ["hrl_learn_narrow.v", "hrl_learn_target.v"], TARGET_FORMATS,
     TARGET_FORMATS),
    ("hrl_learn_target", ["hrl_learn_narrow.v", "hrl_learn_target.v"],
     {**TARGET_FORMATS, "P": 4}, {**TARGET_FORMATS, "P": 4}),
    # One lane of the optimizer's Adam at its defaults (the FxFormats above): an array of C
    # columns updates C parameters a cycle with C lanes.
    ("hrl_learn_adam", ["hrl_learn_narrow.v", "hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v",
                        "hrl_delay.v", "hrl_learn_adam.v"], {},
     {"GW": 24, "GF": 12, "MW": 28, "MF": 16, "SW": 29, "SF": 20, "RW": 24, "RF": 12,
      "TW": 20, "TF": 16, "WW": 28, "WF": 24, "LW": 24, "LF": 24}),
]
UNIT_COLUMNS = ["module", "parameters", "LUT", "LUTRAM", "FF", "BRAM36", "URAM", "DSP",
                "CARRY", "seconds"]
MODULES = ("hrl_learn_mac_array", "hrl_learn_activation", "hrl_learn_weight_bank")
COLUMNS = ["module", "size", "LUT", "LUTRAM", "FF", "BRAM36", "URAM", "DSP", "CARRY",
           "seconds"]


def _yosys(top: str, sources: list[str], params: dict, workdir: Path, flat: bool,
           extra: str = "", timeout: float = 3600) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    chparam = ("chparam " + " ".join(f"-set {k} {v}" for k, v in params.items()) + f" {top}"
               if params else "")
    stat = "stat" if flat else f"stat -top {top}"
    script = (f"read_verilog -sv {' '.join(str(RTL / s) for s in sources)}\n{chparam}\n"
              f"synth_xilinx -family xcup -top {top}{' -flatten' if flat else ''}\n"
              f"tee -o stat.txt {stat}\n{extra}")
    (workdir / "run.ys").write_text(script)
    with open(workdir / "yosys.log", "w") as f:
        res = subprocess.run(["yosys", "-q", "-s", "run.ys"], cwd=workdir, stdout=f,
                             stderr=subprocess.STDOUT, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"yosys failed for {top} {params}; see {workdir / 'yosys.log'}")
    return (workdir / "stat.txt").read_text()


def shape(size) -> tuple[int, int]:
    """(R, C) of a table's `size`: N (an N x N array) or "RxC"."""
    if isinstance(size, str) and "x" in size:
        r, c = size.split("x")
        return int(r), int(c)
    return int(size), int(size)


def synthesize(module: str, size, timeout: float = 3600) -> dict:
    """One module at one array size (N or "RxC", the array only); returns its table row."""
    if module == "hrl_learn_mac_array":
        r, c = shape(size)
        srcs, prm = ["hrl_learn_narrow.v",
                     "hrl_learn_mac_pe.v", "hrl_learn_mac_array.v"], {"R": r, "C": c,
                                                                      **ARRAY}
    elif module == "hrl_learn_weight_bank":
        srcs, prm = ["hrl_learn_weight_bank.v"], {"L": size, "DW": 18, "DEPTH": BANK_DEPTH,
                                                  "IW": 9}
    elif module == "hrl_learn_activation":
        srcs, prm = ["hrl_learn_activation.v"], {"C": size, "W": 24, "SW": 32}
    else:
        raise ValueError(f"unknown module {module!r}")
    return {"module": module, "size": size,
            **_cached(module, srcs, prm, WORK / f"{module}-{size}", timeout)}


def _cached(top: str, srcs: list[str], prm: dict, work: Path, timeout: float) -> dict:
    """The cell counts and seconds of one hierarchical yosys run in `work`."""
    stat_file = work / "stat.txt"
    deps = [RTL / s for s in srcs]
    if stat_file.exists() and all(stat_file.stat().st_mtime > d.stat().st_mtime for d in deps):
        # A finished run newer than the RTL: reused (rerun after changing ARRAY,
        # BANK_DEPTH or UNITS by deleting sim_build/syn-learn).
        seconds = int((work / "seconds.txt").read_text()) \
            if (work / "seconds.txt").exists() else ""
        return {**run_syn.count_cells(stat_file.read_text()), "seconds": seconds}
    t0 = time.time()
    stat = _yosys(top, srcs, prm, work, flat=False, timeout=timeout)
    seconds = round(time.time() - t0)
    (work / "seconds.txt").write_text(f"{seconds}\n")
    return {**run_syn.count_cells(stat), "seconds": seconds}


def synthesize_kernel(array: str, timeout: float = 3600) -> dict:
    """The training kernel (hrl_learn_kernel with TRAIN = 1: the engine, the DQN step module
    with its loss, Adam and target lanes, the AXI ports and the control block) with the
    all-FPGA run's parameters (hrl.fixed_point.kernel_host.DEFAULT_SHAPE) but its array
    `array` (RxC), synthesized hierarchically from its filelist; its table row."""
    from hrl.fixed_point.kernel_host import DEFAULT_SHAPE
    from hrl.fixed_point.kernel_program import hdl_params

    r, c = shape(array)
    prm = {**hdl_params(DEFAULT_SHAPE), "R": r, "C": c}
    return {"module": "hrl_learn_kernel", "size": array,
            **_cached("hrl_learn_kernel", kernel_sources(), prm,
                      WORK / f"hrl_learn_kernel-{array}", timeout)}


def kernel_sources() -> list[str]:
    """The training kernel's sources (its filelist, fpga_rtl/rtl/hrl_learn_kernel.f), as
    names in RTL."""
    return [line.removeprefix("rtl/")
            for line in (RTL / "hrl_learn_kernel.f").read_text().split()]


def write_kernel(arrays: list[str], timeout: float) -> None:
    """kernel.{csv,md}: the training kernel's rows (synthesize_kernel), one per array of
    `arrays`; the rows of other arrays already in kernel.csv are kept."""
    from hrl.fixed_point.kernel_host import DEFAULT_SHAPE
    from hrl.fixed_point.kernel_program import hdl_params

    rows = [synthesize_kernel(a, timeout) for a in arrays]
    rows += [r for r in _read_rows(OUT / "kernel.csv") if r["size"] not in arrays]
    rows.sort(key=lambda r: _sort_key(r["size"]))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "kernel.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    params = ", ".join(f"{k} = {v}" for k, v in hdl_params(DEFAULT_SHAPE).items())
    (OUT / "kernel.md").write_text(
        "# FPGA learner: the training kernel's resources (yosys synth_xilinx -family xcup)\n\n"
        "Regenerate: `python experiments/rtl/learner_resources.py --kernel "
        + " ".join(str(r["size"]) for r in rows) + "`. The whole kernel "
        "of the all-FPGA run (`hrl_learn_kernel`, TRAIN = 1: the engine with its array and "
        "banks, the DQN step module with its loss unit and its C Adam and target lanes, the "
        "AXI master and the AXI4-Lite control block) with "
        f"`hrl.fixed_point.kernel_host.DEFAULT_SHAPE`'s parameters ({params}) but the "
        "row's array R x C, synthesized hierarchically from "
        "`fpga_rtl/rtl/hrl_learn_kernel.f`. Cell counts after yosys synthesis (its "
        "top-level I/O buffers not counted), not a placed Vivado result; `seconds`: yosys's "
        "wall time on a shared 2-core machine (effort, not a benchmark).\n\n"
        + markdown_table(rows))


def narrow_clock(timeout: float = 3600) -> dict:
    """LUT levels and yosys sta of the narrowing unit at the array's widths, as the array
    instantiates it (PIPE = 3): learner_clock.py's row of it (`ltp` over LUT and MUXF
    cells, carry chains and flip-flops cut; `sta` with yosys's Xilinx cell delays; the
    RMM's rule, fpga_rtl/syn/run_timing.py)."""
    import learner_clock  # imports this module: here, not at the top

    name, top, srcs, prm = learner_clock.UNITS[0]
    row = learner_clock.time_design(name, top, srcs, prm, timeout)
    return {k: row[k] for k in ("lut_levels", "sta_ns", "est_MHz")}


def _number(text: str):
    """A table cell read back from resources.csv: an int or float where it is one."""
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


def _read_rows(path: Path) -> list[dict]:
    """The rows of a table CSV this script wrote, numbers as numbers (_number); [] without
    one."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [{c: _number(v) for c, v in r.items()} for r in csv.DictReader(f)]


def _missing(rows: list[dict]) -> list[str]:
    """The modules of SIZES and the arrays of SHAPES with no row in `rows`."""
    have = {(r["module"], str(r["size"])) for r in rows}
    return ([f"{m} {n}x{n}" for n in SIZES for m in MODULES if (m, str(n)) not in have]
            + [f"hrl_learn_mac_array {s}" for s in SHAPES
               if ("hrl_learn_mac_array", s) not in have])


def markdown_table(rows: list[dict]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    return head + "".join("| " + " | ".join(f"{r[c]:g}" if isinstance(r[c], float)
                                             else str(r[c]) for c in COLUMNS) + " |\n"
                          for r in rows)


def markdown(rows: list[dict], clock: dict | None) -> str:
    text = ("# FPGA learner: resources (yosys synth_xilinx -family xcup)\n\n"
            "Regenerate: `python experiments/rtl/learner_resources.py`. Cell counts after "
            "yosys synthesis, not a placed Vivado result. `total` = array + activation unit + "
            "3 bank sets (weights, activations, deltas), for a size whose three modules all "
            "finished; for an R x C array (not square) the activation unit of C lanes and the "
            "banks of max(R, C) lanes are those of the square size with that many lanes. "
            "`seconds`: yosys's wall time on a shared 2-core machine (effort, not "
            "a benchmark). The array is synthesized hierarchically: its processing element "
            "(hrl_learn_mac_pe) is mapped once and counted R x C times. `--size N` adds size "
            "N and keeps the other sizes' rows; `--array-only` runs the array alone. "
            "The units the step module adds (the loss units, an Adam lane "
            "with its reciprocal square root, the target unit) are in units.md; the step "
            "module's sequencer (hrl_learn_step) and the kernel around it (hrl_learn_kernel, "
            "AXI) are in kernel.md (`--kernel`).\n\n"
            + markdown_table(rows))
    missing = _missing(rows)
    if missing:
        text += ("\nNot synthesized: " + ", ".join(missing) + ". These yosys runs did not "
                 "finish within the session that made this table (yosys at nice 10 on a "
                 "shared 2-core machine).\n")
    if clock:
        text += ("\n## Clock estimate\n\nThe narrowing unit (the array's output stage, "
                 f"{ARRAY['ACCW']}-bit accumulator to {ARRAY['OW']}-bit words, three register "
                 f"stages), flattened: {clock['lut_levels']} LUT/MUXF levels, yosys sta "
                 f"{clock['sta_ns']} ns; with the RMM's rule 1000 / (1 + max(0.5 ns x levels, "
                 f"sta)): **{clock['est_MHz']} MHz**. The PE's 18 x 18 multiply maps to a "
                 f"DSP48E2 and its {ARRAY['ACCW']}-bit accumulate (the bias-preload mux and "
                 f"the adder) to LUTs and carry chains in this flow; neither is timed "
                 f"here.\n\nThis is the array's clock, not the whole kernel's: "
                 "clock.md times every unit of the learner and the whole training kernel "
                 "by the same rule (`python experiments/rtl/learner_clock.py`), and the "
                 "kernel as written has longer paths than the array's, in the step module's "
                 "units (the figures at this clock hold for a kernel whose units are "
                 "pipelined to it).\n")
    return text


def units_markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(UNIT_COLUMNS) + " |\n|" + "---|" * len(UNIT_COLUMNS) + "\n"
    body = "".join("| " + " | ".join(f"{r[c]:g}" if isinstance(r[c], float) else str(r[c])
                                      for c in UNIT_COLUMNS) + " |\n" for r in rows)
    return ("# FPGA learner: the per-learner units (yosys synth_xilinx -family xcup)\n\n"
            "Regenerate: `python experiments/rtl/learner_resources.py --units`. Cell counts "
            "after yosys synthesis, not a placed Vivado result, at the learner's formats "
            "(hrl.fixed_point.formats.FxFormats). These units do not grow with the array: a "
            "loss unit takes one sample a cycle, the target unit P parameter words a cycle "
            "(rows for P = 1 and 4), an Adam lane one parameter a cycle (an array of C "
            "columns has C lanes). `seconds`: the yosys run's wall "
            "time on a shared machine (effort, not a benchmark).\n\n" + head + body)


def write_units(timeout: float) -> None:
    """Synthesize every unit of UNITS; write units.{csv,md}."""
    rows = []
    for module, srcs, chparam, shown in UNITS:
        name = "-".join([module, *(f"{k}{v}" for k, v in chparam.items())])
        try:
            cells = _cached(module, srcs, chparam, WORK / name, timeout)
        except subprocess.TimeoutExpired:
            print(f"{name}: did not finish in {timeout:.0f} s", flush=True)
            continue
        rows.append({"module": module,
                     "parameters": " ".join(f"{k}={v}" for k, v in shown.items()), **cells})
        print(rows[-1], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "units.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=UNIT_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    (OUT / "units.md").write_text(units_markdown(rows))


def _clock_of_table() -> dict | None:
    """The clock estimate the existing resources.md states (its narrowing unit's run)."""
    md = OUT / "resources.md"
    m = re.search(r"flattened: (\d+) LUT/MUXF levels, yosys sta ([\d.]+) ns.*?\*\*(\d+) MHz",
                  md.read_text(), re.S) if md.exists() else None
    return ({"lut_levels": int(m.group(1)), "sta_ns": float(m.group(2)),
             "est_MHz": int(m.group(3))} if m else None)


def write_table() -> None:
    """resources.{csv,md} from resources.csv and every module run of SIZES that finished
    in sim_build/syn-learn since (a run newer than the RTL), no synthesis."""
    rows = [r for r in _read_rows(OUT / "resources.csv") if r["module"] != "total"]
    have = {(r["module"], str(r["size"])) for r in rows}
    runs = [(m, n) for n in SIZES for m in MODULES] + [("hrl_learn_mac_array", s)
                                                       for s in SHAPES]
    for module, size in runs:
        work = WORK / f"{module}-{size}"
        if (module, str(size)) not in have and (work / "seconds.txt").exists():
            rows.append(synthesize(module, size))  # finished: _cached reads it
    _write(rows, _clock_of_table())


def _sort_key(size) -> tuple[int, int, int]:
    r, c = shape(size)
    return (r * c, c, r)


def _totals(rows: list[dict]) -> list[dict]:
    """`rows` (no totals) with a total after each size whose three modules are there."""
    out = []
    for size in sorted({r["size"] for r in rows}, key=_sort_key):
        parts = {r["module"]: r for r in rows if r["size"] == size}
        out += [parts[m] for m in MODULES if m in parts]
        r_, c_ = shape(size)
        if r_ != c_ and "hrl_learn_mac_array" in parts:
            # the other modules of an R x C array: those of the square sizes of as many
            # lanes (the activation unit C, the banks max(R, C))
            lanes = {"hrl_learn_activation": c_, "hrl_learn_weight_bank": max(r_, c_)}
            for m, n in lanes.items():
                got = [x for x in rows if x["module"] == m and x["size"] == n]
                if got:
                    parts[m] = got[0]
        if len(parts) == len(MODULES):
            secs = [p["seconds"] for p in parts.values()]
            total = {"module": "total", "size": size,
                     "seconds": sum(secs) if all(isinstance(x, int) for x in secs) else ""}
            for c in COLUMNS[2:-1]:
                total[c] = (parts["hrl_learn_mac_array"][c] + parts["hrl_learn_activation"][c]
                            + 3 * parts["hrl_learn_weight_bank"][c])
            out.append(total)
    return out


def _write(rows: list[dict], clock: dict | None) -> None:
    rows = _totals([r for r in rows if r["module"] != "total"])
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "resources.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    (OUT / "resources.md").write_text(markdown(rows, clock))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size", action="append", default=[],
                    help="array size N (R = C; every module) or RxC of SHAPES (the array "
                         "alone), repeatable; default: every size in SIZES and SHAPES")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per yosys run")
    ap.add_argument("--array-only", action="store_true",
                    help="synthesize only the array at each --size (no units, no clock "
                         "run); the other modules and the clock keep their rows")
    ap.add_argument("--kernel", nargs="*", metavar="RxC", default=None,
                    help="only the training kernel, with the all-FPGA run's parameters and "
                         "each array RxC given (none: the run's own, 4x4) -> "
                         "kernel.{csv,md}")
    ap.add_argument("--units", action="store_true",
                    help="only the per-learner units (loss, target, Adam) -> units.{csv,md}")
    ap.add_argument("--table", action="store_true",
                    help="no synthesis: rewrite resources.md from resources.csv and the "
                         "runs finished since")
    args = ap.parse_args(argv)
    if args.table:
        write_table()
        return 0
    if args.kernel is not None:
        from hrl.mapping.fpga import parse_array

        for a in args.kernel:
            try:
                parse_array(a)
            except ValueError as err:
                sys.exit(f"--kernel: {err}")
        write_kernel(args.kernel or ["4x4"], args.timeout)
        return 0
    if not args.array_only:
        write_units(args.timeout)
    if args.units:
        return 0
    sizes = [_size_arg(a) for a in args.size] or [*SIZES, *SHAPES]
    rows, clock = [], None
    if args.array_only:
        clock = _clock_of_table()
    else:
        try:
            clock = narrow_clock(args.timeout)
            print("clock", clock, flush=True)
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            print(f"clock estimate: {err}", flush=True)
    ran = set()
    for size in sizes:
        for module in (MODULES if isinstance(size, int) and not args.array_only
                       else MODULES[:1]):
            ran.add((module, str(size)))
            try:
                rows.append(synthesize(module, size, args.timeout))
                print(rows[-1], flush=True)
            except subprocess.TimeoutExpired:
                print(f"{module} {size}: did not finish in {args.timeout:.0f} s", flush=True)
    # The modules not run this time keep their rows from the existing table, so that one
    # size is added (`--size 16`) without synthesizing the others again.
    rows += [r for r in _read_rows(OUT / "resources.csv")
             if (r["module"], str(r["size"])) not in ran]
    _write(rows, clock)
    return 0


def _size_arg(text: str):
    """--size's value: N (an int) or RxC of SHAPES (a string); a one-line exit otherwise."""
    if text.isdigit():
        return int(text)
    if text in SHAPES:
        return text
    sys.exit(f"--size: {text!r} is neither an array size N nor one of SHAPES ({SHAPES})")


if __name__ == "__main__":
    sys.exit(main())
