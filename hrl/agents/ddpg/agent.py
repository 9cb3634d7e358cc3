"""DDPG: deterministic actor, Q critic, Polyak-averaged target networks, Gaussian or OU noise.

    agent = make_ddpg(DDPGConfig(), env.spec)
    state = agent.init(key)      # params/target_params/opt_state are {'actor', 'critic'} dicts
    actions = agent.act(state, obs, key, env_step, explore=True)                  # Gaussian
    carry, actions = agent.act_with_carry(state, carry, obs, key, env_step,      # OU (or any)
                                          explore=True, episode_start=done_mask)
    state, td_errors, metrics = agent.train_step(state, batch, weights)

`train_step` does one critic step (IS-weighted; its |TD errors| are the new priorities), one
actor step against the freshly updated critic, then the target update.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import struct

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
from hrl.agents.ddpg.losses import actor_loss, critic_loss
from hrl.agents.ddpg.networks import Actor, Critic
from hrl.envs.spec import ContinuousActions, EnvSpec
from hrl.fixed_point.formats import NUMERICS, FixedPointConfig


@dataclasses.dataclass(frozen=True)
class DDPGConfig:
    actor_hidden_sizes: tuple[int, ...] = (256, 256)
    critic_hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    optimizer: str = "adam"
    actor_learning_rate: float = 1e-3
    critic_learning_rate: float = 1e-3
    # Learning-rate schedule of both networks: 0 keeps them constant; N > 0 lowers each
    # linearly over the first N SGD steps to its learning rate * lr_end_factor, and holds it.
    lr_decay_steps: int = 0
    lr_end_factor: float = 0.0
    max_grad_norm: float | None = None
    critic_huber_delta: float | None = None  # None: squared error
    # Every `target_update_period` SGD steps: target <- tau*online + (1-tau)*target.
    target_update_period: int = 1
    tau: float = 0.005
    # Exploration. Noise std (Gaussian) or OU sigma, as a fraction of the half-range of each
    # action component; OU needs the explicit carry of `act_with_carry`.
    noise: str = "gaussian"
    noise_scale: float = 0.1
    # Noise schedule: 0 keeps noise_scale; N > 0 lowers it linearly over the first N env steps
    # (all envs, counted from the start, random_steps included) to noise_end_scale, and holds it.
    noise_decay_steps: int = 0
    noise_end_scale: float = 0.0
    ou_theta: float = 0.15
    random_steps: int = 0  # env steps (all envs) of uniform random actions before the actor
    eval_noise_scale: float = 0.0  # Gaussian noise when explore=False
    # Clipped double Q (TD3's twin critics): two critics, the TD target takes their minimum.
    twin_critics: bool = False
    # The learner's arithmetic: float (float32, optax) or fixed (the FPGA learning module's
    # fixed-point reference, hrl.fixed_point: MLP, ReLU, optimizer adam or sgd (momentum), no
    # max_grad_norm; the FPGA's arithmetic on any executor, with no simulator).
    numerics: str = "float"
    # numerics: fixed only: its words' formats ([width, frac] each), momentum, betas.
    fixed_point: FixedPointConfig = dataclasses.field(default_factory=FixedPointConfig)

    def __post_init__(self):
        c = "DDPGConfig"
        check_choice(c, "numerics", self.numerics, NUMERICS)
        if not isinstance(self.fixed_point, FixedPointConfig):
            raise ValueError(f"{c}.fixed_point must be a mapping of formats, got "
                             f"{self.fixed_point!r}")
        check_hidden_sizes(c, "actor_hidden_sizes", self.actor_hidden_sizes)
        check_hidden_sizes(c, "critic_hidden_sizes", self.critic_hidden_sizes)
        check_choice(c, "activation", self.activation, ACTIVATIONS)
        check_choice(c, "optimizer", self.optimizer, OPTIMIZERS)
        check_range(c, "actor_learning_rate", self.actor_learning_rate, 0.0, 1.0, low_open=True)
        check_range(c, "critic_learning_rate", self.critic_learning_rate, 0.0, 1.0, low_open=True)
        check_nonnegative_int(c, "lr_decay_steps", self.lr_decay_steps)
        check_range(c, "lr_end_factor", self.lr_end_factor, 0.0, 1.0)
        check_optional_positive(c, "max_grad_norm", self.max_grad_norm)
        check_optional_positive(c, "critic_huber_delta", self.critic_huber_delta)
        check_positive_int(c, "target_update_period", self.target_update_period)
        check_range(c, "tau", self.tau, 0.0, 1.0, low_open=True)
        check_choice(c, "noise", self.noise, ("gaussian", "ou"))
        check_range(c, "noise_scale", self.noise_scale, 0.0, float("inf"), high_open=True)
        check_nonnegative_int(c, "noise_decay_steps", self.noise_decay_steps)
        check_range(c, "noise_end_scale", self.noise_end_scale, 0.0, float("inf"),
                    high_open=True)
        check_range(c, "ou_theta", self.ou_theta, 0.0, 1.0, low_open=True)
        check_nonnegative_int(c, "random_steps", self.random_steps)
        check_range(c, "eval_noise_scale", self.eval_noise_scale, 0.0, float("inf"), high_open=True)
        if not isinstance(self.twin_critics, bool):
            raise ValueError(f"{c}.twin_critics must be a bool, got {self.twin_critics!r}")


@struct.dataclass
class OUNoise:
    """Per-env Ornstein-Uhlenbeck state, in units of the action half-range."""

    x: jax.Array  # float32 (M, *action_shape)


@dataclasses.dataclass(frozen=True, eq=False)
class DDPG:
    """Static config and the pure functions of a DDPG agent (see the module docstring)."""

    cfg: DDPGConfig
    spec: EnvSpec
    grad_axis: str | None = None  # data parallelism: gradients averaged over this mesh axis

    @property
    def actor(self) -> Actor:
        a = self.spec.action
        return Actor(self.cfg.actor_hidden_sizes, a.shape, a.low, a.high, self.cfg.activation)

    @property
    def critic(self) -> Critic:
        return Critic(self.cfg.critic_hidden_sizes, self.cfg.activation,
                      2 if self.cfg.twin_critics else 1)

    def _optimizer(self, learning_rate: float) -> optax.GradientTransformation:
        c = self.cfg
        lr = learning_rate
        if c.lr_decay_steps:
            lr = optax.linear_schedule(lr, lr * c.lr_end_factor, c.lr_decay_steps)
        return make_optimizer(c.optimizer, lr, c.max_grad_norm)

    @property
    def actor_optimizer(self):
        return self._optimizer(self.cfg.actor_learning_rate)

    @property
    def critic_optimizer(self):
        return self._optimizer(self.cfg.critic_learning_rate)

    def init(self, key) -> AgentState:
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, *self.spec.obs_shape), jnp.float32)
        action = jnp.zeros((1, *self.spec.action.shape), jnp.float32)
        params = {
            "actor": self.actor.init(actor_key, obs),
            "critic": self.critic.init(critic_key, obs, action),
        }
        opt_state = {
            "actor": self.actor_optimizer.init(params["actor"]),
            "critic": self.critic_optimizer.init(params["critic"]),
        }
        return AgentState(params, params, opt_state, jnp.int32(0))

    # ------------------------------------------------------------------ infer
    def noise_std(self, env_step) -> jax.Array:
        """The exploration noise scale (Gaussian std or OU sigma) after `env_step` env steps."""
        c = self.cfg
        if not c.noise_decay_steps:
            return jnp.float32(c.noise_scale)
        frac = jnp.clip(jnp.asarray(env_step, jnp.float32) / c.noise_decay_steps, 0.0, 1.0)
        return jnp.float32(c.noise_scale) + frac * jnp.float32(c.noise_end_scale - c.noise_scale)

    def _noisy_actions(self, mean_action, noise_unit, key, env_step, explore):
        """mean + noise (in half-range units), clipped to the box; uniform during warm-up."""
        a = self.spec.action
        low, high = jnp.asarray(a.low_array()), jnp.asarray(a.high_array())
        noisy = jnp.clip(mean_action + noise_unit * 0.5 * (high - low), low, high)
        uniform = jax.random.uniform(key, mean_action.shape, jnp.float32, low, high)
        warmup = jnp.logical_and(explore, jnp.asarray(env_step) < self.cfg.random_steps)
        return jnp.where(warmup, uniform, noisy)

    def policy(self, state: AgentState, obs) -> jax.Array:
        """The deterministic policy mu(s), (M, *action_shape) in the action box, no noise
        (evaluation)."""
        return self.actor.apply(state.params["actor"], obs)

    def act(self, state: AgentState, obs, key, env_step, explore) -> jax.Array:
        """Actions (M, *action_shape) in the action box: mu(s) plus Gaussian noise if exploring.

        With cfg.noise == 'ou' use `act_with_carry`, which keeps the per-env noise state.
        """
        if self.cfg.noise == "ou":
            raise ValueError(
                "DDPGConfig.noise='ou' keeps per-env noise state: call act_with_carry with the "
                "carry from init_carry(num_envs)"
            )
        mean_action = self.actor.apply(state.params["actor"], obs)
        noise_key, uniform_key = jax.random.split(key)
        std = jnp.where(explore, self.noise_std(env_step), self.cfg.eval_noise_scale)
        noise = std * jax.random.normal(noise_key, mean_action.shape)
        return self._noisy_actions(mean_action, noise, uniform_key, env_step, explore)

    def init_carry(self, num_envs: int):
        """Actor-side state: OU noise per env (zeros) for noise='ou', else an empty tuple."""
        if self.cfg.noise == "ou":
            return OUNoise(jnp.zeros((num_envs, *self.spec.action.shape), jnp.float32))
        return ()

    def act_with_carry(self, state, carry, obs, key, env_step, explore, episode_start):
        """Like `act`, threading the OU noise carry; `episode_start` (M,) bool resets it.

        OU: x <- x - theta * x + sigma * N(0, 1) (dt = 1), zeroed where a new episode starts.
        """
        if self.cfg.noise != "ou":
            return carry, self.act(state, obs, key, env_step, explore)
        noise_key, uniform_key = jax.random.split(key)
        start = jnp.asarray(episode_start, bool).reshape((-1,) + (1,) * (carry.x.ndim - 1))
        x = jnp.where(start, 0.0, carry.x)
        sigma = self.noise_std(env_step)
        x = x - self.cfg.ou_theta * x + sigma * jax.random.normal(noise_key, x.shape)
        mean_action = self.actor.apply(state.params["actor"], obs)
        noise = jnp.where(explore, x, 0.0)
        actions = self._noisy_actions(mean_action, noise, uniform_key, env_step, explore)
        return OUNoise(x), actions

    # ------------------------------------------------------------------ train
    def td_errors(self, state: AgentState, batch) -> jax.Array:
        """The (first) critic's TD errors (B,) `train_step` would compute on `batch` with
        these weights, with no step taken: an Ape-X actor's initial priorities. The same loss
        function, so the same definition; O(forward of the target actor and both critics)."""
        batch = {**batch, "action": jnp.asarray(batch["action"], jnp.float32)}
        weights = jnp.ones(batch["reward"].shape, jnp.float32)  # the TD errors ignore them
        _, (td, _) = critic_loss(
            state.params["critic"], state.target_params["actor"],
            state.target_params["critic"], batch, weights, self.actor.apply,
            self.critic.apply, self.cfg.critic_huber_delta)
        return td

    def train_step(self, state: AgentState, batch, weights):
        """One critic step, one actor step, target update. Returns (state, td_errors, metrics)."""
        check_batch(self.spec, batch, weights)
        batch = {**batch, "action": jnp.asarray(batch["action"], jnp.float32)}
        weights = jnp.asarray(weights, jnp.float32)
        params, target = state.params, state.target_params
        actor_apply, critic_apply = self.actor.apply, self.critic.apply

        (c_loss, (td, q_mean)), c_grads = jax.value_and_grad(critic_loss, has_aux=True)(
            params["critic"],
            target["actor"],
            target["critic"],
            batch,
            weights,
            actor_apply,
            critic_apply,
            self.cfg.critic_huber_delta,
        )
        c_grads = average_gradients(c_grads, self.grad_axis)
        c_updates, c_opt = self.critic_optimizer.update(
            c_grads, state.opt_state["critic"], params["critic"]
        )
        critic_params = optax.apply_updates(params["critic"], c_updates)

        a_loss, a_grads = jax.value_and_grad(actor_loss)(
            params["actor"], critic_params, batch["obs"], actor_apply, critic_apply
        )
        a_grads = average_gradients(a_grads, self.grad_axis)
        a_updates, a_opt = self.actor_optimizer.update(
            a_grads, state.opt_state["actor"], params["actor"]
        )
        actor_params = optax.apply_updates(params["actor"], a_updates)

        new_params = {"actor": actor_params, "critic": critic_params}
        train_steps = state.train_steps + 1
        new_target = update_target(
            new_params, target, train_steps, self.cfg.target_update_period, self.cfg.tau
        )
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "q_mean": q_mean,
            "td_abs_mean": jnp.mean(jnp.abs(td)),
            "critic_grad_norm": global_norm(c_grads),
            "actor_grad_norm": global_norm(a_grads),
        }
        opt_state = {"actor": a_opt, "critic": c_opt}
        return AgentState(new_params, new_target, opt_state, train_steps), td, metrics


def make_ddpg(cfg: DDPGConfig, spec: EnvSpec) -> DDPG:
    """A DDPG agent for a continuous-action environment."""
    if not isinstance(spec.action, ContinuousActions):
        raise ValueError(f"DDPG needs continuous actions; {spec.name} has {spec.action}")
    return DDPG(cfg, spec)
