"""The executor model's constants: typed (a misspelt one is an error), never a negative time,
and the fused loop priced as its own measured whole where its calls' sum would need a
negative bookkeeping term."""

import dataclasses

import pytest

from hrl.mapping import dse
from hrl.mapping.calibration import (
    MEASURED_KINDS,
    _fixed_costs,
    calibrate,
    fit_loop,
    models_from_profile,
)
from hrl.mapping.constants import FusedLoopCosts, LoopConstants
from hrl.mapping.platform import Placement, measured_placement
from hrl.mapping.profile.grids import FUSED_CALL_SETTINGS, LOOP_SETTINGS
from hrl.mapping.profile.io import load_profile
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.workload import PRIMITIVES, Workload

PROFILE = "experiments/results/mapping/profile"
MS = 1e-3


def test_a_misspelt_constant_is_an_error_not_zero():
    with pytest.raises(ValueError, match=r"unknown loop constant\(s\) \['hots'\]"):
        LoopConstants.of({"hots": 1e-3})
    with pytest.raises(ValueError, match="unknown loop constant"):
        dse.explore([_cpu()], Workload(), loop_overhead={"replay_handof": 1e-5})
    assert LoopConstants.of({"host": 1e-3}).host == 1e-3
    with pytest.raises(AttributeError):
        LoopConstants().hots  # noqa: B018


@pytest.mark.parametrize("field", ["host", "host_actor", "host_relaxed", "pipelined_wait",
                                   "replay_handoff"])
def test_a_constant_that_stands_for_a_time_is_never_negative(field):
    with pytest.raises(ValueError, match=f"{field} is a time and must be finite and >= 0"):
        LoopConstants(**{field: -1e-6})
    with pytest.raises(ValueError, match="fused-loop bookkeeping is a time"):
        LoopConstants.of({"fused": -1e-6})
    with pytest.raises(ValueError, match="fused-loop unpaid fixed cost is a time"):
        FusedLoopCosts(unpaid=-0.1)
    # A share of the shorter side is not a time: below 0 it says the two sides slow each
    # other down.
    assert LoopConstants(replay_overlap={"pocl": -0.5}).overlap("pocl") == -0.5


def _cpu(seconds=1 * MS, exclusive=False, name="cpu"):
    return Placement(name, "jax", "cpu", "local", frozenset(PRIMITIVES), "measured",
                     lambda call, w: seconds, exclusive=exclusive)


def test_fused_loop_pays_its_calls_less_what_it_does_not_pay_plus_its_bookkeeping():
    """fused = calls - unpaid + bookkeeping, hand-computed, on its own device; the host loop
    on the same calls pays them whole."""
    w = Workload(num_envs=4, batch_size=8, sgd_steps=2.0, rollout_length=3)
    fused = _cpu(exclusive=True, name="cpu-fused")
    loop = FusedLoopCosts(bookkeeping=0.2 * MS, unpaid=1.5 * MS)
    exp = dse.explore([_cpu(), fused], w, loop_overhead=LoopConstants(fused=loop, host=1 * MS))
    calls = sum(w.counts().values()) * MS
    row = exp.row_of({p: "cpu-fused" for p in PRIMITIVES})
    want = calls - 1.5 * MS + 0.2 * MS
    for mode in ("strict", "relaxed"):
        assert exp.times(mode)[row] == pytest.approx(want, rel=1e-5)
    assert exp.busy[row][exp.problem.resources.index("cpu")] == pytest.approx(want, rel=1e-5)
    host = exp.row_of({p: "cpu" for p in PRIMITIVES})
    assert exp.strict[host] == pytest.approx(calls + 1 * MS, rel=1e-5)
    # Per placement: the named one's own loop, the others the default.
    other = dataclasses.replace(fused, name="gpu-fused")
    exp = dse.explore([fused, other], w, loop_overhead=LoopConstants(
        fused_by_placement={"gpu-fused": loop}))
    assert exp.strict[exp.row_of({p: "cpu-fused" for p in PRIMITIVES})] == pytest.approx(
        calls, rel=1e-5)
    assert exp.strict[exp.row_of({p: "gpu-fused" for p in PRIMITIVES})] == pytest.approx(
        want, rel=1e-5)


def _fused_rows(placement, seconds_of):
    """loop:fused rows at the profiler's settings, each `seconds_of(workload, calls)`."""
    rows = []
    for (steps, sgd), n in [(s, 10) for s in LOOP_SETTINGS] + [
            (s, 80) for s in FUSED_CALL_SETTINGS]:
        row = {"call": "loop:fused", "placement": "loop", "env": "gymnax:CartPole-v1",
               "algo": "dqn", "width": 64, "num_envs": 1, "batch": 32, "capacity": 4096,
               "fanout": 16, "rollout": steps, "sgd": sgd, "iterations": n,
               "dispatch": "async"}
        w = Workload(hidden=(64, 64), num_envs=1, batch_size=32, capacity=4096, fanout=16,
                     sgd_steps=float(sgd), rollout_length=steps, iterations_per_call=n)
        calls = {c: k * placement.seconds(c, w) for c, k in w.counts().items()}
        t = seconds_of(w, calls)
        rows.append({**row, "latency_s": t, "cpu_s": t})
    return profile_rows({"rows": rows})


def test_a_fused_loop_faster_than_its_calls_pays_a_share_of_their_fixed_costs():
    """Rows built as the calls' work + 40% of the actor side's fixed per-call costs + 20% of
    the SGD steps' + c0 + c_call / N (faster than the calls timed apart: bookkeeping beyond
    them would be negative) give back the shares and the two times, every constant >= 0, and
    the source says so; priced at another workload as the rows were built. Rows slower than
    their calls keep the bookkeeping form."""
    models = models_from_profile(load_profile(PROFILE))
    fused = measured_placement("cpu-fused", models, **MEASURED_KINDS["cpu-fused"])
    c0, c_call = 20e-6, 400e-6

    def built(w, calls, keep=(0.4, 0.2)):
        env_infer, insert, sgd = _fixed_costs(models, "cpu-fused", w)
        work = sum(calls.values()) - env_infer - insert - sgd
        return (work + keep[0] * (env_infer + insert) + keep[1] * sgd + c0
                + c_call / w.iterations_per_call)

    fit = fit_loop(_fused_rows(fused, built), fused, "fused", "wall", models, "fused loop")
    assert (fit.keep_actor, fit.keep_sgd, fit.c0, fit.c_call) == pytest.approx(
        (0.4, 0.2, c0, c_call), rel=1e-4)
    assert fit.c_step == 0.0 and fit.c_sgd == 0.0 and fit.whole
    assert "fixed per-call costs" in fit.source and "a negative time" in fit.source
    assert fit.loo_error < 1e-4
    w = Workload(hidden=(128, 128), num_envs=32, batch_size=128, sgd_steps=2.0,
                 rollout_length=4, iterations_per_call=40)
    calls = {c: k * fused.seconds(c, w) for c, k in w.counts().items()}
    at = fit.fused_at(w)
    assert sum(calls.values()) - at.unpaid + at.bookkeeping == pytest.approx(
        built(w, calls), rel=1e-4)
    assert at.unpaid >= 0 and at.bookkeeping >= 0

    def slower(w, calls):
        return sum(calls.values()) + c0 + 3e-6 * w.sgd_steps + c_call / w.iterations_per_call

    fit = fit_loop(_fused_rows(fused, slower), fused, "fused", "wall", models, "fused loop")
    assert not fit.whole and "minus its profiled primitives" in fit.source
    assert (fit.c0, fit.c_sgd, fit.c_call) == pytest.approx((c0, 3e-6, c_call), rel=1e-3)


def test_calibration_names_every_constant_and_its_rows():
    """`calibrate` on a committed profile: every field named in ROWS, the constants the
    exploration reads all >= 0 where they are times, and the notes say which executor's
    structure was mended."""
    profile = load_profile(PROFILE)
    cal = calibrate(profile)
    fields = {f.name for f in dataclasses.fields(cal)} - {"metric", "profile"}
    assert fields <= set(cal.ROWS)
    w = Workload(num_envs=16, batch_size=64, hidden=(64, 64), sgd_steps=1.0)
    c = cal.constants(w)
    assert min(c.host, c.host_actor, c.pipelined_wait, c.replay_handoff,
               c.fused.bookkeeping) >= 0.0
    assert c.fused.unpaid >= 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.cores = 3
