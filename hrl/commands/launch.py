"""`hrl launch --num-processes P -- train CONFIG ...`: one run over P processes.

On one machine, starts P copies of `hrl <command> ...` joined by `jax.distributed` (each with
`--devices-per-process` virtual CPU devices when JAX runs on the CPU) and waits for them; the
run's output is process 0's. On a cluster, run `hrl launch --coordinator HOST:PORT
--num-processes P --process-id I -- train CONFIG ...` once on each host: the same code path,
one process per call. Set train.devices (or `train --devices`) to the devices of all processes.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from hrl.config import ConfigError
from hrl.runtime.cpu_backend import ensure_cpu_devices
from hrl.runtime.distributed import COORDINATOR, NUM_PROCESSES, PROCESS_ID

HELP = "run an hrl command over several processes or hosts joined by jax.distributed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-processes", type=int, required=True, metavar="P",
                        help="processes in the run (all hosts together)")
    parser.add_argument("--coordinator", metavar="HOST:PORT",
                        help="process 0's address (default: localhost and a free port; "
                        "needed with --process-id)")
    parser.add_argument("--process-id", type=int, metavar="I",
                        help="run only process I here (one call per host on a cluster); "
                        "default: start all P processes on this machine")
    parser.add_argument("--devices-per-process", type=int, default=1, metavar="N",
                        help="virtual CPU devices per process when JAX runs on the CPU "
                        "(default 1; GPUs are used as they are)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the hrl command each process runs, after --, e.g. -- train "
                        "CONFIG.yaml --devices 2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _environment(coordinator: str, processes: int, process: int, devices: int) -> dict:
    env = dict(os.environ)
    env.update({COORDINATOR: coordinator, NUM_PROCESSES: str(processes),
                PROCESS_ID: str(process)})
    ensure_cpu_devices(devices, env)
    return env


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ConfigError("missing the command to run after --, e.g. -- train CONFIG.yaml")
    if command[0] == "launch":
        raise ConfigError("hrl launch cannot launch itself")
    if args.num_processes < 1:
        raise ConfigError(f"--num-processes must be >= 1, got {args.num_processes}")
    if args.devices_per_process < 1:
        raise ConfigError(f"--devices-per-process must be >= 1, got {args.devices_per_process}")
    if args.process_id is not None:  # one process of a cluster run: this one, here
        if args.coordinator is None:
            raise ConfigError("--process-id needs --coordinator HOST:PORT (process 0's address)")
        if not 0 <= args.process_id < args.num_processes:
            raise ConfigError(f"--process-id must be in [0, {args.num_processes}), "
                              f"got {args.process_id}")
        env = _environment(args.coordinator, args.num_processes, args.process_id,
                           args.devices_per_process)
        return subprocess.call([sys.executable, "-m", "hrl.cli", *command], env=env)
    coordinator = args.coordinator or f"localhost:{_free_port()}"
    children = []
    for process in range(args.num_processes):
        env = _environment(coordinator, args.num_processes, process, args.devices_per_process)
        # Process 0 speaks for the run; the others' output would repeat it (errors still show).
        out = None if process == 0 else subprocess.DEVNULL
        children.append(subprocess.Popen([sys.executable, "-m", "hrl.cli", *command], env=env,
                                         stdout=out))
    return _wait(children)


def _wait(children: list[subprocess.Popen]) -> int:
    """Wait for every process; when one fails, the others cannot finish (their collectives
    wait for it), so they are stopped. Ctrl-C goes to every process (same process group):
    each checkpoints and stops. Returns the first non-zero status, else 0."""
    status = 0
    try:
        while any(c.poll() is None for c in children):
            failed = [c.returncode for c in children if c.returncode not in (None, 0)]
            if failed:
                status = failed[0]
                time.sleep(5)  # a moment for the rest to fail on their own
                for c in children:
                    if c.poll() is None:
                        c.send_signal(signal.SIGTERM)
                for c in children:
                    c.wait()
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        for c in children:
            c.wait()
    codes = [c.returncode for c in children]
    return status or next((code for code in codes if code), 0)
