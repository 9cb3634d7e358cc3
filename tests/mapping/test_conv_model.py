"""The model keeps a conv net's learner terms apart from an MLP's (`platform.call_key`):
conv rows fit models of their own, and an MLP's models (and so its predictions) are those the
profile gave before conv rows existed. No profiling, no compilation."""

import dataclasses

from hrl.config import config_from_dict, load_config, to_dict
from hrl.mapping.calibration import _loop_row_workload, models_from_profile
from hrl.mapping.platform import measured_placement
from hrl.mapping.profile import load_profile
from hrl.mapping.profile.loops import set_width
from hrl.mapping.workload import Workload, workload_from_config

PROFILE = "experiments/results/mapping/heldout/profile"
MINATAR = "experiments/configs/dqn_minatar_breakout.yaml"


def _conv_rows(slope: float) -> list[dict]:
    """Hand-made conv-net rows of train and infer at three sizes: seconds = 1e-4 + slope *
    work."""
    w = Workload(env_id="Breakout-MinAtar", obs_dim=400, act_dim=3, hidden=(128,),
                 obs_shape=(10, 10, 4), conv_layers=((16, 3, 1),))
    rows = []
    for call, sizes in (("train", "batch_size"), ("infer", "num_envs")):
        for n in (8, 32, 128):
            work = dataclasses.replace(w, **{sizes: n}).work(call)
            rows.append({"call": f"{call}:dqn:conv", "placement": "cpu", "mode": "dispatched",
                         "work": work, "latency_s": 1e-4 + slope * work, "network": "conv",
                         "conv_layers": [[16, 3, 1]], "head_layers": 1})
    return rows


def test_conv_rows_fit_their_own_models_and_leave_the_mlp_models_as_they_were():
    profile = load_profile(PROFILE)
    before = models_from_profile(profile)
    after = models_from_profile({**profile, "rows": [*profile["rows"], *_conv_rows(3e-11)]})
    assert {k: v for k, v in after.items() if ":conv" not in k[0]} == before
    conv = after[("train:dqn:conv", "cpu")]
    assert abs(conv.slope / 3e-11 - 1) < 1e-3 and abs(conv.intercept / 1e-4 - 1) < 1e-2
    # A conv net is priced by its own model, an MLP by the MLP's.
    cpu = measured_placement("cpu", after)
    mini = workload_from_config(load_config(MINATAR))
    assert cpu.seconds("train", mini) == after[("train:dqn:conv", "cpu")](mini.work("train"))
    cart = workload_from_config(load_config("experiments/configs/dqn_cartpole.yaml"))
    assert cpu.seconds("train", cart) == before[("train:dqn", "cpu")](cart.work("train"))


def test_loop_rows_of_a_conv_net_rebuild_its_workload():
    row = {"call": "loop:fused", "placement": "loop", "mode": "loop",
           "env": "gymnax:SpaceInvaders-MinAtar", "algo": "dqn", "num_envs": 8, "width": 64,
           "batch": 32, "capacity": 8192, "fanout": 16, "rollout": 4, "sgd": 2,
           "iterations": 10, "latency_s": 0.01, "network": "conv", "conv_layers": [[16, 3, 1]],
           "head_layers": 1}
    w = _loop_row_workload(row)
    assert w.conv_layers == ((16, 3, 1),) and w.obs_shape == (10, 10, 6)
    assert w.hidden == (64,) and w.act_dim == 4
    mlp = _loop_row_workload({k: v for k, v in row.items()
                              if k not in ("network", "conv_layers", "head_layers")}
                             | {"env": "gymnax:CartPole-v1"})
    assert mlp.conv_layers == () and mlp.hidden == (64, 64)


def test_a_loop_row_config_of_minatar_keeps_its_convolution_and_sets_the_head():
    data = to_dict(load_config(MINATAR))
    set_width(data, 64)
    cfg = config_from_dict(data)
    assert cfg.agent.network == "conv" and cfg.agent.conv_layers == ((16, 3, 1),)
    assert cfg.agent.hidden_sizes == (64,)
    w = workload_from_config(cfg)
    assert w.conv_layers == ((16, 3, 1),) and w.hidden == (64,)


def test_a_held_out_draw_with_minatar_settings_keeps_the_cartpole_draw_before_it():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "mapping"))
    import heldout  # experiments/mapping/heldout.py

    plain = heldout.draw(16, 9)
    assert heldout.draw(16, 9, 0) == plain
    mixed = heldout.draw(16, 9, 4)
    assert mixed[:12] == plain[:12]
    minatar = mixed[12:]
    assert [s.env for s in minatar] == ["minatar"] * 4
    for s in minatar:
        assert s.game in heldout.MINATAR_GAMES
        cfg = load_config(MINATAR, heldout.run_overrides(s))
        w = workload_from_config(cfg)
        assert w.env_id == s.game and w.conv_layers == ((16, 3, 1),)
        assert w.hidden == (s.width,) and w.num_envs == s.num_envs
    assert heldout.draw(16, 9, 4) == mixed  # the same seed, the same settings


def test_a_modelled_fpga_keeps_a_conv_nets_learner_off_the_board_and_says_why():
    from hrl.mapping import fpga as fpga_model
    from hrl.mapping.plan import plan

    profile = load_profile("experiments/results/mapping/heldout/profile-minatar")
    w = workload_from_config(load_config(MINATAR, ["replay.capacity=8192"]))
    p = plan(w, profile, ["cpu", "fpga:u250"])
    e = p.exploration
    feasible = [e.mapping(r) for r in range(len(e.feasible)) if e.feasible[r]]
    assert feasible  # the RMM can still hold the tree
    assert all("fpga:u250" not in (m["infer"], m["train"]) for m in feasible)
    assert any(m["sample"] == "fpga:u250" for m in feasible)
    assert any(fpga_model.FPGA_NO_CONV in note for note in p.notes)
