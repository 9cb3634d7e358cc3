"""DDPG on the fixed-point learner, behind the DDPG agent's interface. Selected by
`agent.numerics: fixed` (see `hrl.runtime.components`).

The actor's output nonlinearity is a saturating clip into the action box (`layers.clip_output`)
in place of tanh: two comparators in hardware, no table; its backward pass lets a delta
through where the step points back into the box, so an output past a bound keeps learning.
The actor's last layer is initialised small (as the float actor's) so it starts inside.

`sgd_step`, all in words: the critic's step (target actor and critic on next_obs, critic on
(obs, action), the loss unit, backward, the optimizer: Adam or momentum SGD), then the
actor's step against the updated critic (actor forward, critic forward on (obs, mu(obs)),
the critic's backward to its action inputs with output delta -1, the clip's backward, the
actor's backward, the optimizer), then Polyak (or hard) target updates of both.
`metrics['saturations']` counts every narrowing that clipped. Exploration noise is added to
the dequantized action outside the module (float, as the float agent's).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import AgentState, check_batch
from hrl.agents.ddpg.agent import DDPG, DDPGConfig
from hrl.envs.spec import ContinuousActions, EnvSpec
from hrl.fixed_point import optim
from hrl.fixed_point.common import (
    check_constants,
    check_fixed_config,
    init_mlp,
    step_rate,
)
from hrl.fixed_point.formats import FxFormats
from hrl.fixed_point.layers import (
    clip_output,
    clip_output_backward,
    mlp_backward,
    mlp_forward,
    mlp_input_delta,
)
from hrl.fixed_point.losses import ddpg_actor_delta, ddpg_critic_unit
from hrl.fixed_point.numerics import dequantize, quantize


@dataclasses.dataclass(frozen=True, eq=False)
class FixedDDPG(DDPG):
    """A fixed-point DDPG agent: DDPG's exploration, the learning module's arithmetic."""

    @property
    def fmts(self) -> FxFormats:
        return self.cfg.fixed_point.formats(self.cfg.optimizer, "ddpg")

    @property
    def _obs_size(self) -> int:
        return int(np.prod(self.spec.obs_shape))

    @property
    def _act_size(self) -> int:
        return int(np.prod(self.spec.action.shape))

    def _bounds(self):
        """The action box as act words (low, high), each (A,)."""
        a, f = self.spec.action, self.fmts
        low = np.round(np.asarray(a.low_array(), np.float64).reshape(-1) * 2**f.act.frac)
        high = np.round(np.asarray(a.high_array(), np.float64).reshape(-1) * 2**f.act.frac)
        if low.min() < f.act.min_int or high.max() > f.act.max_int:
            raise ValueError(f"agent.fixed_point.act: {f.act} cannot hold the action box "
                             f"[{a.low}, {a.high}]")
        return jnp.asarray(low, jnp.int32), jnp.asarray(high, jnp.int32)

    def init(self, key) -> AgentState:
        actor_key, critic_key = jax.random.split(key)
        f = self.fmts
        params = {
            "actor": init_mlp(actor_key, self.cfg.actor_hidden_sizes, self._obs_size,
                              self._act_size, f, out_scale=1e-2),
            "critic": init_mlp(critic_key, self.cfg.critic_hidden_sizes,
                               self._obs_size + self._act_size, 1, f),
        }
        opt_state = {k: optim.init_state(p, self.cfg.optimizer) for k, p in params.items()}
        return AgentState(params, params, opt_state, jnp.int32(0))

    # ------------------------------------------------------------------ infer
    def _mu_words(self, actor_params, x):
        """mu(x) as act words (B, A), with the clip's masks and the forward's inputs."""
        f = self.fmts
        w, n0 = optim.operand(actor_params, f)
        z, inputs, masks, n1 = mlp_forward(w, x, f.act, f.weight, f.act)
        low, high = self._bounds()
        mu, lo, hi = clip_output(z, low, high)
        return mu, (w, inputs, masks, lo, hi), n0 + n1

    def policy(self, state: AgentState, obs) -> jnp.ndarray:
        """The deterministic policy mu(s) (M, *action_shape), float32 of the action words."""
        f = self.fmts
        x, _ = quantize(jnp.reshape(obs, (jnp.shape(obs)[0], -1)), f.act)
        mu, _, _ = self._mu_words(state.params["actor"], x)
        return dequantize(mu, f.act).reshape(jnp.shape(obs)[0], *self.spec.action.shape)

    def act(self, state: AgentState, obs, key, env_step, explore):
        if self.cfg.noise == "ou":
            raise ValueError("agent.noise: the fixed-point learner's actor takes gaussian noise")
        mean_action = self.policy(state, obs)
        noise_key, uniform_key = jax.random.split(key)
        std = jnp.where(explore, self.noise_std(env_step), self.cfg.eval_noise_scale)
        noise = std * jax.random.normal(noise_key, mean_action.shape)
        return self._noisy_actions(mean_action, noise, uniform_key, env_step, explore)

    def act_with_carry(self, state, carry, obs, key, env_step, explore, episode_start):
        del episode_start
        return carry, self.act(state, obs, key, env_step, explore)

    # ------------------------------------------------------------------ train
    def _inputs(self, batch, weights):
        f = self.fmts
        b = batch["reward"].shape[0]
        x, n0 = quantize(jnp.reshape(batch["obs"], (b, -1)), f.act)
        xn, n1 = quantize(jnp.reshape(batch["next_obs"], (b, -1)), f.act)
        a, n2 = quantize(jnp.reshape(batch["action"], (b, -1)), f.act)
        reward, n3 = quantize(batch["reward"], f.value)
        discount, n4 = quantize(batch["discount"], f.prob)
        w, n5 = quantize(weights, f.prob)
        return (x, xn, a, reward, discount, w), n0 + n1 + n2 + n3 + n4 + n5

    def _huber(self):
        h = self.cfg.critic_huber_delta
        if h is None:
            return None
        word = round(h * 2**self.fmts.value.frac)
        if not 1 <= word <= self.fmts.value.max_int:
            raise ValueError(f"agent.critic_huber_delta: {h} does not fit {self.fmts.value}")
        return word

    def critic_forward(self, critic_params, x, a):
        """The critic on (x, a) from its master words: (operand words, Q value words (B, 1),
        the forward's inputs and masks, saturations). The critic pass of `sgd_step`, and
        what the FPGA learner's host side reads its Q mean from (`kernel_train_ddpg`)."""
        f = self.fmts
        critic, n0 = optim.operand(critic_params, f)
        q, inputs, masks, n1 = mlp_forward(critic, jnp.concatenate([x, a], 1), f.act, f.weight,
                                           f.value)
        return critic, q, inputs, masks, n0 + n1

    def _critic_td(self, state, x, xn, a, reward, discount, w):
        f = self.fmts
        an, _, n0 = self._mu_words(state.target_params["actor"], xn)
        critic_t, n1 = optim.operand(state.target_params["critic"], f)
        qn, _, _, n2 = mlp_forward(critic_t, jnp.concatenate([xn, an], 1), f.act, f.weight,
                                   f.value)
        critic, q, inputs, masks, n3 = self.critic_forward(state.params["critic"], x, a)
        delta, td, abs_td, n5 = ddpg_critic_unit(q[:, 0], qn[:, 0], reward, discount, w,
                                                 self._huber(), f)
        return (critic, inputs, masks, delta, td, abs_td, q), n0 + n1 + n2 + n3 + n5

    def _rates(self, b: int, train_steps):
        return [step_rate(self.cfg, key, b, train_steps, self.fmts)
                for key in ("critic_learning_rate", "actor_learning_rate")]

    def sgd_step(self, state: AgentState, batch, weights):
        """One critic and one actor step in words, then the target updates.
        Returns (state, |td| value words (B,), td words, metrics)."""
        if self.grad_axis is not None:
            raise ValueError("train.devices: the fixed-point learner is one module; data "
                             "parallelism over devices is not implemented")
        c, f = self.cfg, self.fmts
        b = check_batch(self.spec, batch, weights)
        (x, xn, a, reward, discount, w), n_in = self._inputs(batch, weights)
        lr_critic, lr_actor = self._rates(b, state.train_steps)
        params, opt = state.params, state.opt_state

        (critic, inputs, masks, delta, td, abs_td, q), n1 = self._critic_td(
            state, x, xn, a, reward, discount, w)
        c_grads, _, n2 = mlp_backward(critic, inputs, masks, delta, f.act, f.weight, f.delta,
                                      f.grad)
        critic_params, critic_opt, n3 = optim.step(c.optimizer, params["critic"],
                                                   opt["critic"], c_grads, lr_critic,
                                                   c.fixed_point, f)

        mu_a, (actor, a_inputs, a_masks, lo, hi), n4 = self._mu_words(params["actor"], x)
        critic2, n5 = optim.operand(critic_params, f)
        _, q_inputs, q_masks, n6 = mlp_forward(critic2, jnp.concatenate([x, mu_a], 1), f.act,
                                               f.weight, f.value)
        d_in, n7 = mlp_input_delta(critic2, q_masks, ddpg_actor_delta(b, f), f.weight, f.delta)
        d_z = clip_output_backward(d_in[:, self._obs_size:], lo, hi)
        a_grads, _, n8 = mlp_backward(actor, a_inputs, a_masks, d_z, f.act, f.weight, f.delta,
                                      f.grad)
        actor_params, actor_opt, n9 = optim.step(c.optimizer, params["actor"], opt["actor"],
                                                 a_grads, lr_actor, c.fixed_point, f)

        new_params = {"actor": actor_params, "critic": critic_params}
        steps = state.train_steps + 1
        target, n10 = optim.update_target(state.target_params, new_params, steps,
                                          c.target_update_period, c.tau, f)
        saturations = n_in + n1 + n2 + n3 + n4 + n5 + n6 + n7 + n8 + n9 + n10
        td_f = dequantize(td, f.value)
        metrics = {
            "critic_loss": jnp.mean(dequantize(w, f.prob) * 0.5 * td_f**2),
            "q_mean": jnp.mean(dequantize(q, f.value)),
            "td_abs_mean": jnp.mean(jnp.abs(td_f)),
            "saturations": saturations,
        }
        new_state = AgentState(new_params, target, {"actor": actor_opt, "critic": critic_opt},
                               steps)
        return new_state, abs_td, td, metrics

    def train_step(self, state: AgentState, batch, weights):
        """The agent interface: (state, td_errors (B,) float32, metrics)."""
        state, _, td, metrics = self.sgd_step(state, batch, weights)
        return state, dequantize(td, self.fmts.value), metrics

    def td_errors(self, state: AgentState, batch):
        weights = jnp.ones(batch["reward"].shape, jnp.float32)
        (x, xn, a, reward, discount, w), _ = self._inputs(batch, weights)
        (_, _, _, _, td, _, _), _ = self._critic_td(state, x, xn, a, reward, discount, w)
        return dequantize(td, self.fmts.value)


def make_fixed_ddpg(cfg: DDPGConfig, spec: EnvSpec, batch_size: int | None = None) -> FixedDDPG:
    """A fixed-point DDPG agent; refuses (one line, naming the key) what it does not implement
    and, given the batch size, a learning rate its word cannot hold."""
    if not isinstance(spec.action, ContinuousActions):
        raise ValueError(f"DDPG needs continuous actions; {spec.name} has {spec.action}")
    check_fixed_config(cfg, "ddpg")
    agent = FixedDDPG(cfg, spec)
    agent._bounds()
    agent._huber()
    check_constants(cfg, agent.fmts)
    if batch_size is not None:
        agent._rates(batch_size, 0)
    return agent
