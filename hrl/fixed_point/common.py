"""What the fixed-point DQN and DDPG share: config checks, the network's words, the schedule.

A network is a list of layers {'w': (K, N), 'b': (N,)} of `master` words (the agent state's
params and target params); the array reads them rounded to `weight` (`optim.operand`). The
initial weights are the float learner's (the same flax initializers), quantized, so a fixed
and a float run of one seed start from the same network up to rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hrl.agents.common import MLP
from hrl.fixed_point.formats import OPTIMIZERS, FxFormats
from hrl.fixed_point.optim import quantize_tree, unit_word


def check_fixed_config(cfg, algo: str) -> None:
    """Refuse, in one line naming the key, what the fixed-point learner does not implement."""
    if getattr(cfg, "network", "mlp") != "mlp":
        raise ValueError(f"agent.network: the fixed-point learner (agent.numerics: fixed) runs "
                         f"MLPs only, got {cfg.network!r}")
    if cfg.activation != "relu":
        raise ValueError(f"agent.activation: the fixed-point learner has ReLU only, got "
                         f"{cfg.activation!r}")
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"agent.optimizer: the fixed-point learner implements {OPTIMIZERS}, "
                         f"got {cfg.optimizer!r}")
    if cfg.max_grad_norm is not None:
        raise ValueError("agent.max_grad_norm: the fixed-point learner has no global-norm "
                         "clipping (its gradient words saturate, counted); set it to null")
    if algo == "ddpg" and cfg.twin_critics:
        raise ValueError("agent.twin_critics: the fixed-point learner has one critic")
    if algo == "ddpg" and cfg.noise == "ou":
        raise ValueError("agent.noise: the fixed-point learner's actor takes gaussian noise")


def check_constants(cfg, fmts: FxFormats) -> None:
    """Refuse, before anything is traced, a constant its word cannot hold: tau (unless a hard
    copy), the SGD momentum, Adam's 1 - beta1 and 1 - beta2 (one line naming the key)."""
    if cfg.tau != 1.0:
        unit_word(cfg.tau, fmts, "tau")
    fp = cfg.fixed_point
    if cfg.optimizer == "adam":
        unit_word(1.0 - fp.beta1, fmts, "fixed_point.beta1 (as 1 - beta1)")
        unit_word(1.0 - fp.beta2, fmts, "fixed_point.beta2 (as 1 - beta2)")
    else:
        unit_word(fp.momentum, fmts, "fixed_point.momentum")


def lr_words(learning_rate: float, end_factor: float, divisor: int, fmts: FxFormats,
             decay_steps: int, key: str) -> tuple[int, int]:
    """The per-step rate learning_rate / divisor (`optim.rate_divisor`: the batch size for
    SGD, 1 for Adam) as an `lr` word, and its end word. ValueError names `key` when it rounds
    to 0 or saturates."""
    fmt = fmts.lr
    rate = learning_rate / divisor
    word = round(rate * 2**fmt.frac)
    lo, hi = fmt.lsb / 2 * divisor, fmt.max_value * divisor
    if word < 1 or word > fmt.max_int:
        per = f" / batch {divisor}" if divisor > 1 else ""
        raise ValueError(
            f"agent.{key}: {learning_rate}{per} does not fit the learning-rate word "
            f"Q{fmt.width}.{fmt.frac} (learning rates {lo:.3g}..{hi:.3g}; "
            f"agent.fixed_point.lr_frac moves the range)")
    end = round(word * end_factor) if decay_steps else word
    if decay_steps and (word - end) * decay_steps >= 2**31:
        raise ValueError(f"agent.lr_decay_steps: {decay_steps} steps of a {word}-word rate "
                         "overflow the schedule's int32 product (a smaller "
                         "agent.fixed_point.lr_frac shortens the word)")
    return word, end


def scheduled_lr(word: int, end: int, decay_steps: int, train_steps):
    """The rate word at `train_steps` steps: linear from `word` to `end` over `decay_steps`
    steps, then held; integer arithmetic (the host writes it to the module's rate register)."""
    if not decay_steps:
        return jnp.int32(word)
    t = jnp.minimum(jnp.asarray(train_steps, jnp.int32), decay_steps)
    return jnp.int32(word) - (jnp.int32(word - end) * t) // decay_steps


def init_mlp(key, hidden_sizes, in_size: int, out_size: int, fmts: FxFormats,
             out_scale: float = 1.0):
    """The float MLP's initial weights as `master` words: a list of {'w', 'b'}."""
    net = MLP(tuple(hidden_sizes), out_size, "relu", out_scale=out_scale)
    params = net.init(key, jnp.zeros((1, in_size), jnp.float32))["params"]
    layers = [{"w": params[f"Dense_{i}"]["kernel"], "b": params[f"Dense_{i}"]["bias"]}
              for i in range(len(hidden_sizes) + 1)]
    words, _ = quantize_tree(layers, fmts.master)
    return words


def zeros_like_tree(tree):
    return jax.tree.map(jnp.zeros_like, tree)
