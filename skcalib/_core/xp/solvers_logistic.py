"""Weighted logistic regression on an array-API namespace (torch, CuPy,
array-api-strict, ...): the passes over the rows run on their device.

The counterpart of :func:`~skcalib._core.solvers.logistic.fit_logistic` and
:func:`~skcalib._core.solvers.logistic.fit_platt`, step for step: the same
per-sample terms (:func:`~skcalib._core.solvers.logistic.logistic_pointwise`,
one ``exp`` per sample, never overflowing), the same column scaling, start
and stopping rule. The Newton iteration itself
(:func:`~skcalib._core.solvers.newton.damped_newton`, shared, not copied)
runs on the host: each evaluation sends the loss, the ``d`` gradient entries
and the ``d (d + 1) / 2`` distinct Hessian entries (6 numbers for Platt, 10
for beta calibration) to the host in one transfer; the rows never cross.
"""

import numpy as np

from skcalib._core.solvers.logistic import solve_platt
from skcalib._core.solvers.newton import damped_newton
from skcalib._core.xp import to_numpy
from skcalib._core.xp.weights import xp_unit_weights

__all__ = []  # private module


def _full(ns, like, value):
    """A constant of the accumulation dtype, shaped like ``like``."""
    return ns.xp.full(like.shape, value, dtype=ns.accumulate_dtype, device=ns.device)


def xp_logistic_terms(ns, coef, columns, t, w):
    """Loss, gradient and Hessian (numpy, on the host) at ``coef`` of the
    logistic loss of ``z = sum_j coef[j] * columns[j]``.

    ``columns`` holds 1-D arrays of the accumulation dtype, or None for a
    column of ones (never formed). The terms are those of
    :func:`~skcalib._core.solvers.logistic.logistic_terms`; their sums over
    the rows cross to the host in one transfer.
    """
    xp = ns.xp
    z = None
    for c, col in zip(coef, columns, strict=True):
        term = float(c) if col is None else float(c) * col
        z = term if z is None else z + term
    if not hasattr(z, "shape"):
        z = _full(ns, t, z)
    e = xp.exp(-xp.abs(z))  # in (0, 1]: never overflows
    loss = xp.where(z > 0, z, 0.0) + xp.log1p(e) - t * z
    inv = 1.0 / (1.0 + e)
    p = xp.where(z >= 0, inv, e * inv)
    r = p - t
    h = p * (1.0 - p)
    if w is not None:
        loss, r, h = loss * w, r * w, h * w
    d = len(columns)
    parts = [xp.sum(loss)]
    parts += [xp.sum(r if col is None else r * col) for col in columns]
    pairs = [(i, j) for i in range(d) for j in range(i, d)]
    for i, j in pairs:
        hc = h if columns[i] is None else h * columns[i]
        parts.append(xp.sum(hc if columns[j] is None else hc * columns[j]))
    host = to_numpy(xp.stack(parts)).astype(np.float64)
    grad = host[1 : d + 1].copy()
    hess = np.empty((d, d))
    for value, (i, j) in zip(host[d + 1 :], pairs, strict=True):
        hess[i, j] = hess[j, i] = value
    return float(host[0]), grad, hess


def _host_floats(xp, values):
    return [float(v) for v in to_numpy(xp.stack(values))]


def xp_fit_logistic(ns, columns, t, sample_weight=None, *, max_iter=100, tol=1e-10):
    """:func:`~skcalib._core.solvers.logistic.fit_logistic` of the design
    ``columns`` (1-D arrays of the accumulation dtype; None: a column of
    ones) on the device. Returns ``(coef, n_iter, converged, loss)``."""
    xp = ns.xp
    given = [col for col in columns if col is not None]
    tops = iter(_host_floats(xp, [xp.max(xp.abs(c)) for c in given]) if given else [])
    scale = np.array([1.0 if col is None else max(1.0, next(tops)) for col in columns])
    scaled = [
        c if c is None else c / float(s) for c, s in zip(columns, scale, strict=True)
    ]
    # The intercept column: all ones after scaling, as numpy's rule.
    flags = [xp.astype(xp.all(c == 1.0), t.dtype) for c in scaled if c is not None]
    flags = iter(_host_floats(xp, flags) if flags else [])
    ones = [True if c is None else next(flags) == 1.0 for c in scaled]
    coef = np.zeros(len(columns))
    if any(ones):  # start from the base rate on the intercept column
        if sample_weight is None:
            (wt,), wsum = _host_floats(xp, [xp.sum(t)]), float(t.shape[0])
        else:
            wt, wsum = _host_floats(
                xp, [xp.sum(sample_weight * t), xp.sum(sample_weight)]
            )
        rate = float(np.clip(wt / wsum, 1e-6, 1 - 1e-6))
        coef[ones.index(True)] = np.log(rate / (1.0 - rate))
    coef, n_iter, converged, loss = damped_newton(
        lambda c: xp_logistic_terms(ns, c, scaled, t, sample_weight),
        coef,
        max_iter=max_iter,
        tol=tol,
    )
    return coef / scale, n_iter, converged, loss


def xp_fit_platt(ns, s, pos, sample_weight=None, *, max_iter=100, tol=1e-10):
    """:func:`~skcalib._core.solvers.logistic.fit_platt` on the device:
    scores ``s`` (accumulation dtype), boolean targets ``pos``. Returns
    ``(a, b, n_iter, converged)``."""
    xp = ns.xp
    acc = ns.accumulate_dtype
    w = sample_weight
    if w is None:
        n_pos, abs_max = _host_floats(
            xp, [xp.sum(xp.astype(pos, acc)), xp.max(xp.abs(s))]
        )
        n_neg = float(pos.shape[0]) - n_pos
    else:
        top, abs_max = _host_floats(xp, [xp.max(w), xp.max(xp.abs(s))])
        if not top > 0:
            n_pos = n_neg = 0.0
        else:
            w, unit = xp_unit_weights(ns, w, top)
            pos_w, neg_w = _host_floats(
                xp, [xp.sum(xp.where(pos, w, 0.0)), xp.sum(xp.where(pos, 0.0, w))]
            )
            n_pos, n_neg = unit * pos_w, unit * neg_w
    scale = max(1.0, abs_max)
    t = xp.where(
        pos, _full(ns, s, 1.0 - 1.0 / (n_pos + 2.0)), _full(ns, s, 1.0 / (n_neg + 2.0))
    )
    s = s / scale
    return solve_platt(
        lambda p: xp_logistic_terms(ns, p, [s, None], t, w),
        n_pos,
        n_neg,
        scale,
        max_iter,
        tol,
    )
