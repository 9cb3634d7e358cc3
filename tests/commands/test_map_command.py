"""`hrl map` and `hrl report` end to end on a tiny profile: the report written, the machine's
speed checked against the profile's, clear one-line errors."""

import json

import pytest
from tiny_profiles import CONFIG


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
