"""The fixed-point learner's formats: one frozen dataclass, the config section that selects it.

Every word the learning module stores or moves has one of these formats; `layers`, `losses`
and `optim` name which. Why each is what it is:

* `act` Q16.8 (range +-128, step 1/256): observations, hidden activations, actions. The
  inputs of every forward product. CartPole's and Pendulum's observations are within +-8 and
  the ReLU activations of a trained 64-128 wide net within +-50, so 7 integer bits leave
  headroom and 16 bits feed one DSP input.
* `weight`: the weights and biases as the array reads them, the master weights rounded
  (once per update). Its default depends on the algorithm (WEIGHT_DEFAULT). DQN, Q18.14
  (+-8, step 6.1e-5): the DSP48's multiplier is 27 x 18, so an 18-bit weight against
  `act`'s 16 bits (or `delta`'s 18) still takes one DSP, and the array's banks are 18 bits
  wide for the deltas anyway; DQN CartPole ended at the bar on more seeds with Q18.14 than
  with Q16.12 (experiments/results/fixed_point/). DDPG, Q16.12 (+-8, step 2.4e-4), what
  its runs met the bar with: initial weights of a 128-wide layer are about 0.1, so 12
  fractional bits give them three significant digits.
* `value` Q24.8 (+-32768): a network's last-layer output (Q values) and the TD target and
  error. Pendulum's returns reach -1600, so `act`'s range would saturate; this word is never
  an input of the array, only of the loss unit, so its width costs no multiplier.
* `delta` Q18.12 (+-32, step 2.4e-4): the loss gradient at the output and every
  back-propagated delta. 18 bits is the narrow input of a DSP48 (27x18). The loss unit does
  not divide by the batch (that is folded into the learning rate), so an output delta is
  the IS-weighted, clipped TD error itself (|delta| <= 1 with Huber).
* `grad` Q24.12 (+-2048): the weight and bias gradients, sums over the batch of act x delta.
* `velocity` Q28.14: the momentum buffer, mu * v + g, with room for 1 / (1 - mu) times `grad`.
* `master` Q28.24 (+-8, step 6e-8): the weights the optimizer updates and the target network.
  A step is lr / B x velocity, often 1e-7 to 1e-5 of a weight: 24 fractional bits keep it;
  28 bits keep a difference of two masters (Polyak) within an int32 word.
* `moment` Q28.16 (+-2048): Adam's first moment, an average of `grad` with 4 more fractional
  bits, so that (1 - beta1) x a one-lsb gradient still registers.
* `second`: Adam's second moment, an average of grad^2, 29 bits so that its difference with
  grad^2 fits 30. Its default depends on the algorithm (SECOND_DEFAULT), because 29 bits
  cannot hold both algorithms' gradients: with beta2 = 0.999 a word below about 500 lsb no
  longer decays (its decay rounds away), which acts as an epsilon on the root, so the
  fractional bits set the smallest gradient Adam resolves and the integer bits the largest.
  DQN, Q29.22 (0..64, step 2.4e-7): its batch-summed gradients are about 0.1, and the floor
  is an epsilon of about 0.011 (Q29.20's, 0.022, learned slower); a gradient over 8
  saturates grad^2 (counted; Adam's step of it is then smaller, never larger). DDPG, Q29.14
  (0..16384): its critic's batch-summed gradients reach the hundreds, which Q29.20 saturates
  on every step; the floor is then an epsilon of about 0.17. Measured on both algorithms:
  experiments/results/fixed_point/.
* `rsqrt`: 1 / sqrt(second), from the table of `rsqrt`; its product with `moment` must stay
  within the exact accumulator (widths summing to at most 55). Per algorithm with `second`:
  Q24.12 (0.0625..1024, the root of Q29.22's floor is about 90) for DQN, Q24.18 for DDPG,
  whose smallest root is 64 times smaller.
* `step` Q20.16 (+-8): Adam's normalized step m / sqrt(v), about +-1, at most
  (1 - beta1) / sqrt(1 - beta2) ~ 3.2 after a single spike.
* `unit` Q16.15 ([-1, 1)): momentum, tau, 1 - beta1 and 1 - beta2 (a tau of 1 is a hard
  copy, no multiply).
* `prob` Q17.15 ([-2, 2)): discounts and importance weights, which reach exactly 1.
* `lr` Q24.`lr_frac` (default 26 for SGD, 24 for Adam; LR_FRAC): the rate per step: for SGD
  the learning rate divided by the batch size, for Adam the learning rate.

The accumulator is exact by construction (`numerics`): no format names it.
"""

from __future__ import annotations

import dataclasses

from hrl.fixed_point.numerics import MAX_WIDTH, Fx

NUMERICS = ("float", "fixed")  # agent.numerics: the float32 learner or this one
OPTIMIZERS = ("adam", "sgd")  # what the fixed-point learner's optimizer unit implements (see optim)
# The rate word's default fractional bits per optimizer: SGD's rate is learning_rate / batch
# (about 1e-5), Adam's the learning rate (about 1e-3); each leaves the linear decay's int32
# product (rate word x decay steps) room for 10^5 steps.
LR_FRAC = {"sgd": 26, "adam": 24}
ALGORITHMS = ("dqn", "ddpg")  # what the learning module's loss unit implements
# Per algorithm, the default (second, rsqrt) formats (see the module docstring for why).
SECOND_DEFAULT = {"dqn": ((29, 22), (24, 12)), "ddpg": ((29, 14), (24, 18))}
# Per algorithm, the default operand-weight format (see the module docstring for why).
WEIGHT_DEFAULT = {"dqn": (18, 14), "ddpg": (16, 12)}


def exact_difference(a: Fx, b: Fx) -> tuple[int, int]:
    """(width, frac) of the narrowest format that holds a - b exactly for any words of `a`
    and `b`: the finer grid, the wider integer part, and a bit for the carry."""
    frac = max(a.frac, b.frac)
    return max(a.width - a.frac, b.width - b.frac) + frac + 1, frac


@dataclasses.dataclass(frozen=True)
class FxFormats:
    """The formats of every word of the learner (see the module docstring for why)."""

    act: Fx = Fx(16, 8)
    weight: Fx = Fx(16, 12)
    value: Fx = Fx(24, 8)
    delta: Fx = Fx(18, 12)
    grad: Fx = Fx(24, 12)
    velocity: Fx = Fx(28, 14)
    master: Fx = Fx(28, 24)
    moment: Fx = Fx(28, 16)
    second: Fx = Fx(29, 20)
    rsqrt: Fx = Fx(24, 12)
    step: Fx = Fx(20, 16)
    unit: Fx = Fx(16, 15)
    prob: Fx = Fx(17, 15)
    lr: Fx = Fx(24, 26)


@dataclasses.dataclass(frozen=True)
class FixedPointConfig:
    """The `agent.fixed_point` section: the learner's formats, used with `agent.numerics: fixed`.

    Each format is [width, fractional bits]; the defaults are argued in the module docstring
    and are what experiments/results/fixed_point/ ran. The optimizer is `agent.optimizer`:
    `adam` (the moments below, no bias correction; see `optim`) or `sgd` (with `momentum`).
    """

    act: tuple[int, int] = (16, 8)  # observations, hidden activations, actions
    # weights and biases as the array reads them; None: the algorithm's (WEIGHT_DEFAULT)
    weight: tuple[int, int] | None = None
    value: tuple[int, int] = (24, 8)  # Q values, TD targets and errors
    delta: tuple[int, int] = (18, 12)  # output and back-propagated deltas
    grad: tuple[int, int] = (24, 12)  # weight and bias gradients (sums over the batch)
    velocity: tuple[int, int] = (28, 14)  # the momentum buffer
    master: tuple[int, int] = (28, 24)  # master and target weights
    moment: tuple[int, int] = (28, 16)  # Adam's first moment
    # Adam's second moment and its reciprocal root; None: the algorithm's (SECOND_DEFAULT)
    second: tuple[int, int] | None = None
    rsqrt: tuple[int, int] | None = None
    step: tuple[int, int] = (20, 16)  # Adam's normalized step
    lr_frac: int | None = None  # fractional bits of the 24-bit rate word; None: LR_FRAC
    momentum: float = 0.9  # SGD momentum in [0, 1); 0 is plain SGD
    beta1: float = 0.9  # Adam's first-moment decay, in [0, 1)
    beta2: float = 0.999  # Adam's second-moment decay, in [0, 1)
    # Adam's bias correction, as the float learner's: the host scales the rate word per step
    # (common.corrected_rate); no hardware in the module. False: the uncorrected Adam.
    bias_correction: bool = True

    def formats(self, optimizer: str = "adam", algorithm: str = "dqn") -> FxFormats:
        """The formats as `Fx` for `optimizer` (which picks the rate word's default fractional
        bits) and `algorithm` (which picks the weight's, the second moment's and the root's
        defaults);
        ValueError names the key of a bad one."""
        defaults = dict(zip(("second", "rsqrt"), SECOND_DEFAULT[algorithm], strict=True),
                        weight=WEIGHT_DEFAULT[algorithm])
        out = {}
        for name in ("act", "weight", "value", "delta", "grad", "velocity", "master", "moment",
                     "second", "rsqrt", "step"):
            value = getattr(self, name)
            if value is None and name in defaults:
                value = defaults[name]
            ok = (isinstance(value, tuple) and len(value) == 2
                  and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
            if not ok:
                raise ValueError(f"agent.fixed_point.{name} must be [width, frac] ints, got "
                                 f"{value!r}")
            try:
                out[name] = Fx(*value)
            except ValueError as err:
                raise ValueError(f"agent.fixed_point.{name}: {err}") from None
        lr_frac = LR_FRAC.get(optimizer, 26) if self.lr_frac is None else self.lr_frac
        if not isinstance(lr_frac, int) or isinstance(lr_frac, bool):
            raise ValueError(f"agent.fixed_point.lr_frac must be an int, got {lr_frac!r}")
        # Adam's two exact differences (grad - moment, grad^2 - second) need a bit more.
        g, m = out["grad"], out["moment"]
        need = exact_difference(g, m)[0]
        if need > MAX_WIDTH:
            raise ValueError(f"agent.fixed_point.moment: grad - moment needs {need} bits with "
                             f"grad {g}; at most {MAX_WIDTH}")
        m, r = out["moment"], out["rsqrt"]
        if m.width + r.width > 2 * MAX_WIDTH - 5:
            raise ValueError(f"agent.fixed_point.rsqrt: moment x rsqrt is {m.width + r.width} "
                             f"bits wide; the exact product holds at most {2 * MAX_WIDTH - 5}")
        if exact_difference(out["master"], out["master"])[0] > MAX_WIDTH:
            raise ValueError(f"agent.fixed_point.master: width {out['master'].width} leaves no "
                             f"bit for the Polyak difference; at most {MAX_WIDTH - 1}")
        d = out["delta"]
        if not 0 <= d.frac < d.width:
            raise ValueError(f"agent.fixed_point.delta: {d} cannot hold -1 (DDPG's actor "
                             f"delta); needs 0 <= frac < width")
        if exact_difference(out["second"], out["second"])[0] > MAX_WIDTH:
            raise ValueError(f"agent.fixed_point.second: width {out['second'].width} leaves "
                             f"no bit for grad^2 - second; at most {MAX_WIDTH - 1}")
        return FxFormats(**out, lr=Fx(24, lr_frac))

    def __post_init__(self):
        for algorithm in ALGORITHMS:
            self.formats(algorithm=algorithm)
        if not isinstance(self.bias_correction, bool):
            raise ValueError(f"agent.fixed_point.bias_correction must be true or false, got "
                             f"{self.bias_correction!r}")
        for key in ("momentum", "beta1", "beta2"):
            m = getattr(self, key)
            if not isinstance(m, int | float) or isinstance(m, bool) or not 0.0 <= m < 1.0:
                raise ValueError(f"agent.fixed_point.{key} must be a number in [0, 1), got "
                                 f"{m!r}")
