"""Anakin-style data parallelism: the fused iteration under `shard_map` over a mesh of devices.

Every device runs `FusedLoop`'s iteration on its own share: env.num_envs / D actors (their own
keys: `actor_key`), a replay shard of capacity / D that only its actors write
(`hrl.replay.sharded`), and batch_size / D samples per SGD step. The learner's gradients are
averaged over the mesh (pmean, in the agent: `grad_axis`), so the networks, optimizer states and
target networks stay the same on every device, as do the loop key and the counters; everything
an actor or a shard owns is stacked on a leading device axis. Env steps and the learning
schedule count over all devices, so a run with D devices follows the config's schedule (train
ratio, learning_starts, beta and epsilon annealing) exactly as one device does.

Sampling is global by default (each step's D*b strata drawn from all shards exactly as from one
tree; see `hrl.replay.sharded`): the algorithm is then the single-device one, only spread out.
`replay.sampling: local` drops the sampling collectives and samples each device's own shard.

The same program runs on virtual CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=N,
set before JAX starts), on the GPUs of one machine, and on a mesh spanning the processes
joined by `jax.distributed.initialize` (`hrl launch`): the mesh takes the first D of
`jax.devices()`, which lists every process's devices.
"""

from __future__ import annotations

import functools
import hashlib

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from hrl.runtime.executors.fused import FusedLoop
from hrl.runtime.iteration import ChunkOut, TrainState

AXIS = "devices"

# TrainState fields that belong to one device (its actors, its replay shard, its relaxed
# queue): stacked on a leading device axis. The rest is the same on every device.
PER_DEVICE = ("replay", "env", "obs", "episode_start", "actor_carry", "nstep", "pending")


def make_mesh(devices: int) -> Mesh:
    """A 1-D mesh over the first `devices` of `jax.devices()` (all processes' devices)."""
    available = jax.devices()
    if not 1 <= devices <= len(available):
        hint = (" (more CPU devices: XLA_FLAGS=--xla_force_host_platform_device_count=N before "
                "JAX starts, or more processes with hrl launch)")
        raise ValueError(
            f"config key 'train.devices': must be in [1, {len(available)}] (the "
            f"{jax.default_backend()} devices of this run), got {devices}{hint}"
        )
    return Mesh(np.array(available[:devices]), (AXIS,))


def state_specs(seeds: bool = False) -> TrainState:
    """Partition specs of a data-parallel `TrainState` (a prefix tree of it); `seeds`: with a
    leading axis of independent seeds before the device axis."""
    lead = (None,) if seeds else ()
    names = TrainState.__dataclass_fields__
    return TrainState(**{name: P(*lead, AXIS) if name in PER_DEVICE else P() for name in names})


def _local(state: TrainState, seeds: bool = False) -> TrainState:
    """Inside shard_map: this device's block of the stacked fields, without the axis."""
    take = (lambda x: x[:, 0]) if seeds else (lambda x: x[0])
    return state.replace(**{n: jax.tree.map(take, getattr(state, n)) for n in PER_DEVICE})


def _stacked(state: TrainState, seeds: bool = False) -> TrainState:
    put = (lambda x: x[:, None]) if seeds else (lambda x: x[None])
    return state.replace(**{n: jax.tree.map(put, getattr(state, n)) for n in PER_DEVICE})


def _host_view(out: ChunkOut, seeds: bool) -> ChunkOut:
    """What the host reads, made the same on every device (so every process has all of it):
    episode ends gathered over the actors, (T, L, D*m) with device d's actors at d*m ..., and
    the learner's numbers averaged over the devices."""
    axis = 3 if seeds else 2
    gather = lambda x: jax.lax.all_gather(x, AXIS, axis=axis, tiled=True)  # noqa: E731
    return out.replace(completed=gather(out.completed),
                       completed_return=gather(out.completed_return),
                       td_abs=jax.lax.pmean(out.td_abs, AXIS),
                       metrics=jax.lax.pmean(out.metrics, AXIS))


class DataParallelLoop(FusedLoop):
    """`FusedLoop` on every device of `mesh`, gradients averaged (see the module docstring).

    `prims` must be built from a `ShardedReplay` (`replay`) and an agent with `grad_axis=AXIS`;
    `schedule` holds one device's share (`Schedule.from_config` with train.devices). Seeds
    (`run_seeds`) are vmapped inside every device: S independent data-parallel runs at once."""

    name = "data-parallel"
    spans_processes = True

    def __init__(self, prims, schedule, replay, mesh: Mesh):
        if schedule.devices != mesh.size or replay.num_shards != mesh.size:
            raise ValueError(
                f"schedule ({schedule.devices}), replay ({replay.num_shards}) and mesh "
                f"({mesh.size}) disagree on the number of devices"
            )
        # No shard owns index capacity; `replay.size` is the psum over the shards, the same on
        # every device, so every device's learning cond agrees.
        super().__init__(prims, schedule, replay)
        self.mesh = mesh

        def chunk(state, num_iters, seeds):
            def body(st):
                run = functools.partial(self._run_chunk, num_iters=num_iters)
                st, out = (jax.vmap(run) if seeds else run)(_local(st, seeds))
                return _stacked(st, seeds), _host_view(out, seeds)

            # check_vma=False: the env code (gymnax's reset cond) mixes device-varying and
            # replicated values, which the varying-axes type check refuses; that the
            # replicated parts do stay equal on every device is tested instead.
            specs = state_specs(seeds)
            return jax.shard_map(body, mesh=mesh, in_specs=(specs,),
                                 out_specs=(specs, P()), check_vma=False)(state)

        self._run = jax.jit(functools.partial(chunk, seeds=False), static_argnums=1)
        self._run_seeds = jax.jit(functools.partial(chunk, seeds=True), static_argnums=1)

    def run(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`num_iters` iterations on every device in one jit call; the chunk's report is this
        process's copy (every process holds all of it)."""
        state, out = self._run(state, num_iters)
        return state, jax.tree.map(lambda x: np.asarray(x.addressable_data(0)), out)

    def run_seeds(self, state: TrainState, num_iters: int) -> tuple[TrainState, ChunkOut]:
        """`run` for S independent runs stacked on a leading axis (`init_state(seeds=...)`)."""
        state, out = self._run_seeds(state, num_iters)
        return state, jax.tree.map(lambda x: np.asarray(x.addressable_data(0)), out)

    @classmethod
    def from_parts(cls, parts) -> DataParallelLoop:
        """The data-parallel executor of a run's `registry.Parts` (its mesh and sharded
        replay)."""
        return cls(parts.prims, parts.schedule, parts.replay, parts.mesh)

    def summary_fields(self, state: TrainState) -> dict:
        """Whether the replicas agree (`replicas_agree`), beside the fused loop's fields."""
        return {**super().summary_fields(state), **replicas_agree(state.agent)}

    # --- FusedLoop's hook --------------------------------------------------------------
    def _actor_index(self):
        return jax.lax.axis_index(AXIS)

    # --- state ---------------------------------------------------------------------------
    def init_state(self, init_one, seed) -> TrainState:
        """The stacked initial state: `init_one(seed, actor_index)` (`init_train_state` with
        its static arguments bound) on every device, in one jitted call. `seed`: an int32
        scalar, or a 1-D array of seeds for `run_seeds`."""
        seed = np.asarray(seed, np.int32)
        seeds = np.ndim(seed) == 1

        def body(seed):
            one = lambda s: init_one(s, jax.lax.axis_index(AXIS))  # noqa: E731
            return _stacked(jax.vmap(one)(seed) if seeds else one(seed), seeds)

        run = jax.shard_map(body, mesh=self.mesh, in_specs=P(), out_specs=state_specs(seeds),
                            check_vma=False)
        return jax.jit(run)(seed)


def replicas_agree(agent_state) -> dict:
    """Whether every device of every process holds the same networks and optimizer state (the
    data-parallel invariant): each process compares its devices' copies and hashes one; the
    digests are gathered from all processes (one per process)."""
    digest = hashlib.sha256()
    local_equal = True
    for leaf in jax.tree.leaves(agent_state):
        copies = [np.asarray(s.data) for s in leaf.addressable_shards]
        local_equal &= all(np.array_equal(copies[0], c) for c in copies[1:])
        digest.update(copies[0].tobytes())
    words = np.frombuffer(digest.digest()[:8], np.uint32)
    everyone = np.asarray(multihost_utils.process_allgather(
        np.append(words, np.uint32(local_equal))))
    return {
        "processes": int(jax.process_count()),
        "params_digests": [f"{int(a):08x}{int(b):08x}" for a, b, _ in everyone],
        "params_agree": bool(np.all(everyone[:, 2] == 1)
                             and np.all(everyone[:, :2] == everyone[0, :2])),
    }
