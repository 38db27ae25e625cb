"""``partial_fit``: calibration data that arrive in batches.

The negative log-likelihood of temperature, Platt, vector and beta scaling
is not a function of statistics of fixed size, and histogram binning's
``"auto"`` bins and equal-mass edges depend on every score. So that the
state after batches ``B1..Bm`` *is* ``fit`` on their concatenation (not an
approximation of it), :class:`PartialFitMixin` keeps the validated scores
of every batch (in their dtype: float32 stays float32, no ``n x K`` float64
copy; wrapper mode keeps the estimator's scores, not the features), their
encoded labels and weights, in buffers that grow by doubling. The map is
refitted lazily: ``partial_fit`` only validates and appends (``O(batch)``)
and marks the fitted parameters stale; the first use of the fitted state
(``predict_proba``, ``predict``, ``transform``, ``predict_log_proba`` or
reading a fitted attribute such as ``temperature_``) runs the calibrator's
own fit once on the kept rows. 100 ``partial_fit`` calls followed by a
prediction cost one fit plus one validation pass per batch.
"""

import warnings
from numbers import Real

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, _check_sample_weight, _fit_context
from skcalib._core.inputs import input_kind
from skcalib._core.labels import check_classes, lookup, present_labels
from skcalib._core.scores import all_finite
from skcalib._core.weights import _checked_weights
from skcalib._core.xp import namespace

__all__ = []

#: Attributes decided by the first batch that a refit leaves as they are
#: (``score_type_`` is needed to validate the next batches without a refit).
_KEPT_AT_REFIT = frozenset(
    {
        "classes_",
        "n_features_in_",
        "feature_names_in_",
        "score_type_",
        "_fit_rows_were_probabilities_",
    }
)

#: The parameter constraint of ``forgetting_factor``.
FORGETTING_FACTOR = [Interval(Real, 0, 1, closed="right")]


class _Growing:
    """A 1-D or 2-D array that grows by doubling along its rows."""

    def __init__(self, first):
        self.data = np.array(first, copy=True)
        self.n = first.shape[0]

    def append(self, rows):
        dtype = np.result_type(self.data.dtype, rows.dtype)
        need = self.n + rows.shape[0]
        if dtype != self.data.dtype or need > self.data.shape[0]:
            size = max(need, 2 * self.data.shape[0])
            grown = np.empty((size, *self.data.shape[1:]), dtype=dtype)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n : need] = rows
        self.n = need

    def view(self):
        return self.data[: self.n]

    def __getstate__(self):  # pickle the rows, not the spare capacity
        return {"data": self.view().copy(), "n": self.n}


class _KeptBatches:
    """The validated rows of every batch, and what ``fit`` needs of them."""

    def __init__(self, scores, kind, value_range, y, w, n_classes):
        self.scores, self.y = _Growing(scores), _Growing(y)
        self.w = None if w is None else _Growing(w)
        self.kind, self.lo, self.hi = kind, value_range[0], value_range[1]
        self.sizes = [scores.shape[0]]
        self.counts = np.bincount(y, minlength=n_classes)
        self.stale, self.fitted = True, set()

    def add(self, scores, value_range, y, w):
        if scores.shape[1:] != self.scores.data.shape[1:]:
            raise ValueError(
                f"X has shape {scores.shape[1:]} after the rows; the first "
                f"partial_fit batch had {self.scores.data.shape[1:]}: every batch "
                "must have the same columns (1-D binary scores stay 1-D)."
            )
        n_before = self.scores.n
        if w is not None and self.w is None:  # earlier batches weigh 1
            self.w = _Growing(np.ones(n_before))
        if self.w is not None:
            self.w.append(np.ones(scores.shape[0]) if w is None else w)
        self.scores.append(scores)
        self.y.append(y)
        self.lo, self.hi = min(self.lo, value_range[0]), max(self.hi, value_range[1])
        self.sizes.append(scores.shape[0])
        self.counts += np.bincount(y, minlength=self.counts.size)
        self.stale = True

    def weights(self, forgetting_factor):
        """The row weights of the fit: the given ones (1 where a batch had
        none) times ``forgetting_factor ** age`` (age 0 for the last batch);
        None when no batch had weights and nothing is forgotten."""
        w = None if self.w is None else self.w.view()
        if forgetting_factor == 1.0:
            return w
        ages = np.arange(len(self.sizes) - 1, -1, -1, dtype=np.float64)
        decay = np.repeat(forgetting_factor**ages, self.sizes)
        return decay if w is None else w * decay


class PartialFitMixin:
    """``partial_fit`` for a :class:`~skcalib._base.BaseCalibrator` (placed
    left of it): the batches are kept and the map is refitted lazily on all
    of them (see the module docstring)."""

    @_fit_context(prefer_skip_nested_validation=False)
    def partial_fit(self, X, y, sample_weight=None, classes=None):
        """Add a batch of calibration data.

        After batches ``B1..Bm`` the calibrator is the one :meth:`fit` gives
        on their concatenation (with ``forgetting_factor < 1``: on their
        concatenation weighted by ``forgetting_factor ** age``, see the
        parameter). Every batch is validated as :meth:`fit` validates its
        data; its validated scores are kept (memory: the scores in their
        dtype, plus 8 bytes a row for the labels and, with weights or
        forgetting, 8 for the weights), and the map is refitted on all kept
        rows at the first use of the fitted state after the call
        (:meth:`predict_proba` and the methods built on it, or reading a
        fitted attribute), so a stream of calls costs one fit, not one per
        call. :meth:`fit` discards the kept batches.

        Parameters
        ----------
        X : array-like
            Raw-score mode: the batch's scores, with the columns of the first
            batch. Wrapper mode: the input (features) of ``estimator``.
        y : array-like of shape (n_samples,)
            True labels, all among ``classes_``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the batch; ``None`` weighs its samples 1.
        classes : array-like of shape (n_classes,), default=None
            First call only (later calls may repeat the same classes): every
            class label, in the order of the score columns (raw-score mode),
            as scikit-learn's ``partial_fit`` takes it. Without it ``classes_``
            is the ``classes`` parameter, the estimator's ``classes_`` in
            wrapper mode, or else the sorted labels of the first batch, which
            must then hold at least two. A label outside ``classes_`` in a
            later batch is a ``ValueError``.

        Returns
        -------
        self : object
            The calibrator.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib import TemperatureCalibrator
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 3, 3000)
        >>> logits = 3.0 * (rng.normal(size=(3000, 3)) + np.eye(3)[y])
        >>> ts = TemperatureCalibrator()
        >>> for i in range(0, 3000, 500):
        ...     ts = ts.partial_fit(logits[i : i + 500], y[i : i + 500])
        >>> bool(ts.temperature_ == TemperatureCalibrator().fit(logits, y).temperature_)
        True
        """
        if input_kind(X, y) != "numpy" or namespace(X) is not None:
            raise TypeError(
                f"{type(self).__name__}.partial_fit takes numpy arrays; fit Dask "
                "arrays with fit (or fit_chunks), and array-API arrays with fit."
            )
        kept = self.__dict__.get("_partial")
        if kept is None and "classes_" in self.__dict__:
            warnings.warn(
                f"This {type(self).__name__} was fitted by fit, which keeps no "
                "rows: partial_fit starts a new stream with this batch (the fit "
                "is replaced by a fit on the batches from now on). Call fit again "
                "on all the data to include the earlier rows.",
                UserWarning,
                stacklevel=3,
            )
            for name in [n for n in self.__dict__ if n.endswith("_")]:
                del self.__dict__[name]
        first = kept is None
        before = set(self.__dict__)
        try:
            self._add_batch(X, y, sample_weight, classes, kept)
        except Exception:
            if first:  # a failed first batch leaves the calibrator unfitted
                for name in set(self.__dict__) - before:
                    del self.__dict__[name]
            raise
        return self

    def _add_batch(self, X, y, sample_weight, classes, kept):
        first = kept is None
        raw, kind, value_range = self._raw_scores(X, reset=first)
        y_enc = self._encode_batch(y, classes, first)
        if raw.shape[0] != y_enc.shape[0]:
            raise ValueError(f"X gives {raw.shape[0]} samples but y has {y_enc.size}.")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, raw, dtype=np.float64, ensure_non_negative=True
            )
        # What fit's validation would say of this batch: the score type is
        # decided by the first batch, later batches are checked against it
        # (rows of probabilities that miss 1 are an error, as at predict).
        self._scores(raw, kind, value_range, reset=first)
        if first:
            self._partial = _KeptBatches(
                raw, kind, value_range, y_enc, sample_weight, self.classes_.size
            )
        else:
            for name in kept.fitted:
                self.__dict__.pop(name, None)
            kept.add(raw, value_range, y_enc, sample_weight)

    def _encode_batch(self, y, classes, first):
        """Encoded labels of a batch; ``classes_`` set by the first one."""
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but y is None.")
        y = column_or_1d(y, warn=True)
        if y.dtype.kind == "f" and y.size and not all_finite(y):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"y must hold class labels; y[{bad}] is {y[bad]!r}.")
        if y.dtype.kind not in "iub":
            check_classification_targets(y)
        given = None if classes is None else check_classes(classes)
        if first:
            self.classes_ = self._first_classes(given, y)
        elif given is not None and not (
            given.shape == self.classes_.shape and np.array_equal(given, self.classes_)
        ):
            raise ValueError(
                f"classes={given.tolist()} differs from the classes_ "
                f"{self.classes_.tolist()} fixed by the first partial_fit call."
            )
        codes, known = lookup(y, self.classes_)
        if not known.all():
            bad = present_labels(y[~known])
            raise ValueError(
                f"y has label(s) {bad[:10].tolist()} not among the classes_ "
                f"{self.classes_.tolist()} fixed by the first partial_fit call; pass "
                "classes= listing every label at the first call (or fit again)."
            )
        return codes.astype(np.intp, copy=False)

    def _first_classes(self, given, y):
        """``classes_`` of a stream: ``classes=``, the parameter, the
        estimator's, or the labels of the first batch (at least two)."""
        name = type(self).__name__
        candidates = {
            "partial_fit's classes=": given,
            "the classes parameter": self._given_classes(),
            "the estimator's classes_": (
                None if self.estimator is None else np.asarray(self.estimator.classes_)
            ),
        }
        known = {k: v for k, v in candidates.items() if v is not None}
        if not known:
            labels = present_labels(y)
            if labels.size < 2:
                raise ValueError(
                    f"The first partial_fit batch has one class only "
                    f"({labels.tolist()}); pass classes= listing every class at "
                    f"the first call to {name}.partial_fit."
                )
            return labels
        (first_name, out), *rest = known.items()
        for other, value in rest:
            if not (value.shape == out.shape and np.array_equal(value, out)):
                raise ValueError(
                    f"{first_name} {out.tolist()} disagrees with {other} "
                    f"{value.tolist()}; they decide the score columns."
                )
        return out

    def _refresh(self):
        """Fit on the kept batches if a batch came since the last fit: the
        validated steps of :meth:`fit` on their concatenation."""
        kept = self.__dict__.get("_partial")
        if kept is None or not kept.stale:
            return
        if np.count_nonzero(kept.counts) < 2:
            present = self.classes_[kept.counts > 0].tolist()
            raise ValueError(
                f"The partial_fit batches so far hold one class only ({present}); "
                "calibration needs at least two: add batches before using the fit."
            )
        y = kept.y.view()
        w = kept.weights(getattr(self, "forgetting_factor", 1.0))
        if w is not None:
            w = _checked_weights(w, y, rescale=self._rescale_sample_weight)
        before = dict(self.__dict__)
        scores = kept.scores.view()
        lo, hi = scores.dtype.type(kept.lo), scores.dtype.type(kept.hi)
        # Not stale while fitting: an attribute the fit looks up (getattr
        # with a default) must not start another refit.
        kept.stale = False
        try:
            self._fit(self._scores(scores, kept.kind, (lo, hi), reset=True), y, w)
        except BaseException:
            kept.stale = True
            raise
        changed = {k for k, v in self.__dict__.items() if before.get(k, self) is not v}
        kept.fitted = changed - _KEPT_AT_REFIT - {"_partial"}

    def __getattr__(self, name):
        # Only called when normal lookup fails: a fitted attribute that a
        # partial_fit call made stale is computed by refitting. Those fixed
        # by the first batch never refit (validate_data looks them up at
        # every partial_fit call; feature_names_in_ may be absent).
        state = self.__dict__.get("_partial")
        if (
            state is not None
            and state.stale
            and name.endswith("_")
            and not name.startswith("__")
            and name not in _KEPT_AT_REFIT
        ):
            self._refresh()
            return object.__getattribute__(self, name)
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}"
        )

    def fit(self, X, y, sample_weight=None):
        self.__dict__.pop("_partial", None)
        return super().fit(X, y, sample_weight)

    fit.__doc__ = BaseCalibrator.fit.__doc__

    def _fit_chunked(self, data):
        self.__dict__.pop("_partial", None)
        return super()._fit_chunked(data)

    def predict_proba(self, X):
        self._refresh()
        return super().predict_proba(X)

    predict_proba.__doc__ = BaseCalibrator.predict_proba.__doc__
