"""What ``ReliabilityDisplay.from_predictions`` computes before it draws.

Labels and probabilities -> the kind and class of the curve
(:mod:`skcalib.plotting._classes`) -> :func:`skcalib.metrics.reliability_curve`
-> the legend ECE from the curve's own per-bin values (and, on request, its
interval from :func:`skcalib.metrics.calibration_error_interval`) -> the
overlaid CORP and smoothed curves -> the arguments of ``ReliabilityDisplay``.
"""

import numpy as np

from skcalib.metrics import (
    calibration_error_interval,
    corp_decomposition,
    expected_calibration_error,
    reliability_curve,
)
from skcalib.plotting._annotations import class_label, ece_of_curve
from skcalib.plotting._classes import check_option, resolve_curve

_OVERLAYS = ("isotonic", "smooth")
#: Bootstrap resamples of the legend's ECE interval (``legend_interval=True``).
LEGEND_INTERVAL_RESAMPLES = 1000


def _curve_and_ece(y_true, y_proba, *, kind, labels, class_index, **params):
    """The curve and its legend ECE, of the same kind as the curve.

    ``params``: ``n_bins``, ``strategy``, ``sample_weight``,
    ``confidence_level``, ``n_resamples``, ``random_state``, ``interval``
    and ``band`` of :func:`~skcalib.metrics.reliability_curve`. A CORP curve
    (``strategy="isotonic"``) has no legend ECE (its legend shows MCB).
    """
    curve = reliability_curve(
        y_true, y_proba, kind=kind, class_index=class_index, labels=labels, **params
    )
    if curve.strategy == "isotonic":
        ece = None
    elif kind == "top_label" and curve.class_index is None:
        # The top-label ECE bins each predicted class apart: cells that the
        # pooled curve drawn does not have.
        for key in ("confidence_level", "n_resamples", "random_state"):
            params.pop(key)
        params.pop("interval")
        params.pop("band")
        params["n_bins"] = curve.n_bins  # a rule name, resolved
        ece = expected_calibration_error(
            y_true, y_proba, kind=kind, labels=labels, **params
        )
    else:  # the weighted mean gap of the bins drawn
        ece = ece_of_curve(curve)
    return curve, ece


def _one_class_problem(y_true, y_proba, sample_weight, curve, labels):
    """``(y, p, sample_weight)`` of the binary problem a one-class curve
    is about: the rows it bins (all for ``"classwise"``, those predicted as
    the class for ``"top_label"``), whether they are the class, and its
    probability. Its positive-class ECE is the ECE of ``curve``."""
    y_true = np.asarray(y_true)
    proba = np.asarray(y_proba, dtype=np.float64)
    if proba.ndim == 1:
        proba = np.column_stack((1.0 - proba, proba))
    classes = np.asarray(labels if labels is not None else np.unique(y_true))
    k = curve.class_index
    rows = slice(None)
    if curve.kind == "top_label":
        rows = np.argmax(proba, axis=1) == k
    w = None if sample_weight is None else np.asarray(sample_weight)[rows]
    return (y_true[rows] == classes[k]).astype(np.intp), proba[rows, k], w


def legend_ece_interval(y_true, y_proba, curve, *, labels, sample_weight, **params):
    """:func:`~skcalib.metrics.calibration_error_interval` of the legend ECE
    of ``curve`` (same kind, bins, weights and level), or None for a CORP
    curve. ``params``: ``n_bins``, ``strategy``, ``confidence_level``,
    ``random_state``. Its ``statistic`` is the legend ECE."""
    if curve.strategy == "isotonic":
        return None
    common = dict(
        n_resamples=LEGEND_INTERVAL_RESAMPLES, confidence_level=curve.confidence_level
    )
    if curve.class_index is None:  # pooled: confidence or top-label ECE
        return calibration_error_interval(
            y_true,
            y_proba,
            kind=curve.kind,
            labels=labels,
            sample_weight=sample_weight,
            **common,
            **params,
        )
    y, p, w = _one_class_problem(y_true, y_proba, sample_weight, curve, labels)
    return calibration_error_interval(
        y, p, kind="classwise", labels=[0, 1], sample_weight=w, **common, **params
    )


def _overlays(y_true, y_proba, curve, overlay, *, kind, labels, **params):
    """``(isotonic_curve, smooth_curve, mcb)`` for the display of ``curve``:
    the CORP curve when ``"isotonic"`` is in ``overlay`` (None when
    ``curve`` is itself one), the Brier MCB of the CORP curve drawn, the
    smoothed curve when ``"smooth"`` is in ``overlay``; None for what is
    not drawn. ``params``: ``sample_weight``, ``confidence_level``,
    ``n_resamples``, ``random_state``."""
    overlay = (overlay,) if isinstance(overlay, str) else tuple(overlay)
    for item in overlay:
        check_option(item, "overlay", _OVERLAYS)
    common = dict(
        kind=kind,
        class_index=curve.class_index,
        sample_weight=params.pop("sample_weight"),
        labels=labels,
    )
    iso = None
    if curve.strategy != "isotonic" and "isotonic" in overlay:
        iso = reliability_curve(
            y_true, y_proba, strategy="isotonic", **common, **params
        )
    mcb = None
    if iso is not None or curve.strategy == "isotonic":
        mcb = corp_decomposition(y_true, y_proba, **common).miscalibration
    smooth = None
    if "smooth" in overlay:
        from skcalib.metrics import smooth_reliability_curve

        smooth = smooth_reliability_curve(y_true, y_proba, **common)
    return iso, smooth, mcb


def display_data(
    y_true, y_proba, overlay, *, kind, class_index, pos_label, labels, **params
):
    """The arguments of ``ReliabilityDisplay(...)`` but ``name``: the curve,
    its legend ECE (and its interval when ``params["legend_interval"]``)
    and class, and the overlaid curves. ``params``: ``n_bins``,
    ``strategy``, ``sample_weight``, ``confidence_level``, ``n_resamples``,
    ``random_state``, ``legend_interval``, ``interval``, ``band``."""
    want_interval = params.pop("legend_interval")
    kind, class_index, labels = resolve_curve(
        y_true,
        y_proba,
        kind=kind,
        class_index=class_index,
        pos_label=pos_label,
        labels=labels,
    )
    curve, ece = _curve_and_ece(
        y_true, y_proba, kind=kind, labels=labels, class_index=class_index, **params
    )
    interval = None
    if want_interval:
        interval = legend_ece_interval(
            y_true,
            y_proba,
            curve,
            labels=labels,
            sample_weight=params["sample_weight"],
            n_bins=curve.n_bins,
            strategy=params["strategy"],
            random_state=params["random_state"],
        )
    keys = ("sample_weight", "confidence_level", "n_resamples", "random_state")
    iso, smooth, mcb = _overlays(
        y_true,
        y_proba,
        curve,
        overlay,
        kind=kind,
        labels=labels,
        **{key: params[key] for key in keys},
    )
    classes = labels
    if classes is None and curve.class_index is not None:
        classes = np.unique(np.asarray(y_true))
    return dict(
        prob_true=curve.accuracy,
        prob_pred=curve.mean_confidence,
        counts=curve.counts,
        edges=curve.edges,
        lower=curve.lower,
        upper=curve.upper,
        ece=ece,
        ece_interval=interval,
        kind=kind,
        class_label=class_label(classes, curve.class_index),
        curve=curve,
        mcb=mcb,
        isotonic_curve=iso,
        smooth_curve=smooth,
    )
