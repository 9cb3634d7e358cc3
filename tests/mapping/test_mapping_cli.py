"""Profiler, `hrl map` and `hrl report` end to end on a tiny grid (jax backend only)."""

import csv
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from hrl.mapping.workload import PRIMITIVES

# Every call at two sizes (what a fit needs), the fewest compilations that gives.
TINY_GRID = {"num_envs": (1, 4), "width": (8,), "batch": (4, 8), "capacity": (64,),
             "fanout": (4,), "repeats": 2, "scan": 2}
CONFIG = "experiments/configs/dqn_cartpole.yaml"


@pytest.fixture(scope="module")
def tiny_profile(tmp_path_factory):
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import Profiler, write_profile

    cfg = load_config(CONFIG)
    prof = Profiler(cfg, grid=TINY_GRID, backends=("jax",), progress=False, loops=False)
    rows = prof.run()
    out = tmp_path_factory.mktemp("profile")
    write_profile(rows, out, to_dict(cfg), prof.skipped, prof.speed)
    return out, rows


def test_profile_keeps_the_reference_workload_timed_around_its_round(tiny_profile):
    """The reference (hrl.mapping.speed) is timed at the start and the end of each round and
    stored in profile.json, which a planner compares with its time at run time."""
    from hrl.mapping.profile import load_profile
    from hrl.mapping.speed import PARTS, profile_reference

    out, _ = tiny_profile
    speed = load_profile(out)["speed_reference"]
    assert [s["round"] for s in speed] == [0, 0]
    for s in speed:
        assert all(s[p] > 0 for p in PARTS)
        assert s["seconds"] == pytest.approx(sum(s[p] for p in PARTS))
    assert speed[0]["time"] < speed[1]["time"]
    assert min(s["seconds"] for s in speed) <= profile_reference(speed) <= max(
        s["seconds"] for s in speed)


def test_profile_times_every_primitive_on_cpu(tiny_profile):
    out, rows = tiny_profile
    calls = {(r["call"], r["placement"]) for r in rows}
    for place in ("cpu", "cpu-fused"):
        for call in ("env:gymnax:CartPole-v1", "infer:dqn", "train:dqn", "sample", "update",
                     "insert"):
            assert (call, place) in calls
    assert ("link:host", "host") in calls
    # The collective between two virtual CPU devices (timed in a subprocess that has them).
    assert ("link:cpu-collective", "host") in calls
    assert ("link:thread", "host") in calls  # the relaxed dependency's hand-off
    # Each primitive row says which CPU dispatch timed it (`hrl profile` starts JAX in the
    # host loops' dispatch, PROFILE_DISPATCH; this test process runs JAX's default).
    from hrl.runtime.cpu_backend import running_cpu_dispatch

    here = running_cpu_dispatch()
    primitive_rows = [r for r in rows if r["mode"] in ("dispatched", "fused")]
    assert primitive_rows and {r["dispatch"] for r in primitive_rows} == {here}
    # A dispatched call is timed between the host loop's other calls; a fused one in its scan.
    assert {r.get("context") for r in rows if r["mode"] == "dispatched"} == {"loop"}
    assert {r.get("context") for r in rows if r["mode"] == "fused"} == {None}
    timed = [r for r in rows if not r["call"].startswith("rtl-")]
    # The collective's rows are a difference of two timings (with and without the psum),
    # which may round to 0 at the smallest size; every other row is a timing.
    assert all(r["latency_s"] >= 0 and r["cpu_s"] >= 0 for r in timed)
    assert all(r["latency_s"] > 0 for r in timed if r["call"] != "link:cpu-collective")
    # the grid is covered: both batches of train and sample, both M of infer and insert
    for call, field, values in (("train:dqn", "batch", {4, 8}), ("sample", "batch", {4, 8}),
                                ("infer:dqn", "num_envs", {1, 4}), ("insert", "num_envs", {1, 4})):
        got = {r[field] for r in rows if r["call"] == call and r["placement"] == "cpu"}
        assert got == values, call
    with open(out / "profile.csv") as f:
        csv_rows = list(csv.DictReader(f))
    assert len(csv_rows) == len([r for r in timed if not r["call"].startswith("loop:")])
    data = json.loads((out / "profile.json").read_text())
    assert data["format"] == "hrl-profile-1" and data["machine"]["cpus"] >= 1


def test_a_call_is_timed_after_the_calls_that_precede_it_in_the_loop():
    from hrl.mapping.profile import LOOP_CYCLE, LoopContext, _median_time

    made = []
    context = LoopContext({c: (lambda c=c: made.append(c)) for c in LOOP_CYCLE})
    t = _median_time(lambda: made.append("timed"), 2, context.around("train"))
    between = ["update", "env", "infer", "sample"]
    assert made == ["timed", "timed", *between, "timed", *between, "timed"]  # 2 warm-ups
    assert t["context"] == "loop" and "context" not in _median_time(lambda: None, 1)
    made.clear()
    context.around("insert")()  # once an iteration, where the first sample is
    assert made == ["train", "update", "env", "infer"]


def test_rounds_keep_each_row_as_measured_where_it_was_fastest():
    from hrl.mapping.profile import merge_rounds

    def row(call, batch, latency, **extra):
        return {"call": call, "placement": "cpu", "mode": "dispatched", "batch": batch,
                "latency_s": latency, "cpu_s": latency / 2, **extra}

    first = [row("train:dqn", 4, 2.0), row("sample", 4, 1.0), row("link:host", 0, 5.0, work=8.0),
             row("link:host", 0, 9.0, work=64.0)]
    second = [row("sample", 4, 3.0), row("train:dqn", 4, 1.5, repeats=7),
              row("link:host", 0, 4.0, work=64.0), row("update", 4, 0.5)]
    merged = merge_rounds([first, second])
    assert [(r["call"], r.get("work"), r["latency_s"]) for r in merged] == [
        ("train:dqn", None, 1.5), ("sample", None, 1.0), ("link:host", 8.0, 5.0),
        ("link:host", 64.0, 4.0), ("update", None, 0.5)]
    assert merged[0]["repeats"] == 7 and merged[0]["cpu_s"] == 0.75  # the whole row, not a mix
    # A difference of interleaved timings keeps its first round: its lowest is its luckiest.
    for call in ("overlap:loop", "overlap:thread"):
        overlap = [[row(call, 4, t, eta=e)] for t, e in ((2.0, 0.3), (1.0, 0.9))]
        assert merge_rounds(overlap) == overlap[0]
    assert merge_rounds([first]) == first


def test_rounds_merge_to_each_row_s_median_round_and_a_profile_keeps_them(tmp_path):
    """keep="median": each row whole from the round of its median latency (the lower middle
    of an even count); a profile keeps every round, so it can be read either way later."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import (
        Profiler,
        load_profile,
        merge_rounds,
        merged_rows,
        update_profile,
        write_profile,
    )

    def row(call, latency, **extra):
        return {"call": call, "placement": "cpu", "mode": "dispatched", "batch": 4,
                "latency_s": latency, "cpu_s": latency / 2, **extra}

    rounds = [[row("train:dqn", 3.0, n=1), row("overlap:loop", 5.0, n=1)],
              [row("train:dqn", 1.0, n=2), row("overlap:loop", 1.0, n=2)],
              [row("train:dqn", 2.0, n=3)]]
    assert [r["n"] for r in merge_rounds(rounds, "median")] == [3, 1]  # the overlap: 1st round
    assert [r["n"] for r in merge_rounds(rounds, "min")] == [2, 1]
    assert merge_rounds(rounds[:2], "median") == merge_rounds(rounds[:2], "min")
    with pytest.raises(ValueError, match="keep must be one of .*'mean'"):
        merge_rounds(rounds, "mean")

    cfg = load_config(CONFIG)
    prof = Profiler(cfg, grid={**TINY_GRID, "rounds": 3, "merge": "median"}, backends=("jax",),
                    progress=False, loops=False, only=("thread",))
    rows = prof.run()
    assert len(prof.rounds) == 3 and all(len(r) == 1 for r in prof.rounds)
    times = sorted(r[0]["latency_s"] for r in prof.rounds)
    assert [r["latency_s"] for r in rows] == [times[1]]
    write_profile(rows, tmp_path, to_dict(cfg), rounds=prof.rounds)
    saved = load_profile(tmp_path)
    assert merged_rows(saved, "min")[0]["latency_s"] == times[0]
    assert merged_rows(saved, "median")[0]["latency_s"] == times[1]
    # a row refreshed by `hrl profile --only` leaves the rounds: merging again keeps it
    update_profile(tmp_path, [row("link:thread", 9.0)], ["link:thread"])
    assert [r["latency_s"] for r in merged_rows(load_profile(tmp_path), "min")] == [9.0]
    with pytest.raises(ValueError, match="grid merge must be one of .*'best'"):
        Profiler(cfg, grid={**TINY_GRID, "merge": "best"}, backends=("jax",), progress=False,
                 loops=False, only=("thread",))


def test_rounds_measured_in_a_slow_spell_are_left_out(tmp_path):
    """A round whose reference samples ran past SPEED_TOLERANCE of the fastest sample is not
    read: each row comes from the steady rounds that measured it (a row only a slow round
    measured stays), the profile's reference is the steady rounds' samples, and
    load_profile merges a profile written without the rule again by it."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import load_profile, merge_rounds, write_profile
    from hrl.mapping.speed import steady_rounds, steady_samples

    def row(call, latency, n):
        return {"call": call, "placement": "cpu", "mode": "dispatched", "batch": 4,
                "latency_s": latency, "cpu_s": latency, "n": n}

    samples = [{"seconds": s, "round": r} for r, s in
               ((0, 3.0), (0, 1.1), (1, 1.0), (1, 1.15), (2, 1.3), (2, 1.0))]
    assert steady_rounds(samples) == {1}
    assert steady_samples(samples) == samples[2:4]
    assert steady_rounds([{"seconds": 1.0}]) is None  # samples from before rounds were named
    slow = [{"seconds": s, "round": r} for r, s in ((0, 1.0), (0, 3.0), (1, 3.0), (1, 1.0))]
    assert steady_rounds(slow) == set() and steady_samples(slow) == slow  # no round steady

    rounds = [[row("train:dqn", 0.5, 0), row("infer:dqn", 0.1, 0)],
              [row("train:dqn", 2.0, 1)], [row("train:dqn", 1.0, 2)]]
    assert [r["n"] for r in merge_rounds(rounds, "min")] == [0, 0]
    assert [r["n"] for r in merge_rounds(rounds, "min", {1})] == [1, 0]
    assert [r["n"] for r in merge_rounds(rounds, "min", {1, 2})] == [2, 0]
    write_profile(merge_rounds(rounds, "min"), tmp_path, to_dict(load_config(CONFIG)),
                  speed=samples, rounds=rounds)
    assert [r["n"] for r in load_profile(tmp_path)["rows"]] == [1, 0]


def test_a_grid_s_rounds_measure_every_row_again(monkeypatch):
    from hrl.config import load_config
    from hrl.mapping import profile

    got = []
    monkeypatch.setattr(profile.merge, "merge_rounds",
                        lambda rounds, keep="min", steady=None: got.append(rounds) or rounds[-1])
    calls = {"thread": 0, "cpu-device": 0}
    for name, method in (("thread", "_profile_thread_handoff"),
                         ("cpu-device", "_profile_cpu_device_link")):
        real = getattr(profile.Profiler, method)

        def counted(self, *args, name=name, real=real):
            calls[name] += 1
            return real(self, *args)

        monkeypatch.setattr(profile.Profiler, method, counted)
    grid = {**TINY_GRID, "rounds": 2}
    prof = profile.Profiler(load_config(CONFIG), grid=grid, backends=("jax",), progress=False,
                            loops=False, only=("thread", "cpu-device"))
    rows = prof.run()
    assert len(got) == 1 and len(got[0]) == 2
    assert [r["call"] for r in got[0][0] if r["call"] == "link:thread"] == ["link:thread"]
    # The move between CPU devices is a difference whose first round stands (or, in a process
    # with one CPU device, skipped): the second round does not measure it again.
    assert [r["call"] for r in got[0][1]] == ["link:thread"]
    assert calls == {"thread": 2, "cpu-device": 1}
    assert len(prof.skipped) == len(set(prof.skipped))
    assert rows == got[0][1]
    with pytest.raises(ValueError, match="rounds"):
        profile.Profiler(load_config(CONFIG), grid={**TINY_GRID, "rounds": 0},
                         backends=("jax",), progress=False, loops=False,
                         only=("thread",)).run()


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


def test_map_and_report_commands_write_the_report(tiny_profile, tmp_path):
    from hrl.cli import main

    out = tmp_path / "map"
    rc = main(["map", CONFIG, "--profile", str(tiny_profile[0]), "--devices",
               "cpu,gpu,fpga:u250", "--out", str(out), "--set", "train.batch_size=8"])
    assert rc == 0
    for name in ("report.md", "report.html", "latency.png", "mappings.png", "mapping.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    summary = json.loads((out / "mapping.json").read_text())
    assert summary["placements"]["gpu"]["source"] == "gpu-spec"
    assert summary["strict"]["all_mappings"] == 5**5  # cpu, cpu-fused, gpu, gpu-fused, u250
    assert set(summary["strict"]["baselines"]) == {"all-cpu", "all-gpu", "framework"}
    text = (out / "report.md").read_text()
    assert "MODELLED from public specs" in text and "Top-10 mappings" in text
    assert "pipelined executor" in text and "pipelined" in summary["strict"]
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.md").is_file()


def test_map_always_checks_the_machine_s_speed_against_its_profile(tiny_profile, tmp_path,
                                                                   capsys, monkeypatch):
    """`hrl map` times the profile's reference workload on every call (here a fixed reading
    stands in for the timing): within the tolerance nothing is said and nothing scaled; a
    machine 3x slower than the profiled one is warned about and its predictions scaled; one
    11x off is refused in one line; a profile without a reference, or one whose reference
    moved while it was taken, is named as one that cannot be checked."""
    from hrl.cli import main
    from hrl.mapping import speed

    data = json.loads((tiny_profile[0] / "profile.json").read_text())
    then = speed.profile_reference(data["speed_reference"])
    # A profile taken at one steady speed (the fixture's own samples move with the load of the
    # test session).
    data["speed_reference"] = [{**x, "seconds": then} for x in data["speed_reference"]]
    (tmp_path / "steady").mkdir()
    (tmp_path / "steady" / "profile.json").write_text(json.dumps(data))
    out = tmp_path / "map"

    def run_map(now, profile=str(tmp_path / "steady")):
        monkeypatch.setattr(speed, "reference_time", lambda: {"seconds": now})
        capsys.readouterr()
        return main(["map", CONFIG, "--profile", profile, "--devices", "cpu", "--out",
                     str(out)])

    assert run_map(1.1 * then) == 0
    assert "warning" not in capsys.readouterr().out
    assert json.loads((out / "request.json").read_text())["speed_scale"] == 1.0
    assert run_map(3 * then) == 0
    assert "reference workload 3.00x slower" in capsys.readouterr().out
    assert json.loads((out / "request.json").read_text())["speed_scale"] == pytest.approx(3)
    assert "reference workload at 3.000x its time" in (out / "report.md").read_text()
    assert run_map(then / 11) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "describes another kind of machine" in err
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "profile.json").write_text(json.dumps(
        {k: v for k, v in data.items() if k != "speed_reference"}))
    assert run_map(then, str(tmp_path / "old")) == 0
    assert "holds no reference workload" in capsys.readouterr().out
    # A profile whose reference moved 3x while it was taken: nothing is scaled, and it says so.
    (tmp_path / "busy").mkdir()
    busy = [{**x, "seconds": then * (1 + 2 * (i % 2))}
            for i, x in enumerate(data["speed_reference"])]
    (tmp_path / "busy" / "profile.json").write_text(json.dumps({**data, "speed_reference": busy}))
    assert run_map(3 * then, str(tmp_path / "busy")) == 0
    assert "moved 3.0x while it was taken" in capsys.readouterr().out
    assert json.loads((out / "request.json").read_text())["speed_scale"] == 1.0


def test_cli_errors_are_clear(tmp_path, capsys):
    from hrl.cli import main

    assert main(["map", CONFIG]) == 2
    assert "--profile" in capsys.readouterr().err
    assert main(["map", CONFIG, "--profile", str(tmp_path)]) == 2
    assert "hrl profile" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "request.json" in capsys.readouterr().err


def test_a_profile_of_another_algorithm_is_one_line(tiny_profile, capsys):
    """A DDPG config mapped with a DQN CartPole profile: no placement runs its calls, said in
    one line naming them and what the profile holds (was a traceback)."""
    from hrl.cli import main

    ddpg = "experiments/configs/ddpg_pendulum.yaml"
    assert main(["map", ddpg, "--profile", str(tiny_profile[0]), "--devices", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no placement can run env, infer, train" in err
    assert "'train:dqn'" in err and "hrl profile CONFIG" in err


def test_mapping_auto_chooses_a_runnable_mapping(tiny_profile):
    from hrl.config import load_config
    from hrl.mapping.instantiate import choose, overrides_for
    from hrl.mapping.profile import load_profile
    from hrl.mapping.validate import runnable_mappings

    cfg = load_config(CONFIG, ["train.batch_size=8", "env.num_envs=4"])
    choice = choose(cfg, load_profile(tiny_profile[0]))
    labels = [label for label, _ in choice.ranking]
    assert {"cpu-fused", "cpu", "cpu pipelined"} <= set(labels)
    assert choice.ranking == sorted(choice.ranking, key=lambda x: x[1])
    # The profile measured the process link, so the pipelined executor's transfers are costed.
    assert any(r["call"] == "link:process" for r in load_profile(tiny_profile[0])["rows"])
    assert any("pipelined executor: " in n and "process link" in n for n in choice.plan.notes)
    pipelined = next(m for m in runnable_mappings() if m.label == "cpu pipelined")
    piped = load_config(CONFIG, ["train.batch_size=8", *pipelined.overrides])
    assert (piped.train.executor, piped.train.actors) == ("pipelined", "process")
    assert choice.predicted_s > 0
    # The fastest prediction, or the config's own mapping where the gain is within the
    # uncertainty (`instantiate.choose`).
    assert choice.mapping.label == (choice.default.label if choice.kept_default else labels[0])
    new = load_config(CONFIG, ["train.batch_size=8", "env.num_envs=4",
                               *overrides_for(choice, cfg)])
    assert (new.train.executor == "fused") == (choice.mapping.label == "cpu-fused")


def test_the_rtl_mapping_runs_in_fixed_point_and_keeps_a_config_s_own_format():
    """The RTL holds fixed-point words only, so its mapping asks for them (a float32 config
    failed when the buffer opened the simulation); a config that is fixed point already keeps
    its word and integer bits."""
    from hrl.config import load_config
    from hrl.mapping.instantiate import overrides_for
    from hrl.mapping.validate import runnable_mappings

    for m in runnable_mappings():
        if "replay.backend=rtl" in m.overrides:
            assert load_config(CONFIG, list(m.overrides)).replay.fmt == "fixed"
    rtl = next(m for m in runnable_mappings() if m.label == "replay-on-rtl")
    choice = type("C", (), {"mapping": rtl})()
    for fmt, want in (("float32", "fixed"), ("fixed:24:10", "fixed:24:10")):
        cfg = load_config(CONFIG, [f"replay.fmt={fmt}"])
        new = load_config(CONFIG, [f"replay.fmt={fmt}", *overrides_for(choice, cfg)])
        assert (new.replay.backend, new.replay.fmt) == ("rtl", want)


def test_the_pipelined_wait_is_measured_by_the_profile_s_own_loop_rows(tiny_profile):
    """The pipelined executor's one constant, its wait per iteration, comes from the
    profiler's `loop:pipelined` rows (in the host loops' dispatch) and from nothing else: rows
    built from the formula without it give a wait of 0 and a leave-one-out error of 0; the
    same rows 0.4 ms slower give a wait of 0.4 ms, which the pipelined prediction then
    carries; no rows, no wait."""
    from hrl.mapping import dse
    from hrl.mapping.plan import (
        MEASURED_KINDS,
        _loop_row_workload,
        executor_errors,
        host_link_from_profile,
        loop_overheads,
        models_from_profile,
        pipelined_wait_from_profile,
        plan,
    )
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


def test_profiler_children_see_no_gpu_whatever_the_parent_runs_on(monkeypatch):
    """Every probe child measures CPU loops and links: on a GPU machine a child that started
    the GPU backend took GPU memory beside its parent and failed out of memory (H100)."""
    from hrl.mapping.profile import _child_env

    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = _child_env(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"
    assert env["PYTHONPATH"].split(os.pathsep)[-1] == "/elsewhere"
    assert (Path(env["PYTHONPATH"].split(os.pathsep)[0]) / "hrl" / "mapping").is_dir()


@pytest.mark.parametrize("dispatch", ["sync", pytest.param("async", marks=pytest.mark.long)])
def test_loop_rows_are_measured_in_a_process_with_their_dispatch(dispatch):
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import GRIDS, loop_rows_subprocess, loop_sizes

    got = loop_rows_subprocess(to_dict(load_config(CONFIG)), "host", dispatch, repeats=2,
                               settings=[(1, 2, 3)], sizes=loop_sizes(GRIDS["quick"], "host"))
    assert len(got) == 1 and got[0]["wall_s"] > 0 and got[0]["cpu_s"] > 0
    assert got[0]["async"] is (dispatch == "async")


@pytest.mark.parametrize("loop", ["host", "pipelined"])
def test_loop_row_configs_run_the_row_s_actor_and_sgd_steps(loop):
    """A loop row's config runs L actor steps and U SGD steps per iteration at its loop's
    sizes: the grid's smallest point, with at least 8 envs in the host loops (a host env step
    costs more in a loop)."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import GRIDS, LOOP_ENVS, loop_row_config, loop_sizes
    from hrl.mapping.workload import workload_from_config

    grid = {**GRIDS["quick"], "num_envs": (4, 64), "width": (64, 256), "batch": (32, 128)}
    sizes = loop_sizes(grid, loop)
    cfg = loop_row_config(to_dict(load_config(CONFIG)), loop, steps=4, sgd=3, dispatch="sync",
                          sizes=sizes)
    w = workload_from_config(cfg)
    assert cfg.env.num_envs == sizes.num_envs == max(4, LOOP_ENVS[loop]) == 8
    assert (tuple(w.hidden), w.batch_size, w.capacity) == ((64, 64), 32, min(grid["capacity"]))
    assert (w.rollout_length, w.sgd_steps) == (4, pytest.approx(3.0))
    assert cfg.train.executor == {"fused": "fused", "host": "sequential"}.get(loop, "pipelined")


def _exact_loop_row(placement, call: str, steps: int, sgd: int, beyond: float, **fields):
    """A loop row of the profiler's loop sizes whose time is exactly its primitives' predicted
    time on `placement` plus `beyond` seconds of bookkeeping."""
    from hrl.mapping.plan import _loop_row_workload

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
    from hrl.mapping.plan import (
        MEASURED_KINDS,
        _loop_row_workload,
        loop_overheads,
        models_from_profile,
    )
    from hrl.mapping.platform import measured_placement
    from hrl.mapping.profile import LOOP_SETTINGS, load_profile

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
    from hrl.mapping.plan import (
        MEASURED_KINDS,
        loop_overheads,
        models_from_profile,
    )
    from hrl.mapping.platform import measured_placement
    from hrl.mapping.profile import FUSED_CALL_SETTINGS, LOOP_SETTINGS, load_profile
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


def test_profile_only_loop_fused_times_the_fused_loop_again(tiny_profile, tmp_path,
                                                            monkeypatch):
    """`hrl profile --only loop-fused` replaces a profile's fused-loop rows with rows at every
    LOOP_SETTINGS point and the FUSED_CALL_SETTINGS points in longer chunks, each saying its
    iterations per call, and keeps every other row."""
    import shutil

    from hrl.cli import main
    from hrl.mapping import profile as prof

    asked, sized = [], []

    def fake(base, loop, dispatch, repeats, settings=None, sizes=None, timeout=900.0, builds=2):
        asked.append((loop, dispatch, list(settings)))
        sized.append(sizes)
        return [{"wall_s": 1e-4 * (i + 1), "cpu_s": 1e-4, "async": True}
                for i in range(len(settings))]

    monkeypatch.setattr(prof.spawn, "loop_rows_subprocess", fake)
    run_dir = tmp_path / "profile"
    shutil.copytree(tiny_profile[0], run_dir)
    before = prof.load_profile(run_dir)
    assert main(["profile", CONFIG, "--only", "loop-fused", "--run-dir", str(run_dir),
                 "--no-progress"]) == 0
    n = prof.loop_iterations(prof.GRIDS["quick"]["repeats"])
    want = ([(s_, u, n) for s_, u in prof.LOOP_SETTINGS]
            + [(s_, u, n * prof.LOOP_LONG_CALL) for s_, u in prof.FUSED_CALL_SETTINGS])
    assert asked == [("fused", "async", want)]
    # at the profile's own smallest sizes, where its primitives were measured
    prims = [r for r in before["rows"] if r.call.startswith(("train:", "infer:"))]
    assert (sized[0].width, sized[0].batch) == (min(r.width for r in prims),
                                                min(r.batch for r in prims))
    after = prof.load_profile(run_dir)
    fused = [r for r in after["rows"] if r["call"] == "loop:fused"]
    assert [(r["rollout"], r["sgd"], r["iterations"]) for r in fused] == want
    assert ([r for r in after["rows"] if r["call"] != "loop:fused"]
            == [r for r in before["rows"] if r["call"] != "loop:fused"])


def test_profile_only_adds_the_collective_row_to_an_existing_profile(tiny_profile, tmp_path,
                                                                     capsys):
    import shutil

    from hrl.cli import main
    from hrl.mapping.profile import COLLECTIVE_SIZES, load_profile

    run_dir = tmp_path / "profile"
    shutil.copytree(tiny_profile[0], run_dir)
    before = load_profile(run_dir)
    assert main(["profile", CONFIG, "--only", "nonsense", "--run-dir", str(run_dir)]) == 2
    assert "--only" in capsys.readouterr().err
    assert main(["profile", CONFIG, "--only", "cpu-collective", "--run-dir", str(run_dir),
                 "--no-progress"]) == 0
    after = load_profile(run_dir)
    others = [r for r in before["rows"] if r["call"] != "link:cpu-collective"]
    assert [r for r in after["rows"] if r["call"] != "link:cpu-collective"] == others
    new = [r for r in after["rows"] if r["call"] == "link:cpu-collective"]
    assert len(new) == len(COLLECTIVE_SIZES)  # replaced, not appended
    assert after["machine"] == before["machine"] and after["config"] == before["config"]
    assert after["updates"][-1]["calls"] == ["link:cpu-collective"]


def test_profile_only_rtl_tables_refreshes_the_rtl_rows(tiny_profile, tmp_path, capsys):
    import shutil

    from hrl.cli import main
    from hrl.mapping.profile import RTL_TABLE_CALLS, load_profile, rtl_cycle_rows

    run_dir = tmp_path / "profile"
    shutil.copytree(tiny_profile[0], run_dir)
    before = load_profile(run_dir)
    stale = [{"call": "rtl-kernel-cycles", "placement": "rtl-kernel-cycles", "mode": "table",
              "fixed_cycles": "1.0"}]
    data = json.loads((run_dir / "profile.json").read_text())
    data["rows"] = [r for r in data["rows"] if r["call"] not in RTL_TABLE_CALLS] + stale
    (run_dir / "profile.json").write_text(json.dumps(data))
    assert main(["profile", CONFIG, "--only", "rtl-tables", "--run-dir", str(run_dir)]) == 0
    after = load_profile(run_dir)
    assert [r.to_dict() for r in after["rows"] if r.call in RTL_TABLE_CALLS] == json.loads(
        json.dumps([r.to_dict() for r in rtl_cycle_rows()]))
    assert [r for r in after["rows"] if r["call"] not in RTL_TABLE_CALLS] == [
        r for r in before["rows"] if r["call"] not in RTL_TABLE_CALLS]
    assert main(["profile", CONFIG, "--only", "rtl-tables", "--run-dir",
                 str(tmp_path / "none")]) == 2
    assert "existing profile" in capsys.readouterr().err


@pytest.mark.parametrize("backend,executors", [
    ("opencl", ("sequential",)),
    pytest.param("jax", ("sequential", "pipelined"), marks=pytest.mark.long),
])
def test_relaxed_overlap_probe_times_the_runtime_loops(backend, executors):
    """`overlap:loop`: the runtime's loops in strict and relaxed dependency with the tree on
    PoCL or (jax) on a second XLA CPU device the probe's process makes itself, measured in a
    fresh process. The row holds what relaxed saved per SGD step and the two sides the strict
    loop's timers saw; the overlap is formed in `plan`, with the profile's link:thread."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import overlap_rows_subprocess
    from hrl.replay.backends import BackendUnavailableError, opencl

    if backend == "opencl":
        try:
            opencl.list_devices()
        except BackendUnavailableError as e:
            pytest.skip(f"no OpenCL platform: {e}")
    (row,) = overlap_rows_subprocess(to_dict(load_config(CONFIG)), backend, 256, 4,
                                     [(8, 16)], repeats=3, executors=executors)
    for key in ("train_s", "replay_s", "strict_s", "relaxed_s"):
        assert row[key] > 0, key
    # an SGD step of the strict loop holds both sides, and the loop's glue besides
    assert row["strict_s"] > row["train_s"] + row["replay_s"]
    assert row["saved_s"] == pytest.approx(row["strict_s"] - row["relaxed_s"], abs=0.3 * (
        row["strict_s"] + row["relaxed_s"]))  # a median of paired differences, not of each
    assert np.isfinite(row["saved_cpu_s"])
    # one hand-off figure, the profile's link:thread: the probe times none of its own
    assert not any(k.startswith(("overlap", "handoff")) for k in row)
    assert ("pipelined_saved_s" in row) == ("pipelined" in executors)
    if "pipelined" in executors:
        assert row["pipelined_strict_s"] > 0 and row["pipelined_relaxed_s"] > 0


def test_overlap_loops_are_the_runtime_s_in_both_modes():
    """The loops an overlap row compares differ in their dependency alone, and put the tree
    where the row says: the JAX tree on the second CPU device, a host backend as itself."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile import SECOND_CPU_PLACEMENT, overlap_loop_config

    base = to_dict(load_config(CONFIG))
    strict, relaxed = (overlap_loop_config(base, "jax", 1024, 4, 64, 32, "pipelined", r)
                       for r in (False, True))
    assert (strict.train.dependency, strict.train.staleness) == ("strict", 0)
    assert (relaxed.train.dependency, relaxed.train.staleness) == ("relaxed", 1)
    assert to_dict(strict)["train"] | {"dependency": "relaxed", "staleness": 1} == \
        to_dict(relaxed)["train"]
    for cfg in (strict, relaxed):
        assert cfg.placement == SECOND_CPU_PLACEMENT and cfg.train.executor == "pipelined"
        assert cfg.train.actors == "process" and tuple(cfg.agent.hidden_sizes) == (64, 64)
        assert cfg.replay.capacity == 1024 and cfg.train.batch_size == 32
    pocl = overlap_loop_config(base, "opencl", 1024, 4, 64, 32, "sequential", True)
    assert pocl.replay.backend == "opencl" and pocl.train.executor == "sequential"


def test_plan_prices_the_relaxed_overlap_measured_nearest_the_workload():
    from hrl.mapping.plan import replay_overlap_from_profile
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
    from hrl.mapping.plan import replay_overlap_from_profile
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


@pytest.mark.long
def test_the_profiler_times_the_rtl_tree_in_fixed_point_for_a_float_config():
    """A float32 config's profile once skipped the RTL ("fixed point only"); the profiler
    now runs the RTL tree in fixed point, as its runnable mapping does, and other trees in
    the config's format."""
    from hrl.config import load_config
    from hrl.mapping.profile import Profiler
    from hrl.replay.backends import format_for

    assert format_for("rtl", "float32") == "fixed"
    assert format_for("rtl", "fixed:24:10") == "fixed:24:10"
    assert format_for("opencl", "float32") == "float32"
    prof = Profiler(load_config(CONFIG), grid=TINY_GRID, backends=("rtl",), progress=False,
                    loops=False)
    assert prof._host_backends() == [("rtl", "rtl")] and prof.skipped == []


# Profiles the tree on cpu:1 in a process with two CPU devices and prints its rows' keys.
SECOND_CPU_PROFILE = """
import json, sys
from hrl.runtime.cpu_backend import ensure_cpu_devices
ensure_cpu_devices(2)
from hrl.config import load_config
from hrl.mapping.profile import Profiler
grid = json.loads(sys.argv[1])
prof = Profiler(load_config(sys.argv[2]), grid=grid, backends=("jax",), progress=False,
                loops=False)
labels = [label for label, _ in prof.tasks()]
for label, task in prof.tasks():
    if label.endswith("on cpu:1") or label == "between two CPU devices":
        task()
links = [r for r in prof.rows if r["call"] == "link:cpu-device"]
rows = sorted({(r["call"], r["placement"], r["batch"]) for r in prof.rows if r not in links})
from hrl.mapping.plan import cpu_device_link_from_profile
link = cpu_device_link_from_profile({"rows": links})
print(json.dumps([labels, rows, [r["work"] for r in links], link.latency, link.bandwidth]))
"""


def test_the_profile_times_the_tree_alone_on_a_second_cpu_device():
    """Placement cpu:1: sample, update and insert of the JAX buffer on cpu:1, as the host loop
    calls them, and nothing else (the learner's calls stay on cpu, and no scan rows: the fused
    loop runs on one device)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SECOND_CPU_PROFILE, json.dumps(TINY_GRID),
                          CONFIG], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    labels, rows, link_bytes, latency, bandwidth = json.loads(out.stdout.strip().splitlines()[-1])
    on_cpu1 = [label for label in labels if label.endswith("on cpu:1")]
    assert on_cpu1 == ["replay N=64 K=4 on cpu:1"]
    # The batch's move from cpu:1 to the learner's call, at four sizes, priced per transfer.
    assert len(link_bytes) == 4 and link_bytes == sorted(link_bytes) and link_bytes[0] > 0
    assert latency >= 0 and bandwidth > 0
    assert {(c, p) for c, p, _ in rows} == {("sample", "cpu:1"), ("update", "cpu:1"),
                                             ("insert", "cpu:1")}
    assert {b for c, _, b in rows if c == "sample"} == set(TINY_GRID["batch"])


def test_the_second_cpu_mapping_pins_the_learner_to_the_first():
    from hrl.config import load_config
    from hrl.mapping.validate import runnable_mappings
    from hrl.runtime.cpu_backend import cpu_devices_of

    by_label = {m.label: m for m in runnable_mappings()}
    for label in ("replay-on-cpu1", "replay-on-cpu1 pipelined"):
        m = by_label[label]
        assert m.mapping == {"env": "cpu", "infer": "cpu", "train": "cpu", "sample": "cpu:1",
                             "update": "cpu:1"}
        cfg = load_config(CONFIG, list(m.overrides))
        assert cfg.placement == {"infer": "cpu:0", "train": "cpu:0", "sample": "cpu:1",
                                 "update": "cpu:1"}
        assert cpu_devices_of(cfg) == 2 and cfg.replay.backend == "jax"
    assert by_label["replay-on-cpu1 pipelined"].executor == "pipelined"
    assert "replay-on-cpu1" not in {m.label for m in runnable_mappings(backends=("jax",))}


def test_the_xla_tree_is_timed_on_the_learner_s_device_and_runs_as_profiled():
    """Placement cpu-xla: sample, update and insert of the JAX buffer with its tree in plain
    XLA ops (`replay.impl: xla`), on the first CPU device; its mapping runs that tree, and the
    native mappings pin the kernels the profile timed whatever a config asks for."""
    from hrl.config import load_config
    from hrl.mapping.instantiate import overrides_for
    from hrl.mapping.profile import Profiler
    from hrl.mapping.validate import runnable_mappings

    prof = Profiler(load_config(CONFIG), grid=TINY_GRID, backends=("xla",), progress=False,
                    loops=False)
    tasks = dict(prof.tasks())
    assert [label for label in tasks if label.endswith("on cpu-xla")] == [
        "replay N=64 K=4 on cpu-xla"]
    tasks["replay N=64 K=4 on cpu-xla"]()
    assert {(r["call"], r["placement"]) for r in prof.rows} == {
        ("sample", "cpu-xla"), ("update", "cpu-xla"), ("insert", "cpu-xla")}
    assert {r["batch"] for r in prof.rows if r["call"] == "sample"} == set(TINY_GRID["batch"])
    by_label = {m.label: m for m in runnable_mappings()}
    for label in ("replay-on-cpu-xla", "replay-on-cpu-xla pipelined"):
        m = by_label[label]
        assert m.mapping == {"env": "cpu", "infer": "cpu", "train": "cpu",
                             "sample": "cpu-xla", "update": "cpu-xla"}
        cfg = load_config(CONFIG, list(m.overrides))
        assert (cfg.replay.backend, cfg.replay.impl, cfg.placement) == ("jax", "xla", {})
    assert "replay-on-cpu-xla" not in {m.label for m in runnable_mappings(backends=("jax",))}
    native = type("C", (), {"mapping": by_label["cpu"]})()
    cfg = load_config(CONFIG, ["replay.impl=xla"])
    assert load_config(CONFIG, ["replay.impl=xla", *overrides_for(native, cfg)]
                       ).replay.impl == "auto"


def _validate_mapping_script():
    """experiments/mapping/validate_mapping.py as a module (a script, not a package member)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "experiments" / "mapping" / "validate_mapping.py"
    spec = importlib.util.spec_from_file_location("validate_mapping_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_repredict_reads_each_run_s_measurement_and_names_a_missing_one(tmp_path):
    """`validate_mapping.py --repredict` keeps the measured side of every run from the CSV
    (its median and the rounds' text) and stops, naming the run, where one was never
    measured."""
    from hrl.mapping.validate import runnable_mappings

    script = _validate_mapping_script()
    cpu = next(m for m in runnable_mappings() if m.label == "cpu")
    xla = next(m for m in runnable_mappings() if m.label == "replay-on-cpu-xla")
    csv_path = tmp_path / "validation.csv"
    csv_path.write_text(
        "setting,mapping,mode,env_steps_per_iter,sgd_per_iter,measured_wall_s,"
        "measured_cpu_s,measured_wall_rounds_s\n"
        "S,cpu,strict,64,8.0,0.004,0.0035,0.004100 0.003900\n")
    got = script._measured_from_csv(csv_path, [("S", "gym", {}, cpu, "strict", 0)])
    assert got == [[{"wall_s": 0.004, "cpu_s": 0.0035, "env_steps_per_iter": 64,
                     "sgd_per_iter": 8.0, "rounds_text": "0.004100 0.003900",
                     "speed_ref_s": None}]]
    with pytest.raises(SystemExit, match="no run S / replay-on-cpu-xla / strict"):
        script._measured_from_csv(csv_path, [("S", "gym", {}, xla, "strict", 0)])
    # a pass that timed the reference workload beside its runs keeps it for calibration
    csv_path.write_text(
        "setting,mapping,mode,env_steps_per_iter,sgd_per_iter,measured_wall_s,"
        "measured_cpu_s,measured_wall_rounds_s,speed_ref_s\n"
        "S,cpu,strict,64,8.0,0.004,0.0035,0.004100 0.003900,0.0081\n")
    got = script._measured_from_csv(csv_path, [("S", "gym", {}, cpu, "strict", 0)])
    assert got[0][0]["speed_ref_s"] == pytest.approx(0.0081)


def test_validation_reports_the_error_calibrated_to_the_machine_s_speed():
    script = _validate_mapping_script()
    runs = [{"error": e, "speed_scale": k, "error_calibrated": (1 + e) * k - 1}
            for e, k in ((-0.10, 1.10), (-0.12, 1.12), (-0.05, 1.05))]
    text = script._calibrated_summary(runs)
    assert "1.050x-1.120x" in text and "3 runs" in text
    assert "median absolute error 1.0%" in text and "uncalibrated -10.0%" in text
    assert script._calibrated_summary([{"error": 0.1, "error_calibrated": ""}]) == ""
