"""Bayes-optimal decisions from probabilities and a cost matrix."""

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.validation import column_or_1d

from skcalib._core.compat import validate_params
from skcalib._core.inputs import (
    _check_y,
    check_finite_proba,
    check_proba_values,
    check_sample_weight,
)
from skcalib._core.labels import encode, present_labels
from skcalib._core.xp import host_array_api
from skcalib.decision._costs import (
    action_labels,
    check_abstain_label,
    check_cost_matrix,
    check_labels,
    encode_actions,
)

__all__ = ["bayes_decisions", "expected_cost"]


def _two_d_proba(y_proba):
    """Validated probabilities of shape (n, K): a 1-D (or one-column) binary
    ``y_proba`` (probability of the positive class) becomes ``(1 - p, p)``."""
    if hasattr(y_proba, "shape") and len(y_proba.shape) > 2:
        raise ValueError(
            "y_proba must be 1-D (binary) or of shape (n_samples, n_classes), got "
            f"shape {tuple(y_proba.shape)}; average a stack of member predictions "
            "first (skcalib.metrics.ensemble_proba)."
        )
    proba = check_array(
        y_proba,
        ensure_2d=False,
        dtype=[np.float64, np.float32],
        ensure_all_finite=False,
        input_name="y_proba",
    )
    if proba.ndim == 2 and proba.shape[1] == 1:
        proba = proba[:, 0]
    if proba.ndim not in (1, 2):
        raise ValueError(
            f"y_proba must be 1-D (binary) or of shape (n_samples, n_classes), "
            f"got shape {proba.shape}."
        )
    check_finite_proba(proba)
    check_proba_values(proba)
    if proba.ndim == 1:
        proba = np.column_stack([1 - proba, proba])
    return proba


@host_array_api("y_proba")
@validate_params(
    {
        "y_proba": ["array-like"],
        "cost_matrix": ["array-like"],
        "labels": ["array-like", None],
        "abstain_label": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def bayes_decisions(y_proba, cost_matrix, *, labels=None, abstain_label=-1):
    """Return the Bayes-optimal action of each sample under a cost matrix.

    The action of a sample with class probabilities ``p`` is the one of
    least expected cost,

    .. math::

        \\hat a(p) = \\operatorname*{arg\\,min}_a \\sum_k p_k \\, C_{k a},

    computed for all samples at once as one product ``y_proba @ cost_matrix``
    of shape ``(n_samples, n_actions)``. The decisions are optimal when the
    probabilities are calibrated, which is what a calibrator is for.

    Parameters
    ----------
    y_proba : array-like of shape (n_samples, n_classes) or (n_samples,)
        Class probabilities (rows sum to 1); 1-D for two classes: the
        probability of the second class.
    cost_matrix : array-like of shape (n_classes, n_classes) or \
(n_classes, n_classes + 1)
        ``cost_matrix[k, a]`` is the cost of action ``a`` on a sample whose
        true class is ``k``: rows are true classes, as in
        :func:`sklearn.metrics.confusion_matrix`; column ``a < n_classes``
        predicts class ``a``. An extra last column is the cost of
        abstaining (Chow's reject option). Costs are any finite numbers
        (negative costs are gains).
    labels : array-like of shape (n_classes,), default=None
        The label of each column of ``y_proba`` (for a classifier:
        ``classes_``); the decisions are these labels. ``None``: the
        decisions are column indices ``0 .. n_classes - 1``.
    abstain_label : object, default=-1
        The decision of a sample on which abstaining costs least (only with a
        ``(n_classes, n_classes + 1)`` cost matrix); it must not be one of
        ``labels``. Of another kind than ``labels`` (e.g. ``-1`` among
        string labels), the decisions are of object dtype.

    Returns
    -------
    decisions : ndarray of shape (n_samples,)
        The action of least expected cost: a label (or column index), or
        ``abstain_label``. Ties go to the lowest column: a class rather
        than abstaining, and the first class (in column order) among classes.

    See Also
    --------
    expected_cost : the mean cost of decisions on labelled data.
    skcalib.BayesDecisionClassifier : the same decisions from a classifier
        or a calibrator, as an estimator.

    Notes
    -----
    For two classes, predicting class 1 costs less than predicting class 0
    exactly when

    .. math::

        p_1 > p^* = \\frac{C_{01} - C_{00}}{(C_{01} - C_{00}) + (C_{10} - C_{11})}

    (Elkan 2001), so the decision is a threshold on ``p_1``; at ``p_1 = p^*``
    the tie goes to class 0 (scikit-learn's
    :class:`~sklearn.model_selection.FixedThresholdClassifier` predicts the
    positive class when the score is ``>= threshold``). With 0-1 costs and
    an abstain cost ``c`` the rule is Chow's: predict the most probable class
    when its probability is at least ``1 - c``, else abstain.

    References
    ----------
    .. [1] C. Elkan, "The foundations of cost-sensitive learning", IJCAI 2001.
    .. [2] C. K. Chow, "On optimum recognition error and reject tradeoff",
       IEEE Transactions on Information Theory 16(1), 1970.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.decision import bayes_decisions
    >>> proba = np.array([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.1, 0.3, 0.6]])
    >>> zero_one = 1 - np.eye(3)
    >>> bayes_decisions(proba, zero_one, labels=["a", "b", "c"]).tolist()
    ['a', 'a', 'c']
    >>> with_abstain = np.column_stack([zero_one, np.full(3, 0.5)])
    >>> bayes_decisions(proba, with_abstain, labels=["a", "b", "c"]).tolist()
    ['a', -1, 'c']
    """
    proba = _two_d_proba(y_proba)
    n_classes = proba.shape[1]
    cost, abstain = check_cost_matrix(cost_matrix, n_classes)
    classes = (
        np.arange(n_classes) if labels is None else check_labels(labels, n_classes)
    )
    if abstain:
        check_abstain_label(abstain_label, classes)
    risk = proba @ cost.astype(proba.dtype, copy=False)
    return action_labels(classes, abstain, abstain_label)[np.argmin(risk, axis=1)]


def _cost_classes(y, n_classes, labels):
    if labels is not None:
        return check_labels(labels, n_classes)
    present = present_labels(y)
    if present.size != n_classes:
        raise ValueError(
            f"cost_matrix has {n_classes} rows (true classes) but y_true has "
            f"{present.size} distinct label(s) {present[:10].tolist()}, so y_true "
            "does not say which row is which class; pass labels= (every class "
            "label, in the order of the rows; for a classifier: "
            "labels=clf.classes_)."
        )
    return present


@host_array_api("decisions", "y_true")
@validate_params(
    {
        "y_true": ["array-like"],
        "decisions": ["array-like"],
        "cost_matrix": ["array-like"],
        "sample_weight": ["array-like", None],
        "labels": ["array-like", None],
        "abstain_label": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def expected_cost(
    y_true, decisions, cost_matrix, *, sample_weight=None, labels=None, abstain_label=-1
):
    """Compute the mean cost of decisions on labelled samples.

    .. math::

        \\frac{\\sum_i w_i \\, C_{y_i, a_i}}{\\sum_i w_i},

    with ``y_i`` the true class and ``a_i`` the action of sample ``i``. A
    loss: lower is better; for a scorer use
    ``make_scorer(expected_cost, greater_is_better=False, cost_matrix=C,
    labels=classes)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    decisions : array-like of shape (n_samples,)
        Class labels (as in ``y_true``) or ``abstain_label``, e.g. the output
        of :func:`bayes_decisions` or of a classifier's ``predict``.
    cost_matrix : array-like of shape (n_classes, n_classes) or \
(n_classes, n_classes + 1)
        Rows: true classes; columns: actions (the classes, then abstain), as
        in :func:`bayes_decisions`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    labels : array-like of shape (n_classes,), default=None
        The class of each row (and first columns) of ``cost_matrix``.
        ``None``: the sorted labels of ``y_true``, which must then be
        ``n_classes`` (the rows are never guessed).
    abstain_label : object, default=-1
        The decision that means "abstain" (the last column of a
        ``(n_classes, n_classes + 1)`` cost matrix).

    Returns
    -------
    cost : float
        The weighted mean cost.

    See Also
    --------
    bayes_decisions : the decisions of least expected cost.

    Examples
    --------
    >>> from skcalib.decision import expected_cost
    >>> cost = [[0.0, 1.0, 0.2], [5.0, 0.0, 0.2]]
    >>> expected_cost([0, 1, 1, 0], [0, 1, -1, 1], cost)
    0.3
    """
    y = _check_y(y_true)
    decided = column_or_1d(np.asarray(decisions, dtype=None), warn=True)
    if decided.shape[0] != y.shape[0]:
        raise ValueError(
            f"y_true has {y.shape[0]} samples but decisions has {decided.shape[0]}."
        )
    cost, abstain = check_cost_matrix(cost_matrix, None)
    classes = _cost_classes(y, cost.shape[0], labels)
    if abstain:
        check_abstain_label(abstain_label, classes)
    rows = encode(y, classes)
    cols = encode_actions(decided, classes, abstain, abstain_label)
    weight, _ = check_sample_weight(sample_weight, y.shape[0])
    return float(np.average(cost[rows, cols], weights=weight))
