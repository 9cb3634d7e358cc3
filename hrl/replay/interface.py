"""The one interface every replay buffer in `hrl.replay` implements, in flashbax's shape.

    rb = make_replay(cfg.replay, batch_size=256)      # or a variant's own factory
    state = rb.init(example_transition)               # one transition, no batch dimension
    state = rb.add(state, transitions)                # leading batch dimension M
    state = rb.add(state, transitions, priorities)    # ... each at its own priority
    sample = rb.sample(state, key, 256, beta)         # Sample(items, indices, weights, probs)
    state = rb.update(state, sample.indices, td_errors)

The buffers (`make_replay` picks one from the config; see its table):

| class                   | state              | where the state lives                        |
|-------------------------|--------------------|----------------------------------------------|
| `PrioritizedReplay`     | `ReplayState`      | a JAX pytree, inside jit / `lax.scan`         |
| `ShardedReplay`         | `ReplayState`      | one shard per device, inside `shard_map`      |
| `HostNativeReplay`      | `HostNativeState`  | NumPy arrays stepped by the C++ kernels       |
| `HostPrioritizedReplay` | `HostReplayState`  | NumPy items, the tree on a `backends` backend |
| `NextSlotReplay`        | `NextSlotState`    | as `PrioritizedReplay`; rows without next_obs |

`ReplayHandle` is not a fifth kind but `PrioritizedReplay` bound to its state, for callers
outside any loop: `handle.add(items)` is `state = rb.add(state, items)`, `handle.sample(key,
beta)` is `rb.sample(state, key, batch_size, beta)`, `handle.update(indices, td)` is
`state = rb.update(state, indices, td)`, bit for bit; its state lives in the handle.

The contract, what every implementation guarantees:

* JAX buffers (`PrioritizedReplay`, `ShardedReplay`) are pure: `f(state, inputs) -> state` or
  `-> Sample`, no side effect, every method jits (the static settings are fields of the
  buffer, bound by its factory), so the whole buffer can live in a fused `lax.scan` loop.
  `ShardedReplay` additionally runs inside `shard_map` (or `vmap`) over its axis.
* Host buffers (`HostReplay`: `HostNativeReplay`, `HostPrioritizedReplay`) hold their state
  in host (NumPy) arrays and update them in place, returning the state: use the returned
  state; the one passed in is the same arrays. This is so because copying the ring on every
  insert would cost O(N) per call. After a checkpoint restore, `sync_backend(state)` makes the
  buffer hold `state` (copied into the arrays the kernels step, or the tree rebuilt from the
  leaves). Not thread-safe: one caller at a time.
* Every buffer gives `PrioritizedReplay`'s numbers on the same calls (the same random bits,
  stored priorities, IS weights and bookkeeping); the tests of each variant check it, bit for
  bit where the format allows (see each module).
* `size(state)` is the number of filled slots (read it through the buffer: a state need not
  carry it at its top, `NextSlotState` keeps it in `inner`); `capacity` the ring's slots.
  `add` overwrites the oldest slots first; new items take the priorities passed to it (raw,
  before alpha; inside jit and on the host buffers a NaN, inf or negative one takes the
  largest priority seen) or, without them, the largest priority seen so far.
  `update` writes |td| + eps for each index (the last of duplicates wins).

Bad input, one policy:

* An empty `add` (M = 0 items) is a no-op: it returns the state unchanged, on every buffer
  (under jit M is a static shape, so this is decided at trace time and costs nothing).
* Items of the wrong structure, shape or dtype, or indices and TD errors of different shapes:
  `ValueError` naming the leaf or argument.
* `sample` from an empty buffer, outside jit: `ValueError`. Non-finite TD errors inside jit and
  in the host buffers take the largest priority seen before the update; indices outside the
  filled part are dropped (a concrete call of `PrioritizedReplay.update` raises instead, see
  `hrl.replay.buffer`).

Costs (N items, fanout K, batch B, M inserted): `add` O(M K log_K N), `sample` and `update`
O(B K log_K N), `init` O(N); the variants' docstrings say where their constants go.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from hrl.replay.buffer import Sample

S = TypeVar("S")


@runtime_checkable
class Replay(Protocol[S]):
    """A prioritized replay buffer: static settings plus functions of its state `S` (see the
    module docstring for the contract every implementation keeps)."""

    @property
    def capacity(self) -> int:
        """Slots in the ring (over all shards for `ShardedReplay`)."""
        ...

    def init(self, example_item: Any) -> S:
        """An empty buffer for items shaped like `example_item` (one item, unbatched). O(N)."""
        ...

    def add(self, state: S, items: Any, priorities: Any = None) -> S:
        """Write M items (leading dimension M) into the ring, oldest slots first, with
        `priorities` (M raw priorities, before alpha: what `update` would write for their TD
        errors, so a new item can enter at its own priority) or, when None, the largest
        priority seen so far. O(M K log_K N); M = 0 returns `state` unchanged."""
        ...

    def sample(self, state: S, key: Any, batch_size: int, beta: float) -> Sample:
        """`batch_size` items drawn with P(i) = p_i / sum p (stratified), with importance
        weights of exponent `beta`, max 1. O(B K log_K N)."""
        ...

    def update(self, state: S, indices: Any, td_errors: Any) -> S:
        """New priorities |td| + eps at `indices` (those a sample returned). O(B K log_K N)."""
        ...

    def size(self, state: S) -> Any:
        """Filled slots (over all shards for `ShardedReplay`: a psum). O(1)."""
        ...


@runtime_checkable
class HostReplay(Replay[S], Protocol[S]):
    """A `Replay` whose state is host arrays updated in place (see the module docstring)."""

    def sync_backend(self, state: S) -> None:
        """Make the buffer hold `state` (a checkpoint restored): O(N) copy or tree rebuild."""
        ...


__all__ = ["HostReplay", "Replay"]
