"""Scorers of the multi-label metrics.

scikit-learn's scorer hands a metric the processed ``predict_proba``: an
``(n, L)`` matrix (``OneVsRestClassifier``, ``MLPClassifier``) as is; a
list of per-label ``(n, c_j)`` arrays (``MultiOutputClassifier``,
``RandomForestClassifier``) stacked by each array's last column when every
label has the classes ``[0, 1]``, and passed on as the list when a label
was trained on one class only (its array has one column; the multi-label
metrics refuse a list, since they cannot tell which column is class 1).
The scorers here read ``predict_proba`` themselves and take the column of
class 1 of each label by ``estimator.classes_``
(:func:`skcalib._core.multilabel.positive_proba`), so both forms are scored right.
"""

from skcalib._core.compat import SklearnScorer
from skcalib._core.multilabel import positive_proba
from skcalib.metrics._multilabel import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_log_loss,
)

__all__ = [
    "MultilabelProbaScorer",
    "make_multilabel_scorer",
    "multilabel_brier_scorer",
    "multilabel_ece_scorer",
    "multilabel_nll_scorer",
]


class MultilabelProbaScorer(SklearnScorer):
    """A scikit-learn scorer of a multi-label metric of ``predict_proba``.

    Made by :func:`make_multilabel_scorer`; use it wherever scikit-learn
    takes a ``scoring`` callable, with a multi-label classifier and a
    label-indicator ``y``.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_proba, *, sample_weight=None, **kwargs)``
        with ``y_proba`` of shape ``(n_samples, n_labels)``.
    sign : {1, -1}
        -1 for a loss (the scorer returns ``-score_func(...)``).
    kwargs : dict
        Other arguments of ``score_func``.

    See Also
    --------
    make_multilabel_scorer : Makes one.
    ProbaScorer : The scorers of multiclass metrics.

    Notes
    -----
    A subclass of the class of ``make_scorer(score_func,
    greater_is_better=..., response_method="predict_proba", **kwargs)``
    (``set_score_request``, metadata routing and ``sample_weight`` are
    scikit-learn's). The one difference: each score calls
    ``estimator.predict_proba(X)`` itself and passes the metric the
    ``(n_samples, n_labels)`` matrix of the probabilities of class 1 of
    each label, a list output read by ``estimator.classes_[j]`` (never by
    position). In a multi-metric ``scoring`` dict it therefore calls
    ``predict_proba`` once more instead of sharing scikit-learn's cached
    response.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.multioutput import MultiOutputClassifier
    >>> from skcalib.metrics import get_scorer, multilabel_brier_score
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> Y = (X[:, :2] + rng.normal(size=(200, 2)) > 0).astype(int)
    >>> clf = MultiOutputClassifier(LogisticRegression()).fit(X, Y)
    >>> scorer = get_scorer("neg_multilabel_brier_score")
    >>> proba = np.column_stack([p[:, 1] for p in clf.predict_proba(X)])
    >>> bool(np.isclose(scorer(clf, X, Y), -multilabel_brier_score(Y, proba)))
    True
    """

    def __init__(self, score_func, sign, kwargs):
        super().__init__(
            score_func, sign, dict(kwargs), response_method="predict_proba"
        )

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        # Called by __call__ and by scikit-learn's multi-metric scorer; the
        # list form needs the raw predict_proba and classes_, which
        # scikit-learn's response processing does not keep.
        self._warn_overlap(
            message=(
                "There is an overlap between set kwargs of this scorer instance "
                "and passed metadata. Please pass them either as kwargs to "
                "make_multilabel_scorer or metadata, but not both."
            ),
            kwargs=kwargs,
        )
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"{type(estimator).__name__} has no predict_proba; a multi-label "
                "calibration scorer needs predicted probabilities."
            )
        proba = positive_proba(estimator.predict_proba(X), estimator)
        return self._sign * self._score_func(
            y_true, proba, **{**self._kwargs, **kwargs}
        )

    def __repr__(self):
        kwargs = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        loss = ", greater_is_better=False" if self._sign < 0 else ""
        return f"make_multilabel_scorer({self._score_func.__name__}{loss}{kwargs})"


def make_multilabel_scorer(score_func, *, greater_is_better=True, **kwargs):
    """A scorer of a multi-label metric of ``predict_proba``.

    Like ``sklearn.metrics.make_scorer(score_func,
    response_method="predict_proba", **kwargs)``, but the metric gets the
    ``(n_samples, n_labels)`` matrix of each label's probability of class 1,
    also from classifiers whose ``predict_proba`` is a list of per-label
    arrays (read by ``estimator.classes_``).

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_proba, **kwargs)``, such as
        :func:`multilabel_calibration_error`.
    greater_is_better : bool, default=True
        False for a loss: the scorer returns its negation.
    **kwargs : dict
        Other arguments of ``score_func`` (for example ``average="micro"``).

    Returns
    -------
    scorer : MultilabelProbaScorer
        ``scorer(estimator, X, Y, sample_weight=None)``.

    See Also
    --------
    make_proba_scorer : For metrics of multiclass ``predict_proba``.
    get_scorer : The ready-made scorers by name.

    Examples
    --------
    >>> from skcalib.metrics import make_multilabel_scorer
    >>> from skcalib.metrics import multilabel_calibration_error
    >>> make_multilabel_scorer(  # doctest: +NORMALIZE_WHITESPACE
    ...     multilabel_calibration_error, greater_is_better=False, average="micro")
    make_multilabel_scorer(multilabel_calibration_error,
        greater_is_better=False, average='micro')
    """
    return MultilabelProbaScorer(score_func, 1 if greater_is_better else -1, kwargs)


#: ``-multilabel_calibration_error`` (macro mean of the labels' ECEs, 15
#: uniform bins).
multilabel_ece_scorer = make_multilabel_scorer(
    multilabel_calibration_error, greater_is_better=False
)
#: ``-multilabel_brier_score`` (macro).
multilabel_brier_scorer = make_multilabel_scorer(
    multilabel_brier_score, greater_is_better=False
)
#: ``-multilabel_log_loss`` (macro).
multilabel_nll_scorer = make_multilabel_scorer(
    multilabel_log_loss, greater_is_better=False
)

#: Their names in :func:`~skcalib.metrics.get_scorer`.
MULTILABEL_SCORERS = {
    "neg_multilabel_calibration_error": multilabel_ece_scorer,
    "neg_multilabel_brier_score": multilabel_brier_scorer,
    "neg_multilabel_log_loss": multilabel_nll_scorer,
}
