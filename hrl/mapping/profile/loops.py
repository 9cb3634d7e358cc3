"""Loop rows: the runtime's own loops at the grid's smallest sizes, timed per iteration.

Their time beyond the primitives is the loop's bookkeeping (n-step window, pending queue,
key splits, host transfers of returns, and for the host loops the cost of each call), which
`plan` fits as c0 + cL * L + cU * U per iteration for the fused and the host loop (the fused
loop's cost per call apart), and as a constant per iteration beyond its two sides for the
pipelined executor. `profile_loops` runs in the profiler's process and starts one child per
loop and CPU dispatch (`spawn.loop_rows_subprocess`); `loop_rows` is what the child runs.
Those children see no GPU: on a GPU machine `profile_gpu_fused_loop` times the GPU's fused loop
in the profiler's own process (placement `GPU_LOOP`). Cost: per setting, two builds of the
loop (the grid's "loop_builds") and 3 x (warm-up + timed) runs.
"""

from __future__ import annotations

import json

import jax

from hrl.agents.networks import MINATAR_CONV, MINATAR_HIDDEN
from hrl.config import config_from_dict, to_dict
from hrl.mapping.profile import spawn
from hrl.mapping.profile.grids import (
    FUSED_CALL_SETTINGS,
    GPU_LOOP,
    LOOP_DISPATCH,
    LOOP_KINDS,
    LOOP_LONG_CALL,
    LOOP_SETTINGS,
    Setting,
    loop_sizes,
)
from hrl.mapping.profile.rows import ProfileRow
from hrl.mapping.validate import measure_iteration
from hrl.runtime.cpu_backend import start_cpu_backend


def set_width(data: dict, width: int) -> None:
    """Two hidden layers `width` wide for the agent of config dict `data` (DDPG: both nets);
    a DQN conv net (`network: conv` or `minatar`) keeps its convolutions and gets its head's
    number of dense layers `width` wide, as `network: conv` (what `Target` times)."""
    agent = data["agent"]
    if data["algo"] == "dqn" and agent.get("network", "mlp") in ("conv", "minatar"):
        conv, hidden = ((MINATAR_CONV, MINATAR_HIDDEN) if agent["network"] == "minatar"
                        else (agent["conv_layers"], agent["hidden_sizes"]))
        agent.update(network="conv", conv_layers=[list(c) for c in conv],
                     hidden_sizes=[width] * len(hidden))
    elif data["algo"] == "dqn":
        data["agent"]["hidden_sizes"] = [width, width]
    else:
        data["agent"]["actor_hidden_sizes"] = [width, width]
        data["agent"]["critic_hidden_sizes"] = [width, width]


def loop_row_config(base: dict, loop: str, steps: int, sgd: int, dispatch: str,
                    sizes: Setting):
    """The config of one loop row: `base` (a config dict, not modified) at `sizes` (the
    loop's `grids.loop_sizes`), L=`steps` actor steps and U=`sgd` SGD steps per iteration,
    strict, run by `loop` (fused, host, or pipelined with process actors one iteration ahead)
    in CPU `dispatch`."""
    data = json.loads(json.dumps(base))
    data["env"].update(num_envs=sizes.num_envs)
    set_width(data, sizes.width)
    data["replay"].update(capacity=sizes.capacity, fanout=sizes.fanout, backend="jax")
    data["train"].update(rollout_length=steps, batch_size=sizes.batch,
                         train_ratio=sgd / (steps * sizes.num_envs),
                         learning_starts=sizes.batch * 4,
                         dependency="strict", staleness=0, total_env_steps=10**7,
                         cpu_dispatch=dispatch, actors="thread",
                         executor="fused" if loop == "fused" else "sequential")
    if loop == "pipelined":  # its actors in their own process, one iteration ahead
        data["train"].update(executor="pipelined", actors="process", pipeline_depth=1)
    data.setdefault("log", {})["progress"] = False
    return config_from_dict(data)


def loop_iterations(repeats: int) -> int:
    """Iterations per call at which a loop row is timed (a fused row also at LOOP_LONG_CALL
    times as many)."""
    return max(10, repeats)


def fastest_build(cfg, iterations: int, builds: int) -> dict:
    """`measure_iteration` of `builds` fresh builds of `cfg`, the fastest kept: repeats within
    a build agree, builds of one config can differ (interference at build time), and the
    loop's own cost is the lower."""
    return min((measure_iteration(cfg, iterations=iterations, repeats=3)
                for _ in range(builds)), key=lambda m: m["wall_s"])


def loop_rows(args: dict) -> list[dict]:
    """The child's side of `spawn.loop_rows_subprocess` (`args`: {"base", "loop",
    "dispatch", "repeats", "settings", "sizes", "builds"}): starts this process's CPU backend
    as a run of the loop starts it, then per setting {"wall_s", "cpu_s", "async"}. Must run
    in a process whose JAX has not started."""
    sizes = Setting(**args["sizes"])
    configs = [loop_row_config(args["base"], args["loop"], steps, sgd, args["dispatch"], sizes)
               for steps, sgd, _ in args["settings"]]
    start_cpu_backend(configs[0])  # as a run of this loop starts: its dispatch and threads
    out = []
    for cfg, (_, _, iterations) in zip(configs, args["settings"], strict=True):
        m = fastest_build(cfg, iterations, args.get("builds", 2))
        out.append({"wall_s": m["wall_s"], "cpu_s": m["cpu_s"],
                    "async": bool(jax.config.read("jax_cpu_enable_async_dispatch"))})
    return out


def loop_dispatches(grid: dict, loop: str) -> tuple[str, ...]:
    """The CPU dispatches `loop`'s rows are measured in: `LOOP_DISPATCH[loop]`, or where the
    grid sets "loop_dispatch": "auto" only its first, the one `train.cpu_dispatch: auto` runs
    the loop in (half the host loops' rows, for a profile with little time)."""
    every = LOOP_DISPATCH[loop]
    return every[:1] if grid.get("loop_dispatch") == "auto" else every


def profile_loops(prof, repeats: int, loops=None) -> None:
    """The loop rows of `prof`'s config (see the module docstring), appended to `prof.rows`.

    Each loop is measured in a fresh process per CPU dispatch (`LOOP_DISPATCH`), started
    as a run of that loop would start it (`hrl.runtime.cpu_backend`): dispatch and intra-op
    threads are fixed per process, and a host loop pays per call, so its bookkeeping
    differs between the two (`train.cpu_dispatch: auto` runs a host loop sync). Rows carry
    the dispatch they were measured in and the iterations per call they were timed at;
    the fused loop's also at FUSED_CALL_SETTINGS in longer calls (its cost per call).
    `loops`: just these of LOOP_KINDS (`hrl profile --only loop-fused`). A child that
    fails is skipped, with why (`prof.skipped`)."""
    target = prof.target
    # A host env (gymnasium) cannot run inside the fused loop.
    loops = [x for x in (loops or LOOP_KINDS) if target.spec.is_jax or x != "fused"]
    n = loop_iterations(repeats)
    for loop in loops:
        s = loop_sizes(prof.grid, loop)
        depth = target.workload(s).depth
        for dispatch in loop_dispatches(prof.grid, loop):
            settings = loop_settings(loop, n)
            try:
                got = spawn.loop_rows_subprocess(to_dict(target.cfg), loop, dispatch, repeats,
                                                 settings, s,
                                                 builds=prof.grid.get("loop_builds", 2))
            except RuntimeError as err:
                prof.skipped.append(f"loop:{loop} ({dispatch}): {err}")
                continue
            for setting, m in zip(settings, got, strict=True):
                prof.rows.append(_loop_row(target, loop, "loop", s, depth, setting, dispatch, m))


def loop_settings(loop: str, iterations: int) -> list[tuple[int, int, int]]:
    """(L, U, iterations per call) of `loop`'s rows: LOOP_SETTINGS, and for the fused loop
    FUSED_CALL_SETTINGS again in LOOP_LONG_CALL times longer calls."""
    out = [(steps, sgd, iterations) for steps, sgd in LOOP_SETTINGS]
    if loop == "fused":
        out += [(steps, sgd, iterations * LOOP_LONG_CALL) for steps, sgd in FUSED_CALL_SETTINGS]
    return out


def _loop_row(target, loop: str, placement: str, s: Setting, depth: int, setting,
              dispatch: str, m: dict) -> ProfileRow:
    steps, sgd, iterations = setting
    return ProfileRow(
        call=f"loop:{loop}", placement=placement, mode="loop", env=target.env_name,
        algo=target.algo, num_envs=s.num_envs, width=s.width, batch=s.batch,
        capacity=s.capacity, fanout=s.fanout, depth=depth, rollout=steps, sgd=sgd,
        dispatch=dispatch, work=0.0, iterations=iterations, latency_s=m["wall_s"],
        cpu_s=m["cpu_s"], p10_s=m["wall_s"], p90_s=m["wall_s"], repeats=3,
        extra=target.network_fields())


def profile_gpu_fused_loop(prof, repeats: int) -> None:
    """The fused loop's rows on the GPU (placement `GPU_LOOP`): the CPU's fused loop rows'
    settings, sizes and call lengths, timed in this process, whose default device is the GPU
    (a child sees no GPU: `spawn.child_env`), each the fastest of the grid's "loop_builds"
    builds. `plan` fits the GPU's fused loop's own bookkeeping on them. Skipped, with why,
    where JAX's default backend is not a GPU; nothing for a host env, which cannot run fused.
    Cost: per setting, the builds and 3 x (warm-up + timed) runs on the GPU."""
    target = prof.target
    if not target.spec.is_jax:
        return
    if jax.default_backend() != "gpu":
        prof.skipped.append(f"loop:fused on {GPU_LOOP}: JAX's default backend is "
                            f"{jax.default_backend()}, not a GPU")
        return
    s = loop_sizes(prof.grid, "fused")
    depth = target.workload(s).depth
    base = to_dict(target.cfg)
    for setting in loop_settings("fused", loop_iterations(repeats)):
        steps, sgd, iterations = setting
        cfg = loop_row_config(base, "fused", steps, sgd, "async", s)
        m = fastest_build(cfg, iterations, prof.grid.get("loop_builds", 2))
        prof.rows.append(_loop_row(target, "fused", GPU_LOOP, s, depth, setting, "async", m))
