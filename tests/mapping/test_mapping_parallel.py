"""D devices of a kind in the design-space exploration (`hrl.mapping.parallel`): enumeration,
the scaling model's numbers, the shared-cores verdict, the instantiated config, device syntax.
No timing asserts: every figure here is a prediction from a synthetic profile."""

import dataclasses
import math

import pytest

from hrl.mapping import parallel
from hrl.mapping.plan import plan
from hrl.mapping.scaling import DataParallelModel
from hrl.mapping.workload import CALL_PRIMITIVE, Workload

CONFIG = "experiments/configs/dqn_cartpole.yaml"
WORK = Workload(num_envs=2, batch_size=8, hidden=(16, 16), capacity=256, fanout=4,
                sgd_steps=4, rollout_length=4)


def _synthetic_profile(cpus: int = 2) -> dict:
    """Every call on cpu and cpu-fused at two sizes (latency = 10 us + 1 ns per work unit),
    a host memory copy and the fused loop's rows, on a machine of `cpus` cores."""
    rows = []
    calls = {"env": "env:gymnax:CartPole-v1", "infer": "infer:dqn", "train": "train:dqn",
             "sample": "sample", "update": "update", "insert": "insert"}
    for call, name in calls.items():
        assert call in CALL_PRIMITIVE
        for place in ("cpu", "cpu-fused"):
            for work in (100.0, 10_000.0):
                t = 1e-5 + 1e-9 * work
                rows.append({"call": name, "placement": place, "work": work,
                             "latency_s": t, "cpu_s": t})
    for nbytes in (1024.0, 1 << 20):
        t = 1e-6 + nbytes / 5e9
        rows.append({"call": "link:host", "placement": "host", "work": nbytes,
                     "latency_s": t, "cpu_s": t})
    return {"machine": {"cpus": cpus}, "rows": rows}


def test_enumeration_has_d_device_candidates_only_with_a_count():
    profile = _synthetic_profile()
    single = plan(WORK, profile, ["cpu"])
    assert single.data_parallel == {} and single.device_counts == {}
    assert all(not isinstance(x[2], parallel.Candidate) for x in single.ranked("strict"))
    several = plan(WORK, profile, ["cpu*4"])
    assert several.device_counts == {"cpu": 4}
    cands = several.data_parallel["strict"]
    assert {(c.devices, c.sampling) for c in cands} == {
        (d, s) for d in (1, 2, 3, 4) for s in ("global", "local")}
    assert all(c.kind == "cpu" and c.placement == "cpu-fused" for c in cands)
    # The single-device exploration is the same with or without the count.
    assert several.exploration.problem.placements == single.exploration.problem.placements
    ranked = several.ranked("strict")
    assert any(isinstance(x[2], parallel.Candidate) for x in ranked)
    assert [x[1] for x in ranked] == sorted((x[1] for x in ranked), reverse=True)
    # `cpu*1` is one device: no data-parallel candidates.
    assert plan(WORK, profile, ["cpu*1"]).data_parallel == {}
    # Strong scaling keeps only the D that divide num_envs, batch and capacity.
    strong = plan(WORK, profile, ["cpu*4"], scaling="strong")
    assert {c.devices for c in strong.data_parallel["strict"]} == {1, 2}


def test_predicted_speedup_is_the_data_parallel_model():
    profile = _synthetic_profile(cpus=2)
    p = plan(WORK, profile, ["cpu*8"])
    e = p.exploration
    fused = {q: "cpu-fused" for q in ("env", "infer", "sample", "update", "train")}
    t1 = e.times("strict")[e.row_of(fused)]
    host = p.links["host"]
    for c in p.data_parallel["strict"]:
        model = DataParallelModel(
            iteration_s=t1, cores=2, device_link=host,
            process_link=c.model.process_link, param_bytes=4 * WORK.params,
            row_bytes=WORK.transition_bytes, batch_per_device=WORK.batch_size,
            sgd_per_iter=WORK.sgd_steps, sampling=c.sampling)
        assert c.model.iteration_s == pytest.approx(t1)
        assert c.speedup == pytest.approx(model.speedup(c.devices))
        assert c.iteration_s == pytest.approx(model.iteration_time(c.devices))
        assert c.env_steps_per_iter == c.devices * WORK.num_envs * WORK.rollout_length
        assert c.env_steps_per_s == pytest.approx(c.env_steps_per_iter / c.iteration_s)
    local = {c.devices: c for c in p.data_parallel["strict"] if c.sampling == "local"}
    glob = {c.devices: c for c in p.data_parallel["strict"] if c.sampling == "global"}
    assert all(local[d].iteration_s <= glob[d].iteration_s for d in local)


def test_virtual_devices_on_two_shared_cores_do_not_beat_two():
    p = plan(WORK, _synthetic_profile(cpus=2), ["cpu*8"])
    for sampling in ("global", "local"):
        by_d = {c.devices: c for c in p.data_parallel["strict"] if c.sampling == sampling}
        assert by_d[4].env_steps_per_s <= by_d[2].env_steps_per_s
        assert by_d[8].env_steps_per_s <= by_d[2].env_steps_per_s
        assert by_d[8].speedup <= 2.0
    lines = parallel.verdicts(p.data_parallel["strict"], p.cores)
    assert len(lines) == 2 and all("do not pay" in v and "2 cores" in v for v in lines)


def test_gpus_have_their_own_compute():
    link = parallel.get_link("nvlink4")
    m = DataParallelModel(0.01, None, link, link, 1000, 44, 64, 1.0, sampling="local")
    assert m.speedup(8) > m.speedup(2) > 1.0
    assert m.messages(3) == 2 * 2 and dataclasses.replace(m, sampling="global").messages(3) == 22
    with pytest.raises(ValueError, match="sampling"):
        dataclasses.replace(m, sampling="both")


@pytest.mark.parametrize("entry, message", [
    ("cpu*0", "'cpu\\*0'.*count must be in"),
    ("cpu*x", "'cpu\\*x'.*KIND\\*N"),
    ("cpu*", "'cpu\\*'.*KIND\\*N"),
    ("pocl*2", "'pocl\\*2'.*only cpu and gpu"),
    ("cpu,cpu*2", "'cpu' twice"),
])
def test_bad_device_syntax_names_the_value(entry, message):
    with pytest.raises(ValueError, match=message):
        parallel.parse_devices(entry.split(","))


def test_bad_device_syntax_on_the_command_line(tmp_path, capsys):
    from hrl.cli import main

    assert main(["map", CONFIG, "--devices", "cpu*two", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'cpu*two'" in err


def test_parse_devices_keeps_names_and_counts():
    assert parallel.parse_devices(["cpu*4", "pocl", "gpu*2", "fpga:u250"]) == (
        ["cpu", "pocl", "gpu", "fpga:u250"], {"cpu": 4, "gpu": 2})


def test_instantiate_sets_train_devices():
    from hrl.config import load_config
    from hrl.mapping.instantiate import choose, overrides_for

    profile = _synthetic_profile(cpus=2)
    base = ["env.num_envs=4", "train.batch_size=8", "replay.capacity=1024",
            "train.learning_starts=64"]
    cfg = load_config(CONFIG, base)
    choice = choose(cfg, profile, max_devices=4, available_devices=4)
    labels = dict(choice.ranking)
    assert {"cpu-fused x2 (global)", "cpu-fused x4 (global)"} <= set(labels)
    assert "cpu-fused x3 (global)" not in labels  # 3 divides none of 4, 8, 1024
    assert any("D=3" in n and "does not divide" in n for n in choice.notes)
    assert choice.ranking == sorted(choice.ranking, key=lambda x: x[1])
    dp = next(c for c in choice.plan.data_parallel["strict"]
              if c.devices == 2 and c.sampling == "global")
    assert dp.scaling == "strong" and labels[dp.label] == pytest.approx(dp.iteration_s)
    new = load_config(CONFIG, [*base, *dp.overrides(cfg), *overrides_for(choice, cfg)])
    assert new.train.devices == 2 and new.replay.sampling == "global"
    assert (new.env.num_envs, new.train.batch_size) == (4, 8)  # strong: the config's own work
    # Only the devices JAX sees are runnable; the rest are named in one line.
    few = choose(cfg, profile, max_devices=4, available_devices=2)
    assert "cpu-fused x4 (global)" not in dict(few.ranking)
    dropped = [n for n in few.notes if n.startswith("data parallel not runnable")]
    assert len(dropped) == 1 and "D=4: JAX sees 2" in dropped[0]
    # Without --mapping-devices nothing changes.
    plain = choose(cfg, profile)
    assert not any(" x" in label for label in dict(plain.ranking))
    assert not [n for n in plain.notes if n.startswith("data parallel")]


def test_weak_scaling_overrides_make_a_valid_config():
    from hrl.config import load_config

    cfg = load_config(CONFIG)
    p = plan(dataclasses.replace(WORK), _synthetic_profile(), ["cpu*4"])
    c = next(c for c in p.data_parallel["strict"] if c.devices == 4)
    new = load_config(CONFIG, list(c.overrides(cfg)))
    assert new.train.devices == 4 and new.env.num_envs == 4 * cfg.env.num_envs
    assert new.train.batch_size == 4 * cfg.train.batch_size
    assert math.isclose(new.train.train_ratio * new.env.num_envs,
                        cfg.train.train_ratio * cfg.env.num_envs)


def test_report_lists_the_candidates_and_plots_their_curve(tmp_path):
    import csv
    import json

    from hrl.mapping.report import write_report

    p = plan(WORK, _synthetic_profile(cpus=2), ["cpu*4"])
    summary = write_report(p, tmp_path, None, "test")
    for name in ("scaling.png", "data_parallel.csv", "report.md"):
        assert (tmp_path / name).stat().st_size > 0
    rows = list(csv.DictReader((tmp_path / "data_parallel.csv").read_text().splitlines()))
    assert len(rows) == 2 * 4 * 2  # modes x D x sampling
    text = (tmp_path / "report.md").read_text()
    assert "D-device candidates" in text and "do not pay" in text and "Weak scaling" in text
    assert json.loads((tmp_path / "mapping.json").read_text())["data_parallel"]["counts"] == {
        "cpu": 4}
    assert "data_parallel" in summary


# ----------------------------------------------------------------- the measured collective
def _with_collective(profile: dict, latency: float = 50e-6, bandwidth: float = 2e9) -> dict:
    """`profile` plus `link:cpu-collective` rows timed exactly latency + bytes / bandwidth."""
    rows = list(profile["rows"])
    for nbytes in (2.0, 512.0, 1 << 15, 1 << 19):
        t = latency + nbytes / bandwidth
        rows.append({"call": "link:cpu-collective", "placement": "host", "work": nbytes,
                     "latency_s": t, "cpu_s": t})
    return {**profile, "rows": rows}


def test_collective_row_is_fitted_as_a_link():
    from hrl.mapping.calibration import host_link_from_profile

    link = host_link_from_profile(_with_collective(_synthetic_profile()), "wall",
                                  "link:cpu-collective")
    assert link.name == "cpu-collective"
    assert link.latency == pytest.approx(50e-6, rel=1e-6)
    assert link.bandwidth == pytest.approx(2e9, rel=1e-6)
    assert "rendezvous" in link.source
    assert host_link_from_profile(_synthetic_profile(), "wall", "link:cpu-collective") is None


def test_collective_timings_rows_fit_latency_and_bandwidth():
    """The probe's rows (message bytes, per-ring-step time) fit as the other link rows do."""
    from hrl.mapping.model import fit_models

    rows = [{"call": "link:cpu-collective", "placement": "host", "work": float(n),
             "latency_s": 8e-6 + n / 4e9, "cpu_s": 8e-6 + n / 4e9}
            for n in (2, 512, 8192, 65536, 524288)]
    m = fit_models(rows)[("link:cpu-collective", "host")]
    assert m.intercept == pytest.approx(8e-6, rel=1e-6)
    assert 1 / m.slope == pytest.approx(4e9, rel=1e-6)


def test_model_uses_the_collective_row_when_present():
    with_row = plan(WORK, _with_collective(_synthetic_profile(cpus=2)), ["cpu*4"])
    without = plan(WORK, _synthetic_profile(cpus=2), ["cpu*4"])
    for c in with_row.data_parallel["strict"]:
        assert c.model.device_link.name == "cpu-collective"
        assert c.model.device_link.latency == pytest.approx(50e-6, rel=1e-6)
        assert c.model.rendezvous_priced
        assert "not measured" not in c.model.describe()
    for c in without.data_parallel["strict"]:
        assert c.model.device_link.name == "host"
        assert not c.model.rendezvous_priced
        assert "collective rendezvous not measured: optimistic" in c.model.describe()
    # 50 us per message is dearer than the memory copy's 1 us: D > 1 is slower with the row.
    by_d = {(c.devices, c.sampling): c for c in without.data_parallel["strict"]}
    for c in with_row.data_parallel["strict"]:
        if c.devices > 1:
            assert c.speedup < by_d[(c.devices, c.sampling)].speedup
    # GPUs keep their own link: the collective row is for virtual CPU devices only.
    gpu = plan(WORK, _with_collective(_synthetic_profile()), ["cpu", "gpu*2"])
    assert {c.model.device_link.name for c in gpu.data_parallel["strict"]} == {"nvlink4"}
    assert all(c.model.rendezvous_priced for c in gpu.data_parallel["strict"])


def test_for_virtual_cpu_devices_falls_back_and_fitted_latency_counts_as_measured():
    from hrl.mapping.links import Link

    args = dict(iteration_s=4e-3, cores=2, param_bytes=70_000, row_bytes=44,
                batch_per_device=64, sgd_per_iter=8)
    fallback = DataParallelModel.for_virtual_cpu_devices(**args)
    assert fallback.device_link.name == "host" and not fallback.rendezvous_priced
    measured = DataParallelModel.for_virtual_cpu_devices(
        **args, links={"cpu-collective": Link("cpu-collective", 1e9, 1e-4, "measured")})
    assert measured.device_link.name == "cpu-collective" and measured.rendezvous_priced
    fitted = fallback.with_latency_fitted(2, 1, 2 * 4e-3 / 0.42)
    assert fitted.rendezvous_priced and "not measured" not in fitted.describe()
    assert fitted.speedup(2) == pytest.approx(0.42)


@pytest.mark.parametrize("measured", [True, False])
def test_report_says_whether_the_rendezvous_is_measured(tmp_path, measured):
    import json

    from hrl.mapping.report import write_report

    profile = _synthetic_profile(cpus=2)
    p = plan(WORK, _with_collective(profile) if measured else profile, ["cpu*2"])
    write_report(p, tmp_path, None, "test")
    text = (tmp_path / "report.md").read_text()
    links = json.loads((tmp_path / "mapping.json").read_text())["data_parallel"]["links"]
    if measured:
        assert "collectives over cpu-collective" in text
        assert "not measured: optimistic" not in text
        assert "cpu-collective" in links[0]
    else:
        assert "collectives over host" in text
        assert "collective rendezvous not measured: optimistic" in text
        assert "not measured: optimistic" in links[0]
    assert any(("optimistic" in n) != measured for n in p.notes if n.startswith("cpu*2"))
