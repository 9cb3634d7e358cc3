"""The n-step window (`hrl.replay.nstep`): each emitted transition is the naive per-env
return cut at the first episode end."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from hrl.replay.nstep import nstep_init, nstep_push


def naive_nstep(obs, act, rew, next_obs, term, done, n, gamma):
    """Per env and start step t: cut the return at the first episode end in t..t+n-1."""
    steps, envs = rew.shape
    out = []
    for t in range(steps - n + 1):
        row = []
        for m in range(envs):
            ret, k = 0.0, t
            for j in range(n):
                k = t + j
                ret += gamma**j * rew[k, m]
                if done[k, m]:
                    break
            disc = gamma ** (k - t + 1) * (0.0 if term[k, m] else 1.0)
            row.append((obs[t, m], act[t, m], ret, next_obs[k, m], disc))
        out.append(row)
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_nstep_matches_naive_reference(n):
    rng = np.random.default_rng(n)
    steps, envs, gamma = 40, 3, 0.9
    obs = rng.normal(size=(steps, envs, 2)).astype(np.float32)
    next_obs = rng.normal(size=(steps, envs, 2)).astype(np.float32)
    act = rng.integers(0, 4, size=(steps, envs)).astype(np.int32)
    rew = rng.normal(size=(steps, envs)).astype(np.float32)
    done = rng.random((steps, envs)) < 0.2
    term = done & (rng.random((steps, envs)) < 0.5)  # the rest are truncations
    example = {"obs": obs[0, 0], "action": act[0, 0], "reward": np.float32(0),
               "next_obs": obs[0, 0], "discount": np.float32(0)}
    acc = nstep_init(example, n, envs)
    push = jax.jit(nstep_push, static_argnums=7)
    emitted = []
    for t in range(steps):
        acc, tr = push(acc, obs[t], act[t], rew[t], next_obs[t], term[t], done[t], gamma)
        if t >= n - 1:
            emitted.append(jax.device_get(tr))
    expected = naive_nstep(obs, act, rew, next_obs, term, done, n, gamma)
    assert len(emitted) == len(expected)
    for got, want in zip(emitted, expected, strict=True):
        for m, (o, a, r, no, d) in enumerate(want):
            np.testing.assert_array_equal(got["obs"][m], o)
            assert got["action"][m] == a
            np.testing.assert_allclose(got["reward"][m], r, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(got["next_obs"][m], no)
            np.testing.assert_allclose(got["discount"][m], d, rtol=1e-6)
