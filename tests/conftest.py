import os
import sys
from pathlib import Path

import jax

# The naive reference models live beside the tests; the small run configs and tree comparisons
# of tests/runtime/test_runtime.py serve the replay and agent tests too.
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "runtime"))

# Compiling dominates this suite on a 2-core machine; identical programs (across test modules,
# xdist workers and `hrl train` subprocesses) compile once through JAX's persistent cache.
JAX_CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax-compilation-cache"
if not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", str(JAX_CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
