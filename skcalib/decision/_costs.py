"""Cost matrices and the labels of the actions they price.

Convention (the orientation of :func:`sklearn.metrics.confusion_matrix`):
row ``k`` of a cost matrix is the *true* class ``k``, column ``a`` the
*action* ``a``; ``C[k, a]`` is the cost of taking action ``a`` on a sample of
class ``k``. Columns ``0 .. K-1`` predict the classes (in the order of the
probability columns or of ``labels``); an optional column ``K`` is "abstain"
(Chow's reject option).
"""

import numpy as np

from skcalib._core.labels import lookup, present_labels

__all__ = []  # private module


def check_cost_matrix(cost_matrix, n_classes, *, name="cost_matrix"):
    """Validated float64 cost matrix and whether it has an abstain column.

    Parameters
    ----------
    cost_matrix : array-like of shape (K, K) or (K, K + 1)
    n_classes : int or None
        ``K``, the number of classes (probability columns); ``None``: the
        number of rows of ``cost_matrix``.
    name : str
        Name used in error messages.

    Returns
    -------
    cost : ndarray of shape (K, K) or (K, K + 1), float64
    abstain : bool
        Whether the last column is the abstain action.
    """
    try:
        cost = np.array(cost_matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 2-D array of numbers: {exc}") from None
    k = n_classes
    if k is None:
        if cost.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D, of shape (K, K) or (K, K + 1) with a last "
                f"column for abstaining (rows: true class, columns: action); got "
                f"shape {cost.shape}."
            )
        k = cost.shape[0]
    if cost.ndim != 2 or cost.shape[0] != k or cost.shape[1] not in (k, k + 1):
        raise ValueError(
            f"{name} must have shape (K, K) = ({k}, {k}), or (K, K + 1) = "
            f"({k}, {k + 1}) with a last column for abstaining, for K = {k} "
            f"classes (rows: true class, columns: action); got shape {cost.shape}."
        )
    if not np.isfinite(cost).all():
        row, col = np.argwhere(~np.isfinite(cost))[0]
        raise ValueError(
            f"{name} must hold finite costs; {name}[{row}, {col}] is {cost[row, col]}."
        )
    return cost, cost.shape[1] == k + 1


def zero_one_cost(n_classes):
    """The 0-1 cost matrix ``1 - I`` (its Bayes decision is the argmax)."""
    return 1.0 - np.eye(n_classes)


def check_labels(labels, n_classes):
    """``labels`` as a 1-D array of ``n_classes`` unique labels."""
    classes = np.asarray(labels)
    if classes.ndim != 1 or classes.size != n_classes:
        raise ValueError(
            f"labels must hold one label per class ({n_classes}), got "
            f"{classes.tolist()}."
        )
    if present_labels(classes).size != classes.size:
        raise ValueError(f"labels must be unique, got {classes.tolist()}.")
    return classes


def _same_kind(a, b):
    numeric = "biuf"
    text = "US"
    return (a.kind in numeric and b.kind in numeric) or (
        a.kind in text and b.kind in text
    )


def matches_label(values, label):
    """Boolean mask of the entries of 1-D ``values`` equal to ``label``.

    Labels of another kind (a string against numbers) never match: no
    element-wise comparison warning, no string conversion of numbers.
    """
    label_arr = np.asarray(label)
    if values.dtype.kind == "O" or label_arr.dtype.kind == "O":
        return np.fromiter((v == label for v in values), bool, count=values.size)
    if not _same_kind(values.dtype, label_arr.dtype):
        return np.zeros(values.size, dtype=bool)
    return np.asarray(values == label, dtype=bool)


def check_abstain_label(abstain_label, classes):
    """Raise ``ValueError`` when ``abstain_label`` is one of ``classes``."""
    if matches_label(classes, abstain_label).any():
        raise ValueError(
            f"abstain_label={abstain_label!r} is one of the class labels "
            f"{classes.tolist()}; pass an abstain_label that is not a class."
        )


def action_labels(classes, abstain, abstain_label):
    """The label of each action: ``classes``, then ``abstain_label``.

    The array keeps the dtype of ``classes`` when ``abstain_label`` is of the
    same kind (numbers with numbers, strings with strings; the common dtype
    then), and is of object dtype otherwise, so that neither label is
    converted (no ``"-1"`` string among string classes).
    """
    if not abstain:
        return classes
    extra = np.asarray(abstain_label)
    if extra.ndim == 0 and _same_kind(classes.dtype, extra.dtype):
        out = np.empty(classes.size + 1, dtype=np.result_type(classes, extra))
    else:
        out = np.empty(classes.size + 1, dtype=object)
    out[:-1] = classes
    out[-1] = abstain_label
    return out


def encode_actions(decisions, classes, abstain, abstain_label):
    """Index of each decision's action (``K`` for abstain); ``ValueError``
    naming the decisions that are no action of the cost matrix."""
    k = classes.size
    is_abstain = matches_label(decisions, abstain_label)
    if is_abstain.any() and not abstain:
        raise ValueError(
            f"decisions contain abstain_label={abstain_label!r} but cost_matrix "
            f"has no abstain column (shape (K, K + 1) = ({k}, {k + 1}) prices it)."
        )
    codes = np.full(decisions.size, k, dtype=np.intp)
    rest = decisions[~is_abstain]
    if rest.dtype.kind == "O" and rest.size:
        rest = np.asarray(rest.tolist())
    found, known = lookup(rest, classes) if rest.size else (rest, rest)
    if rest.size and not np.all(known):
        unknown = rest[~np.asarray(known, dtype=bool)]
        what = f" nor abstain_label={abstain_label!r}" if abstain else ""
        raise ValueError(
            f"decisions contain label(s) {present_labels(unknown)[:10].tolist()} "
            f"that are not in labels={classes.tolist()}{what}."
        )
    codes[~is_abstain] = found
    return codes
