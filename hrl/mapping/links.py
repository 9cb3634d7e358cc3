"""Link models: what moving bytes between two placements costs.

A transfer of `n` bytes over a link costs `latency + n / bandwidth` (one transfer, one
latency). Placements attach to the host either directly (`host`: the CPU's own memory, a
JAX-CPU array handed to an OpenCL buffer or a simulator is a memcpy) or through a PCIe link.
Two accelerators talk through host memory (two hops), as XRT and CUDA do by default.

The PCIe numbers are the public per-direction signalling rates after line coding
(PCI-SIG: gen3 8 GT/s/lane, 128b/130b -> 0.985 GB/s/lane; gen4 16 GT/s/lane -> 1.969 GB/s/lane;
gen5 32 GT/s/lane -> 3.938 GB/s/lane), times `efficiency`, an ASSUMPTION for DMA and protocol
overhead (TLP headers, flow control): 0.8 unless a measurement replaces it. The per-transfer
latencies are ASSUMPTIONS of the same kind (a DMA descriptor round trip is a few microseconds);
the profiler measures the host link on the machine it runs on and replaces `host`.
"""

from __future__ import annotations

import dataclasses

GB = 1e9


@dataclasses.dataclass(frozen=True)
class Link:
    """One link: `bandwidth` bytes/s, `latency` s per transfer; `source` says where from."""

    name: str
    bandwidth: float
    latency: float
    source: str = "assumption"

    def __post_init__(self):
        if not self.bandwidth > 0:
            raise ValueError(f"link {self.name}: bandwidth must be > 0, got {self.bandwidth}")
        if not self.latency >= 0:
            raise ValueError(f"link {self.name}: latency must be >= 0, got {self.latency}")

    def time(self, nbytes: float) -> float:
        """Seconds to move `nbytes` in one transfer (0 bytes cost nothing)."""
        return 0.0 if nbytes <= 0 else self.latency + nbytes / self.bandwidth


PCIE_EFFICIENCY = 0.8  # assumption, see module docstring

LINKS: dict[str, Link] = {
    "pcie3x16": Link("pcie3x16", 16 * 0.985 * GB * PCIE_EFFICIENCY, 5e-6,
                     "PCIe gen3 x16: 15.75 GB/s per direction (PCI-SIG); efficiency 0.8 and "
                     "5 us per transfer assumed"),
    "pcie4x16": Link("pcie4x16", 16 * 1.969 * GB * PCIE_EFFICIENCY, 5e-6,
                     "PCIe gen4 x16: 31.5 GB/s per direction (PCI-SIG); efficiency 0.8 and "
                     "5 us per transfer assumed"),
    "pcie5x16": Link("pcie5x16", 16 * 3.938 * GB * PCIE_EFFICIENCY, 5e-6,
                     "PCIe gen5 x16: 63 GB/s per direction (PCI-SIG); efficiency 0.8 and "
                     "5 us per transfer assumed"),
    # Data-parallel collectives (hrl.mapping.scaling).
    "nvlink4": Link("nvlink4", 450 * GB, 5e-6,
                    "NVLink 4 (H100 SXM): 900 GB/s total, 450 GB/s per direction (NVIDIA); "
                    "5 us per collective step assumed"),
    "loopback-tcp": Link("loopback-tcp", 2 * GB, 50e-6,
                         "processes on one machine (gloo over loopback TCP): 2 GB/s and 50 us "
                         "per message assumed"),
    # Replaced by the profiler's memcpy measurement when a profile is loaded.
    "host": Link("host", 10 * GB, 1e-6,
                 "host memory copy: 10 GB/s and 1 us per transfer assumed until measured"),
    # Replaced by the profiler's measurement (`link:cpu-device`) when the profile has it.
    "cpu-device": Link("cpu-device", 10 * GB, 1e-6,
                       "between two XLA CPU devices: a host memory copy, 10 GB/s and 1 us per "
                       "transfer assumed until measured"),
}


def get_link(name: str, overrides: dict[str, Link] | None = None) -> Link:
    table = {**LINKS, **(overrides or {})}
    if name not in table:
        raise ValueError(f"unknown link {name!r}; known links: {sorted(table)}")
    return table[name]
