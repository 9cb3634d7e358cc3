"""Choosing and instantiating a mapping (`hrl.mapping.instantiate`): `mapping: auto` picks a
runnable one; the RTL mapping runs in fixed point and keeps a config's own format."""



from tiny_profiles import CONFIG


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
