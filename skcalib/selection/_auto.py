"""Choosing a calibrator on the calibration data: AutoCalibrator."""

import time
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import FitFailedWarning
from sklearn.utils.parallel import Parallel, delayed

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval
from skcalib._core.warn import user_stacklevel
from skcalib._core.weights import check_count_weights
from skcalib.calibration._beta import BetaCalibrator
from skcalib.calibration._binning import HistogramBinningCalibrator
from skcalib.calibration._cross_fit import (
    collect_warnings,
    recording_warnings,
    reemit_warnings,
)
from skcalib.calibration._dirichlet import DirichletCalibrator
from skcalib.calibration._ensemble_temperature import EnsembleTemperatureCalibrator
from skcalib.calibration._identity import IdentityCalibrator
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.calibration._matrix_scaling import VectorScalingCalibrator
from skcalib.calibration._platt import PlattCalibrator
from skcalib.calibration._spline import SplineCalibrator
from skcalib.calibration._structured_scaling import StructuredMatrixScalingCalibrator
from skcalib.calibration._temperature import TemperatureCalibrator
from skcalib.metrics import get_scorer

__all__ = ["AutoCalibrator"]


class _ScorePassthrough(ClassifierMixin, BaseEstimator):
    """A prefit "classifier" whose scores are its input ``X`` (internal).

    Wrapping it lets a calibrator be fitted on raw scores with ``classes_``
    fixed in advance (wrapper mode takes ``classes_`` from the estimator),
    when the labels of a cross-validation fold miss a class that the score
    columns hold.
    """

    def __init__(self, classes=None):
        self.classes = classes

    def fit(self, X=None, y=None):
        """Store ``classes_``; ``X`` and ``y`` are ignored."""
        self.classes_ = np.asarray(self.classes)
        return self

    def decision_function(self, X):
        return np.asarray(X)

    def predict_proba(self, X):
        return np.asarray(X)


def fit_on_scores(calibrator, raw, labels, sample_weight, classes, score_type):
    """A clone of a raw-score calibrator fitted on ``raw`` with ``classes_ == classes``.

    ``labels`` take values in ``classes`` (whose order is that of the score
    columns). When every class occurs in ``labels`` and ``classes`` is sorted,
    the clone is fitted in raw-score mode; otherwise it wraps a passthrough
    classifier holding ``classes`` so that its ``classes_`` still follow the
    columns. A ``score_type="auto"`` calibrator gets ``score_type``.
    """
    cal = clone(calibrator)
    if cal.get_params().get("score_type", "auto") == "auto":
        cal.set_params(score_type=score_type)
    present = np.unique(labels)
    if not np.array_equal(present, classes):
        cal.set_params(
            estimator=_ScorePassthrough(classes).fit(),
            response_method=(
                "predict_proba" if score_type == "probability" else "decision_function"
            ),
        )
    if sample_weight is None:
        return cal.fit(raw, labels)
    return cal.fit(raw, labels, sample_weight=sample_weight)


def _name(calibrator):
    """``TemperatureCalibrator`` -> ``"temperature"``, ``VectorScaling...`` ->
    ``"vector_scaling"``."""
    base = type(calibrator).__name__.removesuffix("Calibrator") or "calibrator"
    out = []
    for i, ch in enumerate(base):
        if ch.isupper() and i and not base[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _default_candidates(n_classes):
    """The default candidates (see the ``candidates`` parameter).

    Spline calibration is a default on two classes only: one-vs-rest it fits
    one spline per class with a search over ten penalties, 3.6 s of CPU on
    CIFAR-10 and 38 s on CIFAR-100 (5000 rows; Dirichlet: 0.2 s and 2.4 s),
    and AutoCalibrator fits every candidate ``cv + 1`` times. Structured
    matrix scaling costs about what Dirichlet calibration does (2.2 s on
    CIFAR-100); structured vector scaling is left to ``candidates``, vector
    scaling being there.
    """
    cands = [
        IdentityCalibrator(),
        TemperatureCalibrator(),
        EnsembleTemperatureCalibrator(),
        PlattCalibrator(),
        BetaCalibrator(),
        IsotonicCalibrator(),
        HistogramBinningCalibrator(),
    ]
    if n_classes == 2:
        cands.append(SplineCalibrator())
    else:
        cands += [
            VectorScalingCalibrator(),
            DirichletCalibrator(),
            StructuredMatrixScalingCalibrator(),
        ]
    return cands


def _fit_and_score(
    calibrator, raw, y, sample_weight, train, test, n_classes, kind, scorer
):
    """Score of one candidate on one fold: ``(score, fit seconds, error or "")``."""
    w_train = None if sample_weight is None else sample_weight[train]
    t0 = time.perf_counter()
    try:
        cal = fit_on_scores(
            calibrator, raw[train], y[train], w_train, np.arange(n_classes), kind
        )
        fit_time = time.perf_counter() - t0
        if sample_weight is None:
            score = scorer(cal, raw[test], y[test])
        else:
            score = scorer(cal, raw[test], y[test], sample_weight=sample_weight[test])
        score = float(score)
    except Exception as exc:  # a failing candidate is a result, as in GridSearchCV
        return np.nan, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
    if not np.isfinite(score):
        return np.nan, fit_time, f"non-finite score {score}"
    return score, fit_time, ""


def _candidate_counts(groups, n_splits):
    """``"candidate 'platt', in 5 of 5 splits"`` or, for a warning several
    candidates raised, ``"candidates 'platt' (5 of 5 splits), 'beta' (2 of 5
    splits)"``."""
    if len(groups) == 1:
        ((name, k),) = groups.items()
        return f"candidate {name!r}, in {k} of {n_splits} splits"
    return "candidates " + ", ".join(
        f"{name!r} ({k} of {n_splits} splits)" for name, k in groups.items()
    )


def _paired_gains(split_scores, ref, splits, k):
    """The rule of :class:`AutoCalibrator` on a (candidates, splits) score table.

    Splits where the reference ``ref`` has no score are left out. Returns the
    gains over the reference, their mean and corrected standard error (Nadeau
    and Bengio 2003), the mean and standard deviation of the scores and
    ``beats`` (mean gain above ``k`` standard errors; never the reference).
    """
    n_cands = split_scores.shape[0]
    usable = np.isfinite(split_scores[ref])
    n_used = int(usable.sum())
    gain = split_scores - split_scores[ref]
    out = {"n_used": n_used, "gain": gain}
    for key in ("mean_score", "std_score", "mean_gain", "se_gain"):
        out[key] = np.full(n_cands, np.nan)
    if n_used:
        s, g = split_scores[:, usable], gain[:, usable]
        out.update(mean_score=s.mean(axis=1), std_score=s.std(axis=1))
        out["mean_gain"] = g.mean(axis=1)
    if n_used >= 2:
        used = np.flatnonzero(usable)
        n_test = np.mean([len(splits[f][1]) for f in used])
        n_train = np.mean([len(splits[f][0]) for f in used])
        sd = g.std(axis=1, ddof=1)
        out["se_gain"] = sd * np.sqrt(1.0 / n_used + n_test / n_train)
    with np.errstate(invalid="ignore"):
        beats = np.asarray(out["mean_gain"] > k * out["se_gain"])
    beats &= np.isfinite(out["mean_score"])
    beats[ref] = False
    out["beats"] = beats
    return out


def _rank(mean_score):
    """1 for the best mean score, ties sharing the smaller rank, NaN last."""
    key = np.where(np.isfinite(mean_score), mean_score, -np.inf)
    order = np.argsort(-key, kind="stable")
    rank = np.empty(key.size, dtype=np.int32)
    for pos, c in enumerate(order):
        same = pos and np.isfinite(key[c]) and key[c] == key[order[pos - 1]]
        rank[c] = rank[order[pos - 1]] if same else pos + 1
    return rank


class AutoCalibrator(BaseCalibrator):
    """Choose a calibrator by cross-validated proper score, keeping "no
    calibration" unless another is better beyond the fold-to-fold noise.

    Every candidate is fitted on the training part and scored on the test
    part of each cross-validation split of the calibration data (the scores
    are computed once; in wrapper mode the prefit ``estimator`` is never
    refit). For each candidate ``c`` and split ``f`` let
    ``d_cf = score_cf - score_0f`` be its gain over the identity (no
    calibration, candidate 0) on the same split, with ``scoring`` greater is
    better. The paired differences remove what the splits share (an easy
    split is easy for every candidate).

    **Rule.** Candidate ``c`` *beats the identity* when

    .. math::

        \\bar d_c > k \\, \\widehat{\\mathrm{SE}}_c, \\qquad
        \\widehat{\\mathrm{SE}}_c = s_c \\sqrt{\\frac{1}{F}
        + \\frac{n_\\text{test}}{n_\\text{train}}},

    with ``F`` splits, ``d-bar_c`` and ``s_c`` the mean and standard
    deviation (``ddof=1``) of ``d_cf`` over them, ``n_test / n_train`` the
    ratio of the mean test and training part sizes and ``k = n_std_errors``.
    The square root is the variance correction of Nadeau and Bengio (2003):
    the training parts of the splits overlap, so the split scores are
    correlated and the naive standard error ``s_c / sqrt(F)`` is too small.
    Among the candidates that beat the identity the one with the best mean
    score is chosen (the first one on ties); if none does, the identity is
    kept. This is the "one-standard-error rule" of Breiman et al. (1984)
    applied to the gain over doing nothing: a more complex model is taken
    only when its advantage exceeds ``k`` standard errors. A candidate that
    fails (raises, or gives a non-finite score) on a split is recorded with
    NaN scores, cannot be chosen, and raises a
    :class:`~sklearn.exceptions.FitFailedWarning`; a split on which the
    identity fails is left out for every candidate.

    Parameters
    ----------
    candidates : list or None, default=None
        Calibrators in raw-score mode (``estimator=None``), or
        ``(name, calibrator)`` pairs. ``None``: identity, temperature,
        ensemble temperature, Platt, beta, isotonic and histogram binning,
        plus spline calibration on two classes and vector scaling,
        Dirichlet calibration (ODIR) and structured matrix scaling for more
        than two classes, all with their default parameters (spline
        calibration is left out on more classes for its cost: one-vs-rest,
        one fit took 38 s of CPU on CIFAR-100 with 5000 rows, Dirichlet
        2.4 s; pass it in ``candidates`` to include it). The first
        :class:`IdentityCalibrator` is the reference; if there is none,
        ``IdentityCalibrator()`` is put first. Names default to the class
        name without ``Calibrator``, in snake case (``"vector_scaling"``). A
        candidate whose ``score_type`` is ``"auto"`` is given the one decided
        here.
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    cv : int, cross-validation generator or iterable, default=5
        Splits of the calibration data, as in
        :func:`sklearn.model_selection.check_cv` (an int gives
        ``StratifiedKFold(cv)``, without shuffling). Needs at least two
        splits to estimate the noise.
    scoring : str or callable, default="neg_log_loss"
        A scorer name for :func:`skcalib.metrics.get_scorer` (skcalib's
        calibration scorers, then scikit-learn's) or a callable
        ``scorer(estimator, X, y)``; greater is better. Prefer a proper
        scoring rule (``"neg_log_loss"``, ``"neg_brier_score"``): the ECE
        alone rewards uninformative predictions.
    n_std_errors : float, default=1.0
        ``k`` of the rule: how many standard errors the mean gain over the
        identity must exceed. ``0`` picks the best mean score whenever it
        beats the identity at all.
    n_jobs : int or None, default=None
        Candidate-split fits run in parallel (:class:`joblib.Parallel`);
        ``None`` means 1 unless in a :func:`joblib.parallel_backend` context.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    cv_results_ : dict of ndarray
        One entry per candidate, in the style of ``GridSearchCV``:
        ``candidate`` (names), ``params`` (each candidate's
        ``get_params(deep=False)``), ``split{f}_test_score``,
        ``mean_test_score``, ``std_test_score``, ``rank_test_score`` (1 is
        the best mean score; failed candidates come last),
        ``split{f}_test_gain`` (score minus the identity's on split ``f``),
        ``mean_test_gain``, ``se_test_gain`` (the corrected standard error
        above), ``beats_identity`` (the rule) and ``mean_fit_time``,
        ``std_fit_time`` (seconds).
    best_index_ : int
        Index of the chosen candidate in ``cv_results_``.
    best_calibrator_ : calibrator
        The chosen candidate refitted on all the calibration scores; its
        ``X`` is the raw scores. When a class of ``classes_`` is absent from
        ``y`` it wraps an internal passthrough classifier that holds the
        classes.
    best_score_ : float
        Mean cross-validated score of the chosen candidate.
    n_splits_ : int
        Number of cross-validation splits.
    scorer_ : callable
        The scorer used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    IdentityCalibrator : the reference (no calibration).
    sklearn.model_selection.GridSearchCV : picks the best mean score, with no
        guard against noise.

    Notes
    -----
    With the defaults the chance of leaving the identity for a candidate
    that is in truth no better is small but not zero: when the true gain is
    0 the statistic ``d-bar / SE`` is roughly Student-t distributed with
    ``F - 1`` degrees of freedom, and each candidate is a separate chance.
    Raise ``n_std_errors`` to be more conservative. The scores of the
    identity on probability inputs are those of the model itself, so an
    already calibrated model is left alone.

    References
    ----------
    .. [1] L. Breiman, J. Friedman, R. Olshen and C. Stone, "Classification
       and Regression Trees", Wadsworth, 1984 (the one-standard-error rule).
    .. [2] T. Hastie, R. Tibshirani and J. Friedman, "The Elements of
       Statistical Learning", 2nd ed., Springer, 2009, section 7.10.
    .. [3] C. Nadeau and Y. Bengio, "Inference for the generalization
       error", Machine Learning 52, 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import AutoCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000)
    >>> logits = 4.0 * (2 * y - 1) + rng.normal(scale=4.0, size=2000)  # too sharp
    >>> auto = AutoCalibrator().fit(logits, y)
    >>> auto.cv_results_["candidate"][auto.best_index_] != "identity"
    True
    >>> calibrated = AutoCalibrator().fit(logits / 2.0, y)  # the true log-odds
    >>> str(calibrated.cv_results_["candidate"][calibrated.best_index_])
    'identity'
    """

    #: The candidates get the weights as given: each applies its own rule
    #: (Platt's smoothed targets depend on the total weight, see
    #: PlattCalibrator), so that a candidate scores as it fits on its own.
    _rescale_sample_weight = False

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "candidates": [list, None],
        "cv": ["cv_object"],
        "scoring": [str, callable],
        "n_std_errors": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        candidates=None,
        *,
        estimator=None,
        score_type="auto",
        response_method="auto",
        classes=None,
        cv=5,
        scoring="neg_log_loss",
        n_std_errors=1.0,
        n_jobs=None,
    ):
        self.candidates = candidates
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.cv = cv
        self.scoring = scoring
        self.n_std_errors = n_std_errors
        self.n_jobs = n_jobs

    def _named_candidates(self, n_classes):
        items = (
            _default_candidates(n_classes)
            if self.candidates is None
            else list(self.candidates)
        )
        names, cals = [], []
        for i, item in enumerate(items):
            name, cal = (
                item if isinstance(item, tuple) and len(item) == 2 else (None, item)
            )
            if not isinstance(cal, BaseCalibrator):
                raise ValueError(
                    f"candidates[{i}] must be a skcalib calibrator or a (name, "
                    f"calibrator) pair; got {item!r}."
                )
            if cal.estimator is not None:
                raise ValueError(
                    f"candidates[{i}] ({type(cal).__name__}) must be in raw-score "
                    "mode (estimator=None): AutoCalibrator gives it the scores; "
                    "pass the classifier as AutoCalibrator(estimator=...)."
                )
            if name is None:
                name = _name(cal)
            elif not isinstance(name, str):
                raise ValueError(
                    f"candidates[{i}] has a name that is not a str: {name!r}."
                )
            names.append(name)
            cals.append(cal)
        if not any(isinstance(c, IdentityCalibrator) for c in cals):
            names.insert(0, "identity")
            cals.insert(0, IdentityCalibrator())
        seen = {}
        for i, name in enumerate(names):  # make names unique: "platt", "platt_2"
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                names[i] = f"{name}_{seen[name]}"
        ref = next(i for i, c in enumerate(cals) if isinstance(c, IdentityCalibrator))
        return names, cals, ref

    def _fit(self, scores, y, sample_weight):
        # Weights reach the candidates as counts: a total beyond float64 is
        # refused here, once, rather than as one candidate's fold failures.
        check_count_weights(sample_weight, type(self).__name__)
        names, cals, ref = self._named_candidates(scores.n_classes)
        raw, kind = scores.raw, scores.score_type
        from sklearn.model_selection import check_cv  # not on import skcalib

        cv = check_cv(self.cv, y, classifier=True)
        splits = list(cv.split(np.zeros((y.shape[0], 1)), y))
        n_splits = len(splits)
        if n_splits < 2:
            raise ValueError(
                f"cv gives {n_splits} split(s); AutoCalibrator needs at least 2 to "
                "estimate the fold-to-fold noise."
            )
        scorer = (
            get_scorer(self.scoring) if isinstance(self.scoring, str) else self.scoring
        )
        split_scores, fit_times = self._score_candidates(
            names, cals, ref, scores, y, sample_weight, splits, scorer
        )
        stats = _paired_gains(split_scores, ref, splits, self.n_std_errors)
        if stats["n_used"] < 2:
            warnings.warn(
                f"AutoCalibrator: the identity could be scored on {stats['n_used']} "
                f"of {n_splits} splits only; the noise cannot be estimated and the "
                "identity is kept.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        beats, mean_score = stats["beats"], stats["mean_score"]
        best = ref
        if beats.any():
            eligible = np.flatnonzero(beats)
            best = int(eligible[np.argmax(mean_score[eligible])])

        self.cv_results_ = _cv_results(names, cals, split_scores, fit_times, stats)
        self.best_index_ = best
        self.best_score_ = float(mean_score[best])
        self.n_splits_ = n_splits
        self.scorer_ = scorer
        self.best_calibrator_, caught = recording_warnings(
            fit_on_scores,
            cals[best],
            raw,
            self.classes_[y],
            sample_weight,
            self.classes_,
            kind,
        )
        reemit_warnings(
            collect_warnings([(names[best], caught)]),
            lambda g: f"refitting the chosen candidate {names[best]!r} on all samples",
        )

    def _score_candidates(
        self, names, cals, ref, scores, y, sample_weight, splits, scorer
    ):
        """Fit and score every candidate on every split, in parallel;
        ``(split_scores, fit_times)``, each of shape (n_candidates, n_splits).

        The warnings of the inner fits are recorded where they run and said
        once each, with the candidates and splits that raised them; a
        candidate that failed on a split is said once too (its score there
        is NaN).
        """
        n_splits = len(splits)
        recorded = Parallel(n_jobs=self.n_jobs)(
            delayed(recording_warnings)(
                _fit_and_score,
                cal,
                scores.raw,
                y,
                sample_weight,
                train,
                test,
                scores.n_classes,
                scores.score_type,
                scorer,
            )
            for cal in cals
            for train, test in splits
        )
        out = [r[0] for r in recorded]
        tasks = [(names[i // n_splits], r[1]) for i, r in enumerate(recorded)]
        shape = (len(cals), n_splits)
        split_scores = np.array([o[0] for o in out], dtype=np.float64).reshape(shape)
        fit_times = np.array([o[1] for o in out], dtype=np.float64).reshape(shape)
        errors = np.array([o[2] for o in out], dtype=object).reshape(shape)

        reemit_warnings(
            collect_warnings(tasks), partial(_candidate_counts, n_splits=n_splits)
        )
        for c, name in enumerate(names):
            failed = np.flatnonzero(errors[c] != "")
            if failed.size:
                note = " (the identity failed there too: split left out)"
                warnings.warn(
                    f"AutoCalibrator: candidate {name!r} failed on {failed.size} of "
                    f"{n_splits} splits and cannot be chosen"
                    + (note if c == ref else "")
                    + f". First error (split {failed[0]}): {errors[c, failed[0]]}",
                    FitFailedWarning,
                    stacklevel=user_stacklevel(),
                )
        return split_scores, fit_times

    def _predict_proba(self, scores):
        return self.best_calibrator_.predict_proba(scores.raw)


def _cv_results(names, cals, split_scores, fit_times, stats):
    """``cv_results_``: per candidate, the scores and gains over the identity
    of every split, their summaries and the fit times."""
    mean_score = stats["mean_score"]
    results = {
        "candidate": np.array(names, dtype=object),
        "params": [c.get_params(deep=False) for c in cals],
    }
    n_splits = split_scores.shape[1]
    for f in range(n_splits):
        results[f"split{f}_test_score"] = split_scores[:, f]
    results["mean_test_score"] = mean_score
    results["std_test_score"] = stats["std_score"]
    results["rank_test_score"] = _rank(mean_score)
    for f in range(n_splits):
        results[f"split{f}_test_gain"] = stats["gain"][:, f]
    results["mean_test_gain"] = stats["mean_gain"]
    results["se_test_gain"] = stats["se_gain"]
    results["beats_identity"] = stats["beats"]
    results["mean_fit_time"] = fit_times.mean(axis=1)
    results["std_fit_time"] = fit_times.std(axis=1)
    return results
