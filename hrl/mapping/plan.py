"""From a saved profile and a device list to placements, an exploration and a chosen mapping.

    profile = load_profile("runs/profile-cartpole")
    result = plan(cfg, profile, devices=["cpu", "pocl", "gpu", "fpga:u250"])
    result.exploration.best("strict")

Device names for `--devices`:
* `cpu`  -- JAX on the host CPU: the host loop (`cpu`) and the fused loop (`cpu-fused`);
* `gpu`  -- JAX on a GPU: measured if the profile holds GPU rows, else modelled from
  `specs/gpu_h100_sxm.yaml` (public specs + assumptions, labelled as such everywhere);
* `cpu:1` -- the JAX replay tree alone on a second XLA CPU device (`placement.sample/update:
  cpu:1`; the learner stays on cpu:0), measured where the profile has it (the older
  spelling `cpu1` is read as `cpu:1`);
* `pocl`, `opencl<i>` -- the OpenCL replay backend on that device (measured);
* `rtl`  -- the RTL replay manager in simulation (measured, if the profile has it);
* `fpga:<board>` -- the RMM and MLP learner modelled on a board (u200, u250, u280) from the
  RTL's cycle counts (if profiled) and the board's resources; `fpga:<board>:<RxC>` with the
  learner's array R x C instead of 16x16 (`fpga:u250:8x32`; both may be listed, and the
  exploration compares them);
* `cpu*N`, `gpu*N` -- N devices of that kind (virtual CPU devices sharing the machine's cores,
  or GPUs): the placements of one, plus the data-parallel candidates of the fused loop on
  D = 1..N of them (`hrl.mapping.parallel`, `Plan.data_parallel`).

The executor model's constants come from `hrl.mapping.calibration` (`calibrate`: each
named, with the profile rows it is fitted on); the notes that describe a plan are
written by `hrl.mapping.notes` (`Plan.notes`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from hrl.mapping import dse, notes, parallel
from hrl.mapping import fpga as fpga_model
from hrl.mapping.calibration import MEASURED_KINDS, Calibration, calibrate, models_from_profile
from hrl.mapping.devices import normalize_placement
from hrl.mapping.links import Link
from hrl.mapping.model import LinearModel
from hrl.mapping.platform import (
    GpuSpec,
    Placement,
    default_gpu_spec,
    fpga_placement,
    gpu_spec_placement,
    measured_placement,
)
from hrl.mapping.rtl_tables import (
    learner_from_profile,
    logic_from_profile,
    rmm_timing_from_profile,
)
from hrl.mapping.uncertainty import profiled_box
from hrl.mapping.workload import CALLS, Workload


@dataclasses.dataclass
class Plan:
    """An exploration and what it was priced with; `notes` describes it (written by
    `hrl.mapping.notes` from these fields, on first read; a caller may append its own)."""

    workload: Workload
    placements: list[Placement]
    models: dict[tuple, LinearModel]
    links: dict[str, Link]
    exploration: dse.Exploration
    calibration: Calibration
    rmm_timing: fpga_model.RmmTiming
    logic: fpga_model.LogicCoefficients
    # The requested devices, each spelt once (`normalize_placement`), in order; and the GPU
    # spec the modelled `gpu` was priced from (None: no modelled GPU).
    devices: list[str] = dataclasses.field(default_factory=list)
    gpu_spec: GpuSpec | None = None
    # Data-parallel candidates per dependency mode (empty without a `KIND*N` device).
    data_parallel: dict = dataclasses.field(default_factory=dict)
    device_counts: dict = dataclasses.field(default_factory=dict)
    scaling: str = "weak"
    # Per workload size (num_envs, batch, width): the (lowest, highest) the profile measured.
    box: dict = dataclasses.field(default_factory=dict)
    # The FPGA learning module a modelled FPGA's infer and train are priced by; a device
    # `fpga:<board>:<RxC>` by its own (`fpga_learners`, by device name).
    learner: fpga_model.ArrayLearner = fpga_model.ArrayLearner()
    fpga_learners: dict = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def notes(self) -> list[str]:
        return notes.plan_notes(self)

    @property
    def overheads(self) -> dict:
        """The loops' fitted constants (`Calibration.loops`)."""
        return self.calibration.loops

    @property
    def cores(self) -> int:
        return self.calibration.cores

    @property
    def executor_errors(self) -> dict:
        """Per executor (fused, sequential, pipelined): the median relative error of its
        predicted iteration on the profile's own loop rows, out of sample
        (`calibration.executor_errors`); None where the profile has no such rows."""
        return self.calibration.executor_errors

    def ranked(self, mode: str, k: int = 10) -> list[tuple[str, float, object]]:
        """The top-k single-device mappings and every data-parallel candidate with D > 1,
        best first by predicted env steps per second: (label, env steps/s, row or
        candidate)."""
        e = self.exploration
        w = self.workload
        times = e.times(mode)
        out = [(dse.format_mapping(e.mapping(r)), w.num_envs * w.rollout_length / times[r], r)
               for r in e.top(mode, k)]
        out += [(c.label, c.env_steps_per_s, c) for c in self.data_parallel.get(mode, [])
                if c.devices > 1]
        return sorted(out, key=lambda x: -x[1])


def fpga_models(profile: dict | None) -> tuple[fpga_model.RmmTiming,
                                               fpga_model.LogicCoefficients,
                                               fpga_model.ArrayLearner]:
    """What a modelled FPGA is priced with, read from the RTL tables the profile carries:
    the RMM's timing, its logic coefficients and the learning module."""
    return (rmm_timing_from_profile(profile), logic_from_profile(profile),
            learner_from_profile(profile))


def fpga_learners(profile: dict | None, devices: list[str],
                  default: fpga_model.ArrayLearner) -> dict[str, fpga_model.ArrayLearner]:
    """The learner of each modelled FPGA of `devices` (`fpga:<board>` the `default`,
    `fpga:<board>:<RxC>` that array's, `learner_from_profile`). Raises a one-line
    ValueError naming a device whose array is not RxC."""
    out = {}
    for dev in devices:
        if dev.startswith("fpga:"):
            array = dev.split(":", 2)[2] if dev.count(":") >= 2 else ""
            try:
                out[dev] = learner_from_profile(profile, array) if array else default
            except ValueError as err:
                raise ValueError(f"device {dev!r}: {err}") from None
    return out


def placements_for(profile: dict | None, devices: list[str] | None,
                   gpu_spec: GpuSpec | None = None, metric: str = "wall",
                   models: dict | None = None, fpga: tuple | None = None
                   ) -> tuple[list[Placement], list[str], GpuSpec | None, dict]:
    """Placements for the requested devices (default: every measured one), the devices each
    spelt once, the GPU spec a modelled `gpu` is priced from (None: none modelled) and the
    learner of each modelled FPGA (`fpga_learners`). `fpga`: `fpga_models(profile)`, when
    the caller has read it already."""
    if models is None:
        models = models_from_profile(profile, metric) if profile else {}
    measured = sorted({p for (_, p) in models})
    if devices is None:
        devices = sorted({p.removesuffix("-fused") for p in measured})
    devices = [normalize_placement(d) for d in devices]  # `cpu1` reads as `cpu:1`
    out: list[Placement] = []
    timing, logic, learner = fpga or fpga_models(profile)
    learners = fpga_learners(profile, devices, learner)
    spec = None
    for dev in devices:
        if dev.startswith("fpga:"):
            out.append(fpga_placement(dev.split(":")[1], timing=timing, logic=logic,
                                      learner=learners[dev], name=dev))
            continue
        names = [p for p in measured if p == dev or p == f"{dev}-fused"]
        if names:
            for name in names:
                kw = MEASURED_KINDS.get(name, dict(kind="opencl", resource="cpu", link="host"))
                out.append(measured_placement(name, models, **kw))
            continue
        if dev == "gpu":
            spec = gpu_spec or default_gpu_spec()
            out += [gpu_spec_placement(spec), gpu_spec_placement(spec, fused=True)]
            continue
        raise ValueError(f"device {dev!r} is neither in the profile (measured: {measured}) nor "
                         "modelled (gpu, fpga:u200, fpga:u250, fpga:u280)")
    return out, devices, spec, learners


def plan(workload: Workload, profile: dict | None, devices: list[str] | None = None,
         staleness: int = 1, gpu_spec: GpuSpec | None = None, metric: str = "wall",
         scaling: str = "weak") -> Plan:
    """Explore every mapping of `workload` onto `devices`. `metric`: fit the profile's wall
    times (`wall`, what a quiet machine delivers) or its CPU times (`cpu`, comparable across
    loads on a shared machine; see `hrl.mapping.profile`). A device `KIND*N` adds the
    data-parallel candidates on 1..N devices of KIND, under `scaling` (weak or strong,
    `hrl.mapping.parallel`). Costs one `calibrate` and one `dse.explore`."""
    counts: dict[str, int] = {}
    if devices is not None:
        devices, counts = parallel.parse_devices(devices)
    if scaling not in parallel.SCALINGS:
        raise ValueError(f"scaling must be one of {parallel.SCALINGS}, got {scaling!r}")
    cal = calibrate(profile, metric)
    fpga = fpga_models(profile)
    placements, devices, spec, learners = placements_for(profile, devices, gpu_spec, metric,
                                                         cal.models, fpga)
    exp = dse.explore(placements, workload, staleness=staleness, link_overrides=cal.links,
                      loop_overhead=cal.constants(workload), process_link=cal.process_link,
                      host_cores=cal.cores)
    _check_every_call_has_a_placement(exp, workload, cal.models)
    data_parallel = {}
    if counts:
        data_parallel = {mode: parallel.candidates(
            placements, workload, counts, mode, staleness, cal.links, cal.loops["fused"],
            cal.cores, scaling) for mode in ("strict", "relaxed")}
    timing, logic, learner = fpga
    return Plan(workload, placements, cal.models, cal.links, exp, cal, timing, logic, devices,
                spec, data_parallel, counts, scaling, profiled_box(profile), learner,
                learners)


def _check_every_call_has_a_placement(exp, workload: Workload, models: dict) -> None:
    """A call no placement can run (a profile of another algorithm or env, say) leaves no
    feasible mapping: say which, and what the profile holds, instead of ranking nothing."""
    missing = [c for c, row in zip(CALLS, exp.problem.latency, strict=True)
               if not np.isfinite(row).any()]
    if missing:
        measured = sorted({call for call, _ in models})
        raise ValueError(
            f"no placement can run {', '.join(missing)} of this workload ({workload.algo} on "
            f"{workload.env_kind}:{workload.env_id}); the profile measures {measured}: "
            "profile this config with `hrl profile CONFIG`, or add --devices it can model"
        )


def profile_path_for(run_dir: str | Path) -> Path:
    return Path(run_dir) / "profile.json"
