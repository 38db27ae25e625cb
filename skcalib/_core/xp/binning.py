"""Bin edges and per-bin sums on an array-API namespace (torch, CuPy,
array-api-strict, ...): the counterpart of :mod:`skcalib._core.binning`
for scores that live on a device, by the same bin convention.

The scores are sorted once on the device (:func:`sorted_scores`); from the
sorted scores

* the quantile edges (:func:`xp_quantile_edges`) are the same data values
  :func:`~skcalib._core.binning.bin_edges` takes: the inverted-CDF ranks
  (unweighted) or the positions where the cumulative weight reaches each
  level (weighted, ``searchsorted`` on the device) are gathered on the
  device, and only those ``n_bins`` values cross to the host, where
  numpy's rule finishes them
  (:func:`~skcalib._core.quantile_search.edges_from_quantiles`: clip,
  drop the edge at the top, merge ties);
* the per-bin sums (:func:`xp_binned_sums`) are differences of cumulative
  sums at the positions of the edges (``searchsorted`` of the interior
  edges in the sorted scores, right side: a score on an edge is in the
  lower bin). Counts without weights are integer cumulative sums (exact);
  weighted sums accumulate in
  :attr:`~skcalib._core.xp.Namespace.accumulate_dtype` (float64 where the
  device has it; a device without float64 sums in float32, to about
  ``1e-7 * n`` relative error of a bin's sum). The ``n_bins`` totals of
  each quantity cross to the host in one transfer.

Assigning scores to the bins of fitted edges is :func:`xp_lookup_bins`
(``searchsorted`` of the scores in the interior edges, left side).
"""

import numpy as np

from skcalib._core.binning import check_n_bins
from skcalib._core.quantile_search import (
    edges_from_quantiles,
    inverted_cdf_ranks,
    quantile_levels,
)
from skcalib._core.xp import to_numpy

__all__ = []  # private module


def np_dtype(ns, dtype):
    """The numpy float dtype of a namespace float dtype."""
    return np.float32 if dtype == ns.xp.float32 else np.float64


def _interior(ns, edges, dtype):
    """The interior edges on the device, in the score dtype (edges are
    compared with scores in the precision of the scores)."""
    edges = np.asarray(to_numpy(edges), dtype=np.float64)
    return ns.asarray(edges[1:-1].astype(np_dtype(ns, dtype)))


def sorted_scores(ns, score, sample_weight=None):
    """``(order, score[order], sample_weight[order])`` for the stable sort
    of ``score`` (the weights None when they are)."""
    xp = ns.xp
    order = xp.argsort(score, stable=True)
    w = None if sample_weight is None else xp.take(sample_weight, order)
    return order, xp.take(score, order), w


def xp_quantile_edges(ns, s_sorted, n_bins, w_sorted=None):
    """:func:`~skcalib._core.binning.bin_edges` with ``strategy="quantile"``
    from sorted scores of the device (and their weights); numpy float64
    edges."""
    n_bins = check_n_bins(n_bins, s_sorted.shape[0])
    xp = ns.xp
    if w_sorted is not None:
        keep = w_sorted > 0
        if not bool(xp.all(keep)):
            s_sorted, w_sorted = s_sorted[keep], w_sorted[keep]
    size = s_sorted.shape[0]
    if size == 0:
        return np.array([0.0, 1.0])
    quantiles = quantile_levels(n_bins)
    if w_sorted is None:
        idx = inverted_cdf_ranks(size, quantiles)
    else:
        cum = xp.cumulative_sum(xp.astype(w_sorted, ns.accumulate_dtype))
        slack = 1.0 - 4.0 * size * np.finfo(np.float64).eps
        total = float(to_numpy(cum[-1]))
        levels = ns.asarray(quantiles * total * slack, dtype=cum.dtype)
        idx = xp.searchsorted(cum, levels, side="left")
        idx = xp.clip(idx, None, size - 1)
    picked = xp.concat((xp.take(s_sorted, ns.asarray(idx)), s_sorted[-1:]))
    values = to_numpy(picked)  # n_bins values cross to the host
    return edges_from_quantiles(values[:-1], values[-1])


def xp_binned_sums(ns, s_sorted, edges, w_sorted=None, *values):
    """:func:`~skcalib._core.binning.binned_sums` of sorted scores (numpy
    float64 totals: the weight of each bin, then the weighted sum of each
    of ``values``, arrays in the order of ``s_sorted``)."""
    xp = ns.xp
    n = s_sorted.shape[0]
    interior = _interior(ns, edges, s_sorted.dtype)
    inner = xp.searchsorted(s_sorted, interior, side="right")
    bounds = xp.concat(
        (
            xp.zeros(1, dtype=inner.dtype, device=ns.device),
            inner,
            xp.full(1, n, dtype=inner.dtype, device=ns.device),
        )
    )
    acc = ns.accumulate_dtype
    if w_sorted is None:
        counts = xp.astype(bounds[1:] - bounds[:-1], acc)
        quantities = []
        for v in values:
            exact = xp.isdtype(v.dtype, "bool")  # integer sums: exact counts
            quantities.append(xp.astype(v, xp.int64 if exact else acc))
    else:
        w = xp.astype(w_sorted, acc)
        counts = None
        quantities = [w] + [w * xp.astype(v, acc) for v in values]
    sums = []
    for q in quantities:
        cum = xp.cumulative_sum(q, include_initial=True)
        part = xp.take(cum, bounds[1:]) - xp.take(cum, bounds[:-1])
        sums.append(xp.astype(part, acc))
    if counts is not None:
        sums.insert(0, counts)
    host = to_numpy(xp.stack(sums)).astype(np.float64)
    return tuple(host[i] for i in range(host.shape[0]))


def xp_lookup_bins(ns, score, edges, table):
    """``table[bin of each score]`` on the device (right-closed bins:
    ``searchsorted`` of the scores in the interior edges, left side)."""
    xp = ns.xp
    interior = _interior(ns, edges, score.dtype)
    ids = xp.searchsorted(interior, score, side="left")
    return xp.take(ns.asarray(np.asarray(to_numpy(table))), ids, axis=0)
