"""Bias-corrected temperature scaling: one temperature and one bias per class."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval
from skcalib._core.scores import PROBA_FLOOR, softmax
from skcalib._core.solvers.newton import damped_newton, separation
from skcalib._core.solvers.temperature import fit_temperature

__all__ = ["BiasCorrectedTemperatureCalibrator"]


def _bcts_terms(x, y, w, params):
    """Mean NLL, gradient and Hessian of ``softmax(beta x + b)``.

    ``params = (beta, b_1, ..., b_K)``; ``w`` are weights summing to 1.
    Per row, with ``p = softmax(beta x + b)``: the gradient in ``beta`` is
    ``E_p[x] - x_y``, in ``b`` it is ``p - e_y``; the Hessian is the
    covariance of ``(x_k, e_k)`` under ``p`` (positive semi-definite: the
    NLL is convex). ``O(n K^2)`` for the ``K x K`` block.
    """
    beta, b = params[0], params[1:]
    k = b.size
    a = x * beta
    a += b
    rows = np.arange(a.shape[0])
    top = a.max(axis=1)
    p = np.exp(a - top[:, None])
    total = p.sum(axis=1)
    p /= total[:, None]
    loss = float(w @ (top + np.log(total) - a[rows, y]))
    px = np.einsum("ij,ij->i", p, x)  # E_p[x]
    pxx = np.einsum("ij,ij->i", p, x * x)
    xy = x[rows, y]
    wp = p * w[:, None]
    grad = np.empty(k + 1)
    grad[0] = w @ (px - xy)
    grad[1:] = wp.sum(axis=0) - np.bincount(y, weights=w, minlength=k)
    hess = np.empty((k + 1, k + 1))
    hess[0, 0] = w @ np.maximum(pxx - px * px, 0.0)
    cross = (wp * x).sum(axis=0) - wp.T @ px
    hess[0, 1:] = cross
    hess[1:, 0] = cross
    hess[1:, 1:] = np.diag(wp.sum(axis=0)) - wp.T @ p
    return loss, grad, hess


def _separated(x, y, w):
    """Whether some direction of ``(1/T, b)`` raises every margin of the rows
    of positive weight (some strictly): the likelihood then has no maximum.
    None (not known) on problems too large for the linear program."""
    keep = w > 0
    x, y = x[keep], y[keep]
    n, k = x.shape
    rows = np.repeat(np.arange(n), k - 1)
    other = (y[:, None] + np.arange(1, k)[None, :]) % k  # every competitor
    other = other.ravel()
    true = y[rows]
    margins = np.zeros((rows.size, k + 1))
    margins[:, 0] = x[rows, true] - x[rows, other]
    margins[np.arange(rows.size), 1 + true] += 1.0
    margins[np.arange(rows.size), 1 + other] -= 1.0
    found = separation(margins)
    return bool(found)


class BiasCorrectedTemperatureCalibrator(BaseCalibrator):
    """Bias-corrected temperature scaling (BCTS): ``softmax(z / T + b)``.

    .. math::

        \\hat p(y = k \\mid z) = \\frac{\\exp(z_k / T + b_k)}
        {\\sum_j \\exp(z_j / T + b_j)}, \\qquad T > 0,\\ b \\in \\mathbb{R}^K,

    with ``T`` and ``b`` minimising the weighted negative log-likelihood on
    the calibration data (Alexandari, Kundaje & Shrikumar 2020). It lies
    between :class:`TemperatureCalibrator` (``b = 0``) and
    :class:`VectorScalingCalibrator` (one scale *per class*): ``K``
    parameters, one shared scale. The biases can change the predicted class.

    Softmax ignores a constant added to every ``b_k``: ``intercept_`` is
    returned with zero sum. The map is invariant to adding a constant to a
    row of ``z`` (the scale is shared), so logits and the log-probabilities
    of the same model give the same fit. A binary 1-D score ``s`` becomes
    the logits ``(0, s)``: BCTS is then Platt scaling of the log-odds
    ``s / T + (b_1 - b_0)`` (without Platt's smoothed targets).

    At the optimum the gradient in ``b`` is zero, that is, the weighted mean
    calibrated probability of each class equals its weighted frequency in
    the calibration labels. That is what prior-shift adaptation by EM
    (:class:`PriorShiftAdapter`) assumes of the source probabilities, and
    why Alexandari et al. found EM after BCTS hard to beat.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    max_iter : int, default=100
        Newton iterations.
    tol : float, default=1e-10
        Stop when a Newton step (on the scores divided by ``max(1, max|z|)``)
        is below ``tol * (1 + max |params|)``, or when the Newton decrement
        is at the level of float64 rounding of the loss.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    temperature_ : float
        The fitted temperature ``T > 0``.
    intercept_ : ndarray of shape (n_classes,)
        The biases ``b`` (zero sum), added after dividing by ``T``.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : no biases; never changes the predicted class.
    VectorScalingCalibrator : one scale and one bias per class.
    PriorShiftAdapter : adapts calibrated probabilities to new class priors.

    Notes
    -----
    With weights ``s_i`` (scaled to sum 1), ``beta = 1 / T`` and ``b``
    minimise the convex

    .. math::

        \\sum_i s_i \\left(\\operatorname{logsumexp}(\\beta z_i + b)
        - (\\beta z_i + b)_{y_i}\\right),

    found by damped Newton steps with the exact ``(K + 1) x (K + 1)``
    Hessian (pseudo-inverse, so no step is taken along the softmax gauge
    ``b + c``), from the temperature-scaling fit and ``b = 0``, in float64,
    subject to ``1 / T >= 0``.
    Each step costs ``O(n K^2)`` time and ``O(n K)`` memory. When the
    calibration scores separate the classes the likelihood has no maximum
    (``T -> 0``): a linear program detects it and a ``UserWarning`` says
    so; the fit is then a near-step map. Scores that rank the labels the
    wrong way (an unconstrained ``1 / T <= 0``) give the constrained
    optimum ``1 / T = 0`` (``temperature_ = inf``, the class frequencies
    for every row) and a warning.

    References
    ----------
    .. [1] A. Alexandari, A. Kundaje and A. Shrikumar, "Maximum Likelihood
       with Bias-Corrected Calibration is Hard-To-Beat at Label Shift
       Adaptation", ICML 2020.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import BiasCorrectedTemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = 2.0 * rng.normal(size=(20000, 3))            # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(20000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> scores = 3.0 * (z + [1.0, 0.0, -1.0])            # too sharp, biased
    >>> bcts = BiasCorrectedTemperatureCalibrator().fit(scores, y)
    >>> round(bcts.temperature_, 1)
    3.0
    >>> bcts.intercept_.round(1) + 0.0                   # undoes the biases
    array([-1.,  0.,  1.])
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        max_iter=100,
        tol=1e-10,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, scores, y, sample_weight):
        z = scores.logits
        k = z.shape[1]
        x = np.asarray(z, dtype=np.float64)
        x = x - x.max(axis=1, keepdims=True)  # a copy; the fit ignores the shift
        x_scale = max(1.0, float(np.max(np.abs(x))))
        x /= x_scale
        w = (
            np.full(x.shape[0], 1.0 / x.shape[0])
            if sample_weight is None
            else np.asarray(sample_weight, dtype=np.float64)
        )
        total = w.sum()
        if not total > 0:
            raise ValueError("All sample weights are zero; there is nothing to fit.")
        w = w / total
        temperature, _, t_status = fit_temperature(x, y, w)
        start = np.zeros(k + 1)
        start[0] = 1.0 / temperature
        params, n_iter, converged, _ = damped_newton(
            lambda theta: _bcts_terms(x, y, w, theta),
            start,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        name = type(self).__name__
        diverging = params[0] > 20 * max(start[0], 1.0) or np.abs(params[1:]).max() > 20
        # temperature alone separates (its fit stops at its lower bound), or
        # the fit runs off: the linear program decides
        separated = t_status == "lower_bound" or (
            (diverging or not converged) and _separated(x, y, w)
        )
        if separated:
            warnings.warn(
                f"{name}: the calibration scores separate the classes: the "
                "likelihood has no maximum (1/T and the biases grow without "
                "bound) and the fit is a near-step map where the iterations "
                "stopped. Use more calibration data, or TemperatureCalibrator.",
                UserWarning,
                stacklevel=4,
            )
        elif not converged:
            warnings.warn(
                f"{name} did not converge in max_iter={self.max_iter} "
                "iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=4,
            )
        if not params[0] > 0:
            # The NLL is convex: with its minimiser at 1/T <= 0, the minimum
            # over 1/T >= 0 is at 1/T = 0, the biases then the log priors.
            warnings.warn(
                f"{name}: the scores do not rank the labels (the unconstrained "
                f"fit has 1/T = {params[0] / x_scale:.3g} <= 0); the fit is "
                "1/T = 0 (temperature_ = inf): every row gets the weighted "
                "class frequencies.",
                UserWarning,
                stacklevel=4,
            )
            freq = np.bincount(y, weights=w, minlength=k)
            params = np.concatenate(([0.0], np.log(np.maximum(freq, PROBA_FLOOR))))
        b = params[1:] - params[1:].mean()
        with np.errstate(divide="ignore"):
            self.temperature_ = float(x_scale / params[0])
        self.intercept_ = b
        self.n_iter_ = int(n_iter)

    def _predict_proba(self, scores):
        z = scores.logits
        with np.errstate(divide="ignore"):
            a = z.astype(np.float64) * (1.0 / self.temperature_)
        a += self.intercept_
        return softmax(a).astype(z.dtype, copy=False)
