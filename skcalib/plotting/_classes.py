"""Which curve a reliability diagram draws: the kind, the class, the labels.

scikit-learn's rule for a binary problem (``CalibrationDisplay``): the
curve is that of the positive class, ``classes_[1]`` unless ``pos_label``
names another one, on ``[0, 1]``. For labels whose order nobody decided
(strings given without ``labels``), there is no positive class to take:
an error asks for ``pos_label`` (the project's "no silent guesses" rule).
"""

import numpy as np

KINDS = ("confidence", "top_label", "classwise")


def check_option(value, name, options):
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is one of ``options``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")


def _classes_of(y_true, labels):
    if labels is not None:
        return np.asarray(labels).tolist()
    return np.unique(np.asarray(y_true)).tolist()


def _order_decided(y_true, labels):
    """Whether the labels have an order nobody has to guess: given
    ``labels``, or numbers (sorted, the larger one positive)."""
    if labels is not None:
        return True
    dtype = getattr(y_true, "dtype", None)  # read without computing (Dask)
    return (np.asarray(y_true).dtype if dtype is None else dtype).kind in "biuf"


def _n_classes(y_true, y_proba, labels):
    proba = np.asarray(y_proba) if not hasattr(y_proba, "shape") else y_proba
    if proba.ndim == 2:
        return proba.shape[1]
    return len(_classes_of(y_true, labels))


def _binary_labels_for_pos_label(y_true, pos_label, labels):
    """Labels ``[other, pos_label]`` of a 1-D ``y_proba``: as in
    scikit-learn, a 1-D ``y_proba`` is the probability of ``pos_label``."""
    classes = _classes_of(y_true, labels)
    if pos_label not in classes:
        raise ValueError(
            f"pos_label={pos_label!r} is not one of the classes {classes}."
        )
    others = [c for c in classes if c != pos_label]
    if len(others) > 1:
        raise ValueError(
            f"A 1-D y_proba is the probability of one class of a binary problem, "
            f"but y_true has the classes {classes}; pass one column per class."
        )
    return [*others, pos_label] if others else [pos_label]


def resolve_curve(y_true, y_proba, *, kind, class_index, pos_label, labels):
    """``(kind, class_index, labels)`` to pass to
    :func:`~skcalib.metrics.reliability_curve`.

    ``kind=None``: ``"classwise"`` of the positive class for a binary
    problem (column 1, or the column of ``pos_label``), ``"confidence"``
    otherwise; ``"classwise"`` as well for more classes when a class is
    chosen. ``pos_label`` with a 1-D ``y_proba`` names the class whose
    probability it is. Only the ``pos_label`` side is checked here; the
    column is checked by :func:`~skcalib.metrics.reliability_curve`.
    """
    if kind is not None:
        check_option(kind, "kind", KINDS)
    if pos_label is not None and class_index is not None:
        raise ValueError(
            f"Pass class_index or pos_label, not both (got class_index="
            f"{class_index!r} and pos_label={pos_label!r})."
        )
    chosen = pos_label is not None or class_index is not None
    binary = _n_classes(y_true, y_proba, labels) <= 2
    if kind is None:
        kind = "classwise" if binary or chosen else "confidence"
    if pos_label is None:
        if kind == "classwise" and class_index is None and binary:
            if not _order_decided(y_true, labels):
                classes = _classes_of(y_true, labels)
                raise ValueError(
                    f"y_true has the labels {classes}, with no order to tell the "
                    "positive class; pass pos_label= (the class whose probability "
                    "is drawn) or labels= (the positive class is labels[1])."
                )
            class_index = 1
        return kind, class_index, labels
    if kind == "confidence":
        raise ValueError(
            "pos_label selects one class, but kind='confidence' pools every "
            "class; use kind='classwise' (probability of that class vs. being "
            "that class) or kind='top_label' (samples predicted as that class)."
        )
    if np.ndim(y_proba) == 1:
        labels = _binary_labels_for_pos_label(y_true, pos_label, labels)
        return kind, len(labels) - 1, labels
    known = _classes_of(y_true, labels)
    if pos_label not in known:
        raise ValueError(f"pos_label={pos_label!r} is not one of the classes {known}.")
    return kind, known.index(pos_label), labels
