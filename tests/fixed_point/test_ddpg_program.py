"""DDPG's step program (hrl.fixed_point.ddpg_program), without a simulator: its seven runs
do the products the cycle model counts, its registers say what the agent and the layout
say, and the parameter stream holds both nets in order. The words themselves are checked
against FixedDDPG.sgd_step, step by step in RTL, by sim/hrl_learn_step_ddpg/."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from hrl.agents import DDPGConfig
from hrl.envs.spec import ContinuousActions, EnvSpec
from hrl.fixed_point import ddpg_program as dp
from hrl.fixed_point import train_program as tp
from hrl.fixed_point.ddpg import make_fixed_ddpg
from hrl.mapping import learner_schedule as ls

ACTOR, CRITIC, BATCH = (3, 8, 1), (4, 16, 1), 5


def _agent(tau: float = 0.1):
    cfg = DDPGConfig(numerics="fixed", actor_hidden_sizes=(8,), critic_hidden_sizes=(16,),
                     tau=tau, critic_huber_delta=1.0)
    spec = EnvSpec(name="toy", num_envs=1, obs_shape=(3,), obs_dtype=np.float32, is_jax=True,
                   action=ContinuousActions((1,), (-2.0,), (2.0,)))
    return make_fixed_ddpg(cfg, spec, batch_size=BATCH)


def test_the_seven_runs_are_the_cycle_model_s_products():
    """Per run, the ops' multiply-accumulates are those of learner_schedule.ddpg_runs (a
    weight gradient and its bias gradient there one product of K + 1 rows); every op of a
    backward run after the first reads its predecessor's output or is marked independent."""
    banks = dp.StepBanks.of(4, 4, 16, 6, 16)
    agent = _agent()
    lay = dp.layout(banks, ACTOR, CRITIC, BATCH)
    runs = dp.step_runs(agent.fmts, ACTOR, CRITIC, lay)
    model = ls.ddpg_runs(list(ACTOR), list(CRITIC), BATCH)
    assert len(runs) == len(model) == 7
    for run, want in zip(runs, model, strict=True):
        assert sum(op["m"] * op["k"] * op["n"] for op in run) == ls.macs(want)
    # The critic's backward run: its hidden layer's input delta first, then per layer the
    # weight and bias gradients, none of which reads the op before it (+8: independent).
    assert [op["kind"] for op in runs[2]] == [2, 3 + 8, 4 + 8, 3 + 8, 4 + 8]
    assert runs[0][len(ACTOR) - 1]["kind"] == 8  # the critic's first op beside the actor
    assert dp.run_ends(runs) == list(np.cumsum([len(r) for r in runs]))


def test_registers_name_the_nets_the_runs_and_the_target_update():
    agent = _agent(tau=0.1)
    banks = dp.StepBanks.of(4, 4, 16, 6, 16)
    lay = dp.layout(banks, ACTOR, CRITIC, BATCH)
    runs = dp.step_runs(agent.fmts, ACTOR, CRITIC, lay)
    regs = dict(dp.config_pairs(agent, lay, dp.run_ends(runs), period=1, tau=0.1))
    g = dp.G
    assert (regs[g["NLA"]], regs[g["NLC"]], regs[g["S"]], regs[g["A"]], regs[g["B"]]) == \
        (2, 2, 3, 1, BATCH)
    assert [regs[g[k]] for k in dp.RUN_ENDS] == dp.run_ends(runs)
    assert regs[g["FLAGS"]] == 2 | 4 and regs[g["TAU"]] > 0 and regs[g["HUBER"]] > 0
    # the critic's second layer (global layer 3): its K, N and first parameter block
    third = {k: regs[dp.LAYER0 + 16 * 3 + dp.L[k]] for k in ("K", "N", "P_BASE")}
    assert third == {"K": 16, "N": 1, "P_BASE": lay["pb"][3]}
    low, high = agent._bounds()
    assert regs[dp.LOW0] == int(low[0]) < 0 < regs[dp.HIGH0] == int(high[0])
    hard = dict(dp.config_pairs(agent, lay, dp.run_ends(runs), period=3, tau=1.0))
    assert (hard[g["FLAGS"]] & 4, hard[g["TAU"]], hard[g["PERIOD"]]) == (0, 0, 3)


def test_the_stream_holds_the_actor_then_the_critic_and_the_layout_refuses_what_overflows():
    agent = _agent()
    params = agent.init(jax.random.PRNGKey(0)).params
    words = dp.stream(params, 4)
    lay = dp.layout(dp.StepBanks.of(4, 4, 16, 6, 16), ACTOR, CRITIC, BATCH)
    assert words.shape == (lay["blocks"], 4)
    actor = tp.unstream(words[:lay["pb"][len(ACTOR) - 1]], ACTOR, 4)
    critic = tp.unstream(words[lay["pb"][len(ACTOR) - 1]:], CRITIC, 4)
    for got, want in zip([*actor, *critic], [*params["actor"], *params["critic"]], strict=True):
        assert np.array_equal(got["w"], np.asarray(want["w"]))
        assert np.array_equal(got["b"], np.asarray(want["b"]))
    with pytest.raises(AssertionError, match="activations need"):
        dp.layout(dp.StepBanks.of(4, 4, 16, 2, 4), ACTOR, CRITIC, 16)
