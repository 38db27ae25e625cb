"""A :class:`~skcalib.conformal.ConformalClassifier` fitted on scores held in
chunks or by an engine (Dask, Spark, Ray): the threshold from an exact
distributed order statistic, never from the collected scores."""

from functools import partial

import numpy as np
from sklearn.base import clone

from skcalib._backends.engines import get as get_engine
from skcalib._base import BaseCalibrator
from skcalib._core.totals import class_members
from skcalib.conformal._quantile import ThresholdSearch, check_alphas
from skcalib.conformal._scores import (
    check_set_options,
    label_scores,
    resolve_randomized,
)

__all__ = []  # private module


def fit_chunks(est, data):
    """Fit ``est`` (a ConformalClassifier) on surveyed :class:`ChunkedData`.

    One pass per step of the search (:class:`ThresholdSearch`: two to four),
    after the calibrator's own passes when there is one. The thresholds are
    those of :meth:`ConformalClassifier.fit` on the same rows; the calibration
    scores are not kept, so :meth:`predict_set` serves the fitted ``alpha``
    only.
    """
    name = type(est).__name__
    est.randomized_ = resolve_randomized(
        est.randomized, est.method, est.include_last_label
    )
    check_set_options(est.method, est.randomized_, est.include_last_label)
    if est.randomized_:
        raise ValueError(
            f"{name} with randomized sets (method={est.method!r}, randomized="
            f"{est.randomized!r}) draws the uniforms of the calibration rows by "
            "their position, which rows in chunks or on a cluster do not have: "
            "pass randomized=False, or fit on arrays in memory."
        )
    if est.method == "raps":
        auto = [p for p in ("k_reg", "lam") if getattr(est, p) == "auto"]
        if auto:
            raise ValueError(
                f"{name}(method='raps') chooses {' and '.join(auto)} on a random "
                "split of the calibration rows, which rows in chunks or on a "
                "cluster cannot give: pass k_reg and lam as numbers (chosen, e.g., "
                "by a fit in memory on a sample)."
            )
        est.k_reg_, est.lam_ = int(est.k_reg), float(est.lam)
        est.n_tuning_ = 0
    if not np.isfinite(data.total_weight):
        raise ValueError(
            f"{name} reads sample_weight as repetition counts, and these sum "
            "beyond the float64 range; divide them by a constant."
        )
    est.calibrator_ = _fit_calibrator(est, data)
    est._set_seed = None
    groups = len(est.classes_) if est.class_conditional else 1
    dtype = _score_dtype(est, data)
    search = ThresholdSearch(groups, [est.alpha], dtype, data.weighted)
    while not search.done:
        kernel = partial(_kernel, est=est, search=search)
        search.advance(data.map_scores(kernel, combine=_combine))
    est._calibration_scores = None  # the scores stay where they are
    thresholds = np.stack(search.thresholds(), axis=1)  # (1, groups)
    return thresholds[0] if est.class_conditional else float(thresholds[0, 0])


def engine_sets(est, engine, X, alpha):
    """The sets of an engine's ``X``, lazily: one boolean column
    ``set_<class>`` per class (see :mod:`skcalib._backends.engines`)."""
    if not check_alphas(est.alpha if alpha is None else alpha)[1]:
        raise ValueError(
            f"predict_set of {engine} data takes one alpha (a column per class), "
            f"got alpha={alpha!r}."
        )
    func = partial(est.predict_set, alpha=alpha)
    columns = [f"set_{c}" for c in est.classes_]
    return get_engine(engine).apply(X, func, columns=columns, dtype=np.bool_)


def _fit_calibrator(est, data):
    """``est.calibrator`` fitted on the chunks with the labels encoded, as
    :func:`~skcalib.conformal._set_calibrator.fit_set_calibrator` does in
    memory (``classes=range(K)``, the classifier's ``score_type_``)."""
    if est.calibrator is None:
        return None
    if not isinstance(est.calibrator, BaseCalibrator):
        raise TypeError(
            f"{type(est).__name__} fitted in chunks or on a cluster needs a "
            "skcalib calibrator that fits in chunks (or calibrator=None), got "
            f"{type(est.calibrator).__name__}."
        )
    calibrator = clone(est.calibrator)
    if calibrator.get_params(deep=False).get("estimator") is not None:
        raise ValueError(
            "calibrator must work on scores (its estimator must be None); pass "
            "the classifier as ConformalClassifier(estimator=...)."
        )
    params = calibrator.get_params(deep=False)
    if "score_type" in params:
        calibrator.set_params(score_type=est.score_type_)
    if "classes" in params:
        calibrator.set_params(classes=np.arange(len(est.classes_)))
    return calibrator._fit_chunked(data.encoded())


def _score_dtype(est, data):
    """The dtype of the calibration scores of rows of ``data.dtype``."""
    k = len(est.classes_)
    proba = np.full((1, k), 1.0 / k, dtype=data.dtype)
    params = est._score_params()
    return label_scores(proba, np.zeros(1, dtype=np.intp), est.method, **params).dtype


def _kernel(scores, y, w, *, est, search):
    proba = est._predict_proba(scores)
    s = label_scores(proba, y, est.method, None, **est._score_params())
    if not est.class_conditional:
        return search.digit_counts([(s, w)])
    groups = class_members(y, len(est.classes_))
    return search.digit_counts([(s[g], None if w is None else w[g]) for g in groups])


def _combine(parts):
    parts = [p for p in parts if p is not None]
    return ThresholdSearch.merge(parts)
