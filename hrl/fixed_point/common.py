"""What the fixed-point DQN and DDPG share: config checks, the network's words, the schedule.

A network is a list of layers {'w': (K, N), 'b': (N,)} of `master` words (the agent state's
params and target params); the array reads them rounded to `weight` (`optim.operand`). The
initial weights are the float learner's (the same flax initializers), quantized, so a fixed
and a float run of one seed start from the same network up to rounding.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import MLP
from hrl.fixed_point.formats import OPTIMIZERS, FxFormats
from hrl.fixed_point.numerics import Fx, multiply
from hrl.fixed_point.optim import quantize_tree, rate_divisor, unit_word


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
    copy), the SGD momentum, Adam's 1 - beta1 and 1 - beta2 and its bias correction (one line
    naming the key)."""
    if cfg.tau != 1.0:
        unit_word(cfg.tau, fmts, "tau")
    fp = cfg.fixed_point
    if cfg.optimizer == "adam":
        unit_word(1.0 - fp.beta1, fmts, "fixed_point.beta1 (as 1 - beta1)")
        unit_word(1.0 - fp.beta2, fmts, "fixed_point.beta2 (as 1 - beta2)")
        if fp.bias_correction:
            adam_correction_table(fp.beta1, fp.beta2)
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


CORRECTION = Fx(30, 23)  # Adam's bias-correction factor: 1.0 is 2**23, at most 64
CORRECTION_STEPS = 1 << 16  # the longest table: the factor must reach 1.0 within it


@functools.cache
def adam_correction_table(beta1: float, beta2: float) -> np.ndarray:
    """Adam's bias correction sqrt(1 - beta2**t) / (1 - beta1**t) for steps t = 1, 2, ... as
    CORRECTION words (int32), up to the step from which it rounds to 1.0 for good (every later
    step uses 1.0). The powers are running float64 products (np.cumprod), the root IEEE's, the
    rounding to nearest even: the same table on any machine. The host holds it and writes
    the corrected rate per step, so the module itself has no correction hardware.
    ValueError names the key when the factor does not settle within CORRECTION_STEPS steps
    or outgrows its word."""
    n = CORRECTION_STEPS
    p1 = np.cumprod(np.full(n, beta1, np.float64))
    p2 = np.cumprod(np.full(n, beta2, np.float64))
    corr = np.sqrt(1.0 - p2) / (1.0 - p1)
    words = np.rint(corr * 2.0**CORRECTION.frac)
    if words.max() > CORRECTION.max_int:
        raise ValueError(f"agent.fixed_point.beta1: Adam's bias correction reaches "
                         f"{corr.max():.3g} at beta1={beta1}, beta2={beta2}; at most "
                         f"{CORRECTION.max_value:.3g} (or agent.fixed_point.bias_correction: "
                         "false)")
    off = np.nonzero(words != 1 << CORRECTION.frac)[0]
    end = int(off[-1]) + 2 if len(off) else 1
    if end > n:
        raise ValueError(f"agent.fixed_point.beta2: Adam's bias correction at beta2={beta2} "
                         f"does not settle within {n} steps; set "
                         "agent.fixed_point.bias_correction: false")
    return words[:end].astype(np.int32)


def corrected_rate(rate, fp, train_steps, fmts: FxFormats):
    """The rate word of SGD step `train_steps` + 1 times Adam's bias correction when
    `fp.bias_correction` (a table read and one multiply on the host), else the rate word."""
    if not fp.bias_correction:
        return rate
    table = jnp.asarray(adam_correction_table(fp.beta1, fp.beta2))
    t = jnp.minimum(jnp.asarray(train_steps, jnp.int32), table.shape[0] - 1)
    word, _ = multiply(rate, fmts.lr, table[t], CORRECTION, fmts.lr)
    return word


def step_rate(cfg, key: str, batch_size: int, train_steps, fmts: FxFormats):
    """The rate word the host writes for SGD step `train_steps` + 1 of the learning rate
    `cfg.<key>`: its word for the optimizer (`lr_words`), on the linear schedule
    (`scheduled_lr`), times Adam's bias correction for Adam (`corrected_rate`). Raises the
    one-line errors of `lr_words` for a rate its word cannot hold."""
    word, end = lr_words(getattr(cfg, key), cfg.lr_end_factor,
                         rate_divisor(cfg.optimizer, batch_size), fmts, cfg.lr_decay_steps, key)
    rate = scheduled_lr(word, end, cfg.lr_decay_steps, train_steps)
    if cfg.optimizer == "adam":
        rate = corrected_rate(rate, cfg.fixed_point, train_steps, fmts)
    return rate


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
