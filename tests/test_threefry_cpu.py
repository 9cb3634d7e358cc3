"""The straight-line CPU lowering of threefry2x32 (hrl.threefry_cpu): same bits, no loop."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry_2x32

import hrl.replay  # noqa: F401  (installs the lowering)
from hrl import threefry_cpu

# Known-answer vectors of Threefry-2x32, 20 rounds (Random123's kat_vectors).
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key, count, expected", KAT)
def test_known_answer_vectors(key, count, expected):
    k = jnp.asarray(key, jnp.uint32)
    x = jnp.asarray(count, jnp.uint32)
    assert [int(v) for v in jax.jit(threefry_2x32)(k, x)] == list(expected)
    words = threefry_cpu.threefry2x32(*(np.array([v], np.uint32) for v in (*key, *count)))
    assert [int(w[0]) for w in words] == list(expected)


def _random_draws() -> dict:
    key = jax.random.key(1234)
    k1, k2 = jax.random.split(key)

    @jax.jit
    def draws(k1, k2):
        return {
            "split": jax.random.key_data(jax.random.split(k1, 7)),
            "bits": jax.random.bits(k2, (5, 3)),
            "uniform": jax.random.uniform(jax.random.fold_in(k1, 9), (4,)),
            "randint": jax.random.randint(k2, (6,), 0, 10),
        }

    out = draws(k1, k2)
    return {k: np.asarray(v).view(np.uint32).tolist() for k, v in out.items()}


_CHILD = """
import json, jax
jax.config.update("jax_platforms", "cpu")
import tests.test_threefry_cpu as t
print(json.dumps(t._random_draws()))
"""


def test_jax_random_gives_the_same_bits_as_jaxs_own_lowering():
    env = {**os.environ, "HRL_THREEFRY_ROLLED": "1", "JAX_PLATFORMS": "cpu"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, cwd=root, capture_output=True, text=True,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == _random_draws()


def test_no_while_loop_in_a_random_call():
    hlo = jax.jit(lambda k: jax.random.split(k, 3)).lower(jax.random.key(0)).compile().as_text()
    assert " while(" not in hlo
