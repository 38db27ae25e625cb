"""Proper scoring rules (Brier score, negative log-likelihood) and their
calibration-refinement decomposition."""

from dataclasses import dataclass
from numbers import Integral

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.isotonic import isotonic_regression

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    COMMON_CONSTRAINTS,
    accepts_dask,
    check_metric_inputs,
)
from skcalib._core.losses import (
    brier_from_sums,
    loss_sums,
    nll_from_sums,
)
from skcalib._core.scores import softmax, to_log_proba
from skcalib._core.solvers.temperature import fit_temperature
from skcalib._core.xp import host_array_api
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.metrics._dispatch import loss_totals

__all__ = [
    "CalibrationRefinement",
    "brier_score",
    "calibration_refinement_decomposition",
    "negative_log_likelihood",
]

#: Temperatures searched by the decomposition.
_T_BOUNDS = (1e-4, 1e4)


def _brier(inp, scale_by_half="auto"):
    return brier_from_sums(loss_sums(inp, nll=False), inp.n_classes, scale_by_half)


def _nll(inp):
    return nll_from_sums(loss_sums(inp, brier=False))


@accepts_dask
@validate_params(
    {**COMMON_CONSTRAINTS, "scale_by_half": ["boolean", StrOptions({"auto"})]},
    prefer_skip_nested_validation=True,
)
def brier_score(
    y_true, y_proba, *, sample_weight=None, labels=None, scale_by_half="auto"
):
    """Brier score: mean squared error of the predicted probabilities.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class in the
        order of ``labels``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted labels
        of ``y_true``.
    scale_by_half : bool or "auto", default="auto"
        Divide the sum over classes by 2. ``"auto"``: for two classes only,
        as :func:`sklearn.metrics.brier_score_loss`.

    Returns
    -------
    score : float
        Lower is better. Two classes: in ``[0, 1]`` (``[0, 2]`` with
        ``scale_by_half=False``); more: in ``[0, 2]`` (``[0, 1]`` with
        ``scale_by_half=True``).

    See Also
    --------
    sklearn.metrics.brier_score_loss : The same value.
    negative_log_likelihood : The other common proper score.
    calibration_refinement_decomposition : Its calibration part.

    Notes
    -----
    Array API: with ``array_api_dispatch=True`` and ``y_proba`` of another
    namespace, the sum is computed on its device in float64 where the
    device has it (numpy's value within 1e-12 relative for float64 inputs,
    1e-7 for float32; blocked pairwise float32 sums on a device without
    float64); the result is a Python float.

    .. math::

        \\mathrm{BS} = \\frac{1}{\\sum_i w_i} \\sum_{i} w_i \\sum_{k=1}^{K}
        \\big(p_{ik} - [y_i = k]\\big)^2 \\in [0, 2],

    the sum over classes of the squared error, averaged over samples, as in
    Brier (1950) and :func:`sklearn.metrics.brier_score_loss` (>= 1.7) for
    more than two classes. For two classes the customary (and scikit-learn's
    default) value is half of it, :math:`\\frac{1}{\\sum w_i} \\sum_i w_i
    (p_i - y_i)^2 \\in [0, 1]` with :math:`p_i` the probability of the
    positive class; it is computed from the positive column only (so 1-D and
    2-D binary input agree), in float64 whatever the dtype of ``y_proba``.
    With the defaults the value equals scikit-learn 1.9's
    ``brier_score_loss(y_true, y_proba, labels=labels)``.

    References
    ----------
    .. [1] G. W. Brier, "Verification of forecasts expressed in terms of
       probability", Monthly Weather Review 78, 1950.

    Examples
    --------
    >>> from skcalib.metrics import brier_score
    >>> brier_score([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3])
    0.0375
    >>> brier_score(["a", "b", "c"],
    ...             [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.2, 0.2, 0.6]])
    0.146
    """
    sums, n_classes = loss_totals(
        y_true, y_proba, loss="brier", sample_weight=sample_weight, labels=labels
    )
    return brier_from_sums(sums, n_classes, scale_by_half)


@accepts_dask
@validate_params(COMMON_CONSTRAINTS, prefer_skip_nested_validation=True)
def negative_log_likelihood(y_true, y_proba, *, sample_weight=None, labels=None):
    """Negative log-likelihood (log loss, cross-entropy) of the true labels.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class, the larger label
        or ``labels[1]``; 2-D: columns in the order of ``labels``).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; any order (unlike
        :func:`sklearn.metrics.log_loss`, which assumes sorted labels).

    Returns
    -------
    nll : float
        Mean negative log-probability of the true class (natural log); lower
        is better.

    See Also
    --------
    sklearn.metrics.log_loss : The same value for float64 input.
    brier_score : The other common proper score.

    Notes
    -----
    Array API: with ``array_api_dispatch=True`` and ``y_proba`` of another
    namespace, the sum is computed on its device as for
    :func:`brier_score`; the result is a Python float.

    .. math::

        \\mathrm{NLL} = -\\frac{1}{\\sum_i w_i} \\sum_i w_i \\log p_{i, y_i}.

    **Clipping.** One rule for every dtype: the true-class probability is
    converted to float64 and floored at ``NLL_FLOOR`` = ``2.2e-16`` (the
    machine epsilon of float64) before the log, so a zero probability of the
    true class costs ``-log(2.2e-16)`` = 36.04 whether ``y_proba`` is float32
    or float64. For float64 input this is :func:`sklearn.metrics.log_loss`
    (scikit-learn 1.9), up to its upper clip at ``1 - eps`` (which moves a
    sample's loss by at most ``2.2e-16``); for float32 input scikit-learn
    clips at the float32 epsilon instead (a cap of 15.9 per sample), so the
    two differ on samples whose true-class probability is below ``1.2e-7``.

    References
    ----------
    .. [1] I. J. Good, "Rational decisions", Journal of the Royal
       Statistical Society B 14, 1952.

    Examples
    --------
    >>> from skcalib.metrics import negative_log_likelihood
    >>> negative_log_likelihood(["spam", "ham", "ham", "spam"],
    ...                         [[.1, .9], [.9, .1], [.8, .2], [.35, .65]],
    ...                         labels=["ham", "spam"])
    0.21616
    """
    sums, _ = loss_totals(
        y_true, y_proba, loss="log_loss", sample_weight=sample_weight, labels=labels
    )
    return nll_from_sums(sums)


@dataclass(frozen=True)
class CalibrationRefinement:
    """Result of :func:`calibration_refinement_decomposition`.

    Attributes
    ----------
    loss : float
        The loss of the predictions.
    calibration : float
        ``loss - refinement``: what recalibration removes. In-sample it is
        >= 0; cross-fitted (``cv`` given) it may be negative (the
        recalibration fitted on the other folds does not help).
    refinement : float
        The loss after recalibration (in-sample, or of the cross-fitted
        recalibrated predictions).
    temperature : float
        The temperature reaching ``refinement`` (1.0 when no temperature
        improves the loss); with ``cv``, the mean of the folds' temperatures;
        NaN for ``recalibration="isotonic"``.
    recalibration : str
        ``"temperature"`` or ``"isotonic"``.
    cv : int or None
        Number of cross-fitting folds (None: in-sample).

    See Also
    --------
    calibration_refinement_decomposition : Computes it.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_refinement_decomposition
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500)
    >>> y = (rng.uniform(size=500) < p).astype(int)
    >>> d = calibration_refinement_decomposition(y, p)
    >>> bool(abs(d.calibration + d.refinement - d.loss) < 1e-12), d.recalibration
    (True, 'temperature')
    """

    loss: float
    calibration: float
    refinement: float
    temperature: float
    recalibration: str = "temperature"
    cv: int | None = None


def _score(inp, proba, loss):
    recal = type(inp)(
        y=inp.y, proba=proba, classes=inp.classes, sample_weight=inp.sample_weight
    )
    return _nll(recal) if loss == "log_loss" else _brier(recal)


def _best_temperature(log_p, y, w, loss, score_at):
    """The temperature that minimises ``loss`` of ``softmax(log_p / T)``."""
    if loss == "log_loss":
        return float(fit_temperature(log_p, y, w)[0])
    res = minimize_scalar(
        lambda u: score_at(np.exp(u)),
        bounds=np.log(_T_BOUNDS),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(np.exp(res.x))


def _subset(inp, rows, proba):
    w = None if inp.sample_weight is None else inp.sample_weight[rows]
    return type(inp)(y=inp.y[rows], proba=proba, classes=inp.classes, sample_weight=w)


def _temperature_fit(inp, rows, loss):
    """The best temperature on the samples ``rows`` (None: all)."""
    sub = inp if rows is None else _subset(inp, rows, inp.proba[rows])
    log_p = to_log_proba(sub.proba, "probability", sub.n_classes)
    t = _best_temperature(
        log_p,
        sub.y,
        sub.sample_weight,
        loss,
        lambda t: _score(sub, softmax(log_p / log_p.dtype.type(t)), loss),
    )
    return t, log_p


def pav_recalibration(pos, y, w):
    """In-sample isotonic (PAV) recalibration of the positive probability.

    The weighted isotonic regression of ``y`` on ``pos``, with tied values
    of ``pos`` pooled first (the same forecast gets the same recalibrated
    value), read at every sample. Rows of weight 0 take the value of the
    nearest fitted forecast.
    """
    u, inv = np.unique(pos, return_inverse=True)
    inv = inv.ravel()
    wt = np.ones(pos.size) if w is None else w
    w_u = np.bincount(inv, weights=wt, minlength=u.size)
    wy_u = np.bincount(inv, weights=wt * y, minlength=u.size)
    keep = w_u > 0
    fit = isotonic_regression(
        wy_u[keep] / w_u[keep], sample_weight=w_u[keep], y_min=0.0, y_max=1.0
    )
    values = np.interp(u, u[keep], fit) if not keep.all() else fit
    return values[inv]


def _isotonic_fit_apply(pos_fit, y_fit, w_fit, pos_apply):
    """PAV fitted on some samples, read (interpolated, clipped to the ends
    and to ``[1e-12, 1 - 1e-12]``) at others: the map of
    ``IsotonicCalibrator(method="pav")`` on probabilities."""
    cal = IsotonicCalibrator(method="pav", score_type="probability")
    cal.fit(pos_fit, y_fit, sample_weight=w_fit)
    return cal.predict_proba(pos_apply)[:, 1]


def _binary_positive(inp):
    if inp.n_classes != 2:
        raise ValueError(
            "recalibration='isotonic' is the binary CORP decomposition (PAV of "
            f"the outcome on the probability); y_proba has {inp.n_classes} "
            "classes. Use recalibration='temperature', or decompose each class "
            "one-vs-rest: calibration_refinement_decomposition(y == k, "
            "y_proba[:, k], recalibration='isotonic')."
        )
    return (inp.proba if inp.proba.ndim == 1 else inp.proba[:, 1]).astype(np.float64)


def _in_sample(inp, loss, recalibration):
    if recalibration == "isotonic":
        pos = _binary_positive(inp)
        return _score(inp, pav_recalibration(pos, inp.y, inp.sample_weight), loss), (
            np.nan
        )
    t, log_p = _temperature_fit(inp, None, loss)
    return _score(inp, softmax(log_p / log_p.dtype.type(t)), loss), t


def _cross_fitted(inp, loss, recalibration, cv, random_state):
    from sklearn.model_selection import StratifiedKFold  # not on import skcalib

    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
    w = inp.sample_weight
    if recalibration == "isotonic":
        pos = _binary_positive(inp)
        recal = np.empty(pos.size)
    else:
        recal = np.empty(inp.proba.shape if inp.proba.ndim == 2 else (inp.y.size, 2))
    temperatures = []
    for train, test in folds.split(np.zeros(inp.y.size), inp.y):
        if recalibration == "isotonic":
            recal[test] = _isotonic_fit_apply(
                pos[train], inp.y[train], None if w is None else w[train], pos[test]
            )
            continue
        t, _ = _temperature_fit(inp, train, loss)
        temperatures.append(t)
        log_p = to_log_proba(inp.proba[test], "probability", inp.n_classes)
        recal[test] = softmax(log_p / log_p.dtype.type(t))
    t = float(np.mean(temperatures)) if temperatures else np.nan
    return _score(inp, recal, loss), t


@host_array_api("y_proba")
@validate_params(
    {
        **COMMON_CONSTRAINTS,
        "loss": [StrOptions({"log_loss", "brier"})],
        "recalibration": [StrOptions({"temperature", "isotonic"})],
        "cv": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def calibration_refinement_decomposition(
    y_true,
    y_proba,
    *,
    loss="log_loss",
    recalibration="temperature",
    cv=None,
    random_state=0,
    sample_weight=None,
    labels=None,
):
    """Split a proper loss into a calibration and a refinement part.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    loss : {"log_loss", "brier"}, default="log_loss"
        :func:`negative_log_likelihood` or :func:`brier_score`.
    recalibration : {"temperature", "isotonic"}, default="temperature"
        The recalibration family. ``"temperature"``: temperature scaling of
        ``log p`` (any number of classes). ``"isotonic"``: the isotonic
        (pool-adjacent-violators) regression of the outcome on the
        probability of the positive class (binary problems only; see Notes).
    cv : int >= 2 or None, default=None
        None: recalibrate on the same data (in-sample). An int: cross-fit,
        the recalibration of each of ``cv`` stratified folds is fitted on
        the other folds.
    random_state : int, RandomState instance or None, default=0
        Shuffling of the folds (``cv`` only); fixed by default so that the
        value is reproducible.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    result : CalibrationRefinement
        ``loss``, ``calibration``, ``refinement``, ``temperature``,
        ``recalibration`` and ``cv``.

    See Also
    --------
    skcalib.TemperatureCalibrator : The temperature recalibration map.
    skcalib.IsotonicCalibrator : The isotonic recalibration map.
    expected_calibration_error : A binned measure of miscalibration.

    Notes
    -----
    Array API: inputs of another namespace are moved to the host once and
    computed by the numpy code (the recalibration fits are small
    sequential solvers); the result holds Python floats.

    A proper loss splits into calibration plus refinement [1]_, [2]_:
    refinement is the loss left after the best recalibration of the
    predictions, calibration the part that recalibration removes,

    .. math::

        \\mathrm{refinement} = L\\big(y, r(p)\\big),
        \\qquad \\mathrm{calibration} = L(y, p) - \\mathrm{refinement}.

    What the calibration term estimates depends on the family of ``r`` and
    on where it is fitted:

    * ``recalibration="temperature"``, in-sample: :math:`r(p) =
      \\mathrm{softmax}(\\log p / T)` with the best ``T`` on the same data
      (Guo et al. [3]_): for the log loss the maximum-likelihood temperature
      (the fit of :class:`~skcalib.TemperatureCalibrator`), for the Brier
      score a bounded scalar search on ``log T`` in ``[1e-4, 1e4]``; ``T =
      1`` is a candidate, so the term is >= 0. A one-parameter family: the
      term is a **lower bound** of the full calibration term and misses any
      miscalibration that a temperature cannot fix (a kinked reliability
      curve: 0.0001 in the example below, where the isotonic term is
      0.0527).
    * ``recalibration="isotonic"``, in-sample: :math:`r` is the weighted
      isotonic regression of the outcome on the positive probability (ties
      pooled). This is the **CORP** miscalibration component MCB of
      Dimitriadis, Gneiting & Jordan [4]_: as the isotonic regression
      minimises every proper score among non-decreasing maps, ``loss =
      MCB - DSC + UNC`` holds exactly for the empirical score (``UNC``: the
      loss of the base rate, ``DSC = UNC - refinement``), with ``MCB =
      calibration >= 0``. It is the empirical calibration term of the data
      at hand, biased upwards as an estimate of the population term (the
      fit adapts to the noise of the sample; on a calibrated model it is
      about ``(number of PAV blocks) / n`` for the log loss).
    * ``cv`` given (either family): the recalibration of each fold is fitted
      on the other folds, so ``calibration`` is an **out-of-sample**
      estimate of what that recalibration, fitted on ``(cv - 1) / cv`` of
      the data, gains on new data; it is not biased towards overfitting
      (rather slightly downwards, as each fit sees less data and its
      variance costs loss), and it can be negative: no detectable
      miscalibration. Cross-fitted isotonic predictions are those of
      ``IsotonicCalibrator(method="pav")``: interpolated between the fitted
      points and kept in ``[1e-12, 1 - 1e-12]``.

    References
    ----------
    .. [1] M. H. DeGroot and S. E. Fienberg, "The comparison and evaluation
       of forecasters", The Statistician 32, 1983.
    .. [2] J. Bröcker, "Reliability, sufficiency, and the decomposition of
       proper scores", QJRMS 135, 2009.
    .. [3] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [4] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
       diagrams for probabilistic classifiers", PNAS 118, 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_refinement_decomposition
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(5000, 3)) * 2
    >>> truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    >>> y = np.array([rng.choice(3, p=q) for q in truth])
    >>> sharp = np.exp(3 * logits) / np.exp(3 * logits).sum(axis=1, keepdims=True)
    >>> res = calibration_refinement_decomposition(y, sharp)
    >>> round(res.temperature, 1)        # undoes the factor 3 (up to noise)
    2.9
    >>> bool(res.calibration > 0.1), bool(res.refinement < res.loss)
    (True, True)

    A binary forecast with a kinked miscalibration: too confident above 0.5
    (true log-odds 0.58 times its own), not confident enough below (2.4
    times). A temperature cannot fix both sides; the isotonic map can:

    >>> from scipy.special import expit, logit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=20000)
    >>> z = logit(p)
    >>> y = (rng.uniform(size=p.size) < expit(np.where(z > 0, 0.58 * z, 2.4 * z)))
    >>> for r, cv in [("temperature", None), ("isotonic", None), ("isotonic", 5)]:
    ...     res = calibration_refinement_decomposition(
    ...         y, p, recalibration=r, cv=cv, labels=[False, True])
    ...     print(r, cv, round(res.calibration, 4))
    temperature None 0.0001
    isotonic None 0.0527
    isotonic 5 0.0456
    """
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    value = _nll(inp) if loss == "log_loss" else _brier(inp)
    if cv is None:
        refinement, temperature = _in_sample(inp, loss, recalibration)
        if not refinement < value:
            refinement = value
            temperature = 1.0 if recalibration == "temperature" else np.nan
    else:
        refinement, temperature = _cross_fitted(
            inp, loss, recalibration, int(cv), random_state
        )
    return CalibrationRefinement(
        loss=value,
        calibration=value - refinement,
        refinement=refinement,
        temperature=float(temperature),
        recalibration=recalibration,
        cv=None if cv is None else int(cv),
    )
