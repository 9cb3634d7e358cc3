"""What a profile measures: the size grids, the loop and overlap settings, the names of its
rows' calls. Constants only (and `Setting`); no JAX, so any module may import it cheaply."""

from __future__ import annotations

import dataclasses

# Grids: "quick" for tests and a first look, "full" for the reported profile. A grid may set
# "rounds": how many times every row is measured, the rounds one after another over the whole
# grid (default 1), and "merge": which round's row is kept, the one with the lowest latency
# ("min", the default) or the median one ("median"; `merge.merge_rounds`). Every round's rows
# are kept in profile.json ("rounds"), so a profile can be merged the other way later. A grid
# may set "loop_dispatch": "auto" to time each loop's rows in the one CPU dispatch runs use
# (`loops.loop_dispatches`), and "loop_builds": how many builds of each loop row's config are
# timed, the fastest kept (default 2).
GRIDS = {
    "quick": {"num_envs": (1, 16), "width": (32, 64), "batch": (16, 64),
              "capacity": (1 << 10, 1 << 13), "fanout": (16,), "repeats": 5, "scan": 20},
    "full": {"num_envs": (1, 8, 64, 512, 2048), "width": (64, 256, 1024),
             "batch": (32, 128, 512, 2048), "capacity": (1 << 12, 1 << 16, 1 << 20),
             "fanout": (4, 16), "repeats": 30, "scan": 100},
}


@dataclasses.dataclass
class Setting:
    """One grid point: the config overrides and the Workload they describe."""

    num_envs: int
    width: int
    batch: int
    capacity: int
    fanout: int


# Loop-bookkeeping settings: (actor steps L, SGD steps U) per iteration, at the grid's
# smallest sizes (`loop_sizes`), where the bookkeeping is the largest share of the iteration.
# Six points for three coefficients, so the fit has a leave-one-out error; L and U span the
# range runs use, because a fit on points at L, U <= 4 alone extrapolated badly to the runs'
# U (see experiments/results/mapping/).
LOOP_SETTINGS = ((1, 1), (4, 1), (1, 4), (16, 1), (1, 16), (16, 32))
# The fewest envs per actor step in each loop's rows. The host loops' rows run at least 8: at
# one env the pipelined executor's processes idle on every hand-off, and a residual fitted
# there overstates runs of 8-64 envs, the sizes these rows price.
LOOP_ENVS = {"fused": 1, "host": 8, "pipelined": 8}


def loop_sizes(grid: dict, loop: str) -> Setting:
    """The sizes `loop`'s rows run at: the profile grid's smallest point (at least
    LOOP_ENVS[loop] envs). A loop row's bookkeeping is its measured time less its primitives'
    predicted time, so the rows sit where the primitives were measured: below the grid, their
    models extrapolate, and the per-call intercepts measured at the grid's sizes made the
    primitives of a smaller loop cost more than the whole loop measured."""
    return Setting(num_envs=max(LOOP_ENVS[loop], min(grid["num_envs"])),
                   width=min(grid["width"]), batch=min(grid["batch"]),
                   capacity=min(grid["capacity"]), fanout=grid["fanout"][0])


# The fused loop runs a whole chunk of iterations in one call and pays a fixed cost per call
# (dispatch, the chunk's outputs handed back), while `hrl train` runs chunks of hundreds. Its
# rows at these (L, U) are timed again in chunks LOOP_LONG_CALL times as long, so that `plan`
# fits the cost per call apart from the cost per iteration.
FUSED_CALL_SETTINGS = ((1, 1), (16, 32))
LOOP_LONG_CALL = 8
LOOP_KINDS = ("fused", "host", "pipelined")
# The placement of the fused loop's rows timed on the GPU (`loops.profile_gpu_fused_loop`; the
# CPU's loop rows are placement "loop").
GPU_LOOP = "loop-gpu"
# The loops' rows by the name `hrl profile --only` takes (call `loop:<kind>`).
LOOP_ONLY = {f"loop-{kind}": kind for kind in LOOP_KINDS}
# The CPU dispatch each loop's rows are measured in, the one `train.cpu_dispatch: auto` gives it
# first: the fused loop always runs async; a host loop runs sync under auto
# (`cpu_backend.HOST_LOOP_DISPATCH`), async when a run pins it (its rows also show what async
# dispatch costs a host loop).
LOOP_DISPATCH = {"fused": ("async",), "host": ("sync", "async"), "pipelined": ("sync", "async")}
# The CPU dispatch a profiling process starts JAX in (each row records it): the host loops'
# (`cpu_backend.HOST_LOOP_DISPATCH`), whose calls the `dispatched` rows price. Async dispatch
# hands each call to a second thread and back, a cost the sync host loop does not pay, so
# rows timed async would overprice it. A fused row is one call per `scan` steps, so its
# dispatch is amortised; the loops' own rows are measured in processes of their own, in each
# loop's dispatch.
PROFILE_DISPATCH = "sync"

# The link rows, by the name `hrl profile --only` takes: call `link:<name>`.
LINK_ROWS = ("host", "process", "cpu-collective", "thread", "cpu-device", "gpu")
# profile.csv's columns (the timed rows; profile.json keeps every key).
ROW_FIELDS = ("call", "placement", "mode", "env", "algo", "num_envs", "width", "batch",
              "capacity", "fanout", "depth", "work", "latency_s", "p10_s", "p90_s", "cpu_s",
              "repeats")

COLLECTIVE_CALL = "link:cpu-collective"
HANDOFF_CALL = "link:thread"
CPU_DEVICE_CALL = "link:cpu-device"
GPU_CALL = "link:gpu"  # a batch from the CPU into a call on the GPU
HANDOFF_BATCH = 200  # round trips per timed call of the thread hand-off
# What relaxed dependency saves in the runtime's own loops, with the tree off the learner's
# device (`loops.overlap_rows_main`). Older profiles timed the replay thread beside train
# alone, out of the loop (`overlap:thread`, still read where a profile has no `overlap:loop`
# row); out of the loop it hid far more than relaxed runs saved, so the loop is timed now.
OVERLAP_CALL = "overlap:loop"
LEGACY_OVERLAP_CALL = "overlap:thread"
# The loops an overlap row times: envs, actor steps and SGD steps per iteration (an actor
# step per two SGD steps, as in most of the validation's settings: what relaxed saves in the
# pipelined executor depends on how much of the cores its actors' process takes), the
# executors, and iterations per timed run.
OVERLAP_LOOP = (8, 4, 8)
OVERLAP_EXECUTORS = ("sequential", "pipelined")
OVERLAP_ITERATIONS = 8
OVERLAP_MIN_REPEATS = 30  # timed runs of each loop per point, strict and relaxed in turns
COLLECTIVE_DEVICES = 2
COLLECTIVE_SIZES = (4, 1 << 10, 1 << 14, 1 << 17, 1 << 20)  # bytes all-reduced per psum
COLLECTIVE_MIN_SCAN = 200

# The RTL's tables copied into a profile (they feed the FPGA model, not a fit).
# written by experiments/rtl/report_cycles.py: the core's cycle counts per parameter set
RTL_CYCLE_CSVS = ("experiments/results/rtl/cycles.csv",)
RTL_RESOURCE_CSVS = ("fpga_rtl/syn/resources.csv",)  # written by fpga_rtl/syn/run_syn.py
# written by experiments/rtl/report_kernel_cycles.py: the XRT kernel's cycles per item against P
RTL_KERNEL_CSVS = ("experiments/results/rtl/kernel_cycles_fit.csv",)
# written by experiments/rtl/learner_cycles.py: the FPGA learner's cycles per network, batch, array
RTL_LEARNER_CSVS = ("experiments/results/fpga_learner/cycles.csv",)
# written by experiments/rtl/learner_resources.py: yosys's counts of the whole training kernel
# per array (--kernel), and of the array, its activation unit and banks alone (--array-only)
RTL_LEARNER_KERNEL_CSVS = ("experiments/results/fpga_learner/kernel.csv",)
RTL_LEARNER_RESOURCE_CSVS = ("experiments/results/fpga_learner/resources.csv",)
RTL_TABLE_CALLS = ("rtl-cycles", "rtl-kernel-cycles", "rtl-resources",
                   "rtl-learner-cycles", "rtl-learner-kernel",
                   "rtl-learner-resources")  # rows of the CSVs above
