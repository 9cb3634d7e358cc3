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


# The converters' shifts are each as narrow as the cases that reach them (a leaving beat or
# group is full or the job's last; a beat into a kept buffer lands at one of G + 1 places):
# each testbench must catch a mutant of those facts. (A few seconds each on Icarus.)
CONVERTER_MUTATIONS = [
    # A full beat leaving shifts nothing down: the words kept after it are lost.
    pytest.param("hrl_words_to_beats", r"beat_full <= !held_n_part;", "beat_full <= 1'b0;",
                 id="words-to-beats-full-beat-keeps-nothing"),
    # A full group leaving shifts nothing down: the words after it are lost.
    pytest.param("hrl_beats_to_words", r"group_full <= full_n;", "group_full <= 1'b0;",
                 id="beats-to-words-full-group-keeps-nothing"),
    # A beat into a kept buffer placed at word 0, not after the words held.
    pytest.param("hrl_beats_to_words", r"held_sh = held\[RB-1:0\];", "held_sh = {RB{1'b0}};",
                 id="beats-to-words-beat-at-zero"),
]


@pytest.mark.parametrize("module,pattern,repl", CONVERTER_MUTATIONS)
def test_converter_testbench_catches_mutation(module, pattern, repl, request):
    """The converter's testbench fails against its module with one deliberate bug (DW 128
    and G 3: four words a beat, so a beat and a group each leave words behind)."""
    import learn_tb  # noqa: PLC0415 (sim/, on the path above)

    rtl_runner.require("icarus")
    name = request.node.callspec.id
    assert learn_tb.mutation_kills(module, [f"{module}.v"], f"{module}.v", pattern, repl,
                                   {"DW": 128, "G": 3}, name), (
        f"the {module} testbench passed against the mutant {name!r}")
