"""`placement.infer: fpga` (issue 53 §4): DQN's infer on the FPGA learner's kernel, simulated
behind the OpenCL driver (`hrl.fixed_point.kernel_host` over `rtl_sim`), gives the run of the
fixed-point learner in JAX bit for bit; what the kernel does not implement is refused by key.

The refusals need no simulator (seconds). The run builds the kernel with Verilator (or Icarus)
and compiles two host loops: the long tier; its quick twins are the kernel's Icarus testbench
(tests/rtl/test_rtl_learn_kernel.py, the same programs bit for bit against mlp_forward) and
tests/fixed_point/test_kernel_program.py.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tiny_runs import CONFIGS, assert_trees_equal

from hrl.config import ConfigError, load_config
from hrl.runtime import build, initial_state

# DQN CartPole, fixed point, shrunk: the greedy action nearly always (epsilon 0.05), so that
# the actions follow the kernel's Q words.
SMALL = ["agent.numerics=fixed", "agent.max_grad_norm=null", "agent.hidden_sizes=[16,16]",
         "agent.eps_start=0.05", "agent.eps_end=0.05", "env.num_envs=2", "train.batch_size=8",
         "train.rollout_length=4", "train.train_ratio=0.25", "train.learning_starts=16",
         "replay.capacity=256", "log.progress=false"]


def _cfg(*overrides, config="dqn_cartpole"):
    return load_config(CONFIGS / f"{config}.yaml", [*SMALL, *overrides])


@pytest.mark.parametrize("overrides,message", [
    (["placement.update=fpga"], r"'placement.update': fpga places only infer and train"),
    (["placement.infer=fpga", "agent.numerics=float"],
     r"'agent.numerics': .*set agent.numerics: fixed"),
    (["placement.infer=fpga", "train.executor=pipelined"], r"'train.executor': .*sequential"),
    (["placement.infer=fpga", "seeds=2"], r"'seeds': placement.infer: fpga runs one seed"),
])
def test_fpga_placement_refused_by_key(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        _cfg(*overrides)
    assert "\n" not in str(err.value)


def test_fpga_placement_refuses_ddpg():
    with pytest.raises(ConfigError, match=r"'placement.infer': fpga runs DQN's Q network "
                                          r"\(infer, train\) and DDPG's SGD step \(train\) "
                                          r"only; DDPG's actor infers in JAX, got 'ddpg'"):
        load_config(CONFIGS / "ddpg_pendulum.yaml", ["agent.numerics=fixed",
                                                     "placement.infer=fpga"])


@pytest.mark.parametrize("overrides,message", [
    (["agent.hidden_sizes=[128,128]"], r"agent.hidden_sizes: 4-128-128-2 has a layer 128 wide"),
    (["agent.hidden_sizes=[16,16,16]"], r"agent.hidden_sizes: 4-16-16-16-2 has 4 layers"),
    (["env.num_envs=128", "replay.capacity=1024"], r"env.num_envs: 128 is outside .*BMAX=64"),
])
def test_network_the_kernel_cannot_hold_is_refused_before_simulating(overrides, message):
    with pytest.raises(ValueError, match=message):
        build(_cfg("placement.infer=fpga", *overrides))


def _run(cfg, iterations: int):
    built = build(cfg)
    assert built.loop.name == "sequential"
    state, out = built.loop.run(initial_state(built), iterations)
    return built, jax.device_get(state), out


@pytest.mark.long  # a Verilator build of the kernel and two host loops' compilations: minutes
@pytest.mark.hw
def test_fpga_infer_run_matches_the_fixed_point_reference_bit_for_bit():
    """36 env steps with 6 SGD steps: every action from the simulated kernel's Q words; the
    state (networks, optimizer, replay, envs) equals the sequential run of the JAX fixed-point
    learner leaf for leaf, and so do the episode returns; the kernel ran every inference (one
    launch per env step and per warm-up step) and its Q words on the final weights equal
    `q_words`'."""
    from hrl.replay.backends import rtl_model

    if not rtl_model.available_simulators():
        pytest.skip("no Verilog simulator")
    iterations = 4
    fpga, fpga_state, fpga_out = _run(_cfg("placement.infer=fpga"), iterations)
    _, ref_state, ref_out = _run(_cfg("train.executor=sequential"), iterations)
    assert int(fpga_state.updates) > 0
    assert_trees_equal(fpga_state, ref_state)
    np.testing.assert_array_equal(fpga_out.completed_return, ref_out.completed_return)
    q = fpga.loop.prims.infer.fpga_q
    env_steps = int(fpga_state.env_steps) // fpga.cfg.env.num_envs
    assert q.kernel.runs == env_steps, (q.kernel.runs, env_steps)
    obs = np.random.default_rng(0).normal(0, 1.5, (fpga.cfg.env.num_envs, 4)).astype(np.float32)
    want, _ = fpga.agent.q_words(fpga_state.agent.params, obs)
    np.testing.assert_array_equal(q(fpga_state.agent.params, obs), np.asarray(want))
