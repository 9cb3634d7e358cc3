"""One ranking (`hrl.mapping.ranking.rank_mappings`): `hrl map` reports the mappings
`hrl train --mapping auto` ranks, and tops them with the one it picks. On the committed profile
(experiments/results/mapping/profile): no profiling here."""

import json

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
    assert auto["picked"] == runnable[0]["label"] == choice.mapping.label
    assert runnable[0]["seconds"] == choice.predicted_s
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
    assert {"fused", "sequential", "pipelined"} <= executors
    piped = [m for m in ranking.mappings if m.executor == "pipelined"]
    assert all(m.runnable for m in piped)
    for m in piped:
        run = load_config(CONFIG, [*SETTING, *m.overrides])
        assert choose_executor(run) == "pipelined" and run.train.actors == "process"
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
