"""A pytree as one flat vector per dtype, and back: exact (a copy of the bits), for calls from
Python that cross many small arrays.

XLA:CPU's dispatch costs time per array a jitted call takes and returns, O(arrays), whatever
their size (`experiments/bench/bench_call_overhead.py` measures it). The host loop's SGD step
returns the whole agent (parameters, target parameters, the optimizer's moments, counters) and
its metrics, so for small networks that dispatch outweighs the step's arithmetic. Packed, the
step returns five arrays. Inside jit, `pack` and `unpack` are a concatenation and
slices, which XLA fuses into the step's first and last kernels.

    packing = TreePacking(agent)
    step = jax.jit(lambda flat, batch: packing.pack(train(packing.unpack(flat), batch)))

`unpack` also takes numpy arrays (the leaves come back as numpy views), for values already on
the host.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np


class TreePacking:
    """How a pytree of arrays maps to one flat vector per dtype (in order of first use)."""

    def __init__(self, template):
        leaves, self.treedef = jax.tree.flatten(template)
        self.shapes = [tuple(leaf.shape) for leaf in leaves]
        dtypes = [np.dtype(leaf.dtype) for leaf in leaves]
        self.dtypes = list(dict.fromkeys(dtypes))  # the groups, in order of first use
        # For each leaf: its group and where it starts in that group's vector.
        self.slots: list[tuple[int, int]] = []
        sizes = [0] * len(self.dtypes)
        for shape, dtype in zip(self.shapes, dtypes, strict=True):
            group = self.dtypes.index(dtype)
            self.slots.append((group, sizes[group]))
            sizes[group] += math.prod(shape)
        self.sizes = tuple(sizes)

    def pack(self, tree) -> tuple:
        """The leaves of `tree` (same structure, shapes and dtypes as the template) as one flat
        vector per dtype. For traced or device values (jnp)."""
        leaves = self.treedef.flatten_up_to(tree)
        groups: list[list] = [[] for _ in self.dtypes]
        for leaf, (group, _), shape in zip(leaves, self.slots, self.shapes, strict=True):
            if tuple(jnp.shape(leaf)) != shape or jnp.result_type(leaf) != self.dtypes[group]:
                raise ValueError(f"TreePacking.pack: a leaf of shape {jnp.shape(leaf)} and dtype "
                                 f"{jnp.result_type(leaf)}; the template has {shape} and "
                                 f"{self.dtypes[group]}")
            groups[group].append(jnp.ravel(leaf))
        return tuple(jnp.concatenate(g) if len(g) > 1 else g[0] for g in groups)

    def unpack(self, flats):
        """The pytree back from `pack`'s vectors (jnp or numpy). Vectors stacked along leading
        axes (`pack` of several trees, stacked) give leaves with those leading axes."""
        if len(flats) != len(self.dtypes):
            raise ValueError(f"TreePacking.unpack: {len(flats)} vectors for {len(self.dtypes)} "
                             f"dtypes ({', '.join(map(str, self.dtypes))})")
        for flat, size, dtype in zip(flats, self.sizes, self.dtypes, strict=True):
            if flat.shape[-1:] != (size,):
                raise ValueError(f"TreePacking.unpack: the {dtype} vector has shape "
                                 f"{flat.shape}; the template packs {size} values")
        leaves = [flats[group][..., start:start + math.prod(shape)].reshape(
                      flats[group].shape[:-1] + shape)
                  for (group, start), shape in zip(self.slots, self.shapes, strict=True)]
        return jax.tree.unflatten(self.treedef, leaves)
