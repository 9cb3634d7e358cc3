"""Several processes (and hosts) in one run: `jax.distributed`, set up from the environment.

`hrl launch` starts P processes and tells each one where the coordinator is, how many
processes there are and which one it is, through three environment variables (a cluster
scheduler can set them the same way, or pass the flags of `hrl launch --process-id`):

    HRL_COORDINATOR=host:port  HRL_NUM_PROCESSES=P  HRL_PROCESS_ID=i

`initialize_from_env()` hands them to `jax.distributed.initialize` before JAX starts its
backends; from then on `jax.devices()` lists every process's devices, so the data-parallel
executor's mesh (`hrl.runtime.executors.data_parallel`) spans all of them, and collectives
between processes go through JAX's own transport (gloo between CPUs, NCCL between GPUs). Not
the distributed executor (Ray actors: `hrl.runtime.executors.ray_actors`).
"""

from __future__ import annotations

import os

import jax

COORDINATOR, NUM_PROCESSES, PROCESS_ID = "HRL_COORDINATOR", "HRL_NUM_PROCESSES", "HRL_PROCESS_ID"
LAUNCHER = "HRL_LAUNCHER_PID"  # set by a local `hrl launch`: its processes stop when it ends


def settings_from_env() -> tuple[str, int, int] | None:
    """(coordinator, processes, process id) from the environment, or None when not set.
    A partial or malformed setting is a ValueError naming the variable."""
    coordinator = os.environ.get(COORDINATOR)
    if not coordinator:
        return None
    values = {}
    for name in (NUM_PROCESSES, PROCESS_ID):
        text = os.environ.get(name, "")
        try:
            values[name] = int(text)
        except ValueError:
            raise ValueError(
                f"{name}={text!r}: an integer is needed when {COORDINATOR} is set"
            ) from None
    processes, process = values[NUM_PROCESSES], values[PROCESS_ID]
    if processes < 1 or not 0 <= process < processes:
        raise ValueError(
            f"{PROCESS_ID}={process} must be in [0, {NUM_PROCESSES}={processes})"
        )
    return coordinator, processes, process


def initialize_from_env() -> bool:
    """Join the run the environment describes (`jax.distributed.initialize`); False when it
    describes none. Call it before anything asks JAX for its devices."""
    settings = settings_from_env()
    if settings is None:
        return False
    coordinator, processes, process = settings
    jax.distributed.initialize(coordinator, num_processes=processes, process_id=process)
    return True
