"""The mapping model's workload of a conv net (`hrl.mapping.workload`): what the config
builds, counted by hand; an MLP's work terms exactly as before; a conv net kept off the FPGA
learner, with the reason in the plan's notes."""

import math

import pytest

from hrl.config import load_config
from hrl.mapping import fpga as fpga_model
from hrl.mapping.platform import call_key, fpga_placement
from hrl.mapping.workload import CALLS, Workload, workload_from_config

MINATAR = "experiments/configs/dqn_minatar_breakout.yaml"


def test_minatar_config_workload_is_its_conv_net():
    w = workload_from_config(load_config(MINATAR))
    assert w.network == "conv"
    assert w.obs_shape == (10, 10, 4) and w.obs_dim == 400 and w.act_dim == 3
    assert w.conv_layers == ((16, 3, 1),) and w.hidden == (128,)
    # 'SAME' 3x3 stride 1: 10x10x16 out; head 1600 -> 128 -> 3
    assert w.conv_shapes() == [(10, 10, 16, 3, 4, 10, 10)]
    assert w.networks() == {"q": [1600, 128, 3]}
    conv = 10 * 10 * 16 * 3 * 3 * 4  # 57,600 MACs
    dense = 1600 * 128 + 128 * 3  # 205,184 MACs
    assert w.conv_macs() == [conv]
    params = (3 * 3 * 4 * 16 + 16) + (1600 * 128 + 128) + (128 * 3 + 3)
    assert w.params == params == 205_907
    # infer: one forward of the conv and the head per env
    assert w.work("infer") == 2 * w.num_envs * (conv + dense) == 525_568
    # train: the conv's forward and kernel gradient (its input is data: no input gradient)
    # in the online pass, and its forward in the two next-state passes: 4 forwards; the head
    # 3 + 1 + 1 = 5 forwards; Adam 10 per parameter.
    per_sample = 2 * (4 * conv + 5 * dense)
    assert w.work("train") == 32 * per_sample + 10 * params == 82_463_550


def test_second_conv_layer_counts_its_input_gradient_and_stride_pads_same():
    w = Workload(obs_dim=10 * 10 * 6, act_dim=4, hidden=(64,), obs_shape=(10, 10, 6),
                 conv_layers=((8, 3, 2), (4, 2, 1)), batch_size=16, num_envs=3)
    # stride 2 'SAME': ceil(10 / 2) = 5; then 2x2 stride 1 'SAME' keeps 5
    assert [s[:3] for s in w.conv_shapes()] == [(5, 5, 8), (5, 5, 4)]
    c0, c1 = 5 * 5 * 8 * 9 * 6, 5 * 5 * 4 * 4 * 8
    dense = 100 * 64 + 64 * 4
    params = (9 * 6 * 8 + 8) + (4 * 8 * 4 + 4) + (100 * 64 + 64) + (64 * 4 + 4)
    assert w.params == params
    assert w.work("infer") == 2 * 3 * (c0 + c1 + dense)
    assert w.work("train") == 16 * 2 * (4 * c0 + 5 * c1 + 5 * dense) + 10 * params


def test_conv_layers_of_the_generic_conv_network_are_read_from_the_config():
    cfg = load_config(MINATAR, ["agent.network=conv", "agent.conv_layers=[[32,3,2],[8,3,1]]",
                                "agent.hidden_sizes=[256,64]"])
    w = workload_from_config(cfg)
    assert w.conv_layers == ((32, 3, 2), (8, 3, 1)) and w.hidden == (256, 64)
    assert w.networks()["q"] == [5 * 5 * 8, 256, 64, 3]


# Each work term of these configs as the model counted it before it knew conv nets (the
# numbers of the commit before: bit for bit the same floats).
MLP_WORK = {
    "experiments/configs/dqn_cartpole.yaml":
        [1.0, 34304.0, 4096.0, 4096.0, 11151380.0, 4096.0],
    "experiments/configs/dqn_cartpole_gymnasium.yaml":
        [4.0, 137216.0, 4096.0, 4096.0, 11151380.0, 4096.0],
    "experiments/configs/ddpg_brax_halfcheetah.yaml":
        [64.0, 9175040.0, 5120.0, 20480.0, 406065734.0, 20480.0],
    "experiments/configs/ddpg_brax_inverted_pendulum.yaml":
        [16.0, 141312.0, 1280.0, 20480.0, 25191828.0, 20480.0],
}


@pytest.mark.parametrize("path", sorted(MLP_WORK))
def test_mlp_work_terms_are_unchanged(path):
    w = workload_from_config(load_config(path))
    assert w.network == "mlp" and w.conv_layers == () and w.obs_shape == ()
    assert [w.work(c) for c in CALLS] == MLP_WORK[path]
    assert call_key("train", w) == f"train:{w.algo}" and call_key("infer", w) == \
        f"infer:{w.algo}"


def test_conv_learner_calls_have_their_own_profile_key():
    w = workload_from_config(load_config(MINATAR))
    assert call_key("infer", w) == "infer:dqn:conv"
    assert call_key("train", w) == "train:dqn:conv"


def test_bad_conv_workloads_are_refused_in_one_line():
    with pytest.raises(ValueError, match="obs_shape"):
        Workload(obs_dim=400, obs_shape=(10, 10, 3), conv_layers=((16, 3, 1),))
    with pytest.raises(ValueError, match="only dqn"):
        Workload(algo="ddpg", obs_dim=400, obs_shape=(10, 10, 4), conv_layers=((16, 3, 1),))
    with pytest.raises(ValueError, match="conv_layers"):
        Workload(obs_dim=400, obs_shape=(10, 10, 4), conv_layers=((16, 0, 1),))


def test_fpga_learner_refuses_a_conv_net():
    w = workload_from_config(load_config(MINATAR, ["replay.capacity=8192"]))
    with pytest.raises(ValueError, match="dense .MLP. layers only"):
        fpga_model.learner_seconds(fpga_model.ArrayLearner(), "train", w)
    board = fpga_placement("u250")
    assert math.isnan(board.seconds("train", w)) and math.isnan(board.seconds("infer", w))
    assert board.seconds("sample", w) > 0  # the RMM still holds the tree
    mlp = workload_from_config(load_config("experiments/configs/dqn_cartpole.yaml"))
    assert board.seconds("train", mlp) > 0


def test_a_conv_net_is_not_priced_from_a_profile_without_conv_rows():
    from hrl.mapping.profile import load_profile
    from hrl.mapping.ranking import rank_mappings

    profile = load_profile("experiments/results/mapping/heldout/profile")
    with pytest.raises(ValueError, match="no train:dqn:conv rows"):
        rank_mappings(load_config(MINATAR), profile)
