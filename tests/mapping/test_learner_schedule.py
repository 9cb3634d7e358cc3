"""The learning module's schedule and cycle model (hrl.mapping.learner_schedule), without a
simulator: the products of a step are the reference's, the model's arithmetic on hand-counted
cases, and the engine's limits refuse in one line. The model itself is checked against the
RTL cycle for cycle by the array testbench (test_schedule_cycles)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from hrl.config import load_config
from hrl.mapping import fpga
from hrl.mapping import learner_schedule as ls
from hrl.mapping.workload import workload_from_config

REPO = Path(__file__).resolve().parents[2]


def test_dqn_step_products():
    """Double DQN: online on 2B rows and target on B rows per layer; backward per layer a
    weight gradient with the bias row and (except the first layer) the input delta."""
    fwd, bwd = ls.dqn_step([4, 64, 2], 32)
    assert fwd == [[(64, 4, 64), (32, 4, 64)], [(64, 64, 2), (32, 64, 2)]]
    assert bwd == [[(65, 32, 2), (32, 2, 64)], [(5, 32, 64)]]
    # MACs: 3 forwards, the weight and bias gradients, one backward delta.
    assert ls.macs(fwd) + ls.macs(bwd) == 3 * 32 * (4 * 64 + 64 * 2) + 32 * (65 * 2 + 5 * 64) \
        + 32 * 2 * 64


def test_phase_cycles_by_hand():
    """One tile: K beats, then the output latency and its rows. Two tiles: the second's
    last beat waits max(K, rows of the first, 3) cycles."""
    assert ls.product_cycles(1, 1, 1, 4, 4) == 1 + ls.OUT_LATENCY
    assert ls.product_cycles(4, 10, 4, 4, 4) == 10 + ls.OUT_LATENCY + 3
    # Two row tiles (4 rows, then 1), K = 2: the second last beat 4 cycles after the first.
    assert ls.product_cycles(5, 2, 4, 4, 4) == 2 + 4 + ls.OUT_LATENCY
    assert ls.schedule_cycles([[(1, 1, 1)], [(1, 1, 1)]], 4, 4) == 2 * (1 + ls.OUT_LATENCY) \
        + ls.DEP_GAP


def test_engine_run_by_hand():
    """One tile: K beats, then it drains and is written; the run's own cycles on top. Two
    ops of one tile: an independent op streams behind the first (its only beat waits for
    the first written whole); a chained one waits for the tile it reads."""
    one = (4 - 1) + ls.OUT_LATENCY + 4 + ls.WRITE_LAG
    assert ls.run_cycles([(4, 4, 4, ls.FIRST)], 4, 4) == one + ls.RUN_FIXED
    # K = 1: the second op's last beat would be 3 cycles later; it waits for the first op.
    written = 0 + ls.OUT_LATENCY + 4 + ls.WRITE_LAG
    two = written + ls.OUT_LATENCY + 4 + ls.WRITE_LAG + ls.RUN_FIXED + 1
    assert ls.run_cycles([(4, 1, 4, ls.FIRST), (4, 1, 4, ls.INDEP)], 4, 4) == two
    assert ls.run_cycles([(4, 1, 4, ls.FIRST), (4, 4, 4, ls.CHAINED)], 4, 4) == \
        written + 3 + ls.OUT_LATENCY + 4 + ls.WRITE_LAG + ls.RUN_FIXED + 1
    # Long tiles hide the wait: the second op's tiles follow the first's back to back.
    assert ls.run_cycles([(4, 64, 4, ls.FIRST), (4, 64, 4, ls.INDEP)], 4, 4) == \
        63 + 64 + ls.OUT_LATENCY + 4 + ls.WRITE_LAG + ls.RUN_FIXED + 1


def test_dqn_step_runs_are_the_step_modules_op_tables():
    """The forward run: the online net on 2B rows (chained layers), the target's first op
    independent; the backward run per layer from the last: input delta (not the first
    layer's), weight gradient, bias gradient as its own one-row op, all independent."""
    assert ls.dqn_forward_ops([4, 8, 2], 3) == [
        (6, 4, 8, ls.FIRST), (6, 8, 2, ls.CHAINED), (3, 4, 8, ls.INDEP), (3, 8, 2, ls.CHAINED)]
    assert ls.dqn_backward_ops([4, 8, 2], 3) == [
        (3, 2, 8, ls.FIRST), (8, 3, 2, ls.INDEP), (1, 3, 2, ls.INDEP), (4, 3, 8, ls.INDEP),
        (1, 3, 8, ls.INDEP)]


def test_model_against_the_committed_simulated_tables():
    """The engine's inferences (forward_cycles.csv) and the step module's whole DQN steps
    (step_cycles.csv), simulated in RTL and committed, against the model: every inference
    cycle for cycle, every step within 0.5% (the engine's runs, the units' passes and the
    hand-offs)."""
    out = REPO / "experiments" / "results" / "fpga_learner"
    with (out / "forward_cycles.csv").open() as f:
        for r in csv.DictReader(f):
            rows_, cols = (int(x) for x in r["array"].split("x"))
            dims = [int(x) for x in r["net"].split("-")]
            assert ls.inference_cycles(dims, rows_, cols, int(r["batch"])) \
                == int(r["sim_cycles"]), r
    with (out / "step_cycles.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        rows_, cols = (int(x) for x in r["array"].split("x"))
        dims = [int(x) for x in r["net"].split("-")]
        model = ls.step_cycles("dqn", dims, int(r["batch"]), rows_, cols)
        assert model["total"] == pytest.approx(int(r["sim_step"]), rel=5e-3), r


def test_bigger_array_fewer_cycles():
    cyc = [ls.step_cycles("dqn", [4, 64, 64, 2], 32, s, s)["total"] for s in (4, 8, 16, 32)]
    assert cyc == sorted(cyc, reverse=True) and cyc[0] > 10 * cyc[-1]


@pytest.mark.parametrize(
    "dims,batch,pattern",
    [
        ([4, 300, 2], 32, r"width 300 of layer 1 outside the engine's 1..max_width=256"),
        ([4, 64, 64, 64, 64, 2], 32, r"5 layers exceed the engine's max_layers=4"),
        ([4, 64, 2], 512, r"train.batch_size: 512 outside the engine's 1..max_batch=256"),
        ([4], 32, r"needs at least an input and an output"),
    ],
)
def test_check_fits_refuses(dims, batch, pattern):
    with pytest.raises(ValueError, match=pattern) as err:
        ls.check_fits(dims, batch, max_width=256, max_layers=4, max_batch=256)
    assert "\n" not in str(err.value)


def test_check_fits_accepts_the_largest():
    ls.check_fits([256] * 5, 256, max_width=256, max_layers=4, max_batch=256)


def test_dqn_loss_update_and_target_terms_by_hand():
    """DQN's step module: three Q rows read per sample, a block of C parameters a cycle in
    the Adam walk; the target's update costs the next step's forward a split into two
    engine runs (the online net's, beside which the operand walk runs, then the target's),
    spread over its period."""
    d = ls.step_cycles("dqn", [4, 64, 64, 2], 32, 16, 16)
    blocks = 5 * 4 + 65 * 4 + 65 * 1  # (K + 1) rows x ceil(N / 16) blocks per layer
    assert ls.blocks([4, 64, 64, 2], 16) == blocks
    assert d["loss"] == 3 * 32 + ls.DQN_LOSS_PIPE
    assert d["update"] == blocks + ls.ADAM_PIPE
    online = ls.run_cycles(ls.net_forward_ops([4, 64, 64, 2], 64), 16, 16)
    target = ls.run_cycles(ls.net_forward_ops([4, 64, 64, 2], 32), 16, 16)
    assert online > blocks + ls.TARGET_PIPE  # the operand walk hides under the online run
    assert d["target"] == online + ls.SPLIT_GAP + target \
        - ls.run_cycles(ls.dqn_forward_ops([4, 64, 64, 2], 32), 16, 16)
    assert 0 < d["target"] < blocks  # cheaper than a walk of its own
    # one state, a 4 x 4 array: the operand walk (1,185 blocks) is longer than the online
    # run, which the target's run then waits for
    small = ls.step_cycles("dqn", [4, 64, 64, 2], 1, 4, 4)
    assert small["target"] == ls.target_cycles([4, 64, 64, 2], 4) - 1 + ls.SPLIT_GAP \
        + ls.run_cycles(ls.net_forward_ops([4, 64, 64, 2], 1), 4, 4) \
        - ls.run_cycles(ls.dqn_forward_ops([4, 64, 64, 2], 1), 4, 4)
    assert d["total"] == d["array"] + d["loss"] + d["update"] + d["target"] + ls.STEP_HANDOFF
    d100 = ls.step_cycles("dqn", [4, 64, 64, 2], 32, 16, 16, target_period=100)
    assert d100["total"] == d["array"] + d["loss"] + d["update"] + -(-d["target"] // 100) \
        + ls.STEP_HANDOFF
    with pytest.raises(ValueError, match=r"agent.target_update_period: 0 must be an int >= 1"):
        ls.step_cycles("dqn", [4, 64, 2], 32, 16, 16, target_period=0)


def test_fpga_train_call_spreads_the_target_update_over_the_configs_period():
    """A config's target_update_period reaches the FPGA learner's SGD step: what a target
    update costs (the next step's forward split in two runs) is charged once per period,
    not every step."""
    cfg = load_config("experiments/configs/dqn_cartpole.yaml")
    work = workload_from_config(cfg)
    period = cfg.agent.target_update_period
    assert period > 1 and work.target_period == period
    learner = fpga.ArrayLearner()
    every_step = learner.train_seconds(work.networks(), work.batch_size)
    spread = fpga.learner_seconds(learner, "train", work)
    target = ls.step_cycles("dqn", work.networks()["q"], work.batch_size, learner.rows,
                            learner.cols)["target"]
    assert target > 0
    saved = (target - -(-target // period)) / learner.clock_hz
    assert every_step - spread == pytest.approx(saved, rel=1e-9)
