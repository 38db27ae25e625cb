"""Structured matrix and vector scaling (Berta, Holzmüller, Jordan and Bach).

Temperature scaling first, its probabilities mixed with the uniform
distribution at weight ``1 / (n + 1)``; then an affine map of their log,
shrunk towards the identity with one ridge strength for the intercept, one
for the diagonal and one for the off-diagonal entries, each growing with the
number of classes and fading with the number of rows. The map and its
solver are those of :mod:`skcalib.calibration._linear_map`.
"""

from numbers import Real

import numpy as np
from scipy.special import log_softmax

from skcalib._core.compat import Interval
from skcalib._core.solvers.linear import BLOCK_ENTRIES
from skcalib._core.solvers.temperature import fit_temperature
from skcalib._core.xp import solvers_linear as xp_linear
from skcalib._core.xp.scores import log_softmax as xp_log_softmax
from skcalib._core.xp.solvers_temperature import fit_temperature_xp
from skcalib.calibration._linear_map import _LinearMapCalibrator

__all__ = [
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
]

#: Probabilities below this are raised to it before the log: the smallest
#: normal float32, as in the paper's implementation (probmetrics casts the
#: probabilities to float32 and clips the log there), not the package's
#: 1e-12. The classes a model gives less than 1e-12 then keep their order
#: in the temperature step, which moves ``T`` by up to 0.3% on MNIST and
#: CIFAR-100 models; the same value in float32 and float64.
PAPER_FLOOR = float(np.finfo(np.float32).tiny)


def structured_strengths(k, n, *, intercept, diagonal, off_diagonal, rho, tau):
    """The coefficients ``(intercept, diagonal, off_diagonal)`` of the ridge
    on the penalised *mean* NLL: ``lambda K**rho / n**tau`` for the
    intercept and the diagonal, ``lambda (K (K - 1))**rho / n**tau`` for the
    off-diagonal entries (``n`` the total weight, at least 1)."""
    size = max(float(n), 1.0) ** tau
    pairs = float(k * (k - 1))
    return (
        intercept * k**rho / size,
        diagonal * k**rho / size,
        off_diagonal * pairs**rho / size if off_diagonal else 0.0,
    )


def penalty_matrix(k, intercept, diagonal, off_diagonal, *, vector):
    """Coefficients ``C`` of ``sum C (Theta - [I | 0])**2``: shape ``(2, K)``
    (rows ``w`` and ``b``) for vector scaling, ``(K, K + 1)`` (``[W | b]``)
    otherwise."""
    if vector:
        return np.vstack((np.full(k, diagonal), np.full(k, intercept)))
    c = np.full((k, k + 1), float(off_diagonal))
    c[np.arange(k), np.arange(k)] = diagonal
    c[:, k] = intercept
    return c


def mixture_weight(n):
    """Weight ``1 / (n + 1)`` of the uniform distribution in the mixture
    (``n`` the total weight, at least 1 as in the strengths: weights that
    add up to less than one row do not make the features constant)."""
    return 1.0 / (max(float(n), 1.0) + 1.0)


def structured_features(log_proba, temperature, mixture):
    """``log((1 - eps) softmax(log p / T) + eps / K)``, by blocks of rows in
    float64, returned in the dtype of ``log_proba`` (numpy)."""
    n, k = log_proba.shape
    out = np.empty_like(log_proba)
    keep, floor = np.log1p(-mixture), np.log(mixture / k)
    step = max(1, BLOCK_ENTRIES // max(1, k))
    for start in range(0, n, step):
        sl = slice(start, min(start + step, n))
        z = log_softmax(log_proba[sl].astype(np.float64) / temperature, axis=1)
        out[sl] = np.logaddexp(z + keep, floor)
    return out


def xp_structured_features(xp, log_proba, temperature, mixture, work):
    """:func:`structured_features` on the device (``work``: the
    accumulation dtype)."""
    k = log_proba.shape[1]
    z = xp_log_softmax(xp, xp.astype(log_proba, work) / temperature)
    floor = xp.full_like(z, float(np.log(mixture / k)))
    out = xp.logaddexp(z + float(np.log1p(-mixture)), floor)
    return xp.astype(out, log_proba.dtype)


class _StructuredScaling(_LinearMapCalibrator):
    """Shared fit of the structured maps (not for direct use)."""

    _parameter_constraints: dict = {
        **{
            name: rule
            for name, rule in _LinearMapCalibrator._parameter_constraints.items()
            if name not in ("reg_lambda", "reg_mu")
        },
        "reg_intercept": [Interval(Real, 0, None, closed="left")],
        "reg_diagonal": [Interval(Real, 0, None, closed="left")],
        "rho": [Interval(Real, 0, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="left")],
    }

    def _counts_weights(self):
        # n enters the mixture and the strengths: weights are repetition
        # counts (a weight of 2 is a duplicated row).
        return True

    def _resolve_strengths(self, k, n_eff):
        b, d, o = structured_strengths(
            k,
            n_eff,
            intercept=self.reg_intercept,
            diagonal=self.reg_diagonal,
            off_diagonal=getattr(self, "reg_off_diagonal", 0.0),
            rho=self.rho,
            tau=self.tau,
        )
        self.reg_intercept_, self.reg_diagonal_ = float(b), float(d)
        if not self._diagonal:
            self.reg_off_diagonal_ = float(o)
        return penalty_matrix(k, b, d, o, vector=self._diagonal), "identity"

    def _x(self, scores):
        """The features of the map: the log of the temperature-scaled
        probabilities mixed with the uniform distribution."""
        ns = getattr(scores, "ns", None)
        log_proba = scores.log_proba_floored(PAPER_FLOOR)
        if ns is None:
            return structured_features(log_proba, self.temperature_, self.mixture_)
        return xp_structured_features(
            ns.xp,
            log_proba,
            self.temperature_,
            self.mixture_,
            ns.accumulate_dtype,
        )

    def _fit(self, scores, y, sample_weight):
        # The first step: temperature scaling of log p, unpenalised; the
        # parent's fit then reads the features through _x. (An own _fit also
        # keeps the parent's _fit_chunks, which has no first step, off.)
        ns = getattr(scores, "ns", None)
        log_proba = scores.log_proba_floored(PAPER_FLOOR)
        n = log_proba.shape[0]
        if ns is None:
            temperature = fit_temperature(log_proba, y, sample_weight)[0]
            total = self._total_weight(sample_weight, n)
        else:
            temperature = fit_temperature_xp(ns, log_proba, y, sample_weight)[0]
            total = xp_linear.weight_total(ns, sample_weight, n)
        self.temperature_ = float(temperature)
        self.mixture_ = mixture_weight(total)
        super()._fit(scores, y, sample_weight)

    def _problem(self, scores, y, sample_weight):
        # The features are already temperature-scaled: start from the
        # identity map (beta = x_scale is W = I on the original features).
        problem, k, _ = super()._problem(scores, y, sample_weight)
        return problem, k, lambda: problem.x_scale


class StructuredMatrixScalingCalibrator(_StructuredScaling):
    """Structured matrix scaling (SMS): temperature scaling, then a
    regularised affine map of the log of its (uniform-mixed) probabilities.

    .. math::

        x = \\log\\left((1 - \\varepsilon)\\operatorname{softmax}
        \\left(\\frac{\\log p}{T}\\right) + \\frac{\\varepsilon}{K}\\right),
        \\qquad
        \\hat p(y \\mid p) = \\operatorname{softmax}\\left((I + \\Delta) x
        + b\\right),

    with ``T`` the temperature of temperature scaling (fitted first,
    unpenalised, then held fixed), ``epsilon = 1 / (n + 1)`` for ``n``
    calibration rows (the mixture bounds every feature below by
    ``log(epsilon / K)``: no score, not even a logit of 1e4, gives a
    feature of unbounded size), ``Delta`` a full ``K x K`` matrix and ``b``
    an intercept. ``Delta`` and ``b`` minimise the mean NLL plus a ridge on
    ``b``, on the diagonal of ``Delta`` and on its off-diagonal entries,
    each strength growing with the number of classes ``K`` and fading with
    ``n`` (Berta et al. [1]_; see Notes). The ``K (K - 1)`` in the
    off-diagonal strength keeps ``K (K + 1)`` parameters safe on a few
    thousand rows: on CIFAR-100 (``K = 100``, 5000 rows) the defaults beat
    temperature scaling on all three networks of the project's data (user
    guide, :ref:`structured-scaling`).

    ``log p`` are the normalised log-probabilities of the model (the
    log-softmax of logits; the log of probabilities floored at the smallest
    normal float32, about 1.2e-38, as the paper's implementation does,
    rather than the package's 1e-12), so logits and their softmax give the
    same fit. The identity map is the start of the fit and
    the centre of the penalty: very strong penalties give back temperature
    scaling (mixed with the uniform at ``epsilon``).
    :class:`StructuredVectorScalingCalibrator` is the limit of an infinite
    ``reg_off_diagonal`` (``Delta`` diagonal).

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
    reg_intercept : float, default=1.0
        ``lambda_b >= 0``: the intercept's ridge is ``lambda_b K**rho / n**tau``.
    reg_diagonal : float, default=1.0
        ``lambda_d >= 0``: the ridge on each diagonal entry of ``Delta`` (``v``) is
        ``lambda_d K**rho / n**tau``.
    reg_off_diagonal : float, default=1.0
        ``lambda_o >= 0``: the ridge on each off-diagonal entry of ``Delta``
        is ``lambda_o (K (K - 1))**rho / n**tau``.
    rho : float, default=1.0
        Exponent of the number of classes in the strengths.
    tau : float, default=1.0
        Exponent of the number of calibration rows ``n`` in the strengths;
        ``n`` is the sum of ``sample_weight`` when given (weights are
        repetition counts: a weight of 2 is a duplicated row), unless
        ``tau=0``.
    max_iter : int, default=1000
        Newton iterations (up to 12 classes) or L-BFGS iterations.
    tol : float, default=1e-8
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (the scores divided by ``max(1, max |log p|)``).
    n_jobs : int or None, default=None
        Threads over the blocks of rows; the result does not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    temperature_ : float
        The temperature ``T`` of the first step.
    mixture_ : float
        The weight ``epsilon = 1 / (n + 1)`` of the uniform distribution.
    coef_ : ndarray of shape (n_classes, n_classes)
        The map ``I + Delta`` of the features ``x``; row ``j`` gives the
        logit of class ``j``.
    intercept_ : ndarray of shape (n_classes,)
        The intercept ``b``.
    reg_intercept_, reg_diagonal_, reg_off_diagonal_ : float
        The ridge coefficients used: ``lambda_b K**rho / n**tau``,
        ``lambda_d K**rho / n**tau``, ``lambda_o (K (K - 1))**rho / n**tau``.
    n_iter_ : int
        Solver iterations.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    StructuredVectorScalingCalibrator : ``Delta`` diagonal, ``2K`` parameters.
    DirichletCalibrator : the same map, ODIR penalty (diagonal free), no
        temperature step.
    MatrixScalingCalibrator : the map on the scores as given.

    Notes
    -----
    With the features ``x_i`` above and sample weights ``s_i`` (``n = sum
    s_i``), ``Delta`` and ``b`` minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\ell\\left(y_i, (I + \\Delta) x_i + b\\right)}
        {\\sum_i s_i}
        + \\frac{\\lambda_b K^\\rho}{n^\\tau} \\lVert b \\rVert^2
        + \\frac{\\lambda_d K^\\rho}{n^\\tau} \\sum_j \\Delta_{jj}^2
        + \\frac{\\lambda_o (K (K - 1))^\\rho}{n^\\tau}
        \\sum_{j \\ne l} \\Delta_{jl}^2,

    ``ell`` the multinomial log-loss; ``T`` minimises the unpenalised NLL of
    ``log p / T`` (:class:`TemperatureCalibrator`'s fit). The defaults
    ``lambda_b = lambda_d = lambda_o = 1``, ``rho = tau = 1``, the ridge
    and the preprocessing (temperature scaling mixed with the uniform at
    ``1 / (n + 1)``) are those of the paper's implementation,
    ``probmetrics`` 1.3 (``SMSCalibrator()``: ridge penalty, BFGS); its
    other penalties (lasso, MCP, group lasso, fitted by SAGA) are not
    provided. The penalty is read on the mean NLL, so at ``tau = 1`` it is
    a Gaussian prior of fixed variance on the summed log-likelihood:
    ``1 / (2 lambda_o (K (K - 1))**rho)`` per off-diagonal entry. With
    ``sample_weight`` the weights are repetition counts: ``n`` is their sum
    in ``epsilon`` and in the strengths, so a weight of 2 is a duplicated
    row.

    The solver is matrix scaling's (:class:`MatrixScalingCalibrator`):
    Newton's method with the exact Hessian up to 12 classes, block-
    preconditioned L-BFGS-B above, in float64 by blocks of rows; the
    features are one ``n x K`` array in the dtype of the scores. Against
    ``probmetrics`` (torch BFGS in float32, stopped at a gradient of 1e-5)
    the probabilities agree to 1.5e-4 and our objective is the lower
    (tests); on the seven CIFAR sets of the project's data the held-out
    NLLs agree to 2e-5. Without penalty (all strengths 0) separated scores
    get the warning and tie-breaking ridge of :class:`MatrixScalingCalibrator`.
    Fitting on chunks (:meth:`fit_chunks`) is not offered: the features
    need the temperature first.

    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace are fitted and predicted on their device (the temperature,
    the features and the map), as for :class:`MatrixScalingCalibrator`.

    References
    ----------
    .. [1] E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Structured
       Matrix Scaling for Multi-Class Calibration", AISTATS 2026;
       arXiv:2511.03685 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import StructuredMatrixScalingCalibrator, TemperatureCalibrator
    >>> from skcalib.metrics import negative_log_likelihood
    >>> rng = np.random.default_rng(0)
    >>> z = 1.5 * rng.normal(size=(10000, 4))           # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(10000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> mix = np.diag([2.0, 1.0, 0.5, 1.0])
    >>> mix[0, 1] = 1.0
    >>> scores = z @ mix.T                              # classes mixed up
    >>> fit, test = slice(0, 5000), slice(5000, None)
    >>> sms = StructuredMatrixScalingCalibrator().fit(scores[fit], y[fit])
    >>> sms.reg_off_diagonal_                           # 1 * (4 * 3) / 5000
    0.0024
    >>> ts = TemperatureCalibrator().fit(scores[fit], y[fit])
    >>> for cal in (ts, sms):                           # held-out NLL
    ...     q = cal.predict_proba(scores[test])
    ...     print(round(negative_log_likelihood(y[test], q), 3))
    1.089
    0.976
    >>> round(negative_log_likelihood(y[test], p[test]), 3)   # the true p
    0.926
    """

    _parameter_constraints: dict = {
        **_StructuredScaling._parameter_constraints,
        "reg_off_diagonal": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        reg_intercept=1.0,
        reg_diagonal=1.0,
        reg_off_diagonal=1.0,
        rho=1.0,
        tau=1.0,
        max_iter=1000,
        tol=1e-8,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.reg_intercept = reg_intercept
        self.reg_diagonal = reg_diagonal
        self.reg_off_diagonal = reg_off_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs


class StructuredVectorScalingCalibrator(_StructuredScaling):
    """Structured vector scaling (SVS): temperature scaling, then a
    regularised per-class scale and offset of the log of its (uniform-mixed)
    probabilities.

    .. math::

        x = \\log\\left((1 - \\varepsilon)\\operatorname{softmax}
        \\left(\\frac{\\log p}{T}\\right) + \\frac{\\varepsilon}{K}\\right),
        \\qquad
        \\hat p(y \\mid p) = \\operatorname{softmax}\\left((1 + v) \\odot x
        + b\\right),

    with ``T`` the temperature of temperature scaling (fitted first, then
    held fixed), ``epsilon = 1 / (n + 1)`` for ``n`` calibration rows, and
    ``v, b`` in ``R^K`` minimising the mean NLL plus a ridge on ``b`` and on
    ``v`` whose strengths grow with the number of classes ``K`` and fade
    with ``n`` (Berta et al. [1]_; see Notes). It is
    :class:`StructuredMatrixScalingCalibrator` with the off-diagonal entries
    fixed at 0 (the limit of an infinite ``reg_off_diagonal``); unlike
    :class:`VectorScalingCalibrator` it maps the (mixed) log-probabilities,
    not the logits, and is shrunk towards temperature scaling.

    ``log p`` are the normalised log-probabilities of the model (the
    log-softmax of logits, the log of probabilities floored at 1e-12), so
    logits and their softmax give the same fit.

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
    reg_intercept : float, default=1.0
        ``lambda_b >= 0``: the intercept's ridge is ``lambda_b K**rho / n**tau``.
    reg_diagonal : float, default=1.0
        ``lambda_d >= 0``: the ridge on each diagonal entry of ``Delta`` (``v``) is
        ``lambda_d K**rho / n**tau``.
    rho : float, default=1.0
        Exponent of the number of classes in the strengths.
    tau : float, default=1.0
        Exponent of the number of calibration rows ``n`` in the strengths;
        ``n`` is the sum of ``sample_weight`` when given (weights are
        repetition counts: a weight of 2 is a duplicated row), unless
        ``tau=0``.
    max_iter : int, default=100
        Newton iterations.
    tol : float, default=1e-8
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (the scores divided by ``max(1, max |log p|)``).
    n_jobs : int or None, default=None
        Threads over the blocks of rows; the result does not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    temperature_ : float
        The temperature ``T`` of the first step.
    mixture_ : float
        The weight ``epsilon = 1 / (n + 1)`` of the uniform distribution.
    coef_ : ndarray of shape (n_classes,)
        The scales ``1 + v`` of the features ``x``.
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``.
    reg_intercept_, reg_diagonal_ : float
        The ridge coefficients used: ``lambda_b K**rho / n**tau`` and
        ``lambda_d K**rho / n**tau``.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    StructuredMatrixScalingCalibrator : a full, structured-regularised map.
    VectorScalingCalibrator : the unregularised map on the scores as given.
    TemperatureCalibrator : the first step alone.

    Notes
    -----
    With the features ``x_i`` above and sample weights ``s_i`` (``n = sum
    s_i``), ``v`` and ``b`` minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\ell\\left(y_i, (1 + v) \\odot x_i + b\\right)}
        {\\sum_i s_i}
        + \\frac{\\lambda_b K^\\rho}{n^\\tau} \\lVert b \\rVert^2
        + \\frac{\\lambda_d K^\\rho}{n^\\tau} \\lVert v \\rVert^2,

    ``ell`` the multinomial log-loss, ``T`` the unpenalised
    maximum-likelihood temperature of ``log p``. The defaults
    ``lambda_b = lambda_d = 1``, ``rho = tau = 1``, the ridge and the
    preprocessing are those of the paper's implementation, ``probmetrics``
    1.3 (``SVSCalibrator()``: ridge penalty, BFGS; its lasso and MCP
    penalties are not provided). Weights are repetition counts, as for
    :class:`StructuredMatrixScalingCalibrator`. The solver is vector
    scaling's (Newton's method with the exact ``2K x 2K`` Hessian, polished
    to float64 rounding). Array API: as
    :class:`StructuredMatrixScalingCalibrator`.

    References
    ----------
    .. [1] E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Structured
       Matrix Scaling for Multi-Class Calibration", AISTATS 2026;
       arXiv:2511.03685 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import StructuredVectorScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = 1.5 * rng.normal(size=(10000, 4))           # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(10000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> scores = 3.0 * z + [1.0, 0.0, 0.0, 0.0]         # over-confident, biased
    >>> fit, test = slice(0, 5000), slice(5000, None)
    >>> svs = StructuredVectorScalingCalibrator().fit(scores[fit], y[fit])
    >>> round(svs.temperature_, 2)                      # the first step
    3.07
    >>> q = svs.predict_proba(scores[test])
    >>> round(float(np.abs(q - p[test]).mean()), 3)     # from the true p
    0.005
    """

    _diagonal = True

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        reg_intercept=1.0,
        reg_diagonal=1.0,
        rho=1.0,
        tau=1.0,
        max_iter=100,
        tol=1e-8,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.reg_intercept = reg_intercept
        self.reg_diagonal = reg_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
