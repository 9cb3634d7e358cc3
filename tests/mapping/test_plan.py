"""The plan on a profile (`hrl.mapping.plan`): unprofiled sizes predicted, the executors' loop
constants (the pipelined wait, host-loop bookkeeping, the fused loop's cost per call) fitted
on the profile's loop rows, the relaxed overlap priced from the loop's saving."""

import dataclasses

import numpy as np
import pytest
from tiny_profiles import CONFIG

from hrl.mapping.workload import PRIMITIVES


def test_plan_on_profile_predicts_unprofiled_sizes(tiny_profile):
    from hrl.mapping.plan import plan
    from hrl.mapping.profile import load_profile
    from hrl.mapping.workload import Workload

    profile = load_profile(tiny_profile[0])
    w = Workload(num_envs=2, batch_size=6, hidden=(12, 12), capacity=128, fanout=4,
                 sgd_steps=1)
    p = plan(w, profile, ["cpu", "fpga:u200"])
    e = p.exploration
    assert e.problem.placements == ("cpu", "cpu-fused", "fpga:u200")
    assert np.isfinite(e.problem.latency[:, :2]).all()  # every call predicted on the CPU
    best = e.mapping(e.best("strict"))
    assert set(best) == set(PRIMITIVES) and best["env"] in ("cpu", "cpu-fused")
    with pytest.raises(ValueError, match="neither in the profile"):
        plan(w, profile, ["tpu"])


def test_an_fpga_device_may_name_its_learner_s_array(tiny_profile):
    """`fpga:<board>:<RxC>` prices infer and train on that learner array, beside the board's
    default learner (16x16) in the same plan; its note names the array; an array that is not
    RxC is refused in one line naming the device."""
    from hrl.mapping import learner_schedule as ls
    from hrl.mapping.plan import plan
    from hrl.mapping.profile import load_profile
    from hrl.mapping.workload import Workload

    profile = load_profile(tiny_profile[0])
    w = Workload(num_envs=1, batch_size=32, hidden=(64, 64), capacity=128, fanout=4,
                 sgd_steps=1)
    p = plan(w, profile, ["cpu", "fpga:u250", "fpga:u250:8x32"])
    by_name = {pl.name: pl for pl in p.placements}
    square, wide = by_name["fpga:u250"], by_name["fpga:u250:8x32"]
    lrn = p.fpga_learners["fpga:u250:8x32"]
    assert (lrn.rows, lrn.cols) == (8, 32) and (p.learner.rows, p.learner.cols) == (16, 16)
    # the cycle model's figures, at each learner's clock, plus the invocation
    dims = list(w.policy_layers())
    for pl, (r, c) in ((square, (16, 16)), (wide, (8, 32))):
        learner = p.fpga_learners[pl.name]
        want = ls.inference_cycles(dims, r, c, 1) / learner.clock_hz + learner.invoke_overhead_s
        assert pl.seconds("infer", w) == pytest.approx(want)
    # fewer cycles on the wider array (C weight words a cycle); each at its own clock
    assert ls.inference_cycles(dims, 8, 32, 1) < ls.inference_cycles(dims, 16, 16, 1)
    assert any(n.startswith("fpga:u250:8x32: modelled") and "8x32" in n for n in p.notes)
    with pytest.raises(ValueError, match=r"device 'fpga:u250:9x9': FPGA learner array '9x9'") \
            as err:
        plan(w, profile, ["cpu", "fpga:u250:9x9"])
    assert "\n" not in str(err.value)


def test_the_pipelined_wait_is_measured_by_the_profile_s_own_loop_rows(tiny_profile):
    """The pipelined executor's one constant, its wait per iteration, comes from the
    profiler's `loop:pipelined` rows (in the host loops' dispatch) and from nothing else: rows
    built from the formula without it give a wait of 0 and a leave-one-out error of 0; the
    same rows 0.4 ms slower give a wait of 0.4 ms, which the pipelined prediction then
    carries; no rows, no wait."""
    from hrl.mapping import dse
    from hrl.mapping.calibration import (
        MEASURED_KINDS,
        _loop_row_workload,
        executor_errors,
        host_link_from_profile,
        loop_overheads,
        models_from_profile,
        pipelined_wait_from_profile,
    )
    from hrl.mapping.plan import plan
    from hrl.mapping.platform import measured_placement
    from hrl.mapping.profile import load_profile

    profile = load_profile(tiny_profile[0])
    profile = {**profile, "rows": [r for r in profile["rows"] if r["call"] != "loop:pipelined"]}
    models = models_from_profile(profile)
    host = loop_overheads(profile, models, dispatch="sync")["host"]
    assert pipelined_wait_from_profile(profile, models, host) is None  # no rows: no wait
    cpu = measured_placement("cpu", models, **MEASURED_KINDS["cpu"])
    rows, cpu_only = [], {p: "cpu" for p in PRIMITIVES}
    for steps, sgd in [(64, 1), (1, 32), (2, 24)]:
        row = {"call": "loop:pipelined", "placement": "loop", "env": "gymnax:CartPole-v1",
               "algo": "dqn", "width": 32, "num_envs": 8, "batch": 16, "capacity": 4096,
               "fanout": 16, "rollout": steps, "sgd": sgd, "dispatch": "sync"}
        w = _loop_row_workload(row)
        exp = dse.explore([cpu], w, process_link=host_link_from_profile(
            profile, "wall", "link:process"), host_cores=profile["machine"]["cpus"],
            loop_overhead={"host": host(w), "host_actor": host.actor_part(w)})
        t = max(exp.pipelined_bounds(exp.row_of(cpu_only), "strict")[:2])
        rows.append({**row, "latency_s": t, "cpu_s": t})
    exact = {**profile, "rows": profile["rows"] + rows}
    wait = pipelined_wait_from_profile(exact, models, host)
    assert wait.seconds == pytest.approx(0.0, abs=1e-7) and wait.loo_error < 1e-5
    late = {**profile, "rows": profile["rows"] + [
        {**r, "latency_s": r["latency_s"] + 4e-4} for r in rows]}
    wait = pipelined_wait_from_profile(late, models, host)
    assert wait.seconds == pytest.approx(4e-4, rel=1e-3) and wait.loo_error < 1e-4
    assert executor_errors(late, models, loop_overheads(late, models, dispatch="sync"),
                           dispatch="sync")["pipelined"] == pytest.approx(wait.loo_error)
    # The prediction of a pipelined mapping carries it, on both sides.
    w = _loop_row_workload(rows[0])
    t_exact, t_late = (plan(w, p, ["cpu"]).exploration for p in (exact, late))
    row = t_exact.row_of(cpu_only)
    for i in (0, 1):
        assert t_late.pipelined_bounds(row, "strict")[i] == pytest.approx(
            t_exact.pipelined_bounds(row, "strict")[i] + 4e-4, rel=1e-4)
    assert set(loop_overheads(exact, models)) == {"host", "fused"}


def _exact_loop_row(placement, call: str, steps: int, sgd: int, beyond: float, **fields):
    """A loop row of the profiler's loop sizes whose time is exactly its primitives' predicted
    time on `placement` plus `beyond` seconds of bookkeeping."""
    from hrl.mapping.calibration import _loop_row_workload

    row = {"call": call, "env": "gymnax:CartPole-v1", "algo": "dqn", "width": 32,
           "num_envs": 1, "batch": 16, "capacity": 4096, "fanout": 16, "rollout": steps,
           "sgd": sgd, **fields}
    w = _loop_row_workload(row)
    t = sum(n * placement.seconds(c, w) for c, n in w.counts().items()) + beyond
    return {**row, "latency_s": t, "cpu_s": t}


def test_host_loop_bookkeeping_is_fitted_per_cpu_dispatch_and_priced_per_mode(tiny_profile):
    """Host-loop rows measured sync and async give two fits; built exactly linear here, each
    fit recovers its coefficients with a leave-one-out error of 0%. A profile with async rows
    only prices the sync dispatch with them; the exploration charges each mode its own
    bookkeeping."""
    from hrl.mapping import dse
    from hrl.mapping.calibration import (
        MEASURED_KINDS,
        _loop_row_workload,
        loop_overheads,
        models_from_profile,
    )
    from hrl.mapping.platform import measured_placement
    from hrl.mapping.profile import load_profile
    from hrl.mapping.profile.grids import LOOP_SETTINGS

    profile = load_profile(tiny_profile[0])
    models = models_from_profile(profile)
    cpu = measured_placement("cpu", models, **MEASURED_KINDS["cpu"])
    truth = {"sync": (1e-3, 1e-4, 2e-4), "async": (2e-3, 1.5e-4, 4e-4)}
    rows = [_exact_loop_row(cpu, "loop:host", steps, sgd, c0 + c_step * steps + c_sgd * sgd,
                            dispatch=dispatch)
            for dispatch, (c0, c_step, c_sgd) in truth.items() for steps, sgd in LOOP_SETTINGS]
    both = {**profile, "rows": profile["rows"] + rows}
    for dispatch, coef in truth.items():
        host = loop_overheads(both, models, dispatch=dispatch)["host"]
        assert (host.c0, host.c_step, host.c_sgd) == pytest.approx(coef, rel=1e-3)
        assert f"({dispatch} dispatch)" in host.source and "leave-one-out" in host.source
        assert "error of the iteration 0% median" in host.source
    only_async = {**profile, "rows": profile["rows"] + [r for r in rows
                                                        if r["dispatch"] == "async"]}
    fallback = loop_overheads(only_async, models, dispatch="sync")["host"]
    assert fallback.c0 == pytest.approx(truth["async"][0], rel=1e-3)

    w = _loop_row_workload(rows[0])
    cpu_only = {p: "cpu" for p in PRIMITIVES}
    plain = dse.explore([cpu], w, loop_overhead={"host": 1e-3})
    split = dse.explore([cpu], w, loop_overhead={"host": 1e-3, "host_relaxed": 5e-3})
    row = plain.row_of(cpu_only)
    assert split.times("strict")[row] == plain.times("strict")[row]
    assert split.times("relaxed")[row] > plain.times("relaxed")[row]
    assert split.times("relaxed", "pipelined")[row] > plain.times("relaxed", "pipelined")[row]
    assert (split.times("strict", "pipelined")[row]
            == plain.times("strict", "pipelined")[row])


def test_fused_loop_cost_per_call_is_fitted_apart_and_priced_per_chunk(tiny_profile):
    """Fused-loop rows timed in chunks of two lengths, built exactly as c0 + c_sgd * U +
    c_call / N beyond the primitives, give back the three; the cost per call is priced by the
    workload's iterations per call (`hrl train`: a chunk of train.chunk_env_steps), none where
    that is not known; rows at one chunk length keep it in c0, as before."""
    from hrl.config import load_config
    from hrl.mapping.calibration import (
        MEASURED_KINDS,
        loop_overheads,
        models_from_profile,
    )
    from hrl.mapping.platform import measured_placement
    from hrl.mapping.profile import load_profile
    from hrl.mapping.profile.grids import FUSED_CALL_SETTINGS, LOOP_SETTINGS
    from hrl.mapping.workload import Workload, workload_from_config

    profile = load_profile(tiny_profile[0])
    models = models_from_profile(profile)
    fused = measured_placement("cpu-fused", models, **MEASURED_KINDS["cpu-fused"])
    c0, c_sgd, c_call = 2e-5, 3e-6, 5e-4
    rows = [_exact_loop_row(fused, "loop:fused", steps, sgd, c0 + c_sgd * sgd + c_call / n,
                            dispatch="async", iterations=n)
            for steps, sgd, n in ([(s_, u, 10) for s_, u in LOOP_SETTINGS]
                                  + [(s_, u, 80) for s_, u in FUSED_CALL_SETTINGS])]
    got = loop_overheads({**profile, "rows": profile["rows"] + rows}, models)["fused"]
    assert (got.c0, got.c_step, got.c_sgd, got.c_call) == pytest.approx(
        (c0, 0.0, c_sgd, c_call), rel=1e-3, abs=1e-12)
    assert "500 us per call" in got.source
    w = Workload(sgd_steps=2.0, iterations_per_call=40)
    assert got(w) == pytest.approx(c0 + 2 * c_sgd + c_call / 40)
    assert got(dataclasses.replace(w, iterations_per_call=0)) == pytest.approx(c0 + 2 * c_sgd)
    one_length = [r for r in rows if r["iterations"] == 10]
    folded = loop_overheads({**profile, "rows": profile["rows"] + one_length}, models)["fused"]
    assert folded.c_call == 0.0 and "per call" not in folded.source
    cfg = load_config(CONFIG, ["env.num_envs=8", "train.rollout_length=2",
                               "train.chunk_env_steps=1000"])
    assert workload_from_config(cfg).iterations_per_call == 62
    with pytest.raises(ValueError, match="iterations_per_call must be an int >= 0, got -1"):
        Workload(iterations_per_call=-1)


def test_plan_prices_the_relaxed_overlap_measured_nearest_the_workload():
    from hrl.mapping.calibration import replay_overlap_from_profile
    from hrl.mapping.workload import Workload

    def row(place, width, batch, eta, call="overlap:loop", **more):
        return {"call": call, "placement": place, "width": width, "batch": batch,
                "overlap": eta, "overlap_cpu": eta - 1.0, **more}

    profile = {"rows": [row("pocl", 64, 32, -0.6, overlap_pipelined=-0.8),
                        row("pocl", 256, 256, 0.4), row("pocl", 64, 256, 1.7),
                        row("rtl", 64, 32, 0.9),
                        # an older profile's probe, out of the loop: read only where a
                        # placement has no loop row
                        row("pocl", 64, 40, 0.95, "overlap:thread"),
                        row("cpu1", 64, 32, 0.3, "overlap:thread")]}
    small = Workload(hidden=(64, 64), batch_size=40)
    got = replay_overlap_from_profile(profile, small)
    assert got["pocl"][0] == pytest.approx(-0.6) and got["rtl"][0] == pytest.approx(0.9)
    assert "overlap:loop" in got["pocl"][1] and "batch 32" in got["pocl"][1]
    assert got["cpu:1"] == (pytest.approx(0.3), "overlap:thread at width 64, batch 32")
    big = Workload(hidden=(200, 200), batch_size=300)
    assert replay_overlap_from_profile(profile, big)["pocl"][0] == pytest.approx(0.4)
    wide_batch = Workload(hidden=(64, 64), batch_size=200)  # measured 1.7: capped at 1
    assert replay_overlap_from_profile(profile, wide_batch)["pocl"][0] == 1.0
    assert replay_overlap_from_profile(profile, small, "cpu")["pocl"][0] == pytest.approx(-1.6)
    # the pipelined executor's own figure where the row has one, the sequential one's else
    piped = replay_overlap_from_profile(profile, small, executor="pipelined")
    assert piped["pocl"][0] == pytest.approx(-0.8) and piped["rtl"][0] == pytest.approx(0.9)
    assert replay_overlap_from_profile(profile, big, executor="pipelined")["pocl"][0] == \
        pytest.approx(0.4)
    assert replay_overlap_from_profile({"rows": []}, small) == {}
    with pytest.raises(ValueError, match="executor must be"):
        replay_overlap_from_profile(profile, small, executor="fused")


def test_plan_forms_the_overlap_from_the_loop_s_saving_with_the_profile_s_hand_off():
    """A loop row holds what relaxed saved and the two sides; the overlap is formed with the
    hand-off the model takes back off, so the model's saving at the measured point is the
    measured saving, whatever hand-off the profile holds."""
    from hrl.mapping.calibration import replay_overlap_from_profile
    from hrl.mapping.workload import Workload

    row = {"call": "overlap:loop", "placement": "cpu1", "width": 64, "batch": 32,
           "train_s": 200e-6, "replay_s": 100e-6, "saved_s": -30e-6, "saved_cpu_s": -50e-6,
           "pipelined_saved_s": 20e-6}
    w = Workload(hidden=(64, 64), batch_size=32)
    for handoff in (0.0, 35e-6, 52e-6):
        eta = replay_overlap_from_profile({"rows": [row]}, w, handoff=handoff)["cpu:1"][0]
        assert eta == pytest.approx((-30e-6 + handoff) / 100e-6)
        assert eta * 100e-6 - handoff == pytest.approx(-30e-6)  # the model's saving
        piped = replay_overlap_from_profile({"rows": [row]}, w, executor="pipelined",
                                            handoff=handoff)["cpu:1"][0]
        assert piped == pytest.approx((20e-6 + handoff) / 100e-6)
    cpu = replay_overlap_from_profile({"rows": [row]}, w, "cpu", handoff=10e-6)["cpu:1"][0]
    assert cpu == pytest.approx((-50e-6 + 10e-6) / 100e-6)
    # a saving above the shorter side is noise: capped at the whole side
    big = dict(row, saved_s=400e-6)
    assert replay_overlap_from_profile({"rows": [big]}, w, handoff=35e-6)["cpu:1"][0] == 1.0
    # a row that also stores an overlap (older profiles) is still formed from its saving
    old = dict(row, overlap=0.9, handoff_s=52e-6)
    assert replay_overlap_from_profile({"rows": [old]}, w, handoff=35e-6)["cpu:1"][0] == \
        pytest.approx(0.05)
    with pytest.raises(ValueError, match="executor must be"):
        replay_overlap_from_profile({"rows": [row]}, w, executor="fused")
