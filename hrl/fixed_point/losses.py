"""The loss unit of the FPGA learning module: TD errors, output deltas, |TD| for the RMM.

    dqn_loss_unit(q, q_next_online, q_next_target, action, reward, discount, weights,
                  huber, double, fmts)        -> (delta_out, td, abs_td, n_sat)
    ddpg_critic_unit(q, q_next, reward, discount, weights, huber, fmts)
                                              -> (delta_out, td, abs_td, n_sat)
    ddpg_actor_delta(batch_size, fmts)        -> delta_out (the critic's output delta for
                                                 the actor's gradient)

Words: q values, rewards, TD targets and errors in `fmts.value`; discounts and importance
weights in `fmts.prob`; `huber` (the clip of the TD error, or None) in `fmts.value`; deltas
in `fmts.delta`.

The loss is the IS-weighted sum over the batch (not the mean: the optimizer's rate is
learning_rate / B, so the step is the float learner's mean-loss step), so the output delta of
sample i is dL/dq_i = -w_i * clip(td_i, -huber, huber): one multiply, one narrowing. With
`huber` None (DDPG's squared error) the clip is dropped.

    target_i = narrow(discount_i * q_next_i + reward_i)          (one multiply-add)
    td_i     = narrow(target_i - q_i)                            (exact, saturating)

DQN picks q_next_i = q_next_target[i, argmax_a q_next_online[i, a]] (double DQN) or
max_a q_next_target[i, a]; argmax takes the first of equal words.
"""

from __future__ import annotations

import jax.numpy as jnp

from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.numerics import add, multiply, multiply_add


def _td(q, q_next, reward, discount, fmts: FxFormats):
    v, p = fmts.value, fmts.prob
    target, n1 = multiply_add(q_next, v, discount, p, reward, v, v)
    td, n2 = add(target, v, -q, v, v)
    return td, n1 + n2


def _output_delta(td, weights, huber, fmts: FxFormats):
    """-w * clip(td, +-huber) narrowed to `delta`; |td| (value words) for the priorities."""
    clipped = td if huber is None else jnp.clip(td, -huber, huber)
    delta, n_sat = multiply(-clipped, fmts.value, weights, fmts.prob, fmts.delta)
    return delta, n_sat


def dqn_loss_unit(q, q_next_online, q_next_target, action, reward, discount, weights, huber,
                  double: bool, fmts: FxFormats):
    """DQN's loss unit. q, q_next_*: (B, A) value words; action (B,) int32; reward (B,)
    value; discount, weights (B,) prob; huber: a value word.

    Returns (delta_out (B, A) delta words, zero but at the taken action; td (B,) value words;
    |td| (B,) value words, the RMM's new priorities before its (|td| + eps)^alpha; n_sat).
    """
    q_taken = jnp.take_along_axis(q, action[:, None], axis=1)[:, 0]
    chooser = q_next_online if double else q_next_target
    best = jnp.argmax(chooser, axis=1)
    q_next = jnp.take_along_axis(q_next_target, best[:, None], axis=1)[:, 0]
    td, n1 = _td(q_taken, q_next, reward, discount, fmts)
    d, n2 = _output_delta(td, weights, huber, fmts)
    onehot = jnp.arange(q.shape[1])[None, :] == action[:, None]
    delta_out = jnp.where(onehot, d[:, None], 0).astype(jnp.int32)
    # |td| of the most negative word saturates to the largest one.
    abs_td = jnp.minimum(jnp.abs(td), fmts.value.max_int)
    return delta_out, td, abs_td, n1 + n2


def ddpg_critic_unit(q, q_next, reward, discount, weights, huber, fmts: FxFormats):
    """DDPG's critic loss unit: q = Q(s, a), q_next = Q'(s', mu'(s')), (B,) value words.
    Returns (delta_out (B, 1), td (B,), |td| (B,), n_sat) as `dqn_loss_unit`."""
    td, n1 = _td(q, q_next, reward, discount, fmts)
    d, n2 = _output_delta(td, weights, huber, fmts)
    abs_td = jnp.minimum(jnp.abs(td), fmts.value.max_int)
    return d[:, None], td, abs_td, n1 + n2


def ddpg_actor_delta(batch_size: int, fmts: FxFormats):
    """The critic's output delta for the actor's step: the actor ascends sum_i Q(s_i,
    mu(s_i)) (unweighted), so dL/dQ_i = -1 for every sample: (B, 1) delta words."""
    return jnp.full((batch_size, 1), -(1 << fmts.delta.frac), jnp.int32)
