"""Cross-fitting: calibrate an unfitted classifier with any skcalib calibrator."""

import warnings
from numbers import Integral

import numpy as np
from sklearn import get_config
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    clone,
)
from sklearn.utils import Bunch, get_tags
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
    indexable,
)

from skcalib._base import BaseCalibrator
from skcalib._core.compat import (
    HasMethods,
    StrOptions,
    _check_sample_weight,
    _fit_context,
    _num_samples,
)
from skcalib._core.folds import fit_on_rows
from skcalib._core.warn import user_stacklevel
from skcalib._core.xp import namespace
from skcalib._core.xp.estimator import (
    call_on_host,
    fit_on_host,
    follows_input,
    take_classes,
)
from skcalib.calibration._cross_fit import (
    _CalibratedPair,
    _check_splits,
    _columns,
    _fit_pair,
    _kind,
    _laplace_fill,
    _out_of_fold,
    _two_columns,
    collect_warnings,
    fold_counts,
    recording_warnings,
    reemit_warnings,
)
from skcalib.calibration._temperature import TemperatureCalibrator

__all__ = ["CalibratedClassifier"]


# ------------------------------------------------------------ the estimator
class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Calibrate an unfitted classifier by cross-fitting, with any calibrator.

    The classifier is fitted on the training part of each split of ``cv``;
    the calibrator (any skcalib calibrator, in raw-score mode) is fitted on
    the scores it gives the held-out part, so it never sees scores of
    samples the classifier was trained on.

    * ``ensemble=True``: one (classifier, calibrator) pair per split; the
      calibrator wraps its classifier (wrapper mode) and is fitted on the
      test part. ``predict_proba`` is the mean of the pairs' probabilities.
    * ``ensemble=False``: the out-of-fold scores of all splits are pooled,
      one calibrator is fitted on them, and the classifier is refitted on all
      the data; ``predict_proba`` calibrates the refitted classifier's
      scores. Cheaper to predict with; the calibrator sees every sample.

    **Classes missing from a training part.** A classifier trained without
    class ``m`` cannot score it; giving ``m`` probability 0 would make the
    log-loss infinite on a sample of ``m``. The unknown classes get a floor
    and the known ones share the rest, in proportion to their calibrated
    probabilities:

    * ``ensemble=True``: the pair gives class ``m`` its add-one (Laplace)
      smoothed frequency in the held-out part of the split,
      ``(W_m + 1) / (W + K)`` (``W_m`` the weight of class ``m``, ``W`` the
      total weight of the part, ``K`` the number of classes); its calibrator
      is fitted on the held-out samples of the classes the classifier knows.
    * ``ensemble=False``: the out-of-fold scores of that split give class
      ``m`` the probability ``1 / (W_train + K)`` (Laplace's rule of
      succession for a count of zero in the training part), the known
      classes ``1 - sum`` of those times their own probabilities, before the
      pooled calibrator sees them.

    Parameters
    ----------
    estimator : classifier or None, default=None
        The classifier to cross-fit (cloned, never fitted itself). It needs
        ``decision_function`` or ``predict_proba``. ``None`` means
        ``LogisticRegression()``.
    calibrator : skcalib calibrator or None, default=None
        Any skcalib calibrator in raw-score mode (``estimator=None``), cloned
        for each split. ``None`` means ``TemperatureCalibrator()``.
    cv : int, cross-validation generator or iterable, default=5
        Splits, as in :func:`sklearn.model_selection.check_cv`: an int gives
        ``StratifiedKFold(cv)``; ``None`` means 5. Every split needs a
        non-empty training and test part with no sample in both (otherwise
        the calibrator would see scores of samples the classifier was trained
        on), and the test parts must partition the samples (each sample in
        exactly one test part): ``ShuffleSplit`` or repeated K-fold are
        refused. Anything else is a ``ValueError`` naming the split and the
        samples. With
        ``ensemble=True``, a split whose test part holds fewer than two of the
        classes its classifier knows cannot fit a calibrator: it is left out
        of the ensemble with a warning (an error if no split is left).
    ensemble : bool, default=True
        Average one calibrated pair per split (``True``), or pool the
        out-of-fold scores into one calibrator for a classifier refitted on
        all the data (``False``).
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        The classifier's method that gives scores. ``"auto"``: the
        calibrator's own ``response_method`` if it is not ``"auto"``, else
        ``decision_function`` if the classifier has it, else
        ``predict_proba`` (as ``CalibratedClassifierCV``). A calibrator whose
        own ``response_method`` names another method is an error.
    n_jobs : int or None, default=None
        Splits fitted in parallel with :class:`joblib.Parallel`; ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The sorted labels of ``y``.
    calibrated_classifiers_ : list
        One object per split (``ensemble=True``) or one in all
        (``ensemble=False``), with attributes ``estimator`` (the fitted
        classifier), ``calibrator`` (its fitted calibrator: wrapping the
        classifier for ``ensemble=True``, in raw-score mode on its scores for
        ``ensemble=False``), ``fill`` (probability given to each class the
        classifier does not know, 0 for the others) and a
        ``predict_proba(X)`` method.
    response_method_ : str
        The method of the classifier that gave the scores.
    n_features_in_ : int
        Number of features seen at fit (when the classifier has it).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when the classifier has them).

    See Also
    --------
    sklearn.calibration.CalibratedClassifierCV : the same scheme with
        ``"sigmoid"``, ``"isotonic"`` or ``"temperature"`` calibration.
    AutoCalibrator : a calibrator that chooses the calibration method; it can
        be the ``calibrator`` here.

    Notes
    -----
    ``sample_weight`` is used by the calibrators and passed to the
    classifier's ``fit``. With metadata routing enabled
    (``sklearn.set_config(enable_metadata_routing=True)``) it reaches the
    classifier only if the classifier requests it
    (``set_fit_request(sample_weight=True)``), as do the other ``fit``
    parameters, and ``groups`` reach the splitter. With routing disabled
    (the default), ``sample_weight`` is passed to the classifier if its
    ``fit`` accepts it (else a warning says it only weighs the calibration),
    and the other ``**fit_params`` are passed to it as they are; each is
    indexed like ``X`` for the training part of a split.

    Where it does the same thing as ``CalibratedClassifierCV`` it gives the
    same probabilities: binary Platt scaling (both fit Platt's smoothed
    targets; the solvers differ, Newton here and L-BFGS there, so the
    probabilities agree to about ``1e-6``), binary isotonic regression on a
    decision function (outputs clipped to ``[1e-12, 1 - 1e-12]`` here) and
    temperature scaling (scikit-learn >= 1.8). It differs on purpose for
    multiclass Platt and isotonic (one-vs-rest on each class's log-odds here,
    on the raw decision values there), for scores from ``predict_proba``
    (Platt and isotonic use their log-odds here, the probabilities
    themselves there) and for classes missing from a training part (a
    floor here, probability 0 from that pair there).

    References
    ----------
    .. [1] J. Platt, "Probabilistic outputs for support vector machines and
       comparisons to regularized likelihood methods", Advances in Large
       Margin Classifiers, 1999 (calibration on held-out scores).
    .. [2] B. Zadrozny and C. Elkan, "Transforming classifier scores into
       accurate multiclass probability estimates", KDD 2002.
    .. [3] A. Niculescu-Mizil and R. Caruana, "Predicting good probabilities
       with supervised learning", ICML 2005.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from skcalib import CalibratedClassifier, IsotonicCalibrator
    >>> X, y = make_classification(2000, n_informative=4, random_state=0)
    >>> clf = CalibratedClassifier(GaussianNB(), IsotonicCalibrator(), cv=3)
    >>> clf.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    >>> len(clf.calibrated_classifiers_)
    3
    """

    _parameter_constraints: dict = {
        "estimator": [
            HasMethods(["fit", "predict_proba"]),
            HasMethods(["fit", "decision_function"]),
            None,
        ],
        "calibrator": [BaseCalibrator, None],
        "cv": ["cv_object"],
        "ensemble": ["boolean"],
        "response_method": [StrOptions({"auto", "decision_function", "predict_proba"})],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        estimator=None,
        calibrator=None,
        *,
        cv=5,
        ensemble=True,
        response_method="auto",
        n_jobs=None,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble
        self.response_method = response_method
        self.n_jobs = n_jobs

    def _get_estimator(self):
        if self.estimator is not None:
            return self.estimator
        # sklearn.linear_model and .model_selection are imported where they
        # are used, not on `import skcalib` (tests/test_import_cost.py).
        from sklearn.linear_model import LogisticRegression

        estimator = LogisticRegression()
        if get_config().get("enable_metadata_routing", False):
            estimator.set_fit_request(sample_weight=True)
        return estimator

    def _get_calibrator(self):
        calibrator = (
            TemperatureCalibrator() if self.calibrator is None else self.calibrator
        )
        if calibrator.estimator is not None:
            raise ValueError(
                f"calibrator must be in raw-score mode (estimator=None); "
                f"{type(calibrator).__name__} wraps "
                f"{type(calibrator.estimator).__name__}. CalibratedClassifier "
                "hands it each fitted classifier."
            )
        return calibrator

    def _get_response_method(self, estimator, calibrator):
        method, own = self.response_method, calibrator.response_method
        if method == "auto":
            method = own
        elif own not in ("auto", method):
            raise ValueError(
                f"response_method={method!r} but the calibrator has "
                f"response_method={own!r}; set one of them only."
            )
        if method == "auto":
            method = (
                "decision_function"
                if hasattr(estimator, "decision_function")
                else "predict_proba"
            )
        if not hasattr(estimator, method):
            raise ValueError(
                f"response_method={method!r} but {type(estimator).__name__} has no "
                f"method {method!r}."
            )
        return method

    def _route(self, estimator, sample_weight, fit_params):
        if get_config().get("enable_metadata_routing", False):
            routed = process_routing(
                self, "fit", sample_weight=sample_weight, **fit_params
            )
            return routed.estimator.fit, routed.splitter.split
        fit_kwargs = dict(fit_params)
        if sample_weight is not None:
            if has_fit_parameter(estimator, "sample_weight"):
                fit_kwargs["sample_weight"] = sample_weight
            else:
                warnings.warn(
                    f"{type(estimator).__name__}.fit does not accept sample_weight: "
                    "the weights are used by the calibrators only.",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
        return fit_kwargs, {}

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Cross-fit the classifier and its calibrators.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, as the classifier takes it.
        y : array-like of shape (n_samples,)
            Labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, used by the calibrators and passed to the
            classifier (see Notes).
        **fit_params : dict
            Parameters of the classifier's ``fit`` (routed when metadata
            routing is enabled, see Notes).

        Returns
        -------
        self : object
            The fitted meta-estimator.
        """
        if namespace(X) is not None:  # fitted on the host
            return fit_on_host(
                self, self.fit, X, y, sample_weight=sample_weight, **fit_params
            )
        X, y, sample_weight = self._check_fit_input(X, y, sample_weight)
        estimator = self._get_estimator()
        calibrator = self._get_calibrator()
        method = self._get_response_method(estimator, calibrator)
        fit_kwargs, split_kwargs = self._route(estimator, sample_weight, fit_params)
        params = Bunch(fit_params=fit_kwargs, response_method=method)

        from sklearn.model_selection import check_cv

        cv = check_cv(self.cv, y, classifier=True)
        splits = _check_splits(cv.split(X, y, **split_kwargs), _num_samples(X))
        # The warnings of the inner fits are recorded where they run and said
        # once each, with the number of folds that raised them.
        fit_pairs = self._ensemble_pairs if self.ensemble else self._pooled_pairs
        pairs = fit_pairs(estimator, calibrator, X, y, splits, sample_weight, params)
        self.calibrated_classifiers_ = pairs
        self.response_method_ = method
        first = pairs[0].estimator
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, attr):
                setattr(self, attr, getattr(first, attr))
        return self

    def _check_fit_input(self, X, y, sample_weight):
        """Validated ``(X, y, sample_weight)``; sets ``classes_``."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        check_consistent_length(X, y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, y, dtype=np.float64, ensure_non_negative=True
            )
            weighted = np.unique(y_enc[sample_weight > 0])
        else:
            weighted = np.arange(self.classes_.size)
        if weighted.size < 2:
            raise ValueError(
                "y has one class only"
                + (" with positive sample_weight" if sample_weight is not None else "")
                + f" ({self.classes_[weighted].tolist()}); calibration needs at "
                "least two classes."
            )
        return X, y, sample_weight

    def _ensemble_pairs(
        self, estimator, calibrator, X, y, splits, sample_weight, params
    ):
        """``ensemble=True``: a (classifier, calibrator) pair per split."""
        results = Parallel(n_jobs=self.n_jobs)(
            delayed(recording_warnings)(
                _fit_pair,
                estimator,
                calibrator,
                X,
                y,
                self.classes_,
                split,
                sample_weight,
                params,
            )
            for split in enumerate(splits)
        )
        pairs = [r[0] for r in results]
        found = collect_warnings(("fold", r[1]) for r in results)
        reemit_warnings(found, lambda g: fold_counts(g, len(splits)))
        skipped = [p for p in pairs if isinstance(p, str)]
        pairs = [p for p in pairs if not isinstance(p, str)]
        if not pairs:
            raise ValueError(
                f"No split of cv can calibrate: {skipped[0]}. Use a stratified "
                "splitter (an int cv is one) or fewer splits."
            )
        if skipped:
            warnings.warn(
                f"{len(skipped)} of {len(splits)} splits are left out of the "
                f"ensemble: {'; '.join(skipped)}.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        return pairs

    def _pooled_pairs(self, estimator, calibrator, X, y, splits, sample_weight, params):
        """``ensemble=False``: the classifier fitted on all samples, one
        calibrator fitted on the pooled out-of-fold scores."""
        everything = np.arange(_num_samples(X))
        *oof, final = Parallel(n_jobs=self.n_jobs)(
            [
                delayed(recording_warnings)(
                    _out_of_fold,
                    estimator,
                    X,
                    y,
                    self.classes_,
                    train,
                    test,
                    sample_weight,
                    params,
                )
                for train, test in splits
            ]
            + [
                delayed(recording_warnings)(
                    fit_on_rows, estimator, X, y, everything, params.fit_params
                )
            ]
        )
        pair, pooled = recording_warnings(
            self._pooled_pair,
            final[0],
            calibrator,
            [o[0] for o in oof],
            splits,
            y,
            sample_weight,
            params.response_method,
        )
        found = collect_warnings(
            [("fold", o[1]) for o in oof]
            + [
                ("the classifier's fit on all samples", final[1]),
                ("the calibrator's fit on the out-of-fold scores", pooled),
            ]
        )
        reemit_warnings(found, lambda g: fold_counts(g, len(splits)))
        return [pair]

    def _pooled_pair(self, final, calibrator, oof, splits, y, sample_weight, method):
        n_samples, n_classes = y.shape[0], self.classes_.size
        if any(s.ndim == 2 and s.shape[1] > 1 for s in oof):
            # a binary split whose classifier missed a class gave two columns
            oof = [_two_columns(s, _kind(method)) for s in oof]
        scores = np.empty(
            (n_samples, *oof[0].shape[1:]), dtype=np.result_type(*oof, np.float32)
        )
        for (_, test), s in zip(splits, oof, strict=True):
            scores[test] = s
        cal = clone(calibrator)
        if cal.score_type == "auto":
            cal.set_params(score_type=_kind(method))
        cal.fit(scores, y, sample_weight=sample_weight)
        columns = _columns(final, self.classes_)
        total = n_samples if sample_weight is None else sample_weight.sum()
        return _CalibratedPair(
            final,
            cal,
            response_method=method,
            columns=columns,
            fill=_laplace_fill(columns, n_classes, total),
            pooled=True,
        )

    @follows_input
    def predict_proba(self, X):
        """Calibrated probabilities (the mean over the pairs with ``ensemble=True``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the classifier takes them.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``; rows sum to 1. float32 features give
            float32 probabilities (averaged in float64), as the calibrators
            do for float32 scores.
        """
        check_is_fitted(self)
        if namespace(X) is not None:
            return call_on_host(self, "predict_proba", X)
        pairs = self.calibrated_classifiers_
        proba = pairs[0].predict_proba(X).astype(np.float64)
        for pair in pairs[1:]:
            proba += pair.predict_proba(X)
        proba /= len(pairs)
        if getattr(X, "dtype", None) == np.float32:
            proba = proba.astype(np.float32)
        return proba

    @follows_input
    def predict(self, X):
        """Most probable class after calibration.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the classifier takes them.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)
        if (ns := namespace(proba)) is not None:
            return take_classes(ns, self.classes_, ns.xp.argmax(proba, axis=1))
        return self.classes_[np.argmax(proba, axis=1)]

    def get_metadata_routing(self):
        """Metadata routing of this object.

        ``sample_weight`` is consumed by the calibrators; the classifier's
        ``fit`` and the splitter's ``split`` get what they request.

        Returns
        -------
        routing : MetadataRouter
            The routing information.
        """
        return (
            MetadataRouter(owner=type(self).__name__)
            .add_self_request(self)
            .add(
                estimator=self._get_estimator(),
                method_mapping=MethodMapping().add(caller="fit", callee="fit"),
            )
            .add(
                splitter=self.cv,
                method_mapping=MethodMapping().add(caller="fit", callee="split"),
            )
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._get_estimator()).input_tags
        tags.input_tags.sparse = inner.sparse
        tags.input_tags.allow_nan = inner.allow_nan
        tags.input_tags.string = inner.string
        tags.input_tags.categorical = inner.categorical
        return tags
