"""Timers of the five primitives (env, infer, train, sample/update/insert) at one setting.

Every probe takes the `Profiler` it records into (`prof.target`, `prof.between`,
`prof.rows`) and appends one `ProfileRow` per timed call: `dispatched` (one jitted call
from Python, waited for, made as the host loop makes it, timed between the loop's other
calls) and, where the fused loop can run the call, `fused` (the call repeated inside one
jitted lax.scan, per call). Host replay backends (OpenCL, the RTL in simulation) are timed
through the same host calls the runtime makes (mode `host`). Cost: one compilation per
call and size, then `repeats` timed calls.
"""

# Every timing lambda below is called inside the loop iteration that defines it, so binding
# the loop variables late (ruff B023) cannot pick up a later iteration's values.
# ruff: noqa: B023

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl.envs import make_env
from hrl.mapping.profile.grids import Setting
from hrl.mapping.profile.timers import copy_tree, median_time, scan_time
from hrl.replay.backends import BackendUnavailableError, format_for, make_backend
from hrl.replay.host_buffer import make_host_replay
from hrl.runtime.executors import HostTrain


def profile_env(prof, placement, device, s: Setting, repeats: int, scan: int,
                env_name: str | None = None) -> None:
    """The env's step at `s.num_envs`: dispatched and fused on `device` for a JAX env; a host
    env (gymnasium) only dispatched, on the CPU. `env_name`: another env than the config's
    (a grid's "envs"; made without the config's env kwargs), its rows keyed by its name."""
    t_ = prof.target
    other = env_name is not None and env_name != t_.env_name
    name = env_name if other else t_.env_name
    env = make_env(name, s.num_envs, **({} if other else t_.cfg.env.kwargs))
    tag = {"env_name": name} if other else {}
    if not env.spec.is_jax:
        if placement != "cpu":
            return
        state, _ = env.reset(jax.random.PRNGKey(0))
        actions = t_.random_actions(s.num_envs, np.random.default_rng(0), env.spec)
        t = median_time(lambda: env.step(state, actions, None)[1].reward, repeats,
                        prof.between("env", None, s))
        prof.rows.append(t_.row("env", "cpu", "dispatched", s, "env", t, repeats, **tag))
        return
    with jax.default_device(device):
        state, _ = env.reset(jax.random.PRNGKey(0))
        actions = jnp.asarray(t_.random_actions(s.num_envs, np.random.default_rng(0),
                                                  env.spec))
        step = jax.jit(env.step)
        key = jax.random.PRNGKey(2)
        t = median_time(lambda: step(state, actions, key), repeats,
                        prof.between("env", device, s))
        prof.rows.append(t_.row("env", placement, "dispatched", s, "env", t, repeats, **tag))
        t = scan_time(lambda c, k: env.step(c, actions, k)[0], state, scan, repeats)
        prof.rows.append(t_.row("env", f"{placement}-fused", "fused", s, "env", t,
                                repeats, **tag))


def profile_learner(prof, placement, device, s: Setting, repeats: int, scan: int,
                    calls=("infer", "train")) -> None:
    """infer at `s.num_envs` and the SGD step at `s.batch`, network `s.width` wide, on
    `device`: dispatched (train packed, as the host loop calls it: `HostTrain`) and fused."""
    t_ = prof.target
    rng = np.random.default_rng(0)
    agent = t_.agent(s.width)
    prims = t_.prims(agent, t_.replay(max(s.batch, 16), 16), s.batch, s.num_envs)
    with jax.default_device(device):
        state = agent.init(jax.random.PRNGKey(0))
        if "infer" in calls:
            obs = jnp.asarray(rng.standard_normal((s.num_envs, *t_.spec.obs_shape)),
                              jnp.float32)
            carry = agent.init_carry(s.num_envs)
            start = jnp.zeros((s.num_envs,), bool)
            step0 = jnp.int32(0)
            infer = jax.jit(prims.infer)
            key = jax.random.PRNGKey(3)
            t = median_time(lambda: infer(state, carry, obs, key, step0, start), repeats,
                            prof.between("infer", device, s))
            prof.rows.append(t_.row("infer", placement, "dispatched", s, "infer", t, repeats))

            def infer_step(o, k):  # feed actions back so the scan cannot hoist the call
                _, a = prims.infer(state, carry, o, k, step0, start)
                return o + 1e-6 * jnp.sum(jnp.asarray(a, jnp.float32))

            t = scan_time(infer_step, obs, scan, repeats)
            prof.rows.append(t_.row("infer", f"{placement}-fused", "fused", s, "infer", t,
                                    repeats))
        if "train" in calls:
            batch = t_.random_batch(s.batch, rng)
            weights = jnp.ones((s.batch,), jnp.float32)
            # Packed, as the host loop calls it: five arrays back, not the agent's every leaf.
            host_train = HostTrain.build(prims.train, state, batch, weights)
            packed = host_train.pack_agent(state)

            def train_call():
                nonlocal packed
                packed, *rest = host_train.step(packed, batch, weights)
                return packed, rest

            t = median_time(train_call, repeats, prof.between("train", device, s))
            prof.rows.append(t_.row("train", placement, "dispatched", s, "train", t, repeats))
            t = scan_time(lambda st, k: prims.train(st, batch, weights)[0], state, scan,
                          repeats)
            prof.rows.append(t_.row("train", f"{placement}-fused", "fused", s, "train", t,
                                    repeats))


def profile_replay_jax(prof, placement, device, s: Setting, repeats: int, scan: int,
                       batches, num_envs, fused: bool = True, impl: str = "auto") -> None:
    """sample / update / insert of the JAX buffer on `device`, its tree kernels `impl`
    (`replay.impl`), dispatched as the host loop calls them (update and insert on a donated
    state) and (if `fused`) inside a scan as the fused loop does; sample and update at every
    batch of `batches`, insert at every env count of `num_envs`."""
    t_ = prof.target
    rng = np.random.default_rng(0)
    replay = t_.replay(s.capacity, s.fanout, impl)
    state = t_.filled_replay(replay, device, rng)
    agent = t_.agent(s.width)
    beta = jnp.float32(0.4)
    with jax.default_device(device):
        for b in batches:
            sb = dataclasses.replace(s, batch=b)
            prims = t_.prims(agent, replay, b, 1)
            sample = jax.jit(prims.sample)
            key = jax.random.PRNGKey(4)
            t = median_time(lambda: sample(state, key, beta), repeats,
                            prof.between("sample", device, sb))
            prof.rows.append(t_.row("sample", placement, "dispatched", sb, "sample", t,
                                    repeats))
            if fused:  # consume the indices so the scan keeps every call
                t = scan_time(lambda c, k, p=prims: c + jnp.sum(
                    p.sample(state, k, beta).indices), jnp.int32(0), scan, repeats)
                prof.rows.append(t_.row("sample", f"{placement}-fused", "fused", sb,
                                        "sample", t, repeats))
            idx = jnp.asarray(rng.integers(0, s.capacity, b).astype(np.int32))
            td = jnp.asarray(rng.uniform(0, 2, b).astype(np.float32))
            # Donated, as the host loop calls it: written in place, never copied.
            update = jax.jit(prims.update, donate_argnums=0)
            owned = copy_tree(state)

            def update_call():
                nonlocal owned
                owned = update(owned, idx, td)
                return owned

            t = median_time(update_call, repeats, prof.between("update", device, sb))
            prof.rows.append(t_.row("update", placement, "dispatched", sb, "update", t,
                                    repeats))
            if fused:
                t = scan_time(lambda st, k, p=prims: p.update(
                    st, idx, td * jax.random.uniform(k)), state, scan, repeats)
                prof.rows.append(t_.row("update", f"{placement}-fused", "fused", sb,
                                        "update", t, repeats))
        prims = t_.prims(agent, replay, batches[0], 1)
        for m in num_envs:
            sm = dataclasses.replace(s, num_envs=m)
            items = {k: jnp.zeros((m, *v.shape), v.dtype) for k, v in t_.example.items()}
            insert = jax.jit(prims.insert, donate_argnums=0)  # as the host loop does
            owned = copy_tree(state)

            def insert_call():
                nonlocal owned
                owned = insert(owned, items)
                return owned

            t = median_time(insert_call, repeats, prof.between("insert", device, sm))
            prof.rows.append(t_.row("insert", placement, "dispatched", sm, "insert", t,
                                    repeats))
            if fused:
                t = scan_time(lambda st, k: prims.insert(st, items), state, scan, repeats)
                prof.rows.append(t_.row("insert", f"{placement}-fused", "fused", sm,
                                        "insert", t, repeats))


def host_backends(prof) -> list[tuple[str, str]]:
    """(placement name, replay.backend value) for each host replay backend of
    `prof.backends` usable here; each one that is not goes to `prof.skipped` with why."""
    out = []
    for backend, place in (("opencl", "pocl"), ("rtl", "rtl")):
        if backend not in prof.backends:
            continue
        try:
            tree = make_backend(backend, 16, 4, format_for(backend, prof.target.cfg.replay.fmt))
        except (BackendUnavailableError, ValueError, TypeError, RuntimeError) as err:
            prof.skipped.append(f"{backend}: {err}")
            continue
        if backend == "opencl":
            device = getattr(tree, "device", None)
            name = str(getattr(getattr(device, "platform", None), "name", ""))
            place = "pocl" if ("Portable" in name or not name) else "opencl"
        out.append((place, backend))
    return out


def filled_host_replay(target, backend: str, capacity: int, fanout: int, agent, batch: int):
    """The runtime's host replay (`hrl.replay.host_buffer`) on `backend`, every slot
    written with random priorities, and the primitives the host loop calls on it.
    Returns (replay, primitives, state). O(capacity)."""

    rng = np.random.default_rng(0)
    rcfg = dataclasses.replace(target.cfg.replay, backend=backend, capacity=capacity,
                               fanout=fanout, fmt=format_for(backend, target.cfg.replay.fmt))
    replay = make_host_replay(rcfg)
    state = replay.init(target.example)
    prims = target.prims(agent, replay, batch, 1)
    chunk = min(capacity, 1 << 14)
    for start in range(0, capacity, chunk):
        m = min(chunk, capacity - start)
        items = {k: np.zeros((m, *v.shape), v.dtype) for k, v in target.example.items()}
        state = prims.insert(state, items)
        state = prims.update(state, np.arange(start, start + m, dtype=np.int32),
                             rng.uniform(0.01, 2.0, m).astype(np.float32))
    return replay, prims, state


def profile_backend(prof, name, backend, s: Setting, repeats: int, batches, num_envs) -> None:
    """sample / update / insert of the runtime's host replay on `backend` (placement
    `name`), through the same primitive functions the host loop calls."""
    t_ = prof.target
    rng = np.random.default_rng(0)
    agent = t_.agent(s.width)
    replay, prims, state = filled_host_replay(t_, backend, s.capacity, s.fanout, agent,
                                              batches[0])
    beta = np.float32(0.4)
    for b in batches:
        sb = dataclasses.replace(s, batch=b)
        p = t_.prims(agent, replay, b, 1)
        key = jax.random.PRNGKey(5)
        t = median_time(lambda p=p: p.sample(state, key, beta).indices, repeats,
                        prof.between("sample", None, sb))
        prof.rows.append(t_.row("sample", name, "host", sb, "sample", t, repeats))
        idx = rng.integers(0, s.capacity, b).astype(np.int32)
        td = rng.uniform(0.01, 2, b).astype(np.float32)
        t = median_time(lambda: (p.update(state, idx, td), replay.backend.total())[1],
                        repeats, prof.between("update", None, sb))
        prof.rows.append(t_.row("update", name, "host", sb, "update", t, repeats))
    for m in num_envs:
        sm = dataclasses.replace(s, num_envs=m)
        items = {k: np.zeros((m, *v.shape), v.dtype) for k, v in t_.example.items()}
        t = median_time(lambda: (prims.insert(state, items), replay.backend.total())[1],
                        repeats, prof.between("insert", None, sm))
        prof.rows.append(t_.row("insert", name, "host", sm, "insert", t, repeats))
