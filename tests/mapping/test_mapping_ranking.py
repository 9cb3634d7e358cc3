"""One ranking (`hrl.mapping.ranking.rank_mappings`): `hrl map` reports the mappings
`hrl train --mapping auto` ranks, and tops them with the one it picks. On the committed profile
(experiments/results/mapping/profile): no profiling here."""

import json

import pytest

CONFIG = "experiments/configs/dqn_cartpole.yaml"
PROFILE = "experiments/results/mapping/profile"
# The setting where `hrl map` once ranked only the fused and the sequential loop while
# `--mapping auto` picked a pipelined mapping.
SETTING = ["env.num_envs=4", "train.batch_size=256", "train.train_ratio=0.25"]


def test_map_and_mapping_auto_agree(tmp_path, capsys):
    from hrl.cli import main
    from hrl.config import load_config
    from hrl.mapping.instantiate import choose
    from hrl.mapping.profile import load_profile

    out = tmp_path / "map"
    args = ["map", CONFIG, "--profile", PROFILE, "--out", str(out)]
    for o in SETTING:
        args += ["--set", o]
    assert main(args) == 0
    console = capsys.readouterr().out
    auto = json.loads((out / "mapping.json").read_text())["auto"]
    cfg = load_config(CONFIG, SETTING)
    choice = choose(cfg, load_profile(PROFILE))
    # The top of `hrl map`'s ranking is what `--mapping auto` runs ...
    runnable = [m for m in auto["ranking"] if m["runnable"]]
    assert auto["picked"] == choice.mapping.label
    picked = next(m for m in runnable if m["label"] == auto["picked"])
    assert picked["seconds"] == choice.predicted_s
    assert choice.mapping.label == (choice.default.label if choice.kept_default
                                    else runnable[0]["label"])
    # ... and `hrl map` ranks every mapping `--mapping auto` considered, in the same order.
    assert [m["label"] for m in runnable] == [label for label, _ in choice.ranking]
    assert auto["mode"] == cfg.train.dependency
    # The report and the console show them, the pick marked.
    text = (out / "report.md").read_text()
    assert "what `hrl train --mapping auto` ranks and picks" in text
    for label, _ in choice.ranking:
        assert f"| {label} |" in text
    assert "picked" in text and "picked" in console
    assert "--mapping auto" in (out / "report.html").read_text()


def test_the_ranking_holds_a_runnable_pipelined_mapping():
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import rank_mappings
    from hrl.runtime.executor_choice import choose_executor

    cfg = load_config(CONFIG, SETTING)
    ranking = rank_mappings(cfg, load_profile(PROFILE))
    seconds = [m.seconds for m in ranking.mappings]
    assert seconds == sorted(seconds) and all(s > 0 for s in seconds)
    executors = {m.executor for m in ranking.mappings}
    assert {"fused", "sequential", "pipelined", "pipelined-thread"} <= executors
    for executor, actors in (("pipelined", "process"), ("pipelined-thread", "thread")):
        piped = [m for m in ranking.mappings if m.executor == executor]
        assert piped and all(m.runnable for m in piped)
        for m in piped:
            run = load_config(CONFIG, [*SETTING, *m.overrides])
            assert choose_executor(run) == "pipelined" and run.train.actors == actors
    # Thread actors: no profile row checks their formula, so they carry the unknown
    # executor's uncertainty and `--mapping auto` leaves a default for them only on a gain
    # beyond it.
    from hrl.mapping.uncertainty import UNKNOWN_UNCERTAINTY
    assert all(m.uncertainty >= UNKNOWN_UNCERTAINTY for m in ranking.mappings
               if m.executor == "pipelined-thread")
    # The profile has no RTL rows: its mappings are left out, and said so.
    assert not any("rtl" in m.label for m in ranking.mappings)
    assert any(n.startswith("replay-on-rtl") for n in ranking.unranked)


def test_validation_predicts_from_the_same_ranking():
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import predicted_seconds, rank_mappings
    from hrl.mapping.validate import mode_overrides, runnable_mappings

    profile = load_profile(PROFILE)
    m = next(m for m in runnable_mappings() if m.label == "cpu pipelined")
    cfg = load_config(CONFIG, [*SETTING, *m.overrides, *mode_overrides("relaxed", 1)])
    assert predicted_seconds(cfg, profile, m.label, staleness=1) == \
        rank_mappings(cfg, profile, staleness=1).get(m.label).seconds


def _ranking(default_label, *entries):
    """A Ranking of (label, seconds, uncertainty) entries, fastest first, nothing else."""
    from hrl.mapping.ranking import RankedMapping, Ranking

    ranked = [RankedMapping(label, {}, "sequential", (), seconds, True, uncertainty=u)
              for label, seconds, u in entries]
    return Ranking(sorted(ranked, key=lambda m: m.seconds), None, "strict", 1, 4, 1.0,
                   default_label=default_label)


def test_mapping_auto_leaves_the_default_only_for_a_gain_beyond_the_uncertainty():
    """The pick rule: the config's own mapping stays unless a prediction beats it by more than
    the two uncertainties combined in quadrature; among those that do, the best throughput
    their uncertainty vouches for; a default that is not ranked never holds the pick back."""
    from hrl.mapping.ranking import combined_uncertainty

    ms = 1e-3
    assert combined_uncertainty(0.3, 0.4) == pytest.approx(0.5)
    # 11% faster, uncertainties 10% and 10% (14% combined): kept, and said why.
    m, kept, why = _ranking("cpu", ("cpu", 10 * ms, 0.1), ("x", 9 * ms, 0.1)).pick()
    assert (m.label, kept) == ("cpu", True) and "within the predictions' uncertainty" in why
    assert "14%: 10% and 10% in quadrature" in why
    # 25% faster, 18% and 12%: beyond their 22% in quadrature (not beyond their 30% sum).
    m, kept, why = _ranking("cpu", ("cpu", 10 * ms, 0.12), ("x", 8 * ms, 0.18)).pick()
    assert (m.label, kept) == ("x", False) and "(22%: 18% and 12% in quadrature)" in why
    # Twice as fast: beyond 20%, the fastest runs.
    m, kept, why = _ranking("cpu", ("cpu", 10 * ms, 0.1), ("x", 5 * ms, 0.1)).pick()
    assert (m.label, kept) == ("x", False) and "beyond the uncertainty" in why
    # The same gain with an unknown executor (uncertainty 100%): kept.
    assert _ranking("cpu", ("cpu", 10 * ms, 0.1), ("x", 5 * ms, 1.0)).pick()[1]
    # An uncertain prediction at the top does not hold back a sure gain below it: the
    # fastest mapping that clears its own uncertainty runs, and the reason names the other.
    m, kept, why = _ranking("cpu", ("cpu", 10 * ms, 0.1), ("x", 4 * ms, 1.5),
                            ("y", 5 * ms, 0.1)).pick()
    assert (m.label, kept) == ("y", False) and "x, predicted faster still" in why
    # Both clear: the one whose throughput its uncertainty still vouches for is higher runs
    # (x: 2.5 ms * 2.17 = 5.4 ms against y: 3 ms * 1.14 = 3.4 ms), not the more optimistic.
    m, kept, why = _ranking("cpu", ("cpu", 10 * ms, 0.2), ("x", 2.5 * ms, 1.17),
                            ("y", 3 * ms, 0.14)).pick()
    assert (m.label, kept) == ("y", False) and "x, predicted faster still, is less certain" in why
    # ... and where the faster is as sure, the faster.
    assert _ranking("cpu", ("cpu", 10 * ms, 0.2), ("x", 2.5 * ms, 0.14),
                    ("y", 3 * ms, 0.14)).pick()[0].label == "x"
    # None clears: kept.
    assert _ranking("cpu", ("cpu", 10 * ms, 0.1), ("x", 4 * ms, 1.5),
                    ("y", 9 * ms, 0.1)).pick()[:2][1]
    # The default is the fastest, or is not ranked: the fastest.
    assert _ranking("cpu", ("cpu", 5 * ms, 0.1), ("x", 9 * ms, 0.1)).pick()[0].label == "cpu"
    assert _ranking(None, ("cpu", 10 * ms, 0.1), ("x", 9 * ms, 0.5)).pick()[0].label == "x"


def test_every_catalogue_mapping_is_recognised_as_a_config_s_own():
    """`config_label` names the catalogue entry a config runs as it stands, for every entry
    the runtime can run (the default the pick is weighed against), thread actors included,
    and None for what the catalogue lacks (data parallel)."""
    from hrl.config import load_config
    from hrl.mapping.ranking import config_label
    from hrl.mapping.validate import runnable_mappings

    for m in runnable_mappings():
        assert config_label(load_config(CONFIG, list(m.overrides))) == m.label, m.label
    assert config_label(load_config(CONFIG)) == "cpu-fused"
    threads = ["train.executor=pipelined", "train.actors=thread"]
    assert config_label(load_config(CONFIG, threads)) == "cpu pipelined-thread"
    assert config_label(load_config(CONFIG, ["train.devices=2", "env.num_envs=2"])) is None


def test_uncertainty_grows_outside_the_profiled_sizes():
    """A setting past the profiled range in M is less certain than one inside it, by the
    number of doublings beyond the trusted margin (`uncertainty.doublings_outside`,
    `TRUSTED_DOUBLINGS`); within the margin it is as certain as inside."""
    from hrl.config import load_config
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import rank_mappings
    from hrl.mapping.uncertainty import doublings_outside

    profile = load_profile(PROFILE)
    inside = rank_mappings(load_config(CONFIG, ["env.num_envs=16"]), profile)
    far = rank_mappings(load_config(CONFIG, ["env.num_envs=256"]), profile)
    lo, hi = inside.plan.box["num_envs"]
    assert lo <= 16 <= hi and doublings_outside(inside.plan.workload, inside.plan.box) == 0
    assert doublings_outside(far.plan.workload, far.plan.box) == \
        __import__("pytest").approx(__import__("math").log2(256 / hi))
    for m in inside.mappings:
        assert far.get(m.label).uncertainty > m.uncertainty > 0
    near = rank_mappings(load_config(CONFIG, [f"env.num_envs={int(2 * hi)}"]), profile)
    assert doublings_outside(near.plan.workload, near.plan.box) == 1.0
    for m in inside.mappings:
        assert near.get(m.label).uncertainty == m.uncertainty


def test_mapping_auto_sets_the_prediction_beside_the_steady_state():
    """After `hrl train --mapping auto`: the predicted rate beside the run's steady state (not
    the whole session's, which holds compilation and learning_starts), the start-up apart; a
    run with no steady chunk says so instead of comparing."""
    from rich.console import Console

    from hrl.mapping.instantiate import Choice, print_comparison
    from hrl.mapping.ranking import RankedMapping

    pick = RankedMapping("cpu-fused", {}, "fused", (), 1e-3, True, uncertainty=0.1)
    choice = Choice(pick, 1e-3, 4, 1.0, [("cpu-fused", 1e-3)], None)  # 4,000 env steps/s
    summary = {"steady_env_steps_per_s": 5000.0, "steady_updates_per_s": 1250.0,
               "steady_chunks": 3, "init_s": 2.5, "first_chunk_s": 1.5,
               "env_steps_per_s": 1900.0}
    console = Console(record=True, width=200)
    print_comparison(console, choice, summary)
    text = console.export_text()
    assert "predicted 4,000 env steps/s" in text and "measured 5,000 env steps/s" in text
    assert "steady state, 3 chunks; prediction -20%" in text
    assert "start-up: 2.5 s build and compile, 1.5 s first chunk" in text
    console = Console(record=True, width=200)
    print_comparison(console, choice, {**summary, "steady_env_steps_per_s": None,
                                       "steady_chunks": 0})
    assert "no steady state measured" in console.export_text()
