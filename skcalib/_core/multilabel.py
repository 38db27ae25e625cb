"""Multi-label targets and probabilities: the one check of each.

A multi-label target is a label-indicator matrix ``y`` of shape
``(n_samples, n_labels)`` with entries 0 or 1 (row ``i`` has label ``j``
when ``y[i, j] == 1``). Its probabilities are a matrix of the same shape:
``proba[i, j]`` is the probability that row ``i`` has label ``j``.

Rules (documented in the multi-label guide, tested in
``tests/core/test_multilabel_inputs.py``):

* ``y`` must be 2-D with entries in {0, 1} (booleans count); a 1-D ``y`` is
  a binary or multiclass target and is refused, naming the form it has;
  sparse indicator matrices are densified.
* ``predict_proba`` of a multi-label classifier comes in two forms: an
  ``(n, L)`` matrix (``OneVsRestClassifier``, ``MLPClassifier``), read as
  is, or a list of ``L`` arrays of shape ``(n, c_j)``, one per label
  (``MultiOutputClassifier``, ``KNeighborsClassifier``,
  ``RandomForestClassifier``), whose columns follow
  ``estimator.classes_[j]``. From a list the column of class 1 is taken by
  that ``classes_`` entry, never by position; a label whose classifier saw
  only class 0 (or only 1) has probability 0 (or 1), as its ``classes_``
  says.
"""

import numpy as np
import scipy.sparse as sp

__all__ = []  # private module


def check_label_indicator(y, *, name="y", n_labels=None):
    """``y`` as an ``(n, L)`` int8 label-indicator matrix, or a ValueError
    naming what is wrong (and what to pass)."""
    if sp.issparse(y):
        y = y.toarray()
    if isinstance(y, list) and y and all(np.ndim(v) == 1 for v in y):
        lengths = {len(v) for v in y}
        if len(lengths) > 1:
            raise ValueError(
                f"{name} is a list of label sets of different lengths; pass a "
                "label-indicator matrix of shape (n_samples, n_labels), e.g. "
                "sklearn.preprocessing.MultiLabelBinarizer().fit_transform(y)."
            )
    arr = np.asarray(y)
    if arr.ndim != 2:
        kind = "binary or multiclass labels" if arr.ndim == 1 else f"{arr.ndim}-D"
        raise ValueError(
            f"{name} must be a label-indicator matrix of shape (n_samples, "
            f"n_labels) with entries 0/1; got an array of shape {arr.shape} "
            f"({kind}). Use a multiclass calibrator for one label per row, or "
            "convert label sets with sklearn.preprocessing.MultiLabelBinarizer."
        )
    if arr.dtype == bool:
        out = arr.astype(np.int8)
    elif arr.dtype.kind in "iuf":
        bad = ~((arr == 0) | (arr == 1))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(
                f"{name} must have entries 0 or 1 (a label-indicator matrix); "
                f"{name}[{i}, {j}] = {arr[i, j].item()!r}. A multiclass target in "
                "several columns is not multi-label: pass one label per row "
                "to a multiclass calibrator."
            )
        out = arr.astype(np.int8)
    else:
        raise ValueError(
            f"{name} must be a numeric or boolean label-indicator matrix; got "
            f"dtype {arr.dtype}. Convert label sets with "
            "sklearn.preprocessing.MultiLabelBinarizer."
        )
    if n_labels is not None and out.shape[1] != n_labels:
        raise ValueError(
            f"{name} has {out.shape[1]} labels (columns); {n_labels} expected."
        )
    if out.shape[0] == 0 or out.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {out.shape}).")
    return out


def _class_one_column(p, classes, j):
    """The column of class 1 of one label's ``(n, c)`` probabilities."""
    classes = np.asarray(classes)
    if p.ndim != 2 or p.shape[1] != classes.size:
        raise ValueError(
            f"predict_proba output {j} has shape {p.shape}, but classes_[{j}] "
            f"has {classes.size} classes ({classes.tolist()})."
        )
    unknown = [c for c in classes.tolist() if c not in (0, 1)]
    if unknown:
        raise ValueError(
            f"label {j} of the classifier has classes {classes.tolist()}; a "
            "multi-label classifier must have classes 0/1 per label (found "
            f"{unknown[0]!r})."
        )
    hit = np.flatnonzero(classes == 1)
    if hit.size:
        return p[:, hit[0]]
    return np.zeros(p.shape[0])  # the classifier saw only class 0


def positive_proba(proba, estimator=None):
    """The ``(n, L)`` matrix of the probabilities of each label from a
    multi-label ``predict_proba`` output (matrix or list; see the module
    docstring), as float64."""
    if isinstance(proba, (list, tuple)):
        classes = getattr(estimator, "classes_", None)
        if not isinstance(classes, (list, tuple)) or len(classes) != len(proba):
            raise ValueError(
                f"predict_proba returned a list of {len(proba)} arrays (one "
                "per label), but the estimator has no list classes_ of the "
                "same length to say which column is class 1 of each label; "
                f"got classes_={classes!r}."
            )
        cols = [
            _class_one_column(np.asarray(p), c, j)
            for j, (p, c) in enumerate(zip(proba, classes, strict=True))
        ]
        out = np.column_stack(cols).astype(np.float64)
    else:
        out = np.asarray(proba, dtype=np.float64)
        if out.ndim != 2:
            raise ValueError(
                "a multi-label predict_proba must return an (n_samples, "
                f"n_labels) matrix or a list of per-label arrays; got shape "
                f"{out.shape}."
            )
    if not np.isfinite(out).all():
        i, j = np.argwhere(~np.isfinite(out))[0]
        raise ValueError(
            f"predict_proba has a non-finite value {out[i, j]} at row {i}, label {j}."
        )
    if out.size and (out.min() < 0 or out.max() > 1):
        i, j = np.argwhere((out < 0) | (out > 1))[0]
        raise ValueError(
            f"predict_proba has {out[i, j].item()!r} at row {i}, label {j}; "
            "probabilities must lie in [0, 1]."
        )
    return out
