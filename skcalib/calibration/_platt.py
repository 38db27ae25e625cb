"""Platt scaling: a logistic map of one score per class (one-vs-rest)."""

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

from skcalib._core.compat import Interval
from skcalib._core.solvers.logistic import (
    fit_platt,
    platt_terms,
    solve_platt,
)
from skcalib._core.xp import to_numpy
from skcalib._core.xp.solvers_logistic import xp_fit_platt
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator
from skcalib.calibration._partial_fit import FORGETTING_FACTOR, PartialFitMixin

__all__ = ["PlattCalibrator"]


def _platt_map_chunk_terms(scores, y, w, *, view, params, **kwargs):
    """Platt terms of one chunk of one map (see ``_OneVsRestCalibrator``)."""
    s, pos = view(scores, y)
    loss, grad, hess = platt_terms(s, pos, w, params, **kwargs)
    return loss, grad, hess


def _abs_max_chunk(scores, y, w, *, view):
    return (float(np.max(np.abs(view(scores, y)[0]), initial=0.0)),)


class PlattCalibrator(PartialFitMixin, _OneVsRestCalibrator):
    """Platt scaling: a logistic map of the log-odds.

    ``P(y = 1 | s) = 1 / (1 + exp(-(a s + b)))`` where ``s`` is the log-odds
    of the uncalibrated model (a decision value, or ``log(p / (1 - p))`` for a
    probability ``p``, computed without forming ``1 - p``). ``a`` and ``b``
    minimise the weighted cross-entropy against Platt's smoothed targets

    .. math::

        t_+ = \\frac{N_+ + 1}{N_+ + 2}, \\qquad t_- = \\frac{1}{N_- + 2},

    with ``N_+``/``N_-`` the (weighted) counts of positives and negatives. The
    smoothing is the regularisation: the targets are never 0 or 1, so the
    optimum is finite even when the scores separate the classes perfectly.
    The convex problem is solved by Newton's method with a line search.

    **Sample weights** are frequency weights, as in Platt's paper and in
    :class:`sklearn.calibration.CalibratedClassifierCV`: the cross-entropy
    is weighted by ``sample_weight`` and ``N_+``, ``N_-`` are the weight
    totals of the positives and negatives. A weight of 2 is therefore
    exactly a duplicated row and a weight of 0 a dropped one, but the
    result depends on the scale of the weights, by design: ``N_+`` is the
    amount of evidence, and the smoothing (one pseudo-sample per class)
    weighs less against more of it. Multiplying every weight by ``c``
    moves the targets towards 0 and 1 for ``c > 1`` (weights of 1e308:
    ``t_+ = 1``, ``t_- = 0``, unsmoothed logistic regression) and towards
    1/2 for ``c < 1`` (weights of 1e-300: nearly constant at the smoothed
    base rate). For importance or class-balancing weights whose scale means
    nothing, normalise them first (e.g. to mean 1, so that ``N_+ + N_-``
    is the number of rows). The weights are divided by their maximum inside
    the solver, so no scale overflows or underflows.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method giving scores (``"auto"``: decision_function
        if the estimator has it, else predict_proba).
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes (see the user guide).
    max_iter : int, default=100
        Newton iterations per map.
    tol : float, default=1e-10
        Relative step size that ends the Newton iterations.
    forgetting_factor : float in (0, 1], default=1.0
        :meth:`partial_fit` only: after ``m`` batches, the rows of the
        ``j``-th weigh ``forgetting_factor ** (m - j)`` times their
        ``sample_weight`` (exponential forgetting of old batches, for
        drifting streams): the fit is the weighted fit on the concatenated
        batches. 1 forgets nothing; :meth:`fit` does not use it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    calibrators_ : list of ndarray of shape (2,)
        ``(a, b)`` of each map (one map for binary problems).
    coef_ : ndarray of shape (n_maps,)
        Slopes ``a``.
    intercept_ : ndarray of shape (n_maps,)
        Intercepts ``b``.
    n_iter_ : ndarray of shape (n_maps,)
        Newton iterations of each map.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : one parameter shared by all classes.
    sklearn.calibration.CalibratedClassifierCV : ``method="sigmoid"`` fits the
        same objective with L-BFGS (and ``p = 1 / (1 + exp(A f + B))``, so its
        ``A, B`` are our ``-a, -b``).

    Notes
    -----
    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, ...) are fitted and calibrated on their device
    for two classes and ``multi_class="ovr"``: each evaluation of the
    objective (a Newton step or a line-search step) sends 6 numbers (loss,
    gradient, Hessian) to the host, where the 2 x 2 step is solved, and the
    rows never cross; top-label maps, and wrapper mode, run on the host,
    one transfer each way.

    References
    ----------
    .. [1] J. Platt, "Probabilistic outputs for support vector machines and
       comparisons to regularized likelihood methods", Advances in Large
       Margin Classifiers, 1999.
    .. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's
       probabilistic outputs for support vector machines", Machine Learning
       68, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import PlattCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 1000)
    >>> logits = 4.0 * (2 * y - 1) + rng.normal(scale=4.0, size=1000)  # over-confident
    >>> cal = PlattCalibrator().fit(logits, y)
    >>> cal.predict_proba(logits[:2]).shape
    (2, 2)
    >>> bool(0 < cal.coef_[0] < 1)   # the slope shrinks over-confident logits
    True
    """

    _parameter_constraints: dict = {
        **_OneVsRestCalibrator._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "forgetting_factor": FORGETTING_FACTOR,
    }
    _map_input = "log_odds"
    _array_api_native = True
    #: The smoothed targets use the weight totals (see the docstring).
    _rescale_sample_weight = False

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        multi_class="ovr",
        max_iter=100,
        tol=1e-10,
        forgetting_factor=1.0,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.tol = tol
        self.forgetting_factor = forgetting_factor

    def _fit_map(self, score, target, sample_weight):
        return self._platt_result(
            *fit_platt(
                score, target, sample_weight, max_iter=self.max_iter, tol=self.tol
            )
        )

    def _fit_map_xp(self, ns, score, target, sample_weight):
        return self._platt_result(
            *xp_fit_platt(
                ns,
                score,
                target,
                sample_weight,
                max_iter=self.max_iter,
                tol=self.tol,
            )
        )

    def _fit_map_chunks(self, data, view, n_pos):
        (abs_max,) = data.map_scores(
            partial(_abs_max_chunk, view=view),
            combine=lambda parts: (max(p[0] for p in parts if p is not None),),
        )
        n_neg = data.total_weight - n_pos
        kwargs = {"n_pos": n_pos, "n_neg": n_neg, "scale": max(1.0, abs_max)}

        def terms(params):
            return data.map_scores(
                partial(_platt_map_chunk_terms, view=view, params=params, **kwargs)
            )

        return self._platt_result(
            *solve_platt(terms, n_pos, n_neg, kwargs["scale"], self.max_iter, self.tol)
        )

    def _platt_result(self, a, b, n_iter, converged):
        if not converged:
            warnings.warn(
                f"Platt scaling did not converge in max_iter={self.max_iter} Newton "
                "iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=5,
            )
        return np.array([a, b, n_iter], dtype=np.float64)

    def _set_fitted_views(self):
        maps = [m for m in self.calibrators_ if m is not None]
        self.coef_ = np.array(
            [m[0] if m is not None else 1.0 for m in self.calibrators_]
        )
        self.intercept_ = np.array(
            [m[1] if m is not None else 0.0 for m in self.calibrators_]
        )
        self.n_iter_ = np.array([int(m[2]) for m in maps], dtype=int)
        self.calibrators_ = [None if m is None else m[:2] for m in self.calibrators_]

    def _apply_map(self, fitted, score):
        return expit(fitted[0] * score + fitted[1])

    def _apply_map_xp(self, fitted, score, ns):
        a, b = (float(v) for v in to_numpy(fitted)[:2])
        return 1.0 / (1.0 + ns.xp.exp(-(a * score + b)))
