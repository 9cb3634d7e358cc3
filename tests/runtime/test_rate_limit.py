"""The samples-per-insert rate limiter: its pure functions, its config keys, and the pipelined
executor holding its band with fast and slow actors (thread and process), results unchanged."""

from __future__ import annotations

import time

import jax
import numpy as np
import pytest
from tiny_runs import CONFIGS, SMALL, assert_trees_equal

from hrl.config import ConfigError, load_config
from hrl.config.rules import check_limit, check_tolerance
from hrl.runtime import build, initial_state
from hrl.runtime import rate_limit as rl
from hrl.runtime.rate_limit import LimiterState, RateLimit

# ----------------------------------------------------------------------------- functions

LIMIT = RateLimit(samples_per_insert=4.0, tolerance=32.0, min_size=10)


def test_inserts_are_free_until_min_size():
    assert rl.can_insert(LIMIT, LimiterState(0, 0), 10)
    assert not rl.can_sample(LIMIT, LimiterState(9, 0), 1)
    assert rl.can_sample(LIMIT, LimiterState(10, 0), 1)


@pytest.mark.parametrize("inserts,n,ok", [
    (10, 8, True),  # error 0 + 4*8 = 32: on the edge, admitted
    (10, 9, False),  # 36 > 32
    (12, 6, True),  # 4*2 + 4*6 = 32
    (12, 7, False),
])
def test_insert_edge_of_the_tolerance(inserts, n, ok):
    state = LimiterState(inserts, 0)
    assert rl.can_insert(LIMIT, state, n) is ok
    new, recorded = rl.insert(LIMIT, state, n)
    assert recorded is ok
    assert new == (LimiterState(inserts + n, 0) if ok else state)


@pytest.mark.parametrize("samples,n,ok", [
    (0, 72, True),  # error 4*10 - 0 - 72 = -32: on the edge
    (0, 73, False),
    (40, 32, True),
    (40, 33, False),
])
def test_sample_edge_of_the_tolerance(samples, n, ok):
    state = LimiterState(20, samples)  # error = 4 * (20 - 10) - samples
    assert rl.can_sample(LIMIT, state, n) is ok
    new, recorded = rl.sample(LIMIT, state, n)
    assert recorded is ok
    assert new == (LimiterState(20, samples + n) if ok else state)


def test_error_and_live_ratio():
    state = LimiterState(inserts=110, samples=380)
    assert rl.error(LIMIT, state) == 4.0 * 100 - 380
    assert rl.live_ratio(10, state) == pytest.approx(3.8)
    assert rl.live_ratio(10, LimiterState(10, 0)) is None


def test_alternating_schedule_stays_in_the_band():
    """Whatever order the two sides take turns in, recorded steps keep the error in band."""
    rng = np.random.default_rng(0)
    state = LimiterState(0, 0)
    for _ in range(2000):
        if rng.random() < 0.5:
            state, _ = rl.insert(LIMIT, state, int(rng.integers(1, 8)))
        else:
            state, _ = rl.sample(LIMIT, state, int(rng.integers(1, 32)))
        if state.inserts > LIMIT.min_size:
            assert -LIMIT.tolerance <= rl.error(LIMIT, state) <= LIMIT.tolerance


@pytest.mark.parametrize("kwargs,message", [
    ({"samples_per_insert": 0.0}, r"'train.samples_per_insert': must be a finite number > 0"),
    ({"samples_per_insert": float("nan")}, r"'train.samples_per_insert'.*got nan"),
    ({"tolerance": -1.0}, r"'train.samples_per_insert_tolerance': must be a finite number >= 0"),
    ({"tolerance": float("inf")}, r"'train.samples_per_insert_tolerance'.*got inf"),
    ({"min_size": -1}, r"'train.learning_starts'"),
])
def test_bad_limits_name_the_key_value_and_range(kwargs, message):
    limit = {"samples_per_insert": 4.0, "tolerance": 32.0, "min_size": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        check_limit(**limit)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="inserts must be >= 0, got -1"):
        rl.can_insert(LIMIT, LimiterState(), -1)
    with pytest.raises(ValueError, match="samples must be >= 0, got -2"):
        rl.can_sample(LIMIT, LimiterState(), -2)


def test_tolerance_below_one_round_is_refused():
    check_tolerance(128.0, 16, 8)
    with pytest.raises(ValueError, match=r"tolerance': must be >= .* 16 x 8 = 128.*got 127"):
        check_tolerance(127.0, 16, 8)


# ----------------------------------------------------------------------------- config

# The gymnasium CartPole config shrunk (tiny_runs.SMALL): 4 envs x 16 steps = 64 inserts
# per iteration, train ratio 0.25 -> 16 SGD steps of 16 per iteration: 4 samples per insert,
# 256 samples a round.
LIMITED = ["train.executor=pipelined", "train.samples_per_insert=4"]


@pytest.mark.parametrize("overrides,message", [
    (["train.samples_per_insert=8"],
     r"'train.samples_per_insert': must equal train.train_ratio x train.batch_size = "
     r"0.25 x 16 = 4.*set train.train_ratio to 0.5\), got 8.0"),
    (["train.samples_per_insert=0"], r"'train.samples_per_insert': must be a finite number > 0"),
    (["train.samples_per_insert=abc"], r"'train.samples_per_insert': expected float or NoneType"),
    (["train.samples_per_insert_tolerance=512"],
     r"'train.samples_per_insert_tolerance': applies only with train.samples_per_insert set"),
    (["train.samples_per_insert=4", "train.samples_per_insert_tolerance=255"],
     r"'train.samples_per_insert_tolerance': must be >= one learning round's samples.*"
     r"16 x 16 = 256.*got 255.0"),
    (["train.samples_per_insert=4", "train.samples_per_insert_tolerance=-1"],
     r"'train.samples_per_insert_tolerance': must be a finite number >= 0"),
])
def test_bad_limiter_settings_name_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL + overrides)


@pytest.mark.parametrize("executor", ["sequential", "pipelined"])
def test_limiter_keys_accepted_in_every_host_executor(executor):
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                      SMALL + [f"train.executor={executor}", "train.samples_per_insert=4"])
    assert cfg.train.rate_limit_tolerance(16) == 256.0  # default: one round
    cfg = load_config(CONFIGS / "dqn_cartpole.yaml",
                      SMALL + ["train.executor=fused", "train.samples_per_insert=4"])
    assert cfg.train.samples_per_insert == 4.0


# ----------------------------------------------------------------------------- executor

def _run(overrides, iterations=24, chunks=2, slow_learner=0.0, slow_actors=0.0):
    """A pipelined run of `chunks` chunks; the learner or the (thread) actors slowed down by
    a sleep per iteration. Returns the final state, the last chunk's output, the bands."""
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL + list(overrides))
    built = build(cfg)
    loop = built.loop
    if slow_learner:
        learn = loop._learn
        loop._learn = lambda *a: (time.sleep(slow_learner), learn(*a))[1]
    if slow_actors:
        act = loop.calls.act
        loop.calls.act = lambda *a: (time.sleep(slow_actors), act(*a))[1]
    state, bands = initial_state(built), []
    try:
        for _ in range(chunks):
            state, out = loop.run(state, iterations)
            bands.append(loop.limiter_band)
    finally:
        loop.close()
    return jax.device_get(state), out, bands, loop


# A deep pipeline: the weight schedule alone would let the actors run a whole chunk ahead.
DEEP = ["train.pipeline_depth=40"]


@pytest.mark.parametrize("actors", ["thread", "process"])
def test_fast_actors_are_held_in_the_band_and_results_do_not_change(actors):
    """A sleeping learner and a 40-deep pipeline: the actors would run the chunk ahead; the
    limiter holds them within its tolerance (the actors' highest error and the learner's
    lowest, each a bound of the true one), and the run ends exactly where the run without a
    limiter does."""
    which = [f"train.actors={actors}"]
    tolerance = 384.0
    limited, limited_out, bands, loop = _run(
        DEEP + which + LIMITED + [f"train.samples_per_insert_tolerance={tolerance}"],
        slow_learner=0.01)
    assert loop.rate_limit.tolerance == tolerance
    assert int(limited.updates) > 0
    for low, high in bands:
        assert low is not None and high is not None
        assert -tolerance <= low <= high <= tolerance, (low, high)
    free, free_out, free_bands, _ = _run(DEEP + which + ["train.executor=pipelined"])
    assert free_bands == [None, None]
    assert_trees_equal(limited, free)
    np.testing.assert_array_equal(limited_out.completed_return, free_out.completed_return)


def test_slow_actors_keep_the_band_and_the_default_tolerance_does_not_stall():
    """Actors slower than the learner (thread, depth 1, default tolerance: one round, the
    tightest that cannot stall): the learner waits for them, the band holds."""
    state, _, bands, loop = _run(["train.actors=thread"] + LIMITED, slow_actors=0.01)
    assert loop.rate_limit.tolerance == 256.0
    assert int(state.updates) > 0
    for low, high in bands:
        assert -256.0 <= low <= high <= 256.0, (low, high)


def test_limiter_off_is_the_sequential_loop_bit_for_bit():
    """Limiter off, depth 0: today's pipelined executor, which is the sequential loop."""
    piped, _, bands, _ = _run(["train.executor=pipelined", "train.pipeline_depth=0"],
                              chunks=1)
    assert bands == [None]
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                      SMALL + ["train.executor=sequential"])
    built = build(cfg)
    seq, _ = built.loop.run(initial_state(built), 24)
    assert_trees_equal(piped, jax.device_get(seq))


@pytest.mark.parametrize("actors", ["thread", pytest.param("process", marks=pytest.mark.long)])
def test_a_failed_chunk_with_blocked_actors_ends_and_the_next_runs(actors):
    """The learner fails mid-chunk while the limiter holds the actors back (the abandon path
    of Ctrl-C or an error): the error surfaces, nothing hangs, and the next chunk runs."""
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                      SMALL + DEEP + LIMITED + [f"train.actors={actors}"])
    built = build(cfg)
    loop, state = built.loop, initial_state(built)
    learn, calls = loop._learn, []

    def failing(*args):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        time.sleep(0.01)
        return learn(*args)

    loop._learn = failing
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run(state, 24)
        loop._learn = learn
        after, _ = loop.run(state, 24)
    finally:
        loop.close()
    assert int(after.iteration) == 24


def test_the_limiter_may_change_at_resume():
    from hrl.runtime.resume import resume_changes

    saved = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL + LIMITED)
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml",
                      SMALL + ["train.executor=pipelined"])
    assert set(resume_changes(saved, cfg)) == {"train.samples_per_insert"}


def test_progress_bar_text():
    """Fixed value where the executor holds it by construction; the live ratio in a pipelined
    run, with the last chunk's error band when the limiter is on."""
    from hrl.runtime.run import _samples_per_insert_text

    seq = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL)
    assert _samples_per_insert_text((2000, 100), seq, build(seq).loop) == (
        "4 samples/insert (fixed)")
    cfg = load_config(CONFIGS / "dqn_cartpole_gymnasium.yaml", SMALL + LIMITED)
    loop = build(cfg).loop
    # 2000 env steps - 2 x 4 n-step warm-up = 1992 inserts, 1960 past learning_starts.
    assert _samples_per_insert_text((2000, 490), cfg, loop) == "4.00 samples/insert"
    loop.limiter_band = (-128.0, 256.0)
    assert _samples_per_insert_text((2000, 490), cfg, loop) == (
        "4.00 samples/insert (error -128..+256 of ±256)")
    assert _samples_per_insert_text((40, 0), cfg, loop).startswith("- samples/insert")
