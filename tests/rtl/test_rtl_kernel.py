"""The replay manager as an XRT RTL kernel (fpga_rtl/rtl/hrl_rmm_kernel.v): cocotb runs that
drive it as a host runtime does (AXI4-Lite control, ap_ctrl_hs, AXI4 memory model) and check
every result against the JAX fixed-point reference (the sweeps at the bottom of
sim/hrl_rmm_kernel/test_hrl_rmm_kernel.py, collected here); Verilator lint of the kernel top.

Each simulation case builds in its own directory (sim_build/kernel-<sim>-K..-D..-P..-W..).
A missing simulator skips with the reason outside CI and fails under CI=true.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sim"))

import kernel_runner  # noqa: E402
import rmm_runner  # noqa: E402
import rtl_runner  # noqa: E402

pytestmark = pytest.mark.hw

# The simulation sweeps live at the bottom of the testbench,
# sim/hrl_rmm_kernel/test_hrl_rmm_kernel.py.
globals().update(
    rtl_runner.sweeps("hrl_rmm_kernel", "test_kernel_verilator", "test_kernel_icarus")
)


def require(tool: str) -> None:
    reason = rmm_runner.missing_tool(tool)
    if reason is None:
        return
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def params(k, d, p, w, dw=None):
    """HDL parameters; dw: the AXI data width (None: the RTL's default, 512)."""
    out = {"K": k, "D": d, "P": p, "W": w}
    if dw is not None:
        out["C_M_AXI_GMEM_DATA_WIDTH"] = dw
    return out


LINT_SETS = [params(2, 1, 1, 8), params(4, 3, 1, 32), params(16, 2, 2, 24, dw=64),
             params(8, 3, 3, 16, dw=32), params(4, 8, 4, 32, dw=128)]


@pytest.mark.parametrize("prm", LINT_SETS, ids=lambda p: rmm_runner.case_name("lint", p))
def test_kernel_lint(prm):
    """`verilator --lint-only -Wall` of the kernel top prints nothing."""
    require("verilator")
    env = {**os.environ, **rmm_runner.verilator_env()}
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", kernel_runner.TOP,
           *(f"-G{k}={v}" for k, v in prm.items()),
           *map(str, rmm_runner.rtl_sources(kernel_runner.FILELIST))]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    diagnostics = [line for line in text.splitlines() if line.startswith("%")]
    assert out.returncode == 0 and not diagnostics, f"lint of {prm}:\n{text}"


def test_filelist_matches_rtl():
    """The kernel filelist names the RMM's own filelist entries plus the kernel files."""
    rmm = (ROOT / "fpga_rtl/rtl/hrl_rmm.f").read_text().split()
    kernel = (ROOT / "fpga_rtl/rtl/hrl_rmm_kernel.f").read_text().split()
    assert kernel[: len(rmm)] == rmm
    assert kernel[len(rmm):] == ["rtl/hrl_axi_rd.v", "rtl/hrl_axi_wr.v",
                                 "rtl/hrl_beats_to_words.v", "rtl/hrl_words_to_beats.v",
                                 "rtl/hrl_axil_ctrl.v", "rtl/hrl_rmm_kernel.v"]
    for path in kernel:
        assert (ROOT / "fpga_rtl" / path).is_file(), path


def test_vitis_files_agree_with_rtl_and_driver():
    """kernel.xml, the packaging Tcl and the link config name the RTL's ports and the
    register offsets the RTL decodes and the host driver writes (no vendor tool needed)."""
    import re
    import xml.etree.ElementTree as ET

    from hrl.replay.backends._rtl_cocotb import REG

    rtl = (ROOT / "fpga_rtl/rtl/hrl_rmm_kernel.v").read_text()
    ports = set(re.findall(r"^\s*(?:input|output)\s+(?:wire|reg)\s+(?:\[[^\]]+\]\s*)?(\w+)",
                           rtl, re.M))
    for name in ("ap_clk", "ap_rst_n", "interrupt", "s_axi_control_awaddr",
                 "m_axi_gmem0_araddr", "m_axi_gmem0_wlast", "m_axi_gmem0_rlast",
                 "m_axi_gmem1_araddr", "m_axi_gmem1_rlast"):
        assert name in ports, name
    kernel = ET.parse(ROOT / "fpga_rtl/vitis/kernel.xml").getroot().find("kernel")
    assert kernel.get("name") == "hrl_rmm_kernel" == kernel_runner.TOP
    assert kernel.get("hwControlProtocol") == "ap_ctrl_hs"
    port_names = {p.get("name") for p in kernel.iter("port")}
    assert port_names == {"s_axi_control", "m_axi_gmem0", "m_axi_gmem1"}
    # The data width the RTL is packaged with (its default) is the one kernel.xml declares.
    width = int(re.search(r"parameter C_M_AXI_GMEM_DATA_WIDTH = (\d+)", rtl).group(1))
    assert {p.get("dataWidth") for p in kernel.iter("port")
            if p.get("name").startswith("m_axi")} == {str(width)}
    for p in port_names:
        assert any(n.startswith(p + "_") for n in ports), p
    args = {a.get("name"): a for a in kernel.iter("arg")}
    assert set(args) == {"command", "count", "level", "row", "seed", "indices", "words",
                         "randoms", "results"}
    tcl = (ROOT / "fpga_rtl/vitis/package_kernel.tcl").read_text()
    # The control block (hrl_axil_ctrl) holds the words of ARG_WORDS as argument registers.
    arg_words = int(re.search(r"ARG_WORDS = 32'h([0-9a-f_]+);", rtl).group(1).replace("_", ""),
                    16)
    for name, arg in args.items():
        offset = int(arg.get("offset"), 16)
        assert offset == REG[name], f"{name}: kernel.xml 0x{offset:x} != driver 0x{REG[name]:x}"
        pointer = arg.get("addressQualifier") == "1"
        # The RTL decodes word address offset/4 (and the next, a pointer's high word) as
        # this argument's register and reads its value there.
        words = [offset // 4, offset // 4 + 1] if pointer else [offset // 4]
        assert all(arg_words >> w & 1 for w in words), name
        assert re.search(rf"=\s*args\[32\*{offset // 4} \+: {32 * len(words)}\];", rtl), name
        assert arg.get("size") == ("0x8" if pointer else "0x4"), name
        assert re.search(rf"\b{name} 0x{offset:02x} {64 if pointer else 32}"
                         rf"{' ' + arg.get('port') if pointer else ''}\b", tcl), name
    link = (ROOT / "fpga_rtl/vitis/link.cfg").read_text()
    assert "nk=hrl_rmm_kernel:1:" in link
    assert ".m_axi_gmem0:" in link and ".m_axi_gmem1:" in link
