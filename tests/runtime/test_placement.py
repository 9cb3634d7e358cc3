"""`placement:` in the config: each primitive on its device with the same result, bad placements
named by key, two CPU devices equal one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from tiny_runs import ROOT, _host_run, assert_trees_equal


def test_config_placement_runs_each_primitive_on_its_device_with_the_same_result():
    """`placement:` in the config reaches the host loop; on the same device it changes nothing."""
    placed = [f"placement.{p}=cpu:0" for p in ("env", "infer", "sample", "update", "train")]
    built, state = _host_run(placed)
    assert set(built.loop.placement) == {"env", "infer", "sample", "update", "train"}
    _, plain = _host_run([])
    assert_trees_equal(state, plain)


@pytest.mark.parametrize("override,message", [
    ("placement.learner=cpu:0", "placement.learner.*not a primitive"),
    ("placement.infer=tpu", "placement.infer.*host, cpu, gpu"),
    ("placement.infer=cpu:7", "placement.infer.*'cpu:7'.*1 cpu device.*JAX had started"),
    ("placement.env=host", "placement.env.*only for a host primitive"),
])
def test_bad_placement_names_the_key(override, message):
    import jax

    jax.devices()  # started: a run can no longer ask for the devices its placement names
    with pytest.raises(ValueError, match=message):
        _host_run([override], iterations=1)


def test_placement_on_two_cpu_devices_equals_one(tmp_path):
    """infer on cpu:0 and train/sample/update on cpu:1 (two XLA CPU devices in one process):
    bit for bit the run with everything on one device."""
    script = tmp_path / "two_devices.py"
    script.write_text(textwrap.dedent(f"""
        import jax, sys
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from tiny_runs import _host_run, assert_trees_equal
        assert len(jax.devices("cpu")) == 2
        _, placed = _host_run(["placement.infer=cpu:0", "placement.env=cpu:0",
                               "placement.sample=cpu:1", "placement.update=cpu:1",
                               "placement.train=cpu:1"])
        _, plain = _host_run([])
        assert_trees_equal(placed, plain)
        print("equal")
    """))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "equal" in proc.stdout
