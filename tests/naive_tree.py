"""A deliberately plain, sequential sum-tree model in NumPy / Python ints.

Written independently of hrl.replay (no shared helpers) to check its batched, vectorised
and split-word arithmetic: one write at a time, parents recomputed by a Python loop,
sampling by walking Python integers of unbounded width.
"""

from __future__ import annotations

import numpy as np


class NaiveTree:
    def __init__(self, capacity: int, fanout: int, fixed: tuple[int, int] | None = None):
        self.n, self.k = capacity, fanout
        self.depth = 1
        while fanout**self.depth < capacity:
            self.depth += 1
        self.fixed = fixed  # (word_bits, leaf_int_bits) or None for float
        # Full K-ary levels (K**l nodes), simplest possible layout.
        if fixed:
            self.levels = [[0] * fanout**lvl for lvl in range(self.depth + 1)]
        else:
            self.levels = [np.zeros(fanout**lvl, np.float64) for lvl in range(self.depth + 1)]

    def encode(self, p: float) -> int:
        w, i = self.fixed
        p = np.float32(p)  # priorities reach the tree as float32
        if p < np.finfo(np.float32).tiny:
            p = np.float32(0)  # subnormals are flushed to zero on CPUs and GPUs
        q = float(np.rint(np.float64(p) * 2.0 ** (w - i)))
        q = int(min(max(q, 0.0), 2.0**w - 1))
        return 1 if (p > 0 and q == 0) else q

    def set(self, index: int, priority: float) -> None:
        leaf = self.encode(priority) if self.fixed else float(np.float32(priority))
        self.levels[self.depth][index] = leaf
        node = index
        for lvl in range(self.depth - 1, -1, -1):
            node //= self.k
            kids = self.levels[lvl + 1][node * self.k : (node + 1) * self.k]
            if self.fixed:
                self.levels[lvl][node] = -(-sum(kids) // self.k)  # ceil, exact ints
            else:
                self.levels[lvl][node] = float(np.sum(kids))

    def update(self, indices, priorities) -> None:
        for i, p in zip(indices, priorities, strict=True):  # sequential: last write wins
            self.set(int(i), float(p))

    def words(self, level: int) -> list[int]:
        """Live words of a level in the same order as hrl's flattened level arrays."""
        return list(self.levels[level])

    def leaves(self):
        return np.asarray(self.levels[self.depth][: self.n], np.float64)

    def sample_fixed(self, fraction: int) -> int:
        """Descent with unbounded ints, rules as documented in hrl.replay.formats."""
        s = self.k.bit_length() - 1
        product = fraction * self.levels[0][0]
        t, low = product >> 32, product & 0xFFFFFFFF
        node = 0
        for lvl in range(1, self.depth + 1):
            digit = (low >> (32 - lvl * s)) & (self.k - 1)
            target = t * self.k + digit
            kids = self.levels[lvl][node * self.k : (node + 1) * self.k]
            acc, chosen = 0, None
            for j, c in enumerate(kids):
                if acc + c > target:
                    chosen, t = j, target - acc
                    break
                acc += c
            if chosen is None:
                chosen = max(j for j, c in enumerate(kids) if c > 0)
                t = kids[chosen] - 1
            node = node * self.k + chosen
        return node


def stratified_fractions(bits, batch: int) -> list[int]:
    stride = 0xFFFFFFFF // batch
    return [i * stride + ((int(b) * stride) >> 32) for i, b in enumerate(bits)]
