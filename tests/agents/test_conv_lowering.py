"""Conv nets lower to slices and matrix products, and large networks are optimized per parameter
array (`hrl.agents.networks.SlicedConv`): the same
function and parameters as flax's `nn.Conv` stack, and no convolution op in the compiled SGD
step (the structural guard: XLA:CPU runs the kernel gradient of a `lax.conv` as a naive loop
nest, split over the thread pool on every step; see SlicedConv's docstring)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hrl.agents.common import FLAT_MAX_PARAMS, flatten_small, global_norm, make_optimizer
from hrl.agents.dqn.agent import DQNConfig, make_dqn
from hrl.agents.networks import ConvMLP
from hrl.envs.spec import DiscreteActions, EnvSpec


class ReferenceConvMLP(nn.Module):
    """The conv stack as flax writes it (`nn.Conv`, 'SAME'), the MLP head as ConvMLP's."""

    conv_layers: tuple
    hidden_sizes: tuple
    out_size: int

    @nn.compact
    def __call__(self, x):
        x = x.astype(jnp.float32)
        for filters, kernel, stride in self.conv_layers:
            x = nn.relu(nn.Conv(filters, (kernel, kernel), strides=(stride, stride),
                                padding="SAME")(x))
        x = x.reshape(x.shape[0], -1)
        for width in self.hidden_sizes:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.out_size)(x)


# (obs shape, conv layers): MinAtar's, a stack with strides 2 and odd sizes (SAME padding
# uneven on both sides), a kernel larger than the image, a 1x1 kernel.
CASES = [
    ((10, 10, 4), ((16, 3, 1),)),
    ((11, 9, 3), ((8, 4, 2), (6, 3, 2), (5, 2, 1))),
    ((5, 6, 2), ((4, 7, 3),)),
    ((7, 7, 1), ((3, 1, 1), (2, 5, 1))),
]


@pytest.mark.parametrize("obs_shape,layers", CASES)
def test_same_parameters_outputs_and_gradients_as_nn_conv(obs_shape, layers):
    ours = ConvMLP(layers, (32,), 5)
    ref = ReferenceConvMLP(layers, (32,), 5)
    x = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (6, *obs_shape))
    params = ours.init(jax.random.PRNGKey(0), x)
    ref_params = ref.init(jax.random.PRNGKey(0), x)
    # The same parameter tree, and the conv layers' same initial values (same names, shapes
    # and inits; the head sits in ConvMLP's MLP_0, so its draws differ).
    ref_flat = {jax.tree_util.keystr(k): v for k, v in
                jax.tree_util.tree_leaves_with_path(ref_params)}
    ours_flat = {jax.tree_util.keystr(k).replace("['MLP_0']", ""): v for k, v in
                 jax.tree_util.tree_leaves_with_path(params)}
    assert sorted(ref_flat) == sorted(ours_flat)
    for name, v in ref_flat.items():
        assert ours_flat[name].shape == v.shape, name
        if name.startswith("['params']['Conv"):
            np.testing.assert_array_equal(ours_flat[name], v, err_msg=name)
    # Run both on the same weights: outputs and gradients equal to float tolerance.
    mapped = jax.tree.map(lambda a: a, ref_params)
    ours_params = {"params": {**{k: v for k, v in mapped["params"].items()
                                 if k.startswith("Conv")},
                              "MLP_0": {k: v for k, v in mapped["params"].items()
                                        if k.startswith("Dense")}}}
    np.testing.assert_allclose(ours.apply(ours_params, x), ref.apply(ref_params, x),
                               rtol=1e-5, atol=1e-5)
    g_ours = jax.grad(lambda p: jnp.sum(ours.apply(p, x) ** 2))(ours_params)
    g_ref = jax.grad(lambda p: jnp.sum(ref.apply(p, x) ** 2))(ref_params)
    for name in (n for n in ref_params["params"] if n.startswith("Conv")):
        for leaf in ("kernel", "bias"):
            np.testing.assert_allclose(g_ours["params"][name][leaf],
                                       g_ref["params"][name][leaf], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}/{leaf}")


@pytest.mark.parametrize("network,layers", [("minatar", ((16, 3, 1),)),
                                            ("conv", ((8, 4, 2), (16, 3, 1)))])
def test_compiled_sgd_step_has_no_convolution(network, layers):
    """The guard: the DQN SGD step of every built-in conv net compiles to no `convolution`
    op (forward, kernel and input gradients all slices and dots)."""
    spec = EnvSpec(name="t", num_envs=1, obs_shape=(10, 10, 4), action=DiscreteActions(3),
                   obs_dtype=np.bool_, is_jax=True)
    agent = make_dqn(DQNConfig(network=network, conv_layers=layers, hidden_sizes=(128,)), spec)
    state = agent.init(jax.random.PRNGKey(0))
    obs = jnp.zeros((32, 10, 10, 4), bool)
    batch = {"obs": obs, "action": jnp.zeros(32, jnp.int32), "reward": jnp.zeros(32),
             "next_obs": obs, "discount": jnp.ones(32)}
    text = jax.jit(agent.train_step).lower(state, batch, jnp.ones(32)).compile().as_text()
    assert " convolution(" not in text
    assert " dot(" in text or "custom-call(" in text  # the matrix products are there
    # A network this large is optimized per parameter array: no flat vector of all its
    # parameters (`flatten_small`; on two threads it cost MinAtar's SGD step ~18x).
    n = sum(x.size for x in jax.tree.leaves(state.params))
    assert n > FLAT_MAX_PARAMS
    assert f"f32[{n}]" not in text


# Half a minute; the lowering's equality with nn.Conv is checked above in make test.
@pytest.mark.long
def test_small_networks_keep_the_flat_optimizer_and_both_forms_agree():
    """Below FLAT_MAX_PARAMS the optimizer still runs on one flat vector; above, per array,
    with the same updates as the flat form to float tolerance."""
    small = {"w": jnp.ones((8, 8)), "b": jnp.ones(8)}
    assert flatten_small(optax.adam(1e-3)).init(small)[0].mu.shape == (72,)  # flat
    big = {"w": jax.random.normal(jax.random.PRNGKey(0), (200, 100)), "b": jnp.ones(100)}
    grads = jax.tree.map(lambda x: jnp.sin(x) * 30.0, big)
    per_array = make_optimizer("adam", 1e-3, 10.0)
    flat = optax.flatten(optax.chain(optax.clip_by_global_norm(10.0), optax.adam(1e-3)))
    s1, s2 = per_array.init(big), flat.init(big)
    for _ in range(3):
        u1, s1 = per_array.update(grads, s1, big)
        u2, s2 = flat.update(grads, s2, big)
        for k in big:
            np.testing.assert_allclose(u1[k], u2[k], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(global_norm(grads), optax.tree.norm(grads), rtol=1e-6)
