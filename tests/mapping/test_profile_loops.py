"""The profiler's loop rows (`hrl.mapping.profile.loops`): measured in a process with their
dispatch, their configs run the row's actor and SGD steps."""


import pytest
from tiny_profiles import CONFIG


@pytest.mark.parametrize("dispatch", ["sync", pytest.param("async", marks=pytest.mark.long)])
def test_loop_rows_are_measured_in_a_process_with_their_dispatch(dispatch):
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile.grids import GRIDS, loop_sizes
    from hrl.mapping.profile.spawn import loop_rows_subprocess

    got = loop_rows_subprocess(to_dict(load_config(CONFIG)), "host", dispatch, repeats=2,
                               settings=[(1, 2, 3)], sizes=loop_sizes(GRIDS["quick"], "host"))
    assert len(got) == 1 and got[0]["wall_s"] > 0 and got[0]["cpu_s"] > 0
    assert got[0]["async"] is (dispatch == "async")


@pytest.mark.parametrize("loop", ["host", "pipelined"])
def test_loop_row_configs_run_the_row_s_actor_and_sgd_steps(loop):
    """A loop row's config runs L actor steps and U SGD steps per iteration at its loop's
    sizes: the grid's smallest point, with at least 8 envs in the host loops (a host env step
    costs more in a loop)."""
    from hrl.config import load_config, to_dict
    from hrl.mapping.profile.grids import GRIDS, LOOP_ENVS, loop_sizes
    from hrl.mapping.profile.loops import loop_row_config
    from hrl.mapping.workload import workload_from_config

    grid = {**GRIDS["quick"], "num_envs": (4, 64), "width": (64, 256), "batch": (32, 128)}
    sizes = loop_sizes(grid, loop)
    cfg = loop_row_config(to_dict(load_config(CONFIG)), loop, steps=4, sgd=3, dispatch="sync",
                          sizes=sizes)
    w = workload_from_config(cfg)
    assert cfg.env.num_envs == sizes.num_envs == max(4, LOOP_ENVS[loop]) == 8
    assert (tuple(w.hidden), w.batch_size, w.capacity) == ((64, 64), 32, min(grid["capacity"]))
    assert (w.rollout_length, w.sgd_steps) == (4, pytest.approx(3.0))
    assert cfg.train.executor == {"fused": "fused", "host": "sequential"}.get(loop, "pipelined")
