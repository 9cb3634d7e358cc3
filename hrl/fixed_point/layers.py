"""The layer units of the FPGA learning module: what its array and activation unit compute.

Each function is one hardware operation over words (int32 arrays holding the formats named in
its arguments), returns its saturation count last, and is pure, jittable and vmappable. The
RTL testbenches call them one by one as the golden model, so their signatures are stable:

    dense_forward(x, w, b, x_fmt, w_fmt, out_fmt, relu)   -> (y, mask, n_sat)     A @ W + b
    dense_backward(delta, w, mask, delta_fmt, w_fmt, out_fmt) -> (delta_prev, n_sat)
                                                              mask * (delta @ W^T)
    weight_grad(a, delta, a_fmt, delta_fmt, grad_fmt)   -> (g_w, n_sat)          A^T @ delta
    bias_grad(delta, delta_fmt, grad_fmt)               -> (g_b, n_sat)          1^T @ delta
    clip_output(z, low, high)                           -> (y, lo_mask, hi_mask) actor's clip
    clip_output_backward(delta, lo_mask, hi_mask)       -> delta_z

The three products are `numerics.matmul` (exact accumulation, one rounding): the array's
forward, backward and weight-gradient modes. The bias is preloaded into the accumulator. The
ReLU is applied to the narrowed sum (narrowing is monotone and keeps 0, so this equals
narrowing the ReLU of the exact sum); its derivative mask is `y > 0`. The bias gradient is
the array's product of a row of ones with the deltas, so the batch sum rounds once.

`mlp_forward` / `mlp_backward` chain them over a network held as a list of
{'w': (K, N), 'b': (N,)} operand words, ReLU between layers, the last layer linear.
"""

from __future__ import annotations

import jax.numpy as jnp

from hrl.fixed_point.numerics import Fx, matmul

ONE = Fx(2, 0)  # the word 1, for the row of ones of the bias gradient


def dense_forward(x, w, b, x_fmt: Fx, w_fmt: Fx, out_fmt: Fx, relu: bool):
    """y = act(narrow(x @ w + b)), x (B, K) in x_fmt, w (K, N) and b (N,) in w_fmt.

    relu=True: y = max(., 0) and mask = y > 0 (bool (B, N)), the derivative the backward pass
    needs; relu=False (a last layer): y as narrowed and mask all True.
    Returns (y int32 (B, N) in out_fmt, mask, n_saturated).
    """
    y, n_sat = matmul(x, x_fmt, w, w_fmt, out_fmt, bias=b, bias_fmt=w_fmt)
    if relu:
        mask = y > 0
        y = jnp.where(mask, y, 0)
    else:
        mask = jnp.ones(y.shape, bool)
    return y, mask, n_sat


def dense_backward(delta, w, mask, delta_fmt: Fx, w_fmt: Fx, out_fmt: Fx):
    """delta_prev = mask * narrow(delta @ w^T): the delta at this layer's input.

    delta (B, N) in delta_fmt, w (K, N) in w_fmt, mask (B, K) bool (the previous layer's ReLU
    mask) or None (the network's input). Returns (delta_prev int32 (B, K) in out_fmt, n_sat);
    masked-off words count no saturation (the hardware gates them before the narrowing).
    """
    # Round at out_fmt's step into a word wide enough never to clip (the same rounding as
    # narrowing to out_fmt directly), then saturate only the lanes the mask keeps.
    wide = Fx(30, out_fmt.frac)
    d, _ = matmul(delta, delta_fmt, jnp.swapaxes(w, -1, -2), w_fmt, wide)
    over = (d > out_fmt.max_int) | (d < out_fmt.min_int)
    d = jnp.clip(d, out_fmt.min_int, out_fmt.max_int).astype(jnp.int32)
    if mask is not None:
        d = jnp.where(mask, d, 0)
        over = over & mask
    return d, jnp.sum(over, dtype=jnp.int32)


def weight_grad(a, delta, a_fmt: Fx, delta_fmt: Fx, grad_fmt: Fx):
    """g_w = narrow(a^T @ delta), the sum over the batch. a (B, K), delta (B, N).
    Returns (g_w int32 (K, N) in grad_fmt, n_saturated)."""
    return matmul(jnp.swapaxes(a, -1, -2), a_fmt, delta, delta_fmt, grad_fmt)


def bias_grad(delta, delta_fmt: Fx, grad_fmt: Fx):
    """g_b = narrow(sum over the batch of delta) = 1^T @ delta. delta (B, N).
    Returns (g_b int32 (N,) in grad_fmt, n_saturated)."""
    ones = jnp.ones((1, delta.shape[0]), jnp.int32)
    g, n_sat = matmul(ones, ONE, delta, delta_fmt, grad_fmt)
    return g[0], n_sat


def clip_output(z, low, high):
    """The actor's output nonlinearity: y = clip(z, low, high), all words of one format.

    A saturating clip instead of tanh: a comparator pair, no table. Returns (y, lo, hi) with
    lo = z <= low and hi = z >= high, the masks `clip_output_backward` needs.
    """
    lo = z <= low
    hi = z >= high
    return jnp.where(lo, low, jnp.where(hi, high, z)).astype(jnp.int32), lo, hi


def clip_output_backward(delta, lo, hi):
    """The clip's delta, passed straight through where it is inside the box or where the step
    (-delta) points back into it: a clipped output keeps learning instead of sticking at its
    bound (a plain clip's zero derivative would freeze an actor whose output crossed a
    bound). delta (B, A) of the loss with respect to the clipped output."""
    stuck = (lo & (delta > 0)) | (hi & (delta < 0))
    return jnp.where(stuck, 0, delta).astype(jnp.int32)


# ------------------------------------------------------------------ whole networks
def mlp_forward(layers, x, act_fmt: Fx, w_fmt: Fx, out_fmt: Fx):
    """The network on x (B, K0) in act_fmt: ReLU layers in act_fmt, the last one linear in
    out_fmt. Returns (y, inputs, masks, n_sat): inputs[i] is layer i's input, masks[i] its
    ReLU mask (the last layer's is all True)."""
    inputs, masks, n_sat = [], [], jnp.int32(0)
    h = x
    for i, layer in enumerate(layers):
        last = i == len(layers) - 1
        inputs.append(h)
        h, mask, n = dense_forward(h, layer["w"], layer["b"], act_fmt, w_fmt,
                                   out_fmt if last else act_fmt, relu=not last)
        masks.append(mask)
        n_sat = n_sat + n
    return h, inputs, masks, n_sat


def mlp_backward(layers, inputs, masks, delta, act_fmt: Fx, w_fmt: Fx, delta_fmt: Fx,
                 grad_fmt: Fx, input_delta: bool = False):
    """Gradients of every layer from the output delta (B, N_last) in delta_fmt.

    Returns (grads [{'w', 'b'}] in grad_fmt, delta at the network's input or None, n_sat).
    input_delta=True also propagates to the input (DDPG's dQ/da).
    """
    grads = [None] * len(layers)
    n_sat = jnp.int32(0)
    d_in = None
    for i in range(len(layers) - 1, -1, -1):
        gw, n1 = weight_grad(inputs[i], delta, act_fmt, delta_fmt, grad_fmt)
        gb, n2 = bias_grad(delta, delta_fmt, grad_fmt)
        grads[i] = {"w": gw, "b": gb}
        n_sat = n_sat + n1 + n2
        if i > 0:
            delta, n3 = dense_backward(delta, layers[i]["w"], masks[i - 1], delta_fmt, w_fmt,
                                       delta_fmt)
            n_sat = n_sat + n3
        elif input_delta:
            d_in, n3 = dense_backward(delta, layers[0]["w"], None, delta_fmt, w_fmt, delta_fmt)
            n_sat = n_sat + n3
    return grads, d_in, n_sat


def mlp_input_delta(layers, masks, delta, w_fmt: Fx, delta_fmt: Fx):
    """The delta at the network's input (B, K0) from the output delta, no weight gradients:
    the critic's dQ/da for the actor's step. Returns (delta_in, n_sat)."""
    n_sat = jnp.int32(0)
    for i in range(len(layers) - 1, -1, -1):
        mask = masks[i - 1] if i > 0 else None
        delta, n = dense_backward(delta, layers[i]["w"], mask, delta_fmt, w_fmt, delta_fmt)
        n_sat = n_sat + n
    return delta, n_sat
