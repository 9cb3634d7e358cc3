import os
import sys
from pathlib import Path

import jax
import pytest

# The naive reference models and the shared small runs (tiny_runs.py) live beside the tests;
# tests/runtime holds helpers a second runtime test imports (test_actor_lifetime's).
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "runtime"))

from tiny_profiles import make_tiny_profile  # noqa: E402

# Compiling dominates this suite on a 2-core machine; identical programs (across test modules,
# xdist workers and every process a test starts: `hrl train`, `python -c` scripts, process
# actors, Ray workers) compile once through JAX's persistent cache. Children read it from the
# environment, which they inherit.
JAX_CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax-compilation-cache"
if not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", str(JAX_CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", jax.config.jax_compilation_cache_dir)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


@pytest.fixture(scope="session")
def tiny_profile(tmp_path_factory):
    """The tiny jax-only profile (tiny_profiles.py) the mapping and command tests read, taken
    once per test process."""
    return make_tiny_profile(tmp_path_factory)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks the ids of tests/long_tier.py `long` (before `-m` deselects), and refuses a list
    that has rotted: an id or a twin that names no test of a collected file, or a twin that is
    not itself in `make test`."""
    from long_tier import LONG

    by_id = {item.nodeid: item for item in items}
    files = {nodeid.split("::")[0] for nodeid in by_id}
    for long_id, twin in LONG.items():
        if long_id.split("::")[0] in files:
            if long_id not in by_id:
                raise pytest.UsageError(f"tests/long_tier.py: {long_id} names no test")
            by_id[long_id].add_marker(pytest.mark.long)
        if twin.split("::")[0] in files:
            twins = [i for n, i in by_id.items() if n == twin or n.startswith(twin + "[")]
            if not twins:
                raise pytest.UsageError(f"tests/long_tier.py: twin {twin} names no test")
            if any(i.get_closest_marker("long") or i.get_closest_marker("slow")
                   for i in twins) or twin in LONG:
                raise pytest.UsageError(f"tests/long_tier.py: twin {twin} is not in make test")
