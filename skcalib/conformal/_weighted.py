"""Weighted split conformal prediction: the machinery shared by the
label-shift and covariate-shift conformal classifiers.

Both put weights on the calibration scores and on the test point (a point
mass at :math:`+\\infty`) and read the threshold as a weighted quantile
(:func:`~skcalib.conformal._quantile.quantiles_of_sorted` with a
``test_weight``): the scores are sorted once at fit, the cumulative weights
kept, and every threshold at predict time is one ``searchsorted``.
"""

from numbers import Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, StrOptions, _num_samples
from skcalib._core.weights import check_count_weights
from skcalib._core.xp import namespace, to_numpy
from skcalib._core.xp.estimator import call_on_host
from skcalib.conformal._quantile import check_alphas, quantiles_of_sorted, sort_scores
from skcalib.conformal._scores import (
    _blocks,
    _class_conditions,
    _passes,
    calibration_uniforms,
    check_set_options,
    label_scores,
    prediction_sets_many,
    resolve_randomized,
    row_uniforms,
)

__all__ = []  # private module


# ------------------------------------------------------------------ weights
def check_weights(weight, n, name):
    """Validated likelihood-ratio weights: 1-D float64 of length ``n``,
    finite, non-negative and not all zero; errors name the first offending
    index and its value."""
    try:
        w = np.asarray(to_numpy(weight), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of numbers, got {weight!r}."
        ) from exc
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(
            f"{name} must have one weight per sample ({n}), got shape {w.shape}."
        )
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        i = int(bad[0])
        what = "finite" if not np.isfinite(w[i]) else "non-negative"
        raise ValueError(
            f"{name} must be {what}: {name}[{i}] is {float(w[i])!r} "
            f"({bad.size} bad weight(s))."
        )
    if n and not np.any(w > 0):
        raise ValueError(
            f"{name} are all zero: no sample carries weight, the weighted "
            "quantile is undefined."
        )
    return w


def check_target_rows(estimator, X_target, name="X_target"):
    """``X_target`` read like the calibration ``X`` (scores in raw-score
    mode, features in wrapper mode): an error when it is missing, empty or
    of the wrong width, naming ``X_target``."""
    if X_target is None:
        return None
    X_target = to_numpy(X_target)
    n = _num_samples(X_target)
    if n == 0:
        raise ValueError(f"{name} is empty: give at least one unlabelled target row.")
    width = getattr(estimator, "n_features_in_", None)
    shape = np.shape(X_target)
    got = 1 if len(shape) == 1 else shape[1]
    if width is not None and len(shape) in (1, 2) and got != width:
        raise ValueError(
            f"{name} has {got} column(s) but X had {width} at fit: the target "
            "rows must be read like the calibration rows."
        )
    return X_target


# --------------------------------------------------------------------- sets
def row_threshold_sets(proba, method, thresholds, u, include_top, params):
    """Boolean ``(n, K, m)`` sets with one threshold per row and level
    (``thresholds`` of shape ``(n, m)``): the rules of
    :func:`~skcalib.conformal._scores.prediction_sets`, read from the score
    of every class (:func:`~skcalib.conformal._scores._class_conditions`)."""
    n, k = proba.shape
    m = thresholds.shape[1]
    sets = np.empty((n, k, m), dtype=bool)
    rule = "plain" if u is not None else "last"
    if u is None and not params.get("include_last_label", True):
        rule = "no_last"
    for b in _blocks(n, k * m):
        p = proba[b]
        if method == "lac":
            sets[b] = (1 - p)[:, :, None] <= thresholds[b][:, None, :]
            continue
        ub = None if u is None else u[b]
        conditions = _class_conditions(p, method, ub, 0, 0.0, rule)
        for a in range(m):
            sets[b, :, a] = _passes(conditions, thresholds[b, a][:, None])
    if include_top:
        sets[np.arange(n), np.argmax(proba, axis=1), :] = True
    return sets


# --------------------------------------------------------------- estimator
class _WeightedConformalBase(BaseCalibrator):
    """Parameters, fit and set machinery of the weighted conformal
    classifiers (not for direct use).

    Subclasses give the calibration weights (``_calibration_weights``) and
    the thresholds of test rows (``_set_thresholds``); this class computes
    the nonconformity scores (LAC or APS, the package's own), sorts them
    once with their cumulative weights, and builds the sets.
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "method": [StrOptions({"lac", "aps"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "include_last_label": ["boolean"],
        "randomized": ["boolean", StrOptions({"auto"})],
        "include_top": ["boolean"],
        "random_state": ["random_state"],
    }

    #: ``sample_weight`` are repetition counts, multiplied into the
    #: likelihood-ratio weights: used as given.
    _rescale_sample_weight = False

    def _fit_with(self, X, y, sample_weight, extra):
        """:meth:`BaseCalibrator.fit` with the extra fit arguments (target
        rows, weights) kept for :meth:`_fit` (also through the host copy of
        array-API inputs, which calls ``fit`` again)."""
        outer = not hasattr(self, "_fit_extra")
        if outer:
            self._fit_extra = extra
        try:
            return BaseCalibrator.fit(self, X, y, sample_weight)
        finally:
            if outer:
                del self._fit_extra

    def _score_params(self):
        return {"include_last_label": self.include_last_label}

    def _fit(self, scores, y, sample_weight):
        name = type(self).__name__
        check_count_weights(sample_weight, name)
        self.randomized_ = resolve_randomized(
            self.randomized, self.method, self.include_last_label
        )
        check_set_options(self.method, self.randomized_, self.include_last_label)
        proba = self._predict_proba(scores)
        u = None
        self._set_seed = None
        if self.randomized_:
            rng = check_random_state(self.random_state)
            cal_seed, self._set_seed = (
                int(v) for v in rng.randint(np.iinfo(np.int32).max, size=2)
            )
            u = calibration_uniforms(y.size, cal_seed)
        s = label_scores(proba, y, self.method, u, **self._score_params())
        weight = self._calibration_weights(scores, proba, y, sample_weight)
        if sample_weight is not None:
            with np.errstate(over="ignore"):
                weight = weight * sample_weight
            check_count_weights(weight, name)
        self._sorted = sort_scores(s, weight)
        self.n_effective_ = _effective_size(weight)

    def _predict_proba(self, scores):
        return scores.proba

    def _thresholds_at(self, alphas, test_weight):
        """Weighted quantiles of the calibration scores, ``alphas`` and
        ``test_weight`` broadcast (one ``searchsorted``)."""
        return quantiles_of_sorted(*self._sorted, alphas, test_weight)

    def _set_inputs(self, X):
        scores = self._scores(*self._raw_scores(X, reset=False), reset=False)
        proba = self._predict_proba(scores)
        u = None if self._set_seed is None else row_uniforms(proba, self._set_seed)
        return scores, proba, u

    def _predict_sets(self, X, alpha, extra):
        """``predict_set(X, alpha, *extra)``: the subclass's ``_sets`` on the
        validated probabilities (array-API inputs: on the host)."""
        check_is_fitted(self)
        if namespace(X) is not None:
            return call_on_host(self, "predict_set", X, alpha, *extra)
        alphas, scalar = check_alphas(self.alpha if alpha is None else alpha)
        scores, proba, u = self._set_inputs(X)
        sets = self._sets(self._ratio_input(X, scores), proba, u, alphas, *extra)
        return sets[:, :, 0] if scalar else sets

    def _ratio_input(self, X, scores):
        """What a likelihood ratio reads of the rows: the features as given
        in wrapper mode, the validated scores (numpy) in raw-score mode."""
        return X if self.estimator is not None else scores.raw

    def _sets_per_class(self, proba, u, thresholds):
        """Sets from ``(m, K)`` thresholds (one per level and class)."""
        return prediction_sets_many(
            proba,
            self.method,
            thresholds,
            u,
            include_top=self.include_top,
            **self._score_params(),
        )

    def _sets_per_row(self, proba, u, thresholds):
        """Sets from ``(n, m)`` thresholds (one per row and level)."""
        return row_threshold_sets(
            proba, self.method, thresholds, u, self.include_top, self._score_params()
        )


def _effective_size(weight):
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of the
    calibration weights, computed on ``w`` scaled by the power of two of
    ``max(w)`` (exact, and no overflow even for subnormal weights, where
    older numpy overflowed dividing by ``max(w)``)."""
    top = float(np.max(weight, initial=0.0))
    if not top > 0:
        return 0.0
    w = np.ldexp(np.asarray(weight, dtype=np.float64), -np.frexp(top)[1])
    return float(np.sum(w)) ** 2 / float(np.sum(w * w))
