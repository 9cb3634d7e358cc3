"""The fixed-point learner's formats: one frozen dataclass, the config section that selects it.

Every word the learning module stores or moves has one of these formats; `layers`, `losses`
and `optim` name which. Why each is what it is:

* `act` Q16.8 (range +-128, step 1/256): observations, hidden activations, actions. The
  inputs of every forward product. CartPole's and Pendulum's observations are within +-8 and
  the ReLU activations of a trained 64-128 wide net within +-50, so 7 integer bits leave
  headroom and 16 bits feed one DSP input.
* `weight` Q16.12 (+-8, step 2.4e-4): the weights and biases as the array reads them, the
  master weights rounded (once per update). 16 bits against `act`'s 16 keep each product in
  one DSP; initial weights of a 128-wide layer are about 0.1, so 12 fractional bits give them
  three significant digits.
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
* `unit` Q16.15 ([-1, 1)): momentum and tau (a tau of 1 is a hard copy, no multiply).
* `prob` Q17.15 ([-2, 2)): discounts and importance weights, which reach exactly 1.
* `lr` Q16.`lr_frac` (default 28): the learning rate divided by the batch size, per step.

The accumulator is exact by construction (`numerics`): no format names it.
"""

from __future__ import annotations

import dataclasses

from hrl.fixed_point.numerics import Fx

NUMERICS = ("float", "fixed")  # agent.numerics: the float32 learner or this one
OPTIMIZERS = ("sgd",)  # what the fixed-point learner's optimizer unit implements (see optim)


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
    unit: Fx = Fx(16, 15)
    prob: Fx = Fx(17, 15)
    lr: Fx = Fx(16, 28)


@dataclasses.dataclass(frozen=True)
class FixedPointConfig:
    """The `agent.fixed_point` section: the learner's formats, used with `agent.numerics: fixed`.

    Each format is [width, fractional bits]; the defaults are the ones measured in
    experiments/results/fixed_point/. The optimizer is SGD with momentum (`agent.optimizer:
    sgd`), per parameter one multiply-add for the momentum and one for the step.
    """

    act: tuple[int, int] = (16, 8)  # observations, hidden activations, actions
    weight: tuple[int, int] = (16, 12)  # weights and biases as the array reads them
    value: tuple[int, int] = (24, 8)  # Q values, TD targets and errors
    delta: tuple[int, int] = (18, 12)  # output and back-propagated deltas
    grad: tuple[int, int] = (24, 12)  # weight and bias gradients (sums over the batch)
    velocity: tuple[int, int] = (28, 14)  # the momentum buffer
    master: tuple[int, int] = (28, 24)  # master and target weights
    lr_frac: int = 28  # fractional bits of the per-step rate learning_rate / batch (16 bits)
    momentum: float = 0.9  # SGD momentum in [0, 1); 0 is plain SGD

    def formats(self) -> FxFormats:
        """The formats as `Fx`; ValueError names the key of a bad one."""
        out = {}
        for name in ("act", "weight", "value", "delta", "grad", "velocity", "master"):
            value = getattr(self, name)
            ok = (isinstance(value, tuple) and len(value) == 2
                  and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
            if not ok:
                raise ValueError(f"agent.fixed_point.{name} must be [width, frac] ints, got "
                                 f"{value!r}")
            try:
                out[name] = Fx(*value)
            except ValueError as err:
                raise ValueError(f"agent.fixed_point.{name}: {err}") from None
        if not isinstance(self.lr_frac, int) or isinstance(self.lr_frac, bool):
            raise ValueError(f"agent.fixed_point.lr_frac must be an int, got {self.lr_frac!r}")
        return FxFormats(**out, lr=Fx(16, self.lr_frac))

    def __post_init__(self):
        self.formats()
        m = self.momentum
        if not isinstance(m, int | float) or isinstance(m, bool) or not 0.0 <= m < 1.0:
            raise ValueError(f"agent.fixed_point.momentum must be a number in [0, 1), got {m!r}")
