"""Network specs: what a config's `network` key names, and how a user brings a flax module.

    network: mlp        # the MLP of `hidden_sizes` (the default)
    network: conv       # `conv_layers` (filters, kernel, stride) with ReLU, then the MLP head
    network: minatar    # MinAtar's published torso (Young & Tian 2019, "MinAtar: An
                        # Atari-inspired testbed ...": one 3x3 convolution of 16 filters,
                        # stride 1, ReLU, then 128 hidden units), whatever the other keys say
    network: <name>     # a module registered with `register_network(name, factory)`

A user's own flax module goes through the Python API: `register_network("mine", factory)`
where `factory(out_size)` returns a `flax.linen.Module` mapping (B, *obs_shape) to (B,
out_size); a config then names it (`agent.network: mine`), so the config stays plain YAML and
a resumed run builds the same module, provided the process registered it again.

Inputs of any dtype (float32, bool, uint8) are cast to float32 first: the replay keeps
observations in their own dtype (`hrl.envs.spec.example_transition`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from hrl.agents.common import ACTIVATIONS, MLP

BUILT_IN = ("mlp", "conv", "minatar")
MINATAR_CONV = ((16, 3, 1),)
MINATAR_HIDDEN = (128,)
_REGISTERED: dict[str, Callable[[int], nn.Module]] = {}


def same_pads(size: int, kernel: int, stride: int) -> tuple[int, int, int]:
    """'SAME' padding of one spatial axis, as `lax.conv_general_dilated` computes it: (output
    size, padding before, padding after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


class SlicedConv(nn.Module):
    """A 2-D 'SAME' convolution written as k*k shifted strided slices of the padded input,
    concatenated on the feature axis (B, H', W', k*k*C), and one matrix product with the
    kernel reshaped to (k*k*C, F), plus the bias: the same function as `nn.Conv(features,
    (k, k), strides=(s, s), padding="SAME")`, with the same parameters (`kernel` (k, k, C, F),
    `bias` (F,), flax's default inits), so a checkpoint of either loads into the other; equal
    up to float rounding (the sum over k*k*C runs in another order).

    Why not `lax.conv`: its gradient with respect to the kernel is a convolution whose batch
    and feature dimensions are swapped (dim_labels f01b_i01o->01bf, a window the size of the
    image; jax#12868), not the layout of XLA:CPU's library convolution, and on more than one
    intra-op thread the compiled program splits it over the thread pool on every SGD step,
    inside the training loop's while body. Written as slices and a dot, the forward
    pass, both gradients and the whole SGD step have no convolution in them, only slices,
    pads, concatenates (fused loops) and dots (the matrix-product kernels XLA:CPU uses for the
    MLP layers); experiments/results/peers/minatar/cause.md times both. Cost: O(B H' W' k^2
    C F) flops as the convolution, plus the (B, H', W', k^2 C) patch array (k^2 times the
    input) in memory."""

    features: int
    kernel: int
    stride: int = 1

    @nn.compact
    def __call__(self, x):
        k, s = self.kernel, self.stride
        c = x.shape[-1]
        w = self.param("kernel", nn.initializers.lecun_normal(), (k, k, c, self.features))
        b = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        (oh, top, bottom), (ow, left, right) = (same_pads(x.shape[1], k, s),
                                                same_pads(x.shape[2], k, s))
        x = jnp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
        patches = jnp.concatenate([
            jax.lax.slice(x, (0, i, j, 0), (x.shape[0], i + (oh - 1) * s + 1,
                                            j + (ow - 1) * s + 1, c), (1, s, s, 1))
            for i in range(k) for j in range(k)], axis=-1)
        return jnp.dot(patches, w.reshape(k * k * c, self.features)) + b


class ConvMLP(nn.Module):
    """Convolutions over (B, H, W, C) observations ('SAME' padding, `activation` after each),
    flattened into an MLP head with `out_size` linear outputs. Each convolution is a
    `SlicedConv` (slices and a matrix product, no `lax.conv` in the compiled program: see
    its docstring), named as `nn.Conv` would be (Conv_0, Conv_1, ...), so parameters and
    checkpoints are those of the `nn.Conv` stack."""

    conv_layers: Sequence[tuple[int, int, int]]  # (filters, kernel, stride)
    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "relu"

    @nn.compact
    def __call__(self, x):
        if x.ndim != 4:
            raise ValueError(f"network 'conv' needs (B, H, W, C) observations, got shape "
                             f"{x.shape}")
        x = x.astype(jnp.float32)
        for i, (filters, kernel, stride) in enumerate(self.conv_layers):
            x = ACTIVATIONS[self.activation](
                SlicedConv(filters, kernel, stride, name=f"Conv_{i}")(x))
        return MLP(self.hidden_sizes, self.out_size, self.activation)(x)


def register_network(name: str, factory: Callable[[int], nn.Module]) -> None:
    """Make `name` a value of a config's `network` key: `factory(out_size)` builds the
    module. Built-in names cannot be replaced."""
    if name in BUILT_IN:
        raise ValueError(f"network {name!r} is built in; register another name")
    if not callable(factory):
        raise ValueError(f"network {name!r}: factory must be callable, got {factory!r}")
    _REGISTERED[name] = factory


def known_networks() -> tuple[str, ...]:
    return BUILT_IN + tuple(sorted(_REGISTERED))


def make_network(network: str, hidden_sizes: tuple[int, ...], conv_layers, out_size: int,
                 activation: str) -> nn.Module:
    """The module a network spec names (see the module docstring)."""
    if network == "mlp":
        return MLP(hidden_sizes=hidden_sizes, out_size=out_size, activation=activation)
    if network == "conv":
        return ConvMLP(tuple(conv_layers), hidden_sizes, out_size, activation)
    if network == "minatar":
        return ConvMLP(MINATAR_CONV, MINATAR_HIDDEN, out_size, "relu")
    if network in _REGISTERED:
        return _REGISTERED[network](out_size)
    raise ValueError(f"network must be one of {known_networks()}, got {network!r}")


def check_conv_layers(cls: str, field: str, value) -> None:
    ok = isinstance(value, tuple) and all(
        isinstance(layer, tuple) and len(layer) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in layer)
        for layer in value)
    if not ok:
        raise ValueError(f"{cls}.{field} must be a list of [filters, kernel, stride] positive "
                         f"ints, got {value!r}")
