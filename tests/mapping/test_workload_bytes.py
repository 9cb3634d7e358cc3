"""The bytes a transition moves between devices (`Workload.transition_bytes`) are the bytes of
the replay's own row of it (`hrl.replay.rows.RowLayout`): each leaf in its dtype, so MinAtar's
bool grids are charged 1 byte an element and float32 observations 4."""

import pytest

from hrl.config import load_config
from hrl.envs import make_env
from hrl.envs.spec import example_transition
from hrl.mapping.workload import Workload, env_obs_itemsize, workload_from_config
from hrl.replay.rows import RowLayout

CONFIGS = ["experiments/configs/dqn_minatar_breakout.yaml",
           "experiments/configs/dqn_cartpole.yaml",
           "experiments/configs/ddpg_pendulum.yaml"]


@pytest.mark.parametrize("path", CONFIGS)
def test_transition_bytes_are_the_replay_row_bytes(path):
    cfg = load_config(path)
    w = workload_from_config(cfg)
    row = RowLayout.of(example_transition(make_env(cfg.env.name, 1).spec))
    assert w.transition_bytes == row.row_bytes


def test_minatar_observations_are_charged_one_byte_an_element():
    assert env_obs_itemsize("gymnax:Breakout-MinAtar") == 1
    assert env_obs_itemsize("gymnax:CartPole-v1") == 4
    w = workload_from_config(load_config(CONFIGS[0]))
    assert w.obs_itemsize == 1 and w.transition_bytes == 2 * 400 + 3 * 4
    assert w.describe()["obs_itemsize"] == 1


def test_float_observations_keep_the_description_reports_pin():
    assert "obs_itemsize" not in Workload().describe()
    with pytest.raises(ValueError, match="obs_itemsize"):
        Workload(obs_itemsize=0)
