"""The one base class of every skcalib calibrator.

It reads scores (raw scores given as ``X``, or the scores of a prefit
classifier given as ``estimator``), encodes labels, validates input once, and
turns scores into normalised log-probabilities. Subclasses only fit and apply
a map on log-probabilities.
"""

from abc import abstractmethod

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_array,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from skcalib._backends.chunks import ChunkedData
from skcalib._backends.engines import get as get_engine
from skcalib._core.compat import (
    HasMethods,
    StrOptions,
    _check_feature_names_in,
    _fit_context,
)
from skcalib._core.inputs import input_kind
from skcalib._core.labels import check_classes, encode_fit_labels, unique_inverse
from skcalib._core.score_cache import cached_scores
from skcalib._core.score_check import check_against_fit, reads_as_probability_rows
from skcalib._core.scores import Scores, all_finite, finite_range, resolve_score_type
from skcalib._core.weights import _checked_weights
from skcalib._core.xp import namespace
from skcalib._core.xp.estimator import (
    call_on_host,
    fit_native,
    fit_on_host,
    follows_input,
    predict_proba_native,
    take_classes,
)

__all__ = ["BaseCalibrator"]


class BaseCalibrator(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Shared machinery of all calibrators (not for direct use).

    Two ways in:

    * **raw-score mode** (``estimator=None``): ``X`` holds scores, one column
      per class in the order of ``classes_`` (sorted labels of ``y``), or, for
      two classes, one column (or a 1-D array) with the score of the positive
      class ``classes_[1]``.
    * **wrapper mode** (``estimator=clf``): ``X`` holds the features of a
      *prefit* classifier; its ``decision_function`` or ``predict_proba`` gives
      the scores. The classifier is never refit, and :func:`sklearn.clone`
      keeps it as it is (it is treated as frozen, like
      :class:`sklearn.frozen.FrozenEstimator`), so the calibrator works inside
      ``GridSearchCV`` and ``cross_validate``.

    ``score_type="auto"`` rule (decided once, at ``fit``, stored in
    ``score_type_``): in wrapper mode, ``"logit"`` for ``decision_function``
    and ``"probability"`` for ``predict_proba``. In raw-score mode, the scores
    are probabilities when every value lies in ``[0, 1]`` and, with two or
    more columns, every row sums to 1 (within ``sqrt(eps)`` of the dtype);
    otherwise they are logits (decision values count as logits: a binary
    decision value is the log-odds of the positive class). Raw scores that
    contradict ``score_type_`` at predict time: see
    :func:`~skcalib._core.score_check.check_fitted_score_type`. ``classes``
    (raw-score mode): the class of each column, in order; ``y`` may miss some.
    """

    _parameter_constraints: dict = {
        "estimator": [
            HasMethods(["predict_proba"]),
            HasMethods(["decision_function"]),
            None,
        ],
        "score_type": [StrOptions({"auto", "logit", "probability"})],
        "response_method": [StrOptions({"auto", "decision_function", "predict_proba"})],
        "classes": ["array-like", None],
    }

    #: ``fit`` divides ``sample_weight`` by its maximum (results invariant to
    #: the scale of the weights, no overflow). A method whose result depends
    #: on the weight total by design (Platt's smoothed targets) sets False
    #: and receives the validated weights as given.
    _rescale_sample_weight = True

    #: What a chunk-capable class needs of its parameters to fit chunks
    #: (e.g. ``"uniform bins"``), shown next to its name in the message that
    #: lists the classes which can (:func:`chunk_capable_names`); None: nothing.
    _chunk_fit_condition = None

    #: Whether raw-score mode computes in the namespace of array-API inputs
    #: (``array_api_dispatch=True``; ``_fit_xp`` and ``_predict_proba_xp``).
    #: False: such inputs are fitted and predicted by the numpy code on the
    #: host, with one transfer each way (:mod:`skcalib._core.xp.estimator`).
    _array_api_native = False

    # ------------------------------------------------------------- capability
    @classmethod
    def _supports_chunks(cls):
        """Whether :meth:`fit_chunks` (and :meth:`fit` on Dask arrays) can
        fit this class, read from its code.

        A class can when it implements ``_fit_chunks(data)`` and that
        implementation is at least as specific as its ``_fit``: a subclass
        that changes ``_fit`` but inherits ``_fit_chunks`` would fit another
        model on chunks, so it cannot (until it implements its own).
        """
        return _implements_after(cls, "_fit_chunks", "_fit")

    # ------------------------------------------------------------------ clone
    def __sklearn_clone__(self):
        """Clone the parameters but keep a wrapped prefit estimator as it is.

        A deep clone of ``estimator`` would drop its fitted state; the
        calibrator treats it as frozen, like ``FrozenEstimator``.
        """
        if self.estimator is None:
            return super().__sklearn_clone__()
        params = self.get_params(deep=False)
        estimator = params.pop("estimator")
        params = {k: clone(v, safe=False) for k, v in params.items()}
        return type(self)(estimator=estimator, **params)

    # ----------------------------------------------------------------- scores
    def _response_method(self):
        if self.response_method != "auto":
            return self.response_method
        if hasattr(self.estimator, "decision_function"):
            return "decision_function"
        return "predict_proba"

    def _raw_scores(self, X, *, reset):
        """Validated finite float scores of shape (n,) or (n, k), their kind
        and their ``(min, max)``.

        The finiteness check is :func:`~skcalib._core.scores.finite_range`'s min
        and max, which the probability checks reuse (one pass over the
        scores fewer than ``check_array``'s own check).
        """
        name = type(self).__name__
        if self.estimator is None:
            # 1-D scores (binary, positive class) are welcome; validate_data
            # only records n_features_in_ for 2-D input.
            X = validate_data(
                self,
                X,
                reset=reset,
                ensure_2d=_ndim(X) != 1,
                dtype=[np.float64, np.float32],
                ensure_min_samples=1,
                ensure_all_finite=False,
            )
            if X.ndim != 1 and X.ndim != 2:
                raise ValueError(
                    f"X must be 1-D or 2-D scores in raw-score mode, got ndim={X.ndim}."
                )
            return X, None, finite_range(X, input_name="X", estimator_name=name)
        check_is_fitted(self.estimator)
        if reset:
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self.estimator, attr):
                    setattr(self, attr, getattr(self.estimator, attr))
        method = self._response_method()
        if not hasattr(self.estimator, method):
            raise ValueError(
                f"response_method={method!r} but {type(self.estimator).__name__} "
                f"has no method {method!r}."
            )
        # Through the ScoreCache of an open ``with`` block, if any.
        scores = cached_scores(self.estimator, method, X)
        source = f"{type(self.estimator).__name__}.{method}(X)"
        scores = check_array(
            scores,
            ensure_2d=False,
            dtype=[np.float64, np.float32],
            ensure_all_finite=False,
            input_name=source,
        )
        value_range = finite_range(scores, input_name=source, estimator_name=name)
        kind = "logit" if method == "decision_function" else "probability"
        return scores, kind, value_range

    def _check_columns(self, scores, n_classes):
        n_cols = 1 if scores.ndim == 1 else scores.shape[1]
        if n_cols == n_classes or (n_classes == 2 and n_cols == 1):
            return
        source = (
            "X"
            if self.estimator is None
            else f"the scores of {type(self.estimator).__name__}"
        )
        raise ValueError(
            f"{source} has {n_cols} column(s) but there are {n_classes} classes "
            f"{self.classes_.tolist()}; raw scores need one column per class (in the "
            "order of classes_) or, for two classes, one column with the score of "
            "the positive class. If y misses classes that X has columns for, pass "
            "classes= (the class of each column, in column order)."
        )

    def _scores(self, scores, kind, value_range, *, reset):
        """Wrap validated raw scores (deciding ``score_type_`` at fit);
        the arguments are :meth:`_raw_scores`'s result.

        The decision is :func:`~skcalib._core.scores.resolve_score_type`'s: at
        fit from ``score_type`` (``"auto"``: from the response method in
        wrapper mode, else from the values); at predict time the fitted
        ``score_type_`` is checked again (rounded probability rows are
        renormalised, other rows that miss 1 are an error).
        """
        n_classes = len(self.classes_)
        self._check_columns(scores, n_classes)
        if reset:
            requested = self.score_type if self.score_type != "auto" else kind
        else:
            requested = self.score_type_
            if self.estimator is None:
                check_against_fit(scores, self, value_range)
        decision = resolve_score_type(
            scores,
            requested or "auto",
            value_range=value_range,
            name=(
                "X"
                if self.estimator is None
                else f"the scores of {type(self.estimator).__name__}"
            ),
            warn_logit=reset and self.score_type == "logit",
        )
        if reset:
            self.score_type_ = decision.score_type
            self.n_renormalized_rows_ = decision.n_renormalized
            # explicit logits that look like probabilities were warned about
            # at fit; predict does not warn again for scores like them
            self._fit_rows_were_probabilities_ = (
                self.estimator is None
                and decision.score_type == "logit"
                and reads_as_probability_rows(scores, value_range)
            )
        return Scores(decision.scores, decision.score_type, n_classes)

    # ----------------------------------------------------------------- labels
    def _given_classes(self):
        """The checked ``classes=`` parameter (None when not given)."""
        classes = getattr(self, "classes", None)
        return None if classes is None else check_classes(classes)

    def _encode_y(self, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        if not (type(y) is np.ndarray and y.ndim == 1):  # else nothing to do
            y = column_or_1d(y, warn=True)
        if y.dtype.kind == "f" and y.size and not all_finite(y):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(
                f"y must hold class labels; y[{bad}] is {y[bad].item()!r}."
            )
        if y.dtype.kind not in "iub":  # integer labels are always valid classes
            check_classification_targets(y)
        estimator = self.estimator
        return encode_fit_labels(
            y,
            given=self._given_classes(),
            estimator_classes=None if estimator is None else estimator.classes_,
            estimator_name=type(estimator).__name__,
        )

    # -------------------------------------------------------------------- api
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the calibration map.

        Parameters
        ----------
        X : array-like
            Raw-score mode: the scores (logits, decision values or
            probabilities), of shape (n_samples,) or (n_samples, n_classes).
            Wrapper mode: the input (features) of ``estimator``.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; ``None`` weighs every sample 1.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        if (engine := input_kind(X, y, sample_weight)) != "numpy":
            data = ChunkedData.from_engine(engine, X, y, sample_weight)
            return self._fit_chunked(data)
        if (ns := namespace(X)) is not None:
            if self._array_api_native and self.estimator is None:
                return fit_native(self, ns, X, y, sample_weight)
            return fit_on_host(self, self.fit, X, y, sample_weight=sample_weight)
        scores, kind, value_range = self._raw_scores(X, reset=True)
        self.classes_, y_enc = self._encode_y(y)
        if scores.shape[0] != y_enc.shape[0]:
            raise ValueError(
                f"X gives {scores.shape[0]} samples but y has {y_enc.shape[0]}."
            )
        if sample_weight is not None:
            sample_weight = _checked_weights(
                sample_weight, y_enc, rescale=self._rescale_sample_weight
            )
        self._fit(
            self._scores(scores, kind, value_range, reset=True), y_enc, sample_weight
        )
        return self

    @_fit_context(prefer_skip_nested_validation=False)
    def fit_chunks(self, chunks):
        """Fit on raw scores that arrive in chunks, without holding them all.

        Each pass over the data reads every chunk once and keeps only small
        per-chunk statistics, added up in chunk order: the fitted map equals
        the one :meth:`fit` gives on the concatenated chunks (up to float64
        rounding of the sums; see the calibrator's notes for the methods
        that approximate). :meth:`fit` does the same when given Dask arrays.
        Raw-score mode only.

        Parameters
        ----------
        chunks : list of tuple, or callable
            Chunks ``(X, y)`` or ``(X, y, sample_weight)``, each as
            :meth:`fit` takes them, as a list or tuple, or a callable
            returning a new iterable of chunks at each call (the data are
            read several times: about 2 + the number of Newton steps).

        Returns
        -------
        self : object
            The fitted calibrator.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib import TemperatureCalibrator
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 3, 3000)
        >>> logits = 3.0 * (rng.normal(size=(3000, 3)) + np.eye(3)[y])
        >>> chunks = [(logits[i : i + 1000], y[i : i + 1000]) for i in (0, 1000)]
        >>> chunks.append((logits[2000:], y[2000:]))
        >>> a = TemperatureCalibrator().fit_chunks(chunks).temperature_
        >>> b = TemperatureCalibrator().fit(logits, y).temperature_
        >>> bool(abs(a - b) < 1e-8 * b)
        True
        """
        return self._fit_chunked(ChunkedData.from_chunks(chunks))

    def _fit_chunked(self, data):
        name = type(self).__name__
        if self.estimator is not None:
            raise ValueError(
                f"{name} fits chunks or Dask arrays of raw scores only "
                "(estimator=None); compute the estimator's scores chunk by chunk "
                "first."
            )
        if not type(self)._supports_chunks():
            *others, last = chunk_capable_names() or ["no calibrator"]
            can = f"{', '.join(others)} and {last}" if others else last
            raise TypeError(
                f"{name} cannot be fitted in chunks (nor on Dask arrays); {can} can."
            )
        given = self._given_classes()
        data.survey(self.score_type, self._rescale_sample_weight, classes=given)
        self.classes_ = data.classes
        n_classes = data.classes.size
        if data.present.size < 2:
            raise ValueError(
                f"y has one class only ({data.present[0]!r}); calibration needs at "
                "least two classes."
            )
        if not data.total_weight > 0:
            raise ValueError("All sample weights are zero; there is nothing to fit.")
        if not (
            data.n_columns == n_classes or (n_classes == 2 and data.n_columns == 1)
        ):
            raise ValueError(
                f"X has {data.n_columns} column(s) but there are {n_classes} classes "
                f"{data.classes.tolist()}; raw scores need one column per class."
            )
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self, attr):
                delattr(self, attr)
        if data.n_columns > 1:
            self.n_features_in_ = data.n_columns
        self.score_type_ = data.score_type
        self._fit_rows_were_probabilities_ = False  # the survey sees no rows
        self.n_renormalized_rows_ = data.n_renormalized
        self._fit_chunks(data)
        return self

    def _engine_apply(self, engine, X, method):
        """``method`` (``"predict_proba"``, ``"predict"``) of the blocks of an
        engine's ``X``, lazily (see :mod:`skcalib._backends.engines`)."""
        dtype, columns = self.classes_.dtype, "prediction"
        if method != "predict":  # float32 scores give float32 (dtype None)
            dtype, columns = None, [f"proba_{c}" for c in self.classes_]
        func = getattr(self, method)
        return get_engine(engine).apply(X, func, columns=columns, dtype=dtype)

    @follows_input
    def predict_proba(self, X):
        """Calibrated probabilities.

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode), as in
            :meth:`fit`.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_`` (two columns for binary
            problems). float32 input gives float32 output.
        """
        check_is_fitted(self)
        if (engine := input_kind(X)) != "numpy":
            return self._engine_apply(engine, X, "predict_proba")
        if (ns := namespace(X)) is not None:
            if self._array_api_native and self.estimator is None:
                return predict_proba_native(self, ns, X)
            return call_on_host(self, "predict_proba", X)
        return self._predict_proba(
            self._scores(*self._raw_scores(X, reset=False), reset=False)
        )

    def transform(self, X):
        """Calibrated probabilities; the same as :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict_proba`.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self.predict_proba(X)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict_proba`.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        proba = self.predict_proba(X)
        if (ns := namespace(proba)) is not None:
            return ns.xp.log(proba)
        with np.errstate(divide="ignore"):
            return np.log(proba)

    @follows_input
    def predict(self, X):
        """Most probable class after calibration.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict_proba`.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        check_is_fitted(self)
        if (engine := input_kind(X)) != "numpy":
            return self._engine_apply(engine, X, "predict")
        proba = self.predict_proba(X)
        if (ns := namespace(proba)) is not None:
            return take_classes(ns, self.classes_, ns.xp.argmax(proba, axis=1))
        return self.classes_[np.argmax(proba, axis=1)]

    def get_feature_names_out(self, input_features=None):
        """Return the names of the output columns: ``proba_<class>``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against ``feature_names_in_`` when given.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "classes_")
        if self.estimator is None and hasattr(self, "n_features_in_"):
            _check_feature_names_in(self, input_features)
        return np.asarray([f"proba_{c}" for c in self.classes_], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        if getattr(self, "estimator", None) is not None:
            inner = self.estimator.__sklearn_tags__()
            tags.input_tags = inner.input_tags
        return tags

    # ------------------------------------------------------------- subclasses
    @abstractmethod
    def _fit(self, scores, y, sample_weight):
        """Fit on :class:`~skcalib._core.scores.Scores`, encoded labels and weights."""

    @abstractmethod
    def _predict_proba(self, scores):
        """Calibrated probabilities (n, K) from
        :class:`~skcalib._core.scores.Scores`."""


def _implements_after(cls, method, base_method):
    """Whether ``cls`` has ``method`` (not None), defined in a class at least
    as specific in ``cls``'s MRO as the one defining ``base_method``."""
    if getattr(cls, method, None) is None:
        return False
    owner = next(c for c in cls.__mro__ if method in vars(c))
    base_owner = next((c for c in cls.__mro__ if base_method in vars(c)), object)
    return issubclass(owner, base_owner)


def _skcalib_calibrators():
    """skcalib's public calibrator classes (public names of skcalib modules),
    found among the subclasses of :class:`BaseCalibrator`, sorted by name.

    Every module defining one is imported by then: importing any skcalib
    module imports the ``skcalib`` facade, which imports them all.
    """
    found, todo = {}, [BaseCalibrator]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            public = not sub.__name__.startswith("_")
            if public and sub.__module__.partition(".")[0] == "skcalib":
                found[sub.__name__] = sub
    return [found[name] for name in sorted(found)]


def chunk_capable_names():
    """Names of skcalib's calibrators that fit chunks and Dask arrays (each
    with its ``_chunk_fit_condition``, if any), for error messages.

    Derived from the classes (:meth:`BaseCalibrator._supports_chunks`), so a
    new chunk-capable calibrator is named without editing any message.

    Examples
    --------
    >>> from skcalib._base import chunk_capable_names
    >>> "TemperatureCalibrator" in chunk_capable_names()
    True
    """
    return [
        cls.__name__
        + (f" ({cls._chunk_fit_condition})" if cls._chunk_fit_condition else "")
        for cls in _skcalib_calibrators()
        if cls._supports_chunks()
    ]


def _ndim(X):
    """Dimension of an array-like without calling numpy's array functions on it."""
    ndim = getattr(X, "ndim", None)
    return ndim if ndim is not None else np.asarray(X).ndim


def _unique_inverse(y):
    """``np.unique(y, return_inverse=True)``, in O(n) for small integer ranges."""
    return unique_inverse(y)
