"""Ready-made scorers for model selection, and a ``get_scorer`` that knows them.

The scorers are plain :func:`sklearn.metrics.make_scorer` objects with
``response_method="predict_proba"``; losses are negated
(``greater_is_better=False``) and named ``neg_*``. scikit-learn's private
scorer registry is never touched: :func:`get_scorer` looks in our table first
and falls back to :func:`sklearn.metrics.get_scorer`.
"""

import copy

from sklearn.metrics import get_scorer as _sklearn_get_scorer
from sklearn.metrics import get_scorer_names as _sklearn_get_scorer_names
from sklearn.metrics import make_scorer
from sklearn.utils._param_validation import validate_params

from skcalib.metrics._calibration_error import (
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from skcalib.metrics._proper import brier_score, negative_log_likelihood

__all__ = [
    "brier_scorer",
    "classwise_ece_scorer",
    "ece_scorer",
    "get_scorer",
    "get_scorer_names",
    "mce_scorer",
    "nll_scorer",
]


def _loss_scorer(func):
    return make_scorer(func, greater_is_better=False, response_method="predict_proba")


#: ``-expected_calibration_error`` (confidence ECE, 15 uniform bins).
ece_scorer = _loss_scorer(expected_calibration_error)
#: ``-maximum_calibration_error``.
mce_scorer = _loss_scorer(maximum_calibration_error)
#: ``-classwise_calibration_error`` (mean over classes).
classwise_ece_scorer = _loss_scorer(classwise_calibration_error)
#: ``-brier_score`` (binary: in [0, 1]; multiclass: in [0, 2]).
brier_scorer = _loss_scorer(brier_score)
#: ``-negative_log_likelihood``.
nll_scorer = _loss_scorer(negative_log_likelihood)

_SCORERS = {
    "neg_expected_calibration_error": ece_scorer,
    "neg_maximum_calibration_error": mce_scorer,
    "neg_classwise_calibration_error": classwise_ece_scorer,
    "neg_brier_score": brier_scorer,
    "neg_log_loss": nll_scorer,
}


@validate_params({"scoring": [str, callable, None]}, prefer_skip_nested_validation=True)
def get_scorer(scoring):
    """A scorer by name: skcalib's calibration scorers, else scikit-learn's.

    Parameters
    ----------
    scoring : str, callable or None
        ``"neg_expected_calibration_error"``, ``"neg_maximum_calibration_error"``,
        ``"neg_classwise_calibration_error"``, ``"neg_brier_score"`` and
        ``"neg_log_loss"`` give skcalib's scorers; any other value is passed to
        :func:`sklearn.metrics.get_scorer`.

    Returns
    -------
    scorer : callable
        A copy of the scorer, ``scorer(estimator, X, y)``.

    See Also
    --------
    get_scorer_names : All the names.
    sklearn.metrics.get_scorer : The fallback.

    Notes
    -----
    ``"neg_brier_score"`` and ``"neg_log_loss"`` are scikit-learn's names;
    skcalib's versions give the same values (scikit-learn >= 1.7) and also
    accept string labels with binary ``predict_proba`` and multiclass Brier
    scores on older scikit-learn. The scorers call ``predict_proba``; for a
    binary classifier scikit-learn passes the metric the column of
    ``classes_[1]``, which our metrics take as the positive class. In a
    cross-validation fold that lacks a class, the metrics name the columns
    ``0..K-1`` for integer labels, and raise otherwise (make your own scorer
    with ``make_scorer(..., labels=classes)`` then).

    Examples
    --------
    >>> from skcalib.metrics import get_scorer
    >>> get_scorer("neg_expected_calibration_error")
    make_scorer(expected_calibration_error, greater_is_better=False,
    response_method='predict_proba')
    >>> get_scorer("accuracy")
    make_scorer(accuracy_score, response_method='predict')
    """
    if isinstance(scoring, str) and scoring in _SCORERS:
        return copy.deepcopy(_SCORERS[scoring])
    return _sklearn_get_scorer(scoring)


def get_scorer_names():
    """Names accepted by :func:`get_scorer` (skcalib's and scikit-learn's).

    Returns
    -------
    names : list of str
        Sorted.

    See Also
    --------
    get_scorer : The scorer of a name.

    Examples
    --------
    >>> from skcalib.metrics import get_scorer_names
    >>> "neg_expected_calibration_error" in get_scorer_names()
    True
    >>> "roc_auc" in get_scorer_names()
    True
    """
    return sorted(set(_SCORERS) | set(_sklearn_get_scorer_names()))
