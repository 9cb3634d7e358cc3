"""The profiler times the network the config builds: a MinAtar config's conv net, under its
own call names (`infer:dqn:conv`, `train:dqn:conv`), with the work the model counts for it, and
the env step of every env the grid names. Compiles a conv net's infer and SGD step: long tier
(its quicker twins: tests/mapping/test_conv_model.py, on hand-made and committed rows)."""

import dataclasses

import pytest

MINATAR = "experiments/configs/dqn_minatar_breakout.yaml"


@pytest.mark.long
def test_profiler_times_the_configs_conv_net_and_the_grids_envs():
    import jax

    from hrl.config import load_config
    from hrl.mapping.profile import primitives
    from hrl.mapping.profile.grids import Setting
    from hrl.mapping.profile.profiler import Profiler, start_profiling_backend

    cfg = load_config(MINATAR)
    start_profiling_backend(cfg, False)
    grid = {"num_envs": (4,), "width": (32,), "batch": (8,), "capacity": (1024,),
            "fanout": (16,), "repeats": 2, "scan": 2, "envs": ("gymnax:Asterix-MinAtar",)}
    prof = Profiler(cfg, grid=grid, backends=("jax",), loops=False, progress=False)
    assert prof.env_names() == ["gymnax:Breakout-MinAtar", "gymnax:Asterix-MinAtar"]
    s = Setting(num_envs=4, width=32, batch=8, capacity=1024, fanout=16)
    cpu = jax.devices("cpu")[0]
    primitives.profile_learner(prof, "cpu", cpu, s, 2, 2)
    primitives.profile_env(prof, "cpu", cpu, s, 2, 2, "gymnax:Asterix-MinAtar")
    by = {(r.call, r.placement): r for r in prof.rows}
    w = prof.target.workload(s)
    assert w.conv_layers == ((16, 3, 1),) and w.hidden == (32,)
    for call in ("infer", "train"):
        for place in ("cpu", "cpu-fused"):
            r = by[(f"{call}:dqn:conv", place)]
            assert r.work == w.work(call) and r.latency_s > 0
            assert r.extra["conv_layers"] == [[16, 3, 1]] and r.extra["head_layers"] == 1
    env = by[("env:gymnax:Asterix-MinAtar", "cpu")]
    assert env.env == "gymnax:Asterix-MinAtar" and env.work == 4
    # the agent timed is the conv net the config builds, its head the grid's width
    params = prof.target.agent(32).init(jax.random.PRNGKey(0)).params["params"]
    assert params["Conv_0"]["kernel"].shape == (3, 3, 4, 16)
    assert dataclasses.replace(w, hidden=(128,)).params == 205_907  # the config's own net
