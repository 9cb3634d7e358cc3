"""`hrl profile`: microbenchmarks of the five primitives on every placement present.

The functions timed are the runtime's own primitives (`hrl.runtime.primitives.make_primitives`
over `hrl.envs.make_env`, `hrl.agents.make_dqn/make_ddpg` and the replay buffer), at the sizes
of a grid around the run's config (`grids.GRIDS`):

| call   | grid                                   | what varies the work            |
| ------ | -------------------------------------- | ------------------------------- |
| env    | num_envs                               | M                               |
| infer  | num_envs x network width               | FLOPs                           |
| train  | batch x network width                  | FLOPs                           |
| sample, update | batch x capacity x fanout      | B * K * D                       |
| insert | num_envs x capacity x fanout           | M * K * D                       |

Two timings per JAX call (`primitives`): `dispatched` (one jitted call from Python, waited
for, made as the host loop makes it, in the host loops' CPU dispatch, `PROFILE_DISPATCH`,
after the calls that precede it in the loop, `context.LoopContext`; placement `cpu`/`gpu`)
and `fused` (the call repeated inside one jitted lax.scan, per call: what the fused loop
pays; placement `cpu-fused`/`gpu-fused`). Backend `xla` also times the tree in plain XLA ops
on the first CPU device (placement `cpu-xla`), and a second CPU device, where the process has
one, holds it as placement `cpu:1`. Host replay backends (`opencl`, `rtl` in simulation) are
timed through the same host calls the runtime makes. The link rows (`links`) price moving
data, the loop rows (`loops`) and overlap rows (`overlap`) the runtime's loops, measured in
child processes (`spawn`, `child`). The RTL's cycle and resource tables, when they exist,
are copied in as `rtl-*` rows (`io.rtl_cycle_rows`).

Every figure is a median over `repeats` timed calls after warm-up (compilation excluded).
Rows are `ProfileRow`s in memory and JSON objects in profile.json (`io`).

Modules: rows (ProfileRow), grids (what is measured), merge (rounds), timers, target (the
config's objects), context (the loop around a call), primitives, links, loops, overlap,
spawn / child (child processes), io (files), profiler (Profiler).

The top level is what `hrl profile`, `hrl map`, the experiments and the examples import: the
`Profiler`, the profile files (`load_profile`, `write_profile`, `update_profile`,
`profile_grid`, `profile_rows`, `merged_rows`, `rtl_cycle_rows`, `cpu_name`), the grids the
CLI offers, and `start_profiling_backend`. Everything else is named where it is defined.
"""

from hrl.mapping.profile.grids import GRIDS, LINK_ROWS, LOOP_KINDS, LOOP_ONLY, RTL_TABLE_CALLS
from hrl.mapping.profile.io import (
    cpu_name,
    load_profile,
    profile_grid,
    rtl_cycle_rows,
    update_profile,
    write_profile,
)
from hrl.mapping.profile.merge import merged_rows
from hrl.mapping.profile.profiler import Profiler, start_profiling_backend
from hrl.mapping.profile.rows import profile_rows

__all__ = [
    "GRIDS",
    "LINK_ROWS",
    "LOOP_KINDS",
    "LOOP_ONLY",
    "RTL_TABLE_CALLS",
    "Profiler",
    "cpu_name",
    "load_profile",
    "merged_rows",
    "profile_grid",
    "profile_rows",
    "rtl_cycle_rows",
    "start_profiling_backend",
    "update_profile",
    "write_profile",
]
