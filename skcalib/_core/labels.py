"""Label encoding: the sorted distinct labels of ``y`` and the index of each.

The one implementation used by the metrics (:mod:`skcalib._core.inputs`),
the calibrators (:mod:`skcalib._base`) and chunked fitting
(:mod:`skcalib._backends.chunks`). Integer labels of a small range go
through a lookup table (O(n), no sort); everything else through
:func:`numpy.unique` and a binary search. The results are those of
``np.unique(y, return_inverse=True)``.
"""

import numpy as np

from skcalib._core.accel import present_in_span, value_range

__all__ = []  # private module

#: ``span`` not computed yet (None means: no lookup table).
_UNKNOWN = object()

#: Integer labels whose range is below this (or below 4 x n_samples) are
#: encoded with a lookup table (O(n)) instead of a sort.
TABLE_SPAN = 1 << 20


def int_span(y):
    """``(min, max)`` of integer labels when a lookup table is cheap, else None."""
    if y.dtype.kind not in "iu" or not y.size:
        return None
    lo, hi, _ = value_range(y)
    lo, hi = int(lo), int(hi)  # no wrap-around of small integer types
    if hi > np.iinfo(np.intp).max or hi - lo >= max(TABLE_SPAN, 4 * y.size):
        return None
    return lo, hi


def _shifted(y, lo):
    """``y - lo`` as ``intp`` (no copy when ``lo == 0`` and ``y`` is ``intp``)."""
    y = y.astype(np.intp, copy=False)
    return y - lo if lo else y


def present_labels(y, span=_UNKNOWN):
    """Sorted distinct labels of ``y`` (O(n) for small integer ranges).

    ``span``: :func:`int_span` of ``y`` if the caller has it. With the
    compiled kernels the scan of a small range stops as soon as every value
    of the range is seen (most often after a few hundred labels).

    Raises ``ValueError`` when the labels cannot be sorted (a mix of str and
    int in an object array).
    """
    span = int_span(y) if span is _UNKNOWN else span
    if span is not None:
        lo, hi = span
        if hi - lo == 1:  # two consecutive labels: the extremes, both present
            return np.array([lo, hi], dtype=y.dtype)
        seen = present_in_span(y, lo, hi - lo + 1)
        if seen is None:
            seen = np.bincount(_shifted(y, lo))
        return (np.flatnonzero(seen) + lo).astype(y.dtype)
    try:
        return np.unique(y)
    except TypeError as exc:  # e.g. a mix of str and int in an object array
        raise ValueError(
            f"y_true mixes label types that cannot be sorted: {exc}"
        ) from exc


def lookup(y, classes):
    """``(codes, known)``: the index of each ``y`` in ``classes`` (unique, any
    order) and whether it is there (``codes`` is arbitrary where not)."""
    codes, known = _lookup(y, classes, _UNKNOWN)
    return codes, np.ones(y.size, dtype=bool) if known is None else known


def _lookup(y, classes, span):
    """:func:`lookup` with ``known`` None when every label is known (the
    labels ``0 .. K-1`` of ``classes == arange(K)``: the codes are ``y``)."""
    if y.dtype.kind == "b":
        y = y.astype(np.intp)
        span = _UNKNOWN
    if classes.dtype.kind == "b":
        classes = classes.astype(np.intp)
    span = int_span(y) if span is _UNKNOWN else span
    if span is not None and classes.dtype.kind in "biu":
        lo, hi = span
        k = classes.size
        if lo >= 0 and hi < k and np.array_equal(classes, np.arange(k)):
            return y.astype(np.intp, copy=False), None
        table = np.full(hi - lo + 1, -1, dtype=np.intp)
        inside = (classes >= lo) & (classes <= hi)
        table[classes[inside].astype(np.int64) - lo] = np.flatnonzero(inside)
        codes = table[_shifted(y, lo)]
        return codes, codes >= 0
    sorter = np.argsort(classes, kind="stable")
    ordered = classes[sorter]
    try:
        pos = np.searchsorted(ordered, y)
        pos = np.minimum(pos, ordered.size - 1)
        known = ordered[pos] == y
    except (TypeError, np.exceptions.DTypePromotionError):
        pos = np.zeros(y.size, dtype=np.intp)
        known = np.zeros(y.size, dtype=bool)
    return sorter[pos], np.asarray(known, dtype=bool)


def encode(y, classes, span=_UNKNOWN):
    """Index of each ``y`` in ``classes`` (unique, any order); ``ValueError``
    naming the labels that are not in ``classes``. ``span``: as for
    :func:`present_labels`."""
    codes, known = _lookup(y, classes, span)
    if known is not None and not known.all():
        unknown = present_labels(y[~known])
        raise ValueError(
            f"y_true contains label(s) {unknown[:10].tolist()} that are not in "
            f"labels={classes.tolist()}."
        )
    return codes


def unique_inverse(y):
    """``np.unique(y, return_inverse=True)`` of 1-D ``y``, in O(n) for small
    integer ranges.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.labels import unique_inverse
    >>> classes, codes = unique_inverse(np.array([7, 3, 7, 5]))
    >>> classes.tolist(), codes.tolist()
    ([3, 5, 7], [2, 0, 2, 1])
    """
    if int_span(y) is None:
        return np.unique(y, return_inverse=True)
    classes = present_labels(y)
    return classes, lookup(y, classes)[0]


def check_classes(classes):
    """The ``classes=`` parameter of a calibrator as a 1-D array of at least
    two distinct labels, in the order given (the order of the score
    columns); ``ValueError`` naming what is wrong otherwise.

    Examples
    --------
    >>> from skcalib._core.labels import check_classes
    >>> check_classes(["b", "a", "c"]).tolist()
    ['b', 'a', 'c']
    """
    out = np.asarray(classes)
    if out.ndim != 1:
        raise ValueError(
            f"classes must be a 1-D array of class labels (one per score column), "
            f"got shape {out.shape}."
        )
    if out.size < 2:
        raise ValueError(f"classes must hold at least two labels, got {out.tolist()}.")
    try:
        distinct, counts = np.unique(out, return_counts=True)
    except TypeError as exc:  # a mix of str and int in an object array
        raise ValueError(
            f"classes mixes label types that cannot be sorted: {out.tolist()}."
        ) from exc
    if distinct.size != out.size:
        raise ValueError(
            f"classes must be unique, but {distinct[counts > 1].tolist()} occur "
            f"more than once in classes={out.tolist()}."
        )
    return out


def check_labels_in(present, classes):
    """``ValueError`` naming the labels of ``present`` (distinct labels of
    ``y``) that are not in ``classes`` (a calibrator's ``classes=``)."""
    known = lookup(present, classes)[1]
    if not known.all():
        unknown = present[~known]
        raise ValueError(
            f"y contains label(s) {unknown[:10].tolist()} that are not in "
            f"classes={classes.tolist()}; classes= must list every label of y "
            "(one per score column, in the order of the columns)."
        )


def encode_fit_labels(y, *, given=None, estimator_classes=None, estimator_name=""):
    """``(classes, codes)`` of a calibrator's validated 1-D labels ``y``.

    Raw-score mode (``estimator_classes`` None): ``classes`` is ``given``
    (the checked ``classes=``, any order; a label of ``y`` outside it is an
    error) or, without it, the sorted labels of ``y``. Wrapper mode: the
    estimator's ``classes_`` (``given`` must equal them), and a label of
    ``y`` they lack is an error. At least two classes must occur in ``y``.
    """
    if estimator_classes is None and given is None:
        classes, y_enc = unique_inverse(y)
        n_present = classes.size
    elif estimator_classes is None:
        classes = given
        present = present_labels(y)
        check_labels_in(present, classes)
        y_enc = lookup(y, classes)[0]
        n_present = present.size
    else:
        classes = np.asarray(estimator_classes)
        if classes.ndim != 1:
            raise ValueError("Only single-output estimators can be calibrated.")
        if given is not None and not (
            given.shape == classes.shape and np.array_equal(given, classes)
        ):
            raise ValueError(
                f"classes={given.tolist()} disagrees with the classes_ "
                f"{classes.tolist()} of {estimator_name}, which decide the score "
                "columns in wrapper mode; pass classes=None."
            )
        present, inverse = np.unique(y, return_inverse=True)
        position = {c: i for i, c in enumerate(classes.tolist())}
        unknown = [c for c in present.tolist() if c not in position]
        if unknown:
            raise ValueError(
                f"y contains labels {unknown} that the estimator does not know; "
                f"its classes_ are {classes.tolist()}."
            )
        y_enc = np.array([position[c] for c in present.tolist()])[inverse]
        n_present = present.size
    if n_present < 2:
        raise ValueError(
            f"y has one class only ({y[:1].tolist()[0]!r}); calibration "
            "needs at least two classes."
        )
    return classes, y_enc.astype(np.intp, copy=False)
