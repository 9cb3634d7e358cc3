"""One module, one folder: build and run the cocotb testbench sim/<module>/test_<module>.py
for one HDL parameter set, one build directory per case (sim_build/<module>/<sim>-<params>).

Every sim/<module>/test_<module>.py ends with a pytest function that sweeps the module's HDL
parameters through `run`; tests/rtl/ collects those functions (`load_testbench`), so
`make test` runs them. The HDL parameters reach the testbench twice: as Verilog parameters
and as PARAM_<name> environment variables (the fpganinja taxi convention).

A missing simulator skips with the reason outside CI and fails under CI=true (`require`).

One testbench by module name, on either simulator, with waveforms (docs/guides/rtl.md):

    python sim/rtl_runner.py hrl_fifo                          # every case of its sweep
    python sim/rtl_runner.py hrl_fifo -k AW2-W32 --sim verilator --waves

`--sim` sets HRL_RTL_SIM, which every run here then simulates on (whatever the sweep names);
`--waves` sets cocotb's WAVES=1 (Icarus writes <toplevel>.fst, Verilator dump.vcd), builds
in a directory of its own (<case>-waves: a build without tracing is not reused), and prints
the path of each dump written.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTL = ROOT / "fpga_rtl" / "rtl"
SIM = ROOT / "sim"
BUILD = ROOT / "sim_build"
SIMULATORS = ("icarus", "verilator")
# The simulator every run in this process uses when set (`--sim`), whatever its caller names.
SIM_ENV = "HRL_RTL_SIM"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _rtl_model():
    """hrl's simulator model, imported on first use: it brings JAX (about a second), which
    the testbenches of the buses and converters never need inside the simulator."""
    from hrl.replay.backends import rtl_model

    return rtl_model


def require(tool: str) -> None:
    """Skip (outside CI) or fail (CI=true) the calling pytest test when `tool` is missing."""
    if tool in SIMULATORS:
        tool = os.environ.get(SIM_ENV) or tool
    reason = _rtl_model().missing_tool(tool)
    if reason is None:
        return
    _skip_or_fail(reason)


def _skip_or_fail(reason: str) -> None:
    import pytest

    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def case_name(sim: str, params: dict[str, int]) -> str:
    return f"{sim}-" + "-".join(f"{k}{v}" for k, v in params.items())


def testbench_dir(module: str) -> Path:
    return SIM / module


def load_testbench(module: str):
    """Import sim/<module>/test_<module>.py into this (pytest) process, under a name of its
    own (tb_<module>), so tests/rtl/ can collect its pytest sweep."""
    path = testbench_dir(module) / f"test_{module}.py"
    for p in (str(SIM), str(ROOT)):
        if p not in sys.path:
            sys.path.insert(0, p)
    name = f"tb_{module}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def sweeps(module: str, *names: str) -> dict:
    """The pytest sweep functions `names` of sim/<module>/test_<module>.py, for a tests/rtl/
    module to collect (globals().update(...)). Without cocotb (or cocotbext-axi) each
    becomes one test that skips saying so, or fails under CI=true, as a missing simulator
    does; the rest of the collecting module still runs."""
    try:
        tb = load_testbench(module)
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("cocotb", "cocotbext",
                                                              "cocotb_tools"):
            raise
        reason = f"{exc.name} not installed (pip install -e '.[hw]'): {module} not simulated"

        def missing():
            _skip_or_fail(reason)

        out = {}
        for n in names:
            fn = lambda: missing()  # noqa: E731
            fn.__name__ = n
            out[n] = fn
        return out
    return {n: getattr(tb, n) for n in names}


def run(
    module: str,
    params: dict[str, int],
    *,
    sources: list[str] | None = None,
    toplevel: str | None = None,
    sim: str = "icarus",
    testcase: str | list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """Build (if needed) and run every cocotb test of sim/<module>/test_<module>.py on
    `toplevel` (default: the module) with HDL `params`; raises if any cocotb test failed.

    `sources`: RTL file names under fpga_rtl/rtl (default: <module>.v). Returns the results
    XML path."""
    toplevel = toplevel or module
    srcs = [RTL / s for s in (sources or [f"{module}.v"])]
    test_env = {f"PARAM_{k}": str(v) for k, v in params.items()}
    test_env.update(env or {})
    return simulate(sim, srcs, toplevel, params, BUILD / module / case_name(sim, params),
                    f"test_{module}", testbench_dir(module), test_env, testcase, quiet=True)


def simulate(sim: str, sources: list[Path], toplevel: str, params: dict[str, int],
             build_dir: Path, test_module: str, testbench: Path, test_env: dict[str, str],
             testcase: str | list[str] | None = None, *, quiet: bool = False) -> Path:
    """The one way every runner here builds `toplevel` and runs the cocotb tests of
    `test_module` (a file in `testbench`) in `build_dir`, with `test_env` for the testbench;
    raises AssertionError naming the case and the build directory if any test failed.
    Returns the results XML path."""
    from cocotb_tools.check_results import get_results

    if os.environ.get(SIM_ENV, sim) != sim:  # `--sim`: the other simulator, its own build
        sim = os.environ[SIM_ENV]
        build_dir = build_dir.with_name(f"{build_dir.name}-on-{sim}")
    if os.environ.get("WAVES", "0") not in ("", "0"):  # cocotb's switch: traced, apart
        build_dir = build_dir.with_name(f"{build_dir.name}-waves")
    # The runner hands the simulator's Python this process's sys.path.
    for path in (str(testbench), str(SIM), str(ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    rtl_model = _rtl_model()
    runner = rtl_model.build(sim, sources, toplevel, params, build_dir, quiet=quiet)
    test_env = dict(test_env)  # the caller's keys win over the defaults below
    test_env.setdefault("JAX_PLATFORMS", "cpu")  # golden models run JAX on the CPU, quietly
    # cocotb rewrites the assertions of every module imported after it starts ("*.py": JAX
    # and hrl included, about 10 s per run); the testbenches' own are enough.
    test_env.setdefault("COCOTB_REWRITE_ASSERTION_FILES", "test_*.py")
    with rtl_model.simulator_environment(sim):
        results = runner.test(
            test_module=test_module,
            hdl_toplevel=toplevel,
            testcase=testcase,
            build_dir=build_dir,
            test_dir=build_dir,
            extra_env=test_env,
            timescale=("1ns", "1ps"),
        )
    _, failed = get_results(results)
    if failed:
        raise AssertionError(
            f"{failed} cocotb test(s) failed in {toplevel} {case_name(sim, params)} "
            f"(log: {build_dir})"
        )
    return Path(results)


def param(name: str, default: int) -> int:
    """An HDL parameter inside the testbench (PARAM_<name>, set by `run`)."""
    return int(os.environ.get(f"PARAM_{name}", default))


def _sweeps_of(testbench: Path) -> list[str]:
    """The pytest functions (plain `def test_*`, not the cocotb coroutines) of a testbench."""
    tree = ast.parse(testbench.read_text())
    return [n.name for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def main(argv: list[str] | None = None) -> int:
    """Run one module's testbench sweep (or the cases `-k` picks) through pytest; with
    --waves, print where each waveform went. The exit status is pytest's (2: bad request)."""
    parser = argparse.ArgumentParser(
        prog="python sim/rtl_runner.py",
        description="run the cocotb testbench sim/<module>/test_<module>.py by module name")
    parser.add_argument("module", help="e.g. hrl_fifo (a folder of sim/)")
    parser.add_argument("-k", dest="cases", metavar="EXPR",
                        help="pytest -k expression over the sweep's case ids (e.g. AW2-W32)")
    parser.add_argument("--sim", choices=SIMULATORS,
                        help="simulate on this simulator, whatever the sweep names")
    parser.add_argument("--waves", action="store_true",
                        help="dump waveforms (Icarus: FST, Verilator: VCD) and print their paths")
    args = parser.parse_args(argv)
    testbench = testbench_dir(args.module) / f"test_{args.module}.py"
    if not testbench.is_file():
        known = sorted(p.parent.name for p in SIM.glob("*/test_*.py"))
        print(f"rtl_runner: error: no testbench {testbench.relative_to(ROOT)}; modules: "
              f"{', '.join(known)}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SIM), str(ROOT),
                                                    env.get("PYTHONPATH", "")) if p)
    if args.sim:
        env[SIM_ENV] = args.sim
    if args.waves:
        env["WAVES"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
           str(ROOT), *(f"{testbench}::{name}" for name in _sweeps_of(testbench))]
    if args.cases:
        cmd += ["-k", args.cases]
    started = time.time()
    status = subprocess.call(cmd, env=env, cwd=ROOT)
    if args.waves:
        dumps = sorted(p for p in (BUILD / args.module).glob("*-waves/*")
                       if p.suffix in (".fst", ".vcd") and p.stat().st_mtime >= started - 1)
        for dump in dumps:
            print(f"waves: {dump}")
        if not dumps:
            print("rtl_runner: no waveform was written (did any case run?)", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
