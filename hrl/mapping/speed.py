"""How fast the machine runs now, against when it was profiled.

A shared machine's speed drifts with its neighbours, which moves the level of every run
against its profile far more than the runs spread about that level (the validation passes
under experiments/results/mapping/ show it). The profiler times a fixed reference workload
(`reference_time`) at the start and the end of each round and keeps the samples in the
profile; timed again where the runs are, the ratio of the two (`speed_scale`) scales every
predicted time. The scale is one number for all mappings: it moves the level of the
predictions and never their order, so the mapping picked is the same with or without it.

The reference mixes the three kinds of work the runs spend their time in, in about equal
shares: small jitted XLA calls waited for one by one (a host loop's train and infer calls,
the fused loop's compute), a pure-Python loop (gymnasium's envs, the loops' bookkeeping) and
numpy gathers and prefix sums over a replay-sized array (the host trees).
"""

from __future__ import annotations

import functools
import math
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

REFERENCE_REPEATS = 15
PARTS = ("xla_s", "python_s", "numpy_s")
# Readings of the reference a speed check takes (their median is compared): one reading, on
# a machine nobody else uses, now and then lands beyond SPEED_TOLERANCE of the machine's usual
# time (experiments/mapping/reference_spread.py measures how often), which scaled every
# prediction of the check that took it. Each reading costs about half a second.
CHECK_SAMPLES = 5


@functools.cache  # one compile per process: the profiler and the validation time it often
def _xla_part():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = (jax.random.normal(k1, (64, 64)) * 0.1, jax.random.normal(k2, (64, 2)) * 0.1)
    x = jax.random.normal(k3, (32, 64))

    @jax.jit
    def step(params, x):
        def loss(p):
            return jnp.mean(jnp.tanh(x @ p[0]) @ p[1]) ** 2

        grads = jax.grad(loss)(params)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    jax.block_until_ready(step(params, x))  # compiled outside the timing

    def run():
        p = params
        for _ in range(160):
            p = jax.block_until_ready(step(p, x))

    return run


def _python_part():
    def run():  # CartPole's Euler step in plain Python, as gymnasium writes it
        x = v = th = om = 0.01
        for i in range(12000):
            force = 10.0 if i % 2 else -10.0
            cos, sin = math.cos(th), math.sin(th)
            temp = (force + 0.05 * om * om * sin) / 1.1
            acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos * cos / 1.1))
            x, v = x + 0.02 * v, v + 0.02 * (temp - 0.05 * acc * cos / 1.1)
            th, om = th + 0.02 * om, om + 0.02 * acc

    return run


def _numpy_part():
    rng = np.random.default_rng(0)
    leaves = rng.random(1 << 16).astype(np.float32)
    idx = rng.integers(0, leaves.size, (160, 256))

    def run():
        for i in range(len(idx)):
            np.cumsum(leaves[idx[i]])
            leaves[idx[i]] += np.float32(1e-6)
            np.add.reduceat(leaves, np.arange(0, leaves.size, 1024))

    return run


def reference_time(repeats: int = REFERENCE_REPEATS) -> dict:
    """Seconds of the reference workload now: each part's median over `repeats` runs
    ("xla_s", "python_s", "numpy_s"), their sum ("seconds") and when ("time", Unix seconds).
    A fraction of a second; the XLA part compiles on the first call in a process."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    out = {}
    for name, make in zip(PARTS, (_xla_part, _python_part, _numpy_part), strict=True):
        run = make()
        run()  # warm: caches, branch predictors, the allocator
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    out["seconds"] = sum(out[p] for p in PARTS)
    out["time"] = time.time()
    return out


def reference_now(samples: int = CHECK_SAMPLES) -> float:
    """The reference seconds a speed check compares: the median of `samples` readings of
    `reference_time` taken one after another, so that one stray reading does not decide."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    return statistics.median(reference_time()["seconds"] for _ in range(samples))


def profile_reference(samples) -> float | None:
    """The reference seconds a profile was taken at: the median of its samples (None when
    it has none, as profiles taken before there was a reference)."""
    seconds = [float(s["seconds"]) for s in samples or ()]
    return statistics.median(seconds) if seconds else None


def speed_scale(now_seconds: float, samples) -> float | None:
    """How much longer everything takes now than when the profile was taken: the reference
    now over the profile's (`profile_reference`). None when the profile has no samples."""
    then = profile_reference(samples)
    if then is None:
        return None
    if not (now_seconds > 0 and then > 0):
        raise ValueError(f"reference seconds must be > 0, got now {now_seconds!r}, "
                         f"profile {then!r}")
    return now_seconds / then


# Within this relative difference the machine counts as running at the profile's speed: a
# shared VM moves about this much between passes of the same run.
SPEED_TOLERANCE = 0.2
# Beyond this factor either way the profile is taken to describe another kind of machine:
# predictions are refused rather than scaled (re-profile this one). Well past what load on a
# shared machine does to the reference (a few times), so that a busy spell only scales.
SPEED_REFUSE = 10.0
# A profile whose own reference samples (taken at the start and end of each round) spread by
# more than this factor was taken while the machine's speed moved: its rows hold that drift
# row by row, which one ratio of medians cannot undo, so its predictions are not scaled.
PROFILE_SPREAD = 1.5


def steady_rounds(samples) -> set[int] | None:
    """The rounds a profile measured at the machine's own speed: those whose reference
    samples (`Profiler.speed`: one at the start and one at the end of each round, tagged with
    its "round") all lie within SPEED_TOLERANCE of the profile's fastest sample. A round
    taken while neighbours slowed the machine has every row it measured inflated by that
    spell, unevenly, which one ratio cannot take back out row by row; the profile's rows and
    reference come from the steady rounds instead (`merge.merged_rows`, `speed_check`).
    None where the samples name no rounds (profiles from before they did): every round
    counts."""
    tagged = [s for s in samples or () if s.get("round") is not None]
    if not tagged:
        return None
    fastest = min(float(s["seconds"]) for s in tagged)
    slowest: dict[int, float] = {}
    for s in tagged:
        r = int(s["round"])
        slowest[r] = max(slowest.get(r, 0.0), float(s["seconds"]))
    return {r for r, sec in slowest.items() if sec <= (1.0 + SPEED_TOLERANCE) * fastest}


def steady_samples(samples) -> list:
    """The reference samples of the profile's `steady_rounds`: the speed the profile's merged
    rows were measured at. All of them where the samples name no rounds, or where no round
    was steady (then the rows hold the drift, and `speed_check` says so)."""
    steady = steady_rounds(samples)
    return [s for s in samples or () if not steady or s.get("round") in steady]


def speed_check(profile: dict) -> tuple[float, str | None]:
    """Times the reference workload now (`reference_now`: the median of CHECK_SAMPLES
    readings, a few seconds) against `profile`'s and returns (scale, warning): every
    predicted time is multiplied by `scale` (1 within SPEED_TOLERANCE, where the difference
    is noise), and `warning` says in one line how much faster or slower this machine runs
    than when profiled, that the profile holds no reference to tell, or that its reference
    moved by more than PROFILE_SPREAD while it was taken (then nothing is scaled); None when
    all is well. The profile's reference is that of its `steady_rounds`, the rounds its rows
    come from. ValueError beyond SPEED_REFUSE."""
    samples = steady_samples(profile.get("speed_reference"))
    if not samples:
        return 1.0, ("the profile holds no reference workload timings (taken before hrl "
                     "recorded them): whether this machine is faster or slower than the "
                     "profiled one cannot be told; profile this machine with `hrl profile`")
    seconds = [float(x["seconds"]) for x in samples]
    spread = max(seconds) / min(seconds)
    if spread > PROFILE_SPREAD:
        return 1.0, (f"the profile's reference workload moved {spread:.1f}x while it was taken "
                     "(a busy machine): its rows hold that drift, so predictions are not "
                     "scaled to this machine's speed now; re-profile on a quiet machine")
    scale = speed_scale(reference_now(), samples)
    if scale > SPEED_REFUSE or scale < 1.0 / SPEED_REFUSE:
        raise ValueError(f"this machine runs the profile's reference workload at {scale:.2f}x "
                         f"its profiled time (allowed 1/{SPEED_REFUSE:g}..{SPEED_REFUSE:g}x): "
                         "the profile describes another kind of machine; profile this one with "
                         "`hrl profile`")
    if abs(scale - 1.0) <= SPEED_TOLERANCE:
        return 1.0, None
    return scale, (f"this machine runs the reference workload {scale:.2f}x "
                   f"{'slower' if scale > 1 else 'faster'} than when the profile was taken: "
                   f"predicted times are scaled by {scale:.2f} (the ranking does not change); "
                   "re-profile for predictions of this machine as it is")
