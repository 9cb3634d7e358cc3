"""`hrl profile --only`: refreshes one kind of row in an existing profile and keeps the rest."""

import json

import pytest
from tiny_profiles import CONFIG


def test_profile_only_loop_fused_times_the_fused_loop_again(tiny_profile, tmp_path,
                                                            monkeypatch):
    """`hrl profile --only loop-fused` replaces a profile's fused-loop rows with rows at every
    LOOP_SETTINGS point and the FUSED_CALL_SETTINGS points in longer chunks, each saying its
    iterations per call, and keeps every other row."""
    import shutil

    from hrl.cli import main
    from hrl.mapping import profile as prof
    from hrl.mapping.profile.grids import FUSED_CALL_SETTINGS, LOOP_LONG_CALL, LOOP_SETTINGS
    from hrl.mapping.profile.loops import loop_iterations

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
    n = loop_iterations(prof.GRIDS["quick"]["repeats"])
    want = ([(s_, u, n) for s_, u in LOOP_SETTINGS]
            + [(s_, u, n * LOOP_LONG_CALL) for s_, u in FUSED_CALL_SETTINGS])
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


# A second profiling run; `--only` on an existing profile is checked above in make test.
@pytest.mark.long
def test_profile_only_adds_the_collective_row_to_an_existing_profile(tiny_profile, tmp_path,
                                                                     capsys):
    import shutil

    from hrl.cli import main
    from hrl.mapping.profile import load_profile
    from hrl.mapping.profile.grids import COLLECTIVE_SIZES

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
