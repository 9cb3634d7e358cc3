"""`replay.next_obs: next_slot` (hrl.replay.next_slot): next_obs read from the slot the same
env wrote n steps later, compared bit for bit with the twice-stored layout (`PrioritizedReplay`)
through episode ends (terminated and truncated, auto-reset), ring wrap-around and n-step
windows; the newest items, the side store's overflow, the config key and the refusals, and
where `replay.next_obs: auto` (the default) resolves to it."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tree_checks import copies_per_step

from hrl.config import ConfigError, ReplayConfig, config_from_dict
from hrl.replay import make_replay, native
from hrl.replay.buffer import PrioritizedReplay, make_prioritized_replay
from hrl.replay.factory import (
    next_obs_lost,
    next_obs_lost_warning,
    replay_bytes_per_item,
    resolve_next_obs,
)
from hrl.replay.next_slot import AHEAD, LOST, NextSlotReplay, make_next_slot_replay
from hrl.replay.nstep import nstep_init, nstep_push
from hrl.runtime.executor_choice import choose_executor
from hrl.runtime.executors import executor_class

OBS = (4, 3, 2)
GAMMA = 0.9


def actor_stream(m: int, n: int, steps: int, seed: int, p_end=(0.08, 0.05), float_obs=False):
    """`steps` env steps of M fake actors through the n-step window, as the runtime inserts
    them: (steps, M) transitions, the first n-1 pushes (filler) dropped. Episodes end by
    termination or truncation with probabilities `p_end`; the env auto-resets, so the next
    observation the actor sees is a fresh one while next_obs keeps the final one."""
    rng = np.random.default_rng(seed)

    def fresh():
        if float_obs:
            return rng.normal(size=(m, *OBS)).astype(np.float32)
        return rng.random((m, *OBS)) < 0.4

    obs = fresh()
    example = {"obs": obs[0], "action": np.int32(0), "reward": np.float32(0),
               "next_obs": obs[0], "discount": np.float32(0)}
    acc = nstep_init(example, n, m)
    push = jax.jit(nstep_push)
    out = []
    for t in range(steps + n - 1):
        action = rng.integers(0, 3, m).astype(np.int32)
        reward = rng.normal(size=m).astype(np.float32)
        final = fresh()
        u = rng.random(m)
        term = u < p_end[0]
        trunc = (u >= p_end[0]) & (u < p_end[0] + p_end[1])
        done = term | trunc
        acc, tr = push(acc, obs, action, reward, final, term, done, GAMMA)
        if t >= n - 1:
            out.append(jax.tree.map(np.asarray, tr))
        reset = fresh()
        obs = np.where(done.reshape(m, 1, 1, 1), reset, final)
    stacked = jax.tree.map(lambda *x: np.stack(x), *out)
    return stacked, jax.tree.map(lambda x: x[0, 0], stacked)


def batches(stream, per_add: int):
    """The (steps, M) stream flattened in the runtime's order and cut into adds."""
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), stream)
    total = flat["reward"].shape[0]
    for lo in range(0, total, per_add):
        yield jax.tree.map(lambda x, lo=lo: x[lo:lo + per_add], flat)


def assert_same(a, b, what=""):
    for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b),
                            strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype, what + jax.tree_util.keystr(path)
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8),
                                      err_msg=what + jax.tree_util.keystr(path))


def fake_td(items):
    """TD errors that depend on every sampled field, next_obs included."""
    nxt = jnp.asarray(items["next_obs"], jnp.float32).reshape(items["reward"].shape[0], -1)
    return items["reward"] + 0.1 * jnp.sum(nxt, axis=1) * items["discount"]


def run_both(stored, slot, stream, example, per_add, batch, seed):
    """The same adds, samples and updates on both buffers; every sample compared."""
    a, b = stored.init(example), slot.init(example)
    add_a, add_b = jax.jit(stored.add), jax.jit(slot.add)
    sample_a = jax.jit(stored.sample, static_argnums=2)
    sample_b = jax.jit(slot.sample, static_argnums=2)
    upd_a, upd_b = jax.jit(stored.update), jax.jit(slot.update)
    key = jax.random.PRNGKey(seed)
    sampled = 0
    for items in batches(stream, per_add):
        a, b = add_a(a, items), add_b(b, items)
        if int(a.size) < batch:
            continue
        key, k = jax.random.split(key)
        sa, sb = sample_a(a, k, batch, 0.5), sample_b(b, k, batch, 0.5)
        assert_same(sa, sb, "sample ")
        a, b = upd_a(a, sa.indices, fake_td(sa.items)), upd_b(b, sb.indices, fake_td(sb.items))
        sampled += 1
    assert sampled > 5
    return a, b


IMPLS = ["xla", pytest.param("native", marks=pytest.mark.skipif(
    not native.available(), reason="native kernels do not build"))]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize(("m", "n", "rollout", "cap"), [
    (3, 1, 2, 61),   # one-step returns, a capacity no multiple of the stride
    (2, 3, 4, 50),   # n-step windows cut by episode ends, the ring wrapping many times
    (1, 2, 8, 37),   # an add longer than the stride (successors inside the same add)
    (3, 4, 1, 40),   # adds shorter than the stride: links ahead into later adds
])
def test_samples_equal_the_twice_stored_layout_bit_for_bit(impl, share, m, n, rollout, cap):
    stream, example = actor_stream(m, n, steps=150, seed=cap)
    stored = make_prioritized_replay(cap, fanout=4, impl=impl)
    slot = make_next_slot_replay(make_prioritized_replay(cap, fanout=4, impl=impl), n * m,
                                 side_fraction=1.0, group=m if share else None)
    a, b = run_both(stored, slot, stream, example, rollout * m, 8, seed=m)
    assert int(b.lost) == 0
    assert_same(a.tree, b.inner.tree, "tree ")
    assert_same(a.min_tree, b.inner.min_tree, "min tree ")
    assert_same(a.items, slot.items(b), "items ")  # every slot rebuilt, next_obs included
    assert slot.side_slots == cap
    linked_ahead = int(np.sum(np.asarray(b.link) <= AHEAD))
    assert (linked_ahead > 0) == (share and n > 1)


# Half a minute; the twice-stored layout's equality is in make test.
@pytest.mark.long
def test_one_episode_end_takes_one_side_entry_where_n_steps_took_n():
    """Short episodes with 3-step windows: each episode end cuts the windows of the 3 items of
    its env before it. Linked ahead, they take one side entry between them, so a side store
    that overflowed without the links holds every episode end, and the samples stay the
    stored bits."""
    m, n, cap = 4, 3, 96
    stream, example = actor_stream(m, n, steps=200, seed=11, p_end=(0.1, 0.05))
    stored = make_prioritized_replay(cap, fanout=4, impl="xla")

    def slot(group):
        return make_next_slot_replay(make_prioritized_replay(cap, fanout=4, impl="xla"),
                                     n * m, side_fraction=0.25, group=group)

    alone_slot = slot(None)
    alone, add_alone = alone_slot.init(example), jax.jit(alone_slot.add)
    for items in batches(stream, 2 * m):
        alone = add_alone(alone, items)
    shared_slot = slot(m)
    a, shared = run_both(stored, shared_slot, stream, example, 2 * m, 8, seed=0)
    assert int(alone.lost) > 0 and int(shared.lost) == 0
    assert_same(a.items, shared_slot.items(shared), "items ")
    link = np.asarray(shared.link)
    assert np.sum(link <= AHEAD) > np.sum(link >= 0)  # more items linked ahead than entries


def test_chains_of_equal_next_obs_stay_one_hop_and_exact():
    """Every step ends every episode on the same final observation and resets to another:
    every item's next_obs has the same bits as its env's newer items', the worst case for
    links ahead. None links to an item that links on, and every slot rebuilds exactly, also
    with a side store small enough to overflow (dropped items and their links never sampled)."""
    m, n, steps = 2, 3, 60
    stream, example = actor_stream(m, n, steps=steps, seed=4, p_end=(1.0, 0.0))
    stream["next_obs"][:] = np.ones(OBS, bool)
    stream["obs"][:] = np.zeros(OBS, bool)
    for side_fraction in (1.0, 0.125):
        stored = make_prioritized_replay(32, fanout=4, impl="xla")
        slot = make_next_slot_replay(make_prioritized_replay(32, fanout=4, impl="xla"), n * m,
                                     side_fraction=side_fraction, group=m)
        a, b = stored.init(example), slot.init(example)
        add_a, add_b = jax.jit(stored.add), jax.jit(slot.add)
        for items in batches(stream, m):
            a, b = add_a(a, items), add_b(b, items)
        link = np.asarray(b.link)
        ahead = np.flatnonzero(link <= AHEAD)
        assert len(ahead)
        targets = (ahead + (AHEAD + 1 - link[ahead]) * m) % 32
        assert not np.any(link[targets] <= AHEAD)  # one hop
        kept = link != LOST
        assert (int(b.lost) > 0) == (side_fraction < 1)
        assert not np.any(link[targets[kept[ahead]]] == LOST)  # a dropped target takes its links
        rebuilt = np.asarray(slot.items(b)["next_obs"])
        np.testing.assert_array_equal(rebuilt[kept], np.asarray(a.items["next_obs"])[kept])
        s = slot.sample(b, jax.random.PRNGKey(2), 32, 0.4)
        assert kept[np.asarray(s.indices)].all()


def test_fixed_point_trees_and_batch_weights_match_too():
    """The tree format and the weights' normalisation are the inner buffer's business: the
    same bits with fixed-point priorities and per-batch IS weights (no min tree)."""
    stream, example = actor_stream(2, 2, steps=80, seed=7)
    kw = dict(fanout=4, impl="xla", fmt="fixed", weights="batch")
    stored = make_prioritized_replay(45, **kw)
    slot = make_next_slot_replay(make_prioritized_replay(45, **kw), 4, 1.0)
    a, b = run_both(stored, slot, stream, example, 6, 8, seed=3)
    assert_same(a.tree, b.inner.tree)
    assert b.inner.min_tree is None


def test_float_observations_compare_as_bits():
    """Floats are compared by their bits when a successor is linked (-0.0 and 0.0 differ,
    NaN matches itself), so rebuilt float next_obs are the stored bits too."""
    stream, example = actor_stream(2, 1, steps=60, seed=5, float_obs=True)
    obs = stream["obs"]
    obs[3, 0, 0, 0, 0], stream["next_obs"][2, 0, 0, 0, 0] = -0.0, 0.0  # step 2 -> 3, env 0
    obs[10, 1, 0, 0, 0] = stream["next_obs"][9, 1, 0, 0, 0] = np.nan
    stored = make_prioritized_replay(64, fanout=4, impl="xla")
    slot = make_next_slot_replay(make_prioritized_replay(64, fanout=4, impl="xla"), 2)
    a, b = run_both(stored, slot, stream, example, 4, 8, seed=1)
    assert_same(a.items, slot.items(b))


def test_truncated_step_keeps_its_final_obs_not_the_reset_one():
    """One actor: a time-limit truncation at step 1. Its item's next_obs is the episode's
    final observation (which the next slot does not hold: that is the reset one), read from
    the side store; bootstrapping is kept (discount > 0)."""
    stream, example = actor_stream(1, 1, steps=4, seed=0, p_end=(0.0, 0.0))
    final, reset = np.ones(OBS, bool), np.zeros(OBS, bool)
    stream["next_obs"][1, 0], stream["obs"][2, 0] = final, reset  # truncated at step 1
    slot = make_next_slot_replay(make_prioritized_replay(8, fanout=4, impl="xla"), 1, 1.0)
    state = slot.add(slot.init(example), jax.tree.map(lambda x: x[:, 0], stream))
    rebuilt = slot.items(state)["next_obs"]
    np.testing.assert_array_equal(rebuilt[1], final)
    assert int(state.link[1]) >= 0 and int(state.link[0]) == -1  # side entry vs successor
    np.testing.assert_array_equal(rebuilt[:3], stream["next_obs"][:3, 0])
    assert float(stream["discount"][1, 0]) > 0


def test_newest_items_are_sampled_with_their_true_next_obs():
    """The newest item of each env has no successor yet; it is sampled like any other
    (priorities as `PrioritizedReplay` gives them), its next_obs from the tail."""
    m = 3
    stream, example = actor_stream(m, 1, steps=10, seed=2)
    stored = make_prioritized_replay(64, fanout=4, impl="xla")
    slot = make_next_slot_replay(make_prioritized_replay(64, fanout=4, impl="xla"), m)
    a, b = stored.init(example), slot.init(example)
    add_a, add_b = jax.jit(stored.add), jax.jit(slot.add)
    for items in batches(stream, 2 * m):
        a, b = add_a(a, items), add_b(b, items)
    newest = np.arange(27, 30)
    low = np.arange(27)
    a = stored.update(a, low, np.zeros(27, np.float32))  # the newest M hold the mass
    b = slot.update(b, low, np.zeros(27, np.float32))
    sa = stored.sample(a, jax.random.PRNGKey(0), 16, 0.4)
    sb = slot.sample(b, jax.random.PRNGKey(0), 16, 0.4)
    assert set(np.asarray(sb.indices).tolist()) <= set(newest.tolist())
    assert_same(sa, sb)
    flat_next = stream["next_obs"].reshape(-1, *OBS)
    np.testing.assert_array_equal(np.asarray(sb.items["next_obs"]),
                                  flat_next[np.asarray(sb.indices)])


@pytest.mark.parametrize(("fmt", "weights"), [("float32", "global"), ("fixed", "batch")])
def test_side_store_overflow_drops_the_oldest_and_never_samples_it(fmt, weights):
    """Every step ends an episode, so every item needs a side entry; with a side store of a
    quarter of the buffer, older items are dropped: counted, priority 0, ignored by updates,
    never sampled; what is sampled is still the stored transition."""
    cap, m = 32, 2
    stream, example = actor_stream(m, 1, steps=40, seed=3, p_end=(0.5, 0.5))
    kw = dict(fanout=4, impl="xla", fmt=fmt, weights=weights)
    stored = make_prioritized_replay(cap, **kw)
    slot = make_next_slot_replay(make_prioritized_replay(cap, **kw), m, 0.25)
    a, b = stored.init(example), slot.init(example)
    add_a, add_b = jax.jit(stored.add), jax.jit(slot.add)
    for items in batches(stream, 4):
        a, b = add_a(a, items), add_b(b, items)
    lost = np.asarray(b.link) == LOST
    assert lost.any() and int(b.lost) >= int(lost.sum())
    assert next_obs_lost(b) == int(b.lost) and next_obs_lost(a) is None
    b = slot.update(b, np.arange(cap), np.ones(cap, np.float32))  # dropped ones stay 0
    s = slot.sample(b, jax.random.PRNGKey(1), 32, 0.4)
    idx = np.asarray(s.indices)
    assert not lost[idx].any()
    assert np.all(np.asarray(s.weights) > 0)  # a dropped item does not zero the min tree
    assert_same(s.items, jax.tree.map(lambda x: np.asarray(x)[idx], a.items))


def test_config_key_is_validated_and_other_buffers_refuse_next_slot():
    with pytest.raises(ConfigError, match=r"'replay.next_obs'.*'twice'"):
        ReplayConfig(next_obs="twice").validate("replay")
    with pytest.raises(ConfigError, match=r"'replay.next_obs'.*backend 'rtl'.*'stored'"):
        ReplayConfig(backend="rtl", fmt="fixed", next_obs="next_slot").validate("replay")
    with pytest.raises(ConfigError, match=r"'replay.next_obs_side'"):
        ReplayConfig(next_obs="next_slot", next_obs_side=0.0).validate("replay")
    cfg = ReplayConfig(capacity=64, next_obs="next_slot")
    with pytest.raises(ValueError, match=r"'replay.next_obs'.*train.devices > 1"):
        make_replay(cfg, devices=2, num_envs=4)
    with pytest.raises(ValueError, match=r"'replay.next_obs'.*backend 'jax_host'"):
        make_replay(dataclasses.replace(cfg, backend="jax_host"), num_envs=4)
    with pytest.raises(ValueError, match=r"'env.num_envs'"):
        make_replay(cfg)
    assert isinstance(make_replay(cfg, num_envs=4), NextSlotReplay)


def test_a_stride_the_ring_cannot_hold_names_replay_capacity():
    """The stride (n_step * num_envs) is checked against the ring once, by NextSlotReplay, and
    reaches a config's caller through make_replay naming replay.capacity."""
    cfg = ReplayConfig(capacity=64, n_step=4, next_obs="next_slot")
    with pytest.raises(ValueError, match=r"'replay.capacity'.*n_step \* num_envs = 64 slots, "
                                         r"got 64"):
        make_replay(cfg, num_envs=16)
    assert make_replay(dataclasses.replace(cfg, capacity=65), num_envs=16).stride == 64


def _resolved(replay=None, env=None, train=None):
    """`replay.next_obs` as a run of this config resolves it (from the config alone)."""
    cfg = config_from_dict({"env": {"name": "gymnax:CartPole-v1", "num_envs": 4, **(env or {})},
                            "replay": {"capacity": 1000, **(replay or {})},
                            "train": {"batch_size": 8, "learning_starts": 8, **(train or {})}})
    return resolve_next_obs(cfg.replay, devices=cfg.train.devices, num_envs=cfg.env.num_envs,
                            in_order=executor_class(choose_executor(cfg)).inserts_in_order,
                            rollout_length=cfg.train.rollout_length)


@pytest.mark.parametrize(("replay", "env", "train", "expected"), [
    ({}, {}, {}, "next_slot"),  # the default: a JAX env runs fused
    ({}, {}, {"executor": "sequential"}, "next_slot"),
    ({}, {}, {"executor": "pipelined"}, "next_slot"),
    ({}, {"name": "gymnasium:CartPole-v1"}, {}, "next_slot"),  # auto -> sequential
    ({"n_step": 3}, {}, {}, "next_slot"),
    # An add of 4 envs x rollout 2 = 8 items beside the stride of 3 x 4: 20 slots, and a side
    # store of 8 entries (0.4 x 20), or fewer slots, or a smaller side store.
    ({"capacity": 20, "n_step": 3, "next_obs_side": 0.4}, {}, {"rollout_length": 2},
     "next_slot"),
    ({"capacity": 19, "n_step": 3, "next_obs_side": 0.5}, {}, {"rollout_length": 2}, "stored"),
    ({"capacity": 20, "n_step": 3, "next_obs_side": 0.35}, {}, {"rollout_length": 2}, "stored"),
    ({}, {}, {"executor": "distributed"}, "stored"),  # Ray workers' batches interleave
    ({}, {"num_envs": 8}, {"devices": 2}, "stored"),  # the sharded replay
    ({"backend": "jax_host"}, {}, {}, "stored"),
    ({"backend": "native_host"}, {}, {}, "stored"),
    ({"backend": "opencl"}, {}, {}, "stored"),
    ({"backend": "rtl", "fmt": "fixed"}, {}, {}, "stored"),
    ({"next_obs": "stored"}, {}, {}, "stored"),  # explicit values stand
    ({"next_obs": "next_slot"}, {}, {"executor": "distributed"}, "next_slot"),
])
def test_auto_resolves_to_next_slot_only_where_the_actors_insert_in_order(
        replay, env, train, expected):
    assert _resolved(replay, env, train) == expected


def test_make_replay_builds_what_auto_resolves_to():
    """`auto` (the default) in `make_replay`: next_slot for an in-order executor, the rows
    with next_obs for a buffer no hrl executor fills (its insert order is unknown)."""
    cfg = ReplayConfig(capacity=64)
    assert cfg.next_obs == "auto"
    known = dict(num_envs=4, rollout_length=2)
    assert isinstance(make_replay(cfg, **known, in_order=True), NextSlotReplay)
    for call in (known, dict(known, in_order=False), dict(num_envs=4, in_order=True),
                 dict(num_envs=64, rollout_length=1, in_order=True),
                 dict(rollout_length=1, in_order=True)):
        assert isinstance(make_replay(cfg, **call), PrioritizedReplay), call
    assert resolve_next_obs(cfg, devices=1, num_envs=4, rollout_length=1,
                            in_order=False) == "stored"


def test_the_overflow_warning_names_the_remedies_and_only_when_lost_grows():
    assert next_obs_lost_warning(None, None, 256) is None  # a buffer with next_obs in its rows
    assert next_obs_lost_warning(3, 3, 512) is None
    line = next_obs_lost_warning(5, 3, 768)
    assert "\n" not in line and "dropped 2 items" in line and "5 in all by env step 768" in line
    assert "replay.next_obs_side" in line and "replay.next_obs: stored" in line


def test_bytes_per_transition_drop_by_about_the_observation():
    """MinAtar-like bool observations (10x10x4 = 400 B): the row loses next_obs."""
    obs = np.zeros((10, 10, 4), bool)
    example = {"obs": obs, "action": np.int32(0), "reward": np.float32(0), "next_obs": obs,
               "discount": np.float32(0)}
    stored = replay_bytes_per_item(make_prioritized_replay(1000), example)
    slot = replay_bytes_per_item(
        make_next_slot_replay(make_prioritized_replay(1000), 4, 0.25), example)
    assert stored == 812 and slot == 412 + 5 + 100


@pytest.mark.parametrize("impl", IMPLS)
def test_a_jitted_sample_update_step_copies_neither_trees_nor_rows(impl):
    """As for `PrioritizedReplay` (tests/replay/test_buffer.py): a donated state's trees, rows
    and links are read and written in place, no O(N) copy per step, with next_obs read."""
    obs = np.zeros((4,), np.float32)
    example = {"obs": obs, "action": np.int32(0), "reward": np.float32(0), "next_obs": obs,
               "discount": np.float32(0)}
    slot = make_next_slot_replay(make_prioritized_replay(4096, fanout=16, impl=impl), 8,
                                 group=4)
    state = slot.init(example)
    copies = copies_per_step(slot, state, "next_obs", (r"f32\[256,16\]", r"u32\[4096,\d+\]",
                                                       r"s32\[4096\]", r"pred\[4096\]"))
    assert not copies, f"{len(copies)} O(N) copies per step: {copies}"
