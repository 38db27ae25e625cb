"""Ready-made scorers for model selection, and a ``get_scorer`` that knows them.

A scorer calls ``estimator.predict_proba`` and a metric with
``labels=estimator.classes_``, so that the columns are named by the classifier
and never guessed from the labels a cross-validation fold happens to hold.
The scorers are scikit-learn scorers: :class:`ProbaScorer` subclasses the
class :func:`sklearn.metrics.make_scorer` returns (with
``response_method="predict_proba"``) and only adds those labels, so the
response handling (binary: the column of ``classes_[1]``), ``sample_weight``,
metadata routing and every consumer that reads a scorer's attributes
(``LogisticRegressionCV``, ``TunedThresholdClassifierCV``, multi-metric
scoring) are scikit-learn's own. Losses are negated
(``greater_is_better=False``) and named ``neg_*``. Importing skcalib never
touches scikit-learn's scorer table: :func:`get_scorer` looks in our table
first and falls back to :func:`sklearn.metrics.get_scorer`; the explicit
opt-in :func:`~skcalib.metrics.register_scorers` (``_register.py``) makes the
names valid strings in scikit-learn itself.
"""

import copy

from sklearn.metrics import get_scorer as _sklearn_get_scorer
from sklearn.metrics import get_scorer_names as _sklearn_get_scorer_names

from skcalib._core.compat import SklearnScorer, validate_params
from skcalib.metrics._calibration_error import (
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from skcalib.metrics._multilabel_scorer import MULTILABEL_SCORERS
from skcalib.metrics._proper import brier_score, negative_log_likelihood
from skcalib.metrics._selective import aurc
from skcalib.metrics._smooth import smooth_calibration_error

__all__ = [
    "ProbaScorer",
    "aurc_scorer",
    "brier_scorer",
    "classwise_ece_scorer",
    "ece_scorer",
    "get_scorer",
    "get_scorer_names",
    "make_proba_scorer",
    "mce_scorer",
    "nll_scorer",
    "smooth_ece_scorer",
]


class ProbaScorer(SklearnScorer):
    """A scikit-learn scorer of a metric of ``predict_proba`` that names the
    columns with ``labels=estimator.classes_``.

    Made by :func:`make_proba_scorer`; use it wherever scikit-learn takes a
    ``scoring`` callable (:class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.cross_validate`,
    :class:`~sklearn.linear_model.LogisticRegressionCV`,
    :class:`~sklearn.model_selection.TunedThresholdClassifierCV`,
    :func:`~sklearn.inspection.permutation_importance`, multi-metric dicts).

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_proba, *, labels=None, sample_weight=None,
        **kwargs)``.
    sign : {1, -1}
        -1 for a loss (the scorer returns ``-score_func(...)``).
    kwargs : dict
        Other arguments of ``score_func``. A ``labels`` here is used instead
        of ``estimator.classes_``.

    See Also
    --------
    make_proba_scorer : Makes one.
    sklearn.metrics.make_scorer : The scorers this class extends.

    Notes
    -----
    A subclass of the class of ``make_scorer(score_func,
    greater_is_better=..., response_method="predict_proba", **kwargs)``
    (``sklearn.metrics._scorer._Scorer``): it has that scorer's attributes,
    ``set_score_request``, metadata routing and ``sample_weight`` handling,
    and scikit-learn passes a binary metric the 1-D column of
    ``classes_[1]`` (``labels[1]``, the positive class of our metrics). The
    one difference: each score also passes the metric
    ``labels=estimator.classes_`` (unless ``kwargs`` or the routed metadata
    give ``labels``). An estimator without ``classes_`` is scored without
    ``labels``: the metric then takes the labels of ``y`` when they name
    every column, and raises otherwise.

    scikit-learn consumers that rebuild a scorer from its attributes do not
    call this class: :class:`~sklearn.linear_model.LogisticRegressionCV`
    passes ``labels=classes`` itself; the curve scorer of
    :class:`~sklearn.model_selection.TunedThresholdClassifierCV` scores the
    thresholded labels (0/1 predictions, so a Brier score or an ECE there is
    the error rate) without ``labels``, so the metric takes the labels of
    ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib.metrics import get_scorer, negative_log_likelihood
    >>> X = np.arange(12.0)[:, None]
    >>> y = np.array([0, 0, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2])
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer = get_scorer("neg_log_loss")  # a ProbaScorer
    >>> # rows without class 2: the columns still follow clf.classes_
    >>> value = scorer(clf, X[:6], y[:6])
    >>> ref = negative_log_likelihood(y[:6], clf.predict_proba(X[:6]), labels=[0, 1, 2])
    >>> bool(np.isclose(value, -ref))
    True
    """

    def __init__(self, score_func, sign, kwargs):
        super().__init__(
            score_func, sign, dict(kwargs), response_method="predict_proba"
        )

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        # Called by __call__ and by scikit-learn's multi-metric scorer (with
        # its cached predict_proba): the one place the labels are added.
        if "labels" not in self._kwargs and "labels" not in kwargs:
            classes = getattr(estimator, "classes_", None)
            if classes is not None:
                kwargs["labels"] = classes
        return super()._score(method_caller, estimator, X, y_true, **kwargs)

    def __repr__(self):
        kwargs = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        loss = ", greater_is_better=False" if self._sign < 0 else ""
        return f"make_proba_scorer({self._score_func.__name__}{loss}{kwargs})"


def make_proba_scorer(score_func, *, greater_is_better=True, **kwargs):
    """A scorer of a metric of ``predict_proba`` that passes
    ``labels=estimator.classes_``.

    Like ``sklearn.metrics.make_scorer(score_func,
    response_method="predict_proba", **kwargs)``, but the metric is also
    given ``labels=estimator.classes_``, so that a cross-validation fold
    whose ``y`` misses a class is scored with the right columns.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_proba, *, labels=None, **kwargs)``, such as
        :func:`expected_calibration_error`.
    greater_is_better : bool, default=True
        False for a loss: the scorer returns its negation.
    **kwargs : dict
        Other arguments of ``score_func`` (for example ``n_bins=10``).

    Returns
    -------
    scorer : ProbaScorer
        ``scorer(estimator, X, y, sample_weight=None)``.

    See Also
    --------
    sklearn.metrics.make_scorer : What each call builds.
    get_scorer : The ready-made scorers by name.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib.metrics import expected_calibration_error, make_proba_scorer
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = LogisticRegression().fit(X, y)
    >>> ece10 = make_proba_scorer(expected_calibration_error,
    ...                           greater_is_better=False, n_bins=10)
    >>> ece10
    make_proba_scorer(expected_calibration_error, greater_is_better=False, n_bins=10)
    >>> bool(ece10(clf, X, y) <= 0)
    True
    """
    return ProbaScorer(score_func, 1 if greater_is_better else -1, kwargs)


def _loss_scorer(func):
    return make_proba_scorer(func, greater_is_better=False)


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
#: ``-aurc`` (area under the risk-coverage curve of the max-probability
#: confidence and the 0/1 error).
aurc_scorer = _loss_scorer(aurc)
#: ``-smooth_calibration_error`` (confidence smooth ECE, automatic bandwidth).
smooth_ece_scorer = _loss_scorer(smooth_calibration_error)

_SCORERS = {
    "neg_expected_calibration_error": ece_scorer,
    "neg_maximum_calibration_error": mce_scorer,
    "neg_classwise_calibration_error": classwise_ece_scorer,
    "neg_brier_score": brier_scorer,
    "neg_log_loss": nll_scorer,
    "neg_aurc": aurc_scorer,
    "neg_smooth_calibration_error": smooth_ece_scorer,
    **MULTILABEL_SCORERS,
}


@validate_params({"scoring": [str, callable, None]}, prefer_skip_nested_validation=True)
def get_scorer(scoring):
    """A scorer by name: skcalib's calibration scorers, else scikit-learn's.

    Parameters
    ----------
    scoring : str, callable or None
        ``"neg_expected_calibration_error"``, ``"neg_maximum_calibration_error"``,
        ``"neg_classwise_calibration_error"``, ``"neg_brier_score"``,
        ``"neg_log_loss"``, ``"neg_aurc"`` (:func:`aurc`) and
        ``"neg_smooth_calibration_error"`` (:func:`smooth_calibration_error`)
        give skcalib's scorers, and ``"neg_multilabel_calibration_error"``,
        ``"neg_multilabel_brier_score"`` and ``"neg_multilabel_log_loss"``
        its multi-label scorers (:func:`make_multilabel_scorer`); any other
        value is passed to
        :func:`sklearn.metrics.get_scorer`.

    Returns
    -------
    scorer : callable
        A copy of the scorer, ``scorer(estimator, X, y)``.

    See Also
    --------
    get_scorer_names : All the names.
    sklearn.metrics.get_scorer : The fallback.
    register_scorers : Make the names valid ``scoring`` strings in
        scikit-learn itself (``GridSearchCV(scoring="neg_aurc")``).

    Notes
    -----
    ``"neg_brier_score"`` and ``"neg_log_loss"`` are scikit-learn's names;
    skcalib's versions give the same values (scikit-learn >= 1.7) and also
    accept string labels with binary ``predict_proba`` and multiclass Brier
    scores on older scikit-learn. The scorers call ``predict_proba`` and pass
    the metric ``labels=estimator.classes_`` (see :func:`make_proba_scorer`):
    a cross-validation fold whose ``y`` lacks a class is scored with the
    columns the classifier gave, never with guessed ones.

    Examples
    --------
    >>> from skcalib.metrics import get_scorer
    >>> get_scorer("neg_expected_calibration_error")
    make_proba_scorer(expected_calibration_error, greater_is_better=False)
    >>> get_scorer("accuracy")
    make_scorer(accuracy_score, response_method='predict')
    """
    if isinstance(scoring, str) and scoring in _SCORERS:
        return copy.deepcopy(_SCORERS[scoring])
    return _sklearn_get_scorer(scoring)


def get_scorer_names():
    """Return the names accepted by :func:`get_scorer` (skcalib's and scikit-learn's).

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
