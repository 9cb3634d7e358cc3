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
"""

from hrl.mapping.devices import SECOND_CPU, SECOND_CPU_PLACEMENT, XLA_TREE, normalize_placement
from hrl.mapping.profile.context import LOOP_CYCLE, LoopContext
from hrl.mapping.profile.grids import (
    COLLECTIVE_CALL,
    COLLECTIVE_DEVICES,
    COLLECTIVE_MIN_SCAN,
    COLLECTIVE_SIZES,
    CPU_DEVICE_CALL,
    FUSED_CALL_SETTINGS,
    GRIDS,
    HANDOFF_BATCH,
    HANDOFF_CALL,
    LEGACY_OVERLAP_CALL,
    LINK_ROWS,
    LOOP_DISPATCH,
    LOOP_ENVS,
    LOOP_KINDS,
    LOOP_LONG_CALL,
    LOOP_ONLY,
    LOOP_SETTINGS,
    OVERLAP_CALL,
    OVERLAP_EXECUTORS,
    OVERLAP_ITERATIONS,
    OVERLAP_LOOP,
    OVERLAP_MIN_REPEATS,
    PROFILE_DISPATCH,
    ROW_FIELDS,
    RTL_CYCLE_CSVS,
    RTL_KERNEL_CSVS,
    RTL_RESOURCE_CSVS,
    RTL_TABLE_CALLS,
    Setting,
    loop_sizes,
)
from hrl.mapping.profile.io import (
    cpu_name,
    find_repo_file,
    load_profile,
    machine_info,
    profile_grid,
    rtl_cycle_rows,
    update_profile,
    write_profile,
)
from hrl.mapping.profile.links import collective_timings
from hrl.mapping.profile.loops import loop_iterations, loop_row_config
from hrl.mapping.profile.merge import (
    DIFFERENCE_CALLS,
    MERGE_RULES,
    ROW_IDENTITY,
    merge_rounds,
    merged_rows,
)
from hrl.mapping.profile.overlap import overlap_loop_config
from hrl.mapping.profile.profiler import Profiler, start_profiling_backend
from hrl.mapping.profile.rows import ProfileRow, as_rows, profile_rows, row_dicts
from hrl.mapping.profile.spawn import (
    child_env,
    collective_link_subprocess,
    loop_rows_subprocess,
    overlap_rows_subprocess,
)
from hrl.mapping.profile.timers import (
    interleaved_times,
    median_time,
    scan_time,
    thread_handoff_time,
)

# The names these had when the profiler was one module (tests and older callers use them).
_median_time = median_time
_child_env = child_env

__all__ = [
    "COLLECTIVE_CALL", "COLLECTIVE_DEVICES", "COLLECTIVE_MIN_SCAN", "COLLECTIVE_SIZES",
    "CPU_DEVICE_CALL", "DIFFERENCE_CALLS", "FUSED_CALL_SETTINGS", "GRIDS", "HANDOFF_BATCH",
    "HANDOFF_CALL", "LEGACY_OVERLAP_CALL", "LINK_ROWS",
    "LOOP_CYCLE", "LOOP_DISPATCH", "LOOP_ENVS", "LOOP_KINDS", "LOOP_LONG_CALL", "LOOP_ONLY",
    "LOOP_SETTINGS", "MERGE_RULES", "OVERLAP_CALL", "OVERLAP_EXECUTORS",
    "OVERLAP_ITERATIONS", "OVERLAP_LOOP", "OVERLAP_MIN_REPEATS", "PROFILE_DISPATCH",
    "ROW_FIELDS", "ROW_IDENTITY", "RTL_CYCLE_CSVS", "RTL_KERNEL_CSVS", "RTL_RESOURCE_CSVS",
    "RTL_TABLE_CALLS", "SECOND_CPU", "SECOND_CPU_PLACEMENT", "XLA_TREE", "LoopContext",
    "ProfileRow", "Profiler", "Setting", "as_rows", "child_env", "collective_link_subprocess",
    "collective_timings", "cpu_name", "find_repo_file", "interleaved_times", "load_profile",
    "loop_iterations", "loop_sizes", "loop_row_config", "loop_rows_subprocess", "machine_info",
    "profile_grid",
    "median_time", "merge_rounds", "merged_rows", "normalize_placement",
    "overlap_loop_config", "overlap_rows_subprocess", "profile_rows", "row_dicts",
    "rtl_cycle_rows", "scan_time", "start_profiling_backend", "thread_handoff_time",
    "update_profile", "write_profile",
]
