"""Beta calibration (Kull, Silva Filho & Flach 2017)."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_expit
from sklearn.exceptions import ConvergenceWarning

from skcalib._core.compat import Interval, StrOptions
from skcalib._core.solvers.logistic import fit_logistic
from skcalib._core.xp import to_numpy
from skcalib._core.xp.solvers_logistic import xp_fit_logistic
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator
from skcalib.calibration._partial_fit import FORGETTING_FACTOR, PartialFitMixin

__all__ = ["BetaCalibrator"]

_LOG2 = float(np.log(2.0))


def beta_features(s):
    """``(ln p, -ln(1 - p))`` of ``p = sigmoid(s)`` from log-odds ``s``, stably.

    ``log_expit`` never forms ``p`` or ``1 - p``: both columns stay finite and
    accurate for log-odds of ±1e4 (where ``p`` rounds to 0 or 1).
    """
    return log_expit(s), -log_expit(-s)


def fit_beta(s, t, sample_weight=None, *, parameters="abm", max_iter=100, tol=1e-10):
    """Fit the beta map ``logit q = a ln p - b ln(1 - p) + c`` (``a, b >= 0``).

    Weighted maximum likelihood (unpenalised logistic regression) on the
    features of :func:`beta_features`:

    * ``"abm"``: columns ``(ln p, -ln(1 - p), 1)`` give ``(a, b, c)``;
    * ``"am"``: ``a = b``, one column ``ln p - ln(1 - p) = s`` and an intercept;
    * ``"ab"``: midpoint fixed at 1/2, columns ``(ln 2p, -ln 2(1 - p))`` and no
      intercept, so ``c = (a - b) ln 2``.

    Sign constraints as in Kull et al. (2017): when a fitted slope is negative
    (first ``a``, then ``b``) it is set to 0 and the model refitted without it;
    a slope still negative after that refit is dropped as well (the map is then
    constant). The map is therefore never decreasing.

    Returns
    -------
    abc : ndarray of shape (3,)
        ``(a, b, c)``.
    n_iter : int
        Newton iterations over all refits.
    converged : bool
    separated : bool
        Whether the final loss is 0 to machine precision: the classes are
        separated by the map, whose maximum-likelihood slopes are infinite.
    """
    if sample_weight is not None:
        keep = sample_weight > 0
        s, t, sample_weight = s[keep], t[keep], sample_weight[keep]
    log_p, log_1p = beta_features(s)  # ln p and -ln(1 - p)
    n = s.shape[0]
    if parameters == "abm":
        cols = {"a": log_p, "b": log_1p, "c": np.ones(n)}
    elif parameters == "am":
        cols = {"a": s, "c": np.ones(n)}
    else:  # "ab"
        cols = {"a": log_p + _LOG2, "b": log_1p - _LOG2}

    def solve(columns):
        return fit_logistic(
            np.column_stack(columns), t, sample_weight, max_iter=max_iter, tol=tol
        )

    a, b, c, total_iter, converged, loss, names = _sign_constrained(
        cols, parameters, solve
    )
    total = float(n if sample_weight is None else sample_weight.sum())
    separated = bool(names) and loss <= 1e-12 * total
    return np.array([a, b, c]), total_iter, converged, separated


def _sign_constrained(cols, parameters, solve):
    """The refits of :func:`fit_beta`: ``solve(columns)`` (a logistic fit
    returning ``(coef, n_iter, converged, loss)``) on the columns ``cols``
    (name -> column), a negative slope (``a`` first) dropped and the model
    refitted until none is. Returns ``(a, b, c, n_iter, converged, loss,
    names)``."""
    total_iter = 0
    while True:
        names = list(cols)
        if names:
            coef, n_iter, converged, loss = solve([cols[k] for k in names])
        else:  # "ab" with both slopes dropped: the constant map q = 1/2
            coef, n_iter, converged, loss = np.zeros(0), 0, True, np.inf
        total_iter += n_iter
        fitted = dict(zip(names, coef.tolist(), strict=True))
        negative = [k for k in ("a", "b") if fitted.get(k, 0.0) < 0]
        if not negative:
            break
        del cols[negative[0]]
    a = fitted.get("a", 0.0)
    b = a if parameters == "am" else fitted.get("b", 0.0)
    c = (a - b) * _LOG2 if parameters == "ab" else fitted.get("c", 0.0)
    return a, b, c, total_iter, converged, loss, names


def xp_fit_beta(ns, s, pos, sample_weight=None, *, parameters, max_iter, tol):
    """:func:`fit_beta` on the device: log-odds ``s`` (accumulation dtype)
    and boolean targets ``pos`` of a namespace; the same features, refits
    and separation test, the Newton passes of
    :func:`~skcalib._core.xp.solvers_logistic.xp_fit_logistic`."""
    xp = ns.xp
    t = xp.astype(pos, s.dtype)
    if sample_weight is not None:
        keep = sample_weight > 0
        s, t, sample_weight = s[keep], t[keep], sample_weight[keep]
    log_p, log_1p = _xp_log_expit(xp, s), -_xp_log_expit(xp, -s)
    n = s.shape[0]
    if parameters == "abm":
        cols = {"a": log_p, "b": log_1p, "c": None}  # None: the ones column
    elif parameters == "am":
        cols = {"a": s, "c": None}
    else:  # "ab"
        cols = {"a": log_p + _LOG2, "b": log_1p - _LOG2}

    def solve(columns):
        return xp_fit_logistic(
            ns, columns, t, sample_weight, max_iter=max_iter, tol=tol
        )

    a, b, c, total_iter, converged, loss, names = _sign_constrained(
        cols, parameters, solve
    )
    total = float(n if sample_weight is None else to_numpy(xp.sum(sample_weight)))
    separated = bool(names) and loss <= 1e-12 * total
    return np.array([a, b, c]), total_iter, converged, separated


def _xp_log_expit(xp, s):
    """``log(sigmoid(s))`` in the namespace of ``s``, as scipy's
    ``log_expit``: ``s - log1p(exp(s))`` below 0, ``-log1p(exp(-s))``
    above."""
    return xp.where(s < 0, s - xp.log1p(xp.exp(s)), -xp.log1p(xp.exp(-s)))


def beta_midpoint(a, b, c):
    """The score ``m`` in (0, 1) that the map ``(a, b, c)`` sends to 1/2, or NaN.

    Solves ``a ln m - b ln(1 - m) + c = 0`` in ``u = logit(m)`` (the left side
    is non-decreasing in ``u``). It has one root when ``a, b > 0``; when
    ``a = 0`` only if ``c < 0``, when ``b = 0`` only if ``c > 0``; for
    ``a = b = 0`` (a constant map) there is none.
    """
    if a > 0 and b > 0:
        if a == b:
            return float(expit(-c / a))

        def g(u):
            return a * log_expit(u) - b * log_expit(-u) + c

        lo, hi = -1.0, 1.0
        while g(lo) > 0:
            lo *= 2.0
        while g(hi) < 0:
            hi *= 2.0
        return float(expit(brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)))
    if a == 0 and b > 0 and c < 0:
        # log_expit(-u) = c / b  <=>  u = log(expm1(-c / b))
        return float(expit(_log_expm1(-c / b)))
    if b == 0 and a > 0 and c > 0:
        # log_expit(u) = -c / a  <=>  u = -log(expm1(c / a))
        return float(expit(-_log_expm1(c / a)))
    return float("nan")


def _log_expm1(x):
    """``log(exp(x) - 1)`` for ``x > 0`` without overflow (``x`` of 1e4)."""
    return x + np.log(-np.expm1(-x))


# ------------------------------------------------------------------ estimator
class BetaCalibrator(PartialFitMixin, _OneVsRestCalibrator):
    """Beta calibration: a logistic map of ``ln p`` and ``ln(1 - p)``.

    For the model's probability ``p`` of the class (binary: the positive
    class; one-vs-rest: each class; top-label: the predicted class),

    .. math::

        \\mathrm{logit}\\, \\hat q = a \\ln p - b \\ln(1 - p) + c
        = \\ln \\frac{e^c\\, p^a}{(1 - p)^b}, \\qquad a, b \\ge 0,

    the family of maps derived from beta-distributed scores in each class
    (Kull et al. 2017). It contains the identity (``a = b = 1, c = 0``) and
    Platt scaling of the log-odds (``a = b``), and can also bend the two
    ends independently (sigmoid or inverse-sigmoid shapes), which Platt
    scaling cannot. The midpoint ``m`` (the score mapped to 1/2) satisfies
    ``c = b ln(1 - m) - a ln m``.

    Three parametrisations (``parameters``):

    * ``"abm"`` (default): ``a``, ``b`` and ``c`` free (three parameters);
    * ``"am"``: ``a = b`` (two parameters): logistic in the log-odds, i.e.
      Platt scaling without Platt's smoothed targets;
    * ``"ab"``: the midpoint is fixed at ``m = 1/2``, so
      ``c = (a - b) ln 2`` (two parameters).

    The parameters maximise the weighted likelihood (an unpenalised logistic
    regression on ``(ln p, -ln(1 - p))``), found by Newton's method with the
    exact Hessian and a line search. The slopes are constrained as in the
    paper: if a fitted slope is negative (``a`` checked first) it is fixed at 0
    and the model refitted; a slope still negative after that is dropped as
    well. The map is thus never decreasing.

    ``ln p`` and ``ln(1 - p)`` are computed from the log-odds ``s`` of the
    model as ``log_expit(s)`` and ``log_expit(-s)``, so logits of ±1e4 give
    finite features (probability inputs are turned into log-odds first,
    floored at 1e-12). Outputs are kept in ``[1e-12, 1 - 1e-12]``.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    parameters : {"abm", "am", "ab"}, default="abm"
        Which parameters are fitted (see above).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes (see the user guide).
    max_iter : int, default=100
        Newton iterations per fit (a refit after a negative slope starts again).
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
        What the scores were taken to be.
    calibrators_ : list of ndarray of shape (3,) or None
        ``(a, b, c)`` of each map (one map for binary problems); ``None`` for a
        top-label class never predicted at fit (its confidence is kept).
    coef_ : ndarray of shape (n_maps, 2)
        The slopes ``(a, b)`` of each map (``(1, 1)`` for a ``None`` map).
    intercept_ : ndarray of shape (n_maps,)
        The intercepts ``c`` (0 for a ``None`` map).
    map_ : ndarray of shape (n_maps,)
        The midpoint ``m`` of each map: the uncalibrated probability that is
        mapped to 1/2, ``c = b ln(1 - m) - a ln m``. NaN when the map never
        crosses 1/2 (a constant map, or ``a = 0`` with ``c >= 0``, or
        ``b = 0`` with ``c <= 0``). Reported only: predictions use ``(a, b, c)``
        exactly as fitted.
    n_iter_ : ndarray of shape (n_maps,)
        Newton iterations of each map (over all refits; 0 for a ``None`` map).
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    PlattCalibrator : the ``a = b`` special case, with smoothed targets.
    IsotonicCalibrator : any non-decreasing map; needs more data.

    Notes
    -----
    The reference implementation, the ``betacal`` package (1.1.0), fits the
    same models with scikit-learn's ``LogisticRegression(C=99999999999)``
    (L-BFGS, tolerance 1e-4), so its coefficients agree with these to about
    1e-4. It applies the sign constraint to ``"abm"`` only, clips ``p`` to
    ``[eps, 1 - eps]`` of the input dtype, sets a global
    ``warnings.filterwarnings("ignore")``, and its reported midpoint
    (``map_[2]``) comes from a bounded scalar search that prediction does not
    use and that returns a boundary value when the map has no midpoint; here
    the midpoint is solved to machine precision (or NaN) and never feeds back
    into the map.

    When the calibration scores separate the classes perfectly the likelihood
    has no maximum (the slopes grow without bound); the fit stops when the
    loss is 0 to machine precision, giving a near-step map, and a
    ``UserWarning`` says so.

    Sample weights are repetition counts: a weight of 2 gives the fit of a
    duplicated row, and a weight of 0 that of a dropped row, to the Newton
    tolerance, wherever the likelihood has a maximum (and the scale of the
    weights changes nothing). On separated classes (the warning above) it
    has none, and the fit is not a property of the data: the iterations
    stop at the first point along the diverging slopes where the loss rounds
    to 0 (``<= 1e-12`` times the total weight), and where that happens
    depends on the rounding of the weighted sums, which differs between a
    weight of 2 and two rows of weight 1. The two near-step maps agree on
    which side of the step every calibration score lies, but between the
    classes' scores they can differ (by up to 0.24 in probability, measured
    on separated sets of 4 to 15 rows).

    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, ...) are fitted and calibrated on their device
    for two classes and ``multi_class="ovr"``: each evaluation of the
    objective sends at most 10 numbers (loss, gradient, Hessian) to the
    host, where the (at most) 3 x 3 step is solved, and the rows never
    cross; top-label maps, and wrapper mode, run on the host, one transfer
    each way.

    References
    ----------
    .. [1] M. Kull, T. Silva Filho and P. Flach, "Beta calibration: a
       well-founded and easily implemented improvement on logistic calibration
       for binary classifiers", AISTATS 2017.
    .. [2] M. Kull, T. M. Silva Filho and P. Flach, "Beyond sigmoids: How to
       obtain well-calibrated probabilities from binary classifiers with beta
       calibration", Electronic Journal of Statistics 11(2), 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import BetaCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000)
    >>> p = np.where(y == 1, rng.beta(4, 2, 2000), rng.beta(2, 4, 2000))
    >>> cal = BetaCalibrator().fit(p, y)
    >>> cal.coef_.shape, cal.intercept_.shape, cal.map_.shape
    ((1, 2), (1,), (1,))
    >>> bool((cal.coef_ >= 0).all())
    True
    >>> # the true map here is q = p^2 / (p^2 + (1 - p)^2): 0.06, 0.5, 0.94
    >>> cal.predict_proba([0.2, 0.5, 0.8])[:, 1].round(2)
    array([0.07, 0.51, 0.96])
    """

    _parameter_constraints: dict = {
        **_OneVsRestCalibrator._parameter_constraints,
        "parameters": [StrOptions({"abm", "am", "ab"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "forgetting_factor": FORGETTING_FACTOR,
    }
    _map_input = "log_odds"
    _array_api_native = True

    def __init__(
        self,
        estimator=None,
        *,
        parameters="abm",
        score_type="auto",
        response_method="auto",
        classes=None,
        multi_class="ovr",
        max_iter=100,
        tol=1e-10,
        forgetting_factor=1.0,
    ):
        self.estimator = estimator
        self.parameters = parameters
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.tol = tol
        self.forgetting_factor = forgetting_factor

    def _fit_map(self, score, target, sample_weight):
        fitted = fit_beta(
            score,
            target,
            sample_weight,
            parameters=self.parameters,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        return self._beta_result(*fitted)

    def _fit_map_xp(self, ns, score, target, sample_weight):
        fitted = xp_fit_beta(
            ns,
            score,
            target,
            sample_weight,
            parameters=self.parameters,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        return self._beta_result(*fitted)

    def _beta_result(self, abc, n_iter, converged, separated):
        if separated:
            warnings.warn(
                "The calibration scores separate the classes perfectly: the "
                "beta map's likelihood has no maximum, the fitted map is a "
                "near-step function.",
                UserWarning,
                stacklevel=6,
            )
        elif not converged:
            warnings.warn(
                f"Beta calibration did not converge in max_iter={self.max_iter} "
                "Newton iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=6,
            )
        return np.append(abc, n_iter)

    def _set_fitted_views(self):
        maps = self.calibrators_
        identity = np.array([1.0, 1.0, 0.0, 0.0])
        table = np.array([identity if m is None else m for m in maps])
        self.coef_ = table[:, :2].copy()
        self.intercept_ = table[:, 2].copy()
        self.n_iter_ = table[:, 3].astype(int)
        self.map_ = np.array([beta_midpoint(*row[:3]) for row in table])
        self.calibrators_ = [None if m is None else m[:3] for m in maps]

    def _apply_map(self, fitted, score):
        a, b, c = fitted
        with np.errstate(over="ignore"):  # a * ln p may be -inf: expit gives 0
            z = a * log_expit(score) - b * log_expit(-score) + c
        return expit(z)

    def _apply_map_xp(self, fitted, score, ns):
        xp = ns.xp
        a, b, c = (float(v) for v in to_numpy(fitted)[:3])
        z = a * _xp_log_expit(xp, score) - b * _xp_log_expit(xp, -score) + c
        return 1.0 / (1.0 + xp.exp(-z))
