"""A profile's rounds (`hrl.mapping.profile.merge`): each row as measured where it was fastest
or at its median round, slow spells left out, every row measured again each round."""


import pytest
from tiny_profiles import CONFIG, TINY_GRID


def test_rounds_keep_each_row_as_measured_where_it_was_fastest():
    from hrl.mapping.profile.merge import merge_rounds

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
        merged_rows,
        update_profile,
        write_profile,
    )
    from hrl.mapping.profile.merge import merge_rounds

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
    from hrl.mapping.profile import load_profile, write_profile
    from hrl.mapping.profile.merge import merge_rounds
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
