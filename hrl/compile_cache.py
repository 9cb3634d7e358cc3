"""JAX's persistent compilation cache for the command line and the demo.

A fresh process otherwise recompiles the fused training loop (seconds on a small CPU) every
time; with the cache, a second `make demo` or `hrl train` of the same config loads the
compiled program instead. Set HRL_COMPILE_CACHE to a directory to move the cache, or to
"off" to disable it; a cache already configured (e.g. by the test suite) is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

DEFAULT_DIR = Path.home() / ".cache" / "hrl" / "jax-compilation-cache"


def enable_compile_cache() -> Path | None:
    """Point JAX at the cache directory; returns it (None when disabled)."""

    setting = os.environ.get("HRL_COMPILE_CACHE", "")
    if setting.lower() == "off":
        return None
    if jax.config.jax_compilation_cache_dir:
        return Path(jax.config.jax_compilation_cache_dir)
    path = Path(setting) if setting else DEFAULT_DIR
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Programs that compile in well under a second are cheaper to compile than to load.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    return path
