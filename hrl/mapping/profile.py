"""`hrl profile`: microbenchmarks of the five primitives on every placement present.

The functions timed are the runtime's own primitives (`hrl.runtime.primitives.make_primitives`
over `hrl.envs.make_env`, `hrl.agents.make_dqn/make_ddpg` and the replay buffer), at the sizes
of a grid around the run's config:

| call   | grid                                   | what varies the work            |
| ------ | -------------------------------------- | ------------------------------- |
| env    | num_envs                               | M                               |
| infer  | num_envs x network width               | FLOPs                           |
| train  | batch x network width                  | FLOPs                           |
| sample, update | batch x capacity x fanout      | B * K * D                       |
| insert | num_envs x capacity x fanout           | M * K * D                       |

Two timings per JAX call: `dispatched` (one jitted call from Python, waited for, made as the host
loop makes it: the SGD step on the packed agent, update and insert on a donated state, in the
CPU dispatch the host loops run in, `PROFILE_DISPATCH`, and on a CPU after the calls that
precede it in the loop, `LoopContext`; placement `cpu`/`gpu`) and `fused` (the
call repeated inside one jitted lax.scan, divided by the repeats: what the fused loop pays;
placement `cpu-fused`/`gpu-fused`). The JAX buffer's tree runs its default kernels there
(`replay.impl: auto`: native on a CPU); backend `xla` also times it in plain XLA ops on the
first CPU device (placement `cpu-xla`), and a second CPU device, where the process has one,
holds it as placement `cpu1`. Replay backends other than JAX (`opencl` on each OpenCL device,
`rtl` in simulation when its module exists) are timed through the same host calls the runtime
makes, in the same loop context. A host-memory copy is timed over a range of sizes to measure
the `host` link, a round trip to a spawned process the `process` link, and a `psum` between two
virtual CPU devices (in a subprocess that has them) the `cpu-collective` link the data-parallel
model prices virtual devices' collectives with (`--only` measures just these link rows). The
RTL's cycle counts, when its CSV exists, and its yosys resource table are copied into the
profile as `rtl-cycles` / `rtl-resources` rows (they feed the FPGA model, not a fit).

Every figure is a median over `repeats` timed calls after warm-up (compilation excluded).
"""

# Every timing lambda below is called inside the loop iteration that defines it, so binding
# the loop variables late (ruff B023) cannot pick up a later iteration's values.
# ruff: noqa: B023

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import platform as py_platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping.workload import Workload, env_sizes
from hrl.runtime.cpu_backend import run_json_child, running_cpu_dispatch

# Grids: "quick" for tests and a first look, "full" for the reported profile. A grid may set
# "rounds": how many times every row is measured, the rounds one after another over the whole
# grid (default 1), and "merge": which round's row is kept, the one with the lowest latency
# ("min", the default) or the median one ("median"; `merge_rounds`). Every round's rows are
# kept in profile.json ("rounds"), so a profile can be merged the other way later.
GRIDS = {
    "quick": {"num_envs": (1, 16), "width": (32, 64), "batch": (16, 64),
              "capacity": (1 << 10, 1 << 13), "fanout": (16,), "repeats": 5, "scan": 20},
    "full": {"num_envs": (1, 8, 64, 512, 2048), "width": (64, 256, 1024),
             "batch": (32, 128, 512, 2048), "capacity": (1 << 12, 1 << 16, 1 << 20),
             "fanout": (4, 16), "repeats": 30, "scan": 100},
}
# Loop-bookkeeping settings: (actor steps L, SGD steps U) per iteration, at small sizes where
# the bookkeeping is a large share of the iteration. Six points for three coefficients, so the
# fit has a leave-one-out error; L and U up to 16 and 32, the range runs use (three points at
# L, U <= 4 once put 0.8 ms on each SGD step of the host loop, twice what U=32 measures).
LOOP_SETTINGS = ((1, 1), (4, 1), (1, 4), (16, 1), (1, 16), (16, 32))
LOOP_WIDTH, LOOP_BATCH, LOOP_CAPACITY = 32, 16, 4096
# Envs per actor step in each loop's rows. The pipelined executor's rows run 8: at one env
# both of its processes idle on every hand-off (each side a fraction of a millisecond), and the
# residual fitted there (0.5-0.6 ms per iteration) overstated runs of 8-64 envs by 10-30%. The
# sequential host loop's run 8 too, the size of the runs it prices.
LOOP_ENVS = {"fused": 1, "host": 8, "pipelined": 8}
# The fused loop runs a whole chunk of iterations in one call and pays a fixed cost per call
# (dispatch, the chunk's outputs handed back): on the 2-core VM its row at L=U=1 took 68.5 us
# per iteration in chunks of 10 and 23.9 us in chunks of 80, while `hrl train` runs chunks of
# hundreds. Its rows at these (L, U) are timed again in chunks LOOP_LONG_CALL times as long,
# so that `plan` fits the cost per call apart from the cost per iteration.
FUSED_CALL_SETTINGS = ((1, 1), (16, 32))
LOOP_LONG_CALL = 8
LOOP_KINDS = ("fused", "host", "pipelined")
# The loops' rows by the name `hrl profile --only` takes (call `loop:<kind>`).
LOOP_ONLY = {f"loop-{kind}": kind for kind in LOOP_KINDS}
# The CPU dispatch each loop's rows are measured in: the fused loop always runs async; a host
# loop runs sync under `train.cpu_dispatch: auto` (`cpu_backend.HOST_LOOP_DISPATCH`), async
# when a run pins it (its rows also show what async dispatch costs a host loop).
LOOP_DISPATCH = {"fused": ("async",), "host": ("sync", "async"), "pipelined": ("sync", "async")}
# The CPU dispatch a profiling process starts JAX in (each row records it): the host loops'
# (`cpu_backend.HOST_LOOP_DISPATCH`), whose calls the `dispatched` rows price. Async dispatch
# hands each call to a second thread and back: on the 2-core development VM that put 30-40 us
# on a sample or update of the XLA tree at batch 32-96 and 45 us on the native tree's sample of
# 256, none of which the sync host loop pays (the XLA tree's runs were predicted 17-39% slow in
# gymnasium settings). A fused row is one call per `scan` steps, so its dispatch is amortised;
# the loops' own rows are measured in processes of their own, in each loop's dispatch.
PROFILE_DISPATCH = "sync"


def start_profiling_backend(cfg, second_cpu: bool) -> None:
    """Start JAX's CPU backend as a profile is taken (before any JAX): a second CPU device to
    time the tree on where `second_cpu` (placement cpu1), the intra-op threads a run of `cfg`
    gets (train.cpu_threads), so that the profile prices what runs, and the host loops'
    dispatch (PROFILE_DISPATCH). `hrl profile`, the validation and `hrl map --calibrate`
    (whose reference workload must run as it ran in the profile) start it this way."""
    from hrl.runtime.cpu_backend import ensure_cpu_devices, start_cpu_backend

    if second_cpu:
        ensure_cpu_devices(2)
    start_cpu_backend(cfg, dispatch=PROFILE_DISPATCH)
# The link rows, by the name `hrl profile --only` takes: call `link:<name>`.
LINK_ROWS = ("host", "process", "cpu-collective", "thread", "cpu-device")
ROW_FIELDS = ("call", "placement", "mode", "env", "algo", "num_envs", "width", "batch",
              "capacity", "fanout", "depth", "work", "latency_s", "p10_s", "p90_s", "cpu_s",
              "repeats")


def _median_time(fn: Callable[[], object], repeats: int,
                 between: Callable[[], None] | None = None) -> dict[str, float]:
    """Median wall and CPU seconds of `fn()` (waited for), after two warm-up calls; `between`
    (untimed) runs before each call, as the calls around it in a loop do (`LoopContext`).

    CPU time is the process's (all threads). On a shared machine the wall time of a call
    includes the time other processes hold the cores; the CPU time does not, so it is the
    figure that stays comparable between a profile and a later run under a different load.
    """
    jax.block_until_ready(fn())  # warm-up: compilation and first-touch excluded
    jax.block_until_ready(fn())
    wall, cpu = [], []
    for _ in range(repeats):
        if between is not None:
            between()
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    q = np.quantile(wall, [0.1, 0.9])
    out = {"latency_s": statistics.median(wall), "p10_s": float(q[0]), "p90_s": float(q[1]),
           "cpu_s": statistics.median(cpu)}
    if between is not None:
        out["context"] = "loop"  # the row says it was timed between the loop's other calls
    return out


def _interleaved_times(fns: dict[str, Callable[[], object]], repeats: int,
                       paired: tuple[str, str]) -> tuple[dict[str, dict], dict[str, float]]:
    """`_median_time` of several functions that take turns (one call of each per round, the
    order rotating), so a slow spell of a shared machine falls on all of them alike. Returns
    their timings and the median over rounds of the paired difference fns[a] - fns[b] of
    `paired` = (a, b), {"latency_s", "cpu_s"}."""
    names = list(fns)
    for fn in fns.values():  # warm-up: compilation and first-touch excluded
        jax.block_until_ready(fn())
        jax.block_until_ready(fn())
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for i in range(repeats):
        for n in names[i % len(names):] + names[:i % len(names)]:
            c0, t0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(fns[n]())
            wall[n].append(time.perf_counter() - t0)
            cpu[n].append(time.process_time() - c0)
    out = {}
    for n in names:
        q = np.quantile(wall[n], [0.1, 0.9])
        out[n] = {"latency_s": statistics.median(wall[n]), "p10_s": float(q[0]),
                  "p90_s": float(q[1]), "cpu_s": statistics.median(cpu[n])}
    a, b = paired
    diff = {"latency_s": statistics.median(np.subtract(wall[a], wall[b])),
            "cpu_s": statistics.median(np.subtract(cpu[a], cpu[b]))}
    return out, {k: float(v) for k, v in diff.items()}


def _copy(tree):
    """A copy of a device pytree that a donating call may consume."""
    return jax.tree.map(jnp.copy, tree)


def _scan_time(step: Callable, carry, n: int, repeats: int) -> dict[str, float]:
    """Per-call time of `step` repeated n times inside one jitted lax.scan (the fused loop)."""
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    run = jax.jit(lambda c: jax.lax.scan(lambda c, k: (step(c, k), None), c, keys)[0])
    t = _median_time(lambda: run(carry), max(5, repeats // 3))
    return {k: v / n for k, v in t.items()}


# A host loop's calls in the order it makes them, round after round (insert, once per
# iteration, sits where sample does). Each dispatched call is timed after the calls that
# precede it in this cycle (`LoopContext`): they evict its code and data from the caches
# and the predictors, so a call costs more in the loop than repeated alone. Measured on the
# 2-core VM, gymnasium CartPole 16 envs, batch 64, width 64: env step 123 -> 168 us, infer
# 20 -> 41, sample 22 -> 35 (PoCL's: 75 -> 133), update 26 -> 39 (PoCL's: 110 -> 161) in
# this cycle against alone; the loop's own timers gave 173, 46, 33 and 48 (129, 205).
LOOP_CYCLE = ("env", "infer", "sample", "train", "update")


class LoopContext:
    """The host loop's calls at one setting (`LOOP_CYCLE`, the runtime's own primitives on
    the first CPU device: the env, infer, the native tree's sample and update, the packed
    SGD step), which `around(call)` runs, untimed, between two timed calls of `call`."""

    def __init__(self, calls: dict[str, Callable[[], object]]):
        self.calls = calls

    def around(self, call: str) -> Callable[[], None]:
        """The calls that come between two of `call`'s in the loop's cycle, in order."""
        at = LOOP_CYCLE.index("sample" if call == "insert" else call)
        order = LOOP_CYCLE[at + 1:] + LOOP_CYCLE[:at]
        fns = [self.calls[c] for c in order]

        def run() -> None:
            for fn in fns:
                jax.block_until_ready(fn())

        return run


@dataclasses.dataclass
class Setting:
    """One grid point: the config overrides and the Workload they describe."""

    num_envs: int
    width: int
    batch: int
    capacity: int
    fanout: int


def _agent(cfg_algo: str, width: int, spec):
    from hrl import agents

    if cfg_algo == "dqn":
        return agents.make_dqn(agents.DQNConfig(hidden_sizes=(width, width)), spec)
    return agents.make_ddpg(agents.DDPGConfig(actor_hidden_sizes=(width, width),
                                              critic_hidden_sizes=(width, width)), spec)


class Profiler:
    """Times the primitives of one run config over a grid (see the module docstring)."""

    def __init__(self, cfg, grid: str | dict = "quick", backends=("jax", "xla", "opencl", "rtl"),
                 progress: bool = True, loops: bool = True, only=None):
        """`only`: measure just these link rows (names of `LINK_ROWS`) and loops' rows
        (names of `LOOP_ONLY`), nothing else."""
        from hrl.envs import example_transition, make_env

        self.cfg = cfg
        self.grid = GRIDS[grid] if isinstance(grid, str) else grid
        self.backends = tuple(backends)
        self.progress = progress
        self.loops = loops
        self.only = None if only is None else tuple(only)
        self.rows: list[dict] = []
        self.merge = self.grid.get("merge", "min")
        if self.merge not in MERGE_RULES:
            raise ValueError(f"grid merge must be one of {MERGE_RULES}, got {self.merge!r}")
        self.rounds: list[list[dict]] = []  # each round's rows as measured, before merging
        # the reference workload's time at the start and the end of each round
        # (`hrl.mapping.speed`): how fast the machine ran while it was profiled
        self.speed: list[dict] = []
        self.env_name = cfg.env.name
        self.obs_dim, self.act_dim = env_sizes(cfg.env.name)
        self.spec = make_env(cfg.env.name, 1, **cfg.env.kwargs).spec
        self.example = example_transition(self.spec)
        self.jax_placements = [("cpu", jax.devices("cpu")[0])]
        self.dispatch = running_cpu_dispatch()  # fixed once the backend has started (above)
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        if gpus:
            self.jax_placements.append(("gpu", gpus[0]))
        # A second XLA CPU device holds only the tree (`placement.sample/update: cpu:1`): the
        # learner stays on cpu:0. Profiled where this process has one (`hrl profile` asks for
        # two CPU devices when it profiles the jax tree).
        cpus = jax.devices("cpu")
        # (placement, device, replay.impl) of each. The same buffer with its tree in plain XLA
        # ops (`replay.impl: xla`) on the learner's device, beside the native kernels that
        # `cpu` times, is placement `cpu-xla` (backend name `xla`).
        self.tree_placements = ([(SECOND_CPU, cpus[1], "auto")]
                                if len(cpus) > 1 and "jax" in self.backends else [])
        if "xla" in self.backends:
            self.tree_placements.append((XLA_TREE, cpus[0], "xla"))
        self.skipped: list[str] = []
        self._contexts: dict[tuple[int, int, int], LoopContext] = {}

    # ------------------------------------------------------------------ helpers
    def _workload(self, s: Setting) -> Workload:
        kind, _, env_id = self.env_name.partition(":")
        return Workload(algo=self.cfg.algo, env_kind=kind, env_id=env_id, obs_dim=self.obs_dim,
                        act_dim=self.act_dim, hidden=(s.width, s.width), num_envs=s.num_envs,
                        batch_size=s.batch, capacity=s.capacity, fanout=s.fanout)

    def _record(self, call: str, placement: str, mode: str, s: Setting, work_call: str,
                timing: dict[str, float], repeats: int) -> None:
        w = self._workload(s)
        key = call
        if call == "env":
            key = f"env:{self.env_name}"
        elif call in ("infer", "train"):
            key = f"{call}:{self.cfg.algo}"
        self.rows.append({
            "call": key, "placement": placement, "mode": mode, "env": self.env_name,
            "algo": self.cfg.algo, "num_envs": s.num_envs, "width": s.width, "batch": s.batch,
            "capacity": s.capacity, "fanout": s.fanout, "depth": w.depth,
            "work": w.work(work_call), **timing, "repeats": repeats,
            "dispatch": self.dispatch,
        })

    def _replay(self, capacity: int, fanout: int, impl: str = "auto"):
        from hrl.replay.buffer import make_prioritized_replay

        r = self.cfg.replay
        return make_prioritized_replay(capacity, alpha=r.alpha, eps=r.eps, fanout=fanout,
                                       fmt=r.fmt, weights=r.weights, impl=impl)

    def _filled_replay(self, replay, device, rng):
        """A full buffer with random transitions and priorities (sampling needs items)."""
        state = replay.init(self.example)
        chunk = min(replay.capacity, 1 << 14)
        add = jax.jit(replay.add)
        for start in range(0, replay.capacity, chunk):
            m = min(chunk, replay.capacity - start)
            items = {k: jnp.asarray(rng.standard_normal((m, *v.shape)).astype(v.dtype)
                                    if v.dtype.kind == "f" else
                                    rng.integers(0, max(self.act_dim, 1), (m, *v.shape))
                                    .astype(v.dtype))
                     for k, v in self.example.items()}
            pri = jnp.asarray(rng.uniform(0.01, 2.0, m).astype(np.float32))
            state = add(state, items, pri)
        return jax.device_put(state, device)

    def _build_context(self, num_envs: int, width: int, batch: int) -> LoopContext:
        from hrl.runtime.loop import HostTrain

        rng = np.random.default_rng(7)
        cpu = jax.devices("cpu")[0]
        g = self.grid
        agent = _agent(self.cfg.algo, width, self.spec)
        replay = self._replay(g["capacity"][0], g["fanout"][0])
        tree = self._filled_replay(replay, cpu, rng)
        prims = self._prims(agent, replay, batch, num_envs)
        with jax.default_device(cpu):
            agent_state = agent.init(jax.random.PRNGKey(0))
            env_step = jax.jit(prims.env_step) if self.spec.is_jax else prims.env_step
            env_state, obs = prims.env_reset(jax.random.PRNGKey(1))
            carry = agent.init_carry(num_envs)
            start = jnp.zeros((num_envs,), bool)
            infer = jax.jit(prims.infer)
            sample = jax.jit(prims.sample)
            update = jax.jit(prims.update, donate_argnums=0)
            beta, step0 = jnp.float32(0.4), jnp.int32(0)
            drawn = sample(tree, jax.random.PRNGKey(2), beta)
            host_train = HostTrain.build(prims.train, agent_state, drawn.items, drawn.weights)
            # Host keys, as the loop passes them (one transfer per iteration, not per call).
            keys = itertools.cycle(np.asarray(jax.random.split(jax.random.PRNGKey(3), 1024)))
        live = {"env": env_state, "obs": obs, "actions": None, "packed":
                host_train.pack_agent(agent_state), "td": jnp.ones((batch,), jnp.float32),
                "tree": _copy(tree)}

        def env_call():
            actions = live["actions"]
            if actions is None:
                actions = self._random_actions(num_envs, rng)
            if not self.spec.is_jax:
                actions = np.asarray(actions)
            live["env"], out = env_step(live["env"], actions, next(keys))
            live["obs"] = out.obs
            return out.reward

        def infer_call():
            _, live["actions"] = infer(agent_state, carry, live["obs"], next(keys), step0,
                                       start)
            return live["actions"]

        def train_call():
            live["packed"], live["td"], *_ = host_train.step(live["packed"], drawn.items,
                                                             drawn.weights)
            return live["td"]

        def update_call():
            live["tree"] = update(live["tree"], drawn.indices, live["td"])
            return live["tree"]

        return LoopContext({"env": env_call, "infer": infer_call, "train": train_call,
                            "sample": lambda: sample(tree, next(keys), beta).indices,
                            "update": update_call})

    def _between(self, call: str, device, s: Setting) -> Callable[[], None] | None:
        """What runs between two timed calls of `call` on `device` (None: the host) at setting
        `s`: the loop context at its sizes (built once per sizes), or nothing off the CPU, where
        a GPU's calls are not the host's caches' to lose."""
        if device is not None and device.platform != "cpu":
            return None
        key = (s.num_envs, s.width, s.batch)
        if key not in self._contexts:
            self._contexts[key] = self._build_context(*key)
        return self._contexts[key].around(call)

    # ------------------------------------------------------------------ JAX primitives
    def _profile_env(self, placement, device, s: Setting, repeats: int, scan: int):
        from hrl.envs import make_env

        env = make_env(self.env_name, s.num_envs, **self.cfg.env.kwargs)
        if not env.spec.is_jax:
            if placement != "cpu":
                return
            state, _ = env.reset(jax.random.PRNGKey(0))
            actions = self._random_actions(s.num_envs, np.random.default_rng(0))
            t = _median_time(lambda: env.step(state, actions, None)[1].reward, repeats,
                             self._between("env", None, s))
            self._record("env", "cpu", "dispatched", s, "env", t, repeats)
            return
        with jax.default_device(device):
            state, _ = env.reset(jax.random.PRNGKey(0))
            actions = jnp.asarray(self._random_actions(s.num_envs, np.random.default_rng(0)))
            step = jax.jit(env.step)
            key = jax.random.PRNGKey(2)
            t = _median_time(lambda: step(state, actions, key), repeats,
                             self._between("env", device, s))
            self._record("env", placement, "dispatched", s, "env", t, repeats)
            t = _scan_time(lambda c, k: env.step(c, actions, k)[0], state, scan, repeats)
            self._record("env", f"{placement}-fused", "fused", s, "env", t, repeats)

    def _random_actions(self, m: int, rng):
        if self.spec.discrete:
            return rng.integers(0, self.spec.action.n, m).astype(np.int32)
        return rng.uniform(-1, 1, (m, *self.spec.action.shape)).astype(np.float32)

    def _prims(self, agent, replay, batch: int, num_envs: int):
        """The runtime's own primitive functions (`hrl.runtime.primitives.make_primitives`)."""
        from hrl.envs import make_env
        from hrl.runtime.primitives import make_primitives

        env = make_env(self.env_name, num_envs, **self.cfg.env.kwargs)
        return make_primitives(env, agent, replay, batch)

    def _profile_learner(self, placement, device, s: Setting, repeats: int, scan: int,
                         calls=("infer", "train")):
        rng = np.random.default_rng(0)
        agent = _agent(self.cfg.algo, s.width, self.spec)
        prims = self._prims(agent, self._replay(max(s.batch, 16), 16), s.batch, s.num_envs)
        with jax.default_device(device):
            state = agent.init(jax.random.PRNGKey(0))
            if "infer" in calls:
                obs = jnp.asarray(rng.standard_normal((s.num_envs, *self.spec.obs_shape)),
                                  jnp.float32)
                carry = agent.init_carry(s.num_envs)
                start = jnp.zeros((s.num_envs,), bool)
                step0 = jnp.int32(0)
                infer = jax.jit(prims.infer)
                key = jax.random.PRNGKey(3)
                t = _median_time(lambda: infer(state, carry, obs, key, step0, start), repeats,
                                 self._between("infer", device, s))
                self._record("infer", placement, "dispatched", s, "infer", t, repeats)

                def infer_step(o, k):  # feed actions back so the scan cannot hoist the call
                    _, a = prims.infer(state, carry, o, k, step0, start)
                    return o + 1e-6 * jnp.sum(jnp.asarray(a, jnp.float32))

                t = _scan_time(infer_step, obs, scan, repeats)
                self._record("infer", f"{placement}-fused", "fused", s, "infer", t, repeats)
            if "train" in calls:
                batch = {k: jnp.asarray(
                    rng.standard_normal((s.batch, *v.shape)).astype(v.dtype) if v.dtype.kind == "f"
                    else rng.integers(0, max(self.act_dim, 1), (s.batch, *v.shape)).astype(v.dtype))
                    for k, v in self.example.items()}
                weights = jnp.ones((s.batch,), jnp.float32)
                # Packed, as the host loop calls it (HostTrain): five arrays back, not the
                # agent's every leaf.
                from hrl.runtime.loop import HostTrain

                host_train = HostTrain.build(prims.train, state, batch, weights)
                packed = host_train.pack_agent(state)

                def train_call():
                    nonlocal packed
                    packed, *rest = host_train.step(packed, batch, weights)
                    return packed, rest

                t = _median_time(train_call, repeats, self._between("train", device, s))
                self._record("train", placement, "dispatched", s, "train", t, repeats)
                t = _scan_time(lambda st, k: prims.train(st, batch, weights)[0], state,
                               scan, repeats)
                self._record("train", f"{placement}-fused", "fused", s, "train", t, repeats)

    def _profile_replay_jax(self, placement, device, s: Setting, repeats: int, scan: int,
                            batches, num_envs, fused: bool = True, impl: str = "auto"):
        """sample / update / insert of the JAX buffer on `device`, its tree kernels `impl`
        (`replay.impl`), dispatched as the host loop calls them and (if `fused`) inside a scan
        as the fused loop does."""
        rng = np.random.default_rng(0)
        replay = self._replay(s.capacity, s.fanout, impl)
        state = self._filled_replay(replay, device, rng)
        agent = _agent(self.cfg.algo, s.width, self.spec)
        beta = jnp.float32(0.4)
        with jax.default_device(device):
            for b in batches:
                sb = dataclasses.replace(s, batch=b)
                prims = self._prims(agent, replay, b, 1)
                sample = jax.jit(prims.sample)
                key = jax.random.PRNGKey(4)
                t = _median_time(lambda: sample(state, key, beta), repeats,
                                 self._between("sample", device, sb))
                self._record("sample", placement, "dispatched", sb, "sample", t, repeats)
                if fused:  # consume the indices so the scan keeps every call
                    t = _scan_time(lambda c, k, p=prims: c + jnp.sum(
                        p.sample(state, k, beta).indices), jnp.int32(0), scan, repeats)
                    self._record("sample", f"{placement}-fused", "fused", sb, "sample", t,
                                 repeats)
                idx = jnp.asarray(rng.integers(0, s.capacity, b).astype(np.int32))
                td = jnp.asarray(rng.uniform(0, 2, b).astype(np.float32))
                # Donated, as the host loop calls it: written in place, never copied.
                update = jax.jit(prims.update, donate_argnums=0)
                owned = _copy(state)

                def update_call():
                    nonlocal owned
                    owned = update(owned, idx, td)
                    return owned

                t = _median_time(update_call, repeats, self._between("update", device, sb))
                self._record("update", placement, "dispatched", sb, "update", t, repeats)
                if fused:
                    t = _scan_time(lambda st, k, p=prims: p.update(
                        st, idx, td * jax.random.uniform(k)), state, scan, repeats)
                    self._record("update", f"{placement}-fused", "fused", sb, "update", t,
                                 repeats)
            prims = self._prims(agent, replay, batches[0], 1)
            for m in num_envs:
                sm = dataclasses.replace(s, num_envs=m)
                items = {k: jnp.zeros((m, *v.shape), v.dtype) for k, v in self.example.items()}
                insert = jax.jit(prims.insert, donate_argnums=0)  # as the host loop does
                owned = _copy(state)

                def insert_call():
                    nonlocal owned
                    owned = insert(owned, items)
                    return owned

                t = _median_time(insert_call, repeats, self._between("insert", device, sm))
                self._record("insert", placement, "dispatched", sm, "insert", t, repeats)
                if fused:
                    t = _scan_time(lambda st, k: prims.insert(st, items), state, scan,
                                   repeats)
                    self._record("insert", f"{placement}-fused", "fused", sm, "insert", t,
                                 repeats)

    # ------------------------------------------------------------------ other backends
    def _host_backends(self) -> list[tuple[str, str]]:
        """(placement name, replay.backend value) for each host replay backend usable here."""
        from hrl.replay.backends import BackendUnavailableError, format_for, make_backend

        out = []
        for backend, place in (("opencl", "pocl"), ("rtl", "rtl")):
            if backend not in self.backends:
                continue
            try:
                tree = make_backend(backend, 16, 4, format_for(backend, self.cfg.replay.fmt))
            except (BackendUnavailableError, ValueError, TypeError, RuntimeError) as err:
                self.skipped.append(f"{backend}: {err}")
                continue
            if backend == "opencl":
                device = getattr(tree, "device", None)
                name = str(getattr(getattr(device, "platform", None), "name", ""))
                place = "pocl" if ("Portable" in name or not name) else "opencl"
            out.append((place, backend))
        return out

    def _filled_host_replay(self, backend: str, capacity: int, fanout: int, agent, batch: int):
        """The runtime's host replay (`hrl.replay.host_buffer`) on `backend`, every slot
        written with random priorities, and the primitives the host loop calls on it.
        Returns (replay, primitives, state)."""
        from hrl.replay.backends import format_for
        from hrl.replay.host_buffer import make_host_replay

        rng = np.random.default_rng(0)
        rcfg = dataclasses.replace(self.cfg.replay, backend=backend, capacity=capacity,
                                   fanout=fanout,
                                   fmt=format_for(backend, self.cfg.replay.fmt))
        replay = make_host_replay(rcfg)
        state = replay.init(self.example)
        prims = self._prims(agent, replay, batch, 1)
        chunk = min(capacity, 1 << 14)
        for start in range(0, capacity, chunk):
            m = min(chunk, capacity - start)
            items = {k: np.zeros((m, *v.shape), v.dtype) for k, v in self.example.items()}
            state = prims.insert(state, items)
            state = prims.update(state, np.arange(start, start + m, dtype=np.int32),
                                 rng.uniform(0.01, 2.0, m).astype(np.float32))
        return replay, prims, state

    def _profile_overlap(self, name: str, backend: str, repeats: int):
        """What relaxed dependency saves in the runtime's loops with the tree on host backend
        `backend` and train on the CPU (`overlap:loop`), at the grid's first capacity and
        fan-out and every width and batch (the first width and batch, and the sequential
        executor only, for the RTL simulation, whose calls take milliseconds). Measured in a
        fresh process, as a run with this tree starts (`_overlap_rows_main`); each row holds
        the loops' timings, from which `plan` forms the overlap. `backend` "jax": the JAX
        tree on the second CPU device (placement `cpu1`)."""
        from hrl.config import to_dict

        g = self.grid
        executors = OVERLAP_EXECUTORS
        if backend == "rtl":
            points, executors = [(g["width"][0], g["batch"][0])], ("sequential",)
        else:
            points = list(itertools.product(g["width"], g["batch"]))
        try:
            got = overlap_rows_subprocess(to_dict(self.cfg), backend, g["capacity"][0],
                                          g["fanout"][0], points, repeats, executors)
        except RuntimeError as err:
            self.skipped.append(f"{OVERLAP_CALL} on {name}: {err}")
            return
        for (width, batch), m in zip(points, got, strict=True):
            s = Setting(num_envs=OVERLAP_LOOP[0], width=width, batch=batch,
                        capacity=g["capacity"][0], fanout=g["fanout"][0])
            self._record(OVERLAP_CALL, name, "host", s, "sample",
                         {"latency_s": m["relaxed_s"], "cpu_s": m["relaxed_cpu_s"],
                          "p10_s": m["relaxed_p10_s"], "p90_s": m["relaxed_p90_s"]}, repeats)
            self.rows[-1].update({k: v for k, v in m.items()
                                  if not k.startswith("relaxed_")})

    def _profile_backend(self, name, backend, s: Setting, repeats: int, batches, num_envs):
        """sample / update / insert of the runtime's host replay (`hrl.replay.host_buffer`)
        on `backend`, through the same primitive functions the host loop calls."""
        rng = np.random.default_rng(0)
        agent = _agent(self.cfg.algo, s.width, self.spec)
        replay, prims, state = self._filled_host_replay(backend, s.capacity, s.fanout, agent,
                                                        batches[0])
        beta = np.float32(0.4)
        for b in batches:
            sb = dataclasses.replace(s, batch=b)
            p = self._prims(agent, replay, b, 1)
            key = jax.random.PRNGKey(5)
            t = _median_time(lambda p=p: p.sample(state, key, beta).indices, repeats,
                             self._between("sample", None, sb))
            self._record("sample", name, "host", sb, "sample", t, repeats)
            idx = rng.integers(0, s.capacity, b).astype(np.int32)
            td = rng.uniform(0.01, 2, b).astype(np.float32)
            t = _median_time(lambda: (p.update(state, idx, td), replay.backend.total())[1],
                             repeats, self._between("update", None, sb))
            self._record("update", name, "host", sb, "update", t, repeats)
        for m in num_envs:
            sm = dataclasses.replace(s, num_envs=m)
            items = {k: np.zeros((m, *v.shape), v.dtype) for k, v in self.example.items()}
            t = _median_time(lambda: (prims.insert(state, items), replay.backend.total())[1],
                             repeats, self._between("insert", None, sm))
            self._record("insert", name, "host", sm, "insert", t, repeats)

    def _profile_host_link(self, repeats: int):
        """Host memory copy (jax CPU array -> numpy -> new buffer), 1 KiB .. 16 MiB."""
        for nbytes in (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 24):
            x = jnp.ones((nbytes // 4,), jnp.float32)
            t = _median_time(lambda x=x: np.array(x, copy=True), repeats)
            self._record_link("link:host", nbytes, t, repeats)

    def _profile_cpu_device_link(self, repeats: int):
        """A batch of transitions from the second CPU device into a call on the first, moved by
        the host loop's own `put_for_call` (each array a view of its host memory, which the
        jitted call copies in or aliases): the call with the batch on cpu:1 minus the same call
        with it on cpu:0, interleaved, at batch sizes 32 .. 16384. Only in a process with two
        CPU devices (`hrl profile` makes them)."""
        cpus = jax.devices("cpu")
        if len(cpus) < 2:
            self.skipped.append(f"{CPU_DEVICE_CALL}: this process has one CPU device")
            return
        call = jax.jit(lambda anchor, *xs: anchor + sum(x.reshape(-1)[0].astype(jnp.float32)
                                                        for x in xs))
        anchor = jax.device_put(jnp.zeros((), jnp.float32), cpus[0])
        to_learner = _placed_call(cpus[0])
        for batch in (32, 256, 2048, 16384):
            leaves = [np.zeros((batch, *v.shape), v.dtype) for v in self.example.values()]
            leaves.append(np.ones((batch,), np.float32))  # the IS weights
            there = jax.device_put(leaves, cpus[1])
            here = jax.device_put(leaves, cpus[0])
            t, saved = _interleaved_times(
                {"cross": lambda there=there: call(*to_learner(anchor, *there)),
                 "local": lambda here=here: call(*to_learner(anchor, *here))},
                repeats, paired=("cross", "local"))
            self._record_link(CPU_DEVICE_CALL, sum(x.nbytes for x in leaves), {
                "latency_s": max(saved["latency_s"], 0.0), "cpu_s": max(saved["cpu_s"], 0.0),
                "p10_s": max(t["cross"]["p10_s"] - t["local"]["p10_s"], 0.0),
                "p90_s": max(t["cross"]["p90_s"] - t["local"]["p90_s"], 0.0)}, repeats)

    def _record_link(self, call: str, nbytes: int, times: dict, repeats: int):
        """A link row: `times` for moving `nbytes` (no primitive, env or network)."""
        self.rows.append({"call": call, "placement": "host", "mode": "host", "env": "",
                          "algo": "", "num_envs": 0, "width": 0, "batch": 0, "capacity": 0,
                          "fanout": 0, "depth": 0, "work": float(nbytes), **times,
                          "repeats": repeats})

    def _profile_process_link(self, repeats: int):
        """One way between two processes through the multiprocessing queues the pipelined
        executor's process actors use (pickle, pipe, unpickle), 1 KiB .. 4 MiB of numpy: half
        a round trip to a spawned echo process."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        there, back = ctx.Queue(), ctx.Queue()
        echo = ctx.Process(target=_echo, args=(there, back), daemon=True)
        echo.start()
        try:
            for nbytes in (1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22):
                x = np.ones((nbytes // 4,), np.float32)

                def round_trip(x=x):
                    there.put(x)
                    return back.get(timeout=60)

                round_trip()  # the echo process starts (imports numpy) on the first message
                t = _median_time(round_trip, repeats)
                self._record_link("link:process", nbytes, {k: v / 2 for k, v in t.items()},
                                  repeats)
        finally:
            there.put(None)
            echo.join(timeout=10)

    def _profile_thread_handoff(self, repeats: int):
        """A hand-off to a second thread and back (`link:thread`): what the relaxed dependency
        pays per SGD step to run update and sample beside train (`HostLoop._relaxed_step`,
        a ThreadPoolExecutor of one thread). A no-op job, HANDOFF_BATCH round trips per timed
        call, so the row is well above the timer's resolution."""
        self._record_link(HANDOFF_CALL, 0, thread_handoff_time(repeats), repeats)

    def _profile_collective_link(self, repeats: int, scan: int):
        """A ring step of a collective between virtual CPU devices (`link:cpu-collective`):
        `collective_timings` in a subprocess started with two virtual CPU devices (JAX reads
        XLA_FLAGS when it starts, so this process cannot grow its own). At least
        COLLECTIVE_MIN_SCAN steps per timed call and 5 repeats whatever the grid: the row is
        a difference of two timings, which a short scan would leave in the noise, and the
        subprocess's start, not the steps, is most of its few seconds."""
        repeats, scan = max(repeats, 5), max(scan, COLLECTIVE_MIN_SCAN)
        try:
            for nbytes, t in collective_link_subprocess(repeats, scan):
                self._record_link(COLLECTIVE_CALL, nbytes, t, repeats)
        except RuntimeError as err:
            self.skipped.append(f"{COLLECTIVE_CALL}: {err}")

    def _profile_loops(self, repeats: int, loops=None):
        """The runtime's own loops at small settings (L actor steps, U SGD steps per
        iteration, `LOOP_SETTINGS`): their time beyond the primitives is the loop's bookkeeping
        (n-step window, pending queue, key splits, host transfers of returns, and for the host
        loops the cost of each call), which `plan` fits as c0 + cL * L + cU * U per iteration
        for the fused and the host loop (the fused loop's cost per call apart), and as a
        constant per iteration beyond its two sides for the pipelined executor (the
        hand-offs; its rows run `LOOP_ENVS` envs).

        Each loop is measured in a fresh process per CPU dispatch (`LOOP_DISPATCH`), started
        as a run of that loop would start it (`hrl.runtime.cpu_backend`): dispatch and intra-op
        threads are fixed per process, and a host loop pays per call, so its bookkeeping
        differs between the two (`train.cpu_dispatch: auto` runs a host loop sync). Rows carry
        the dispatch they were measured in and the iterations per call they were timed at;
        the fused loop's also at FUSED_CALL_SETTINGS in longer calls (its cost per call).
        `loops`: just these of LOOP_KINDS (`hrl profile --only loop-fused`)."""
        from hrl.config import to_dict

        # A host env (gymnasium) cannot run inside the fused loop.
        loops = [x for x in (loops or LOOP_KINDS) if self.spec.is_jax or x != "fused"]
        n = loop_iterations(repeats)
        s = Setting(num_envs=1, width=LOOP_WIDTH, batch=LOOP_BATCH, capacity=LOOP_CAPACITY,
                    fanout=self.cfg.replay.fanout)
        depth = self._workload(s).depth
        for loop in loops:
            for dispatch in LOOP_DISPATCH[loop]:
                settings = [(steps, sgd, n) for steps, sgd in LOOP_SETTINGS]
                if loop == "fused":
                    settings += [(steps, sgd, n * LOOP_LONG_CALL)
                                 for steps, sgd in FUSED_CALL_SETTINGS]
                try:
                    got = loop_rows_subprocess(to_dict(self.cfg), loop, dispatch, repeats,
                                               settings)
                except RuntimeError as err:
                    self.skipped.append(f"loop:{loop} ({dispatch}): {err}")
                    continue
                for (steps, sgd, iterations), m in zip(settings, got, strict=True):
                    self.rows.append({
                        "call": f"loop:{loop}", "placement": "loop", "mode": "loop",
                        "env": self.env_name, "algo": self.cfg.algo,
                        "num_envs": LOOP_ENVS[loop],
                        "width": LOOP_WIDTH, "batch": LOOP_BATCH, "capacity": LOOP_CAPACITY,
                        "fanout": s.fanout, "depth": depth,
                        "rollout": steps, "sgd": sgd, "dispatch": dispatch, "work": 0.0,
                        "iterations": iterations,
                        "latency_s": m["wall_s"], "cpu_s": m["cpu_s"], "p10_s": m["wall_s"],
                        "p90_s": m["wall_s"], "repeats": 3})

    # ------------------------------------------------------------------ driver
    def link_tasks(self, names=LINK_ROWS) -> list[tuple[str, Callable[[], None]]]:
        """The link measurements named (`LINK_ROWS`: host, process, cpu-collective, thread)."""
        unknown = sorted(set(names) - set(LINK_ROWS))
        if unknown:
            raise ValueError(f"unknown link rows {unknown}; choose from {list(LINK_ROWS)}")
        rep, scan = self.grid["repeats"], self.grid["scan"]
        every = {"host": ("host memory copy", lambda: self._profile_host_link(rep)),
                 "process": ("process link", lambda: self._profile_process_link(rep)),
                 "cpu-collective": ("collective between 2 virtual CPU devices",
                                    lambda: self._profile_collective_link(rep, scan)),
                 "thread": ("thread hand-off", lambda: self._profile_thread_handoff(rep)),
                 "cpu-device": ("between two CPU devices",
                                lambda: self._profile_cpu_device_link(rep))}
        return [every[n] for n in LINK_ROWS if n in names]

    def tasks(self) -> list[tuple[str, Callable[[], None]]]:
        g = self.grid
        rep, scan = g["repeats"], g["scan"]
        if self.only is not None:
            loops = [LOOP_ONLY[n] for n in self.only if n in LOOP_ONLY]
            return self.link_tasks([n for n in self.only if n not in LOOP_ONLY]) + (
                [("the runtime's loops (bookkeeping)",
                  lambda: self._profile_loops(rep, loops))] if loops else [])
        base = Setting(num_envs=g["num_envs"][0], width=g["width"][0], batch=g["batch"][0],
                       capacity=g["capacity"][0], fanout=g["fanout"][0])
        out = []
        for placement, device in self.jax_placements:
            for m in g["num_envs"]:
                s = dataclasses.replace(base, num_envs=m)
                out.append((f"env M={m} on {placement}",
                            lambda p=placement, d=device, s=s: self._profile_env(p, d, s, rep,
                                                                                 scan)))
            for m, w in itertools.product(g["num_envs"], g["width"]):
                s = dataclasses.replace(base, num_envs=m, width=w)
                out.append((f"infer M={m} width={w} on {placement}",
                            lambda p=placement, d=device, s=s: self._profile_learner(
                                p, d, s, rep, scan, ("infer",))))
            for b, w in itertools.product(g["batch"], g["width"]):
                s = dataclasses.replace(base, batch=b, width=w)
                out.append((f"train B={b} width={w} on {placement}",
                            lambda p=placement, d=device, s=s: self._profile_learner(
                                p, d, s, rep, scan, ("train",))))
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                out.append((f"replay N={n} K={k} on {placement}",
                            lambda p=placement, d=device, s=s: self._profile_replay_jax(
                                p, d, s, rep, scan, g["batch"],
                                [m for m in g["num_envs"] if m <= s.capacity])))
        for placement, device, impl in self.tree_placements:
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                out.append((f"replay N={n} K={k} on {placement}",
                            lambda p=placement, d=device, s=s, i=impl: self._profile_replay_jax(
                                p, d, s, rep, scan, g["batch"],
                                [m for m in g["num_envs"] if m <= s.capacity], fused=False,
                                impl=i)))
            # The XLA tree sits in train's queue: it has no relaxed overlap to measure.
            if placement == SECOND_CPU and self.loops:
                out.append((f"relaxed overlap on {placement}",
                            lambda p=placement: self._profile_overlap(p, "jax", rep)))
        for name, backend in self._host_backends():
            for n, k in itertools.product(g["capacity"], g["fanout"]):
                s = dataclasses.replace(base, capacity=n, fanout=k)
                reps = rep if name != "rtl" else 3
                out.append((f"replay N={n} K={k} on {name}",
                            lambda name=name, b=backend, s=s, reps=reps: self._profile_backend(
                                name, b, s, reps, g["batch"],
                                [m for m in g["num_envs"] if m <= s.capacity])))
            if self.loops:  # a relaxed loop's thread, measured like the loops: a subprocess
                out.append((f"relaxed overlap on {name}",
                            lambda name=name, b=backend: self._profile_overlap(
                                name, b, rep if b != "rtl" else 3)))
        # Between CPU devices only where the tree has a second one to sit on.
        second_cpu = any(p == SECOND_CPU for p, _, _ in self.tree_placements)
        out += self.link_tasks([n for n in LINK_ROWS if n != "cpu-device" or second_cpu])
        if self.loops:
            out.append(("the runtime's loops (bookkeeping)", lambda: self._profile_loops(rep)))
        return out

    def _time_reference(self, round_: int) -> None:
        if self.only is None:  # a profile's rows, not a refresh of a few links
            from hrl.mapping.speed import reference_time

            self.speed.append({**reference_time(), "round": round_})

    def run(self) -> list[dict]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        tasks = self.tasks()
        rounds = int(self.grid.get("rounds", 1))
        if rounds < 1:
            raise ValueError(f"grid rounds must be >= 1, got {rounds}")
        measured = []
        with Progress(TextColumn("[bold]profile"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.description}"), TimeElapsedColumn(),
                      disable=not self.progress) as bar:
            job = bar.add_task("", total=len(tasks) * rounds)
            for r in range(rounds):
                self.rows, again = [], []
                self._time_reference(r)
                for label, fn in tasks:
                    bar.update(job, description=f"round {r + 1}: {label}" if rounds > 1
                               else label)
                    before = len(self.rows)
                    fn()
                    bar.advance(job)
                    # A later round measures again only what it could improve: not a task
                    # that was skipped or measured only rows whose first round stands.
                    if _merged_over_rounds(self.rows[before:]):
                        again.append((label, fn))
                    else:
                        bar.update(job, total=bar.tasks[job].total - (rounds - 1 - r))
                measured.append(self.rows)
                self._time_reference(r)
                tasks = again
        self.rounds = measured if rounds > 1 else []
        self.rows = merge_rounds(measured, self.merge)
        self.skipped = list(dict.fromkeys(self.skipped))  # a part skipped in every round
        if self.only is None:
            self.rows.extend(rtl_cycle_rows())
        return self.rows


# What names a row: a second measurement of the same row agrees on all of these.
ROW_IDENTITY = ("call", "placement", "mode", "env", "algo", "num_envs", "width", "batch",
                "capacity", "fanout", "work", "rollout", "sgd", "dispatch", "iterations")


def _row_name(row: dict) -> tuple:
    return tuple(row.get(k) for k in ROW_IDENTITY)


# Rows that are a difference or a ratio of interleaved timings (the relaxed overlap, the
# collective's psum, the move between CPU devices): the interleaving already cancels a slow
# spell, and the lowest of several rounds is the luckiest, not the truest (the lowest parallel
# time picked an overlap that put a losing mapping first). Their first round stands.
DIFFERENCE_CALLS = ("overlap:loop", "overlap:thread", "link:cpu-collective",
                    "link:cpu-device")


def _merged_over_rounds(rows: list[dict]) -> bool:
    """Whether any of `rows` is one that `merge_rounds` picks from several rounds."""
    return any(r["call"] not in DIFFERENCE_CALLS for r in rows)


MERGE_RULES = ("min", "median")


def merge_rounds(rounds: list[list[dict]], keep: str = "min") -> list[dict]:
    """One profile from several measurements of the same rows (`ROW_IDENTITY`), in the first
    round's order; a row only some rounds have is kept as measured, and `DIFFERENCE_CALLS` as
    the first round measured them. Every other row is kept whole from one round:
    - keep="min": the round where its latency was lowest. On a shared VM the machine's speed
      drifts over minutes: two profiles of the same code an hour apart had rows 0.4x-3.7x
      apart, and one, taken in a slow spell, predicted every run 25% high. A slow spell
      inflates the rows it covers; the lower of two rounds measured minutes apart rarely
      falls in one.
    - keep="median": the round of its median latency (the lower middle one of an even count,
      so two rounds keep the lower). A row whose time varies a lot between runs, like a
      256x256 train step at batch 256 on two cores, is otherwise kept at its luckiest, while
      a run is compared at its median over rounds."""
    if keep not in MERGE_RULES:
        raise ValueError(f"merge_rounds: keep must be one of {MERGE_RULES}, got {keep!r}")
    seen_rows: dict[tuple, list[dict]] = {}
    for rows in rounds:
        seen: dict[tuple, int] = {}
        for row in rows:
            name = _row_name(row)
            seen[name] = seen.get(name, 0) + 1
            key = (*name, seen[name])  # repeated names (none today) pair up in order
            if key not in seen_rows:
                seen_rows[key] = [row]
            elif _merged_over_rounds([row]):
                seen_rows[key].append(row)
    out = []
    for measured in seen_rows.values():
        ranked = sorted(measured, key=lambda r: r.get("latency_s", 0.0))  # stable: ties keep order
        out.append(ranked[0] if keep == "min" else ranked[(len(ranked) - 1) // 2])
    return out


def merged_rows(profile: dict, keep: str) -> list[dict]:
    """The rows of a loaded profile merged again from the rounds it keeps ("rounds", see
    `merge_rounds`), with its rows that no round measured (the RTL tables, rows an `hrl
    profile --only` refreshed); a profile without rounds as it is."""
    rounds = profile.get("rounds") or []
    if not rounds:
        return profile["rows"]
    names = {_row_name(r) for rows in rounds for r in rows}
    extra = {}
    for r in profile["rows"]:
        extra.setdefault(_row_name(r), r)
    return merge_rounds(rounds, keep) + [r for name, r in extra.items() if name not in names]


def _echo(inbox, outbox) -> None:
    """The far end of `_profile_process_link`: send every message back until None."""
    while (item := inbox.get()) is not None:
        outbox.put(item)


# ----------------------------------------------------------------------------- collectives
COLLECTIVE_CALL = "link:cpu-collective"
HANDOFF_CALL = "link:thread"
CPU_DEVICE_CALL = "link:cpu-device"
HANDOFF_BATCH = 200  # round trips per timed call of the thread hand-off
# What relaxed dependency saves in the runtime's own loops, with the tree off the learner's
# device (`_overlap_rows_main`). Profiles before timed the replay thread beside train alone,
# out of the loop (`overlap:thread`, still read where a profile has no `overlap:loop` row):
# there it hid up to 80% of the shorter side, while relaxed runs with the tree on the second
# CPU device took 1.09x-1.44x their strict runs (gymnasium M=8x16, the 2-core VM).
OVERLAP_CALL = "overlap:loop"
LEGACY_OVERLAP_CALL = "overlap:thread"
# The loops an overlap row times: envs, actor steps and SGD steps per iteration (an actor
# step per two SGD steps, as in three of the validation's four settings: what relaxed saves
# in the pipelined executor depends on how much of the cores its actors' process takes), the
# executors, and iterations per timed run.
OVERLAP_LOOP = (8, 4, 8)
OVERLAP_EXECUTORS = ("sequential", "pipelined")
OVERLAP_ITERATIONS = 8
# The placement of the JAX tree on the second XLA CPU device, and how a config says it: the
# learner's primitives are pinned to the first device (an unplaced primitive runs where its
# inputs are, and the sample's batch comes from cpu:1).
SECOND_CPU = "cpu1"
# The JAX buffer with its tree in plain XLA ops (`replay.impl: xla`) on the learner's device.
XLA_TREE = "cpu-xla"
SECOND_CPU_PLACEMENT = {"infer": "cpu:0", "train": "cpu:0", "sample": "cpu:1",
                        "update": "cpu:1"}
OVERLAP_MIN_REPEATS = 30  # timed runs of each loop per point, strict and relaxed in turns
COLLECTIVE_DEVICES = 2
COLLECTIVE_SIZES = (4, 1 << 10, 1 << 14, 1 << 17, 1 << 20)  # bytes all-reduced per psum
COLLECTIVE_MIN_SCAN = 200


def collective_timings(sizes=COLLECTIVE_SIZES, repeats: int = 5,
                       scan: int = 100) -> list[tuple[int, dict]]:
    """Per ring step of an all-reduce between the first two CPU devices of this process.

    For each size n (bytes of float32), a jitted `shard_map` runs `scan` steps of
    `x = psum(x) * 0.5` inside one lax.scan (dispatch amortised; every step depends on the
    last, so none is hoisted), and the same scan without the psum; the difference per step is
    one all-reduce of n bytes. A ring all-reduce over D devices is 2 (D - 1) messages of n / D
    bytes (the model of `hrl.mapping.scaling`), so on two devices it is two messages of n / 2:
    the rows returned are (n / 2, half the all-reduce's time), the time of one ring step, and
    a fit of latency + bytes / bandwidth over them prices a message of the data-parallel
    loop's collectives, the meeting of the devices' threads (the rendezvous) included.
    Needs two CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=2 before JAX
    starts); `collective_link_subprocess` starts a process that has them."""
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    cpus = jax.devices("cpu")
    if len(cpus) < COLLECTIVE_DEVICES:
        raise RuntimeError(f"collective_timings needs {COLLECTIVE_DEVICES} CPU devices, this "
                           f"process has {len(cpus)}")
    mesh = Mesh(np.array(cpus[:COLLECTIVE_DEVICES]), ("d",))

    def program(reduce: bool):
        def body(x):
            def step(c, _):
                return (jax.lax.psum(c, "d") if reduce else c + c) * 0.5, None
            return jax.lax.scan(step, x, None, length=scan)[0]
        # check_vma=False: psum's result is replicated while the carry is per device.
        return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"),
                                     check_vma=False))

    with_psum, without = program(True), program(False)
    out = []
    for nbytes in sizes:
        words = max(1, nbytes // 4)
        x = jax.device_put(jnp.ones((COLLECTIVE_DEVICES * words,), jnp.float32),
                           jax.sharding.NamedSharding(mesh, P("d")))
        t = _median_time(lambda x=x: with_psum(x), repeats)
        base = _median_time(lambda x=x: without(x), repeats)
        # Two ring steps per psum on two devices; the step's own compute (the base scan's
        # median wall, or CPU, time) taken out of every figure.
        step = {k: max(v - base["cpu_s" if k == "cpu_s" else "latency_s"], 0.0) / (2 * scan)
                for k, v in t.items()}
        out.append((words * 4 // 2, step))
    return out


def _collective_main() -> None:
    """Entry of the subprocess `collective_link_subprocess` starts: argv[1] is a JSON
    {"repeats", "scan"}; prints one JSON line of [nbytes, timing] pairs."""
    import sys

    args = json.loads(sys.argv[1])
    print(json.dumps(collective_timings(repeats=args["repeats"], scan=args["scan"])))


def collective_link_subprocess(repeats: int = 5, scan: int = 100,
                               timeout: float = 300.0) -> list[tuple[int, dict]]:
    """`collective_timings` in a fresh Python with two virtual CPU devices (and no GPU:
    JAX_PLATFORMS=cpu). Raises RuntimeError with the child's error when it fails."""
    import os

    from hrl.runtime.cpu_backend import with_cpu_device_count

    env = _child_env(XLA_FLAGS=with_cpu_device_count(
        os.environ.get("XLA_FLAGS", ""), COLLECTIVE_DEVICES))
    code = "from hrl.mapping.profile import _collective_main; _collective_main()"
    pairs = run_json_child(["-c", code, json.dumps({"repeats": repeats, "scan": scan})],
                           "the collective probe", timeout, env=env, tail=1000)
    return [(int(n), t) for n, t in pairs]


def _set_width(data: dict, width: int) -> None:
    """Two hidden layers `width` wide for the agent of config dict `data` (DDPG: both nets)."""
    if data["algo"] == "dqn":
        data["agent"]["hidden_sizes"] = [width, width]
    else:
        data["agent"]["actor_hidden_sizes"] = [width, width]
        data["agent"]["critic_hidden_sizes"] = [width, width]


def loop_row_config(base: dict, loop: str, steps: int, sgd: int, dispatch: str):
    """The config of one loop row: `base` (a config dict) at the loop-row sizes, L=`steps`
    actor steps and U=`sgd` SGD steps per iteration, strict, run by `loop` (fused, host, or
    pipelined with process actors one iteration ahead) in CPU `dispatch`."""
    from hrl.config import config_from_dict

    data = json.loads(json.dumps(base))
    data["env"].update(num_envs=LOOP_ENVS[loop])
    _set_width(data, LOOP_WIDTH)
    data["replay"].update(capacity=LOOP_CAPACITY, backend="jax")
    data["train"].update(rollout_length=steps, batch_size=LOOP_BATCH,
                         train_ratio=sgd / (steps * LOOP_ENVS[loop]),
                         learning_starts=LOOP_BATCH * 4, fused=loop == "fused",
                         dependency="strict", staleness=0, total_env_steps=10**7,
                         cpu_dispatch=dispatch, executor="auto", actors="thread")
    if loop == "pipelined":  # its actors in their own process, one iteration ahead
        data["train"].update(executor="pipelined", actors="process", pipeline_depth=1)
    data.setdefault("log", {})["progress"] = False
    return config_from_dict(data)


def _loop_rows_main() -> None:
    """Entry of the subprocess `loop_rows_subprocess` starts: argv[1] is a JSON {"base",
    "loop", "dispatch", "repeats", "settings"}; prints one JSON line, a timing per setting with
    whether the process ran async."""
    import sys

    from hrl.mapping.validate import measure_iteration
    from hrl.runtime.cpu_backend import start_cpu_backend

    a = json.loads(sys.argv[1])
    configs = [loop_row_config(a["base"], a["loop"], steps, sgd, a["dispatch"])
               for steps, sgd, _ in a["settings"]]
    start_cpu_backend(configs[0])  # as a run of this loop starts: its dispatch and threads
    out = []
    for cfg, (_, _, iterations) in zip(configs, a["settings"], strict=True):
        # Two builds, the faster kept: one config measured 1.8 and 2.7 ms per iteration in two
        # builds on this machine (repeats within a build agree), and the loop's own cost is
        # the lower figure; the other carries interference.
        m = min((measure_iteration(cfg, iterations=iterations, repeats=3)
                 for _ in range(2)), key=lambda m: m["wall_s"])
        out.append({"wall_s": m["wall_s"], "cpu_s": m["cpu_s"],
                    "async": bool(jax.config.read("jax_cpu_enable_async_dispatch"))})
    print(json.dumps(out))


def loop_iterations(repeats: int) -> int:
    """Iterations per call at which a loop row is timed (a fused row also at LOOP_LONG_CALL
    times as many)."""
    return max(10, repeats)


def loop_rows_subprocess(base: dict, loop: str, dispatch: str, repeats: int,
                         settings, timeout: float = 900.0) -> list[dict]:
    """`_loop_rows_main` in a fresh Python (see `Profiler._profile_loops`): per (L, U, N) of
    `settings` (N iterations per call), {"wall_s", "cpu_s", "async"}. Raises RuntimeError with
    the child's error when it fails."""
    code = "from hrl.mapping.profile import _loop_rows_main; _loop_rows_main()"
    args = json.dumps({"base": base, "loop": loop, "dispatch": dispatch, "repeats": repeats,
                       "settings": [list(x) for x in settings]})
    return run_json_child(["-c", code, args], "the loop probe", timeout, env=_child_env(),
                          tail=1000)


def overlap_loop_config(base: dict, backend: str, capacity: int, fanout: int, width: int,
                        batch: int, executor: str, relaxed: bool):
    """The config of one loop an `overlap:loop` row times: `base` (a config dict) with the tree
    on host backend `backend` ("jax": the JAX tree on the second XLA CPU device, the learner
    on the first), `OVERLAP_LOOP` envs, actor steps and SGD steps per iteration, the agent's
    layers `width` wide, sampling `batch`, run by `executor` (sequential, or pipelined with
    process actors one iteration ahead, as validation runs it), relaxed (staleness 1) or
    strict."""
    from hrl.config import config_from_dict
    from hrl.replay.backends import format_for

    envs, steps, sgd = OVERLAP_LOOP
    data = json.loads(json.dumps(base))
    data["env"].update(num_envs=envs)
    _set_width(data, width)
    data["replay"].update(backend=backend, capacity=capacity, fanout=fanout,
                          fmt=format_for(backend, data["replay"]["fmt"]))
    if backend == "jax":
        data["placement"] = dict(SECOND_CPU_PLACEMENT)
    data["train"].update(rollout_length=steps, batch_size=batch, train_ratio=sgd / (steps * envs),
                         learning_starts=min(4 * batch, capacity), fused=False,
                         dependency="relaxed" if relaxed else "strict",
                         staleness=1 if relaxed else 0, total_env_steps=10**7,
                         executor=executor, actors="thread")
    if executor == "pipelined":
        data["train"].update(actors="process", pipeline_depth=1)
    data.setdefault("log", {})["progress"] = False
    return config_from_dict(data)


def thread_handoff_time(repeats: int) -> dict[str, float]:
    """`_median_time` of one hand-off of a no-op job to a ThreadPoolExecutor of one thread and
    back, timed HANDOFF_BATCH round trips at a time so the figure stands well above the
    timer's resolution."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        def round_trips():
            for _ in range(HANDOFF_BATCH):
                pool.submit(int).result()

        t = _median_time(round_trips, repeats)
    return {k: v / HANDOFF_BATCH for k, v in t.items()}


def _overlap_rows_main() -> None:
    """Entry of the subprocess `overlap_rows_subprocess` starts: argv[1] is a JSON {"base",
    "backend", "capacity", "fanout", "points", "executors", "repeats"}. Per (width, batch)
    point and executor, the runtime's own loop (`overlap_loop_config`) in strict and in
    relaxed dependency, timed in turns (`_interleaved_times`), and what relaxed saves per SGD
    step ("saved_s", the median of the paired differences). From the strict sequential loop's
    own timers: train's side and the replay's side (sample, update and insert) per SGD step.
    The row holds what was measured, not the overlap: `plan.replay_overlap_from_profile`
    forms it with the profile's one hand-off figure (`link:thread`), which the model takes
    back off (a hand-off timed here too measured 52 us where link:thread had 34, and the
    model's saving at the measured point was off by the difference). Prints one JSON line,
    a dict per point."""
    import sys

    from hrl.mapping.validate import WarmLoop
    from hrl.runtime.cpu_backend import start_cpu_backend

    a = json.loads(sys.argv[1])

    def config(width, batch, executor, relaxed):
        return overlap_loop_config(a["base"], a["backend"], a["capacity"], a["fanout"], width,
                                   batch, executor, relaxed)

    # the dispatch, threads and devices of a relaxed loop with this tree
    start_cpu_backend(config(*a["points"][0], "sequential", True))
    repeats = max(OVERLAP_MIN_REPEATS, a["repeats"])
    out = []
    for width, batch in a["points"]:
        row = {}
        for executor in a["executors"]:
            with (WarmLoop(config(width, batch, executor, False), OVERLAP_ITERATIONS) as strict,
                  WarmLoop(config(width, batch, executor, True), OVERLAP_ITERATIONS) as relaxed):
                sides = []  # the strict sequential loop's timers, per run: (train, replay)

                def strict_step(loop=strict.loop, step=strict.step):
                    before = dict(loop.timings)
                    state = step()
                    spent = {k: v - before[k] for k, v in loop.timings.items()}
                    sides.append((spent["train"], spent["sample"] + spent["update"]))
                    return state

                t, saved = _interleaved_times(
                    {"strict": strict_step if executor == "sequential" else strict.step,
                     "relaxed": relaxed.step}, repeats, paired=("strict", "relaxed"))
                per_step = OVERLAP_ITERATIONS * strict.sgd_per_iteration
                if executor == "sequential":  # medians: a run can stall (XLA's pool, 2 cores)
                    row["train_s"] = statistics.median(train for train, _ in sides) / per_step
                    row["replay_s"] = statistics.median(replay for _, replay in sides) / per_step
            prefix = "" if executor == "sequential" else f"{executor}_"
            row.update({f"{prefix}strict_s": t["strict"]["latency_s"] / per_step,
                        f"{prefix}relaxed_s": t["relaxed"]["latency_s"] / per_step,
                        f"{prefix}saved_s": saved["latency_s"] / per_step})
            if executor == "sequential":
                row.update({"relaxed_cpu_s": t["relaxed"]["cpu_s"] / per_step,
                            "relaxed_p10_s": t["relaxed"]["p10_s"] / per_step,
                            "relaxed_p90_s": t["relaxed"]["p90_s"] / per_step,
                            "saved_cpu_s": saved["cpu_s"] / per_step})
        out.append(row)
    print(json.dumps(out))


def _placed_call(device):
    """What `HostLoop._put` does to a call's arguments placed on `device` (None: unplaced,
    passed as they are)."""
    from jax.sharding import SingleDeviceSharding

    from hrl.runtime.loop import put_for_call

    if device is None:
        return lambda *args: args
    sharding = SingleDeviceSharding(device)
    return lambda *args: put_for_call(args, sharding)


def overlap_rows_subprocess(base: dict, backend: str, capacity: int, fanout: int, points,
                            repeats: int, executors=OVERLAP_EXECUTORS,
                            timeout: float = 1800.0) -> list[dict]:
    """`_overlap_rows_main` in a fresh Python (see `Profiler._profile_overlap`). Raises
    RuntimeError with the child's error when it fails."""
    if not executors or executors[0] != "sequential":
        raise ValueError(f"executors must start with 'sequential' (its timers give the two "
                         f"sides), got {list(executors)}")
    code = "from hrl.mapping.profile import _overlap_rows_main; _overlap_rows_main()"
    args = json.dumps({"base": base, "backend": backend, "capacity": int(capacity),
                       "fanout": int(fanout), "points": [list(p) for p in points],
                       "executors": list(executors), "repeats": int(repeats)})
    return run_json_child(["-c", code, args], "the relaxed-overlap probe", timeout,
                          env=_child_env(), tail=1000)


def _child_env(**extra) -> dict:
    """This process's environment for a child that imports hrl from this checkout, plus
    `extra`. The child sees no GPU (JAX_PLATFORMS=cpu): every child measures CPU loops and
    links, and on a GPU machine a child that starts the GPU backend takes its share of the
    GPU's memory beside this process's (on an H100 the profiler's children failed with
    CUDA_ERROR_OUT_OF_MEMORY, and the parent after them)."""
    import os

    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", **extra}


# ----------------------------------------------------------------------------- RTL cycles
RTL_CYCLE_CSVS = ("sim/cycles.csv",)  # written by sim/report_cycles.py
RTL_RESOURCE_CSVS = ("fpga_rtl/syn/resources.csv",)  # written by fpga_rtl/syn/run_syn.py
# written by sim/report_kernel_cycles.py: the XRT kernel's cycles per item against P
RTL_KERNEL_CSVS = ("fpga_rtl/kernel_cycles_fit.csv",)
RTL_TABLE_CALLS = ("rtl-cycles", "rtl-kernel-cycles", "rtl-resources")  # rows of the CSVs above


def find_repo_file(candidates) -> Path | None:
    root = Path(__file__).resolve().parents[2]
    for c in candidates:
        for base in (Path.cwd(), root):
            if (base / c).is_file():
                return base / c
    return None


def rtl_cycle_rows() -> list[dict]:
    """The RTL engineer's measured cycle tables (core, kernel) and yosys resource table as
    profile rows (`rtl-cycles`, `rtl-kernel-cycles`, `rtl-resources`), if they exist; they
    feed the FPGA model, not a fit."""
    out = []
    for call, names in zip(RTL_TABLE_CALLS, (RTL_CYCLE_CSVS, RTL_KERNEL_CSVS, RTL_RESOURCE_CSVS),
                           strict=True):
        path = find_repo_file(names)
        if path is None:
            continue
        with open(path) as f:
            out += [{"call": call, "placement": call, "mode": "table", "source": str(path), **r}
                    for r in csv.DictReader(f)]
    return out


# ----------------------------------------------------------------------------- files
def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (the VMs here change between Intel and AMD, and
    platform.processor() says only "x86_64"), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return py_platform.processor() or py_platform.machine()


def machine_info() -> dict:
    import os

    return {"python": py_platform.python_version(), "machine": py_platform.machine(),
            "processor": py_platform.processor(), "cpus": os.cpu_count(),
            "jax": jax.__version__, "jax_devices": [str(d) for d in jax.devices()],
            "cpu_model": cpu_name()}


def write_profile(rows: list[dict], run_dir: Path, cfg_dict: dict, skipped=(),
                  speed=(), rounds=()) -> tuple[Path, Path]:
    """profile.csv (timed rows) and profile.json (rows, config, machine, the reference
    workload's samples, `speed`: `Profiler.speed`, and each round's rows before they were
    merged, `rounds`: `Profiler.rounds`) in `run_dir`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    timed = [r for r in rows if not r["call"].startswith(("rtl-", "loop:"))]
    csv_path = run_dir / "profile.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(timed)
    json_path = run_dir / "profile.json"
    json_path.write_text(json.dumps({
        "format": "hrl-profile-1", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine_info(), "config": cfg_dict, "skipped": list(skipped),
        "speed_reference": list(speed), "rows": rows,
        **({"rounds": [list(r) for r in rounds]} if rounds else {}),
    }, indent=1, default=str))
    return csv_path, json_path


def update_profile(run_dir: Path, rows: list[dict], calls, skipped=()) -> tuple[Path, Path]:
    """Replace the rows of `calls` in the profile of `run_dir` with `rows` (`hrl profile
    --only`), keeping every other row, its config and machine; the update, with this
    machine's description, is listed under "updates" in profile.json."""
    data = load_profile(run_dir)
    calls = set(calls)
    kept = [r for r in data["rows"] if r["call"] not in calls]
    updates = data.get("updates", []) + [{
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "calls": sorted(calls),
        "machine": machine_info(), "skipped": list(skipped)}]
    # A refreshed row replaces the rounds' rows too: merging again keeps the new one.
    rounds = [[r for r in rows_ if r["call"] not in calls] for rows_ in data.get("rounds", [])]
    csv_path, json_path = write_profile(kept + rows, Path(run_dir), data["config"],
                                        data.get("skipped", []), data.get("speed_reference", []),
                                        rounds)
    new = json.loads(json_path.read_text())
    new.update(created=data.get("created", new["created"]), machine=data["machine"],
               updates=updates)
    json_path.write_text(json.dumps(new, indent=1, default=str))
    return csv_path, json_path


def load_profile(path: str | Path) -> dict:
    """A profile.json (or the run directory holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "profile.json"
    if not path.is_file():
        raise ValueError(f"profile {str(path)!r} does not exist; run `hrl profile CONFIG` first")
    data = json.loads(path.read_text())
    if data.get("format") != "hrl-profile-1":
        raise ValueError(f"{path} is not an hrl profile (format {data.get('format')!r})")
    return data
