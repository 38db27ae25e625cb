"""The totals of the metrics of an engine's inputs: per-block statistics,
summed.

The pass definitions of every engine (Dask, Spark, Ray; see
:mod:`skcalib._backends.engines`). Every block runs the chunk functions of
:mod:`skcalib._core.totals` and :mod:`skcalib._core.losses` (the same code
as for in-memory arrays) and returns small per-cell sums;
:func:`skcalib._backends.engines.map_reduce_totals` adds them up in block
order. The metric functions reduce the totals as they reduce those of
in-memory arrays (:mod:`skcalib.metrics._dispatch`).

Passes over the data (each one engine job: a ``dask.compute``, a Spark job,
a Ray Data execution):

* without ``labels``, one pass over ``y_true`` collects its distinct labels
  (the metric functions resolve the classes from them);
* with weights, one pass for their largest value;
* uniform bins: one pass for the statistics (and the value checks);
* quantile bins: 2 to 4 passes of an exact selection of the quantile
  edges (:class:`~skcalib._core.quantile_search.QuantileEdgeSearch`: a
  coarse histogram, then the scores of the bins holding the edges), then
  the statistics.
"""

import copy
from functools import partial

import numpy as np

from skcalib._backends.engines import (
    get,
    map_reduce_totals,
    resolve_classes,
    weight_scale,
)
from skcalib._core.binning import bin_edges
from skcalib._core.inputs import check_chunk, check_n_bins, curve_cells
from skcalib._core.losses import loss_sums
from skcalib._core.quantile_search import QuantileEdgeSearch
from skcalib._core.totals import check_values, chunk_totals, iter_groups

__all__ = []  # private module


# ----------------------------------------------------------------- kernels
def _sizes(inp):
    w = inp.sample_weight
    return np.array([inp.n_samples, inp.n_samples if w is None else w.sum()], float)


def _totals_kernel(y, proba, weight=None, *, classes, kind, edges, class_index, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    return chunk_totals(inp, kind, edges, class_index=class_index), _sizes(inp)


def _loss_kernel(y, proba, weight=None, *, classes, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    check_values(inp)
    return loss_sums(inp), _sizes(inp)


def _search_kernel(y, proba, weight=None, *, classes, kind, class_index, search, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    if search.n_passes == 0:
        check_values(inp)
    groups = iter_groups(inp, kind, class_index)
    counts = search.digit_counts([(s, w) for _, s, _, w in groups])
    return counts, _sizes(inp)


def _search_combine(parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return QuantileEdgeSearch.merge([p[0] for p in parts]), sum(p[1] for p in parts)


def _accumulator_kernel(y, proba, weight=None, *, make, classes):
    return make(labels=classes).update(y, proba, weight)


def _merge_accumulators(parts):
    total = copy.deepcopy(parts[0])  # never change a task's result in place
    for p in parts[1:]:
        total.merge(p)
    return total


# ------------------------------------------------------------------ passes
def _n_groups(kind, class_index, n_classes):
    return 1 if kind == "confidence" or class_index is not None else n_classes


def _quantile_edges(blocks, classes, kind, n_bins, class_index, scale):
    """The exact quantile edges of each group, 2 to 4 passes."""
    n_groups = _n_groups(kind, class_index, classes.size)
    search = QuantileEdgeSearch(
        n_groups, n_bins, blocks.score_dtype, weighted=blocks.weighted
    )
    while not search.done:
        kernel = partial(
            _search_kernel,
            classes=classes,
            kind=kind,
            class_index=class_index,
            search=search,
            scale=scale,
        )
        search.advance(map_reduce_totals(blocks, kernel, _search_combine))
    return search.edges()


def _totals(blocks, classes, kind, n_bins, strategy, class_index=None, scale=None):
    """Per-cell statistics of the whole data and the edges of each group
    (weights divided by ``scale``)."""
    if strategy == "uniform":
        n_groups = _n_groups(kind, class_index, classes.size)
        edges = [bin_edges(None, n_bins, "uniform")] * n_groups
    else:
        edges = _quantile_edges(blocks, classes, kind, n_bins, class_index, scale)
    kernel = partial(
        _totals_kernel,
        classes=classes,
        kind=kind,
        edges=edges,
        class_index=class_index,
        scale=scale,
    )
    return map_reduce_totals(blocks, kernel), edges


# ------------------------------------------------------------- the metrics
def binned_totals(
    engine,
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
    """Per-cell statistics of the inputs of ``engine`` (its name), as
    :func:`skcalib.metrics._dispatch.binned_totals` gives them."""
    blocks = get(engine).blocks(y_true, y_proba, sample_weight)
    n_bins = check_n_bins(n_bins, blocks.n_rows)
    classes = resolve_classes(blocks, labels)
    if curve:
        kind, class_index = curve_cells(kind, class_index, classes.size)
    scale = weight_scale(blocks)
    totals, edges = _totals(blocks, classes, kind, n_bins, strategy, class_index, scale)
    return totals, edges, class_index, 1.0 if scale is None else scale


def loss_totals(engine, y_true, y_proba, *, sample_weight, labels):
    """The :func:`~skcalib._core.losses.loss_sums` of the inputs of
    ``engine`` and the number of classes."""
    blocks = get(engine).blocks(y_true, y_proba, sample_weight)
    classes = resolve_classes(blocks, labels)
    kernel = partial(_loss_kernel, classes=classes, scale=weight_scale(blocks))
    return map_reduce_totals(blocks, kernel), classes.size


def accumulate(engine, acc, y_true, y_proba, sample_weight=None):
    """An accumulator like ``acc`` (same class, edges, ``classwise``)
    holding the inputs of ``engine``."""
    blocks = get(engine).blocks(y_true, y_proba, sample_weight)
    classes = acc.classes_
    if classes is None:
        classes = resolve_classes(blocks, acc.labels)
    make = partial(
        type(acc), n_bins=acc.n_bins, edges=acc.edges, classwise=acc.classwise
    )
    kernel = partial(_accumulator_kernel, make=make, classes=classes)
    return blocks.map_reduce(kernel, _merge_accumulators)
