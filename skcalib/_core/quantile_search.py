"""Quantiles of scores: in one array, and pass by pass over data in chunks.

:func:`weighted_quantiles` gives the quantile edges of
:func:`~skcalib._core.binning.bin_edges` (the inverted empirical CDF, with
weights); :class:`QuantileEdgeSearch` finds the same edges from a few passes
over data that cannot be held at once (Dask arrays, Spark and Ray tables),
by the exact selection of :mod:`skcalib._core.order_search` on the bit
patterns of the scores (:func:`sortable_keys`).
"""

import numpy as np

from skcalib._core.order_search import (
    COLLECT_LIMIT,
    OrderStatisticSearch,
    sortable_keys,
)

__all__ = []  # private module
_REEXPORTS = (sortable_keys,)  # imported from here


def weighted_quantiles(scores, quantiles, sample_weight=None):
    """Quantiles of ``scores`` by the inverted empirical CDF.

    The quantile ``q`` is the smallest score whose cumulative (normalised)
    weight reaches ``q`` (``np.quantile(method="inverted_cdf")`` without
    weights). Edges are therefore data values, and a weight of 2 gives the
    same edges as a duplicated row. The caller removes rows of weight 0.

    A cumulative weight within the rounding of the sums (``4 n eps``,
    relative) of ``q`` reaches it, so weights ``c * w`` give the same edges
    as ``w`` for any ``c`` (a plain comparison flips exact ties when ``c`` is
    not a power of two).
    """
    if sample_weight is None:
        return np.quantile(scores, quantiles, method="inverted_cdf")
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    cum = np.cumsum(np.asarray(sample_weight, dtype=np.float64)[order])
    slack = 1.0 - 4.0 * s.size * np.finfo(np.float64).eps
    idx = np.searchsorted(cum, np.asarray(quantiles) * cum[-1] * slack, side="left")
    return s[np.minimum(idx, s.size - 1)].astype(np.float64)


def edges_from_quantiles(values, top):
    """The bin edges of :func:`~skcalib._core.binning.bin_edges` from the
    quantile values of the scores (``strategy="quantile"``) or other data
    values taken as interior edges.

    ``values`` (any float dtype, any order) are clipped to ``[0, 1]``; those
    at or above ``min(1, top)`` are dropped, where ``top`` is the largest
    score of positive weight (1 is already the last edge, and an edge at the
    largest score would only open an empty top bin); ties are merged, and
    the first and last edges are 0 and 1. An edge at 0 is kept: the bin
    ``[0, 0]`` of the scores at exactly 0. Every numpy and array-API path
    finishes its edges here (the values are few, ``n_bins - 1``).

    Returns
    -------
    edges : ndarray, float64
        Increasing, ``edges[0] == 0`` and ``edges[-1] == 1``; each interior
        edge is one of ``values`` exactly (float32 values stay exact).

    Examples
    --------
    >>> edges_from_quantiles(np.array([0.0, 0.25, 0.25, 0.7, 0.9]), top=0.7)
    array([0.  , 0.  , 0.25, 1.  ])
    """
    interior = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0)
    interior = interior[interior < min(1.0, float(top))]
    return np.concatenate(([0.0], np.unique(interior), [1.0]))


# ------------------------------------------------ quantile edges, pass by pass
def quantile_levels(n_bins):
    """The interior levels ``k / n_bins`` (``k = 1 .. n_bins - 1``) of
    equal-mass bins, each the correctly rounded quotient.

    ``np.linspace(0, 1, n_bins + 1)`` rounds some of them up (``3 / 5`` is
    ``0.6000000000000001`` there), which moves an inverted-CDF edge by one
    sample when ``n * k / n_bins`` is an integer.
    """
    return np.arange(1, n_bins, dtype=np.float64) / n_bins


def inverted_cdf_ranks(n, quantiles):
    """0-based index in the sorted data of each quantile of ``n`` values.

    The index ``np.quantile(..., method="inverted_cdf")`` takes: ``n q - 1``
    when it is an integer, else its ceiling (at least 0), computed in float64
    as numpy does.
    """
    index = n * np.asarray(quantiles, dtype=np.float64) - 1
    below = np.floor(index)
    ranks = np.where(index - below == 0, below, below + 1).astype(np.intp)
    return np.maximum(ranks, 0)


class QuantileEdgeSearch(OrderStatisticSearch):
    """The quantile edges of data that can be read several times.

    Exact quantiles need every score at once; this finds the same edges from
    two to four passes over the data in chunks, each chunk giving small
    counts that add up (so chunks can be processed anywhere and merged in
    any order): a coarse histogram, then the scores of the bins that hold
    the quantiles (see :class:`~skcalib._core.order_search.OrderStatisticSearch`).

    Parameters
    ----------
    n_groups : int
        Number of independent sets of scores (groups), each with its edges.
    n_bins : int
        Number of bins asked for.
    dtype : {numpy.float32, numpy.float64}
        Dtype of the scores (every chunk must have it).
    weighted : bool
        Whether chunks come with sample weights.
    collect_limit : int, optional
        Most rows a pass brings back (see ``OrderStatisticSearch``).

    Notes
    -----
    Equal to :func:`~skcalib._core.binning.bin_edges` (``strategy="quantile"``)
    on the concatenated scores of each group: exactly without weights (integer
    ranks), and with weights whose cumulative sums are exact (integers, or
    multiples of a power of two, below ``2**53``). With other weights, the
    cumulative weight is summed in another order than ``np.cumsum`` over the
    sorted scores; an edge can then differ only when the cumulative weight of a
    score is within rounding error (``~1e-16`` relative) of a quantile level.

    A pass reads ``chunks`` through :meth:`digit_counts` (per chunk),
    :meth:`merge` (any grouping) and :meth:`advance` (once per pass); once
    :attr:`done`, :meth:`edges` gives the edges. Memory: at most ``2**16``
    counts per group and pass, or ``COLLECT_LIMIT`` scores in all, whatever
    the number of scores.
    """

    def __init__(self, n_groups, n_bins, dtype, weighted, collect_limit=COLLECT_LIMIT):
        super().__init__(n_groups, dtype, weighted, collect_limit)
        self.n_bins = int(n_bins)

    def goals(self, n, total_weight):
        """The inverted-CDF rank (count goal) of each level ``k / n_bins``;
        weighted, the level's share of the weight, less the rounding slack
        of :func:`weighted_quantiles`."""
        levels = quantile_levels(self.n_bins)
        if self.weighted:
            slack = 1.0 - 4.0 * n * np.finfo(np.float64).eps
            return levels * total_weight * slack
        return inverted_cdf_ranks(n, levels) + 1.0

    def edges(self):
        """Edges of every group, as :func:`~skcalib._core.binning.bin_edges` gives them.

        Returns
        -------
        edges : list of ndarray
            One array per group (``[0, 1]`` for a group without scores).
        """
        out = []
        for g in range(self.n_groups):
            values, at_most = self.values(g)
            if values is None:
                out.append(np.array([0.0, 1.0]))
                continue
            # The largest score is the smallest edge with every score at or
            # below it (1 when there is none: every edge is below it).
            top = np.min(values[at_most >= self._n[g]], initial=1.0)
            out.append(edges_from_quantiles(values, top))
        return out
