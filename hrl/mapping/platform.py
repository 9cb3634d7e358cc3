"""Placements (where a primitive can run) and the latency each one predicts for a workload.

A *placement* is a device plus the backend that runs primitives on it: `cpu` (JAX on the
host CPU), `pocl` (the OpenCL replay backend on PoCL's CPU device), `rtl` (the RTL replay
manager in simulation), `gpu` (JAX on a GPU), `fpga:u250` (the RMM and an MLP learner on an
Alveo board). Several placements can share one physical *resource* (pocl, rtl and cpu all
use the host CPU), which is what bounds relaxed-mode iterations.

Each placement predicts seconds per call from one of three sources, and says which:
* `measured`: linear models fitted to a profile taken on this machine (`hrl profile`);
* `fpga-model`: the RTL's cycle counts, a clock and a board budget (`hrl.mapping.fpga`);
* `gpu-spec`: public specifications plus stated assumptions (`specs/*.yaml`), for planning
  only -- never reported as a measurement.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import yaml

from hrl.mapping import fpga as fpga_model
from hrl.mapping.model import LinearModel
from hrl.mapping.workload import BYTES_F32, CALL_PRIMITIVE, Workload, learner_key

SPEC_DIR = Path(__file__).parent / "specs"
NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class Placement:
    name: str
    kind: str  # jax | opencl | rtl-sim | fpga-model | gpu-spec
    resource: str  # the physical device whose time a call uses
    link: str  # "local" (host memory itself), "host" (a host memcpy) or a PCIe link name
    primitives: frozenset
    source: str  # measured | fpga-model | gpu-spec
    latency: Callable[[str, Workload], float] = dataclasses.field(compare=False, repr=False)
    # An exclusive placement runs a whole iteration or nothing: the fused loop (`cpu-fused`)
    # traces all five primitives into one jitted scan, so it cannot host only some of them.
    exclusive: bool = False
    # The device whose call queue the placement's calls join (None: its own). The XLA tree
    # (`cpu-xla`) runs on the learner's device: XLA runs that device's calls in the order they
    # were issued, so relaxed dependency cannot overlap it with train (`dse`).
    queue: str | None = None

    @property
    def queue_name(self) -> str:
        return self.queue or self.name

    def seconds(self, call: str, workload: Workload) -> float:
        """Predicted seconds of one `call`, NaN if this placement cannot run it."""
        if CALL_PRIMITIVE[call] not in self.primitives:
            return NAN
        # A gymnasium env is Python stepped by the host: only the host CPU can run it.
        if call == "env" and workload.env_kind == "gymnasium" and not (
                self.kind == "jax" and self.resource == "cpu"):
            return NAN
        return float(self.latency(call, workload))


def call_key(call: str, workload: Workload) -> str:
    """The profile's name for a call: env and learner calls depend on the env / algorithm,
    and a conv net's learner calls have models of their own (`infer:dqn:conv`): per FLOP its
    convolutions do not run at the dense layers' rate (`workload` module docstring), so
    they are priced only from rows that timed conv nets."""
    if call == "env":
        return f"env:{workload.env_kind}:{workload.env_id}"
    if call in ("infer", "train"):
        return learner_key(call, workload.algo, workload.network)
    return call



# ----------------------------------------------------------------------------- measured
def measured_placement(name: str, models: dict[tuple, LinearModel], kind: str = "jax",
                       resource: str = "cpu", link: str = "local",
                       exclusive: bool = False, queue: str | None = None) -> Placement:
    """A placement whose latencies come from fitted profile models keyed (call_key, name).

    `insert` falls back to the `update` model (same tree work, M leaves) when it was not
    profiled on its own. A call with no model is NaN (the placement cannot run it).
    """
    have = {c for (c, p) in models if p == name}
    prims = set()
    for c in have:
        base = c.split(":")[0]
        if base in CALL_PRIMITIVE:
            prims.add(CALL_PRIMITIVE[base])

    def latency(call: str, w: Workload) -> float:
        key = call_key(call, w)
        model = models.get((key, name))
        if model is None and call == "insert":
            model = models.get(("update", name))
        return NAN if model is None else float(model(w.work(call)))

    return Placement(name, kind, resource, link, frozenset(prims), "measured", latency,
                     exclusive, queue)


# ----------------------------------------------------------------------------- FPGA
DEFAULT_LEARNER = fpga_model.ArrayLearner()


def fpga_placement(board_name: str, timing: fpga_model.RmmTiming | None = None,
                   logic: fpga_model.LogicCoefficients | None = None,
                   learner: fpga_model.ArrayLearner | None = DEFAULT_LEARNER,
                   name: str | None = None) -> Placement:
    """The RMM (sample, update, insert) and, unless `learner` is None, the learning module
    (infer, train; `fpga_model.ArrayLearner`) on a board, named `name` (default
    `fpga:<board>`; `fpga:<board>:<RxC>` for a learner of another array, so that a plan
    compares two). The RMM architecture (K, lanes) is
    the fastest one that fits the board for the workload's capacity; the tree keeps the
    workload's K when that fits (the software and hardware trees then agree on sampling),
    else the best fitting K is used.

    Where the learner's resources are known (`learner.use`, `fpga_model.learner_use`): a
    learner that does not fit the board by itself is left off it (the placement then has no
    infer and train; the plan's notes say why, `fpga_model.learner_misfit`), and the RMM is
    sized in what the learner leaves (`fpga_model.board_less`)."""
    board = fpga_model.get_board(board_name)
    timing = timing or fpga_model.RmmTiming()
    logic = logic or fpga_model.LogicCoefficients()
    if learner is not None and fpga_model.learner_misfit(learner.use, board):
        learner = None
    rmm_board = board if learner is None or learner.use is None else \
        fpga_model.board_less(board, learner.use.as_dict())
    beside = "" if rmm_board is board else f" beside the {learner.rows}x{learner.cols} learner"

    def arch_for(w: Workload) -> dict:
        rows = [r for r in fpga_model.explore(w.capacity, rmm_board, w.batch_size, timing,
                                              logic) if r["fits"]]
        if not rows:
            raise ValueError(f"no RMM architecture holds {w.capacity} leaves on "
                             f"{board.name}{beside}")
        same_k = [r for r in rows if r["fanout"] == w.fanout]
        return min(same_k or rows, key=lambda r: (r["sample_s"], r["util_uram"] + r["util_bram36"]))

    def latency(call: str, w: Workload) -> float:
        if call in ("sample", "update", "insert"):
            arch = arch_for(w)
            n = w.num_envs * w.rollout_length if call == "insert" else w.batch_size
            return timing.seconds(n, arch["depth"], arch["lanes"], arch["fanout"])
        if call in ("infer", "train"):
            if w.conv_layers:  # its array runs dense layers only (`fpga.learner_seconds`)
                return NAN
            return fpga_model.learner_seconds(learner, call, w)
        return NAN

    prims = {"sample", "update"} | ({"infer", "train"} if learner is not None else set())
    name = name or f"fpga:{board_name}"
    return Placement(name, "fpga-model", name, board.link, frozenset(prims), "fpga-model",
                     latency)


# ----------------------------------------------------------------------------- GPU spec
@dataclasses.dataclass(frozen=True)
class GpuSpec:
    name: str
    device: str
    fp32_flops: float
    mem_bandwidth: float
    link: str
    compute_efficiency: float
    memory_efficiency: float
    dispatch_s: float
    kernel_s: float

    @classmethod
    def load(cls, path: str | Path) -> GpuSpec:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"GPU spec file {str(path)!r} does not exist")
        data = yaml.safe_load(path.read_text())
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        missing = fields - set(data)
        if unknown or missing:
            raise ValueError(f"GPU spec {path}: unknown keys {sorted(unknown)}, "
                             f"missing keys {sorted(missing)}")
        return cls(**{k: (float(v) if k not in ("name", "device", "link") else str(v))
                      for k, v in data.items()})


def gpu_spec_placement(spec: GpuSpec, fused: bool = False) -> Placement:
    """A GPU modelled as dispatch + dependent kernels + FLOPs/peak + bytes/bandwidth, every
    term from the spec file (see specs/*.yaml: public numbers and labelled assumptions).

    `fused`: the whole iteration in one jitted scan on the GPU (`gpu-fused`, exclusive like
    `cpu-fused`): no per-call dispatch, only the kernels."""
    dispatch = 0.0 if fused else spec.dispatch_s

    def latency(call: str, w: Workload) -> float:
        layers = len(w.policy_layers()) - 1 + len(w.conv_layers)
        nets = len(w.networks())
        kd = w.fanout * w.depth
        if call == "env":
            kernels, flops, nbytes = 1, 0.0, 4.0 * w.num_envs * w.obs_dim * BYTES_F32
        elif call == "infer":
            kernels, flops = layers, w.infer_flops()
            nbytes = BYTES_F32 * (w.n_params(w.policy_layers()) + w.num_envs * w.obs_dim)
        elif call == "train":
            kernels, flops = 3 * layers * nets + 4, w.train_flops()
            nbytes = BYTES_F32 * (6 * w.params + w.batch_size * w.transition_bytes)
        elif call == "sample":
            kernels, flops = w.depth + 2, 0.0
            nbytes = BYTES_F32 * w.batch_size * kd + w.batch_size * w.transition_bytes
        elif call in ("update", "insert"):
            n = w.num_envs * w.rollout_length if call == "insert" else w.batch_size
            kernels, flops, nbytes = w.depth + 2, 0.0, 2.0 * BYTES_F32 * n * kd
        else:
            return NAN
        return (dispatch + kernels * spec.kernel_s
                + flops / (spec.fp32_flops * spec.compute_efficiency)
                + nbytes / (spec.mem_bandwidth * spec.memory_efficiency))

    return Placement(f"{spec.name}-fused" if fused else spec.name, "gpu-spec", spec.name,
                     spec.link, frozenset({"env", "infer", "sample", "update", "train"}),
                     "gpu-spec", latency, exclusive=fused)


def default_gpu_spec() -> GpuSpec:
    return GpuSpec.load(SPEC_DIR / "gpu_h100_sxm.yaml")


def latency_table(placements: list[Placement], workload: Workload, calls) -> list[list[float]]:
    """seconds[call][placement] (NaN where a placement cannot run a call)."""
    out = []
    for c in calls:
        row = []
        for p in placements:
            try:
                t = p.seconds(c, workload)
            except ValueError:  # e.g. the buffer does not fit the board
                t = NAN
            row.append(t if (t == t and t >= 0 and math.isfinite(t)) else NAN)
        out.append(row)
    return out
