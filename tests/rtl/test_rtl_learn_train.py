"""The training kernel (fpga_rtl/rtl/hrl_learn_kernel.v with TRAIN = 1: hrl_learn_step behind
AXI4-Lite control and an AXI4 master) driven through the OpenCL driver on the rtl-sim device
by hrl.fixed_point.kernel_train: SGD steps and inferences bit for bit against the JAX
fixed-point reference (FixedDQN.train_step, q_words), the state carried in the kernel's banks
from step to step; and a run the kernel refuses shows in the status row it writes to memory.
With TRAIN = 2 (hrl_learn_step_ddpg inside) the same for DDPG's steps, the host's programs
written by hrl.fixed_point.ddpg_program, against FixedDDPG.sgd_step.

Each needs a simulator start (and the steps two JIT compilations), a minute or more on 2
cores: the long tier. A small network for a few steps on a small kernel in Icarus (hard
copies, Polyak steps, a second state loaded), DQN CartPole's 4-64-64-2 at batch 32 on the
run's default kernel (Verilator, built once and cached), and the status row's refusals.
`make test` keeps the training kernel's lint (tests/rtl/test_rtl_learn_kernel.py) and the
refusals by key (tests/runtime/test_fpga_train.py).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from hrl.agents.dqn.agent import DQNConfig
from hrl.envs.spec import DiscreteActions, EnvSpec
from hrl.fixed_point import kernel_host, kernel_train
from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point import train_program as tp
from hrl.fixed_point.dqn import make_fixed_dqn
from hrl.fixed_point.numerics import quantize

pytestmark = pytest.mark.hw

SMALL = kp.KernelShape(r=2, c=4, aw=18, bw=18, ow=24, nmax=12, nl=3, bmax=8, bsmax=24, train=1,
                       amax=4)


def _require(sim: str) -> None:
    from hrl.replay.backends import rtl_model

    if sim not in rtl_model.available_simulators():
        pytest.fail(f"{sim} is not installed (the bit-for-bit tests are never skipped)")


def _agent(dims, batch, **kw):
    cfg = DQNConfig(numerics="fixed", max_grad_norm=None, hidden_sizes=tuple(dims[1:-1]),
                    double=True, **kw)
    spec = EnvSpec(name="train-kernel", num_envs=1, obs_shape=(dims[0],),
                   obs_dtype=np.float32, action=DiscreteActions(dims[-1]), is_jax=True)
    return make_fixed_dqn(cfg, spec, batch_size=batch)


def _batch(rng, dims, batch, scale):
    return ({"obs": rng.normal(0, scale, (batch, dims[0])).astype(np.float32),
             "next_obs": rng.normal(0, scale, (batch, dims[0])).astype(np.float32),
             "action": rng.integers(0, dims[-1], batch).astype(np.int32),
             "reward": rng.normal(0, 1, batch).astype(np.float32),
             "discount": rng.choice([0.0, 0.99], batch).astype(np.float32)},
            rng.uniform(0.1, 1.0, batch).astype(np.float32))


def _steps(kernel, dims, batch, rows, n_steps, seed, **kw):
    """n_steps SGD steps on the kernel and on the reference from the same state, every
    output compared; then an inference. Returns the learner."""
    agent = _agent(dims, batch, **kw)
    learner = kernel_train.FpgaLearner(kernel, agent, batch, rows)
    train = jax.jit(kernel_train.make_fpga_train(agent, learner))
    ref = jax.jit(agent.train_step)
    rng = np.random.default_rng(seed)
    state = ref_state = agent.init(jax.random.PRNGKey(seed))
    for step in range(n_steps):
        batch_words, weights = _batch(rng, dims, batch, 3.0 if step % 3 == 2 else 1.0)
        state, td, metrics = train(state, batch_words, weights)
        ref_state, ref_td, ref_metrics = ref(ref_state, batch_words, weights)
        got = jax.tree_util.tree_leaves_with_path(
            (state, td, metrics["saturations"]))
        want = jax.tree.leaves((ref_state, ref_td, ref_metrics["saturations"]))
        for (path, a), b in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                          err_msg=f"step {step}: {jax.tree_util.keystr(path)}")
        # The float statistics of those words (loss, Q mean, |TD| mean): the same function
        # of the same words, fused by XLA into two different programs, so within float32's
        # rounding of a reduction, not bit for bit.
        for key in ("loss", "q_mean", "td_abs_mean"):
            np.testing.assert_allclose(np.asarray(metrics[key]), np.asarray(ref_metrics[key]),
                                       rtol=1e-6, err_msg=f"step {step}: {key}")
    obs = rng.normal(0, 2.0, (rows, dims[0])).astype(np.float32)
    x = np.asarray(quantize(obs, agent.fmts.act)[0])
    m, v = state.opt_state
    got = learner.q(state.params, state.target_params, m, v, state.train_steps, x)
    np.testing.assert_array_equal(got, np.asarray(agent.q_words(state.params, obs)[0]))
    assert learner.sgd_steps == n_steps and learner.inits == 1
    return learner


# An Icarus build and two jit compilations of the SGD step, then six steps on Icarus: minutes,
# so the slow tier (`make test-slow`); CI's long tier runs the Verilator steps below.
@pytest.mark.slow
def test_sgd_steps_on_the_kernel_match_the_reference_icarus():
    """A 4-8-6-2 network, batch 4, 4 steps with a hard target copy every 2 steps, then a
    3-5-3 network (another state: loaded again) for 2 Polyak steps, on a small kernel
    (R2 C4) in Icarus: every master, moment and target word, the TD errors and the
    saturation count equal FixedDQN.train_step's; the inference afterwards equals q_words
    on the kernel's own operand words."""
    _require("icarus")
    kernel = kernel_host.open_rtl_sim(SMALL, "icarus")
    try:
        _steps(kernel, (4, 8, 6, 2), 4, 2, 4, seed=1, learning_rate=1e-2,
               target_update_period=2, tau=1.0)
        _steps(kernel, (3, 5, 3), 3, 1, 2, seed=2, learning_rate=3e-2,
               target_update_period=1, tau=0.1)
    finally:
        kernel.close()


@pytest.mark.long  # an Icarus build and a simulator start (which imports JAX): a minute
def test_a_refused_run_is_reported_from_the_status_row():
    """An OpenCL host cannot read the kernel's registers: a run the kernel stops (here a
    parameter block past its banks) leaves the status row unwritten, and a run with a
    bad command reports it in the status bits; both are one-line errors on the host."""
    _require("icarus")
    kernel = kernel_host.open_rtl_sim(SMALL, "icarus")
    try:
        status = kp.Matrix(kp.STORE_STATUS, 0, 0, 1, 4, "status")
        past = kp.Matrix(kp.LOAD_PARAM, SMALL.param_depth - 1, 0, 2, SMALL.c, "p")
        empty = np.zeros((0, len(kp.FIELDS)), np.int64)
        outs = kernel.run(kp.Program((past,), empty, (status,)),
                          {"p": np.zeros((2, SMALL.c), np.int64)})
        with pytest.raises(RuntimeError, match="stopped before its stores") as err:
            tp.check_status(outs["status"], 0, "test run")
        assert "\n" not in str(err.value)
        outs = kernel.run(kp.Program((), empty, (status,), cmd=3), {})
        with pytest.raises(RuntimeError, match="stopped before its stores"):
            tp.check_status(outs["status"], 0, "test run")
        # only the step counter's register loaded, nothing run: a clean status row
        cfg = kp.Matrix(kp.LOAD_CFG, 0, 0, 1, 2, "cfg")
        outs = kernel.run(kp.Program((cfg,), empty, (status,)),
                          {"cfg": np.array([[tp.G["STEPS"], 5]])})
        assert tp.check_status(outs["status"], 5, "register load") == (0, 0)
    finally:
        kernel.close()


@pytest.mark.long  # a Verilator build of the default kernel (cached) and 4-64-64-2 steps
def test_dqn_cartpole_steps_on_the_default_kernel_verilator():
    """DQN CartPole's 4-64-64-2 at batch 32 on the run's kernel (DEFAULT_SHAPE, 4 x 4):
    8 steps with a hard target copy every 3 steps, then an inference of 4 rows, bit for bit
    (the small network's test above has the Polyak update)."""
    _require("verilator")
    kernel = kernel_host.open_rtl_sim(kernel_host.DEFAULT_SHAPE, "verilator")
    try:
        _steps(kernel, (4, 64, 64, 2), 32, 4, 8, seed=4, learning_rate=1e-2,
               target_update_period=3, tau=1.0)
    finally:
        kernel.close()


def _mutant_kernel(tmp_path, monkeypatch, sim: str, shape, old: str, new: str):
    """The learner kernel of `shape` on the rtl-sim device (`sim`) built from a copy of the
    RTL whose hrl_learn_kernel.v has its one line `old` replaced by `new`."""
    import shutil

    from hrl.replay.backends import rtl_sim

    _require(sim)
    rtl = tmp_path / "fpga_rtl"
    shutil.copytree(rtl_sim.RTL_DIR / "rtl", rtl / "rtl")
    source = rtl / "rtl" / "hrl_learn_kernel.v"
    text = source.read_text()
    assert text.count(old) == 1, "the mutation's pattern is not in the kernel once"
    source.write_text(text.replace(old, new))
    monkeypatch.setattr(rtl_sim, "RTL_DIR", rtl)
    device = rtl_sim.Device(sim, build_dir=tmp_path / "build")
    binary = rtl_sim.kernel_binary(kernel_host.KERNEL_NAME, kp.hdl_params(shape))
    return kernel_host.LearnerKernel(shape, cl=rtl_sim, device=device, binary=binary)


@pytest.mark.long  # an Icarus build of the mutant and a JIT compilation of the step
def test_the_step_check_catches_a_kernel_mutation(tmp_path, monkeypatch):
    """The check above fails against a kernel with one deliberate bug: each sample's IS
    weight taken as its discount (the batch row's words misrouted)."""
    kernel = _mutant_kernel(tmp_path, monkeypatch, "icarus", SMALL,
                            "st_bt_discount <= x_w[2][PW-1:0];",
                            "st_bt_discount <= in_word[PW-1:0];")
    try:
        with pytest.raises(AssertionError, match="step 0"):
            _steps(kernel, (4, 8, 6, 2), 4, 2, 2, seed=1, learning_rate=1e-2,
                   target_update_period=2, tau=1.0)
    finally:
        kernel.close()


# ----------------------------------------------------------------------------- DDPG
DDPG_SHAPE = kp.KernelShape(r=2, c=4, aw=18, bw=18, ow=24, nmax=12, nl=6, bmax=8, bsmax=24,
                            train=2, amax=2)


def _ddpg_steps(kernel, actor, critic, batch, n_steps, seed, **kw):
    """n_steps DDPG SGD steps on the training kernel with the DDPG step (TRAIN = 2), the
    host's side written by hrl.fixed_point.ddpg_program, against FixedDDPG.sgd_step from
    the same state: every master, moment and target word of both nets, the TD and |TD|
    words, the saturations (the kernel's plus the host's quantization of the batch) and the
    step counter, step after step with the state carried in the kernel's banks."""
    from hrl.agents.ddpg.agent import DDPGConfig
    from hrl.envs.spec import ContinuousActions
    from hrl.fixed_point import ddpg_program as dp
    from hrl.fixed_point.common import step_rate
    from hrl.fixed_point.ddpg import make_fixed_ddpg

    n_act = actor[-1]
    cfg = DDPGConfig(numerics="fixed", actor_hidden_sizes=tuple(actor[1:-1]),
                     critic_hidden_sizes=tuple(critic[1:-1]), **kw)
    spec = EnvSpec(name="train-kernel", num_envs=1, obs_shape=(actor[0],),
                   obs_dtype=np.float32,
                   action=ContinuousActions((n_act,), (-1.0,) * n_act, (2.0,) * n_act),
                   is_jax=True)
    agent = make_fixed_ddpg(cfg, spec, batch_size=batch)
    f, shape = agent.fmts, kernel.shape
    lay = dp.layout(dp.kernel_banks(shape), actor, critic, batch)
    runs = dp.step_runs(f, actor, critic, lay)
    pairs = np.array(dp.config_pairs(agent, lay, dp.run_ends(runs),
                                     period=cfg.target_update_period, tau=cfg.tau), np.int64)
    state = agent.init(jax.random.PRNGKey(seed))

    def streams(s):
        return {"master": s.params, "m": {k: s.opt_state[k][0] for k in s.params},
                "v": {k: s.opt_state[k][1] for k in s.params}, "target": s.target_params}

    arrays = tp.split("cfg", pairs, shape)
    for bank, tree in streams(state).items():
        arrays.update(tp.split(bank, dp.stream(tree, shape.c), shape))
    outs = kernel.run(dp.init_program(shape, lay, runs, len(pairs)), arrays)
    tp.check_status(outs["status"], 0, "init")
    program = dp.step_program(shape, lay, actor)
    sgd_step = jax.jit(agent.sgd_step)
    rng = np.random.default_rng(seed)
    for step in range(n_steps):
        scale = 3.0 if step % 3 == 2 else 1.0
        words = {"obs": rng.normal(0, scale, (batch, actor[0])).astype(np.float32),
                 "next_obs": rng.normal(0, scale, (batch, actor[0])).astype(np.float32),
                 "action": rng.uniform(-1.0, 2.0, (batch, n_act)).astype(np.float32),
                 "reward": rng.normal(0, 1, batch).astype(np.float32),
                 "discount": rng.choice([0.0, 0.99], batch).astype(np.float32)}
        weights = rng.uniform(0.1, 1.0, batch).astype(np.float32)
        (x, xn, a, reward, discount, w), n_in = agent._inputs(words, weights)
        x, xn, a = (np.asarray(v, np.int64) for v in (x, xn, a))
        rates = [int(step_rate(cfg, k, batch, state.train_steps, f))
                 for k in ("critic_learning_rate", "actor_learning_rate")]
        outs = kernel.run(program, {
            "x": x, "xn": xn, "c0": np.concatenate([x, a], 1), "tc0": xn,
            "batch": np.stack([np.zeros(batch, np.int64),
                               *(np.asarray(v, np.int64) for v in (reward, discount, w))], 1),
            "lr": np.array([[dp.G["LR_C"], rates[0]], [dp.G["LR_A"], rates[1]]], np.int64)})
        sats, _ = tp.check_status(outs["status"], step + 1, f"DDPG step {step}")
        state, abs_td, td, metrics = sgd_step(state, words, weights)
        got_td = outs["td"]
        np.testing.assert_array_equal(got_td[:, 0], np.asarray(td), err_msg=f"step {step}: td")
        np.testing.assert_array_equal(got_td[:, 1], np.asarray(abs_td),
                                      err_msg=f"step {step}: |td|")
        for bank, tree in streams(state).items():
            np.testing.assert_array_equal(tp.join(outs, bank), dp.stream(tree, shape.c),
                                          err_msg=f"step {step}: {bank}")
        assert sats == int(metrics["saturations"]) - int(n_in), f"step {step}: saturations"


@pytest.mark.long  # a Verilator build of the DDPG kernel (cached) and two JIT compilations
def test_ddpg_steps_on_the_training_kernel_verilator():
    """DDPG's step behind the kernel (TRAIN = 2), driven through the OpenCL driver on the
    rtl-sim device: a 3-8-2 actor and a 5-6-1 critic (each its own rate) at batch 4, 5 steps
    of Polyak target updates, then another state (loaded again: init) of a 2-5-1 actor and a
    3-7-5-1 critic, 4 steps with a hard copy every 2 steps, all bit for bit against
    FixedDDPG.sgd_step (`test_the_ddpg_step_check_catches_a_kernel_mutation`: a kernel
    that loses the batch's rewards fails it)."""
    _require("verilator")
    kernel = kernel_host.open_rtl_sim(DDPG_SHAPE, "verilator")
    try:
        _ddpg_steps(kernel, (3, 8, 2), (5, 6, 1), 4, 5, seed=1, tau=0.1,
                    target_update_period=1, critic_huber_delta=1.0,
                    actor_learning_rate=3e-2, critic_learning_rate=1e-2)
        _ddpg_steps(kernel, (2, 5, 1), (3, 7, 5, 1), 3, 4, seed=2, tau=1.0,
                    target_update_period=2)
    finally:
        kernel.close()


@pytest.mark.long  # a Verilator build of the mutant and the step's JIT compilation
def test_the_ddpg_step_check_catches_a_kernel_mutation(tmp_path, monkeypatch):
    """The DDPG check above fails against a kernel with one deliberate bug: each sample's
    reward word taken as 0 on its way from the batch row to the step."""
    kernel = _mutant_kernel(tmp_path, monkeypatch, "verilator", DDPG_SHAPE,
                            "st_bt_reward <= x_w[1][VW-1:0];", "st_bt_reward <= {VW{1'b0}};")
    try:
        with pytest.raises(AssertionError, match="step 0"):
            _ddpg_steps(kernel, (3, 8, 2), (5, 6, 1), 4, 2, seed=1, tau=0.1,
                        target_update_period=1, actor_learning_rate=3e-2,
                        critic_learning_rate=1e-2)
    finally:
        kernel.close()
