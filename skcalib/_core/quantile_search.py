"""Quantiles of scores: in one array, and pass by pass over data in chunks.

:func:`weighted_quantiles` gives the quantile edges of
:func:`~skcalib._core.binning.bin_edges` (the inverted empirical CDF, with
weights); :class:`QuantileEdgeSearch` finds the same edges from a few passes
over data that cannot be held at once (Dask arrays), by an exact radix
selection on the bit patterns of the scores (:func:`sortable_keys`).
"""

import numpy as np

__all__ = []  # private module


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
#: Bits of the score keys settled by each pass of :class:`QuantileEdgeSearch`:
#: a pass returns at most ``2**16`` counts per quantile (2 passes for float32
#: scores, 4 for float64).
_DIGIT_BITS = 16


def sortable_keys(scores):
    """Unsigned integer keys in the order of non-negative float scores.

    The IEEE-754 bit pattern of a non-negative float, read as an unsigned
    integer, increases with the value; ``-0.0`` is first turned into ``0.0``.
    float32 scores give ``uint32`` keys, float64 scores ``uint64`` keys.
    """
    scores = np.asarray(scores)
    if scores.dtype != np.float32:
        scores = scores.astype(np.float64, copy=False)
    utype = np.uint32 if scores.dtype == np.float32 else np.uint64
    return (scores + scores.dtype.type(0.0)).view(utype)


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


class QuantileEdgeSearch:
    """The quantile edges of data that can be read several times.

    Exact quantiles need every score at once; this finds the same edges from
    a few passes over the data in chunks, each chunk giving small counts that
    add up (so chunks can be processed anywhere and merged in any order).
    The scores are read as sortable integer keys (:func:`sortable_keys`) and
    settled 16 bits per pass (radix selection): pass ``l`` counts, for every
    quantile, the scores whose key starts with the bits already settled for
    it, by their next 16 bits, which fixes those bits. Two passes settle
    float32 keys, four float64 keys.

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
    :meth:`merge` (any grouping) and :meth:`advance` (once per pass); after
    :attr:`n_passes` passes :meth:`edges` gives the edges. Memory: at most
    ``2**16`` counts per quantile and group, whatever the number of scores.
    """

    def __init__(self, n_groups, n_bins, dtype, weighted):
        self.n_groups = int(n_groups)
        self.n_bins = int(n_bins)
        single = np.dtype(dtype) == np.float32
        self.dtype = np.dtype(np.float32 if single else np.float64)
        self.weighted = bool(weighted)
        self.level = 0
        self._n = np.zeros(self.n_groups, dtype=np.int64)
        self._weight = np.zeros(self.n_groups)
        # Per group: settled key prefix, count and weight of the smaller keys,
        # goal (count or fraction of weight) and count of keys <= the edge.
        self._targets = [None] * self.n_groups

    @property
    def n_passes(self):
        """Number of passes over the data (2 for float32, 4 for float64)."""
        return self.dtype.itemsize * 8 // _DIGIT_BITS

    @property
    def done(self):
        """Whether every pass has been made."""
        return self.level == self.n_passes

    def _shift(self):
        return np.uint64(self.dtype.itemsize * 8 - _DIGIT_BITS * (self.level + 1))

    def digit_counts(self, groups):
        """Counts of one chunk for the current pass.

        Parameters
        ----------
        groups : sequence of (scores, weights)
            For each group, its scores in this chunk (``self.dtype``, in
            ``[0, 1]``) and their weights (None when not ``weighted``).

        Returns
        -------
        counts : list of (codes, counts, weights)
            Per group, sorted distinct codes with the number and the total
            weight (None when not weighted) of the scores having each.
        """
        if self.done:
            raise ValueError("every pass of the quantile search is done.")
        shift, mask = self._shift(), np.uint64((1 << _DIGIT_BITS) - 1)
        out = []
        for g, (scores, weights) in enumerate(groups):
            scores = np.asarray(scores, dtype=self.dtype)
            if self.weighted:
                # Rows of weight 0 play no part (the same as dropping them).
                weights = np.asarray(weights, dtype=np.float64)
                positive = weights > 0
                if not positive.all():
                    scores, weights = scores[positive], weights[positive]
            keys = sortable_keys(scores)
            keys = keys.astype(np.uint64, copy=False)
            if self.level == 0:
                codes = keys >> shift
            else:
                t = self._targets[g]
                prefixes = np.zeros(0) if t is None else np.unique(t["prefix"])
                if prefixes.size == 0:
                    out.append(_no_counts(self.weighted))
                    continue
                head = keys >> (shift + np.uint64(_DIGIT_BITS))
                pos = np.minimum(np.searchsorted(prefixes, head), prefixes.size - 1)
                keep = np.flatnonzero(prefixes[pos] == head)
                codes = (pos[keep].astype(np.uint64) << np.uint64(_DIGIT_BITS)) | (
                    (keys[keep] >> shift) & mask
                )
                if weights is not None:
                    weights = np.asarray(weights)[keep]
            out.append(
                _count_codes(
                    codes,
                    weights if self.weighted else None,
                    1 << _DIGIT_BITS if self.level == 0 else None,
                )
            )
        return out

    @staticmethod
    def merge(parts):
        """Add the counts of several chunks (outputs of :meth:`digit_counts`
        or of this method)."""
        parts = list(parts)
        merged = []
        for per_group in zip(*parts, strict=True):
            codes = np.concatenate([p[0] for p in per_group])
            weighted = per_group[0][2] is not None
            uniq, inverse = np.unique(codes, return_inverse=True)
            inverse = inverse.ravel()
            counts = np.bincount(
                inverse,
                weights=np.concatenate([p[1] for p in per_group]).astype(np.float64),
                minlength=uniq.size,
            ).astype(np.int64)
            weights = (
                np.bincount(
                    inverse,
                    weights=np.concatenate([p[2] for p in per_group]),
                    minlength=uniq.size,
                )
                if weighted
                else None
            )
            merged.append((uniq, counts, weights))
        return merged

    def advance(self, counts):
        """Settle the next bits of every quantile from the merged counts of
        the whole data for this pass."""
        if len(counts) != self.n_groups:
            raise ValueError(
                f"expected the counts of {self.n_groups} groups, got {len(counts)}."
            )
        for g, (codes, n, w) in enumerate(counts):
            if self.level == 0:
                self._start(g, n, w)
            t = self._targets[g]
            if t is None or t["prefix"].size == 0:
                continue
            if self.level == 0:
                starts = np.zeros(t["prefix"].size, dtype=np.intp)
                stops = np.full(t["prefix"].size, codes.size, dtype=np.intp)
            else:
                prefixes = np.unique(t["prefix"])
                index = np.searchsorted(prefixes, t["prefix"]).astype(np.uint64)
                segment = codes >> np.uint64(_DIGIT_BITS)
                starts = np.searchsorted(segment, index, side="left")
                stops = np.searchsorted(segment, index, side="right")
            for j in range(t["prefix"].size):
                self._settle(g, t, j, codes, n, w, starts[j], stops[j])
        self.level += 1

    def _start(self, g, n, w):
        total = int(n.sum())
        self._n[g] = total
        self._weight[g] = float(w.sum()) if self.weighted else float(total)
        levels = quantile_levels(self.n_bins)
        if total == 0 or not self._weight[g] > 0 or levels.size == 0:
            self._targets[g] = None
            return
        goal = levels if self.weighted else inverted_cdf_ranks(total, levels) + 1.0
        size = levels.size
        self._targets[g] = {
            "prefix": np.zeros(size, dtype=np.uint64),
            "below_n": np.zeros(size, dtype=np.int64),
            "below_w": np.zeros(size),
            "goal": np.asarray(goal, dtype=np.float64),
            "at_most": np.zeros(size, dtype=np.int64),
        }

    def _settle(self, g, t, j, codes, n, w, start, stop):
        """Fix the next digit of quantile ``j`` of group ``g``."""
        n_seg = n[start:stop]
        cum_n = t["below_n"][j] + np.cumsum(n_seg)
        if self.weighted:
            w_seg = w[start:stop]
            cum_w = t["below_w"][j] + np.cumsum(w_seg)
            candidates = np.flatnonzero(w_seg > 0)
            # the comparison of _weighted_quantiles, rounding slack included
            slack = 1.0 - 4.0 * self._n[g] * np.finfo(np.float64).eps
            hit = candidates[
                cum_w[candidates] >= t["goal"][j] * self._weight[g] * slack
            ]
            # Rounding can leave the goal a hair above the last candidate.
            pos = hit[0] if hit.size else (candidates[-1] if candidates.size else -1)
        else:
            pos = int(np.searchsorted(cum_n, t["goal"][j], side="left"))
            pos = pos if pos < n_seg.size else -1
        if pos < 0:
            raise ValueError(
                "the data changed between the passes of the quantile search "
                "(a quantile fell outside the range found in the previous pass); "
                "quantile bins need data that reads the same in every pass."
            )
        digit = codes[start + pos] & np.uint64((1 << _DIGIT_BITS) - 1)
        t["prefix"][j] = (t["prefix"][j] << np.uint64(_DIGIT_BITS)) | digit
        t["at_most"][j] = cum_n[pos]
        t["below_n"][j] = cum_n[pos] - n_seg[pos]
        if self.weighted:
            t["below_w"][j] += float(np.sum(w_seg[:pos]))

    def edges(self):
        """Edges of every group, as :func:`~skcalib._core.binning.bin_edges` gives them.

        Returns
        -------
        edges : list of ndarray
            One array per group (``[0, 1]`` for a group without scores).
        """
        if not self.done:
            raise ValueError(
                f"the quantile search needs {self.n_passes} passes, "
                f"{self.level} were made."
            )
        out = []
        utype = np.uint32 if self.dtype == np.float32 else np.uint64
        for g in range(self.n_groups):
            t = self._targets[g]
            if t is None:
                out.append(np.array([0.0, 1.0]))
                continue
            values = t["prefix"].astype(utype).view(self.dtype).astype(np.float64)
            # The largest score is the smallest edge with every score at or
            # below it (1 when there is none: every edge is below it).
            top = np.min(values[t["at_most"] >= self._n[g]], initial=1.0)
            out.append(edges_from_quantiles(values, top))
        return out


def _no_counts(weighted):
    return (
        np.zeros(0, dtype=np.uint64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0) if weighted else None,
    )


def _count_codes(codes, weights, span=None):
    """Distinct codes with their counts and total weights (``span``: codes are
    below it, counted by ``np.bincount`` instead of a sort)."""
    if span is not None:
        codes = codes.astype(np.intp)
        counts = np.bincount(codes, minlength=span)
        uniq = np.flatnonzero(counts)
        total = None
        if weights is not None:
            total = np.bincount(
                codes, weights=np.asarray(weights, np.float64), minlength=span
            )[uniq]
        return uniq.astype(np.uint64), counts[uniq].astype(np.int64), total
    uniq, inverse = np.unique(codes, return_inverse=True)
    inverse = inverse.ravel()
    counts = np.bincount(inverse, minlength=uniq.size).astype(np.int64)
    total = (
        None
        if weights is None
        else np.bincount(
            inverse, weights=np.asarray(weights, np.float64), minlength=uniq.size
        )
    )
    return uniq, counts, total
