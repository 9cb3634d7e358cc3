"""Data-parallel scaling model: one training iteration on D devices of one kind.

The data-parallel loop (`hrl.runtime.executors.data_parallel`) gives every device the same
work as one device (weak scaling: its actors, its replay shard, its share of each SGD step's
batch) and
adds collectives to each SGD step. The model's iteration time on D devices split over P
processes is

    T(D, P) = T_1 * max(1, D / cores)  +  U * (sum over the step's collectives of their cost)

* T_1: one device's iteration, measured (the fused loop, no collective);
* cores: compute the devices share (virtual CPU devices time-share the machine's cores, so D
  of them run at most `cores` at once); None for devices with their own compute (GPUs);
* U: SGD steps per iteration; each one runs
  - a ring all-reduce of the gradients (pmean): 2 (D-1) messages of param_bytes / D,
  - global sampling: an all-gather of the D shard roots, a reduce-scatter of the B = D*b
    sampled rows with their global index and leaf word (B (row_bytes + 8) bytes, each
    device keeping 1/D), an all-gather of the B indices and TD errors for the update, and
    three scalar reductions (global size, minimum, largest priority);
  local sampling (`replay.sampling: local`): the gradient all-reduce only;
  each message costs `link.latency + bytes / link.bandwidth`, a ring collective of n bytes
  2 (D-1) or (D-1) messages of n / D bytes (the standard ring algorithms);
* the link: between devices of one process, or between processes when P > 1
  (`loopback-tcp` on one machine). Between GPUs: NVLink (assumed). Between virtual CPU
  devices: the profile's `link:cpu-collective` row when it has one (`cpu-collective`: a ring
  step of a psum between two virtual CPU devices, timed by `hrl profile`, so its latency is
  the rendezvous of the devices' threads at a collective), else the host memory copy
  (`host`), which prices the bytes but not the rendezvous -- optimistic, and `describe()`
  says so.

Throughput relative to one device is D * T_1 / T(D, P): env steps and samples per second
both scale so under weak scaling. The link numbers are the ASSUMPTIONS of `hrl.mapping.links`
unless measured; `describe()` says which were used.
"""

from __future__ import annotations

import dataclasses

from hrl.mapping.links import GB, Link, get_link

LINKS_BY_KIND = {"cpu": ("host", "loopback-tcp"), "gpu": ("nvlink4", "loopback-tcp")}
# The measured collective between virtual CPU devices (profile row `link:cpu-collective`); the
# device link of virtual CPU devices when the profile has it, in place of LINKS_BY_KIND's host.
COLLECTIVE_LINK = "cpu-collective"
UNMEASURED_RENDEZVOUS = "collective rendezvous not measured: optimistic"


def virtual_cpu_device_link(links: dict[str, Link] | None = None) -> Link:
    """The link between virtual CPU devices: the measured collective (`cpu-collective` in
    `links`) when there is one, else the host memory copy (`host`: measured or assumed)."""
    links = links or {}
    if COLLECTIVE_LINK in links:
        return links[COLLECTIVE_LINK]
    return get_link(LINKS_BY_KIND["cpu"][0], links)


@dataclasses.dataclass(frozen=True)
class DataParallelModel:
    """T(D, P) of the data-parallel loop (see the module docstring)."""

    iteration_s: float  # T_1, measured on one device
    cores: int | None  # compute shared by all devices; None: each device has its own
    device_link: Link  # between devices of one process
    process_link: Link  # between processes
    param_bytes: int  # the networks' parameters (the gradients all-reduced per SGD step)
    row_bytes: int  # one stored transition
    batch_per_device: int
    sgd_per_iter: float
    # "global": the sampling collectives of `hrl.replay.sharded` on every SGD step; "local":
    # each device samples its own shard, only the gradient all-reduce crosses devices.
    sampling: str = "global"
    # True when `with_latency_fitted` solved the device link's latency from a measured point
    # (the rendezvous is then in it, as in the measured `cpu-collective` link).
    rendezvous_fitted: bool = False

    def __post_init__(self):
        if self.sampling not in ("global", "local"):
            raise ValueError(f"sampling must be 'global' or 'local', got {self.sampling!r}")

    @classmethod
    def for_virtual_cpu_devices(cls, iteration_s: float, cores: int, param_bytes: int,
                                row_bytes: int, batch_per_device: int, sgd_per_iter: float,
                                links: dict[str, Link] | None = None) -> DataParallelModel:
        """`links`: measured links by name (`cpu-collective`, `host`, ...), else assumptions."""
        process = LINKS_BY_KIND["cpu"][1]
        return cls(iteration_s, cores, virtual_cpu_device_link(links), get_link(process, links),
                   param_bytes, row_bytes, batch_per_device, sgd_per_iter)

    @property
    def rendezvous_priced(self) -> bool:
        """Whether a collective's cost between devices includes the rendezvous of virtual CPU
        devices' threads: the measured `cpu-collective` link, or a latency fitted on a
        measured point. Always True for devices with their own compute (GPUs: their link
        is an assumption of its own, see `hrl.mapping.links`)."""
        return (self.cores is None or self.device_link.name == COLLECTIVE_LINK
                or self.rendezvous_fitted)

    def _ring(self, link: Link, nbytes: float, devices: int, rounds: int) -> float:
        """`rounds` (D-1) ring steps, each moving nbytes / D over `link`."""
        return rounds * (devices - 1) * link.time(nbytes / devices)

    def collectives_s(self, devices: int, processes: int = 1) -> float:
        """Seconds of collectives per SGD step (0 on one device)."""
        if devices <= 1:
            return 0.0
        link = self.process_link if processes > 1 else self.device_link
        batch = devices * self.batch_per_device
        grads = self._ring(link, self.param_bytes, devices, 2)  # gradient all-reduce
        if self.sampling == "local":
            return grads
        return (
            grads
            + self._ring(link, 4 * devices, devices, 1)  # shard roots all-gather
            + self._ring(link, batch * (self.row_bytes + 8), devices, 1)  # batch scatter
            + self._ring(link, batch * 8, devices, 1)  # update all-gather
            + 3 * self._ring(link, 4 * devices, devices, 2)  # size, minimum, max priority
        )

    def iteration_time(self, devices: int, processes: int = 1) -> float:
        share = 1.0 if self.cores is None else max(1.0, devices / self.cores)
        return self.iteration_s * share + self.sgd_per_iter * self.collectives_s(devices,
                                                                                 processes)

    def speedup(self, devices: int, processes: int = 1) -> float:
        """Throughput on D devices relative to one (weak scaling)."""
        return devices * self.iteration_s / self.iteration_time(devices, processes)

    def messages(self, devices: int) -> int:
        """Collective messages per SGD step (each pays the link's latency once)."""
        if devices <= 1:
            return 0
        return (2 if self.sampling == "local" else 2 + 1 + 1 + 1 + 3 * 2) * (devices - 1)

    def with_latency_fitted(self, devices: int, processes: int,
                            measured_iteration_s: float) -> DataParallelModel:
        """The model with the per-message latency of the link `devices`/`processes` use
        solved from one measured point (bandwidth kept): what a collective really costs on
        this machine (a rendezvous of threads, gloo over TCP) is mostly that latency. The
        other points are then predictions, not fits."""
        link = self.process_link if processes > 1 else self.device_link
        zero = dataclasses.replace(link, latency=0.0)
        bare = self._with_link(processes, zero)
        rest = measured_iteration_s - bare.iteration_time(devices, processes)
        latency = max(0.0, rest / (self.sgd_per_iter * self.messages(devices)))
        fitted = dataclasses.replace(
            link, latency=latency,
            source=f"{link.bandwidth / GB:g} GB/s as assumed; latency fitted to the measured "
            f"{devices}-device, {processes}-process point")
        out = self._with_link(processes, fitted)
        return out if processes > 1 else dataclasses.replace(out, rendezvous_fitted=True)

    def _with_link(self, processes: int, link: Link) -> DataParallelModel:
        if processes > 1:
            return dataclasses.replace(self, process_link=link)
        return dataclasses.replace(self, device_link=link)

    def describe(self) -> str:
        cores = "own compute per device" if self.cores is None else f"{self.cores} shared cores"
        return (f"T_1 = {self.iteration_s * 1e3:.2f} ms measured, {cores}, "
                f"{self.sgd_per_iter:g} SGD steps per iteration, {self.sampling} sampling, "
                f"{self.param_bytes:,} parameter bytes, {self.row_bytes} bytes per transition; "
                f"devices: {self.device_link.name} "
                f"({self.device_link.bandwidth / GB:g} GB/s, {self.device_link.latency * 1e6:g} "
                f"us, {self.device_link.source}); processes: {self.process_link.name} "
                f"({self.process_link.bandwidth / GB:g} GB/s, "
                f"{self.process_link.latency * 1e6:g} us, {self.process_link.source})"
                + ("" if self.rendezvous_priced else f"; {UNMEASURED_RENDEZVOUS} (a ring step "
                   "is priced as a memory copy; re-profile to measure link:cpu-collective)"))
