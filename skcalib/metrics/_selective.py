"""Selective prediction: the risk-coverage curve, its area (AURC), the excess
AURC, the selective risk at a coverage and the AUROC of correctness.

A selective classifier answers only the samples whose confidence reaches a
threshold and abstains on the others; lowering the threshold raises the
*coverage* (the fraction answered) and usually the *selective risk* (the mean
loss on the answered samples). The arithmetic lives in
:mod:`skcalib.metrics._selective_core`.
"""

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.metrics import roc_auc_score

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import COMMON_CONSTRAINTS
from skcalib._core.xp import host_array_api
from skcalib.metrics._selective_core import (
    CONFIDENCES,
    LOSSES,
    curve_area,
    curve_from_scores,
    generalized_curve_area,
    oracle_curve,
    risk_at,
    selective_inputs,
)

__all__ = [
    "RiskCoverageCurve",
    "augrc",
    "aurc",
    "correctness_auroc",
    "excess_aurc",
    "risk_coverage_curve",
    "selective_risk_at_coverage",
]

SELECTIVE_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    "confidence": [StrOptions(set(CONFIDENCES)), "array-like"],
    "loss": [StrOptions(set(LOSSES)), callable],
}

_PARAMS_DOC = """\
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class in the
        order of ``labels``; rows must sum to 1.
    confidence : {"max_proba", "margin", "negative_entropy"} or array-like \
of shape (n_samples,), default="max_proba"
        The score that ranks the samples, higher meaning more confident:
        the largest probability, the gap between the two largest ones, or
        ``sum_k p_k log p_k`` (minus the entropy); or one finite score per
        sample (for example minus an epistemic uncertainty).
    loss : {"error", "brier", "log_loss"} or callable, default="error"
        The loss of each sample, whose weighted mean over the accepted
        samples is the selective risk: the 0/1 error of the arg-max
        prediction (binary 1-D: ``p > 0.5`` predicts ``labels[1]``), the
        Brier score of the sample (as :func:`brier_score`: the squared error
        of the positive class for two classes, the sum over classes
        otherwise), or ``-log p_true`` (as :func:`negative_log_likelihood`).
        A callable ``loss(y_true, y_proba)`` gets ``y_true`` as given and
        the validated ``y_proba`` and returns one finite loss per sample.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights; a weight of 0 drops the row.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted labels
        of ``y_true``, which must then name every column (otherwise a
        ``ValueError`` asks for ``labels=``; the columns are never guessed)."""


def _doc(func):
    func.__doc__ = func.__doc__.replace("    {params}", _PARAMS_DOC)
    return func


@dataclass(frozen=True, eq=False)
class RiskCoverageCurve:
    """The risk-coverage curve, from :func:`risk_coverage_curve`.

    One point per distinct confidence, in decreasing order of the threshold.
    Unpacks like the curves of :mod:`sklearn.metrics`: ``coverage, risk,
    thresholds = risk_coverage_curve(...)``.

    Attributes
    ----------
    coverage : ndarray of shape (n_thresholds,)
        Weighted fraction of the samples whose confidence is at least the
        threshold; increasing, the last one 1.
    risk : ndarray of shape (n_thresholds,)
        Weighted mean loss of those samples (the selective risk).
    thresholds : ndarray of shape (n_thresholds,)
        The distinct confidences, decreasing.

    See Also
    --------
    risk_coverage_curve : Computes it.
    skcalib.plotting.RiskCoverageDisplay : Draws it.

    Examples
    --------
    >>> from skcalib.metrics import risk_coverage_curve
    >>> coverage, risk, thresholds = risk_coverage_curve(
    ...     [0, 1, 1, 0], [0.1, 0.9, 0.4, 0.7])
    >>> thresholds  # max(p, 1 - p): two rows at 0.9
    array([0.9, 0.7, 0.6])
    >>> coverage, risk
    (array([0.5 , 0.75, 1.  ]), array([0.        , 0.33333333, 0.5       ]))
    """

    coverage: np.ndarray
    risk: np.ndarray
    thresholds: np.ndarray

    def __iter__(self):
        return iter((self.coverage, self.risk, self.thresholds))


def _curve(inputs):
    coverage, risk, thresholds = curve_from_scores(
        inputs.confidence, inputs.loss, inputs.weight
    )
    return RiskCoverageCurve(coverage=coverage, risk=risk, thresholds=thresholds)


@host_array_api("y_proba", "confidence")
@_doc
@validate_params(SELECTIVE_CONSTRAINTS, prefer_skip_nested_validation=True)
def risk_coverage_curve(
    y_true,
    y_proba,
    *,
    confidence="max_proba",
    loss="error",
    sample_weight=None,
    labels=None,
):
    """Compute the selective risk at every coverage of a confidence threshold.

    Parameters
    ----------
    {params}

    Returns
    -------
    curve : RiskCoverageCurve
        ``coverage``, ``risk`` and ``thresholds``, one point per distinct
        confidence (it unpacks as a tuple of the three arrays).

    See Also
    --------
    aurc : The area under this curve.
    selective_risk_at_coverage : The risk at one coverage.
    skcalib.plotting.RiskCoverageDisplay : The plot.

    Notes
    -----
    For a threshold :math:`t`, with weights :math:`w_i`, losses
    :math:`\\ell_i` and confidences :math:`s_i`, the accepted samples are
    :math:`A_t = \\{i : s_i \\ge t\\}` and

    .. math::

        \\mathrm{coverage}(t) = \\frac{\\sum_{i \\in A_t} w_i}{\\sum_i w_i},
        \\qquad
        \\mathrm{risk}(t) = \\frac{\\sum_{i \\in A_t} w_i \\ell_i}
        {\\sum_{i \\in A_t} w_i}.

    **Ties**: samples of equal confidence enter together, so the curve has
    one point per distinct confidence and does not depend on the order of
    the rows (libraries that sort the samples one by one, such as MAPIE's
    ``auarc``, break ties by row order). Integer weights equal repeated
    rows. One sort and two cumulative sums (:math:`O(n \\log n)`).

    References
    ----------
    .. [1] R. El-Yaniv and Y. Wiener, "On the Foundations of Noise-free
       Selective Classification", JMLR 11, 2010.
    .. [2] Y. Geifman and R. El-Yaniv, "Selective Classification for Deep
       Neural Networks", NeurIPS 2017.

    Examples
    --------
    >>> from skcalib.metrics import risk_coverage_curve
    >>> y = [0, 1, 1, 0, 1]
    >>> p = [0.2, 0.9, 0.6, 0.6, 0.3]  # P(y = 1)
    >>> curve = risk_coverage_curve(y, p)
    >>> curve.thresholds  # max(p, 1 - p), the tie at 0.6 is one point
    array([0.9, 0.8, 0.7, 0.6])
    >>> curve.coverage
    array([0.2, 0.4, 0.6, 1. ])
    >>> curve.risk
    array([0.        , 0.        , 0.33333333, 0.4       ])
    """
    return _curve(
        selective_inputs(
            y_true,
            y_proba,
            confidence=confidence,
            loss=loss,
            sample_weight=sample_weight,
            labels=labels,
        )
    )


@host_array_api("y_proba", "confidence")
@_doc
@validate_params(SELECTIVE_CONSTRAINTS, prefer_skip_nested_validation=True)
def aurc(
    y_true,
    y_proba,
    *,
    confidence="max_proba",
    loss="error",
    sample_weight=None,
    labels=None,
):
    """Compute the area under the risk-coverage curve (AURC).

    Parameters
    ----------
    {params}

    Returns
    -------
    aurc : float
        Lower is better; in ``[0, 1]`` for ``loss="error"``.

    See Also
    --------
    risk_coverage_curve : The curve.
    excess_aurc : AURC minus that of the best ranking.

    Notes
    -----
    With :math:`L(c)` the weighted loss of the accepted samples per unit of
    total weight at coverage :math:`c` (``coverage * risk`` at the points of
    the curve), the risk at coverage :math:`c` is :math:`r(c) = L(c) / c` and

    .. math::

        \\mathrm{AURC} = \\int_0^1 r(c)\\, dc.

    Between two points of the curve :math:`L` is linear: the tied samples of
    a threshold enter in random order, and the expected loss of a random
    share of them is that share of their loss. Each piece then has a closed
    form, :math:`(L_1 - L_0) + (L_0 - c_0 s)\\log(c_1 / c_0)` with slope
    :math:`s = (L_1 - L_0) / (c_1 - c_0)`, so the area is exact, does not
    depend on the order of the rows, and integer weights equal repeated rows.
    The first piece (from coverage 0) has the constant risk of the most
    confident samples.

    Geifman et al. [1]_ and MAPIE's ``auarc`` use the right Riemann sum
    :math:`\\frac{1}{n} \\sum_{k=1}^n r(k / n)` of samples sorted one by one;
    with distinct confidences and no weights that is ``risk.mean()`` of
    :func:`risk_coverage_curve`, and MAPIE's ``auarc(correct, confidence)``
    equals ``1 - risk.mean()`` exactly. For losses in ``[0, 1]`` that sum
    differs from this integral by at most :math:`\\log(n) / n` (each piece
    of width :math:`1/n` by at most :math:`1/(nk)`), and it depends on how
    ties are ordered.

    References
    ----------
    .. [1] Y. Geifman, G. Uziel and R. El-Yaniv, "Bias-Reduced Uncertainty
       Estimation for Deep Neural Classifiers", ICLR 2019.

    Examples
    --------
    >>> from skcalib.metrics import aurc
    >>> y = [0, 1, 1, 0]
    >>> p = [0.1, 0.9, 0.4, 0.7]  # the two errors are the least confident
    >>> round(aurc(y, p), 6)  # 0.5 + 0.5 * log(0.5): the best ranking
    0.153426
    """
    inputs = selective_inputs(
        y_true,
        y_proba,
        confidence=confidence,
        loss=loss,
        sample_weight=sample_weight,
        labels=labels,
    )
    return curve_area(
        *curve_from_scores(inputs.confidence, inputs.loss, inputs.weight)[:2]
    )


@host_array_api("y_proba", "confidence")
@_doc
@validate_params(SELECTIVE_CONSTRAINTS, prefer_skip_nested_validation=True)
def augrc(
    y_true,
    y_proba,
    *,
    confidence="max_proba",
    loss="error",
    sample_weight=None,
    labels=None,
):
    """Compute the area under the generalised risk-coverage curve (AUGRC).

    Parameters
    ----------
    {params}

    Returns
    -------
    augrc : float
        Lower is better; in ``[0, 0.5]`` for ``loss="error"`` (Traub et al.
        report it multiplied by 1000).

    See Also
    --------
    aurc : The area under the (selective) risk-coverage curve.
    risk_coverage_curve : The curve; its ``coverage * risk`` is the
        generalised risk.

    Notes
    -----
    The generalised risk at coverage :math:`c` is the loss of the accepted
    samples per unit of *total* weight, :math:`L(c) = c\\, r(c)` (for the
    0/1 error: the probability that a sample is accepted *and* wrong),
    where the selective risk :math:`r(c)` of :func:`aurc` divides by the
    accepted weight only. Traub et al. [1]_ define

    .. math::

        \\mathrm{AUGRC} = \\int_0^1 L(c)\\, dc,

    which weighs every accepted failure by the share of samples ranked
    below it, instead of :func:`aurc`'s weight that grows without bound
    for the failures of highest confidence.

    **Ties**: as in :func:`aurc`, tied samples enter in random order, so
    :math:`L` is linear between the points of the curve (and from
    :math:`(0, 0)` to the first): the trapezoid rule on the curve's points
    is exact, the result does not depend on the order of the rows, and
    integer weights equal repeated rows. This is the linear interpolation
    of the authors' implementation (``fd-shifts``, ``RiskCoverageStats.augrc``,
    on the points of the distinct thresholds). For the 0/1 error with
    failure rate :math:`\\pi` it equals
    :math:`\\pi^2 / 2 + \\pi (1 - \\pi)(1 - \\mathrm{AUROC})`, with the
    AUROC of :func:`correctness_auroc` (ties counting one half); the best
    ranking gives :math:`\\pi^2 / 2`.

    References
    ----------
    .. [1] J. Traub, T. J. Bungert, C. T. Lüth, M. Baumgartner, K. H.
       Maier-Hein, L. Maier-Hein and P. F. Jäger, "Overcoming Common Flaws in
       the Evaluation of Selective Classification Systems", NeurIPS 2024.

    Examples
    --------
    >>> from skcalib.metrics import augrc
    >>> y = [0, 1, 1, 0]
    >>> augrc(y, [0.1, 0.9, 0.4, 0.7])  # the two errors least confident
    0.125
    >>> augrc(y, [0.1, 0.6, 0.4, 0.9])  # an error most confident
    0.25
    """
    inputs = selective_inputs(
        y_true,
        y_proba,
        confidence=confidence,
        loss=loss,
        sample_weight=sample_weight,
        labels=labels,
    )
    return generalized_curve_area(
        *curve_from_scores(inputs.confidence, inputs.loss, inputs.weight)[:2]
    )


@host_array_api("y_proba", "confidence")
@_doc
@validate_params(SELECTIVE_CONSTRAINTS, prefer_skip_nested_validation=True)
def excess_aurc(
    y_true,
    y_proba,
    *,
    confidence="max_proba",
    loss="error",
    sample_weight=None,
    labels=None,
):
    """Compute the excess AURC: the AURC minus that of the best ranking (E-AURC).

    Parameters
    ----------
    {params}

    Returns
    -------
    e_aurc : float
        At least 0 (up to rounding); 0 when the confidence ranks the samples
        by increasing loss (ties only among equal losses).

    See Also
    --------
    aurc : The area itself.

    Notes
    -----
    The best ranking accepts the samples by increasing loss (confidence
    :math:`-\\ell_i`); its area :math:`\\mathrm{AURC}^*` is computed like
    :func:`aurc`'s. With the 0/1 error and overall risk :math:`\\hat r` it is
    :math:`\\hat r + (1 - \\hat r) \\log(1 - \\hat r)`, the closed form of
    Geifman et al. [1]_; ``E-AURC = AURC - AURC*`` removes the part of the
    AURC that only reflects the accuracy of the classifier, and is never
    negative: the cumulative loss of any ranking lies above the convex one
    of the best ranking.

    References
    ----------
    .. [1] Y. Geifman, G. Uziel and R. El-Yaniv, "Bias-Reduced Uncertainty
       Estimation for Deep Neural Classifiers", ICLR 2019.

    Examples
    --------
    >>> from skcalib.metrics import excess_aurc
    >>> y = [0, 1, 1, 0]
    >>> excess_aurc(y, [0.1, 0.9, 0.4, 0.7])  # errors least confident
    0.0
    >>> round(excess_aurc(y, [0.1, 0.6, 0.4, 0.9]), 6)  # an error most confident
    0.346574
    """
    inputs = selective_inputs(
        y_true,
        y_proba,
        confidence=confidence,
        loss=loss,
        sample_weight=sample_weight,
        labels=labels,
    )
    model = curve_from_scores(inputs.confidence, inputs.loss, inputs.weight)
    best = oracle_curve(inputs.loss, inputs.weight)
    return curve_area(*model[:2]) - curve_area(*best[:2])


@host_array_api("y_proba", "confidence")
@_doc
@validate_params(
    {**SELECTIVE_CONSTRAINTS, "coverage": [Interval(Real, 0, 1, closed="right")]},
    prefer_skip_nested_validation=True,
)
def selective_risk_at_coverage(
    y_true,
    y_proba,
    *,
    coverage=0.9,
    confidence="max_proba",
    loss="error",
    sample_weight=None,
    labels=None,
):
    """Compute the selective risk of the most confident samples at a coverage.

    Parameters
    ----------
    {params}
    coverage : float in (0, 1], default=0.9
        The fraction of the (weighted) samples that are accepted.

    Returns
    -------
    risk : float
        The mean loss of the accepted samples.

    See Also
    --------
    risk_coverage_curve : The risk at every threshold.
    aurc : Its integral over the coverage.

    Notes
    -----
    At a coverage of the curve this is the curve's risk. Between two points
    the samples of the lower threshold are tied: the function returns the
    expected risk when a random share of them is accepted to reach
    ``coverage`` (the linear interpolation of the cumulative loss that
    :func:`aurc` integrates, so ``aurc`` is the integral of this function).

    Examples
    --------
    >>> from skcalib.metrics import selective_risk_at_coverage
    >>> y = [0, 1, 1, 0]
    >>> p = [0.1, 0.9, 0.4, 0.7]
    >>> selective_risk_at_coverage(y, p, coverage=0.5)
    0.0
    >>> selective_risk_at_coverage(y, p, coverage=1.0)
    0.5
    """
    inputs = selective_inputs(
        y_true,
        y_proba,
        confidence=confidence,
        loss=loss,
        sample_weight=sample_weight,
        labels=labels,
    )
    cov, risk, _ = curve_from_scores(inputs.confidence, inputs.loss, inputs.weight)
    return risk_at(cov, risk, coverage)


@host_array_api("y_proba", "confidence")
@validate_params(
    {**COMMON_CONSTRAINTS, "confidence": SELECTIVE_CONSTRAINTS["confidence"]},
    prefer_skip_nested_validation=True,
)
def correctness_auroc(
    y_true, y_proba, *, confidence="max_proba", sample_weight=None, labels=None
):
    """Compute the AUROC of the confidence as a detector of correct predictions.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class in the
        order of ``labels``.
    confidence : {"max_proba", "margin", "negative_entropy"} or array-like \
of shape (n_samples,), default="max_proba"
        The score of each sample, higher meaning more confident (see
        :func:`risk_coverage_curve`).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba`` (see
        :func:`risk_coverage_curve`).

    Returns
    -------
    auroc : float
        The probability that a correct prediction has a higher confidence
        than a wrong one (ties count one half); 0.5 for an uninformative
        confidence, 1 for a perfect one.

    See Also
    --------
    sklearn.metrics.roc_auc_score : Computes it, with correctness as target.
    aurc : The area under the risk-coverage curve.

    Notes
    -----
    ``roc_auc_score(correct, confidence, sample_weight=sample_weight)`` with
    ``correct`` the 0/1 correctness of the arg-max prediction (as MAPIE's
    ``auroc``). It needs both correct and wrong predictions.

    References
    ----------
    .. [1] D. Hendrycks and K. Gimpel, "A Baseline for Detecting
       Misclassified and Out-of-Distribution Examples in Neural Networks",
       ICLR 2017.

    Examples
    --------
    >>> from skcalib.metrics import correctness_auroc
    >>> y = [0, 1, 1, 0]
    >>> correctness_auroc(y, [0.1, 0.9, 0.4, 0.7])
    1.0
    """
    inputs = selective_inputs(
        y_true,
        y_proba,
        confidence=confidence,
        loss="error",
        sample_weight=sample_weight,
        labels=labels,
    )
    correct = inputs.loss == 0
    n_correct = int(correct.sum())
    if n_correct in (0, correct.size):
        what = "correct" if n_correct else "wrong"
        raise ValueError(
            f"correctness_auroc needs both correct and wrong predictions; all "
            f"{correct.size} (positive-weight) predictions are {what}."
        )
    return float(roc_auc_score(correct, inputs.confidence, sample_weight=inputs.weight))
