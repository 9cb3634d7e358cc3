"""The runnable mappings and their validation (`hrl.mapping.validate`,
experiments/mapping/validate_mapping.py): the second-CPU mapping pins the learner to the
first, `--repredict` reads each run's measurement, the error calibrated to the machine's speed."""

from pathlib import Path

import pytest
from tiny_profiles import CONFIG


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
