"""Proper scoring rules (Brier score, negative log-likelihood) and their
calibration-refinement decomposition."""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.utils._param_validation import StrOptions, validate_params

from skcalib._scores import softmax, to_log_proba
from skcalib.calibration._scaling import fit_temperature
from skcalib.metrics._validation import (
    COMMON_CONSTRAINTS,
    check_metric_inputs,
    is_dask_collection,
)

__all__ = [
    "CalibrationRefinement",
    "brier_score",
    "calibration_refinement_decomposition",
    "negative_log_likelihood",
]

#: Rows per block of the multiclass Brier score (float64 work arrays).
_BRIER_BLOCK = 1 << 16
#: Temperatures searched by the decomposition.
_T_BOUNDS = (1e-4, 1e4)
#: Floor of the true-class probability in the negative log-likelihood, for
#: every dtype of ``y_proba``: the machine epsilon of float64 (a zero
#: probability costs ``-log(NLL_FLOOR)`` = 36.04). scikit-learn's ``log_loss``
#: uses the same floor for float64 input (and that of float32 for float32).
NLL_FLOOR = float(np.finfo(np.float64).eps)


def _brier(inp, scale_by_half="auto"):
    w = inp.sample_weight
    total_weight = inp.y.size if w is None else w.sum()
    if inp.n_classes == 2:
        pos = inp.proba if inp.proba.ndim == 1 else inp.proba[:, 1]
        sq = np.square(pos.astype(np.float64) - inp.y)
        value = float((sq.sum() if w is None else sq @ w) / total_weight)
        return value if scale_by_half in ("auto", True) else 2.0 * value
    value = multiclass_brier_sum(inp.y, inp.proba, w) / total_weight
    return value / 2.0 if scale_by_half is True else float(value)


def multiclass_brier_sum(y, proba, w):
    """``sum_i w_i sum_k (p_ik - [y_i = k])**2`` in float64, by blocks of rows."""
    total = 0.0
    for start in range(0, y.size, _BRIER_BLOCK):
        diff = proba[start : start + _BRIER_BLOCK].astype(np.float64)
        diff[np.arange(diff.shape[0]), y[start : start + _BRIER_BLOCK]] -= 1.0
        rows = np.einsum("ij,ij->i", diff, diff)
        total += rows.sum() if w is None else rows @ w[start : start + _BRIER_BLOCK]
    return total


def sample_nll(y, proba):
    """``-log(max(p_true, NLL_FLOOR))`` of each sample, in float64.

    ``p_true`` is the probability of the true class (column ``y``; 1-D binary
    ``proba``: ``p`` for ``y == 1``, ``1 - p`` for ``y == 0``), converted to
    float64 before anything else, so that the rule is the same for every
    dtype.
    """
    if proba.ndim == 1:
        p = proba.astype(np.float64)
        p_true = np.where(y == 1, p, 1.0 - p)
    else:
        p_true = proba[np.arange(y.size), y].astype(np.float64)
    return -np.log(np.maximum(p_true, NLL_FLOOR))


def _nll(inp):
    nll = sample_nll(inp.y, inp.proba)
    w = inp.sample_weight
    return float(nll.mean() if w is None else (nll @ w) / w.sum())


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
    if any(is_dask_collection(a) for a in (y_true, y_proba, sample_weight)):
        from skcalib.metrics._dask import proper_score

        return proper_score(
            y_true,
            y_proba,
            loss="brier",
            sample_weight=sample_weight,
            labels=labels,
            scale_by_half=scale_by_half,
        )
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    return _brier(inp, scale_by_half)


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
    if any(is_dask_collection(a) for a in (y_true, y_proba, sample_weight)):
        from skcalib.metrics._dask import proper_score

        return proper_score(
            y_true, y_proba, loss="log_loss", sample_weight=sample_weight, labels=labels
        )
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    return _nll(inp)


@dataclass(frozen=True)
class CalibrationRefinement:
    """Result of :func:`calibration_refinement_decomposition`.

    Attributes
    ----------
    loss : float
        The loss of the predictions.
    calibration : float
        ``loss - refinement`` (>= 0): what recalibration removes.
    refinement : float
        The loss after the best temperature recalibration.
    temperature : float
        The temperature reaching ``refinement`` (1.0 when no temperature
        improves the loss).

    See Also
    --------
    calibration_refinement_decomposition : Computes it.
    """

    loss: float
    calibration: float
    refinement: float
    temperature: float


@validate_params(
    {**COMMON_CONSTRAINTS, "loss": [StrOptions({"log_loss", "brier"})]},
    prefer_skip_nested_validation=True,
)
def calibration_refinement_decomposition(
    y_true, y_proba, *, loss="log_loss", sample_weight=None, labels=None
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
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    result : CalibrationRefinement
        ``loss``, ``calibration``, ``refinement`` and ``temperature``.

    See Also
    --------
    skcalib.TemperatureCalibrator : The recalibration map.
    expected_calibration_error : A binned measure of miscalibration.

    Notes
    -----
    A proper loss splits into calibration plus refinement [1]_, [2]_:
    refinement is the loss left after the best recalibration of the
    predictions, calibration the part that recalibration removes. Here the
    recalibration family is temperature scaling of ``log p`` (Guo et al.
    [3]_), on the same data:

    .. math::

        \\mathrm{refinement} = \\min_{T} L\\big(y, \\mathrm{softmax}(\\log p / T)\\big),
        \\qquad \\mathrm{calibration} = L(y, p) - \\mathrm{refinement} \\ge 0.

    For the log loss ``T`` is the maximum-likelihood temperature
    (:func:`skcalib.calibration._scaling.fit_temperature`, the fit of
    :class:`~skcalib.TemperatureCalibrator`); for the Brier score ``T``
    minimises the Brier score by a bounded scalar search on ``log T`` in
    ``[1e-4, 1e4]``. The untransformed predictions are a candidate too, so
    the calibration term is never negative. Temperature scaling is a
    one-parameter family: the calibration term is a lower bound of the full
    (isotonic / binned) calibration term, and it is 0 for predictions whose
    only flaw cannot be fixed by a temperature.

    References
    ----------
    .. [1] M. H. DeGroot and S. E. Fienberg, "The comparison and evaluation
       of forecasters", The Statistician 32, 1983.
    .. [2] J. Bröcker, "Reliability, sufficiency, and the decomposition of
       proper scores", QJRMS 135, 2009.
    .. [3] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

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
    """
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    value = _nll(inp) if loss == "log_loss" else _brier(inp)
    log_p = to_log_proba(inp.proba, "probability", inp.n_classes)

    def loss_at(temperature):
        p = softmax(log_p / log_p.dtype.type(temperature))
        recal = type(inp)(
            y=inp.y, proba=p, classes=inp.classes, sample_weight=inp.sample_weight
        )
        return _nll(recal) if loss == "log_loss" else _brier(recal)

    if loss == "log_loss":
        temperature = fit_temperature(log_p, inp.y, inp.sample_weight)[0]
    else:
        res = minimize_scalar(
            lambda u: loss_at(np.exp(u)),
            bounds=np.log(_T_BOUNDS),
            method="bounded",
            options={"xatol": 1e-6},
        )
        temperature = float(np.exp(res.x))
    refinement = loss_at(temperature)
    if not refinement < value:
        refinement, temperature = value, 1.0
    return CalibrationRefinement(
        loss=value,
        calibration=value - refinement,
        refinement=refinement,
        temperature=float(temperature),
    )
