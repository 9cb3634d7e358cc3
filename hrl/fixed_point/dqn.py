"""DQN on the fixed-point learner: the FPGA learning module's arithmetic behind the DQN
agent's interface (`init`, `act`, `policy`, `train_step`, `td_errors`), so every executor
runs it unchanged. Selected by `agent.numerics: fixed` (see `hrl.runtime.components`).

    agent = make_fixed_dqn(DQNConfig(numerics="fixed", max_grad_norm=None), spec)
    state, td_errors, metrics = agent.train_step(state, batch, weights)

`sgd_step` is the whole SGD step in words: quantize the batch, three forward passes (online
on obs, online and target on next_obs), the loss unit, one backward pass, the optimizer
(Adam or momentum SGD; `optim`), the target update. `metrics['saturations']` counts every
narrowing that clipped in the step (the batch's quantization included). The TD errors it
returns are the value words as floats (exact), so the replay's priorities are the module's
|TD|.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import AgentState, check_batch
from hrl.agents.dqn.agent import DQNConfig
from hrl.envs.spec import DiscreteActions, EnvSpec
from hrl.fixed_point import optim
from hrl.fixed_point.common import (
    check_constants,
    check_fixed_config,
    init_mlp,
    step_rate,
)
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.layers import mlp_backward, mlp_forward
from hrl.fixed_point.losses import dqn_loss_unit
from hrl.fixed_point.numerics import dequantize, quantize


@dataclasses.dataclass(frozen=True, eq=False)
class FixedDQN:
    """Static config and the pure functions of a fixed-point DQN agent."""

    cfg: DQNConfig
    spec: EnvSpec
    grad_axis: str | None = None  # data parallelism is refused (see train_step)

    @property
    def fmts(self) -> FxFormats:
        return self.cfg.fixed_point.formats(self.cfg.optimizer, "dqn")

    def init(self, key) -> AgentState:
        size = int(np.prod(self.spec.obs_shape))
        params = init_mlp(key, self.cfg.hidden_sizes, size, self.spec.action.n, self.fmts)
        opt_state = optim.init_state(params, self.cfg.optimizer)
        return AgentState(params, params, opt_state, jnp.int32(0))

    # ------------------------------------------------------------------ infer
    def epsilon(self, env_step) -> jax.Array:
        c = self.cfg
        frac = jnp.clip(jnp.asarray(env_step, jnp.float32) / max(c.eps_decay_steps, 1), 0.0, 1.0)
        return jnp.float32(c.eps_start) + frac * jnp.float32(c.eps_end - c.eps_start)

    def q_words(self, params, obs):
        """Q values (M, A) as value words, and the forward's saturation count."""
        f = self.fmts
        x, n0 = quantize(jnp.reshape(obs, (jnp.shape(obs)[0], -1)), f.act)
        w, n1 = optim.operand(params, f)
        q, _, _, n2 = mlp_forward(w, x, f.act, f.weight, f.value)
        return q, n0 + n1 + n2

    def q_values(self, state: AgentState, obs) -> jax.Array:
        return dequantize(self.q_words(state.params, obs)[0], self.fmts.value)

    def policy(self, state: AgentState, obs) -> jax.Array:
        """Greedy int32 actions (M,): argmax of the Q words (the first of equal ones)."""
        return jnp.argmax(self.q_words(state.params, obs)[0], axis=-1).astype(jnp.int32)

    def act(self, state: AgentState, obs, key, env_step, explore) -> jax.Array:
        return self.act_on_q(self.q_words(state.params, obs)[0], key, env_step, explore)

    def act_on_q(self, q, key, env_step, explore) -> jax.Array:
        """`act` given the Q words (M, A) of the observations (from `q_words`, or from the
        FPGA learner's kernel, which computes the same words): epsilon-greedy actions."""
        greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
        eps = jnp.where(explore, self.epsilon(env_step), jnp.float32(self.cfg.eval_epsilon))
        coin_key, action_key = jax.random.split(key)
        m = greedy.shape[0]
        random_actions = jax.random.randint(action_key, (m,), 0, self.spec.action.n, jnp.int32)
        return jnp.where(jax.random.uniform(coin_key, (m,)) < eps, random_actions, greedy)

    def init_carry(self, num_envs: int) -> tuple:
        del num_envs
        return ()

    def act_with_carry(self, state, carry, obs, key, env_step, explore, episode_start):
        del episode_start
        return carry, self.act(state, obs, key, env_step, explore)

    # ------------------------------------------------------------------ train
    def _loss_inputs(self, state: AgentState, batch, weights):
        f = self.fmts
        b = batch["reward"].shape[0]
        x, n0 = quantize(jnp.reshape(batch["obs"], (b, -1)), f.act)
        xn, n1 = quantize(jnp.reshape(batch["next_obs"], (b, -1)), f.act)
        reward, n2 = quantize(batch["reward"], f.value)
        discount, n3 = quantize(batch["discount"], f.prob)
        w, n4 = quantize(weights, f.prob)
        return (x, xn, reward, discount, w), n0 + n1 + n2 + n3 + n4

    def _huber(self) -> int:
        word = round(self.cfg.huber_delta * 2**self.fmts.value.frac)
        if not 1 <= word <= self.fmts.value.max_int:
            raise ValueError(f"agent.huber_delta: {self.cfg.huber_delta} does not fit "
                             f"{self.fmts.value}")
        return word

    def _td_words(self, state: AgentState, batch, weights):
        """The loss unit's inputs and outputs in words, shared by `sgd_step` and `td_errors`:
        the online net on s (with its layer inputs and ReLU masks, for the backward pass) and
        on s' (double Q), the target net on s', then the loss unit. Returns ((online operand,
        IS weight words, q, inputs, masks, delta, td, |td|), saturations)."""
        c, f = self.cfg, self.fmts
        (x, xn, reward, discount, w), n_in = self._loss_inputs(state, batch, weights)
        action = jnp.asarray(batch["action"], jnp.int32)
        online, n_op = optim.operand(state.params, f)
        target, n_opt = optim.operand(state.target_params, f)
        q, inputs, masks, n1 = mlp_forward(online, x, f.act, f.weight, f.value)
        qn_target, _, _, n2 = mlp_forward(target, xn, f.act, f.weight, f.value)
        if c.double:
            qn_online, _, _, n3 = mlp_forward(online, xn, f.act, f.weight, f.value)
        else:
            qn_online, n3 = qn_target, jnp.int32(0)
        delta, td, abs_td, n4 = dqn_loss_unit(q, qn_online, qn_target, action, reward, discount,
                                              w, self._huber(), c.double, f)
        return ((online, w, q, inputs, masks, delta, td, abs_td),
                n_in + n_op + n_opt + n1 + n2 + n3 + n4)

    def sgd_step(self, state: AgentState, batch, weights):
        """One SGD step in words. Returns (state, |td| value words (B,), td words, metrics)."""
        if self.grad_axis is not None:
            raise ValueError("train.devices: the fixed-point learner is one module; data "
                             "parallelism over devices is not implemented")
        c, f = self.cfg, self.fmts
        b = check_batch(self.spec, batch, weights)
        (online, w, q, inputs, masks, delta, td, abs_td), n_fwd = self._td_words(
            state, batch, weights)
        grads, _, n5 = mlp_backward(online, inputs, masks, delta, f.act, f.weight, f.delta,
                                    f.grad)
        lr = step_rate(c, "learning_rate", b, state.train_steps, f)
        params, opt_state, n6 = optim.step(c.optimizer, state.params, state.opt_state, grads,
                                           lr, c.fixed_point, f)
        steps = state.train_steps + 1
        target_params, n7 = optim.update_target(state.target_params, params, steps,
                                                c.target_update_period, c.tau, f)
        metrics = self.step_metrics(td, w, q, n_fwd + n5 + n6 + n7)
        return AgentState(params, target_params, opt_state, steps), abs_td, td, metrics

    def step_metrics(self, td, w, q, saturations) -> dict:
        """A step's metrics from its words: TD (value), IS weights (prob), Q(s) (value), and
        its saturation count (also what the FPGA learner's train primitive reports)."""
        c, f = self.cfg, self.fmts
        td_f = dequantize(td, f.value)
        weights_f = dequantize(w, f.prob)
        huber = jnp.abs(td_f) - 0.5 * c.huber_delta
        huber = jnp.where(jnp.abs(td_f) <= c.huber_delta, 0.5 * td_f**2, c.huber_delta * huber)
        return {
            "loss": jnp.mean(weights_f * huber),
            "q_mean": jnp.mean(dequantize(q, f.value)),
            "td_abs_mean": jnp.mean(jnp.abs(td_f)),
            "saturations": saturations,
        }

    def train_step(self, state: AgentState, batch, weights):
        """The agent interface: (state, td_errors (B,) float32, metrics)."""
        state, _, td, metrics = self.sgd_step(state, batch, weights)
        return state, dequantize(td, self.fmts.value), metrics

    def td_errors(self, state: AgentState, batch) -> jax.Array:
        """The TD errors `train_step` would compute, with no step taken (float32 (B,))."""
        weights = jnp.ones(batch["reward"].shape, jnp.float32)
        (_, _, _, _, _, _, td, _), _ = self._td_words(state, batch, weights)
        return dequantize(td, self.fmts.value)


def make_fixed_dqn(cfg: DQNConfig, spec: EnvSpec, batch_size: int | None = None) -> FixedDQN:
    """A fixed-point DQN agent; refuses (one line, naming the key) what it does not implement
    and, given the batch size, a learning rate its word cannot hold."""
    if not isinstance(spec.action, DiscreteActions):
        raise ValueError(f"DQN needs discrete actions; {spec.name} has {spec.action}")
    check_fixed_config(cfg, "dqn")
    agent = FixedDQN(cfg, spec)
    agent._huber()
    check_constants(cfg, agent.fmts)
    if batch_size is not None:
        step_rate(cfg, "learning_rate", batch_size, 0, agent.fmts)
    return agent
