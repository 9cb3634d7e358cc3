"""What DQN and DDPG share: the agent state, the MLP, the optimizer, config checks, batch checks.

The replay batch both agents train on is the transition pytree the runtime stores:
    {'obs': (B, *obs_shape) f32, 'action': (B,) i32 or (B, *act_shape) f32,
     'reward': (B,) f32, 'next_obs': (B, *obs_shape) f32, 'discount': (B,) f32}
with discount = gamma**n * (1 - terminated). The agent never sees gamma or n: n-step returns
are folded into 'reward' and 'discount' by the runtime.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import flax.linen as nn
import jax
import jax.flatten_util
import jax.numpy as jnp
import optax
from flax import struct

from hrl.envs.spec import DiscreteActions, EnvSpec

BATCH_KEYS = ("obs", "action", "reward", "next_obs", "discount")
ACTIVATIONS = {"relu": nn.relu, "tanh": nn.tanh, "gelu": nn.gelu, "silu": nn.silu, "elu": nn.elu}
# adam_uncorrected: Adam without bias correction, the fixed-point learner's optimizer
# (hrl.fixed_point.optim.adam) in float32, to tell its arithmetic apart from its algorithm.
OPTIMIZERS = ("adam", "adam_uncorrected", "adamw", "rmsprop", "sgd")


@struct.dataclass
class AgentState:
    """Learner state of either agent. DDPG keeps {'actor', 'critic'} dicts in the first three."""

    params: Any
    target_params: Any
    opt_state: Any
    train_steps: jax.Array  # int32: SGD steps taken (drives the target-network schedule)


class Agent(Protocol):
    """What the runtime calls. Static config in the object, all state in `AgentState`."""

    spec: EnvSpec

    def init(self, key) -> AgentState: ...

    def act(self, state: AgentState, obs, key, env_step, explore) -> jax.Array: ...

    def policy(self, state: AgentState, obs) -> jax.Array: ...

    def init_carry(self, num_envs: int) -> Any: ...

    def act_with_carry(self, state, carry, obs, key, env_step, explore, episode_start): ...

    def train_step(
        self, state: AgentState, batch, weights
    ) -> tuple[AgentState, jax.Array, dict]: ...

    def td_errors(self, state: AgentState, batch) -> jax.Array: ...


class MLP(nn.Module):
    """Dense layers with `activation` between them; the last layer is linear."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "relu"
    out_scale: float = 1.0  # scale of the last layer's init (small keeps early outputs near 0)

    @nn.compact
    def __call__(self, x):
        x = x.reshape(x.shape[0], -1).astype(jnp.float32)  # bool/uint8 observations too
        for width in self.hidden_sizes:
            x = ACTIVATIONS[self.activation](nn.Dense(width)(x))
        init = nn.initializers.variance_scaling(self.out_scale, "fan_in", "uniform")
        return nn.Dense(self.out_size, kernel_init=init)(x)


def scale_by_adam_uncorrected(b1: float = 0.9, b2: float = 0.999,
                              eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam's scaling without bias correction: m / (sqrt(v) + eps), the moments zero-started
    averages of g and g^2. Its first steps are up to (1 - b1) / sqrt(1 - b2) ~ 3x Adam's."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return (zeros, jax.tree.map(jnp.zeros_like, params))

    def update(grads, state, params=None):
        del params
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state[0], grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state[1], grads)
        return jax.tree.map(lambda m, v: m / (jnp.sqrt(v) + eps), m, v), (m, v)

    return optax.GradientTransformation(init, update)


def make_optimizer(
    name: str, learning_rate, max_grad_norm: float | None, eps: float = 1e-8
) -> optax.GradientTransformation:
    """optax optimizer, optionally preceded by global-norm gradient clipping. `learning_rate`:
    a number, or an optax schedule of the optimizer's step count."""
    if name == "adam":
        opt = optax.adam(learning_rate, eps=eps)
    elif name == "adam_uncorrected":
        opt = optax.chain(scale_by_adam_uncorrected(eps=eps),
                          optax.scale_by_learning_rate(learning_rate))
    elif name == "adamw":
        opt = optax.adamw(learning_rate, eps=eps)
    elif name == "rmsprop":
        opt = optax.rmsprop(learning_rate, eps=eps)
    else:
        opt = optax.sgd(learning_rate)
    if max_grad_norm is not None:
        opt = optax.chain(optax.clip_by_global_norm(max_grad_norm), opt)
    return flatten_small(opt)


# Networks of at most this many parameters are optimized on one flat vector (`flatten_small`).
FLAT_MAX_PARAMS = 16_384


def _size(tree) -> int:
    return sum(math.prod(jnp.shape(x)) for x in jax.tree.leaves(tree))


def flatten_small(opt: optax.GradientTransformation) -> optax.GradientTransformation:
    """`opt` on one flat vector (`optax.flatten`) for a network of at most FLAT_MAX_PARAMS
    parameters, on each parameter array otherwise; decided from the (static) shapes at trace
    time. The same arithmetic either way, up to the order of the clipping norm's sum.

    Small: the moments and the clipping norm are a handful of kernels instead of a handful
    per parameter array (in a fused CPU step at batch 32 each kernel launch costs about as
    much as its arithmetic). Large: the flat vector costs a concatenation of every gradient
    and a slice back per array on each SGD step, and on more than one intra-op thread
    XLA:CPU splits those long loops over its thread pool inside the training loop's while
    body; MinAtar's net (205,907 parameters) then ran an SGD step about 18x slower on two
    threads than per array (experiments/results/peers/minatar/cause.md)."""
    flat = optax.flatten(opt)

    def pick(params):
        return flat if _size(params) <= FLAT_MAX_PARAMS else opt

    def init(params):
        return pick(params).init(params)

    def update(updates, state, params=None):
        return pick(updates).update(updates, state, params)

    return optax.GradientTransformation(init, update)


def average_gradients(grads, axis_name: str | None):
    """Data parallelism: the mean of every device's gradients (pmean over `axis_name`, inside
    shard_map), so each device applies the same update and the parameters stay equal
    everywhere. None (one device): the gradients as they are."""
    return grads if axis_name is None else jax.lax.pmean(grads, axis_name)


def update_target(params, target_params, train_steps, period: int, tau: float):
    """Every `period` SGD steps: target <- tau * online + (1 - tau) * target.

    period=1, tau=0.005 is Polyak averaging; period=500, tau=1 a hard copy every 500 steps.
    """
    if period == 1:
        return optax.incremental_update(params, target_params, tau)
    # A branch, not a select: between updates nothing is read or written (a select would run a
    # kernel per parameter array every step). Same values either way.
    return jax.lax.cond(
        train_steps % period == 0,
        lambda: optax.incremental_update(params, target_params, tau),
        lambda: target_params,
    )


def global_norm(tree) -> jax.Array:
    """The L2 norm of all leaves together: over one concatenated vector where the optimizer
    builds it (`flatten_small`: XLA computes it once for both), over each leaf otherwise (no
    concatenation of a large network's gradients just for a metric)."""
    if _size(tree) <= FLAT_MAX_PARAMS:
        return jnp.linalg.norm(jax.flatten_util.ravel_pytree(tree)[0])
    return optax.tree.norm(tree)


# ------------------------------------------------------------------ config validation
def check_positive_int(cls: str, field: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{cls}.{field} must be a positive int, got {value!r}")


def check_nonnegative_int(cls: str, field: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{cls}.{field} must be an int >= 0, got {value!r}")


def check_range(cls: str, field: str, value, low, high, low_open=False, high_open=False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high
        )
    if not ok:
        lb, hb = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{cls}.{field} must be a number in {lb}{low}, {high}{hb}, got {value!r}")


def check_hidden_sizes(cls: str, field: str, value) -> None:
    if not isinstance(value, tuple) or not all(
        isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in value
    ):
        raise ValueError(f"{cls}.{field} must be a tuple of positive ints, got {value!r}")


def check_choice(cls: str, field: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{cls}.{field} must be one of {tuple(choices)}, got {value!r}")


def check_optional_positive(cls: str, field: str, value) -> None:
    if value is not None:
        check_range(cls, field, value, 0.0, math.inf, low_open=True, high_open=True)


# ------------------------------------------------------------------ batch validation
def check_batch(spec: EnvSpec, batch, weights) -> int:
    """Trace-time shape check of a replay batch; returns B. ValueError names the bad key."""
    if not isinstance(batch, dict) or set(batch) != set(BATCH_KEYS):
        got = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise ValueError(f"batch must be a dict with keys {BATCH_KEYS}, got {got}")
    b = jnp.shape(batch["reward"])[0] if jnp.ndim(batch["reward"]) == 1 else None
    if b is None:
        raise ValueError(f"batch['reward'] must have shape (B,), got {jnp.shape(batch['reward'])}")
    if isinstance(spec.action, DiscreteActions):
        action_shape = (b,)
    else:
        action_shape = (b, *spec.action.shape)
    expected = {
        "obs": (b, *spec.obs_shape),
        "next_obs": (b, *spec.obs_shape),
        "action": action_shape,
        "reward": (b,),
        "discount": (b,),
    }
    for key, shape in expected.items():
        if jnp.shape(batch[key]) != shape:
            raise ValueError(f"batch[{key!r}] must have shape {shape}, got {jnp.shape(batch[key])}")
    if jnp.shape(weights) != (b,):
        raise ValueError(f"weights must have shape ({b},), got {jnp.shape(weights)}")
    return b
