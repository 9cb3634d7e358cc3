"""DDPG's step in the learning module's cycle model (hrl.mapping.learner_schedule), without a
simulator: the seven engine runs of hrl_learn_step_ddpg in FixedDDPG.sgd_step's order, and
the loss, clip, Adam and target terms by hand. The terms' constants are the step module's
simulated phases (its testbench checks them cycle for cycle in test_listed_steps;
experiments/rtl/ddpg_step_cycles.py tabulates them)."""

from __future__ import annotations

import pytest

from hrl.config import load_config
from hrl.mapping import fpga
from hrl.mapping import learner_schedule as ls
from hrl.mapping.workload import workload_from_config


def test_ddpg_runs_products():
    """Target actor then critic (its first layer streamed beside the actor's last), target
    critic, the critic's backward with gradients, actor, critic, dQ/da (input delta, no
    gradients), the actor's backward with gradients."""
    runs = ls.ddpg_runs([3, 8, 1], [4, 16, 1], 32)
    assert runs == [
        [[(32, 3, 8)], [(32, 8, 1), (32, 4, 16)], [(32, 16, 1)]],
        [[(32, 4, 16)], [(32, 16, 1)]],
        [[(17, 32, 1), (32, 1, 16)], [(5, 32, 16)]],
        [[(32, 3, 8)], [(32, 8, 1)]],
        [[(32, 4, 16)], [(32, 16, 1)]],
        [[(32, 1, 16)], [(32, 16, 4)]],
        [[(9, 32, 1), (32, 1, 8)], [(4, 32, 8)]],
    ]
    fwd, bwd = ls.ddpg_step([3, 8, 1], [4, 16, 1], 32)
    assert ls.macs(fwd) + ls.macs(bwd) == sum(ls.macs(r) for r in runs)


def test_ddpg_terms_by_hand():
    """Critic rows: two Q rows read a sample; actor rows: one sample a cycle; three clip
    passes of CLIP_CYCLES a sample and CLIP_PIPE of tail; an Adam walk per net; one target
    walk over both."""
    actor, critic, b = [3, 64, 64, 1], [4, 64, 64, 1], 32
    d = ls.step_cycles("ddpg", actor, b, 16, 16, critic=critic)
    blocks_a = 4 * 4 + 65 * 4 + 65 * 1  # (K + 1) rows x ceil(N / 16) blocks per layer
    blocks_c = 5 * 4 + 65 * 4 + 65 * 1
    assert (ls.blocks(actor, 16), ls.blocks(critic, 16)) == (blocks_a, blocks_c)
    assert d["loss"] == (2 * b + ls.DDPG_CRITIC_PIPE) + (b + ls.DDPG_ACTOR_PIPE) \
        + 3 * (ls.CLIP_CYCLES * b + ls.CLIP_PIPE)
    assert d["update"] == blocks_a + blocks_c + 2 * ls.ADAM_PIPE
    assert d["target"] == blocks_a + blocks_c + ls.TARGET_PIPE
    runs = ls.ddpg_runs(actor, critic, b)
    assert d["array"] == sum(ls.schedule_cycles(r, 16, 16) for r in runs) + 7 * (
        ls.DEP_GAP + ls.SAT_COUNT_LAG)
    assert d["total"] == d["array"] + d["loss"] + d["update"] + d["target"] + ls.DDPG_HANDOFF
    d3 = ls.step_cycles("ddpg", actor, b, 16, 16, critic=critic, target_period=3)
    assert d3["total"] == d["total"] - d["target"] + -(-d["target"] // 3)


def test_fpga_ddpg_train_call_is_the_step_model():
    """The mapping model's FPGA train call of DDPG Pendulum is learner_schedule's step at
    the config's target period, at the learner's clock."""
    cfg = load_config("experiments/configs/ddpg_pendulum.yaml")
    work = workload_from_config(cfg)
    learner = fpga.ArrayLearner()
    nets = work.networks()
    cycles = ls.step_cycles("ddpg", nets["actor"], work.batch_size, learner.rows,
                            learner.cols, critic=nets["critic"],
                            target_period=work.target_period)["total"]
    got = fpga.learner_seconds(learner, "train", work)
    assert got == pytest.approx(cycles / learner.clock_hz + learner.invoke_overhead_s,
                                rel=1e-12)


def test_from_table_prices_ddpg_at_its_kernels_clock():
    """A cycle table whose DDPG rows were taken at a slower clock (the DDPG kernel's) gives
    the learner two clocks: DQN's step and the inference at the other rows', DDPG's step at
    its own; a table without DDPG rows prices DDPG at the one clock."""
    rows = [{"op": "sgd_step", "net": "dqn 4-64-64-2", "array": "16x16", "sim": "model",
             "total_cycles": 1880, "us": 10.0},
            {"op": "inference", "net": "dqn 4-64-64-2", "array": "16x16", "sim": "yes",
             "total_cycles": 376, "us": 2.0},
            {"op": "sgd_step", "net": "ddpg pendulum 3-64-64-1 / 4-64-64-1",
             "array": "16x16", "sim": "yes", "total_cycles": 1820, "us": 10.0}]
    learner = fpga.ArrayLearner.from_table(rows, "16x16")
    assert learner.clock_hz == pytest.approx(188e6)
    assert learner.ddpg_clock_hz == pytest.approx(182e6)
    assert "DDPG's step at 182 MHz" in learner.source
    actor, critic = [3, 64, 64, 1], [4, 64, 64, 1]
    cycles = ls.step_cycles("ddpg", actor, 32, 16, 16, critic=critic)["total"]
    got = learner.train_seconds({"actor": actor, "critic": critic}, 32)
    assert got == pytest.approx(cycles / 182e6 + learner.invoke_overhead_s, rel=1e-12)
    q = [4, 64, 64, 2]
    dqn = ls.step_cycles("dqn", q, 32, 16, 16)["total"]
    assert learner.train_seconds({"q": q}, 32) == pytest.approx(
        dqn / 188e6 + learner.invoke_overhead_s, rel=1e-12)
    one_clock = fpga.ArrayLearner.from_table(rows[:2], "16x16")
    assert one_clock.ddpg_clock_hz is None
    assert one_clock.train_seconds({"actor": actor, "critic": critic}, 32) == pytest.approx(
        cycles / 188e6 + one_clock.invoke_overhead_s, rel=1e-12)
