"""Cross-conformal (CV+) prediction sets for an unfitted classifier, and the
split mode: one model, one calibration part, the exact guarantee."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
    indexable,
)

from skcalib._core.compat import (
    HasMethods,
    Interval,
    StrOptions,
    _check_sample_weight,
    _fit_context,
    _num_samples,
    _safe_indexing,
)
from skcalib._core.folds import fit_on_rows
from skcalib._core.warn import user_stacklevel
from skcalib._core.xp import namespace
from skcalib._core.xp.estimator import call_on_host, fit_on_host, follows_input
from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._cross_sets import (
    FoldScores,
    check_folds,
    exclusion_conditions,
    fold_proba,
    query_uniforms,
    sets_from_counts,
)
from skcalib.conformal._quantile import _min_samples, check_alphas
from skcalib.conformal._scores import (
    calibration_uniforms,
    check_set_options,
    label_scores,
    resolve_randomized,
)

__all__ = ["CrossConformalClassifier"]


class CrossConformalClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Cross-conformal (CV+) prediction sets for a classifier given unfitted.

    :meth:`fit` fits a clone of ``estimator`` on the training part of each
    fold of ``cv`` and keeps the nonconformity score of every sample under
    the model that did not see it. :meth:`predict_set` puts a class ``y``
    in the set of a new sample ``x`` when the score of ``(x, y)`` under
    each fold's model is below enough of that fold's calibration scores
    (the CV+ rule, see Notes). Every sample serves both to train and to
    calibrate, at the price of a weaker guarantee (:math:`1 - 2\\alpha`,
    in practice close to :math:`1 - \\alpha`). ``cv="split"`` fits one model
    on part of the data and calibrates on the rest: exact
    :math:`1 - \\alpha`, fewer samples for each task.

    Parameters
    ----------
    estimator : classifier or None, default=None
        An unfitted classifier with ``fit`` and ``predict_proba``; cloned
        once per fold. ``None`` means ``LogisticRegression()``, as in
        :class:`~skcalib.CalibratedClassifier`.
    cv : int, cross-validation generator, iterable or "split", default=5
        An int ``K``: stratified K-fold (``StratifiedKFold(K)``). A splitter
        or an iterable of ``(train, test)`` index pairs whose test parts
        partition the samples (K-fold, leave-one-out for the jackknife+,
        group K-fold...). ``"split"``: one model fitted on a random
        ``1 - calibration_size`` of the samples, split-conformal sets from
        the rest.
    method : {"lac", "aps", "raps", "top_k"}, default="lac"
        Nonconformity score and set rule, those of
        :class:`~skcalib.ConformalClassifier` (every method it has).
    alpha : float in (0, 1), default=0.1
        Default miscoverage level of :meth:`predict_set`.
    k_reg : int >= 0, default=1
        RAPS only: the rank from which the penalty applies. There is no
        ``"auto"`` here: choose ``k_reg`` and ``lam`` on held-out data with
        ``ConformalClassifier(method="raps", k_reg="auto", lam="auto")``
        (its ``k_reg_`` and ``lam_``), or by a search over the sizes of the
        out-of-fold sets.
    lam : float >= 0, default=0.01
        RAPS only: the penalty per rank beyond ``k_reg`` (``lam=0`` is APS).
    include_last_label : bool, default=True
        Non-randomised APS and RAPS: whether a set keeps the class whose
        cumulative score crosses the threshold (as in
        :class:`~skcalib.ConformalClassifier`).
    randomized : bool or "auto", default="auto"
        APS and RAPS only: randomised scores (``u`` uniform per sample), as
        in :class:`~skcalib.ConformalClassifier`; ``"auto"`` (its rule): True
        for APS and RAPS unless ``include_last_label=False``, False for LAC
        and top-k (``randomized_``). The default was False before issue 30.
    include_top : bool, default=False
        Add the most probable class (of :meth:`predict_proba`) to every set.
    calibration_size : float in (0, 1) or int, default=0.25
        ``cv="split"`` only: the fraction (or number) of samples held out to
        calibrate; stratified by class when every class has two samples.
    random_state : int, RandomState instance or None, default=None
        Draws the split of ``cv="split"`` and the seed of the uniforms of
        ``randomized=True``. An int ``cv`` is not shuffled.
    n_jobs : int or None, default=None
        Number of folds fitted in parallel (``joblib``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; the columns of :meth:`predict_set`.
    estimators_ : list of estimators
        The fitted clone of each fold (one with ``cv="split"``).
    folds_ : list of (ndarray, ndarray)
        The ``(train, test)`` indices of each fold.
    conformity_scores_ : ndarray of shape (n_samples,)
        The out-of-fold nonconformity score of each sample (NaN for the
        training samples of ``cv="split"``).
    fold_of_sample_ : ndarray of shape (n_samples,)
        The fold whose model scored each sample (-1: none).
    randomized_ : bool
        Whether the sets are randomised (``randomized`` resolved).
    n_features_in_ : int
        Number of features seen at fit (when the estimator records it).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when they are all strings).

    See Also
    --------
    skcalib.ConformalClassifier : Split-conformal sets for a fitted model.
    skcalib.metrics.set_coverage_score : Fraction of sets holding the true class.
    skcalib.metrics.size_stratified_coverage : Coverage by set size.

    Notes
    -----
    **CV+ rule** (Romano, Sesia & Candès 2020, Algorithm 2). Let
    :math:`\\hat\\pi^{-k}` be the model fitted without fold :math:`k`,
    :math:`k(i)` the fold of calibration sample :math:`i`, :math:`s_i =
    s(x_i, y_i; \\hat\\pi^{-k(i)})` its out-of-fold score and :math:`w_i`
    its weight (1 without ``sample_weight``; :math:`W = \\sum_i w_i`). Then

    .. math::

        C(x) = \\Big\\{ y : \\sum_i w_i\\,
        \\mathbf 1\\big[s_i < s(x, y; \\hat\\pi^{-k(i)})\\big]
        < (1 - \\alpha)(W + 1) \\Big\\}:

    a class is kept unless its score exceeds the scores of at least
    :math:`(1 - \\alpha)(W + 1)` calibration samples, each compared under
    its own fold's model; ties keep it. This is Vovk's (2015)
    cross-conformal predictor with p-value :math:`p_y(x) = (1 + \\sum_i
    w_i\\,\\mathbf 1[s_i \\ge s(x, y; \\hat\\pi^{-k(i)})]) / (W + 1)` and
    :math:`C(x) = \\{y : p_y(x) > \\alpha\\}`: rearranged, the two are the
    same inequality. In general, with :math:`C_t^{-k}(x)` the set that the
    rule of :class:`~skcalib.ConformalClassifier` gives at threshold
    :math:`t` under :math:`\\hat\\pi^{-k}`, :math:`y` is kept when
    :math:`\\sum_i w_i\\,\\mathbf 1[y \\notin C_{s_i}^{-k(i)}(x)] < (1 -
    \\alpha)(W + 1)`; for LAC, top-k and randomised scores this is the
    formula above, and for non-randomised APS and RAPS with
    ``include_last_label=True`` it keeps, like the split sets, the class
    whose cumulative score crosses the threshold (the test score is
    :math:`m_y(x)`, the mass of the more probable classes, plus the
    penalty of the previous rank, and ties leave the class out).

    **Guarantee.** For exchangeable samples and K folds of equal size
    :math:`n / K` (Barber et al. 2021, Theorem 4; Romano et al. 2020),

    .. math::

        \\mathbb P(Y \\in C(X)) \\ge 1 - 2\\alpha - \\min\\Big\\{
        \\frac{2(1 - 1/K)}{n/K + 1}, \\frac{1 - K/n}{K + 1}\\Big\\},

    and :math:`1 - 2\\alpha` for leave-one-out (the jackknife+). The factor 2
    is the worst case; coverage is near :math:`1 - \\alpha` for stable
    models (see the user guide). ``cv="split"``: the model is fitted on one
    part only, the rule above with one fold is the split-conformal
    threshold (the :math:`\\lceil (1 - \\alpha)(n + 1) \\rceil`-th smallest
    calibration score), and :math:`1 - \\alpha \\le \\mathbb P(Y \\in C(X))`
    exactly: the sets are those of :class:`~skcalib.ConformalClassifier`
    fitted on the calibration part's probabilities.
    With too few calibration samples (:math:`(1 - \\alpha)(W + 1) > W`)
    every set is full.

    **Several levels.** ``predict_set(X, alpha=[a1, a2, ...])`` (strictly
    increasing) returns the sets for each level at once; they are nested
    (the count is compared with a smaller level).

    **Other parts.** :meth:`predict_proba` is the mean of the fold models'
    probabilities (a class a fold's model never saw has probability 0
    under it); it is not calibrated and carries no guarantee. The
    uniforms of randomised sets are drawn as in
    :class:`~skcalib.ConformalClassifier`: for calibration samples by
    position (in the order of the folds' test parts, so that
    ``cv="split"`` gives that class's sets), for a new sample a hash of a
    seed, its position in ``X`` and its mean probabilities; given a seed,
    results depend on the row order. ``sample_weight`` (repetition
    counts) enters the count above and is passed to ``estimator.fit`` when
    it accepts it; the folds are drawn on the rows, so a weight of 2 is not
    the same as a duplicated row.

    References
    ----------
    .. [1] V. Vovk, "Cross-conformal predictors", Annals of Mathematics and
       Artificial Intelligence 74, 2015.
    .. [2] Y. Romano, M. Sesia and E. Candès, "Classification with valid and
       adaptive coverage", NeurIPS 2020.
    .. [3] R. F. Barber, E. J. Candès, A. Ramdas and R. J. Tibshirani,
       "Predictive inference with the jackknife+", Annals of Statistics 49,
       2021.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib import CrossConformalClassifier
    >>> X, y = make_classification(300, n_classes=3, n_informative=4,
    ...                            random_state=0)
    >>> cp = CrossConformalClassifier(LogisticRegression(), cv=5).fit(X, y)
    >>> cp.predict_set(X[:2]).shape
    (2, 3)
    >>> cp.predict_set(X[:2], alpha=[0.05, 0.1, 0.2]).shape
    (2, 3, 3)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        "cv": ["cv_object", StrOptions({"split"})],
        "method": ConformalClassifier._parameter_constraints["method"],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "k_reg": [Interval(Integral, 0, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "include_last_label": ["boolean"],
        "randomized": ["boolean", StrOptions({"auto"})],
        "include_top": ["boolean"],
        "calibration_size": [
            Interval(Real, 0, 1, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        estimator=None,
        *,
        cv=5,
        method="lac",
        alpha=0.1,
        k_reg=1,
        lam=0.01,
        include_last_label=True,
        randomized="auto",
        include_top=False,
        calibration_size=0.25,
        random_state=None,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.cv = cv
        self.method = method
        self.alpha = alpha
        self.k_reg = k_reg
        self.lam = lam
        self.include_last_label = include_last_label
        self.randomized = randomized
        self.include_top = include_top
        self.calibration_size = calibration_size
        self.random_state = random_state
        self.n_jobs = n_jobs

    # ---------------------------------------------------------------- fitting
    def _splits(self, X, y):
        # Imported here, not on `import skcalib` (tests/test_import_cost.py).
        from sklearn.model_selection import (
            ShuffleSplit,
            StratifiedShuffleSplit,
            check_cv,
        )

        n = _num_samples(X)
        if self.cv != "split":
            cv = check_cv(self.cv, y, classifier=True)
            return check_folds(cv.split(X, y), n, partition=True)
        counts = np.bincount(y)
        splitter = StratifiedShuffleSplit if counts.min() >= 2 else ShuffleSplit
        split = splitter(
            n_splits=1, test_size=self.calibration_size, random_state=self.random_state
        )
        return check_folds(split.split(X, y), n, partition=False)

    def _model(self):
        if self.estimator is not None:
            return self.estimator
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression()

    def _fit_kwargs(self, sample_weight, fit_params):
        kwargs = dict(fit_params)
        if sample_weight is None:
            return kwargs
        if has_fit_parameter(self._model(), "sample_weight"):
            kwargs["sample_weight"] = sample_weight
        else:
            warnings.warn(
                f"{type(self._model()).__name__}.fit does not accept "
                "sample_weight: the weights enter the conformal counts only.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        return kwargs

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit one model per fold and score every sample out of fold.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, as the classifier takes it.
        y : array-like of shape (n_samples,)
            Labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative repetition counts (see Notes).
        **fit_params : dict
            Parameters of the classifier's ``fit``, indexed per fold.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if namespace(X) is not None:  # fitted on the host
            return fit_on_host(
                self, self.fit, X, y, sample_weight=sample_weight, **fit_params
            )
        X, y, sample_weight = self._check_fit_input(X, y, sample_weight)
        self.randomized_ = resolve_randomized(
            self.randomized, self.method, self.include_last_label
        )
        check_set_options(self.method, self.randomized_, self.include_last_label)
        rng = check_random_state(self.random_state)
        seed, u_cal = None, None
        if self.randomized_:
            cal_seed, seed = (
                int(v) for v in rng.randint(np.iinfo(np.int32).max, size=2)
            )
        y_enc = np.searchsorted(self.classes_, y)
        self.folds_ = self._splits(X, y_enc)
        if self.randomized_:  # by position: the folds' test parts in order
            scored = np.concatenate([test for _, test in self.folds_])
            u_cal = np.empty(y.shape[0])
            u_cal[scored] = calibration_uniforms(scored.size, cal_seed)
        kwargs = self._fit_kwargs(sample_weight, fit_params)
        self.estimators_ = Parallel(n_jobs=self.n_jobs)(
            delayed(fit_on_rows)(self._model(), X, y, train, kwargs)
            for train, _ in self.folds_
        )
        n = y.shape[0]
        self.conformity_scores_ = np.full(n, np.nan)
        self.fold_of_sample_ = np.full(n, -1, dtype=np.intp)
        params = self._score_params()
        self._fold_scores = []
        for f, (model, (_, test)) in enumerate(
            zip(self.estimators_, self.folds_, strict=True)
        ):
            proba = fold_proba(model, _safe_indexing(X, test), self.classes_)
            u = None if u_cal is None else u_cal[test]
            s = label_scores(proba, y_enc[test], self.method, u, **params)
            self.conformity_scores_[test] = s
            self.fold_of_sample_[test] = f
            w = None if sample_weight is None else sample_weight[test]
            self._fold_scores.append(FoldScores(s, w))
        self._seed = seed
        self._total_weight = float(
            np.count_nonzero(self.fold_of_sample_ >= 0)
            if sample_weight is None
            else sample_weight[self.fold_of_sample_ >= 0].sum()
        )
        self._warn_if_too_few(self.alpha)
        first = self.estimators_[0]
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, attr):
                setattr(self, attr, getattr(first, attr))
        return self

    def _score_params(self):
        params = {"include_last_label": self.include_last_label}
        if self.method == "raps":
            params.update(k_reg=self.k_reg, lam=self.lam)
        return params

    def _check_fit_input(self, X, y, sample_weight):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        check_consistent_length(X, y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(
                f"y has one class only ({self.classes_.tolist()}); prediction "
                "sets need at least two classes."
            )
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, y, dtype=np.float64, ensure_non_negative=True
            )
        return X, y, sample_weight

    def _warn_if_too_few(self, alpha):
        alphas, _ = check_alphas(alpha)
        a = alphas[0]  # the smallest level needs the most samples
        if (1 - a) * (self._total_weight + 1) > self._total_weight * (1 + 1e-10):
            warnings.warn(
                f"alpha={a} needs at least {_min_samples(a)} calibration samples "
                f"(weighted), got {self._total_weight:g}: every prediction set "
                "holds every class.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    # ------------------------------------------------------------- prediction
    def _fold_probas(self, X):
        return [fold_proba(m, X, self.classes_) for m in self.estimators_]

    @follows_input
    def predict_proba(self, X):
        """Mean of the fold models' probabilities (not calibrated).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the classifier takes them.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``; rows sum to 1. float32 features
            give float32 probabilities (averaged in float64).
        """
        check_is_fitted(self)
        if namespace(X) is not None:
            return call_on_host(self, "predict_proba", X)
        proba = np.mean(self._fold_probas(X), axis=0, dtype=np.float64)
        if getattr(X, "dtype", None) == np.float32:
            proba = proba.astype(np.float32)
        return proba

    @follows_input
    def predict(self, X):
        """Most probable class of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the classifier takes them.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        check_is_fitted(self)
        if namespace(X) is not None:
            return call_on_host(self, "predict", X)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @follows_input
    def predict_set(self, X, alpha=None):
        """Cross-conformal (CV+) prediction sets, at one level or several.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the classifier takes them.
        alpha : float in (0, 1), list of floats or None, default=None
            Miscoverage level(s); ``None``: the ``alpha`` of the estimator.
            A list must be strictly increasing.

        Returns
        -------
        sets : ndarray of bool
            Of shape (n_samples, n_classes) for one level, (n_samples,
            n_classes, n_alpha) for a list. ``sets[i, k]`` (``sets[i, k, j]``
            for ``alpha[j]``) is True when ``classes_[k]`` is in the set of
            sample ``i``. The sets of a list
            are nested: ``sets[..., j + 1]`` is inside ``sets[..., j]``.
        """
        check_is_fitted(self)
        if namespace(X) is not None:
            return call_on_host(self, "predict_set", X, alpha)
        alphas, scalar = check_alphas(self.alpha if alpha is None else alpha)
        if alpha is not None:
            self._warn_if_too_few(alphas)
        probas = self._fold_probas(X)
        mean = np.mean(probas, axis=0)
        u = query_uniforms(mean, self._seed)
        params = self._score_params()
        below = np.zeros(mean.shape)
        for proba, fold in zip(probas, self._fold_scores, strict=True):
            below += fold.excluding(exclusion_conditions(proba, self.method, u, params))
        sets = sets_from_counts(below, self._total_weight, alphas)
        if self.include_top:
            sets[np.arange(mean.shape[0]), np.argmax(mean, axis=1)] = True
        return sets[:, :, 0] if scalar else sets

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._model()).input_tags
        tags.input_tags.sparse = inner.sparse
        tags.input_tags.allow_nan = inner.allow_nan
        tags.input_tags.string = inner.string
        tags.input_tags.categorical = inner.categorical
        return tags
