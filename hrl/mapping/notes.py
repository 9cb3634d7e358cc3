"""The notes that describe a plan (`Plan.notes`, the report's opening list and the console's
`note:` lines): which devices are modelled and from what, what each executor's constants
were fitted on and how well (`calibration.Calibration`, each constant's `source`), and what
the data-parallel candidates assume. Written here from the plan's fields, not by the plan.
"""

from __future__ import annotations

from hrl.mapping import fpga as fpga_model
from hrl.mapping import parallel
from hrl.mapping.scaling import COLLECTIVE_LINK, UNMEASURED_RENDEZVOUS

# How each loop's fitted constants are named in a note (`Calibration.loops`' keys).
LOOP_NAMES = {"host": "host-loop bookkeeping", "fused": "fused-loop bookkeeping",
              "gpu-fused": "the GPU's fused-loop bookkeeping"}


def plan_notes(p) -> list[str]:
    """Every note on plan `p` (a `plan.Plan`), in the order the report lists them."""
    return [*device_notes(p), *executor_notes(p), *data_parallel_notes(p),
            *error_notes(p)]


def device_notes(p) -> list[str]:
    """One per modelled device: what its figures come from."""
    out = []
    for dev in p.devices:
        if dev.startswith("fpga:"):
            timing = p.rmm_timing
            clock = ("the RTL's yosys estimate per (K, P) (fpga_rtl/syn/timing.csv)"
                     if timing.clock_table else f"{timing.clock_hz / 1e6:.0f} MHz")
            out.append(f"{dev}: modelled (RMM timing: {timing.source}; clock "
                       f"{clock}; logic: {p.logic.source}; board "
                       "resources from its data sheet; learner: "
                       f"{_learner_note(p.fpga_learners.get(dev, p.learner), dev)})"
                       + (f"; {fpga_model.FPGA_NO_CONV} (network: {p.workload.conv_layers} "
                          "convolutions)" if p.workload.conv_layers else ""))
        elif dev == "gpu" and p.gpu_spec is not None:
            whole = p.calibration.loops["fused"].whole
            out.append(f"gpu, gpu-fused: MODELLED from public specs ({p.gpu_spec.device}), not "
                       "measured; gpu-fused is charged the fused-loop bookkeeping measured "
                       "on the CPU" + (" less the share of its calls' fixed costs the CPU's "
                                       "fused loop does not pay" if whole else "")
                       + " (an assumption)")
    return out


def _learner_note(learner, dev: str) -> str:
    """Where a modelled FPGA's learner figures come from: its times, its resources, and
    whether it fits the board (`platform.fpga_placement` leaves one that does not off it)."""
    board = fpga_model.get_board(dev.split(":")[1])
    if learner.use is None:
        resources = ("its resources unknown (no yosys table of the training kernel for this "
                     "array in the profile): its fit on the board not checked")
    else:
        misfit = fpga_model.learner_misfit(learner.use, board)
        share = fpga_model.utilisation(learner.use.as_dict(), board)
        most = max(share, key=share.get)
        resources = (f"resources {learner.use.source}: "
                     + (f"{misfit}, so infer and train stay off {dev}" if misfit else
                        f"fits {board.name}, at most {share[most]:.0%} of its {most.upper()}"))
    return f"{learner.source}; {resources}"


def executor_notes(p) -> list[str]:
    """The pipelined executor's link and wait, the relaxed dependency's hand-off and overlap,
    the metric, and each loop's fitted constants."""
    cal, w = p.calibration, p.workload
    out = []
    if cal.process_link is None:
        out.append("pipelined executor: no process link in the profile (re-profile); its "
                   "transfers are not costed")
    else:
        wait = cal.pipelined_wait
        out.append(f"pipelined executor: {cal.cores} host cores shared; "
                   f"{cal.process_link.source}; "
                   + (f"wait {wait.source}" if wait is not None else
                      "no loop:pipelined rows: the wait per iteration is not costed"))
    handoff = cal.thread_handoff
    out.append("relaxed dependency: update and sample beside train when the tree is on "
               "another placement than train, "
               + (f"{handoff * 1e6:.0f} us a thread hand-off per SGD step (link:thread)"
                  if handoff is not None else
                  "thread hand-offs not costed (no link:thread in the profile: re-profile)"))
    overlap, pipelined = cal.overlap(w), cal.overlap(w, "pipelined")
    for place, (eta, where) in overlap.items():
        out.append(f"relaxed dependency, tree on {place}: the replay thread hides "
                   f"{eta:.0%} of the shorter side in the sequential executor, "
                   f"{pipelined[place][0]:.0%} in the pipelined ({where}; below 0: "
                   "the two sides slow each other down more than they overlap)")
    unit = "CPU seconds of this process" if cal.metric == "cpu" else "wall-clock seconds"
    out.append(f"metric: {cal.metric} time ({unit})")
    for k, v in cal.loops.items():
        out.append(f"{LOOP_NAMES[k]}: {v(w) * 1e6:.1f} us per iteration ({v.source})")
    if cal.host_relaxed.source != cal.loops["host"].source:
        out.append(f"{LOOP_NAMES['host']}, relaxed: {cal.host_relaxed(w) * 1e6:.1f} us "
                   f"per iteration ({cal.host_relaxed.source})")
    return out


def data_parallel_notes(p) -> list[str]:
    """Per `KIND*N` device: what its candidates assume, or why there are none."""
    out = []
    if not p.device_counts:
        return out
    cores = p.calibration.cores
    for kind, n in p.device_counts.items():
        link = parallel.device_link(kind, p.links)
        out.append(
            f"{kind}*{n}: data-parallel candidates on D of {n} {kind} devices "
            f"({p.scaling} scaling; T_1 = the {kind}-fused prediction; "
            + (f"{cores} cores shared by the virtual devices" if kind == "cpu"
               else "own compute per device")
            + f"; collectives over {link.name}: {link.source})"
            + ("; " + UNMEASURED_RENDEZVOUS + ": that link prices a message by its "
               "bytes, while a collective between virtual CPU devices also waits on a "
               "rendezvous of their threads (re-profile to measure link:cpu-collective; "
               "experiments/bench/bench_scaling.py fits it on its measured points): read this "
               "curve as an upper bound"
               if kind == "cpu" and link.name != COLLECTIVE_LINK else "")
            + ("; the measured rendezvous is that of two otherwise idle devices: the "
               "data-parallel loop's devices also wait on each other's compute, which "
               "experiments/bench/bench_scaling.py measures"
               if kind == "cpu" and link.name == COLLECTIVE_LINK else ""))
        if not any(c.kind == kind for c in p.data_parallel["strict"]):
            out.append(f"{kind}*{n}: no data-parallel candidate: no {kind}-fused "
                       "placement for this workload (the fused loop needs a JAX env)"
                       if f"{kind}-fused" not in {q.name for q in p.placements} else
                       f"{kind}*{n}: no D > 1 divides env.num_envs, train.batch_size "
                       "and replay.capacity (strong scaling)")
    return out


def error_notes(p) -> list[str]:
    """Each executor's out-of-sample error on the profile's own loop rows."""
    return [f"{name} executor: "
            + (f"{err:.0%} median error on the profile's own {name} loop rows "
               "(out of sample)" if err is not None else
               "no loop rows in the profile to check it on")
            for name, err in p.calibration.executor_errors.items()]
