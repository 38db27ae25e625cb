"""Multi-label calibration: a binary calibrator per label, or one shared."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from skcalib._core.compat import HasMethods, _check_sample_weight, _fit_context
from skcalib._core.multilabel import check_label_indicator, positive_proba
from skcalib._core.score_cache import cached_scores
from skcalib.calibration._platt import PlattCalibrator

__all__ = ["MultiLabelCalibrator"]


class MultiLabelCalibrator(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Calibrate the probability of each label of a multi-label classifier.

    A multi-label target is a label-indicator matrix ``y`` of shape
    ``(n_samples, n_labels)`` (``y[i, j] == 1`` when row ``i`` has label
    ``j``). Each label is a binary problem of its own, so a multi-label
    model is calibrated by binary calibrators, the reduction of Zadrozny
    and Elkan [1]_:

    * ``shared=False`` (default): one clone of ``calibrator`` per label,
      fitted on that label's score column and target column. Label ``j``'s
      calibrated probability is exactly what the binary calibrator fitted
      on column ``j`` alone gives.
    * ``shared=True``: one clone fitted on all labels pooled, the score
      columns stacked into one column of ``n_samples * n_labels`` scores
      (and the targets likewise), then applied to every column: e.g. one
      temperature for all labels [2]_. Fewer parameters, so rare labels
      borrow strength from the others.

    Probabilities are per label and do not sum to 1 across labels.

    Parameters
    ----------
    calibrator : estimator or None, default=None
        The binary calibrator, in raw-score mode (its ``estimator`` None):
        any skcalib calibrator, or a classifier with ``fit`` and
        ``predict_proba`` taking a one-column ``X`` and ``y`` in {0, 1}.
        None means :class:`~skcalib.PlattCalibrator()`. It is cloned, never
        fitted itself. The clones receive the scores of one label as a
        column of shape ``(n_samples, 1)`` (``shared=True``: of
        ``(n_samples * n_labels, 1)``), so the binary calibrator's own
        rules apply to that column: with ``score_type="auto"``, a column
        whose values all lie in [0, 1] holds probabilities, any other one
        logits (:class:`~skcalib._base.BaseCalibrator`). In raw-score mode,
        labels whose columns are read as different score types are an
        error (set the calibrator's ``score_type``); in wrapper mode the
        scores are probabilities, and a calibrator with
        ``score_type="auto"`` is told so (``score_type="probability"``).
    shared : bool, default=False
        Whether one calibrator is fitted on all labels pooled (True) or one
        per label (False).
    estimator : classifier or None, default=None
        None (raw-score mode): ``X`` holds the scores, one column per
        label, logits or probabilities. Otherwise (wrapper mode) a *prefit*
        multi-label classifier whose ``predict_proba`` gives them, e.g.
        :class:`~sklearn.multioutput.MultiOutputClassifier`,
        :class:`~sklearn.multiclass.OneVsRestClassifier`,
        :class:`~sklearn.neighbors.KNeighborsClassifier` or
        :class:`~sklearn.ensemble.RandomForestClassifier` fitted on an
        indicator ``y``; ``X`` then holds its features. It is never refit,
        and :func:`sklearn.clone` keeps it as it is. Its ``predict_proba``
        may be an ``(n, L)`` matrix or a list of ``L`` arrays ``(n, c_j)``,
        one per label, whose class-1 column is found by
        ``estimator.classes_[j]``, never by position.

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        The label of each column: the wrapped estimator's ``classes_`` when
        it is one 1-D array of length ``n_labels``
        (:class:`~sklearn.multiclass.OneVsRestClassifier`), else the label
        indices ``0, ..., n_labels - 1`` (a list of per-label
        ``classes_``, as :class:`~sklearn.multioutput.MultiOutputClassifier`
        has, names the classes of each label, not the labels).
    n_labels_ : int
        Number of labels (columns of ``y``).
    calibrators_ : list of estimator, or estimator
        ``shared=False``: the fitted clone of each label, in column order;
        ``shared=True``: the one fitted clone.
    n_features_in_ : int
        Raw-score mode: ``n_labels_``; wrapper mode: the estimator's.
    feature_names_in_ : ndarray of str
        Names of the columns of ``X`` seen at fit, when they have names.

    See Also
    --------
    PlattCalibrator, IsotonicCalibrator, TemperatureCalibrator : binary
        calibrators to use per label.
    sklearn.calibration.CalibratedClassifierCV : refuses multi-label ``y``.

    Notes
    -----
    :meth:`predict` returns the ``(n_samples, n_labels)`` indicator of the
    labels whose calibrated probability exceeds 0.5 (exactly 0.5 is not
    predicted, as in :class:`~sklearn.multiclass.OneVsRestClassifier`), so
    its :meth:`score` is the subset accuracy.

    With ``shared=False`` a label that is always 0 or always 1 in the
    calibration data cannot be calibrated and is an error (use
    ``shared=True`` or drop the label); with ``shared=True`` only all
    labels constant is. ``sample_weight`` weighs rows: each binary fit
    gets it as given (``shared=True``: repeated for every label).

    References
    ----------
    .. [1] B. Zadrozny and C. Elkan, "Transforming classifier scores into
       accurate multiclass probability estimates", KDD 2002.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On calibration
       of modern neural networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import MultiLabelCalibrator, TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 3))
    >>> y = (rng.random((2000, 3)) < 1 / (1 + np.exp(-z))).astype(int)
    >>> logits = 3.0 * z  # three times over-confident
    >>> cal = MultiLabelCalibrator(TemperatureCalibrator()).fit(logits, y)
    >>> cal.predict_proba(logits[:2]).shape
    (2, 3)
    >>> [round(float(c.temperature_), 1) for c in cal.calibrators_]
    [2.8, 3.2, 3.0]
    >>> one = MultiLabelCalibrator(TemperatureCalibrator(), shared=True)
    >>> round(float(one.fit(logits, y).calibrators_.temperature_), 1)
    3.0
    """

    _parameter_constraints: dict = {
        "calibrator": [HasMethods(["fit", "predict_proba"]), None],
        "shared": ["boolean"],
        "estimator": [HasMethods(["predict_proba"]), None],
    }

    def __init__(self, calibrator=None, shared=False, estimator=None):
        self.calibrator = calibrator
        self.shared = shared
        self.estimator = estimator

    def __sklearn_clone__(self):
        """Clone the parameters but keep a wrapped prefit estimator as it is
        (it is treated as frozen, like the single-label calibrators do)."""
        if self.estimator is None:
            return super().__sklearn_clone__()
        params = self.get_params(deep=False)
        estimator = params.pop("estimator")
        params = {k: clone(v, safe=False) for k, v in params.items()}
        return type(self)(estimator=estimator, **params)

    # ----------------------------------------------------------------- scores
    def _label_scores(self, X, *, reset):
        """The ``(n, L)`` scores of each label: ``X`` itself (raw-score
        mode, validated) or the estimator's class-1 probabilities."""
        name = type(self).__name__
        if self.estimator is None:
            X = validate_data(
                self,
                X,
                reset=reset,
                dtype=[np.float64, np.float32],
                ensure_all_finite=False,
            )
            source = "X"
        else:
            check_is_fitted(self.estimator)
            if reset:
                for attr in ("n_features_in_", "feature_names_in_"):
                    if hasattr(self, attr):
                        delattr(self, attr)
                    if hasattr(self.estimator, attr):
                        setattr(self, attr, getattr(self.estimator, attr))
            proba = cached_scores(self.estimator, "predict_proba", X)
            X = positive_proba(proba, self.estimator)
            source = f"{type(self.estimator).__name__}.predict_proba(X)"
        bad = ~np.isfinite(X)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(
                f"{name}: {source} has a non-finite score (NaN or inf) "
                f"{X[i, j].item()!r} at row {i}, label {j}; scores must be finite."
            )
        if not reset and X.shape[1] != self.n_labels_:
            raise ValueError(
                f"{name}: {source} has {X.shape[1]} labels (columns) but the "
                f"calibrator was fitted on {self.n_labels_}."
            )
        return X

    def _base_calibrator(self):
        """An unfitted clone of the binary calibrator for this mode."""
        base = PlattCalibrator() if self.calibrator is None else clone(self.calibrator)
        params = base.get_params(deep=False)
        if params.get("estimator") is not None:
            raise ValueError(
                f"calibrator={base!r} wraps an estimator; the binary calibrator "
                "must be in raw-score mode (estimator=None): the scores of each "
                "label are given to it."
            )
        if self.estimator is not None and params.get("score_type") == "auto":
            base.set_params(score_type="probability")  # predict_proba's scores
        return base

    # ------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the binary calibrator(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_labels) or (n_samples, n_features)
            Raw-score mode: the score of each label (logits or
            probabilities). Wrapper mode: the features of ``estimator``.
        y : array-like of shape (n_samples, n_labels)
            Label-indicator matrix, entries 0 or 1.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, passed to each binary fit.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None; pass a label-indicator matrix of shape (n_samples, "
                "n_labels)."
            )
        scores = self._label_scores(X, reset=True)
        y = check_label_indicator(y, name="y")
        n, n_labels = scores.shape
        if y.shape[0] != n:
            raise ValueError(f"X gives {n} samples but y has {y.shape[0]}.")
        if y.shape[1] != n_labels:
            source = "X" if self.estimator is None else "the estimator's scores"
            raise ValueError(
                f"{source} has {n_labels} label columns but y has {y.shape[1]}; "
                "raw scores need one column per label, in the order of y's."
            )
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, scores)
        base = self._base_calibrator()
        if self.shared:
            self.calibrators_ = self._fit_shared(base, scores, y, sample_weight)
        else:
            self.calibrators_ = self._fit_per_label(base, scores, y, sample_weight)
        self.n_labels_ = n_labels
        self.classes_ = self._label_classes(n_labels)
        return self

    def _fit_per_label(self, base, scores, y, sample_weight):
        n = y.shape[0]
        counts = y.sum(axis=0, dtype=np.int64)
        for j in np.flatnonzero((counts == 0) | (counts == n)):
            value = int(counts[j] == n)
            raise ValueError(
                f"label {j} is {value} in all {n} calibration rows ({counts[j]} "
                f"positives); a binary calibrator cannot be fitted on one class. "
                "Use shared=True (one calibrator for all labels) or drop the label."
            )
        kw = {} if sample_weight is None else {"sample_weight": sample_weight}
        fitted = [
            clone(base).fit(scores[:, [j]], y[:, j], **kw) for j in range(y.shape[1])
        ]
        if self.estimator is None:
            _check_same_score_type(fitted)
        return fitted

    def _fit_shared(self, base, scores, y, sample_weight):
        pooled = y.ravel(order="F")
        positives = int(pooled.sum(dtype=np.int64))
        if positives in (0, pooled.size):
            raise ValueError(
                f"every label is {int(positives > 0)} in all {y.shape[0]} "
                "calibration rows; there is nothing to calibrate."
            )
        kw = {}
        if sample_weight is not None:
            kw["sample_weight"] = np.tile(sample_weight, y.shape[1])
        return base.fit(scores.reshape(-1, 1, order="F"), pooled, **kw)

    def _label_classes(self, n_labels):
        classes = getattr(self.estimator, "classes_", None)
        if isinstance(classes, np.ndarray) and classes.shape == (n_labels,):
            return classes
        return np.arange(n_labels)

    # --------------------------------------------------------------- predict
    def predict_proba(self, X):
        """Calibrated probability of each label.

        Parameters
        ----------
        X : array-like
            Scores (raw-score mode) or features (wrapper mode), as in
            :meth:`fit`.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels)
            ``proba[i, j]``: the probability that row ``i`` has label ``j``
            (rows need not sum to 1).
        """
        check_is_fitted(self)
        scores = self._label_scores(X, reset=False)
        if self.shared:
            p = _positive_column(self.calibrators_, scores.reshape(-1, 1, order="F"))
            return p.reshape(scores.shape, order="F")
        return np.column_stack(
            [
                _positive_column(c, scores[:, [j]])
                for j, c in enumerate(self.calibrators_)
            ]
        )

    def transform(self, X):
        """Calibrated probabilities; the same as :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict_proba`.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels)
        """
        return self.predict_proba(X)

    def predict(self, X):
        """Predict the labels whose calibrated probability exceeds 0.5.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict_proba`.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, n_labels)
            Label-indicator matrix of ints (1: the label is predicted).
        """
        return (self.predict_proba(X) > 0.5).astype(int)

    def get_feature_names_out(self, input_features=None):
        """Return the names of the output columns: ``proba_<label>``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored (the outputs are named after the labels).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "classes_")
        return np.asarray([f"proba_{c}" for c in self.classes_], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.two_d_labels = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.multi_label = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        if self.estimator is not None:
            tags.input_tags = self.estimator.__sklearn_tags__().input_tags
        return tags


def _positive_column(calibrator, column):
    """The probability of class 1 from a fitted binary calibrator, found by
    its ``classes_``."""
    proba = np.asarray(calibrator.predict_proba(column))
    return proba[:, np.flatnonzero(np.asarray(calibrator.classes_) == 1)[0]]


def _check_same_score_type(fitted):
    """Raw-score mode: the per-label clones must agree on what the scores
    are (one model's columns are all logits or all probabilities)."""
    kinds = [getattr(c, "score_type_", None) for c in fitted]
    if len({k for k in kinds if k is not None}) > 1:
        by_kind = {}
        for j, k in enumerate(kinds):
            by_kind.setdefault(k, []).append(j)
        said = "; ".join(f"labels {v} as {k!r}" for k, v in by_kind.items())
        raise ValueError(
            f"the score columns were read as different score types ({said}): "
            "a column of logits that all lie in [0, 1] reads as probabilities. "
            "Set the calibrator's score_type ('logit' or 'probability')."
        )
