"""Inputs of conformal risk control: the loss resolved from the form of
``y``, per-label probabilities checked, the warning of an infeasible
level."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target

from skcalib._core.warn import user_stacklevel

__all__ = []  # private module


def resolve_loss(loss, y):
    """``(loss, multilabel)``: ``loss`` with ``"auto"`` resolved from the
    form of ``y`` (a callable is kept), and whether ``y`` is a
    label-indicator matrix (the sets are then multi-label); an error when
    ``y`` has the wrong form for an explicit ``loss``."""
    shape = getattr(y, "shape", None)
    if shape is None and y is not None:
        try:
            shape = np.asarray(y).shape
        except ValueError:  # ragged lists: let the label checks name them
            shape = None
    shape = () if shape is None else tuple(shape)
    two_d = sp.issparse(y) or (len(shape) == 2 and shape[1] > 1)
    indicator = two_d and y is not None and _is_indicator(y)
    if callable(loss):
        return loss, indicator
    if loss == "auto":
        return ("fnr", True) if indicator else ("miscoverage", False)
    if loss == "miscoverage" and indicator:
        raise ValueError(
            "loss='miscoverage' needs one class label per row (y of shape "
            f"(n_samples,)); got a label-indicator matrix of shape {tuple(shape)}. "
            "Pass loss='fnr' for multi-label sets, or y.argmax(axis=1) if "
            "every row has exactly one label."
        )
    if loss == "fnr" and len(shape) == 1:
        raise ValueError(
            "loss='fnr' needs a label-indicator matrix y of shape (n_samples, "
            f"n_labels) with entries 0/1; got y of shape {tuple(shape)} (one "
            "label per row). Pass loss='miscoverage' for multiclass sets, or "
            "convert label sets with sklearn.preprocessing.MultiLabelBinarizer."
        )
    return loss, loss == "fnr"


def _is_indicator(y):
    try:
        return type_of_target(y) == "multilabel-indicator"
    except ValueError:
        return False


def check_label_proba(X, name, logit):
    """Per-label probabilities from raw ``X``: finite, in [0, 1] (or logits
    through the logistic function), float64."""
    X = np.asarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        i, j = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(
            f"{name} has a non-finite value {X[i, j]} at row {i}, label {j}; "
            "per-label probabilities must be finite."
        )
    if logit:
        return 0.5 * (1.0 + np.tanh(0.5 * X))  # the logistic function, no overflow
    bad = (X < 0) | (X > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"{name}[{i}, {j}] = {X[i, j].item()!r}: loss='fnr' needs per-label "
            "probabilities in [0, 1]; pass score_type='logit' for per-label "
            "log-odds."
        )
    return X


def warn_infeasible(alpha, total_weight, bound=1.0):
    warnings.warn(
        f"alpha={alpha} is below B / (n + 1) = {bound / (total_weight + 1):.4g} "
        f"for n = {total_weight:g} calibration rows (weighted): no lambda "
        "controls the risk, lambda is 1 and every set holds every label.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
