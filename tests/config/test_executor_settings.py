"""The executor's config keys: a bad setting is one error naming the key."""

from __future__ import annotations

import pytest
from tiny_runs import _small_run


@pytest.mark.parametrize("overrides,message", [
    (["train.executor=fused"], "train.executor.*needs a JAX environment"),
    (["train.actors=process"], "train.actors.*set train.executor: pipelined"),
    (["train.pipeline_depth=-1"], "train.pipeline_depth.*>= 0"),
    (["train.weight_sync_period=0"], "train.weight_sync_period.*>= 1"),
])
def test_bad_executor_settings_name_the_key(overrides, message):
    with pytest.raises(ValueError, match=message):
        _small_run("dqn_cartpole_gymnasium", overrides, iterations=1)
