"""Metric inputs to totals: the one place that picks the backend.

Every metric is *validate, then totals, then reduce*. The functions here do
the first two steps for in-memory arrays or, when
:func:`~skcalib._core.inputs.input_kind` names an engine (Dask, Spark, Ray),
on its blocks (:mod:`skcalib.metrics._engine_metrics`), or, when ``y_proba`` is
of another array-API namespace under ``array_api_dispatch=True``
(:func:`~skcalib._core.xp.namespace`), on its device
(:mod:`skcalib.metrics._xp_metrics`); the metric functions then reduce the
totals with the same code whatever their source.
"""

from dataclasses import dataclass

from skcalib._core.inputs import (
    check_metric_inputs,
    check_n_bins,
    curve_cells,
    input_kind,
    reject_discrete_dask,
)
from skcalib._core.losses import loss_sums
from skcalib._core.totals import statistics
from skcalib._core.xp import namespace
from skcalib.metrics import _engine_metrics, _xp_metrics

__all__ = []  # private module


@dataclass(frozen=True)
class BinnedTotals:
    """Per-cell statistics ``(5, n_groups, n_bins)``, the edges of each group,
    the resolved ``class_index`` (curves) and the weight scale (the weights
    of ``totals`` are the user's divided by it)."""

    totals: object
    edges: list
    class_index: int | None
    weight_scale: float


def binned_totals(
    y_true,
    y_proba,
    *,
    n_bins,
    strategy,
    kind,
    sample_weight,
    labels,
    class_index=None,
    curve=False,
):
    """:class:`BinnedTotals` of the inputs of a binned metric.

    ``curve``: for :func:`~skcalib.metrics.reliability_curve`, which
    resolves ``class_index`` and pools ``kind="top_label"`` without one.
    """
    args = dict(n_bins=n_bins, strategy=strategy, kind=kind)
    args.update(sample_weight=sample_weight, labels=labels)
    args.update(class_index=class_index, curve=curve)
    if (engine := input_kind(y_true, y_proba, sample_weight)) != "numpy":
        reject_discrete_dask(strategy)
        totals = _engine_metrics.binned_totals(engine, y_true, y_proba, **args)
        return BinnedTotals(*totals)
    if (ns := namespace(y_proba)) is not None:
        return BinnedTotals(*_xp_metrics.binned_totals(ns, y_true, y_proba, **args))
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels, check_values=False
    )
    n_bins = check_n_bins(n_bins, inp.n_samples)
    if curve:
        kind, class_index = curve_cells(kind, class_index, inp.n_classes)
    totals, edges = statistics(inp, kind, n_bins, strategy, class_index=class_index)
    return BinnedTotals(totals, edges, class_index, inp.weight_scale)


def loss_totals(y_true, y_proba, *, loss, sample_weight, labels):
    """``(loss_sums, n_classes)`` of the inputs of a proper score
    (``loss``: ``"brier"`` or ``"log_loss"``; see
    :func:`~skcalib._core.losses.loss_sums`)."""
    if (engine := input_kind(y_true, y_proba, sample_weight)) != "numpy":
        return _engine_metrics.loss_totals(
            engine, y_true, y_proba, sample_weight=sample_weight, labels=labels
        )
    if (ns := namespace(y_proba)) is not None:
        return _xp_metrics.loss_totals(
            ns, y_true, y_proba, loss=loss, sample_weight=sample_weight, labels=labels
        )
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    sums = loss_sums(inp, nll=loss == "log_loss", brier=loss == "brier")
    return sums, inp.n_classes
