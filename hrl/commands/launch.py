"""`hrl launch --num-processes P -- train CONFIG ...`: one run over P processes.

On one machine, starts P copies of `hrl <command> ...` joined by `jax.distributed` (each with
`--devices-per-process` virtual CPU devices when JAX runs on the CPU) and waits for them; the
run's output is process 0's. On a cluster, run `hrl launch --coordinator HOST:PORT
--num-processes P --process-id I -- train CONFIG ...` once on each host: the same code path,
one process per call. Set train.devices (or `train --devices`) to the devices of all processes.

A launch runs the data-parallel learner (`train.devices` > 1, a multiple of P) and nothing
else: a `train` command whose config would not run that way is refused in one line before any
process starts. SIGTERM or Ctrl-C to the launcher reaches every process it started: each
finishes its chunk, checkpoints and stops (a second one stops them at once).

Where it pays: accelerators joined by a fast interconnect. Over CPU hosts every SGD step waits
on collectives over gloo, which costs more than a second process gains (see
experiments/results/distributed/); to scale a host env there, use distributed actors
(`train.executor: distributed`), which need no collective.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from hrl.commands import train as train_command
from hrl.config import ConfigError, load_config
from hrl.runtime.cpu_backend import ensure_cpu_devices
from hrl.runtime.executor_choice import choose_executor, env_is_jax
from hrl.runtime.processes import COORDINATOR, LAUNCHER, NUM_PROCESSES, PROCESS_ID
from hrl.runtime.resume import resume_config

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
    parser.add_argument("--devices-per-process", type=int, metavar="N",
                        help="virtual CPU devices per process when JAX runs on the CPU "
                        "(default: train.devices / P; GPUs are used as they are)")
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
    if args.devices_per_process is not None and args.devices_per_process < 1:
        raise ConfigError(f"--devices-per-process must be >= 1, got {args.devices_per_process}")
    if args.process_id is not None:
        if args.coordinator is None:
            raise ConfigError("--process-id needs --coordinator HOST:PORT (process 0's address)")
        if not 0 <= args.process_id < args.num_processes:
            raise ConfigError(f"--process-id must be in [0, {args.num_processes}), "
                              f"got {args.process_id}")
    devices = check_launchable(command, args.num_processes)
    if args.devices_per_process is None:
        args.devices_per_process = max(1, devices // args.num_processes)
    if args.process_id is not None:  # one process of a cluster run: this one, here
        env = _environment(args.coordinator, args.num_processes, args.process_id,
                           args.devices_per_process)
        env[LAUNCHER] = str(os.getpid())
        return subprocess.call([sys.executable, "-m", "hrl.cli", *command], env=env)
    coordinator = args.coordinator or f"localhost:{_free_port()}"
    print(f"hrl launch: {args.num_processes} processes on this machine; process 0's output "
          "follows (SIGTERM or Ctrl-C: every process checkpoints and stops)", file=sys.stderr,
          flush=True)
    children = []
    for process in range(args.num_processes):
        env = _environment(coordinator, args.num_processes, process, args.devices_per_process)
        # Process 0 speaks for the run; the others' output would repeat it (errors still show).
        out = None if process == 0 else subprocess.DEVNULL
        # A session of their own: a terminal's Ctrl-C reaches the launcher alone, which passes
        # it on once; they stop (SIGTERM: checkpoint) when the launcher ends in any way.
        env[LAUNCHER] = str(os.getpid())
        children.append(subprocess.Popen([sys.executable, "-m", "hrl.cli", *command], env=env,
                                         stdout=out, start_new_session=True))
    return _wait(children)


def check_launchable(command: list[str], processes: int) -> int:
    """The train.devices of a `train` command over `processes` processes, or a one-line
    ConfigError when the launch cannot run it: a launch runs the data-parallel learner over
    train.devices devices, a multiple of the processes (other commands pass unchecked: 0)."""
    if command[0] != "train" or processes == 1:
        return 0
    parser = argparse.ArgumentParser(prog="hrl train", exit_on_error=False)
    train_command.add_arguments(parser)
    try:
        args = parser.parse_args(command[1:])
    except (argparse.ArgumentError, SystemExit) as err:
        raise ConfigError(f"the train command after --: {err}") from None
    overrides = list(args.overrides)
    if args.devices is not None:
        overrides.append(f"train.devices={args.devices}")
    if args.resume:
        cfg = resume_config(args.resume, overrides)
    elif args.config:
        cfg = load_config(args.config, overrides)
    else:
        raise ConfigError("the train command after -- needs CONFIG.yaml or --resume RUN_DIR")
    devices = cfg.train.devices
    if devices < processes or devices % processes:
        raise ConfigError(
            f"config key 'train.devices': a launch over {processes} processes runs one "
            f"data-parallel learner over train.devices devices, a multiple of {processes} "
            f"(got {devices}); add --devices {processes} to the train command, or train in one "
            "process (to scale host envs: train.executor=distributed)")
    try:
        kind = choose_executor(cfg)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if kind != "data-parallel":
        raise ConfigError(f"config key 'train.executor': a launch runs the data-parallel "
                          f"learner, not {kind!r}; set train.executor=auto")
    if not env_is_jax(cfg):
        raise ConfigError(f"config key 'env.name': a launch's data-parallel learner needs a JAX "
                          f"environment ({cfg.env.name} is not one)")
    return devices


def _wait(children: list[subprocess.Popen]) -> int:
    """Wait for every process; when one fails, the others cannot finish (their collectives
    wait for it), so they are stopped. SIGTERM or SIGINT to the launcher is passed on to
    every process (each checkpoints and stops; a second one stops them at once). Returns the
    first non-zero status, else 0."""
    status = 0

    def forward(signum, frame):
        for c in children:
            if c.poll() is None:
                c.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while any(c.poll() is None for c in children):
            failed = [c.returncode for c in children if c.returncode not in (None, 0)]
            if failed:
                status = failed[0]
                time.sleep(5)  # a moment for the rest to fail on their own
                for c in children:
                    if c.poll() is None:
                        c.send_signal(signal.SIGTERM)
                for c in children:  # a collective waiting on the failed one never returns
                    try:
                        c.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        c.kill()
                        c.wait()
                break
            time.sleep(0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    codes = [c.returncode for c in children]
    return status or next((code for code in codes if code), 0)
