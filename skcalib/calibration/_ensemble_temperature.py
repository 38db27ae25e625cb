"""Ensemble temperature scaling (Mix-n-Match): a convex mix of the
temperature-scaled, the uncalibrated and the uniform probabilities."""

import warnings
from itertools import combinations
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, StrOptions
from skcalib._core.scores import softmax
from skcalib._core.solvers.temperature import fit_temperature

__all__ = ["EnsembleTemperatureCalibrator"]

#: Elements per block of rows in the passes over the scores (fit and predict).
_BLOCK = 1 << 18

#: The faces of the simplex of the three weights, fewest weights first (the
#: order breaks ties between equally good mixes, see the class's Notes).
_FACES = [list(s) for r in (1, 2, 3) for s in combinations(range(3), r)]


def _component_terms(scores, y, temperature):
    """Per-row float64 terms of the three components, by blocks of rows.

    Returns ``(true, cross)``: ``true[i] = (pT_i[y_i], p1_i[y_i], 1 / K)``
    and ``cross[i] = (|pT_i|^2, pT_i . p1_i, |p1_i|^2)``, with ``pT`` the
    temperature-scaled and ``p1`` the uncalibrated probabilities.
    """
    n, k = scores.n_samples, scores.n_classes
    true = np.empty((n, 3))
    true[:, 2] = 1.0 / k
    cross = np.empty((n, 3))
    step = max(1, _BLOCK // k)
    for start in range(0, n, step):
        z = np.asarray(scores.logit_rows(start, start + step), dtype=np.float64)
        rows = np.arange(z.shape[0])
        yb = y[start : start + step]
        p1 = softmax(z)
        pt = softmax(z / temperature)
        true[start : start + step, 0] = pt[rows, yb]
        true[start : start + step, 1] = p1[rows, yb]
        cross[start : start + step, 0] = np.einsum("ij,ij->i", pt, pt)
        cross[start : start + step, 1] = np.einsum("ij,ij->i", pt, p1)
        cross[start : start + step, 2] = np.einsum("ij,ij->i", p1, p1)
    return true, cross


def _brier_quadratic(true, cross, s, k):
    """``(G, h)`` with the mean Brier score of the mix ``w`` equal to
    ``w' G w - 2 h' w + 1`` (weights ``s`` summing to 1)."""
    a, b, c = s @ cross
    u = 1.0 / k  # p . (1/K) = 1/K for any probability row p
    G = np.array([[a, b, u], [b, c, u], [u, u, u]])
    return G, s @ true


def _simplex_qp(G, h):
    """The minimiser of ``w' G w - 2 h' w`` (``G`` positive semi-definite)
    over the simplex of three weights, exactly.

    The minimiser lies in the relative interior of some face and minimises
    the quadratic on that face's affine hull: each face's equality-constrained
    problem is solved (KKT system, least squares when singular), the feasible
    solutions compared. Among solutions within rounding of the best, the
    first face of :data:`_FACES` wins (fewest nonzero weights, then the
    earliest components).
    """
    best_f = np.inf
    candidates = []
    for face in _FACES:
        m = len(face)
        kkt = np.zeros((m + 1, m + 1))
        kkt[:m, :m] = 2.0 * G[np.ix_(face, face)]
        kkt[:m, m] = kkt[m, :m] = 1.0
        rhs = np.append(2.0 * h[face], 1.0)
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        if not np.allclose(kkt @ sol, rhs, rtol=0, atol=1e-10):
            continue  # no stationary point on this face's hull
        w = np.zeros(3)
        w[face] = sol[:m]
        if w.min() < -1e-12:
            continue
        w = np.maximum(w, 0.0)
        w /= w.sum()
        f = float(w @ G @ w - 2.0 * h @ w)
        candidates.append((f, w))
        best_f = min(best_f, f)
    tie = 1e-12 * (1.0 + abs(best_f))
    return next(w for f, w in candidates if f <= best_f + tie)


def _log_loss_weights(true, s, max_iter):
    """The weights minimising the weighted NLL ``-sum_i s_i log(Q_i w)``
    (``Q = true``) on the simplex, by SLSQP with the exact gradient;
    ``(w, converged)``."""
    tiny = np.finfo(np.float64).tiny

    def loss(w):
        q = np.maximum(true @ w, tiny)
        return float(-(s @ np.log(q))), -(s / q) @ true

    res = minimize(
        loss,
        np.full(3, 1.0 / 3.0),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * 3,
        constraints={"type": "eq", "fun": lambda w: w.sum() - 1.0},
        options={"maxiter": max_iter, "ftol": 1e-15},
    )
    w = np.maximum(res.x, 0.0)
    return w / w.sum(), bool(res.success)


class EnsembleTemperatureCalibrator(BaseCalibrator):
    """Ensemble temperature scaling (ETS, Mix-n-Match): a convex mix of the
    temperature-scaled, the uncalibrated and the uniform probabilities.

    .. math::

        \\hat p(y \\mid z) = w_1\\, \\mathrm{softmax}(z / T)
        + w_2\\, \\mathrm{softmax}(z) + w_3\\, \\tfrac{1}{K}\\mathbf{1},
        \\qquad w_j \\ge 0,\\ w_1 + w_2 + w_3 = 1.

    Zhang, Kailkhura & Han [1]_ proposed it as an ensemble of calibrators
    that keeps temperature scaling's accuracy (every component ranks the
    classes as the logits do, or not at all) with more expressive power: the
    uniform component lowers the confidence of every row by the same share,
    the uncalibrated one keeps the sharpness the temperature took away.
    ``T`` is fitted first, then the weights with ``T`` fixed.

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
    loss : {"log_loss", "brier"}, default="log_loss"
        The loss the weights minimise on the calibration data.
        ``"log_loss"`` (the default): the negative log-likelihood, the
        authors' alternative. ``"brier"``: the paper's choice, the squared
        error of the mixed probabilities (the authors' code minimises it
        divided by ``K``, the same minimiser). The default is not the
        paper's because held-out log-loss is what this library's defaults
        are chosen on: on CIFAR-100 WideResNet-16-4 (5000 rows to fit, 5000
        to score) the Brier-fitted mix scored 0.9719, worse than the
        uncalibrated 0.9576, and the log-loss mix 0.9507 (temperature
        scaling: 0.9509); the Brier mix had the lower ECE there (0.0327
        against 0.0425).
    max_iter : int, default=100
        Iterations of the temperature solver (and of SLSQP for
        ``loss="log_loss"``).
    tol : float, default=1e-8
        Tolerance of the temperature solver on ``log T``
        (:class:`TemperatureCalibrator`'s).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    temperature_ : float
        The temperature of the first component, fitted by maximum
        likelihood exactly as :class:`TemperatureCalibrator` does.
    weights_ : ndarray of shape (3,)
        ``(w_1, w_2, w_3)``: the weights of the temperature-scaled, the
        uncalibrated (``softmax(z)``) and the uniform probabilities, in this
        order; non-negative, summing to 1.
    n_iter_ : int
        Iterations of the temperature solver.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : the first component alone (``weights_ = (1, 0, 0)``).
    BiasCorrectedTemperatureCalibrator : one temperature and a bias per class.

    Notes
    -----
    With weights :math:`s_i` (scaled to sum 1), :math:`p^T_i`, :math:`p^1_i`
    and :math:`u = \\mathbf{1}/K` the three components of row :math:`i`, the
    mix is :math:`P_i w` with :math:`P_i = [p^T_i, p^1_i, u]`. Its mean
    Brier score is the convex quadratic

    .. math::

        \\sum_i s_i \\lVert P_i w - e_{y_i} \\rVert^2
        = w^\\top G w - 2 h^\\top w + 1, \\quad
        G = \\sum_i s_i P_i^\\top P_i, \\quad h = \\sum_i s_i P_i^\\top e_{y_i},

    (one pass over the scores gives the 3 x 3 matrix :math:`G`, since
    :math:`p \\cdot u = 1/K` for every probability row), minimised on the
    simplex exactly: on each of its 7 faces the equality-constrained
    minimiser solves a small linear system, and the best feasible one is
    the answer. When several mixes give the same loss (for ``T = 1`` the
    first two components coincide) the one with the fewest nonzero weights,
    then the earliest in the order above, is reported. The log loss
    :math:`-\\sum_i s_i \\log (P_i w)_{y_i}` is convex in :math:`w` and
    minimised by SLSQP on the :math:`n \\times 3` true-class probabilities.

    The temperature is the maximum-likelihood one of
    :class:`TemperatureCalibrator` (the paper builds ETS on temperature
    scaling, which Guo et al. fit by the log-likelihood). The authors' code
    (``util_calibration.ets_calibrate``) instead fits ``T`` by the squared
    error too, by L-BFGS-B restricted to ``[0.05, 5]``; the restriction is
    not a property of the method and is not copied here. Since the mix
    contains the temperature-scaled probabilities (``w = (1, 0, 0)``), its
    loss on the calibration data is never above that of temperature scaling
    with the same ``T``.

    References
    ----------
    .. [1] J. Zhang, B. Kailkhura and T. Y.-J. Han, "Mix-n-Match: Ensemble
       and Compositional Methods for Uncertainty Calibration in Deep
       Learning", ICML 2020.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import EnsembleTemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = 2.0 * rng.normal(size=(5000, 4))             # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(5000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> noisy = np.where(rng.uniform(size=5000) < 0.2,    # 20% random labels
    ...                  rng.integers(0, 4, 5000), y)
    >>> ets = EnsembleTemperatureCalibrator().fit(3.0 * z, noisy)
    >>> round(ets.temperature_, 1)
    5.0
    >>> ets.weights_.round(2)  # the uniform part takes some of the label noise
    array([0.61, 0.26, 0.13])
    >>> float(ets.predict_proba(3.0 * z[:1]).sum())
    1.0
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "loss": [StrOptions({"log_loss", "brier"})],
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
        loss="log_loss",
        max_iter=100,
        tol=1e-8,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, scores, y, sample_weight):
        probabilities = scores.score_type == "probability" and scores.raw.ndim == 2
        temperature, n_iter, status = fit_temperature(
            scores.raw if probabilities else scores.logits,
            y,
            sample_weight,
            max_iter=self.max_iter,
            tol=self.tol,
            probabilities=probabilities,
        )
        self._warn_temperature(temperature, status)
        n = scores.n_samples
        s = np.full(n, 1.0 / n) if sample_weight is None else sample_weight
        total = float(s.sum())
        if not total > 0:
            raise ValueError("All sample weights are zero; there is nothing to fit.")
        s = s / total
        true, cross = _component_terms(scores, y, temperature)
        if self.loss == "brier":
            weights = _simplex_qp(*_brier_quadratic(true, cross, s, scores.n_classes))
        else:
            weights, converged = _log_loss_weights(true, s, self.max_iter)
            if not converged:
                warnings.warn(
                    f"{type(self).__name__}: the weights did not converge in "
                    f"max_iter={self.max_iter} SLSQP iterations; increase max_iter.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
        self.temperature_ = float(temperature)
        self.weights_ = weights
        self.n_iter_ = int(n_iter)

    def _warn_temperature(self, temperature, status):
        name = type(self).__name__
        if status == "max_iter":
            warnings.warn(
                f"{name}: the temperature did not converge in "
                f"max_iter={self.max_iter} iterations (T={temperature:.6g}); "
                "increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=5,
            )
        elif status == "lower_bound":
            warnings.warn(
                f"{name}: the likelihood is maximised at the lower bound "
                f"T={temperature:g}: every calibration sample is predicted "
                "correctly with a margin.",
                UserWarning,
                stacklevel=5,
            )
        elif status == "upper_bound":
            warnings.warn(
                f"{name}: the likelihood is maximised at the upper bound "
                f"T={temperature:g}: the scores carry no information about "
                "the labels.",
                UserWarning,
                stacklevel=5,
            )

    def _predict_proba(self, scores):
        # Block by block into the output: the three components of a block
        # of rows, mixed in the dtype of the scores.
        k = len(self.classes_)
        dtype = scores.dtype
        out = np.empty((scores.n_samples, k), dtype=dtype)
        w_t, w_1, w_u = (dtype.type(v) for v in self.weights_)
        temperature = dtype.type(self.temperature_)
        step = max(1, _BLOCK // k)
        for start in range(0, scores.n_samples, step):
            z = scores.logit_rows(start, start + step)
            block = out[start : start + step]
            np.divide(z, temperature, out=block)
            softmax(block, out=block)
            block *= w_t
            block += w_1 * softmax(np.array(z, dtype=dtype))
            block += w_u / dtype.type(k)
        return out
