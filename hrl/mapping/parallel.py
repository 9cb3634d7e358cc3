"""D devices of one kind: the data-parallel candidates of the design-space exploration.

The exploration (`hrl.mapping.dse`) places each primitive on one device. A platform with
several devices of one kind (`--devices cpu*4`: four virtual CPU devices; `gpu*8`: eight
GPUs) can also run the fused loop on every one of them at once (`train.devices: D`,
`hrl.runtime.executors.data_parallel`: one replay shard per device, gradients averaged
every SGD step).
Each such candidate -- kind, D in 1..n, sampling global or local -- is costed with
`hrl.mapping.scaling.DataParallelModel`:

* T_1: the kind's fused-loop iteration (`<kind>-fused`, the exploration's own prediction from
  the profile: its calls plus the fused loop's measured bookkeeping) for one device's work;
* cores: virtual CPU devices share the profiled machine's cores (`machine.cpus`); GPUs have
  their own compute;
* the link between devices: for virtual CPU devices the profile's measured collective
  (`link:cpu-collective`: a ring step of a psum between two virtual CPU devices, the
  rendezvous of their threads included) when it has one, else its host memory copy
  (`link:host`, else the `host` assumption), which leaves the rendezvous out (optimistic: the
  report says so); NVLink 4 (assumed) between GPUs.

Two ways to give D devices work (`scaling`):

* `weak` (what `hrl map` reports, the figure of merit of data parallelism): every device does
  the config's whole iteration -- its M actors x L steps, its replay of N items, b = B samples
  of each of the U SGD steps (the global batch is D*B) -- so an iteration makes D*M*L env
  steps. Its config: train.devices=D, env.num_envs, train.batch_size, replay.capacity and
  learning_starts times D, train.train_ratio / D (still U SGD steps per iteration);
* `strong` (what `hrl train --mapping auto` runs: the config unchanged but for
  train.devices=D): the config's iteration split D ways, M/D actors, N/D items and B/D samples
  per device; D must divide M, B and N.

Throughput in env steps per second is what candidates are ranked by, single-device mappings
(M*L env steps per iteration) and D-device ones alike; under strong scaling every candidate
makes the same env steps per iteration, so that ranking is also one by iteration time.
"""

from __future__ import annotations

import dataclasses
import math
import re

from hrl.mapping import dse
from hrl.mapping.links import Link, get_link
from hrl.mapping.scaling import LINKS_BY_KIND, DataParallelModel, virtual_cpu_device_link
from hrl.mapping.workload import PRIMITIVES, Workload

KINDS = ("cpu", "gpu")  # device kinds the data-parallel loop runs on
SCALINGS = ("weak", "strong")
SAMPLINGS = ("global", "local")
MAX_DEVICES = 1024
_COUNT = re.compile(r"^([a-z][a-z0-9_-]*)\*(\d+)$")


def parse_devices(entries: list[str]) -> tuple[list[str], dict[str, int]]:
    """Split `--devices` entries into device names and device counts:
    ["cpu*4", "pocl", "gpu*2"] -> (["cpu", "pocl", "gpu"], {"cpu": 4, "gpu": 2}).

    `KIND*N` says the platform has N devices of KIND (cpu: virtual CPU devices sharing the
    machine's cores; gpu: GPUs); a plain name is one device. Raises ValueError naming the
    entry when it is malformed."""
    names: list[str] = []
    counts: dict[str, int] = {}
    for raw in entries:
        entry = raw.strip()
        if not entry:
            raise ValueError(f"--devices has an empty entry in {','.join(entries)!r}")
        if "*" not in entry:
            if entry in names:
                raise ValueError(f"--devices names {entry!r} twice")
            names.append(entry)
            continue
        m = _COUNT.match(entry)
        if m is None:
            raise ValueError(f"--devices entry {entry!r}: expected KIND*N with N a positive "
                             "integer, e.g. cpu*4 or gpu*8")
        kind, n = m.group(1), int(m.group(2))
        if kind not in KINDS:
            raise ValueError(f"--devices entry {entry!r}: only {' and '.join(KINDS)} run the "
                             f"data-parallel loop, so only they take a count (got {kind!r})")
        if not 1 <= n <= MAX_DEVICES:
            raise ValueError(f"--devices entry {entry!r}: the count must be in "
                             f"[1, {MAX_DEVICES}], got {n}")
        if kind in names:
            raise ValueError(f"--devices names {kind!r} twice ({entry!r})")
        names.append(kind)
        if n > 1:
            counts[kind] = n
    return names, counts


@dataclasses.dataclass(frozen=True)
class Candidate:
    """The fused loop on D devices of one kind (see the module docstring)."""

    kind: str
    placement: str  # the exploration's fused placement of the kind, e.g. cpu-fused
    devices: int
    sampling: str
    scaling: str
    mode: str  # dependency mode whose T_1 was used
    workload: Workload  # the config's workload (before any split)
    device_workload: Workload  # one device's share
    model: DataParallelModel
    speedup: float  # env steps/s relative to the same kind's one device

    @property
    def iteration_s(self) -> float:
        return self.model.iteration_time(self.devices)

    @property
    def env_steps_per_iter(self) -> int:
        per_device = self.device_workload.num_envs * self.device_workload.rollout_length
        return per_device * self.devices

    @property
    def sgd_per_iter(self) -> float:
        return self.workload.sgd_steps

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps_per_iter / self.iteration_s

    @property
    def samples_per_s(self) -> float:
        return self.sgd_per_iter * self.device_workload.batch_size * self.devices \
            / self.iteration_s

    @property
    def label(self) -> str:
        return f"{self.placement} x{self.devices} ({self.sampling})"

    def overrides(self, cfg=None) -> tuple[str, ...]:
        """Config overrides that make the runtime run this candidate. Weak scaling needs the
        config (`hrl.config.RunConfig`) to multiply its sizes by D."""
        out = [f"train.devices={self.devices}", "train.executor=fused", "replay.backend=jax",
               f"replay.sampling={self.sampling}"]
        if self.scaling == "weak" and self.devices > 1:
            if cfg is None:
                raise ValueError("weak-scaling overrides need the run config")
            d = self.devices
            out += [f"env.num_envs={cfg.env.num_envs * d}",
                    f"train.batch_size={cfg.train.batch_size * d}",
                    f"replay.capacity={cfg.replay.capacity * d}",
                    f"train.learning_starts={cfg.train.learning_starts * d}",
                    f"train.train_ratio={cfg.train.train_ratio / d!r}"]
        return tuple(out)


def share(workload: Workload, devices: int) -> Workload:
    """One device's workload when `workload` is split over `devices` (strong scaling)."""
    for name in ("num_envs", "batch_size", "capacity"):
        value = getattr(workload, name)
        if value % devices:
            raise ValueError(f"{devices} devices do not divide {name} ({value})")
    return dataclasses.replace(workload, num_envs=workload.num_envs // devices,
                               batch_size=workload.batch_size // devices,
                               capacity=workload.capacity // devices)


def device_counts(workload: Workload, n: int, scaling: str) -> list[int]:
    """The D in 1..n the runtime accepts: every D under weak scaling (the config grows with
    D); under strong scaling the D that divide env.num_envs, train.batch_size and
    replay.capacity (`train.devices` must)."""
    if scaling == "weak":
        return list(range(1, n + 1))
    g = math.gcd(workload.num_envs, workload.batch_size, workload.capacity)
    return [d for d in range(1, n + 1) if g % d == 0]


def device_link(kind: str, links: dict[str, Link]) -> Link:
    """The link between two devices of `kind` in one process (measured where the profile
    has it: the collective between virtual CPU devices, else their host memory copy)."""
    if kind == "cpu":
        return virtual_cpu_device_link(links)
    name = LINKS_BY_KIND[kind][0]
    return get_link(name, links)


def fused_iteration_s(placement, workload: Workload, mode: str, staleness: int,
                      links: dict[str, Link], fused_overhead, cores: int) -> float:
    """The exploration's prediction of one fused-loop iteration of `workload` on
    `placement` (its calls plus the fused loop's bookkeeping)."""
    exp = dse.explore([placement], workload, staleness=staleness, link_overrides=links,
                      loop_overhead={"fused": fused_overhead.fused_at(workload)}, host_cores=cores)
    return float(exp.times(mode)[exp.row_of({p: placement.name for p in PRIMITIVES})])


def candidates(placements: list, workload: Workload, counts: dict[str, int], mode: str,
               staleness: int, links: dict[str, Link], fused_overhead, cores: int,
               scaling: str = "weak", samplings=SAMPLINGS) -> list[Candidate]:
    """Every data-parallel candidate: for each kind with a count n > 1 and a fused placement,
    D in `device_counts(workload, n, scaling)`, each sampling mode."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    by_name = {p.name: p for p in placements}
    out: list[Candidate] = []
    for kind, n in counts.items():
        fused = by_name.get(f"{kind}-fused")
        if fused is None or n <= 1:
            continue
        link = device_link(kind, links)
        process = get_link(LINKS_BY_KIND[kind][1], links)
        for sampling in samplings:
            base_rate = None
            for d in device_counts(workload, n, scaling):
                dev_w = workload if scaling == "weak" else share(workload, d)
                t1 = fused_iteration_s(fused, dev_w, mode, staleness, links, fused_overhead,
                                       cores)
                if not math.isfinite(t1):
                    break  # the fused placement cannot run this workload (a gymnasium env)
                model = DataParallelModel(
                    iteration_s=t1, cores=cores if kind == "cpu" else None, device_link=link,
                    process_link=process, param_bytes=4 * workload.params,
                    row_bytes=workload.transition_bytes, batch_per_device=dev_w.batch_size,
                    sgd_per_iter=workload.sgd_steps, sampling=sampling)
                c = Candidate(kind, fused.name, d, sampling, scaling, mode, workload, dev_w,
                              model, 1.0)
                if base_rate is None:
                    base_rate = c.env_steps_per_s
                out.append(dataclasses.replace(c, speedup=c.env_steps_per_s / base_rate))
    return out


def verdicts(cands: list[Candidate], cores: int) -> list[str]:
    """One line per kind and sampling mode: the best D, and the D that do not pay."""
    lines = []
    groups: dict[tuple, list[Candidate]] = {}
    for c in cands:
        groups.setdefault((c.kind, c.sampling), []).append(c)
    for (kind, sampling), cs in groups.items():
        best = max(cs, key=lambda c: c.env_steps_per_s)
        losing = [c for c in cs if c.devices > 1 and c.env_steps_per_s <= best.env_steps_per_s
                  and c is not best]
        share_note = (f"D virtual CPU devices time-share the {cores} cores of the profiled "
                      f"machine, so at most {cores} run at once"
                      if kind == "cpu" else "each GPU has its own compute")
        if best.devices == 1:
            text = (f"{kind}, {sampling} sampling: more devices do not pay -- every D > 1 is "
                    f"predicted slower than one device ("
                    + ", ".join(f"D={c.devices}: {c.speedup:.2f}x" for c in cs if c.devices > 1)
                    + f"); {share_note}, and every SGD step adds "
                    f"{cs[-1].model.messages(2)} collective messages per peer")
        else:
            text = (f"{kind}, {sampling} sampling: D={best.devices} is predicted fastest, "
                    f"{best.speedup:.2f}x the env steps/s of one device")
            more = [c for c in losing if c.devices > best.devices]
            if more:
                text += ("; more devices do not pay ("
                         + ", ".join(f"D={c.devices}: {c.speedup:.2f}x" for c in more)
                         + f"): {share_note}")
        lines.append(text)
    return lines
