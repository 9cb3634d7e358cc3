"""The names of the placements the profiler measures and the model prices, one spelling each.

A placement of a JAX primitive on a second XLA CPU device is spelled as the config spells it
(`placement.sample: cpu:1`): `SECOND_CPU = "cpu:1"`. Profiles written before this spelling
call it `cpu1`; `normalize_placement` maps every older spelling to the current one, so a
committed profile.json reads the same as a new one. Constant-time, no imports beyond the
standard library: both the profiler and the validation import it, so it must import neither.
"""

from __future__ import annotations

# The JAX tree alone on the second XLA CPU device (the learner stays on the first).
SECOND_CPU = "cpu:1"
# The JAX buffer with its tree in plain XLA ops (`replay.impl: xla`) on the learner's device.
XLA_TREE = "cpu-xla"
# The config placement of the SECOND_CPU mapping: the learner's primitives pinned to the first
# device (an unplaced primitive runs where its inputs are, and the sample's batch comes from
# cpu:1).
SECOND_CPU_PLACEMENT = {"infer": "cpu:0", "train": "cpu:0", "sample": SECOND_CPU,
                        "update": SECOND_CPU}
# Older spellings of a placement -> the one spelling used now.
OLD_SPELLINGS = {"cpu1": SECOND_CPU}
# The tree backends the validation's catalogue can select (`validate.runnable_mappings`):
# `xla`, the JAX tree in plain XLA ops; SECOND_CPU (the older `cpu1` reads as it), the JAX
# tree on the second CPU device; the replay backends.
BACKENDS = ("jax", "xla", SECOND_CPU, "opencl", "rtl")
# The label of the mapping with the JAX tree on SECOND_CPU (`validate.runnable_mappings`), as
# committed results name it; a label, not a device.
SECOND_CPU_LABEL = "replay-on-cpu1"

# The executors the mapping model prices, one spelling each: the runtime's
# (`hrl.runtime.executor_choice.EXECUTORS`), and THREAD_ACTORS for the pipelined executor with
# its actors in a thread of the learner's process (`train.executor: pipelined`,
# `train.actors: thread`), which the model prices apart from the process actors.
THREAD_ACTORS = "pipelined-thread"
PRICED_EXECUTORS = ("fused", "sequential", "pipelined", THREAD_ACTORS)  # `dse.Exploration`
RANKED_EXECUTORS = (*PRICED_EXECUTORS, "data-parallel")  # `ranking.RankedMapping`


def normalize_placement(name: str) -> str:
    """`name` in the current spelling (`OLD_SPELLINGS`); any other name unchanged."""
    return OLD_SPELLINGS.get(name, name)
