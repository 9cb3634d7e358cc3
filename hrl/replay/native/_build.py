"""Compile, cache and register the C++ sum-tree kernels (XLA FFI custom calls).

The shared library is built on first use with the system C++ compiler and the FFI headers
that ship with jaxlib (`jax.ffi.include_dir()`), then cached under `$HRL_CACHE_DIR` or
`~/.cache/hrl`. The file name carries a hash of the source, the compiler command and version,
and the jax/jaxlib versions, so any change rebuilds. Each build writes a private temporary
file and renames it into place (atomic on POSIX), so several processes (pytest-xdist workers)
may build at once: every one ends up loading a complete library.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import jax
import jaxlib

SOURCE = Path(__file__).with_name("sumtree_ffi.cc")

# No -ffast-math and no FMA contraction: every float + and * must round as XLA's ops do.
# No -march=native either: the cached library must not depend on the machine that built it
# beyond its architecture and ISA level, which are part of the cache key (`isa_flags`).
CXX_FLAGS = (
    "-O3",
    "-std=c++17",
    "-shared",
    "-fPIC",
    "-fno-fast-math",
    "-ffp-contract=off",
)

# FFI handler symbols exported by sumtree_ffi.cc -> the XLA custom-call target names.
TARGETS = {
    "HrlSumTreeUpdateF32": "hrl_sumtree_update_f32",
    "HrlSumTreeUpdateU32": "hrl_sumtree_update_u32",
    "HrlSumTreeUpdateMinF32": "hrl_sumtree_update_min_f32",
    "HrlSumTreeSampleF32": "hrl_sumtree_sample_f32",
    "HrlSumTreeSampleU32": "hrl_sumtree_sample_u32",
    "HrlReplaySampleF32": "hrl_replay_sample_f32",
    "HrlReplaySampleU32": "hrl_replay_sample_u32",
    "HrlGatherFields": "hrl_gather_fields",
    "HrlReplayUpdateF32": "hrl_replay_update_f32",
    "HrlReplayUpdateU32": "hrl_replay_update_u32",
    "HrlHandlePrep": "hrl_handle_prep",
    "HrlHandleStepF32": "hrl_handle_step_f32",
    "HrlHandleStepU32": "hrl_handle_step_u32",
    "HrlHandleFinish": "hrl_handle_finish",
}


class NativeBuildError(RuntimeError):
    """The native kernels cannot be built or loaded (no compiler, compile error, ...)."""


_lock = threading.Lock()
_registered_path: Path | None = None
_library: ctypes.CDLL | None = None


# x86-64-v3 (AVX2 and friends, as /proc/cpuinfo names them): the threefry hash and the
# descent's per-lane float adds run faster with 256-bit vectors. Results do not
# change: FMA contraction stays off, so every + and * still rounds on its own.
_X86_64_V3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}


@functools.cache
def isa_flags() -> tuple[str, ...]:
    """("-march=x86-64-v3",) on an x86-64 Linux CPU with every v3 feature, else ();
    $HRL_NATIVE_ISA=baseline forces the baseline (e.g. for a cache shared with older CPUs)."""
    if os.environ.get("HRL_NATIVE_ISA", "") == "baseline":
        return ()
    if platform.machine() not in ("x86_64", "AMD64"):
        return ()
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    return ("-march=x86-64-v3",) if _X86_64_V3 <= set(flags) else ()


def cxx_flags() -> tuple[str, ...]:
    """CXX_FLAGS, the ISA level, and any extra flags in $HRL_NATIVE_CXXFLAGS (all part of
    the cache key)."""
    return CXX_FLAGS + isa_flags() + tuple(os.environ.get("HRL_NATIVE_CXXFLAGS", "").split())


def cache_dir() -> Path:
    """Where built libraries are kept: $HRL_CACHE_DIR, else ~/.cache/hrl."""
    env = os.environ.get("HRL_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "hrl"


def find_compiler() -> str:
    """$CXX if set, else the first of g++, c++, clang++ on PATH."""
    env = os.environ.get("CXX")
    candidates = [env] if env else ["g++", "c++", "clang++"]
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    wanted = f"CXX={env!r}" if env else "g++, c++ or clang++"
    raise NativeBuildError(
        f"no C++ compiler found (looked for {wanted}); the native sum-tree kernels need one. "
        "Install it (Debian/Ubuntu: apt-get install g++; conda: conda install cxx-compiler) "
        "or use the pure-JAX path (impl='xla')."
    )


def _compiler_version(compiler: str) -> str:
    try:
        done = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as e:
        raise NativeBuildError(f"cannot run the C++ compiler {compiler}: {e}") from None
    return done.stdout.strip()


def library_path(compiler: str | None = None) -> Path:
    """The cache path of the library for this source, compiler, flags and jax version."""
    compiler = compiler or find_compiler()
    key = hashlib.sha256()
    for part in (
        SOURCE.read_bytes(),
        compiler.encode(),
        _compiler_version(compiler).encode(),
        " ".join(cxx_flags()).encode(),
        jax.__version__.encode(),
        jaxlib.__version__.encode(),
        platform.machine().encode(),
        platform.system().encode(),
    ):
        key.update(part)
        key.update(b"\0")
    return cache_dir() / f"hrl_sumtree_ffi-{key.hexdigest()[:20]}.so"


def build(force: bool = False) -> Path:
    """Compile the kernels into the cache unless already there; return the library's path.

    `make setup` calls this so the first test or benchmark does not pay for the compile.
    Raises NativeBuildError with the compiler's output if the build fails.
    """
    compiler = find_compiler()
    target = library_path(compiler)
    if target.exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.stem + ".", suffix=".tmp.so", dir=target.parent)
    os.close(fd)
    cmd = [
        compiler,
        *cxx_flags(),
        f"-I{jax.ffi.include_dir()}",
        str(SOURCE),
        "-o",
        tmp,
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise NativeBuildError(
                f"compiling the native sum-tree kernels failed (exit {done.returncode}):\n"
                f"{' '.join(cmd)}\n{done.stderr.strip()}"
            )
        os.replace(tmp, target)  # atomic: concurrent builders each install a whole file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def ensure_registered() -> Path:
    """Build if needed, load the library and register its FFI targets (once per process)."""
    global _registered_path, _library
    if _registered_path is not None:
        return _registered_path
    with _lock:
        if _registered_path is not None:
            return _registered_path
        path = build()
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise NativeBuildError(f"cannot load {path}: {e}; delete it to rebuild") from None
        for symbol, name in TARGETS.items():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)), "cpu")
        _library = lib
        _registered_path = path
        return path


def library() -> ctypes.CDLL:
    """The loaded library (built and registered first if needed), for the entry points that
    are called without XLA (`hrl_direct_step`, `hrl_powf`: hrl.replay.host_native.handle)."""
    ensure_registered()
    return _library
