"""A clock estimate of the FPGA learner's RTL, unit by unit and for the whole training
kernel, by the same yosys rule as the replay manager's (fpga_rtl/syn/run_timing.py).

    python experiments/rtl/learner_clock.py              # -> experiments/results/
        fpga_learner/clock.{csv,md}: the units (minutes), then the DQN and the DDPG
        kernel (several minutes each)
    python experiments/rtl/learner_clock.py --units-only # the units; the kernels' rows kept
    python experiments/rtl/learner_clock.py --kernels ddpg  # one whole kernel (minutes)
    python experiments/rtl/learner_clock.py --arrays 16x16 8x32  # only the engine and the
        walk at those arrays (tens of minutes each); the other rows kept
    python experiments/rtl/learner_clock.py --table      # clock.md from clock.csv, no yosys

Each row is one design synthesized flattened (`synth_xilinx -family xcup -flatten`) and
timed two ways: yosys `ltp` over LUT and MUXF cells (`lut_levels`, carry chains and
flip-flops cut) and yosys `sta` with the Xilinx cell models' delays (`sta_ns`, the latest
arrival over every path). `est_MHz` = 1000 / (1 + max(0.5 x lut_levels, sta_ns)), the
RMM's rule: 200 MHz needs at most 8 levels and 4 ns. `where`: the RTL source lines and
instances the longest sta path passes, as yosys names its cells and wires (a guide, not
exact: logic that synthesis shared between instances carries one instance's name).
`dsp_unregistered`: DSP48E2 cells with neither MREG nor PREG set; yosys has no timing
arcs for a DSP48E2, so a path through one of these counts none of the multiply's delay,
and the estimate is optimistic there.

A unit alone is timed from its input ports (arrival 0), as if a register drove each; the
kernel row (hrl_learn_kernel at the all-FPGA run's parameters,
hrl.fixed_point.kernel_host.DEFAULT_SHAPE: the 4 x 4 array with DQN's step module) times
every path in its context, and so does the DDPG kernel's row (DEFAULT_DDPG_SHAPE: the same
array with DDPG's step module, TRAIN = 2). The paths that set most units' depth do not grow
with the array (the array's columns are alike), but some do, by log2 of the lanes: the banks'
rotators and the activation unit's saturation count (timed alone at 16 and 32 lanes), the
engine's operand windows over max(R, C) lanes and the walk's saturation sums over C lanes. So
`--arrays 16x16 8x32` also times the engine and the two step modules' walks (DQN's, and
DDPG's with its Polyak target lanes), each flattened alone at that array with the kernel's
other parameters (tens of minutes and several GB of yosys each, so not in the default run;
their rows are kept by the other runs). An array's clock (`array_clock`) is the slowest of
the kernel's row and the rows of its lane counts (its DDPG clock: of both kernels' rows,
those lane rows and DDPG's walk's): the 32 x 32 array's engine is not timed (flattened, it
is past this machine's memory), and the 8 x 32 engine's row, whose windows and banks have
the same 32 lanes, stands for it.

Not a Vivado timing report: no placement, no routing (the rule's 1 ns stands for it), no
DSP or block-RAM delays.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_table  # noqa: E402
from learner_resources import (  # noqa: E402
    ARRAY,
    LOSS_FORMATS,
    OUT,
    RTL,
    TARGET_FORMATS,
    WORK,
    _read_rows,
    _yosys,
    kernel_sources,
    shape,
)

NARROW = ["hrl_learn_narrow.v"]
ROOT_SRCS = NARROW + ["hrl_learn_rsqrt_rom.v", "hrl_learn_rsqrt.v"]
TD_SRCS = ["hrl_delay.v", "hrl_learn_td.v"]  # the TD pipeline both loss units share
# (row name, top, sources, parameters set by chparam): the learner's formats (learner_resources)
UNITS = [
    ("narrowing (array)", "hrl_learn_narrow", NARROW,
     {"IW": ARRAY["ACCW"], "OW": ARRAY["OW"], "SMAX": ARRAY["ACCW"], "PIPE": 3}),
    ("processing element", "hrl_learn_mac_pe", ["hrl_learn_mac_pe.v"],
     {k: ARRAY[k] for k in ("AW", "BW", "ACCW")}),
    ("bank, 16 lanes", "hrl_learn_weight_bank", ["hrl_learn_weight_bank.v"],
     {"L": 16, "DW": ARRAY["OW"], "DEPTH": 1024, "IW": 9}),
    ("activation, 16 lanes", "hrl_learn_activation", ["hrl_learn_activation.v"],
     {"C": 16, "W": ARRAY["OW"]}),
    # The 8x32 and 32x32 arrays' lanes (max(R, C) bank lanes, C activation lanes), which the
    # 4x4 kernel row does not time: those paths grow with the lanes.
    ("bank, 32 lanes", "hrl_learn_weight_bank", ["hrl_learn_weight_bank.v"],
     {"L": 32, "DW": ARRAY["OW"], "DEPTH": 1024, "IW": 9}),
    ("activation, 32 lanes", "hrl_learn_activation", ["hrl_learn_activation.v"],
     {"C": 32, "W": ARRAY["OW"]}),
    ("DQN loss", "hrl_learn_loss_dqn", NARROW + TD_SRCS + ["hrl_learn_loss_dqn.v"], {}),
    ("DDPG loss", "hrl_learn_loss_ddpg", NARROW + TD_SRCS + ["hrl_learn_loss_ddpg.v"],
     LOSS_FORMATS),
    ("target, 1 lane", "hrl_learn_target", NARROW + ["hrl_learn_target.v"], TARGET_FORMATS),
    ("reciprocal square root", "hrl_learn_rsqrt", ROOT_SRCS, {}),
    ("Adam lane", "hrl_learn_adam", ROOT_SRCS + ["hrl_delay.v", "hrl_learn_adam.v"], {}),
    # The kernel's AXI write converter (the RMM kernel's too), at the learner kernel's
    # 512-bit bus and 4-word groups: its m_ready is an input here, as the bus drives it.
    ("AXI write converter, 512-bit", "hrl_words_to_beats", ["hrl_words_to_beats.v"],
     {"DW": 512, "G": 4}),
]
KERNEL = "training kernel, 4x4"
# The same kernel with DDPG's step module (TRAIN = 2, hrl_learn_step_ddpg): its own control,
# loss and clip passes and word rotator, on the same array. An array's DDPG clock
# (array_clock(..., "ddpg")) takes this row as well.
KERNEL_DDPG = "training kernel, 4x4, DDPG"
ARRAYS = ("16x16", "8x32")  # the arrays whose engine and walk --arrays times by default
ENGINE_SRCS = NARROW + ["hrl_learn_mac_pe.v", "hrl_learn_mac_array.v",
                        "hrl_learn_weight_bank.v", "hrl_learn_activation.v",
                        "hrl_learn_engine.v"]
WALK_SRCS = ROOT_SRCS + ["hrl_delay.v", "hrl_learn_adam.v", "hrl_learn_target.v",
                         "hrl_learn_walk.v"]
COLUMNS = ["design", "top", "lut_levels", "sta_ns", "est_MHz", "dsp", "dsp_unregistered",
           "where", "seconds"]


def est_mhz(levels: int, sta_ns: float) -> int:
    return round(1000.0 / (1.0 + max(0.5 * levels, sta_ns)))


def path_sources(sta_text: str) -> str:
    """Where the longest sta path runs, from its start: the RTL source lines (file:line)
    its cells are named after and the instances (a.b.c) its named wires belong to, each
    once, in the path's order."""
    body = sta_text.split("Latest arrival time", 1)[-1].split("Arrival histogram", 1)[0]
    seen: list[str] = []
    pattern = r"(hrl_\w+)\.v:(\d+)|\\((?:[A-Za-z_][\w\[\]]*\.)+)[A-Za-z_]\w*"
    for m in reversed(list(re.finditer(pattern, body))):
        tag = f"{m.group(1)}:{m.group(2)}" if m.group(1) else m.group(3).rstrip(".")
        if tag not in seen:
            seen.append(tag)
    return " ".join(seen)


def time_design(name: str, top: str, sources: list[str], params: dict,
                timeout: float) -> dict:
    """Synthesize `top` flattened and read its ltp, sta and DSP registers (one yosys run).
    A finished run of the same design and parameters newer than its sources is read again
    instead (the array rows take tens of minutes; delete sim_build/syn-learn to redo all)."""
    work = WORK / ("clock-" + re.sub(r"[^\w]+", "-", name).strip("-"))
    done, stamp = work / "sta.txt", work / "params.json"
    key = json.dumps({"top": top, "sources": sources, "params": params}, sort_keys=True)
    fresh = (done.exists() and stamp.exists() and stamp.read_text() == key
             and all(done.stat().st_mtime > (RTL / src).stat().st_mtime for src in sources))
    t0 = time.time()
    if not fresh:
        stamp.unlink(missing_ok=True)
        _yosys(top, sources, params, work, flat=True, timeout=timeout, extra=(
            "tee -o dsp.txt select -count t:DSP48E2\n"
            "tee -o dsp_comb.txt select -count t:DSP48E2 r:MREG=0 %i r:PREG=0 %i\n"
            "tee -o ltp.txt ltp t:LUT* t:MUXF* w:*\n"
            "read_verilog -lib -specify +/xilinx/cells_sim.v\n"
            "tee -o sta.txt sta\n"))
        (work / "seconds.txt").write_text(f"{round(time.time() - t0)}\n")
        stamp.write_text(key)
    ltp = re.search(r"length=(\d+)", (work / "ltp.txt").read_text())
    sta_text = (work / "sta.txt").read_text()
    sta = re.search(r"Latest arrival time in '\S+' is (\d+)", sta_text)
    if not ltp or not sta:
        raise RuntimeError(f"no ltp or sta result in {work}")

    def count(file: str) -> int:
        m = re.search(r"(\d+) objects", (work / file).read_text())
        return int(m.group(1)) if m else 0

    levels, sta_ns = int(ltp.group(1)), round(int(sta.group(1)) / 1000, 2)
    return {"design": name, "top": top, "lut_levels": levels, "sta_ns": sta_ns,
            "est_MHz": est_mhz(levels, sta_ns), "dsp": count("dsp.txt"),
            "dsp_unregistered": count("dsp_comb.txt"), "where": path_sources(sta_text),
            "seconds": int((work / "seconds.txt").read_text())}


def kernel_design(algo: str = "dqn") -> tuple[str, list[str], dict]:
    """The whole training kernel at the all-FPGA run's shape: DQN's (DEFAULT_SHAPE) or
    DDPG's (DEFAULT_DDPG_SHAPE: the same 4x4 array, six layers, TRAIN = 2)."""
    from hrl.fixed_point.kernel_host import DEFAULT_DDPG_SHAPE, DEFAULT_SHAPE
    from hrl.fixed_point.kernel_program import hdl_params

    shape = DEFAULT_DDPG_SHAPE if algo == "ddpg" else DEFAULT_SHAPE
    return "hrl_learn_kernel", kernel_sources(), hdl_params(shape)


def array_designs(array: str) -> list[tuple[str, str, list[str], dict]]:
    """The engine (its operand windows and banks over max(R, C) lanes), the DQN step's walk
    (its saturation sums over C lanes) and DDPG's (the target walk with Polyak lanes, no
    fold: "DDPG walk", which only DDPG's clock takes) at `array` (RxC), with the kernel's
    other parameters: (row name, top, sources, parameters), as UNITS."""
    r, c = shape(array)
    _, _, prm = kernel_design()
    engine = {k: prm[k] for k in ("AW", "BW", "OW", "NMAX", "NL", "BMAX", "BSMAX")}
    walk = {k: prm[k] for k in ("BW", "OW", "NMAX", "NL", "BMAX")}
    return [(f"engine, {max(r, c)} lanes ({array})", "hrl_learn_engine", ENGINE_SRCS,
             {**engine, "R": r, "C": c}),
            (f"walk, {c} lanes ({array})", "hrl_learn_walk", WALK_SRCS,
             {**walk, "R": r, "C": c, "TGT_WALK": 0, "FOLD": 1}),
            (f"DDPG walk, {c} lanes ({array})", "hrl_learn_walk", WALK_SRCS,
             {**walk, "R": r, "C": c, "TGT_WALK": 1, "FOLD": 0})]


def array_clock(rows: list[dict], array: str, algo: str = "dqn") -> tuple[int, list[str]]:
    """An array's clock estimate and the rows that set it: the slowest of the 4x4 kernel's
    row (every path in context, at 4 lanes) and the rows of the array's lane counts (the
    bank and the engine at max(R, C) lanes, the activation unit and the walk at C). For
    `algo` "ddpg" the DDPG kernel's row (KERNEL_DDPG) and DDPG's walk rows count too, where
    the table has them. A lane
    count the table has no row for takes the rows of the next count above it that it has
    (8 lanes the 16 lanes' rows: longer paths, so the estimate errs slow); past the largest,
    a ValueError. Rows the table lacks are left out, so the estimate is only as complete as
    the runs behind it."""
    r, c = shape(array)
    timed = sorted({int(m.group(1)) for x in rows
                    if (m := re.match(r"\w+, (\d+) lanes", x["design"]))})

    def at(lanes: int) -> int | None:
        if lanes <= 4:
            return None  # the 4x4 kernel's row times these paths in context
        above = [t for t in timed if t >= lanes]
        if not above:
            raise ValueError(f"clock.csv times no design at {lanes} lanes (array {array})")
        return above[0]

    wide, cols = at(max(r, c)), at(c)
    kernels = (KERNEL, KERNEL_DDPG) if algo == "ddpg" else (KERNEL,)
    walks = (f"walk, {cols} lanes", f"DDPG walk, {cols} lanes") if algo == "ddpg" \
        else (f"walk, {cols} lanes",)
    picked = [x for x in rows if x["design"] in kernels
              or (wide and x["design"].startswith((f"bank, {wide} lanes",
                                                    f"engine, {wide} lanes")))
              or (cols and x["design"].startswith((f"activation, {cols} lanes", *walks)))]
    if not picked:
        raise ValueError(f"clock.csv has no row for array {array}")
    mhz = min(int(x["est_MHz"]) for x in picked)
    return mhz, [x["design"] for x in picked if int(x["est_MHz"]) == mhz]


CLOCK_ARRAYS = ("4x4", "8x8", "16x16", "8x32", "32x32")  # the arrays clock.md states a clock for


def markdown_parts(rows: list[dict]) -> tuple[list[str], list[str]]:
    """clock.md's text before the table of `rows` and after it (the whole kernel's row and
    each array's clock)."""
    head = ["# FPGA learner: clock estimate (yosys, unit by unit and the whole kernel)", "",
            "Regenerate: `python experiments/rtl/learner_clock.py` (`--units-only` keeps the "
            "kernel's row), and `python experiments/rtl/learner_clock.py --arrays` for the "
            "engine and walk rows (tens of minutes each). Each design synthesized flattened "
            "for UltraScale+ and timed by "
            "yosys `ltp` (LUT/MUXF levels) and `sta` (the Xilinx cell models' delays); "
            "`est_MHz` = 1000 / (1 + max(0.5 x levels, sta_ns)), the replay manager's rule "
            "(200 MHz: at most 8 levels and 4 ns). `where`: the source lines of the longest "
            "path. `dsp_unregistered`: DSP48E2 cells with neither MREG nor PREG, whose "
            "multiply delay sta does not count (no timing arcs), so the estimate is "
            "optimistic where such a path is the longest. A unit is timed from its ports; "
            "the kernel row (the all-FPGA run's kernel: 4x4 array, DQN's step module) times "
            "every path in context, and so does the DDPG kernel's row (`--kernels ddpg`: "
            "the same array with DDPG's step module); the engine and walk rows time, alone, "
            "the parts "
            "whose paths grow with an array's lanes, at that array's shape. "
            "Not a Vivado report."]
    kern = [r for r in rows if r["design"] == KERNEL]
    if not kern:
        return head, []
    k = kern[0]
    foot = [f"The whole training kernel as written: {k['est_MHz']} MHz "
            f"({k['lut_levels']} levels, sta {k['sta_ns']} ns, through "
            f"{k['where'] or 'unnamed cells'}).", ""]
    for d in (r for r in rows if r["design"] == KERNEL_DDPG):
        foot += [f"With DDPG's step module: {d['est_MHz']} MHz ({d['lut_levels']} levels, "
                 f"sta {d['sta_ns']} ns, through {d['where'] or 'unnamed cells'}).", ""]
    foot += [
            "## Each array's clock", "",
            "The slowest of the kernel's row and the rows of the array's lane counts "
            "(`array_clock`: the bank and the engine at max(R, C) lanes, the activation unit "
            "and the walk at C; a lane count without rows takes the next one above: 8 lanes "
            "the 16 lanes' rows); the 32x32 engine is not timed (past this machine's memory "
            "flattened), the 8x32 engine's 32-lane row stands for it. cycles.md states each "
            "array's times at this clock; the DDPG column adds the DDPG kernel's row and "
            "DDPG's walk at C lanes (ddpg_step_cycles.md's times).", "",
            "| array | est_MHz | set by | DDPG est_MHz | DDPG set by |",
            "|---|---|---|---|---|"]
    for a in CLOCK_ARRAYS:
        mhz, by = array_clock(rows, a)
        dmhz, dby = array_clock(rows, a, "ddpg")
        foot.append(f"| {a} | {mhz} | {', '.join(by)} | {dmhz} | {', '.join(dby)} |")
    return head, foot


def write(rows: list[dict]) -> None:
    """clock.{csv,md} (results_table.write): `rows`, and the rows of clock.csv that this run
    did not time (read again at the end, so runs of different rows may overlap)."""
    names = {r["design"] for r in rows}
    kept = [r for r in _read_rows(OUT / "clock.csv") if r["design"] not in names]
    order = [n for n, *_ in UNITS] + [KERNEL, KERNEL_DDPG]
    rows = sorted(rows + kept, key=lambda r: (order.index(r["design"]) if r["design"] in order
                                              else len(order), r["design"]))
    results_table.write(OUT, "clock", rows, COLUMNS, *markdown_parts(rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--units-only", action="store_true",
                    help="time the units only; keep the kernel's row of clock.csv")
    ap.add_argument("--arrays", nargs="*", metavar="RxC", default=None,
                    help="time only the engine and the walk at each array (none given: "
                         + " ".join(ARRAYS) + "); keep the other rows")
    ap.add_argument("--kernels", nargs="+", choices=("dqn", "ddpg"), default=None,
                    help="time only these whole kernels (4x4); keep the other rows")
    ap.add_argument("--table", action="store_true",
                    help="no synthesis: rewrite clock.{csv,md} from clock.csv")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds per yosys run")
    args = ap.parse_args(argv)
    if args.table:
        write([])
        return 0
    kernels = {"dqn": KERNEL, "ddpg": KERNEL_DDPG}
    if args.arrays is not None:
        designs = [d for a in (args.arrays or ARRAYS) for d in array_designs(a)]
    elif args.kernels:
        designs = [(kernels[k], *kernel_design(k)) for k in args.kernels]
    else:
        designs = list(UNITS)
        if not args.units_only:
            designs += [(kernels[k], *kernel_design(k)) for k in kernels]
    rows = []
    for name, top, srcs, prm in designs:
        print(f"{name}: yosys flattened", flush=True)
        rows.append(time_design(name, top, srcs, prm, args.timeout))
        print(rows[-1], flush=True)
    write(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
