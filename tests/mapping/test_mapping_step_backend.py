"""`hrl train --mapping auto` leaves the training process's JAX backend unstarted.

The mapping step uses JAX (the model's fits, the speed check), and JAX's CPU backend starts
once per process with its dispatch, intra-op threads and devices fixed. When the step ran in
the training process, the chosen mapping then ran under JAX's defaults instead of the run's
settings and was 7-22% slower than the same run without --mapping auto. It now runs in a
child (`instantiate.choose_in_child`); this guards the structure, not a timing: after the
mapping step the training process has started no backend, so the run's own
`start_cpu_backend` sets the threads and devices as it does without --mapping auto.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import argparse, io, sys
from rich.console import Console
from jax._src import xla_bridge
from hrl.config import load_config
from hrl.mapping.instantiate import apply_cli

config = "experiments/configs/dqn_cartpole.yaml"
args = argparse.Namespace(mapping="auto", profile="experiments/results/mapping/profile",
                          resume=None, mapping_devices=1, config=config, overrides=[])
cfg, choice = apply_cli(args, load_config(config), Console(file=io.StringIO()))
assert choice is not None and cfg.train.executor != "auto", cfg.train.executor
print("started" if xla_bridge.backends_are_initialized() else "unstarted")
"""


def test_mapping_step_starts_no_backend_in_the_training_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "unstarted", out.stdout
