"""Input checks shared by every metric: labels, probabilities, weights.

One function, :func:`check_metric_inputs`, turns ``(y_true, y_proba,
sample_weight, labels)`` into validated arrays. The probability values
themselves are checked by :func:`skcalib._core.scores.check_probabilities` (the one
probability check of the package), either here for the whole array or block by
block by the fast top-1 scan of the binned metrics.
"""

from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.multiclass import type_of_target

from skcalib._core.binning import (  # noqa: F401
    MIN_BIN_CAP,
    STRATEGIES,
    check_n_bins,
)
from skcalib._core.compat import Interval, StrOptions
from skcalib._core.labels import _UNKNOWN, int_span
from skcalib._core.labels import encode as _encode
from skcalib._core.labels import present_labels as _present_labels
from skcalib._core.scores import check_probabilities
from skcalib._core.weights import unit_exponent

__all__ = []  # private module

#: ``validate_params`` constraints shared by the metric functions.
COMMON_CONSTRAINTS = {
    "y_true": ["array-like"],
    "y_proba": ["array-like"],
    "sample_weight": ["array-like", None],
    "labels": ["array-like", None],
}
BINNING_CONSTRAINTS = {
    "n_bins": [Interval(Integral, 1, None, closed="left")],
    "strategy": [StrOptions(set(STRATEGIES))],
}
KINDS = ("confidence", "top_label", "classwise")
NORMS = ("l1", "l2", "max")
#: How the classwise error combines the classes.
AVERAGES = ("mean", "rms")


def is_dask_collection(x):
    """Whether ``x`` is a Dask collection (array, DataFrame, Series, ...).

    Decided from the type's module, so that Dask is never imported here.
    """
    return type(x).__module__.partition(".")[0] in ("dask", "dask_expr")


#: The engines recognised by the top-level package of an input's type
#: (their collections cannot carry a marker); other engines' inputs carry a
#: class attribute ``_skcalib_engine`` (see :mod:`skcalib._backends.engines`).
ENGINE_TYPES = {"dask": "dask", "dask_expr": "dask", "pyspark": "spark", "ray": "ray"}


def engine_of(x):
    """The name of the engine that holds ``x`` (``"dask"``, ``"spark"``,
    ``"ray"``), or None for in-memory data; never imports an engine."""
    name = getattr(type(x), "_skcalib_engine", None)
    if name is not None:
        return name
    return ENGINE_TYPES.get(type(x).__module__.partition(".")[0])


def input_kind(*arrays):
    """The engine of ``arrays`` (see :func:`engine_of`), else ``"numpy"``.

    The one decision of which backend computes a metric's totals or fits a
    calibrator (None entries, such as absent weights, are skipped). Inputs
    of two engines are an error.
    """
    kinds = {engine_of(a) for a in arrays if a is not None} - {None}
    if len(kinds) > 1:
        raise TypeError(
            f"The inputs are held by different engines ({sorted(kinds)}); "
            "pass them all from one engine."
        )
    return kinds.pop() if kinds else "numpy"


#: Names of the functions and methods that accept Dask collections, filled
#: by :func:`accepts_dask` as their modules are imported.
DASK_CAPABLE = []


def accepts_dask(func):
    """Mark ``func`` as accepting Dask collections (it dispatches on
    :func:`input_kind`); :func:`reject_dask` names the marked ones."""
    DASK_CAPABLE.append(func.__qualname__)
    return func


def reject_discrete_dask(strategy):
    """``strategy="discrete"`` needs the distinct values of all the data."""
    if strategy == "discrete":
        raise TypeError(
            "strategy='discrete' (one bin per distinct probability) needs "
            "in-memory arrays; with Dask collections (or Spark / Ray columns) "
            "use strategy='uniform' or 'quantile', or call .compute() first."
        )


@dataclass(frozen=True, eq=False)
class MetricInputs:
    """Validated metric inputs.

    ``y`` holds the column index of each true label (``classes[y] ==
    y_true``); ``proba`` is 1-D (binary: probability of ``classes[1]``) or
    ``(n, K)`` with ``K == classes.size`` columns in the order of ``classes``;
    float32 stays float32 and is never copied. ``sample_weight`` is divided
    by ``weight_scale`` (the largest weight, see :func:`check_sample_weight`):
    multiply weighted sums by it to get them in the user's units.
    """

    y: np.ndarray
    proba: np.ndarray
    classes: np.ndarray
    sample_weight: np.ndarray | None
    weight_scale: float = 1.0

    @property
    def n_classes(self):
        return self.classes.size

    @property
    def n_samples(self):
        return self.y.size


def reject_dask(**arrays):
    """Raise ``TypeError`` if one of ``arrays`` is held by an engine (a Dask
    collection, a Spark or Ray column handle).

    For the functions that need their inputs in memory: converting a Dask
    collection with ``np.asarray`` would compute it whole.
    """
    for name, x in arrays.items():
        engine = engine_of(x)
        if engine == "dask":
            raise TypeError(
                f"{name} is a Dask collection ({type(x).__name__}); this function "
                f"needs in-memory arrays. {_dask_capable_names()} accept Dask "
                "collections; call .compute() first if the data fits in memory."
            )
        if engine is not None:
            raise TypeError(
                f"{name} is held by {engine.capitalize()} ({type(x).__name__}); "
                f"this function needs in-memory arrays. {_dask_capable_names()} "
                f"accept {engine.capitalize()} columns; collect them to numpy "
                "first if the data fit in memory."
            )


def _dask_capable_names():
    names = list(dict.fromkeys(DASK_CAPABLE))
    if len(names) < 2:
        return "".join(names) or "No function"
    return f"{', '.join(names[:-1])} and {names[-1]}"


#: The hint of the probability checks of the metrics (they take no
#: ``score_type``).
PROBA_HINT = (
    "y_proba must hold probabilities (rows summing to 1): apply a softmax to "
    "logits (or normalise one-vs-rest scores) first."
)


def check_proba_values(proba, name="y_proba", value_range=None):
    """:func:`~skcalib._core.scores.check_probabilities` with the metrics' hint."""
    check_probabilities(proba, name=name, value_range=value_range, hint=PROBA_HINT)


def check_finite_proba(proba, name="y_proba"):
    """Raise ``ValueError`` naming the first row of ``proba`` holding NaN.

    Infinite values are caught by the range check of
    :func:`~skcalib._core.scores.check_probabilities`.
    """
    if proba.size and np.isnan(proba.min()):
        bad = int(
            np.flatnonzero(np.isnan(proba.reshape(proba.shape[0], -1)).any(axis=1))[0]
        )
        raise ValueError(f"{name} contains NaN; row {bad} is {proba[bad].tolist()}.")


def _check_y(y_true, allow_empty=False):
    y = np.asarray(y_true)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(
            f"y_true must be a 1-D array of class labels, got shape {y.shape}."
        )
    if y.size == 0:
        if allow_empty:
            return y
        raise ValueError("y_true is empty; at least one sample is needed.")
    kind = y.dtype.kind
    if kind == "f":
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(
                f"y_true must hold class labels; y_true[{bad}] is {y[bad]}."
            )
        if np.any(y != np.round(y)):
            bad = int(np.flatnonzero(y != np.round(y))[0])
            raise ValueError(
                "y_true must hold class labels (integers or strings), got continuous "
                f"values such as y_true[{bad}] = {y[bad]}."
            )
    elif kind == "O":
        target = type_of_target(y, input_name="y_true")
        if target not in ("binary", "multiclass"):
            raise ValueError(f"y_true must hold class labels, got a {target!r} target.")
    elif kind not in "biuUS":
        raise ValueError(f"y_true must hold class labels, got dtype {y.dtype}.")
    return y


def _resolve_classes(
    y, n_columns, labels, *, name="y_proba", binary_1d=True, span=_UNKNOWN
):
    """The labels of the columns of ``name`` (``y_proba``; the set metrics:
    ``y_sets``). ``span``: :func:`~skcalib._core.labels.int_span` of ``y``
    if known.

    ``labels`` when given (1-D, unique, one per column); else the sorted
    labels of ``y``, which must then be as many as the columns (the columns
    are never guessed: ``ValueError`` naming ``labels=`` otherwise). With
    ``binary_1d``, one column is a binary 1-D ``y_proba`` (two labels).
    """
    binary = binary_1d and n_columns == 1
    expected = 2 if binary else n_columns
    if labels is not None:
        classes = np.asarray(labels)
        if classes.ndim != 1:
            raise ValueError(f"labels must be 1-D, got shape {classes.shape}.")
        if classes.size != expected:
            what = (
                "1-D y_proba (binary: probability of labels[1]) needs exactly 2 labels"
                if binary
                else f"{name} has {n_columns} columns"
            )
            raise ValueError(
                f"{what}, but labels has {classes.size}: {classes.tolist()}."
            )
        if _present_labels(classes).size != classes.size:
            raise ValueError(f"labels must be unique, got {classes.tolist()}.")
        return classes
    present = _present_labels(y, span)
    if present.size == expected:
        return present
    shown = present[:10].tolist()
    if binary:
        raise ValueError(
            "1-D y_proba is for binary problems (the probability of the larger "
            f"label), and y_true must then hold both labels, but it has "
            f"{present.size} distinct label(s) {shown}; pass "
            "labels=[negative, positive] to name the two classes (or a 2-D "
            "y_proba with labels=)."
        )
    raise ValueError(
        f"{name} has {n_columns} columns but y_true has {present.size} distinct "
        f"label(s) {shown}, so y_true does not say which column is which class; "
        f"pass labels= (every class label, in the order of the columns of "
        f"{name}; for a classifier: labels=clf.classes_)."
    )


def weight_scale(max_weight):
    """The power of two ``2**e`` with ``2**e <= max_weight < 2**(e + 1)``
    (1.0 when ``max_weight`` is not positive and finite).

    Weights are divided by it: a power of two divides exactly, so integer
    weights keep exact sums (and quantile edges their ties), and the largest
    weight becomes a number in ``[1, 2)`` (the rule of
    :func:`~skcalib._core.weights.unit_exponent`).
    """
    e = unit_exponent(max_weight)
    return 1.0 if e is None else float(np.ldexp(1.0, e))


def check_sample_weight(sample_weight, n_samples, *, chunk=False, scale=None):
    """Non-negative float64 weights of length ``n_samples``, divided by the
    power of two just below their maximum, and that power of two;
    ``(None, 1.0)`` without weights.

    Every metric is a ratio of weighted sums, so dividing the weights by a
    constant changes no result; dividing by (about) the largest weight keeps
    every weight in ``[0, 2)`` and every sum in ``[0, 2 n_samples]``, so that
    weights of 1e308 do not overflow and subnormal weights (5e-324) do not
    lose their precision. The divisor is a power of two (see
    :func:`weight_scale`), so the division is exact.

    ``chunk``: the weights of one chunk of the data, which may be empty and
    may sum to 0 (the total is checked when the metric is computed).
    ``scale``: divide by this (the :func:`weight_scale` of the whole data)
    instead of the scale of ``sample_weight``.

    Returns
    -------
    weight : ndarray of shape (n_samples,) or None
        ``sample_weight / scale``; None when every weight is the same
        positive number (equal weights are the same as none; ``scale`` is
        then that weight) and ``scale`` was not given.
    scale : float
        The divisor (1.0 without weights, or when every weight is 0).
    """
    if sample_weight is None:
        return None, 1.0
    w = check_array(
        sample_weight,
        ensure_2d=False,
        dtype=np.float64,
        input_name="sample_weight",
        ensure_min_samples=0 if chunk else 1,
    )
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must have shape ({n_samples},) like y_true, got {w.shape}."
        )
    if np.any(w < 0):
        bad = int(np.flatnonzero(w < 0)[0])
        raise ValueError(
            f"sample_weight must be >= 0; sample_weight[{bad}] = {w[bad].item()}."
        )
    top = float(w.max()) if w.size else 0.0
    if not top > 0:
        if not chunk:
            raise ValueError("sample_weight sums to 0; the metric is undefined.")
        return w, 1.0
    if scale is None:
        if w.min() == top:
            # Equal weights are no weights: the unweighted arithmetic, with
            # the weight kept as the scale (the curve's counts use it).
            return None, top
        scale = weight_scale(top)
    return (w if scale == 1.0 else w / scale), float(scale)


def check_arrays(y_true, y_proba, *, allow_empty=False):
    """Validated ``(y, proba)``: labels 1-D, probabilities 1-D or ``(n, K)``
    (float32 kept, one column squeezed), the same number of rows.

    ``allow_empty``: for one chunk of the data, which may have no row.
    """
    proba = check_array(
        y_proba,
        ensure_2d=False,
        dtype=[np.float64, np.float32],
        ensure_all_finite=False,
        input_name="y_proba",
        ensure_min_samples=0 if allow_empty else 1,
    )
    if proba.ndim == 2 and proba.shape[1] == 1:
        proba = proba[:, 0]
    if proba.ndim == 2 and proba.shape[1] < 1:
        raise ValueError("y_proba has no column.")
    y = _check_y(y_true, allow_empty=allow_empty)
    if y.shape[0] != proba.shape[0]:
        raise ValueError(
            f"y_true has {y.shape[0]} samples but y_proba has {proba.shape[0]}."
        )
    return y, proba


def check_metric_inputs(
    y_true, y_proba, *, sample_weight=None, labels=None, check_values=True
):
    """Validate the inputs of a metric.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class labels (integers, strings, ...).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        1-D: probability of the positive class (the larger label, or
        ``labels[1]``). 2-D: one column per label of ``labels``.
    sample_weight : array-like of shape (n_samples,) or None
    labels : array-like or None
        The labels of the columns. None: the sorted distinct labels of
        ``y_true``, which must then determine the columns (as many labels as
        columns; exactly 2 for 1-D ``y_proba``), else ``ValueError`` naming
        ``labels=`` (the columns are never guessed).
    check_values : bool, default=True
        Check the probability values (finite, in ``[0, 1]``, rows summing to
        1). ``False`` only for callers that check them block by block.

    Returns
    -------
    inputs : MetricInputs
    """
    reject_dask(y_true=y_true, y_proba=y_proba, sample_weight=sample_weight)
    y, proba = check_arrays(y_true, y_proba)
    weight, scale = check_sample_weight(sample_weight, y.shape[0])
    n_columns = 1 if proba.ndim == 1 else proba.shape[1]
    span = int_span(y)  # one range pass for both steps
    classes = _resolve_classes(y, n_columns, labels, span=span)
    codes = _encode(y, classes, span)
    if check_values:
        check_finite_proba(proba)
        check_proba_values(proba)
    return MetricInputs(
        y=codes, proba=proba, classes=classes, sample_weight=weight, weight_scale=scale
    )


def check_chunk(
    y_true,
    y_proba,
    sample_weight=None,
    *,
    classes=None,
    labels=None,
    weight_scale=None,
):
    """Validate one chunk of metric inputs.

    The checks of :func:`check_metric_inputs` that hold chunk by chunk: the
    chunk may be empty and its weights may sum to 0 (the whole data is
    checked when a metric is computed). The probability values are checked
    by the caller (block by block in the binning pass, see
    :func:`skcalib.metrics._accumulator.chunk_totals`).

    Parameters
    ----------
    y_true, y_proba, sample_weight
        As for the metric functions.
    classes : ndarray or None
        The labels of the columns, already fixed; None: resolved from this
        chunk like the metric functions do (from ``labels`` or the labels of
        ``y_true``).
    labels : array-like or None
        Used when ``classes`` is None.
    weight_scale : float or None
        Divide the weights by this (the largest weight of the whole data);
        None: by the largest weight of the chunk (see
        :func:`check_sample_weight`; the result's ``weight_scale`` says which).

    Returns
    -------
    inputs : MetricInputs or None
        None for an empty chunk.
    classes : ndarray or None
        The classes (None if still unknown: empty chunk without ``labels``).
    """
    y, proba = check_arrays(y_true, y_proba, allow_empty=True)
    n_columns = 1 if proba.ndim == 1 else proba.shape[1]
    weight, scale = check_sample_weight(
        sample_weight, y.shape[0], chunk=True, scale=weight_scale
    )
    if classes is None and (y.size or labels is not None):
        classes = _chunk_classes(y, n_columns, labels)
    if classes is not None and classes.size != (2 if n_columns == 1 else n_columns):
        what = "1-D y_proba (binary)" if n_columns == 1 else f"{n_columns} columns"
        raise ValueError(
            f"y_proba has {what}, but the classes are {classes.tolist()} (fixed "
            "by labels= or the first chunk)."
        )
    if y.size == 0:
        return None, classes
    codes = _encode(y, classes)
    inp = MetricInputs(
        y=codes, proba=proba, classes=classes, sample_weight=weight, weight_scale=scale
    )
    return inp, classes


def _chunk_classes(y, n_columns, labels):
    """The classes of the columns from the first chunk (or ``labels``)."""
    try:
        return _resolve_classes(y, n_columns, labels)
    except ValueError as exc:
        if labels is not None:
            raise
        raise ValueError(
            f"{exc} The first chunk of data fixes the classes; pass labels= "
            "(all class labels, in the order of the columns of y_proba) when a "
            "chunk may miss some classes."
        ) from exc


def binary_column(proba, k):
    """Probability of class ``k`` (0 or 1) from 1-D binary ``proba``."""
    return proba if k == 1 else 1 - proba


def resolve_class_index(kind, class_index, n_classes):
    """The column a reliability curve is about (None: pooled top-1).

    ``kind="classwise"`` of binary data defaults to the positive column 1.
    """
    if class_index is not None and not 0 <= class_index < n_classes:
        raise ValueError(
            f"class_index must be in [0, {n_classes - 1}] (a column of y_proba), "
            f"got {class_index}."
        )
    if kind == "confidence" and class_index is not None:
        raise ValueError(
            "kind='confidence' pools all classes; class_index needs "
            "kind='top_label' or kind='classwise'."
        )
    if kind == "classwise" and class_index is None:
        if n_classes == 2:
            return 1
        raise ValueError(
            "kind='classwise' needs class_index (the column of the class) when "
            f"there are {n_classes} classes."
        )
    return None if class_index is None else int(class_index)


def curve_cells(kind, class_index, n_classes):
    """``(kind, class_index)`` of the cells of a reliability curve: the
    checked column (:func:`resolve_class_index`), and ``kind="top_label"``
    without one pooled into the confidence curve (one curve over all
    predicted classes)."""
    class_index = resolve_class_index(kind, class_index, n_classes)
    if kind == "top_label" and class_index is None:
        kind = "confidence"
    return kind, class_index
