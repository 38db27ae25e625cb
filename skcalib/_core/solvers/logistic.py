"""Weighted logistic regression: the Newton terms and the solver.

The one implementation of the weighted logistic negative log-likelihood

.. math::

    L = \\sum_i w_i \\left(\\operatorname{softplus}(z_i) - t_i z_i\\right),
    \\qquad z = X \\beta,

its gradient ``X^T (w (p - t))`` and Hessian ``X^T diag(w p (1 - p)) X``
(``p = sigmoid(z)``), used by Platt scaling (``X = (s, 1)``, reduced without
forming ``X``; :func:`fit_platt`, with Platt's smoothed targets) and beta
calibration (any design; :func:`fit_logistic`). The per-sample part,
:func:`logistic_pointwise`, takes one ``exp`` per sample and never
overflows.
"""

from functools import partial

import numpy as np

from skcalib._core.solvers.newton import damped_newton
from skcalib._core.weights import unit_weights

__all__ = []  # private module


def logistic_pointwise(z, t, w):
    """Per-sample loss total, residuals and curvatures at linear predictor ``z``.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Linear predictor (log-odds).
    t : ndarray of shape (n,)
        Targets in ``[0, 1]``.
    w : ndarray of shape (n,) or None
        Sample weights (None: all 1).

    Returns
    -------
    loss : float
        ``sum w (softplus(z) - t z)``.
    r : ndarray of shape (n,)
        ``w (p - t)``: the gradient is ``X^T r``.
    h : ndarray of shape (n,)
        ``w p (1 - p)``: the Hessian is ``X^T diag(h) X``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.solvers.logistic import logistic_pointwise
    >>> loss, r, h = logistic_pointwise(np.zeros(2), np.array([0.0, 1.0]), None)
    >>> round(loss, 6), r.tolist(), h.tolist()
    (1.386294, [0.5, -0.5], [0.25, 0.25])
    """
    e = np.exp(-np.abs(z))  # in (0, 1]: never overflows
    loss_i = np.maximum(z, 0.0) + np.log1p(e) - t * z
    inv = 1.0 / (1.0 + e)
    p = np.where(z >= 0, inv, e * inv)
    r = p - t
    h = p * (1.0 - p)
    if w is not None:
        loss_i *= w
        r *= w
        h *= w
    return float(loss_i.sum()), r, h


def affine_logistic_terms(params, s, t, w):
    """Loss, gradient and Hessian at ``params = (a, b)`` of the logistic loss
    of ``z = a s + b`` (the design ``(s, 1)``, never formed).

    ``grad = (r . s, sum r)``, ``hess = [[h . s^2, h . s], [h . s, sum h]]``
    with ``r``, ``h`` of :func:`logistic_pointwise`.
    """
    loss, r, h = logistic_pointwise(params[0] * s + params[1], t, w)
    hs = h @ s
    grad = np.array([r @ s, r.sum()])
    hess = np.array([[h @ (s * s), hs], [hs, h.sum()]])
    return loss, grad, hess


def logistic_terms(coef, design, t, w):
    """Loss, gradient and Hessian at ``coef`` of the logistic loss of
    ``z = design @ coef``: ``grad = design^T r``,
    ``hess = design^T diag(h) design``."""
    loss, r, h = logistic_pointwise(design @ coef, t, w)
    grad = design.T @ r
    hess = (design * h[:, None]).T @ design
    return loss, grad, hess


def fit_logistic(design, t, sample_weight=None, *, max_iter=100, tol=1e-10):
    """Unpenalised weighted logistic regression by Newton's method.

    The structure of :func:`fit_platt` for any
    number of columns: exact Hessian, a tiny ridge on the Hessian only (so the
    Newton system is solvable for collinear or constant columns; the objective
    is not changed), a backtracking (Armijo) line search, columns divided by
    ``max(1, max|column|)`` while solving (the optimum is mapped back), so
    features of size 1e4 do not overflow.

    Parameters
    ----------
    design : ndarray of shape (n, d), float64
        Features, including a column of ones for an intercept.
    t : ndarray of shape (n,)
        Targets in {0, 1}.
    sample_weight : ndarray of shape (n,) or None
        Positive weights (rows of weight 0 must be removed by the caller).
    max_iter : int
    tol : float
        Stop when the Newton step is below ``tol * (1 + max|coef|)``.

    Returns
    -------
    coef : ndarray of shape (d,)
        On the original scale of the columns.
    n_iter : int
    converged : bool
    loss : float
        The weighted loss at ``coef`` (0 means the classes are separated).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.solvers.logistic import fit_logistic
    >>> x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, -0.5, 0.5])
    >>> t = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    >>> design = np.column_stack([x, np.ones(7)])
    >>> coef, n_iter, converged, loss = fit_logistic(design, t)
    >>> converged, bool(coef[0] > 0)
    (True, True)
    """
    d = design.shape[1]
    scale = np.maximum(1.0, np.max(np.abs(design), axis=0))
    design = design / scale
    coef = np.zeros(d)
    ones = np.flatnonzero(np.all(design == 1.0, axis=0))
    if ones.size:  # start from the base rate on the intercept column
        w = np.ones_like(t) if sample_weight is None else sample_weight
        rate = float(np.clip((w @ t) / w.sum(), 1e-6, 1 - 1e-6))
        coef[ones[0]] = np.log(rate / (1.0 - rate))
    coef, n_iter, converged, loss = damped_newton(
        lambda c: logistic_terms(c, design, t, sample_weight),
        coef,
        max_iter=max_iter,
        tol=tol,
    )
    return coef / scale, n_iter, converged, loss


# ------------------------------------------------------------------ Platt
def fit_platt(s, y, sample_weight=None, *, max_iter=100, tol=1e-10):
    """Fit Platt's sigmoid ``P(y=1 | s) = 1 / (1 + exp(-(a s + b)))``.

    Newton's method with a backtracking (Armijo) line search on Platt's
    convex two-parameter objective with smoothed targets (Platt 1999; Lin, Lin
    & Weng 2007). Scores are divided by ``max(1, max|s|)`` while solving (the
    optimum is mapped back), so logits of ±1e4 do not overflow. Each accepted
    step costs one pass over the data.

    Parameters
    ----------
    s : ndarray of shape (n,), float64
        Scores (log-odds).
    y : ndarray of shape (n,), {0, 1}
        Targets.
    sample_weight : ndarray of shape (n,) or None
    max_iter : int
    tol : float
        Stop when the Newton step is below ``tol * (1 + |params|)``.

    Returns
    -------
    a, b : float
        Slope and intercept on the original score scale.
    n_iter : int
    converged : bool
    """
    pos = y > 0.5
    w, n_pos, n_neg = platt_counts(pos, sample_weight)
    scale = max(1.0, float(np.max(np.abs(s))))
    terms = partial(platt_terms, n_pos=n_pos, n_neg=n_neg, scale=scale)
    return solve_platt(
        lambda p: terms(s, pos, w, p), n_pos, n_neg, scale, max_iter, tol
    )


def platt_counts(pos, sample_weight):
    """Weights divided by their maximum, and Platt's counts ``N+``, ``N-``.

    The counts are the weight totals of the classes as given (frequency
    weights, as in Platt's and scikit-learn's code); they are summed on the
    rescaled weights and multiplied back as Python floats, so weights of
    1e308 give ``inf`` counts (targets 1 and 0) instead of overflowing into
    NaN. Returns ``(w, n_pos, n_neg)``.
    """
    if sample_weight is None:
        n_pos = float(np.count_nonzero(pos))
        return None, n_pos, float(pos.size) - n_pos
    top = float(sample_weight.max(initial=0.0))
    if not top > 0:
        return sample_weight, 0.0, 0.0
    w, unit = unit_weights(sample_weight, top)
    return w, unit * float(w[pos].sum()), unit * float(w[~pos].sum())


def platt_terms(s, pos, w, params, *, n_pos, n_neg, scale):
    """:func:`affine_logistic_terms` with Platt's targets, on scores divided
    by ``scale``."""
    t = np.where(pos, 1.0 - 1.0 / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    return affine_logistic_terms(params, s / scale, t, w)


def solve_platt(terms, n_pos, n_neg, scale, max_iter, tol):
    """Newton from the smoothed base rate; ``(a, b, n_iter, converged)``."""
    b0 = np.log((n_pos + 1.0) / (n_neg + 1.0)) if n_pos + n_neg < np.inf else 0.0
    params = np.array([0.0, b0 if np.isfinite(b0) else 0.0])
    params, n_iter, converged, _ = damped_newton(
        terms, params, max_iter=max_iter, tol=tol
    )
    return params[0] / scale, params[1], n_iter, converged
