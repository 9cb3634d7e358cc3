"""The GPU's mappings in the one ranking, on a machine without a GPU: the catalogue's entries
(`validate.gpu_mappings`), how a config is recognised as one, what a profile taken on a GPU
machine ranks, and the measured move to the GPU (`link:gpu`) in place of the bus's data sheet.
On the committed GPU profile (experiments/results/mapping/profile_gpu_dqn_cartpole): no GPU and
no profiling here."""

import copy

import pytest

CONFIG = "experiments/configs/dqn_cartpole.yaml"
GPU_PROFILE = "experiments/results/mapping/profile_gpu_dqn_cartpole"
CPU_PROFILE = "experiments/results/mapping/profile"


def test_gpu_entries_join_the_catalogue_only_when_asked():
    from hrl.mapping.validate import gpu_mappings, runnable_mappings, uses_gpu

    plain = {m.label for m in runnable_mappings()}
    with_gpu = {m.label: m for m in runnable_mappings(gpu=True)}
    gpu = {m.label for m in gpu_mappings()}
    assert gpu == {"gpu-fused", "gpu", "train-on-gpu", "train+replay-on-gpu"}
    assert not plain & gpu and set(with_gpu) - plain >= gpu
    # Each host loop also runs pipelined, with process and with thread actors; the fused one
    # does not.
    for label in gpu - {"gpu-fused"}:
        assert with_gpu[f"{label} pipelined"].executor == "pipelined"
        assert with_gpu[f"{label} pipelined-thread"].executor == "pipelined-thread"
    assert "gpu-fused pipelined" not in with_gpu
    # The paper's mixed mappings: env and inference on the CPU, the learner on the GPU, the
    # tree on either side; every primitive of a host loop placed, none left to the default.
    mixed = with_gpu["train-on-gpu"]
    assert mixed.mapping == dict(env="cpu", infer="cpu", sample="cpu", update="cpu",
                                 train="gpu")
    assert with_gpu["train+replay-on-gpu"].mapping["sample"] == "gpu"
    for m in gpu_mappings():
        if m.executor != "fused":
            assert {o.split("=")[0] for o in m.overrides if o.startswith("placement.")} == {
                f"placement.{p}" for p in ("env", "infer", "sample", "update", "train")}
        assert uses_gpu(m.mapping)
    assert not any(uses_gpu(m.mapping) for m in runnable_mappings())


def test_a_config_is_recognised_as_its_gpu_entry():
    """`config_label` names the GPU entry of a config whose placement names the GPU (so that
    `--mapping auto` weighs a pick against it); without a GPU, the fused loop runs on the CPU
    and is `cpu-fused`."""
    from hrl.config import load_config
    from hrl.mapping.ranking import config_label
    from hrl.mapping.validate import runnable_mappings

    for m in runnable_mappings(gpu=True):
        if "gpu" in m.label and m.executor != "fused":
            assert config_label(load_config(CONFIG, list(m.overrides))) == m.label, m.label
    gpu_fused = next(m for m in runnable_mappings(gpu=True) if m.label == "gpu-fused")
    assert config_label(load_config(CONFIG, list(gpu_fused.overrides))) == "cpu-fused"
    # A host env (gymnasium) runs on the CPU whether placed there or not.
    gym = "experiments/configs/dqn_cartpole_gymnasium.yaml"
    mixed = next(m for m in runnable_mappings(gpu=True) if m.label == "train-on-gpu")
    assert config_label(load_config(gym, list(mixed.overrides))) == "train-on-gpu"
    unplaced_env = [o for o in mixed.overrides if not o.startswith("placement.env")]
    assert config_label(load_config(gym, unplaced_env)) == "train-on-gpu"
    # A placement the catalogue does not list is no entry of it.
    odd = ["train.executor=sequential", "placement.env=gpu", "placement.infer=cpu",
           "placement.sample=cpu", "placement.update=cpu", "placement.train=cpu"]
    assert config_label(load_config(CONFIG, odd)) is None


def test_a_gpu_profile_ranks_the_gpu_mappings_but_a_cpu_runs_none_of_them():
    """On a profile with GPU rows the ranking prices every GPU entry; a process without a GPU
    flags them not runnable, with why, and never picks one."""
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import rank_mappings

    cfg = load_config(CONFIG, ["env.num_envs=64", "train.batch_size=256"])
    ranking = rank_mappings(cfg, load_profile(GPU_PROFILE), backends=("jax",))
    labels = {m.label for m in ranking.mappings}
    assert {"gpu-fused", "train-on-gpu", "train+replay-on-gpu pipelined"} <= labels
    for m in ranking.mappings:
        assert m.seconds > 0
        if "gpu" in m.label:
            assert not m.runnable and "no GPU" in m.why_not
    assert ranking.pick()[0].label in {m.label for m in ranking.runnable()}
    assert "gpu" not in ranking.pick()[0].label
    # A CPU profile ranks no GPU entry, and says nothing of them.
    cpu = rank_mappings(cfg, load_profile(CPU_PROFILE), backends=("jax",))
    assert not any("gpu" in m.label for m in cpu.mappings)
    assert not any("gpu" in note for note in cpu.unranked)


def _with_gpu_link(profile: dict, seconds: float) -> dict:
    """`profile` with `link:gpu` rows that take `seconds` at every size."""
    from hrl.mapping.profile.links import link_row

    out = copy.deepcopy(profile)
    out["rows"] = list(out["rows"])
    for nbytes in (1 << 12, 1 << 15, 1 << 18):
        row = link_row("link:gpu", nbytes, {"latency_s": seconds, "cpu_s": seconds,
                                            "p10_s": seconds, "p90_s": seconds}, 5)
        out["rows"].append(row.to_dict())
    return out


def test_the_measured_move_to_the_gpu_replaces_the_data_sheet():
    """With `link:gpu` rows the GPU placement's hop is the measured move, and a slower move
    makes the mixed mapping slower and leaves the all-GPU fused loop as it was."""
    from hrl.config import load_config
    from hrl.mapping.plan import plan
    from hrl.mapping.profile import load_profile
    from hrl.mapping.profile.rows import profile_rows
    from hrl.mapping.ranking import rank_mappings
    from hrl.mapping.workload import workload_from_config

    cfg = load_config(CONFIG, ["env.num_envs=64", "train.batch_size=256",
                               "train.rollout_length=1", "train.train_ratio=0.0625"])
    base = load_profile(GPU_PROFILE)
    assert not any(r.call == "link:gpu" for r in profile_rows(base))
    fast, slow = _with_gpu_link(base, 20e-6), _with_gpu_link(base, 2e-3)
    link = plan(workload_from_config(cfg), fast, ["cpu", "gpu"]).links["pcie4x16"]
    assert "measured" in link.source and link.latency == pytest.approx(20e-6)
    quick = rank_mappings(cfg, fast, backends=("jax",))
    slowed = rank_mappings(cfg, slow, backends=("jax",))
    assert slowed.get("train-on-gpu").seconds > quick.get("train-on-gpu").seconds + 1e-3
    assert slowed.get("gpu-fused").seconds == pytest.approx(quick.get("gpu-fused").seconds)


def test_a_profile_without_a_gpu_skips_the_gpu_link_and_says_why():
    from hrl.config import load_config
    from hrl.mapping.profile import Profiler
    from hrl.mapping.profile.links import profile_gpu_link

    prof = Profiler(load_config(CONFIG), grid="quick", backends=("jax",), progress=False)
    profile_gpu_link(prof, repeats=3)
    assert not prof.rows and prof.skipped == ["link:gpu: JAX sees no GPU"]
    assert "between the CPU and the GPU" not in [label for label, _ in prof.tasks()]


def test_a_grid_may_time_each_loop_in_the_dispatch_runs_use():
    from hrl.mapping.profile.grids import GRIDS, LOOP_DISPATCH
    from hrl.mapping.profile.loops import loop_dispatches

    for loop, every in LOOP_DISPATCH.items():
        assert loop_dispatches(GRIDS["quick"], loop) == every
        assert loop_dispatches({**GRIDS["quick"], "loop_dispatch": "auto"}, loop) == every[:1]
    assert loop_dispatches({"loop_dispatch": "auto"}, "host") == ("sync",)


def test_a_profile_with_a_time_limit_leaves_out_what_it_did_not_start():
    """`Profiler.run(deadline=...)`: the tasks not started by then are left out and named in
    `skipped`; the ones before it ran."""
    import time

    from hrl.config import load_config
    from hrl.mapping.profile import Profiler

    prof = Profiler(load_config(CONFIG), grid="quick", backends=("jax",), progress=False)
    ran = []

    def task(name, wait=0.0):
        def run():
            ran.append(name)
            time.sleep(wait)
        return name, run

    prof.tasks = lambda: [task("first", 0.3), task("second")]
    prof._time_reference = lambda round_: None  # the reference workload is not under test
    prof.run(deadline=time.monotonic() + 0.1)
    assert ran == ["first"]
    assert "second: not measured, past the time limit" in prof.skipped


def test_the_gpu_report_is_regenerated_from_its_committed_runs(tmp_path):
    """`validate_gpu.py report` rebuilds the committed results page from the committed profile
    and runs: a row per run, each with the ranking's prediction, and the contests."""
    import csv
    import shutil
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path("experiments/mapping").resolve()))
    import validate_gpu

    committed = Path("experiments/results/mapping/gpu")
    shutil.copytree(committed / "profile", tmp_path / "profile")
    shutil.copy(committed / "measured.csv", tmp_path / "measured.csv")
    text = validate_gpu.report(tmp_path)
    with open(committed / "measured.csv", newline="") as f:
        runs = list(csv.DictReader(f))
    for r in runs:
        assert f"| {r['setting']} | {r['mapping']} | {r['mode']} |" in text
    with open(tmp_path / "validation.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(runs) and all(float(r["predicted_s"]) > 0 for r in rows)
    assert (tmp_path / "validation.png").stat().st_size > 0
    assert text.count("| strict |") + text.count("| relaxed |") >= len(runs)


def test_the_gpu_fused_loop_is_priced_from_its_own_rows():
    """Loop rows timed on the GPU (placement `GPU_LOOP`) give the GPU's fused loop its own
    bookkeeping; without them it is charged the CPU's. The CPU's fits never read them."""
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.profile.grids import GPU_LOOP
    from hrl.mapping.profile.rows import profile_rows
    from hrl.mapping.ranking import rank_mappings

    cfg = load_config(CONFIG, ["env.num_envs=64", "train.batch_size=256",
                               "train.rollout_length=1", "train.train_ratio=0.0625",
                               "agent.hidden_sizes=[256,256]"])
    base = load_profile("experiments/results/mapping/gpu/profile")
    rows = profile_rows(base)
    assert not any(r.placement == GPU_LOOP for r in rows)
    cpu_fused = [r for r in rows if r.call == "loop:fused" and r.placement == "loop"]
    # The GPU's loop: its rows each 10% of the CPU's at the same setting.
    gpu_rows = [r.replace(placement=GPU_LOOP, latency_s=r.latency_s / 10, cpu_s=r.cpu_s / 10,
                          p10_s=r.p10_s / 10, p90_s=r.p90_s / 10) for r in cpu_fused]
    with_gpu = {**base, "rows": [*base["rows"], *(r.to_dict() for r in gpu_rows)]}
    before = rank_mappings(cfg, base, backends=("jax",))
    after = rank_mappings(cfg, with_gpu, backends=("jax",))
    assert "on the GPU" in after.plan.overheads["gpu-fused"].source
    assert "gpu-fused" not in before.plan.overheads
    assert after.get("gpu-fused").seconds < before.get("gpu-fused").seconds
    for label in ("cpu-fused", "cpu", "train-on-gpu", "train+replay-on-gpu"):
        assert after.get(label).seconds == pytest.approx(before.get(label).seconds)
