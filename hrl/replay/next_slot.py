"""`next_obs` stored once: a transition's next observation read from the slot written after it.

`PrioritizedReplay` stores each transition {'obs', 'next_obs', ...} as one row, so every
observation is stored twice (as one item's `next_obs` and the next item's `obs`). The actors
insert their transitions in a fixed order, M envs per env step, so the item that starts
`stride` = n_step * M inserts after item i (at slot (i + stride) % N) is, unless an episode
ended inside item i's n-step window, the one whose `obs` is item i's `next_obs`
(`hrl.replay.nstep`: `next_obs` of a window with no episode end is the obs of step t + n).
`NextSlotReplay` keeps the rows without `next_obs` and rebuilds it at sample time from

* the tail: the `next_obs` of the newest `stride` items, whose successors are not written yet
  (so these items are sampled as soon as they are added, as `PrioritizedReplay` samples them,
  and no priority is held back);
* the successor's row, when the successor's `obs` has the same bits as the item's `next_obs`
  (checked when the successor is written, bit for bit, so the rule never guesses: any insert
  order is exact, the actors' order only makes the side store small);
* the side store: a ring of S observations for the items whose `next_obs` differs from their
  successor's `obs`: an episode end in the window (the final observation of a terminated or
  truncated episode, where the next slot holds the auto-reset one), or an insert order that
  breaks the stride;
* another item's: with n-step windows, one episode end cuts the windows of up to n items of
  its env (`group` = M inserts apart), and all of them end on the same final observation. An
  item whose `next_obs` has the same bits as that of the item j * group inserts newer (j < n,
  the newest such) links to it (`link` = AHEAD - j + 1, "ahead by j") instead of taking a side
  entry, so an episode end costs one side entry, not n. One hop only: an item another links to
  never links on itself (`target`), so it keeps a side entry or its successor.

Guarantee: while no side entry is overwritten whose item is still in the buffer (`lost` = 0),
`init / add / sample / update` give the numbers `PrioritizedReplay` gives on the same calls,
bit for bit: the same trees, indices, weights and items, `next_obs` included (tests/replay/
test_next_slot.py compares them through wrap-around and n-step windows). The side store is a
ring of S = `side_fraction` * N entries; when more than S items in the buffer need one, the
oldest such item is dropped: its priority becomes 0 (+inf in the min tree), later updates of
it are ignored, so it is never sampled again, and `lost` counts it. Then the sampling
distribution differs from `PrioritizedReplay`'s; a run's summary reports `lost`.

When an item is dropped, so are the items that link ahead to it.

Memory per item: the row without `next_obs` + 5 bytes (`link`, `target`) + `side_fraction` of
one observation. Costs over `PrioritizedReplay`: `add` O(n M obs) more (the bit comparisons
with the successor and the n - 1 newer items of the env, the side writes) plus, only when an
item is dropped, one tree update of n M leaves; `sample` one more gather of B rows (the
successors'), of 2 B links and of B side and tail entries; `update` one gather of B links.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from hrl.replay.buffer import (
    PrioritizedReplay,
    ReplayState,
    Sample,
    _is_concrete,
    check_indices_filled,
    check_td_finite,
)
from hrl.replay.rows import RowLayout

LOST = -2  # `link` of an item whose side entry was overwritten: never sampled again
SUCCESSOR = -1  # `link` of an item whose next_obs is the obs of slot (i + stride) % N
AHEAD = -3  # `link` AHEAD - (j - 1): next_obs is that of slot (i + j * group) % N, j >= 1


@struct.dataclass
class NextSlotState:
    inner: ReplayState  # rows without next_obs, the trees and the ring's bookkeeping
    tail: jax.Array  # (stride, *obs): next_obs of the newest `stride` items, oldest first
    side: jax.Array  # (S, *obs): next_obs of items whose successor's obs differs
    link: jax.Array  # int32 (N,): SUCCESSOR, a side entry, AHEAD - (j - 1), or LOST
    target: jax.Array  # bool (N,): an older item links ahead to this one (it must not link on)
    side_owner: jax.Array  # int32 (S,): the slot whose item an entry holds (-1: none yet)
    side_pos: jax.Array  # int32: next side entry to write
    lost: jax.Array  # int32: items dropped because the side store overflowed
    layout: RowLayout = struct.field(pytree_node=False)  # the whole transition's layout


def _same_bits(a, b):
    """(M,) bool: item k of `a` and `b` (leading axis M) hold the same bits. Floats compare
    as their bit patterns (so -0 != 0 and a NaN equals itself), never as values."""
    if jnp.issubdtype(a.dtype, jnp.floating):
        width = {2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}[a.dtype.itemsize]
        a, b = lax.bitcast_convert_type(a, width), lax.bitcast_convert_type(b, width)
    eq = a == b
    return jnp.all(eq.reshape(eq.shape[0], -1), axis=1)


def side_entries(capacity: int, side_fraction: float) -> int:
    """S, the side store's entries for a buffer of `capacity` slots (at least one)."""
    return max(1, int(side_fraction * capacity))


def takes_add(capacity: int, stride: int, side_fraction: float, m: int) -> bool:
    """Whether a `NextSlotReplay` of these settings takes `m` items in one add: the add and
    the stride fit in the ring (m + stride <= capacity) and the side store could hold every
    one of them (m <= S). O(1)."""
    return m + stride <= capacity and m <= side_entries(capacity, side_fraction)


@dataclasses.dataclass(frozen=True)
class NextSlotReplay:
    """`PrioritizedReplay` (`inner`) over rows without `next_obs`, plus the tail, the side
    store and the links that rebuild it (see the module docstring). Items must be dicts with
    'obs' and 'next_obs' of one shape and dtype."""

    inner: PrioritizedReplay
    stride: int  # inserts between an item and the one whose obs is its next_obs (n_step * M)
    side_fraction: float = 0.25  # side store entries per buffer slot
    # Inserts between an item and the next one of its env (M), for the links ahead; None: none
    # (each item whose next_obs is not its successor's obs takes a side entry).
    group: int | None = None

    def __post_init__(self):
        if not isinstance(self.stride, int) or self.stride < 1:
            raise ValueError(f"next_slot stride (n_step * num_envs) must be a positive int, "
                             f"got {self.stride!r}")
        if self.group is not None and (not isinstance(self.group, int) or self.group < 1):
            raise ValueError(f"next_slot group (num_envs) must be a positive int or None, "
                             f"got {self.group!r}")
        if self.stride >= self.capacity:  # the one check of the stride against the ring
            raise ValueError(f"config key 'replay.capacity': replay.next_obs 'next_slot' needs "
                             f"more than n_step * num_envs = {self.stride} slots, got "
                             f"{self.capacity}")
        if not 0.0 < self.side_fraction <= 1.0:
            raise ValueError(f"next_slot side_fraction must be in (0, 1], got "
                             f"{self.side_fraction!r}")

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    @property
    def side_slots(self) -> int:
        """S, the side store's entries (at least one)."""
        return side_entries(self.capacity, self.side_fraction)

    @property
    def reach(self) -> int:
        """J, the most env steps an item links ahead: the newer items of its env whose next_obs
        is still in the tail when it leaves it ((stride - 1) // group; 0 without a group)."""
        return 0 if self.group is None else (self.stride - 1) // self.group

    @property
    def kernels(self):
        return self.inner.kernels

    def bytes_per_item(self, example_item) -> float:
        """Replay memory one item costs: its row without next_obs, its link, and its share
        of the side store (the tail, `stride` observations, is not counted)."""
        obs = np.asarray(example_item["obs"])
        rows = RowLayout.of(_without_next(example_item)).stored_bytes
        return rows + 5 + self.side_slots / self.capacity * obs.nbytes

    # ------------------------------------------------------------------ state
    def init(self, example_item) -> NextSlotState:
        """An empty buffer for items like `example_item` (a dict with 'obs' and 'next_obs' of
        one shape and dtype; ValueError otherwise). O(N + S obs)."""
        if not isinstance(example_item, dict) or not {"obs", "next_obs"} <= set(example_item):
            raise ValueError("replay.next_obs 'next_slot' needs items that are dicts with "
                             "'obs' and 'next_obs'")
        obs = jnp.asarray(example_item["obs"])
        nxt = jnp.asarray(example_item["next_obs"])
        if obs.shape != nxt.shape or obs.dtype != nxt.dtype:
            raise ValueError(f"replay.next_obs 'next_slot': obs {obs.shape} {obs.dtype} and "
                             f"next_obs {nxt.shape} {nxt.dtype} must match")
        return NextSlotState(
            inner=self.inner.init(_without_next(example_item)),
            tail=jnp.zeros((self.stride, *obs.shape), obs.dtype),
            side=jnp.zeros((self.side_slots, *obs.shape), obs.dtype),
            link=jnp.full((self.capacity,), SUCCESSOR, jnp.int32),
            target=jnp.zeros((self.capacity,), bool),
            side_owner=jnp.full((self.side_slots,), -1, jnp.int32),
            side_pos=jnp.int32(0),
            lost=jnp.int32(0),
            layout=RowLayout.of(example_item),
        )

    def size(self, state: NextSlotState):
        """Filled slots (int32 scalar). O(1)."""
        return state.inner.size

    # ------------------------------------------------------------------ operations
    def add(self, state: NextSlotState, items, priorities=None) -> NextSlotState:
        """`PrioritizedReplay.add` of the same items: the rows without next_obs go to the
        inner buffer; the items `stride` inserts older leave the tail, linked to their
        successor or, when the bits differ, ahead to a newer item of their env with the same
        next_obs bits, else to a new side entry. Needs M + stride <= N and M <= S
        (ValueError). O(n M obs) plus the inner add."""
        m = self.inner.check_items(state.layout, items)
        if m == 0:
            return state.replace(inner=self.inner.add(state.inner, _without_next(items),
                                                       priorities))
        if not takes_add(self.capacity, self.stride, self.side_fraction, m):
            raise ValueError(f"replay.next_obs 'next_slot': adding {m} items at once needs "
                             f"replay.capacity >= {m + self.stride} and a side store of >= {m} "
                             f"entries (replay.next_obs_side * capacity); have "
                             f"{self.capacity} and {self.side_slots}")
        big_n, t, s, g = self.capacity, self.stride, self.side_slots, self.group
        obs = jnp.asarray(items["obs"])
        nxt = jnp.asarray(items["next_obs"], obs.dtype)
        inner, k = state.inner, jnp.arange(m, dtype=jnp.int32)
        # Item k's predecessor: the item inserted `stride` before it (it may be in this batch).
        # `everything` holds the next_obs of every item not yet resolved, oldest first: the
        # predecessors leave it now, the newer items of their envs are still in it.
        everything = jnp.concatenate([state.tail, nxt], axis=0)
        pred_next, tail = everything[:m], everything[m:]
        pred_exists = inner.added - t + k >= 0
        pred_slot = (inner.insert_pos - t + k) % big_n
        cut = pred_exists & ~_same_bits(pred_next, obs)
        # A cut item links ahead to the newest of its env's next `reach` items with the same
        # next_obs bits, unless an older item links to it: any link of an older add (`target`)
        # or any candidate link of this one (a superset of those kept: fewer links, one hop).
        ahead = jnp.zeros(m, jnp.int32)
        for j in range(1, self.reach + 1):
            ahead = jnp.where(cut & _same_bits(pred_next, everything[j * g:j * g + m]), j, ahead)
        if self.reach:
            marks = jnp.zeros(t + m, bool).at[jnp.where(ahead > 0, k + ahead * g, t + m)].set(
                True, mode="drop")
            ahead = jnp.where(state.target[pred_slot] | marks[:m], 0, ahead)
        need = cut & (ahead == 0)  # a side entry
        entry = (state.side_pos + jnp.cumsum(need.astype(jnp.int32)) - 1) % s

        def written_now(slot):  # slots this add overwrites: their items leave anyway
            return (slot - inner.insert_pos) % big_n < m

        # An entry reused while the item holding it is still in the buffer: that item is
        # dropped, and so are the items that link ahead to it.
        owner = state.side_owner[entry]
        dropped = need & (owner >= 0) & (jnp.take(state.link, owner, mode="clip") == entry) \
            & ~written_now(owner)
        drops = [jnp.where(dropped, owner, big_n)]
        for j in range(1, self.reach + 1):
            back = (owner - j * g) % big_n
            linked = jnp.take(state.link, back, mode="clip") == AHEAD - (j - 1)
            drops.append(jnp.where(dropped & linked & ~written_now(back), back, big_n))
        dropped_slot = jnp.concatenate(drops)
        link = state.link.at[dropped_slot].set(LOST, mode="drop")
        inserted = (inner.insert_pos + k) % big_n
        link = link.at[inserted].set(SUCCESSOR, unique_indices=True)
        link = link.at[jnp.where(pred_exists, pred_slot, big_n)].set(
            jnp.where(need, entry, jnp.where(ahead > 0, AHEAD - (ahead - 1), SUCCESSOR)),
            mode="drop")
        target = state.target
        if self.reach:  # without links ahead no item is ever a target
            target = target.at[inserted].set(False, unique_indices=True)
            target = target.at[jnp.where(ahead > 0, (pred_slot + ahead * g) % big_n, big_n)
                               ].set(True, mode="drop")
        write = jnp.where(need, entry, s)
        side = state.side.at[write].set(pred_next, mode="drop")
        side_owner = state.side_owner.at[write].set(pred_slot, mode="drop")
        inner = self.inner.add(inner, _without_next(items), priorities)
        any_dropped = jnp.any(dropped_slot < big_n)
        inner = lax.cond(any_dropped, self._drop, lambda st, _: st, inner, dropped_slot)
        return state.replace(
            inner=inner, tail=tail, side=side, link=link, target=target,
            side_owner=side_owner,
            side_pos=(state.side_pos + jnp.sum(need, dtype=jnp.int32)) % s,
            lost=state.lost + jnp.sum(dropped_slot < big_n, dtype=jnp.int32),
        )

    def _drop(self, inner: ReplayState, slots) -> ReplayState:
        """Priority 0 in the sum tree and +inf (empty) in the min tree at `slots` (N: none)."""
        kernels = self.inner.kernels
        tree = kernels.update(inner.tree, slots, jnp.zeros(slots.shape, jnp.float32))
        min_tree = inner.min_tree
        if min_tree is not None:
            min_tree = kernels.update(min_tree, slots, jnp.full(slots.shape, jnp.inf))
        return inner.replace(tree=tree, min_tree=min_tree)

    def next_obs_at(self, state: NextSlotState, indices):
        """The next_obs of the items at `indices` (filled slots): from the tail, the side
        store or the successor's row, of the item itself or of the one it links ahead to.
        O(B) gathers."""
        big_n, t = self.capacity, self.stride
        if self.reach:  # an item linked ahead reads the next_obs of the item it links to
            age = (state.inner.insert_pos - 1 - indices) % big_n
            link = state.link[indices]
            j = jnp.where((age >= t) & (link <= AHEAD), AHEAD + 1 - link, 0)
            indices = (indices + j * self.group) % big_n
        age = (state.inner.insert_pos - 1 - indices) % big_n  # 0: the newest item
        in_tail = age < t
        link = state.link[indices]
        succ = state.inner.layout.unpack(
            jnp.take(state.inner.rows, (indices + t) % big_n, axis=0))["obs"]
        from_side = state.side[jnp.clip(link, 0, self.side_slots - 1)]
        from_tail = state.tail[jnp.clip(t - 1 - age, 0, t - 1)]

        def pick(mask, a, b):
            return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

        return pick(in_tail, from_tail, pick(link >= 0, from_side, succ))

    def items(self, state: NextSlotState):
        """Every slot's transition, next_obs rebuilt (leading dimension N). O(N): for
        inspection and tests."""
        rest = state.inner.items
        return {**rest, "next_obs": self.next_obs_at(state, jnp.arange(self.capacity))}

    def sample(self, state: NextSlotState, key, batch_size: int, beta: float = 0.4) -> Sample:
        """`PrioritizedReplay.sample` on the inner buffer, next_obs rebuilt (`next_obs_at`)."""
        got = self.inner.sample(state.inner, key, batch_size, beta)
        items = {**got.items, "next_obs": self.next_obs_at(state, got.indices)}
        return got._replace(items=items)

    def update(self, state: NextSlotState, indices, td_errors) -> NextSlotState:
        """`PrioritizedReplay.update`, except that dropped items (link LOST) keep priority 0.
        O(B) more than the inner update (the links' gather)."""
        indices = jnp.asarray(indices)
        lost = jnp.take(state.link, indices, mode="fill", fill_value=SUCCESSOR) == LOST
        if _is_concrete(indices, state.link) and bool(jnp.any(lost)):
            check_indices_filled(np.asarray(indices), int(state.inner.size))
            check_td_finite(np.asarray(td_errors, np.float32))
            inner = self._update_jit(state.inner, jnp.where(lost, self.capacity, indices),
                                     td_errors)
            return state.replace(inner=inner)
        indices = jnp.where(lost, self.capacity, indices)
        return state.replace(inner=self.inner.update(state.inner, indices, td_errors))

    @functools.cached_property
    def _update_jit(self):
        return jax.jit(self.inner.update)


def _without_next(items) -> Any:
    return {k: v for k, v in items.items() if k != "next_obs"}


def make_next_slot_replay(inner: PrioritizedReplay, stride: int,
                          side_fraction: float = 0.25, group: int | None = None
                          ) -> NextSlotReplay:
    """`inner`'s buffer with next_obs stored once (see the module docstring): `stride` =
    n_step * num_envs, the inserts between an item and its successor in the actors' order;
    `group` = num_envs, the inserts between an env's consecutive items, lets the items one
    episode end cuts share its side entry (None: each takes its own). Validates (ValueError
    naming the setting); O(1)."""
    return NextSlotReplay(inner=inner, stride=int(stride), side_fraction=float(side_fraction),
                          group=None if group is None else int(group))


__all__ = ["AHEAD", "LOST", "SUCCESSOR", "NextSlotReplay", "NextSlotState", "make_next_slot_replay"]
