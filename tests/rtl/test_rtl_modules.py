"""The RTL submodules, one testbench each (sim/<module>/test_<module>.py: a TB class, cocotb
tests and, at the bottom, a pytest function that sweeps the module's HDL parameters with
one build directory per case). This file collects those pytest functions so `make test`
runs them; run one module alone with `pytest tests/rtl/test_rtl_modules.py -k hrl_fifo`.

Icarus only; a missing simulator skips with the reason outside CI and fails under CI=true.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))

import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw

MODULES = [
    "hrl_fifo",
    "hrl_axi_rd",
    "hrl_axi_wr",
    "hrl_beats_to_words",
    "hrl_words_to_beats",
    "hrl_descend_step",
    "hrl_update_step",
    "hrl_delay",
    "hrl_mul_pipe",
    "hrl_ram",
]

for _module in MODULES:
    globals().update(rtl_runner.sweeps(_module, f"test_{_module}"))
