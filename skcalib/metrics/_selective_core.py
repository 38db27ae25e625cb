"""The arithmetic of selective prediction: confidences, per-sample losses,
the risk-coverage curve and its area.

The public functions of :mod:`skcalib.metrics._selective` validate their
inputs with :func:`selective_inputs` and reduce the sorted cumulative sums
of :func:`curve_from_scores`; the area under the curve is
:func:`curve_area`, the risk at a coverage :func:`risk_at`.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_array

from skcalib._core.inputs import check_metric_inputs
from skcalib._core.losses import sample_nll
from skcalib._core.top1 import iter_top1

__all__ = []  # private module

#: Confidence scores computed from ``y_proba`` (higher = more confident).
CONFIDENCES = ("max_proba", "margin", "negative_entropy")
#: Per-sample losses computed from ``y_true`` and ``y_proba``.
LOSSES = ("error", "brier", "log_loss")


@dataclass(frozen=True, eq=False)
class SelectiveInputs:
    """Validated inputs: one confidence, loss and weight per sample.

    Rows of zero weight are dropped (a weight of 0 is a dropped row);
    ``weight`` is None without weights.
    """

    confidence: np.ndarray
    loss: np.ndarray
    weight: np.ndarray | None


def two_columns(inp):
    """``y_proba`` as ``(n, K)`` (a 1-D binary column becomes two)."""
    p = inp.proba
    if p.ndim == 1:
        return np.column_stack([1.0 - p, p])
    return p


def top1(proba):
    """``(pred, conf)``: the arg-max column and the largest probability of
    each row (1-D binary: ``p > 0.5`` and ``max(p, 1 - p)``), from the one
    top-1 scan of the package, which also checks the probability values."""
    n = proba.shape[0]
    pred, conf = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.float64)
    for start, stop, pred_blk, conf_blk in iter_top1(proba):
        pred[start:stop], conf[start:stop] = pred_blk, conf_blk
    return pred, conf


def confidence_scores(inp, confidence, max_proba):
    """The confidence of each row of ``inp.proba`` named by ``confidence``
    (``max_proba``: the largest probabilities, from :func:`top1`)."""
    if confidence == "max_proba":
        return max_proba
    p = two_columns(inp)
    if confidence == "margin":
        top2 = np.partition(p, p.shape[1] - 2, axis=1)[:, -2:]
        return (top2[:, 1] - top2[:, 0]).astype(np.float64)
    p = p.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(p), 0.0)
    return plogp.sum(axis=1)


def sample_losses(inp, loss, y_true, pred):
    """The loss of each sample: a name of :data:`LOSSES` or a callable
    (``pred``: the predicted columns, from :func:`top1`)."""
    if loss == "error":
        return (pred != inp.y).astype(np.float64)
    if loss == "log_loss":
        return sample_nll(inp.y, inp.proba)
    if loss == "brier":
        if inp.n_classes == 2:
            pos = inp.proba if inp.proba.ndim == 1 else inp.proba[:, 1]
            return np.square(pos.astype(np.float64) - inp.y)
        diff = inp.proba.astype(np.float64)
        diff[np.arange(inp.n_samples), inp.y] -= 1.0
        return np.einsum("ij,ij->i", diff, diff)
    values = loss(np.asarray(y_true), inp.proba)
    return check_scores(values, inp.n_samples, "the per-sample losses of loss=")


def check_scores(values, n_samples, name):
    """``values`` as finite float64 of shape ``(n_samples,)``, else a
    ``ValueError`` naming ``name``, the shape or the first bad value."""
    arr = check_array(
        values,
        ensure_2d=False,
        dtype=np.float64,
        ensure_all_finite=False,
        input_name=name,
        ensure_min_samples=0,
    )
    if arr.shape != (n_samples,):
        raise ValueError(
            f"{name} must have shape ({n_samples},) (one value per sample), "
            f"got shape {arr.shape}."
        )
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"{name} must be finite; value {int(bad[0])} is {arr[bad[0]]}."
        )
    return arr


def _check_option(value, name, options, other):
    """A string ``value`` must be one of ``options`` (for callers that skip
    ``validate_params``, such as the display)."""
    if isinstance(value, str) and value not in options:
        raise ValueError(
            f"{name} must be one of {list(options)} or {other}, got {value!r}."
        )
    if name == "loss" and not isinstance(value, str) and not callable(value):
        raise TypeError(f"loss must be a str or a callable, got {value!r}.")


def selective_inputs(y_true, y_proba, *, confidence, loss, sample_weight, labels):
    """Validate the inputs of a selective-prediction metric.

    Labels and probabilities by :func:`~skcalib._core.inputs.check_metric_inputs`
    (the columns are never guessed); ``confidence`` a name of
    :data:`CONFIDENCES` or one finite score per sample; ``loss`` a name of
    :data:`LOSSES` or a callable ``loss(y_true, y_proba)`` returning one
    finite loss per sample.
    """
    _check_option(confidence, "confidence", CONFIDENCES, "an array of scores")
    _check_option(loss, "loss", LOSSES, "a callable")
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels, check_values=False
    )
    pred, max_proba = top1(inp.proba)
    if isinstance(confidence, str):
        conf = confidence_scores(inp, confidence, max_proba)
    else:
        conf = check_scores(confidence, inp.n_samples, "confidence")
    losses = sample_losses(inp, loss, y_true, pred)
    weight = inp.sample_weight
    if weight is not None and np.any(weight == 0):
        keep = weight > 0
        conf, losses, weight = conf[keep], losses[keep], weight[keep]
    return SelectiveInputs(confidence=conf, loss=losses, weight=weight)


def curve_from_scores(confidence, loss, weight):
    """``(coverage, risk, thresholds)``: one point per distinct confidence.

    One stable sort by decreasing confidence, then cumulative sums read at
    the last row of each run of equal confidences: samples with equal
    confidence enter together, so nothing depends on the order of the rows.
    """
    order = np.argsort(-confidence, kind="stable")
    conf = confidence[order]
    ends = np.append(np.flatnonzero(conf[1:] != conf[:-1]), conf.size - 1)
    if weight is None:
        cum_w = (ends + 1).astype(np.float64)
        cum_l = np.cumsum(loss[order])[ends]
    else:
        w = weight[order]
        cum_w = np.cumsum(w)[ends]
        cum_l = np.cumsum(w * loss[order])[ends]
    return cum_w / cum_w[-1], cum_l / cum_w, conf[ends]


def curve_area(coverage, risk):
    """The area under the risk-coverage curve (see ``aurc``'s Notes).

    Between two points the cumulative loss ``L(c) = c r(c)`` is linear in
    the coverage ``c``, so the piece from ``c0`` to ``c1`` has the area
    ``(L1 - L0) + (L0 - c0 s) log(c1 / c0)`` with slope ``s = (L1 - L0) /
    (c1 - c0)``; the first piece, from 0, has ``r`` constant.
    """
    cum = coverage * risk
    c0, c1 = coverage[:-1], coverage[1:]
    slope = np.diff(cum) / (c1 - c0)
    log_ratio = np.log1p((c1 - c0) / c0)
    return float(cum[-1] + np.sum((cum[:-1] - c0 * slope) * log_ratio))


def generalized_curve_area(coverage, risk):
    """The area under the generalised risk-coverage curve (see ``augrc``'s
    Notes): the cumulative loss ``L(c) = c r(c)`` is linear between the
    points (and from ``(0, 0)`` to the first), so the area is the trapezoid
    rule, exactly."""
    cum = np.append(0.0, coverage * risk)
    return float(np.diff(np.append(0.0, coverage)) @ (cum[1:] + cum[:-1]) / 2.0)


def risk_at(coverage, risk, target):
    """The risk of the curve at coverage ``target`` (in ``(0, 1]``), on the
    same linear interpolation of the cumulative loss as :func:`curve_area`."""
    cum = np.interp(target, np.append(0.0, coverage), np.append(0.0, coverage * risk))
    return float(cum / target)


def oracle_curve(loss, weight):
    """The curve of the best ranking: increasing loss (confidence ``-loss``)."""
    return curve_from_scores(-loss, loss, weight)
