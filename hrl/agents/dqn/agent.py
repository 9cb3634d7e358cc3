"""DQN: double DQN with Huber loss, target network by period or Polyak, epsilon-greedy actors.

    agent = make_dqn(DQNConfig(), env.spec)
    state = agent.init(key)
    actions = agent.act(state, obs, key, env_step, explore=True)            # infer
    state, td_errors, metrics = agent.train_step(state, batch, weights)     # train

`train_step` is one SGD step on a prioritized replay batch; |td_errors| are the new priorities.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from hrl.agents.common import (
    ACTIVATIONS,
    OPTIMIZERS,
    AgentState,
    average_gradients,
    check_batch,
    check_choice,
    check_hidden_sizes,
    check_nonnegative_int,
    check_optional_positive,
    check_positive_int,
    check_range,
    global_norm,
    make_optimizer,
    update_target,
)
from hrl.agents.dqn.losses import dqn_loss
from hrl.agents.dqn.networks import make_q_network
from hrl.agents.networks import check_conv_layers, known_networks
from hrl.envs.spec import DiscreteActions, EnvSpec
from hrl.fixed_point.formats import NUMERICS, FixedPointConfig


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    hidden_sizes: tuple[int, ...] = (64, 64)  # the MLP, or the conv stack's MLP head
    # The network spec (hrl.agents.networks): mlp, conv (conv_layers, then the MLP head),
    # minatar (MinAtar's published torso), or a name given to register_network.
    network: str = "mlp"
    conv_layers: tuple[tuple[int, int, int], ...] = ((16, 3, 1),)  # (filters, kernel, stride)
    activation: str = "relu"
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    # Learning-rate schedule: 0 keeps it constant; N > 0 lowers it linearly over the first N
    # SGD steps to learning_rate * lr_end_factor, and holds it there.
    lr_decay_steps: int = 0
    lr_end_factor: float = 0.0
    adam_eps: float = 1e-8
    max_grad_norm: float | None = 10.0  # global-norm clipping; None: off
    huber_delta: float = 1.0
    double: bool = True
    # Every `target_update_period` SGD steps: target <- tau*online + (1-tau)*target.
    target_update_period: int = 1
    tau: float = 0.005
    # Epsilon-greedy: linear from eps_start to eps_end over eps_decay_steps env steps.
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_steps: int = 10_000
    eval_epsilon: float = 0.0  # epsilon when explore=False
    # The learner's arithmetic: float (float32, optax) or fixed (the FPGA learning module's
    # fixed-point reference, hrl.fixed_point: MLP, ReLU, optimizer adam or sgd (momentum), no
    # max_grad_norm; the FPGA's arithmetic on any executor, with no simulator).
    numerics: str = "float"
    # numerics: fixed only: its words' formats ([width, frac] each), momentum, betas.
    fixed_point: FixedPointConfig = dataclasses.field(default_factory=FixedPointConfig)

    def __post_init__(self):
        c = "DQNConfig"
        check_choice(c, "numerics", self.numerics, NUMERICS)
        if not isinstance(self.fixed_point, FixedPointConfig):
            raise ValueError(f"{c}.fixed_point must be a mapping of formats, got "
                             f"{self.fixed_point!r}")
        check_hidden_sizes(c, "hidden_sizes", self.hidden_sizes)
        check_choice(c, "network", self.network, known_networks())
        check_conv_layers(c, "conv_layers", self.conv_layers)
        check_choice(c, "activation", self.activation, ACTIVATIONS)
        check_choice(c, "optimizer", self.optimizer, OPTIMIZERS)
        check_range(c, "learning_rate", self.learning_rate, 0.0, 1.0, low_open=True)
        check_nonnegative_int(c, "lr_decay_steps", self.lr_decay_steps)
        check_range(c, "lr_end_factor", self.lr_end_factor, 0.0, 1.0)
        check_range(c, "adam_eps", self.adam_eps, 0.0, 1.0, low_open=True)
        check_optional_positive(c, "max_grad_norm", self.max_grad_norm)
        check_range(
            c, "huber_delta", self.huber_delta, 0.0, float("inf"), low_open=True, high_open=True
        )
        if not isinstance(self.double, bool):
            raise ValueError(f"{c}.double must be a bool, got {self.double!r}")
        check_positive_int(c, "target_update_period", self.target_update_period)
        check_range(c, "tau", self.tau, 0.0, 1.0, low_open=True)
        check_range(c, "eps_start", self.eps_start, 0.0, 1.0)
        check_range(c, "eps_end", self.eps_end, 0.0, 1.0)
        check_nonnegative_int(c, "eps_decay_steps", self.eps_decay_steps)
        check_range(c, "eval_epsilon", self.eval_epsilon, 0.0, 1.0)


@dataclasses.dataclass(frozen=True, eq=False)
class DQN:
    """Static config and the pure functions of a DQN agent (see the module docstring)."""

    cfg: DQNConfig
    spec: EnvSpec
    grad_axis: str | None = None  # data parallelism: gradients averaged over this mesh axis

    @property
    def network(self):
        c = self.cfg
        return make_q_network(c.hidden_sizes, self.spec.action.n, c.activation, c.network,
                              c.conv_layers)

    @property
    def optimizer(self) -> optax.GradientTransformation:
        c = self.cfg
        lr = c.learning_rate
        if c.lr_decay_steps:
            lr = optax.linear_schedule(lr, lr * c.lr_end_factor, c.lr_decay_steps)
        return make_optimizer(c.optimizer, lr, c.max_grad_norm, c.adam_eps)

    def init(self, key) -> AgentState:
        params = self.network.init(key, jnp.zeros((1, *self.spec.obs_shape), jnp.float32))
        return AgentState(
            params=params,
            target_params=params,
            opt_state=self.optimizer.init(params),
            train_steps=jnp.int32(0),
        )

    def epsilon(self, env_step) -> jax.Array:
        """Exploration rate after `env_step` env steps (counted over all envs)."""
        c = self.cfg
        frac = jnp.clip(jnp.asarray(env_step, jnp.float32) / max(c.eps_decay_steps, 1), 0.0, 1.0)
        return jnp.float32(c.eps_start) + frac * jnp.float32(c.eps_end - c.eps_start)

    def q_values(self, state: AgentState, obs) -> jax.Array:
        return self.network.apply(state.params, obs)

    def policy(self, state: AgentState, obs) -> jax.Array:
        """The greedy policy, int32 (M,): argmax of Q, no exploration (evaluation)."""
        return jnp.argmax(self.q_values(state, obs), axis=-1).astype(jnp.int32)

    def act(self, state: AgentState, obs, key, env_step, explore) -> jax.Array:
        """Epsilon-greedy int32 actions (M,) for observations (M, *obs_shape).

        `explore` may be a Python or traced bool; False uses cfg.eval_epsilon.
        """
        greedy = self.policy(state, obs)
        eps = jnp.where(explore, self.epsilon(env_step), jnp.float32(self.cfg.eval_epsilon))
        coin_key, action_key = jax.random.split(key)
        m = greedy.shape[0]
        random_actions = jax.random.randint(action_key, (m,), 0, self.spec.action.n, jnp.int32)
        take_random = jax.random.uniform(coin_key, (m,)) < eps
        return jnp.where(take_random, random_actions, greedy)

    def init_carry(self, num_envs: int) -> tuple:
        """DQN actors keep no per-env state; the empty carry keeps the interface uniform."""
        del num_envs
        return ()

    def act_with_carry(self, state, carry, obs, key, env_step, explore, episode_start):
        del episode_start
        return carry, self.act(state, obs, key, env_step, explore)

    def td_errors(self, state: AgentState, batch) -> jax.Array:
        """The TD errors (B,) `train_step` would compute on `batch` with these weights, with
        no step taken: an Ape-X actor's initial priorities. The same loss function, so the same
        definition; O(3 forward) of the MLP."""
        batch = {**batch, "action": jnp.asarray(batch["action"], jnp.int32)}
        weights = jnp.ones(batch["reward"].shape, jnp.float32)  # the TD errors ignore them
        _, (td, _) = dqn_loss(state.params, state.target_params, batch, weights,
                              self.network.apply, self.cfg.double, self.cfg.huber_delta)
        return td

    def train_step(self, state: AgentState, batch, weights):
        """One SGD step on a replay batch with IS `weights` (B,).

        Returns (new_state, td_errors (B,), metrics). O(3 forward + 1 backward) of the MLP.
        """
        check_batch(self.spec, batch, weights)
        batch = {**batch, "action": jnp.asarray(batch["action"], jnp.int32)}
        grad_fn = jax.value_and_grad(dqn_loss, has_aux=True)
        (loss, (td, q_mean)), grads = grad_fn(
            state.params,
            state.target_params,
            batch,
            jnp.asarray(weights, jnp.float32),
            self.network.apply,
            self.cfg.double,
            self.cfg.huber_delta,
        )
        grads = average_gradients(grads, self.grad_axis)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        train_steps = state.train_steps + 1
        target_params = update_target(
            params, state.target_params, train_steps, self.cfg.target_update_period, self.cfg.tau
        )
        metrics = {
            "loss": loss,
            "q_mean": q_mean,
            "td_abs_mean": jnp.mean(jnp.abs(td)),
            "grad_norm": global_norm(grads),
        }
        new_state = AgentState(params, target_params, opt_state, train_steps)
        return new_state, td, metrics


def make_dqn(cfg: DQNConfig, spec: EnvSpec) -> DQN:
    """A DQN agent for a discrete-action environment."""
    if not isinstance(spec.action, DiscreteActions):
        raise ValueError(f"DQN needs discrete actions; {spec.name} has {spec.action}")
    return DQN(cfg, spec)
