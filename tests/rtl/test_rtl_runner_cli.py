"""`python sim/rtl_runner.py MODULE [-k CASE] [--sim icarus|verilator] [--waves]`: one
testbench by module name, on the simulator asked for, with the waveform's path printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))

import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "sim/rtl_runner.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)


def _waves(stdout: str) -> list[Path]:
    return [Path(line.removeprefix("waves: ")) for line in stdout.splitlines()
            if line.startswith("waves: ")]


# A full Icarus case with a waveform dump; the testbenches run the runner in make test.
@pytest.mark.long
def test_one_case_on_icarus_dumps_an_fst_and_prints_its_path():
    rtl_runner.require("icarus")
    done = _run("hrl_fifo", "-k", "AW1-W8", "--waves")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed, 2 deselected" in done.stdout
    (dump,) = _waves(done.stdout)
    assert dump.name == "hrl_fifo.fst" and dump.parent.name == "icarus-AW1-W8-waves"
    head = dump.read_bytes()[:1]
    assert head == b"\x00" and dump.stat().st_size > 200  # an FST header block, and signals


@pytest.mark.long  # a Verilator build of the FIFO with tracing: a minute or more on 2 cores
def test_one_case_on_verilator_dumps_a_vcd():
    rtl_runner.require("verilator")
    done = _run("hrl_fifo", "-k", "AW1-W8", "--sim", "verilator", "--waves")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (dump,) = _waves(done.stdout)
    assert dump.suffix == ".vcd" and "on-verilator" in dump.parent.name
    text = dump.read_text(errors="replace")
    assert "$enddefinitions" in text and "count" in text  # the FIFO's occupancy is traced


def test_an_unknown_module_is_one_line_naming_the_known_ones():
    done = _run("hrl_nope")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "hrl_fifo" in done.stderr
    assert "no testbench sim/hrl_nope/test_hrl_nope.py" in done.stderr
