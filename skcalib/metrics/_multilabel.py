"""Calibration metrics of multi-label classifiers: per-label binary errors,
averaged over the labels.

A multi-label target is a label-indicator matrix ``y_true`` of shape
``(n_samples, n_labels)`` with entries 0/1 (checked by
:func:`skcalib._core.multilabel.check_label_indicator`, the one check of
such targets), and its probabilities a matrix ``y_proba`` of the same shape:
``y_proba[i, j]`` is the predicted probability that sample ``i`` has label
``j``. The rows of ``y_proba`` need not sum to 1 (each label is its own
binary problem).

Each label ``j`` is the binary problem ``(y_true[:, j], y_proba[:, j])``.
Its calibration error is that of the reliability diagram of the positive
class: the probability of the label against whether the sample has it,
computed by the binning pass and reduction of the classwise ECE of
:func:`~skcalib.metrics.expected_calibration_error` for that one class (the
same per-cell totals, :func:`skcalib._core.totals.reduce_totals`); its Brier
score and log-loss are :func:`~skcalib.metrics.brier_score` and
:func:`~skcalib.metrics.negative_log_likelihood` of the column. The labels
are combined by ``average``:

* ``"macro"``: the mean over labels;
* ``"weighted"``: the mean weighted by each label's prevalence
  :math:`\\sum_i w_i y_{ij}` (a label no sample has gets weight 0; if no
  label is present anywhere, a ``ValueError``);
* ``"micro"``: the binary metric of all ``n_samples * n_labels`` entries
  pooled (raveled), each with the weight of its row;
* ``None``: the array of the per-label values.

**Relation to the classwise ECE.** When ``y_true`` is the one-hot encoding
of a multiclass target and ``y_proba`` the multiclass probabilities (one
column per class, the one-vs-rest problems), the macro multi-label ECE is
exactly :func:`~skcalib.metrics.classwise_calibration_error` (the mean over
classes of the one-vs-rest ECEs, the classwise ECE of Kull et al. 2019 and
Nixon et al. 2019); ``average=None`` gives its per-class terms, and
``"micro"`` pools the one-vs-rest columns into one reliability diagram.
For Brier and log-loss, ``"micro"`` equals ``"macro"`` (every label has the
same rows and weights, so the pooled mean is the mean of the labels' means).

The functions take numpy arrays (or what converts to them): the Dask and
array-API paths of the binary metrics are not offered here.
"""

import numpy as np
from sklearn.utils import check_array

from skcalib._core.compat import StrOptions, validate_params
from skcalib._core.inputs import (
    BINNING_CONSTRAINTS,
    NORMS,
    check_finite_proba,
    check_proba_values,
    check_sample_weight,
    reject_dask,
)
from skcalib._core.multilabel import check_label_indicator
from skcalib._core.totals import check_norm, reduce_totals
from skcalib.metrics._curve import reliability_curve
from skcalib.metrics._dispatch import binned_totals
from skcalib.metrics._proper import brier_score, negative_log_likelihood

__all__ = [
    "multilabel_brier_score",
    "multilabel_calibration_error",
    "multilabel_log_loss",
    "multilabel_reliability_curve",
]

#: How the per-label values are combined (None: not combined).
MULTILABEL_AVERAGES = ("macro", "micro", "weighted")
#: The labels of each binary column: 0 (absent) and 1 (present, the
#: positive class whose probability ``y_proba[:, j]`` is).
_BINARY = np.array([0, 1])

_COMMON = {
    "y_true": ["array-like", "sparse matrix"],
    "y_proba": ["array-like"],
    "sample_weight": ["array-like", None],
}
_AVERAGE = {"average": [StrOptions(set(MULTILABEL_AVERAGES)), None]}

LIST_PROBA_MESSAGE = (
    "y_proba is a list of {n} per-label arrays (the predict_proba of "
    "MultiOutputClassifier, RandomForestClassifier, ...); a metric cannot "
    "tell which column of each is class 1. Pass the (n_samples, n_labels) "
    "matrix of the probabilities of the labels: column j is "
    "proba[j][:, list(clf.classes_[j]).index(1)]."
)


def check_multilabel_inputs(y_true, y_proba, sample_weight):
    """``(y, proba, weight)``: the ``(n, L)`` int8 indicator matrix, the
    ``(n, L)`` probabilities (float64 or float32, finite, in [0, 1]) and
    the checked weights (float64, or None), or a ValueError
    naming the offending value."""
    reject_dask(y_true=y_true, y_proba=y_proba, sample_weight=sample_weight)
    if isinstance(y_proba, (list, tuple)) and any(np.ndim(p) == 2 for p in y_proba):
        raise ValueError(LIST_PROBA_MESSAGE.format(n=len(y_proba)))
    y = check_label_indicator(y_true, name="y_true")
    proba = check_array(
        y_proba,
        ensure_2d=False,
        dtype=[np.float64, np.float32],
        ensure_all_finite=False,
        input_name="y_proba",
    )
    if proba.shape != y.shape:
        raise ValueError(
            f"y_proba must have the shape of y_true {y.shape} (one column per "
            f"label), got shape {proba.shape}."
        )
    check_finite_proba(proba)
    if proba.min() < 0 or proba.max() > 1:
        j = int(np.flatnonzero(((proba < 0) | (proba > 1)).any(axis=0))[0])
        check_proba_values(proba[:, j], name=f"y_proba[:, {j}] (label {j})")
    check_sample_weight(sample_weight, y.shape[0])
    # The user's weights go to the binary metrics (which scale them again):
    # the curves' counts stay weight totals.
    weight = None if sample_weight is None else np.asarray(sample_weight, float)
    return y, proba, weight


def _label_weights(y, weight):
    """Each label's prevalence ``sum_i w_i y_ij``, the weights of
    ``average="weighted"``; a ValueError when every one is 0."""
    prevalence = y.sum(axis=0, dtype=np.float64) if weight is None else weight @ y
    if not prevalence.sum() > 0:
        raise ValueError(
            "average='weighted' weights each label by its prevalence (the "
            "weighted count of samples that have it), but no label has a "
            "sample of positive weight with y_true == 1; use average='macro'."
        )
    return prevalence


def _multilabel(binary, y_true, y_proba, sample_weight, average):
    """``binary(y, p, w)`` of each label (columns), combined by ``average``;
    for ``"micro"``, of all entries pooled."""
    y, proba, w = check_multilabel_inputs(y_true, y_proba, sample_weight)
    if average == "micro":
        pooled_w = None if w is None else np.repeat(w, y.shape[1])
        return float(binary(y.ravel(), proba.ravel(), pooled_w))
    columns = np.ascontiguousarray(proba.T)
    values = np.array([binary(y[:, j], columns[j], w) for j in range(y.shape[1])])
    if average is None:
        return values
    if average == "weighted":
        return float(np.average(values, weights=_label_weights(y, w)))
    return float(values.mean())


def _positive_class_ece(y, p, w, *, n_bins, strategy, norm, debias):
    """The ECE of the positive class of one binary column: the classwise
    cells of class 1 (the binning pass of every ECE), reduced as every ECE."""
    bt = binned_totals(
        y,
        p,
        n_bins=n_bins,
        strategy=strategy,
        kind="classwise",
        sample_weight=w,
        labels=_BINARY,
        class_index=1,
    )
    return float(reduce_totals(bt.totals, "classwise", norm, debias))


@validate_params(
    {
        **_COMMON,
        **_AVERAGE,
        **BINNING_CONSTRAINTS,
        "norm": [StrOptions(set(NORMS))],
        "debias": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def multilabel_calibration_error(
    y_true,
    y_proba,
    *,
    average="macro",
    n_bins=15,
    strategy="uniform",
    norm="l1",
    debias=False,
    sample_weight=None,
):
    """Calibration error of a multi-label classifier: per-label binary ECEs,
    averaged.

    Label ``j``'s error is the binned calibration error of
    ``y_proba[:, j]`` against ``y_true[:, j]`` (the reliability diagram of
    the label's presence), with the bins, norms and per-cell totals of
    :func:`expected_calibration_error`.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Label-indicator matrix: ``y_true[i, j] = 1`` when sample ``i`` has
        label ``j``, else 0.
    y_proba : array-like of shape (n_samples, n_labels)
        Predicted probability of each label (rows need not sum to 1). A
        list of per-label ``predict_proba`` arrays is refused: pass the
        matrix of the class-1 columns (see Notes).
    average : {"macro", "micro", "weighted"} or None, default="macro"
        ``"macro"``: mean over labels. ``"weighted"``: mean weighted by the
        labels' prevalences :math:`\\sum_i w_i y_{ij}` (a label no sample
        has gets weight 0; all zero is an error). ``"micro"``: the error of
        all entries pooled into one reliability diagram. None: the per-label
        errors.
    n_bins : int, default=15
        Number of bins (per label; of the pooled entries for ``"micro"``).
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Equal-width bins, equal-mass bins from each label's (weighted)
        quantiles, or one bin per distinct probability; see
        :func:`expected_calibration_error`.
    norm : {"l1", "l2", "max"}, default="l1"
        Weighted mean absolute gap, root of the weighted mean squared gap,
        or largest gap (MCE) of each label's bins.
    debias : bool, default=False
        Debiased L2 error of each label (``norm="l2"`` only); see
        :func:`expected_calibration_error`.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (one per row, shared by the row's labels).

    Returns
    -------
    error : float or ndarray of shape (n_labels,)
        The averaged error, or the per-label errors for ``average=None``;
        in ``[0, 1]``.

    Raises
    ------
    ValueError
        If ``y_true`` is not a 2-D 0/1 matrix, ``y_proba`` is not of its
        shape, holds NaN, infinite or out-of-``[0, 1]`` values or is a list
        of per-label arrays, ``sample_weight`` is negative, NaN or all zero,
        or no label is present under ``average="weighted"``.

    See Also
    --------
    classwise_calibration_error : The same error of one-vs-rest columns of
        a multiclass problem.
    multilabel_reliability_curve : The per-label bins.
    multilabel_brier_score, multilabel_log_loss : Per-label proper scores.

    Notes
    -----
    With :math:`e_j` the error of label :math:`j` (the ECE of
    :func:`expected_calibration_error` with confidences :math:`p_{ij}` and
    outcomes :math:`y_{ij}`), :math:`L` labels and prevalences :math:`\\pi_j =
    \\sum_i w_i y_{ij}`:

    .. math::

        \\mathrm{macro} = \\frac{1}{L} \\sum_j e_j, \\qquad
        \\mathrm{weighted} = \\frac{\\sum_j \\pi_j e_j}{\\sum_j \\pi_j},

    and ``"micro"`` is the ECE of the :math:`n L` pairs :math:`(p_{ij},
    y_{ij})`, pair :math:`(i, j)` with weight :math:`w_i`.

    When ``y_true`` is the one-hot encoding of a multiclass target and
    ``y_proba`` its probabilities, the one-vs-rest columns make the macro
    error the classwise ECE of Kull et al. [1]_ and Nixon et al. [2]_ (the
    mean over classes, :func:`classwise_calibration_error`; tested to
    1e-12). The micro error pools those columns into one diagram.

    A multi-label classifier whose ``predict_proba`` returns one ``(n,
    c_j)`` array per label (``MultiOutputClassifier``,
    ``RandomForestClassifier``) gives the matrix by the class-1 column of
    each label, found by ``clf.classes_[j]``, not by position (a label
    trained on one class has one column); the scorers and
    :class:`~skcalib.plotting.MultilabelReliabilityGridDisplay` do this.

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song
       and P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.
    .. [2] J. Nixon, M. Dusenberry, L. Zhang, G. Jerfel and D. Tran,
       "Measuring Calibration in Deep Learning", CVPR Workshops 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import multilabel_calibration_error
    >>> y = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    >>> p = np.array([[0.8, 0.3], [0.4, 0.6], [0.9, 0.7], [0.2, 0.1]])
    >>> err = multilabel_calibration_error(y, p, n_bins=2, average=None)
    >>> err.round(6)  # label 0: (0.2 + 0.15) / 2; label 1: (0.2 + 0.35) / 2
    array([0.175, 0.275])
    >>> round(multilabel_calibration_error(y, p, n_bins=2), 6)
    0.225
    >>> # prevalences 3 and 2: (3 * 0.175 + 2 * 0.275) / 5
    >>> round(multilabel_calibration_error(y, p, n_bins=2, average="weighted"), 6)
    0.215
    >>> round(multilabel_calibration_error(y, p, n_bins=2, average="micro"), 6)
    0.125
    """
    check_norm(norm, debias)

    def binary(y, p, w):
        return _positive_class_ece(
            y, p, w, n_bins=n_bins, strategy=strategy, norm=norm, debias=debias
        )

    return _multilabel(binary, y_true, y_proba, sample_weight, average)


@validate_params({**_COMMON, **_AVERAGE}, prefer_skip_nested_validation=True)
def multilabel_brier_score(y_true, y_proba, *, average="macro", sample_weight=None):
    """Brier score of a multi-label classifier: per-label binary Brier
    scores, averaged.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Label-indicator matrix (entries 0/1).
    y_proba : array-like of shape (n_samples, n_labels)
        Predicted probability of each label.
    average : {"macro", "micro", "weighted"} or None, default="macro"
        How the labels are combined; see
        :func:`multilabel_calibration_error`. ``"micro"`` equals
        ``"macro"`` for this score.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    score : float or ndarray of shape (n_labels,)
        In ``[0, 1]``; lower is better.

    Raises
    ------
    ValueError
        For the inputs refused by :func:`multilabel_calibration_error`.

    See Also
    --------
    brier_score : The binary score of each label.
    sklearn.metrics.brier_score_loss : The same value per label.
    multilabel_log_loss : The other proper score.

    Notes
    -----
    Label :math:`j` scores :math:`\\mathrm{BS}_j = \\sum_i w_i (p_{ij} -
    y_{ij})^2 / \\sum_i w_i`, :func:`brier_score` of the column (the binary
    Brier score of scikit-learn's ``brier_score_loss``, in float64). The
    macro mean :math:`\\frac{1}{L} \\sum_j \\mathrm{BS}_j` is the mean
    squared error of the whole matrix, the "Brier score" of multi-label
    classification; it differs from the multiclass Brier score, which sums
    over classes.

    References
    ----------
    .. [1] G. W. Brier, "Verification of forecasts expressed in terms of
       probability", Monthly Weather Review 78, 1950.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import multilabel_brier_score
    >>> y = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    >>> p = np.array([[0.8, 0.3], [0.4, 0.6], [0.9, 0.7], [0.2, 0.1]])
    >>> multilabel_brier_score(y, p, average=None).round(6)
    array([0.2125, 0.0875])
    >>> round(multilabel_brier_score(y, p), 6)
    0.15
    """

    def binary(y, p, w):
        return brier_score(y, p, sample_weight=w, labels=_BINARY)

    return _multilabel(binary, y_true, y_proba, sample_weight, average)


@validate_params({**_COMMON, **_AVERAGE}, prefer_skip_nested_validation=True)
def multilabel_log_loss(y_true, y_proba, *, average="macro", sample_weight=None):
    """Log-loss of a multi-label classifier: per-label binary negative
    log-likelihoods, averaged.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Label-indicator matrix (entries 0/1).
    y_proba : array-like of shape (n_samples, n_labels)
        Predicted probability of each label.
    average : {"macro", "micro", "weighted"} or None, default="macro"
        How the labels are combined; see
        :func:`multilabel_calibration_error`. ``"micro"`` equals
        ``"macro"`` for this score.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    loss : float or ndarray of shape (n_labels,)
        Non-negative; lower is better.

    Raises
    ------
    ValueError
        For the inputs refused by :func:`multilabel_calibration_error`.

    See Also
    --------
    negative_log_likelihood : The binary loss of each label.
    sklearn.metrics.log_loss : The same value per label.
    multilabel_brier_score : The other proper score.

    Notes
    -----
    Label :math:`j` scores :math:`-\\sum_i w_i \\log q_{ij} / \\sum_i
    w_i` with :math:`q_{ij} = p_{ij}` if :math:`y_{ij} = 1`, else
    :math:`1 - p_{ij}`: :func:`negative_log_likelihood` of the column, with
    its floor (a probability of 0 for the outcome seen costs
    :math:`-\\log \\epsilon_{64}` = 36.04, as scikit-learn's ``log_loss``
    for float64 input). The macro mean is the binary cross-entropy of the
    matrix averaged over its entries, the usual multi-label training loss.

    References
    ----------
    .. [1] I. J. Good, "Rational Decisions", Journal of the Royal
       Statistical Society B 14, 1952.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import multilabel_log_loss
    >>> y = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    >>> p = np.array([[0.8, 0.3], [0.4, 0.6], [0.9, 0.7], [0.2, 0.1]])
    >>> multilabel_log_loss(y, p, average=None).round(4)
    array([0.6122, 0.3324])
    >>> round(multilabel_log_loss(y, p, average="weighted"), 4)  # prevalences 3, 2
    0.5003
    """

    def binary(y, p, w):
        return negative_log_likelihood(y, p, sample_weight=w, labels=_BINARY)

    return _multilabel(binary, y_true, y_proba, sample_weight, average)


@validate_params({**_COMMON, **BINNING_CONSTRAINTS}, prefer_skip_nested_validation=True)
def multilabel_reliability_curve(
    y_true, y_proba, *, n_bins=15, strategy="uniform", sample_weight=None
):
    """Reliability curve of each label of a multi-label classifier.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Label-indicator matrix (entries 0/1).
    y_proba : array-like of shape (n_samples, n_labels)
        Predicted probability of each label.
    n_bins : int, default=15
        Number of bins of each label.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Binning of each label; see :func:`reliability_curve`.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    curves : list of ReliabilityCurve
        One per label, in the order of the columns: the curve of
        ``reliability_curve(y_true[:, j], y_proba[:, j], kind="classwise",
        labels=[0, 1])`` (the probability of the label against its
        presence, ``class_index`` 1). Its weighted mean gap is label
        ``j``'s :func:`multilabel_calibration_error`.

    Raises
    ------
    ValueError
        For the inputs refused by :func:`multilabel_calibration_error`.

    See Also
    --------
    reliability_curve : One curve.
    multilabel_calibration_error : The error of each curve, averaged.
    skcalib.plotting.MultilabelReliabilityGridDisplay : Draws the curves.

    Notes
    -----
    Bins are right-closed, :math:`(e_j, e_{j+1}]`, the first one
    :math:`[0, e_1]`, as in :func:`reliability_curve`; every bin is
    reported, empty ones included.

    References
    ----------
    .. [1] J. Nixon, M. Dusenberry, L. Zhang, G. Jerfel and D. Tran,
       "Measuring Calibration in Deep Learning", CVPR Workshops 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import multilabel_reliability_curve
    >>> y = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    >>> p = np.array([[0.8, 0.3], [0.4, 0.6], [0.9, 0.7], [0.2, 0.1]])
    >>> curves = multilabel_reliability_curve(y, p, n_bins=2)
    >>> curves[0].accuracy, curves[0].mean_confidence.round(6)
    (array([0.5, 1. ]), array([0.3 , 0.85]))
    """
    y, proba, w = check_multilabel_inputs(y_true, y_proba, sample_weight)
    columns = np.ascontiguousarray(proba.T)
    return [
        reliability_curve(
            y[:, j],
            columns[j],
            n_bins=n_bins,
            strategy=strategy,
            kind="classwise",
            labels=_BINARY,
            sample_weight=w,
        )
        for j in range(y.shape[1])
    ]
