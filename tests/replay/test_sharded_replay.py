"""The sharded replay against the single-tree reference.

The shards run under `jax.vmap(axis_name=...)` here (collectives need only a named axis, so one
CPU device suffices), and under `shard_map` over virtual CPU devices in a subprocess (the device
count must be set before JAX starts, and this process has already started it).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from hrl.replay.buffer import make_prioritized_replay
from hrl.replay.sharded import make_sharded_replay

AXIS = "shards"
ROOT = Path(__file__).resolve().parents[2]


def _split(x, d):
    return jax.tree.map(lambda a: a.reshape((d, a.shape[0] // d) + a.shape[1:]), x)


def _merge(x):
    return jax.tree.map(lambda a: np.asarray(a).reshape((-1,) + a.shape[2:]), x)


def _filled(d, shard_cap, fanout, fmt, weights="global", seed=0, rounds=2):
    """A single buffer and D shards holding the same items (global index = shard * C + slot)
    and the same priorities, written through each one's own `add` and `update` (random
    permutations with duplicates spread over the devices' slices: last wins)."""
    n = d * shard_cap
    single = make_prioritized_replay(n, fanout=fanout, fmt=fmt, weights=weights, impl="xla")
    sharded = make_sharded_replay(n, d, AXIS, fanout=fanout, fmt=fmt, weights=weights,
                                  impl="xla")
    rng = np.random.default_rng(seed)
    items = {"x": jnp.asarray(rng.normal(size=(n, 3)), jnp.float32),
             "a": jnp.asarray(rng.integers(0, 5, n), jnp.int32)}
    idx = rng.integers(0, n, (rounds, n)).astype(np.int32)  # duplicates included
    td = (rng.exponential(size=(rounds, n)) * (rng.random((rounds, n)) > 0.25)).astype(np.float32)

    @jax.jit
    def fill(items, idx, td):
        s = single.add(single.init(jax.tree.map(lambda a: a[0], items)), items)
        shards = jax.vmap(sharded.add, axis_name=AXIS)(
            sharded.init_stacked(jax.tree.map(lambda a: a[0], items)), _split(items, d)
        )
        for r in range(rounds):
            s = single.update(s, idx[r], td[r])
            shards = jax.vmap(sharded.update, axis_name=AXIS)(shards, _split(idx[r], d),
                                                              _split(td[r], d))
        return s, shards

    s, shards = fill(items, idx, td)
    return single, s, sharded, shards


def _sample_both(single, s, sharded, shards, keys, b, beta=0.6):
    """Samples of the single buffer and of the shards for each key (stacked)."""

    @jax.jit
    def both(s, shards, key):
        one = single.sample(s, key, b * sharded.num_shards, beta)
        many = jax.vmap(lambda st: sharded.sample(st, key, b, beta), axis_name=AXIS)(shards)
        return one, many

    return [both(s, shards, key) for key in keys]


@pytest.mark.parametrize(
    "d,shard_cap,fanout,weights",
    [(4, 16, 4, "global"), (3, 16, 4, "batch"), (8, 4, 4, "global"), (2, 256, 16, "global")],
)
def test_fixed_point_same_bits_same_indices_as_one_tree(d, shard_cap, fanout, weights):
    # Shard capacity a power of K: the shards are whole subtrees of one tree over the
    # concatenated leaves, so its descent and the sharded one must agree bit for bit.
    single, s, sharded, shards = _filled(d, shard_cap, fanout, "fixed", weights)
    leaves = np.concatenate([np.asarray(shards.tree.levels[-1][j]).reshape(-1)[:shard_cap]
                             for j in range(d)])
    single_leaves = np.asarray(s.tree.levels[-1]).reshape(-1)[: d * shard_cap]
    np.testing.assert_array_equal(leaves, single_leaves)
    assert float(shards.max_priority[0]) == float(s.max_priority)
    assert np.all(np.asarray(shards.max_priority) == np.asarray(shards.max_priority)[0])
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    for one, many in _sample_both(single, s, sharded, shards, keys, b=min(8, shard_cap)):
        np.testing.assert_array_equal(_merge(many.indices), np.asarray(one.indices))
        np.testing.assert_array_equal(_merge(many.probabilities), np.asarray(one.probabilities))
        np.testing.assert_array_equal(_merge(many.weights), np.asarray(one.weights))
        for name in ("x", "a"):
            np.testing.assert_array_equal(_merge(many.items[name]), np.asarray(one.items[name]))


def test_float32_uneven_shards_sample_the_single_tree_distribution():
    # Shard capacity not a power of K and several levels of shard roots: chi-square of
    # 40 960 draws against p_i / sum p over all items; zero-priority items never drawn.
    d, cap, fanout = 5, 10, 2
    sharded = make_sharded_replay(d * cap, d, AXIS, fanout=fanout, impl="xla")
    rng = np.random.default_rng(1)
    prio = rng.exponential(size=d * cap).astype(np.float32)
    prio[rng.random(d * cap) < 0.2] = 0.0
    items = {"i": jnp.arange(d * cap, dtype=jnp.int32)}
    shards = jax.vmap(sharded.add, axis_name=AXIS)(
        sharded.init_stacked({"i": jnp.int32(0)}), _split(items, d),
        _split(jnp.asarray(prio), d),
    )
    keys = jax.random.split(jax.random.PRNGKey(0), 512)
    draw = jax.vmap(lambda st, k: sharded.sample(st, k, 16).indices, in_axes=(0, None),
                    axis_name=AXIS)
    idx = np.asarray(jax.jit(jax.vmap(lambda k: draw(shards, k)))(keys)).reshape(-1)
    counts = np.bincount(idx, minlength=d * cap)
    assert counts[prio == 0].sum() == 0
    nz = prio > 0
    p = prio[nz].astype(np.float64) ** 0.6  # alpha
    _, pvalue = stats.chisquare(counts[nz], p / p.sum() * idx.size)
    assert pvalue > 1e-4, pvalue
    # The item returned is the item stored at the global index.
    sample = jax.vmap(lambda st: sharded.sample(st, keys[0], 16), axis_name=AXIS)(shards)
    np.testing.assert_array_equal(_merge(sample.items["i"]), _merge(sample.indices))


def test_inserts_stay_on_their_shard_and_agree_on_max_priority():
    d, cap = 4, 8
    sharded = make_sharded_replay(d * cap, d, AXIS, fanout=4, impl="xla")
    items = {"v": jnp.arange(d * 3, dtype=jnp.float32)}
    prio = jnp.asarray([1.0, 2.0, 9.0] + [1.0] * 9, jnp.float32)  # device 0 sees the largest
    shards = jax.vmap(sharded.add, axis_name=AXIS)(
        sharded.init_stacked({"v": jnp.float32(0)}), _split(items, d), _split(prio, d)
    )
    for j in range(d):
        got = np.asarray(shards.layout.unpack(shards.rows[j])["v"])
        np.testing.assert_array_equal(got[:3], np.arange(3 * j, 3 * j + 3))
        np.testing.assert_array_equal(got[3:], 0)
        assert int(shards.size[j]) == 3
    np.testing.assert_array_equal(np.asarray(shards.max_priority), 9.0)


def test_update_goes_to_the_owner_last_wins_and_drops_unowned():
    d, cap = 2, 4
    sharded = make_sharded_replay(d * cap, d, AXIS, fanout=2, impl="xla", alpha=1.0, eps=1e-6)
    items = {"v": jnp.zeros((d * 3,), jnp.float32)}  # 3 of 4 slots filled per shard
    shards = jax.vmap(sharded.add, axis_name=AXIS)(sharded.init_stacked({"v": jnp.float32(0)}),
                                                   _split(items, d))
    # Device 0 writes index 5 (shard 1) = 2, device 1 writes it again = 7: the later wins.
    # Index 3 is shard 0's unfilled slot and -1, 8 are nobody's: all ignored.
    idx = jnp.asarray([[5, 3, 0], [-1, 5, 8]], jnp.int32)
    td = jnp.asarray([[2.0, 4.0, 3.0], [6.0, 7.0, 5.0]], jnp.float32)
    shards = jax.vmap(sharded.update, axis_name=AXIS)(shards, idx, td)
    leaves = np.asarray(jax.vmap(lambda t: t.levels[-1].reshape(-1)[:cap])(shards.tree))
    np.testing.assert_allclose(leaves[0], [3.0, 1.0, 1.0, 0.0], rtol=1e-5)
    np.testing.assert_allclose(leaves[1], [1.0, 7.0, 1.0, 0.0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(shards.max_priority), 7.0, rtol=1e-5)


def test_local_sampling_draws_from_its_own_shard():
    d, cap = 4, 8
    sharded = make_sharded_replay(d * cap, d, AXIS, sampling="local", fanout=4, impl="xla")
    items = {"v": jnp.arange(d * cap, dtype=jnp.float32)}
    shards = jax.vmap(sharded.add, axis_name=AXIS)(sharded.init_stacked({"v": jnp.float32(0)}),
                                                   _split(items, d))
    keys = jax.random.split(jax.random.PRNGKey(0), d)
    out = jax.vmap(lambda st, k: sharded.sample(st, k, 6), axis_name=AXIS)(shards, keys)
    owner = np.asarray(out.indices) // cap
    np.testing.assert_array_equal(owner, np.arange(d)[:, None].repeat(6, 1))
    np.testing.assert_array_equal(np.asarray(out.items["v"]), np.asarray(out.indices))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(capacity=10, num_shards=3), "capacity must be a positive multiple of num_shards=3"),
        (dict(capacity=8, num_shards=0), "num_shards must be a positive int, got 0"),
        (dict(capacity=8, num_shards=2, sampling="both"), "sampling must be one of global"),
        (dict(capacity=32 * 16**7, num_shards=32, fmt="fixed"), "too deep for fixed"),
    ],
)
def test_bad_configuration_is_one_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_sharded_replay(**kwargs)


def test_collectives_need_the_axis():
    sharded = make_sharded_replay(8, 2, AXIS, impl="xla")
    state = sharded.init({"v": jnp.float32(0)})
    with pytest.raises(NameError, match=AXIS):
        sharded.sample(state, jax.random.PRNGKey(0), 2)


_SHARD_MAP_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import PartitionSpec as P
    sys.path.insert(0, sys.argv[1])
    import test_sharded_replay as t
    assert jax.device_count() == 4, jax.devices()
    single, s, sharded, shards = t._filled(4, 16, 4, "fixed")
    mesh = jax.make_mesh((4,), (t.AXIS,))
    key = jax.random.PRNGKey(7)
    def body(st):
        st = jax.tree.map(lambda x: x[0], st)
        out = sharded.sample(st, key, 8, 0.6)
        st = sharded.update(st, out.indices, out.probabilities * 3.0)
        return jax.tree.map(lambda x: x[None], (out, st))
    run = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(t.AXIS), out_specs=P(t.AXIS)))
    shards = jax.device_put(shards, jax.NamedSharding(mesh, P(t.AXIS)))
    out, after = run(shards)
    one = single.sample(s, key, 32, 0.6)
    s2 = single.update(s, one.indices, one.probabilities * 3.0)
    leaves = np.asarray(after.tree.levels[-1]).reshape(4, -1)[:, :16].reshape(-1)
    print(json.dumps({
        "devices": len({d.id for d in out.indices.sharding.device_set}),
        "indices": bool(np.array_equal(np.asarray(out.indices).reshape(-1), one.indices)),
        "weights": bool(np.array_equal(np.asarray(out.weights).reshape(-1), one.weights)),
        "items": bool(np.array_equal(np.asarray(out.items["x"]).reshape(-1, 3), one.items["x"])),
        "leaves": bool(np.array_equal(leaves, np.asarray(s2.tree.levels[-1]).reshape(-1)[:64])),
    }))
    """
)


def test_shard_map_on_four_devices_matches_the_single_tree():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _SHARD_MAP_SCRIPT, str(Path(__file__).parent)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"devices": 4, "indices": True, "weights": True, "items": True,
                      "leaves": True}


def test_bad_calls_are_one_clear_error():
    sharded = make_sharded_replay(8, 2, AXIS, impl="xla")
    shards = sharded.init_stacked({"v": jnp.float32(0)})
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        jax.vmap(lambda st: sharded.sample(st, key, 0), axis_name=AXIS)(shards)
    with pytest.raises(ValueError, match=r"update: indices \(3,\) and td_errors \(2,\)"):
        jax.vmap(lambda st: sharded.update(st, jnp.zeros(3, jnp.int32), jnp.zeros(2)),
                 axis_name=AXIS)(shards)
    with pytest.raises(ValueError, match="item leaf"):
        jax.vmap(lambda st: sharded.add(st, {"v": jnp.zeros((2, 3))}), axis_name=AXIS)(shards)


def test_empty_shards_sample_zero_weights_inside_jit():
    # As the single buffer inside jit: an empty buffer yields zero weights, not NaN.
    sharded = make_sharded_replay(8, 2, AXIS, fanout=2, impl="xla")
    shards = sharded.init_stacked({"v": jnp.float32(0)})
    out = jax.jit(jax.vmap(lambda st: sharded.sample(st, jax.random.PRNGKey(0), 2),
                           axis_name=AXIS))(shards)
    np.testing.assert_array_equal(np.asarray(out.weights), 0.0)
