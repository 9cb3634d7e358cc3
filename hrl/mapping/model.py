"""Analytic latency models `latency = a + b * work`, fitted to a profile by least squares.

One model per (call, placement). The fit minimises the *relative* error,
sum_i ((a + b w_i - y_i) / y_i)^2, because profiled latencies span orders of magnitude and a
plain least-squares fit would ignore the small sizes. Coefficients are kept >= 0 (a negative
intercept or slope has no physical meaning; the constrained optimum of a 2-variable problem
lies on the unconstrained solution or on one axis, so all three candidates are tried).

Every group is fitted in one jitted, vmapped computation over padded arrays (mask = real
point), and the fit error is reported two ways: in-sample relative error, and leave-one-out
relative error (each point predicted by the model fitted without it), which is what
"predicting sizes that were not profiled" costs.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl.mapping.profile.rows import ProfileRow, as_rows


@dataclasses.dataclass(frozen=True)
class LinearModel:
    """latency = intercept + slope * work (seconds), with its fit errors (relative)."""

    intercept: float
    slope: float
    n_points: int
    rel_err_median: float
    rel_err_max: float
    loo_err_median: float
    work_range: tuple[float, float]

    def __call__(self, work):
        return self.intercept + self.slope * np.asarray(work, float)


def _solve_weighted(w, y, m):
    """Non-negative (a, b) minimising sum m * ((a + b w - y) / y)^2. Inputs shape (n,)."""
    inv = jnp.where(m > 0, 1.0 / jnp.where(y > 0, y, 1.0), 0.0)
    c1, c2 = inv, w * inv  # columns of the weighted design matrix; target = m (ones)
    s11, s12, s22 = jnp.sum(c1 * c1), jnp.sum(c1 * c2), jnp.sum(c2 * c2)
    t1, t2 = jnp.sum(c1 * m), jnp.sum(c2 * m)
    det = s11 * s22 - s12 * s12
    ok = det > 1e-12 * jnp.maximum(s11 * s22, 1e-300)
    a_full = jnp.where(ok, (s22 * t1 - s12 * t2) / jnp.where(ok, det, 1.0), 0.0)
    b_full = jnp.where(ok, (s11 * t2 - s12 * t1) / jnp.where(ok, det, 1.0), 0.0)
    a_only = t1 / jnp.maximum(s11, 1e-300)
    b_only = t2 / jnp.maximum(s22, 1e-300)

    def loss(a, b):
        return jnp.sum(m * ((a + b * w) * inv - m) ** 2)

    cands = jnp.array([[a_full, b_full], [a_only, 0.0], [0.0, b_only]])
    valid = jnp.array([ok & (a_full >= 0) & (b_full >= 0), True, True])
    losses = jnp.where(valid, jax.vmap(lambda c: loss(c[0], c[1]))(cands), jnp.inf)
    return cands[jnp.argmin(losses)]


@jax.jit
def fit_groups(work, latency, mask):
    """Fit every group at once. Shapes (G, n); returns coef (G, 2), rel_err (G, n),
    loo_err (G, n), errors are |pred - y| / y (0 where mask is 0)."""

    def one(w, y, m):
        coef = _solve_weighted(w, y, m)
        rel = jnp.where(m > 0, jnp.abs(coef[0] + coef[1] * w - y) / jnp.where(y > 0, y, 1.0), 0.0)
        n = w.shape[0]
        drop = (1.0 - jnp.eye(n)) * m[None, :]
        loo_coef = jax.vmap(lambda mm: _solve_weighted(w, y, mm))(drop)
        loo_pred = loo_coef[:, 0] + loo_coef[:, 1] * w
        loo = jnp.where(m > 0, jnp.abs(loo_pred - y) / jnp.where(y > 0, y, 1.0), 0.0)
        return coef, rel, loo

    return jax.vmap(one)(work, latency, mask)


METRICS = {"wall": "latency_s", "cpu": "cpu_s"}


def fit_models(rows, key=("call", "placement"),
               metric: str = "wall") -> dict[tuple, LinearModel]:
    """Group profile rows (`ProfileRow`s, or dicts of their fields, with `work` and
    `latency_s` / `cpu_s`) by the fields `key` and fit each group on the metric's column
    (`wall`: latency_s, `cpu`: cpu_s). One batched fit over all groups: O(rows).

    Groups with fewer than 2 distinct work values cannot separate a and b: they get a
    constant model (slope 0) only if they have one point, which the caller should avoid.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    column = METRICS[metric]
    groups: dict[tuple, list[ProfileRow]] = {}
    for r in as_rows(rows):
        groups.setdefault(tuple(getattr(r, k) for k in key), []).append(r)
    if not groups:
        return {}
    names = sorted(groups, key=str)
    n = max(len(groups[g]) for g in names)
    w = np.zeros((len(names), n))
    y = np.ones((len(names), n))
    m = np.zeros((len(names), n))
    for i, g in enumerate(names):
        for j, r in enumerate(groups[g]):
            value = float(getattr(r, column) or 0.0)
            if not (value > 0 and r.work >= 0):
                raise ValueError(f"profile row {r.to_dict()} has a non-positive {column} or "
                                 "negative work")
            w[i, j], y[i, j], m[i, j] = r.work, value, 1.0
    # Work spans many orders of magnitude; fit in a scaled unit so float32 keeps precision.
    scale = np.maximum(w.max(axis=1, keepdims=True), 1.0)
    coef, rel, loo = fit_groups(jnp.asarray(w / scale, jnp.float32),
                                jnp.asarray(y, jnp.float32), jnp.asarray(m, jnp.float32))
    coef, rel, loo = np.asarray(coef, float), np.asarray(rel), np.asarray(loo)
    models = {}
    for i, g in enumerate(names):
        k = int(m[i].sum())
        ws = w[i, :k]
        models[g] = LinearModel(
            intercept=float(coef[i, 0]), slope=float(coef[i, 1] / scale[i, 0]), n_points=k,
            rel_err_median=float(np.median(rel[i, :k])), rel_err_max=float(rel[i, :k].max()),
            loo_err_median=float(np.median(loo[i, :k])) if k > 2 else float("nan"),
            work_range=(float(ws.min()), float(ws.max())),
        )
    return models
