"""Cross-fitting helpers of :class:`~skcalib.CalibratedClassifier`: one
(classifier, calibrator) pair, the scores of a fitted classifier in the
calibrator's column layout, the check that the splits partition the
samples, and the warnings of the inner fits, said once per fit."""

import re
import warnings

import numpy as np
from sklearn.base import clone

from skcalib._core.compat import _safe_indexing
from skcalib._core.folds import fit_on_rows, split_part
from skcalib._core.scores import log_softmax
from skcalib._core.warn import user_stacklevel

__all__ = []  # private module


# ------------------------------------------------------------ inner warnings
def recording_warnings(func, *args, **kwargs):
    """``(func(*args, **kwargs), warnings)``: the warnings it raised, recorded.

    Each warning is ``(category, message, filename, lineno)``. Inside the
    call every warning is recorded ("always"), whatever the filters, so that
    :func:`reemit_warnings` can count them; the filters of the caller apply
    when they are said again. The filters are changed only inside this call
    (``warnings.catch_warnings``), in the process or thread that runs it.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


#: Numbers in warning messages: two messages that differ only in them are
#: the same warning (a fold's temperature, a sample count).
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def collect_warnings(tasks):
    """Distinct warnings of several inner fits and where each occurred.

    ``tasks`` holds ``(group, warnings)`` pairs, one per inner fit, with the
    warnings of :func:`recording_warnings`. Two warnings are the same when
    they have the same category and the same message up to its numbers.
    Returns a dict ordered by first occurrence: ``key -> (category, first
    message, filename, lineno, {group: number of fits of the group that
    raised it}, whether the messages differ in their numbers)``.
    """
    found = {}
    for group, caught in tasks:
        here = {}
        for category, message, filename, lineno in caught:
            key = (category, _NUMBER.sub("#", message))
            if key in here:
                continue
            here[key] = True
            if key not in found:
                found[key] = [category, message, filename, lineno, {}, False]
            entry = found[key]
            entry[4][group] = entry[4].get(group, 0) + 1
            entry[5] |= message != entry[1]
    return {k: tuple(v) for k, v in found.items()}


def reemit_warnings(found, describe):
    """Say each warning of :func:`collect_warnings` once.

    The message (of the first occurrence) gets ``" (" + describe(groups) +
    ")"`` before its final full stop, and points at the user's call.
    Deprecation warnings keep their own location (they are about the code
    that raised them, and the default filters show them only when that code
    is the user's).
    """
    stacklevel = user_stacklevel()
    for category, message, filename, lineno, groups, differ in found.values():
        where = describe(groups)
        if differ:
            where += "; the numbers are those of the first"
        stop = "." if message.endswith(".") else ""
        text = f"{message.removesuffix('.')} ({where}){stop}"
        if issubclass(category, DeprecationWarning | PendingDeprecationWarning):
            warnings.warn_explicit(text, category, filename, lineno)
        else:
            warnings.warn(text, category, stacklevel=stacklevel)


def fold_counts(groups, n_folds, fold="fold"):
    """``"in 3 of 5 folds"`` for ``groups[fold] == 3``; other groups (fits
    made once) are named by their key: ``"in 3 of 5 folds and the fit on
    all samples"``."""
    parts = []
    if fold in groups:
        parts.append(f"in {groups[fold]} of {n_folds} {fold}s")
    parts += [g for g in groups if g != fold]
    return " and ".join(parts)


# ---------------------------------------------------------------- one pair
class _CalibratedPair:
    """A fitted classifier and the calibrator of its scores.

    ``columns[j]`` is the position in the meta-estimator's ``classes_`` of
    ``estimator.classes_[j]``; ``fill[m]`` the probability given to a class
    ``m`` that ``estimator`` does not know (0 for the classes it knows).

    * ``pooled=False`` (``ensemble=True``): ``calibrator`` wraps ``estimator``
      and was fitted on the held-out part of its split; its probabilities
      over the classes it knows are scaled by ``1 - fill.sum()``.
    * ``pooled=True`` (``ensemble=False``): ``calibrator`` is in raw-score
      mode, fitted on the pooled out-of-fold scores; the scores of
      ``estimator`` (completed with ``fill`` if it misses classes) go through
      it.
    """

    def __init__(
        self, estimator, calibrator, *, response_method, columns, fill, pooled
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.response_method = response_method
        self.columns = columns
        self.fill = fill
        self.pooled = pooled

    def predict_proba(self, X):
        """Calibrated probabilities over all classes, shape (n_samples, n_classes)."""
        n_classes = self.fill.shape[0]
        if self.pooled:
            scores = getattr(self.estimator, self.response_method)(X)
            kind = _kind(self.response_method)
            scores = _full_scores(scores, kind, self.columns, self.fill)
            return self.calibrator.predict_proba(scores)
        q = self.calibrator.predict_proba(X)
        if np.array_equal(self.columns, np.arange(n_classes)):
            return q
        proba = np.tile(self.fill, (q.shape[0], 1))
        proba[:, self.columns] = (1.0 - self.fill.sum()) * q
        return proba


def _kind(response_method):
    return "logit" if response_method == "decision_function" else "probability"


def _full_scores(scores, kind, columns, fill):
    """Scores over the classes an estimator knows -> scores over all classes.

    Rows of probabilities are first divided by their sums. When the
    estimator knows every class, in order, nothing else changes; otherwise
    the scores become the mixture that gives each unknown class ``m`` the
    probability ``fill[m]`` and the known classes their own distribution
    times ``1 - sum(fill)``: probabilities for ``kind="probability"``,
    log-probabilities (which are logits) for ``kind="logit"``.
    """
    n_classes = fill.shape[0]
    scores = np.asarray(scores)
    if kind == "probability" and scores.ndim == 2 and scores.shape[1] > 1:
        # The rows of a predict_proba can miss 1 by more than the sqrt(eps)
        # that calibrators accept (GaussianNB: 8e-8 in float64).
        scores = scores / scores.sum(axis=1, keepdims=True)
    if np.array_equal(columns, np.arange(n_classes)):
        return scores
    scores = _two_columns(scores.astype(np.float64, copy=False), kind)
    mass = float(fill.sum())
    missing = np.setdiff1d(np.arange(n_classes), columns)
    out = np.empty((scores.shape[0], n_classes))
    if kind == "probability":
        out[:, missing] = fill[missing]
        out[:, columns] = (1.0 - mass) * scores
    else:
        out[:, missing] = np.log(fill[missing])
        out[:, columns] = np.log1p(-mass) + log_softmax(scores)
    return out


def _two_columns(scores, kind):
    """Binary scores of the positive class (1-D or one column) as two columns:
    logits ``(0, s)`` or probabilities ``(1 - p, p)``; 2-D scores unchanged."""
    if scores.ndim == 2 and scores.shape[1] > 1:
        return scores
    s = scores.reshape(-1)
    if kind == "logit":
        return np.column_stack((np.zeros_like(s), s))
    return np.column_stack((1.0 - s, s))


# ------------------------------------------------------------- fold workers
def _columns(estimator, classes):
    """Positions in ``classes`` (sorted) of ``estimator.classes_``."""
    known = np.asarray(estimator.classes_)
    pos = np.searchsorted(classes, known)
    pos = np.minimum(pos, classes.size - 1)
    if known.ndim != 1 or not np.array_equal(classes[pos], known):
        raise ValueError(
            f"{type(estimator).__name__}.classes_ = {known.tolist()} are not among "
            f"the labels of y {classes.tolist()}."
        )
    return pos


def _fit_pair(estimator, calibrator, X, y, classes, split, sample_weight, params):
    """ensemble=True: fit the classifier on the training part of ``split``, its
    calibrator on the test part; a str says why the split cannot calibrate."""
    i, (train, test) = split
    est = fit_on_rows(estimator, X, y, train, params.fit_params)
    columns = _columns(est, classes)
    n_classes = classes.size
    y_test = y[test]
    w = np.ones(test.size) if sample_weight is None else sample_weight[test]
    known = np.isin(y_test, np.asarray(est.classes_))
    fill = np.zeros(n_classes)
    missing = np.setdiff1d(np.arange(n_classes), columns)
    if missing.size:
        # Add-one (Laplace) smoothed weighted frequency of each class the
        # classifier never saw, in the held-out part that calibrates it.
        counts = np.bincount(
            np.searchsorted(classes, y_test), weights=w, minlength=n_classes
        )
        fill[missing] = (counts[missing] + 1.0) / (w.sum() + n_classes)
    present = np.unique(y_test[known & (w > 0)])
    if present.size < 2:
        return (
            f"the test part of split {i} holds {present.size} class(es) "
            f"{present.tolist()} (with positive weight) of the classes its "
            f"classifier was trained on {np.asarray(est.classes_).tolist()}, and a "
            "calibrator needs two"
        )
    cal = clone(calibrator).set_params(
        estimator=est, response_method=params.response_method
    )
    rows = np.flatnonzero(known)
    X_cal = _safe_indexing(X, test if known.all() else test[rows])
    cal.fit(
        X_cal, y_test[rows], sample_weight=None if sample_weight is None else w[rows]
    )
    return _CalibratedPair(
        est,
        cal,
        response_method=params.response_method,
        columns=columns,
        fill=fill,
        pooled=False,
    )


def _out_of_fold(estimator, X, y, classes, train, test, sample_weight, params):
    """ensemble=False: scores of the held-out part, over all classes."""
    est = fit_on_rows(estimator, X, y, train, params.fit_params)
    columns = _columns(est, classes)
    w_train = train.size if sample_weight is None else sample_weight[train].sum()
    scores = getattr(est, params.response_method)(_safe_indexing(X, test))
    fill = _laplace_fill(columns, classes.size, w_train)
    return _full_scores(scores, _kind(params.response_method), columns, fill)


def _laplace_fill(columns, n_classes, total_weight):
    """``1 / (W + K)`` for each class a classifier trained on weight ``W`` never
    saw: Laplace's rule of succession for a count of zero."""
    fill = np.full(n_classes, 1.0 / (total_weight + n_classes))
    fill[columns] = 0.0
    return fill


def _check_splits(splits, n_samples):
    """Validate the (train, test) splits; see the ``cv`` parameter."""
    checked = []
    times_tested = np.zeros(n_samples, dtype=np.intp)
    for i, (train, test) in enumerate(splits):
        train = split_part(train, n_samples, f"The training part of split {i}")
        test = split_part(test, n_samples, f"The test part of split {i}")
        for what, part in (("training", train), ("test", test)):
            if part.size == 0:
                raise ValueError(f"Split {i} of cv has an empty {what} part.")
        if np.unique(test).size != test.size:
            raise ValueError(
                f"The test part of split {i} lists a sample more than once."
            )
        both = np.intersect1d(train, test)
        if both.size:
            raise ValueError(
                f"Split {i} of cv puts samples {both[:5].tolist()} in both its "
                "training and its test part: the calibrator must be fitted on "
                "scores of samples that the classifier was not trained on."
            )
        times_tested[test] += 1
        checked.append((train, test))
    if not checked:
        raise ValueError("cv gives no split.")
    never = np.flatnonzero(times_tested == 0)
    again = np.flatnonzero(times_tested > 1)
    if never.size or again.size:
        problems = []
        if never.size:
            problems.append(
                f"{never.size} sample(s) are in no test part (first: "
                f"{never[:5].tolist()})"
            )
        if again.size:
            problems.append(
                f"{again.size} sample(s) are in more than one test part (first: "
                f"{again[:5].tolist()})"
            )
        raise ValueError(
            "The test parts of cv must partition the samples (each sample in "
            "exactly one test part), so that every sample is calibrated once "
            "on scores of a model that did not see it. Here "
            + " and ".join(problems)
            + ". Use a K-fold splitter."
        )
    return checked
