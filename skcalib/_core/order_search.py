"""Exact order statistics of data read pass by pass.

The scores of a cluster's rows cannot be sorted in one place; an order
statistic (a quantile bin edge, a conformal threshold) is found instead from
a few passes, each giving small counts per row block that add up in any
order (:class:`OrderStatisticSearch`). The first pass is a coarse histogram
of the scores; the next pass brings back the scores of the histogram bins
that hold the order statistics (a bin holds few of the rows) or, when those
bins hold too many, a finer histogram of them (radix selection), until the
bins are small enough to bring back.
"""

import numpy as np

__all__ = []  # private module

#: Bits of the score keys settled by a histogram pass: at most ``2**16``
#: counts per group and pass.
DIGIT_BITS = 16

#: Most rows (all groups together) whose scores a pass brings back to settle
#: every order statistic at once: 4 MiB of keys and counts, whatever the
#: number of rows. Bins holding more are split by one more histogram first
#: (one more pass).
COLLECT_LIMIT = 1 << 18

_MASK = np.uint64((1 << DIGIT_BITS) - 1)


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


class OrderStatisticSearch:
    """Order statistics of groups of scores read in chunks, several times.

    Subclasses say which order statistics (:meth:`goals`): for each, the
    smallest score whose cumulative count (or, with weights, cumulative
    weight) reaches a goal. Scores are read as sortable integer keys
    (:func:`sortable_keys`, so they must be non-negative and finite).

    The first pass counts the scores of each group by the top
    :data:`DIGIT_BITS` bits of their keys and settles those bits of every
    order statistic. Each later pass reads only the scores whose key starts
    with a settled prefix: when these are at most ``collect_limit`` rows in
    all, the pass brings back their keys (with counts and weights), which
    settles every statistic exactly (the last pass); otherwise it counts
    them by their next :data:`DIGIT_BITS` bits. Passes: 2 when the bins
    holding the statistics are small (float32 scores: always), at most 4
    for float64 scores.

    Parameters
    ----------
    n_groups : int
        Number of independent sets of scores (groups).
    dtype : {numpy.float32, numpy.float64}
        Dtype of the scores (every chunk must have it).
    weighted : bool
        Whether chunks come with sample weights (rows of weight 0 play no
        part).
    collect_limit : int, default=COLLECT_LIMIT
        Most rows a pass brings back (0: histogram passes only).

    Notes
    -----
    A pass reads the chunks through :meth:`digit_counts` (per chunk),
    :meth:`merge` (any grouping) and :meth:`advance` (once per pass), until
    :attr:`done`. With weights, the cumulative weight is summed by segment
    rather than by ``np.cumsum`` over the sorted scores: results agree
    exactly when those sums are exact (integers, or multiples of a power of
    two, below ``2**53``), and otherwise can differ only when a cumulative
    weight is within rounding error (``~1e-16`` relative) of a goal.
    """

    def __init__(self, n_groups, dtype, weighted, collect_limit=COLLECT_LIMIT):
        self.n_groups = int(n_groups)
        single = np.dtype(dtype) == np.float32
        self.dtype = np.dtype(np.float32 if single else np.float64)
        self.weighted = bool(weighted)
        self.collect_limit = int(collect_limit)
        self.n_passes = 0  # passes made
        self._bits = 0  # key bits settled
        self._collect = False  # whether the next pass brings keys back
        self._n = np.zeros(self.n_groups, dtype=np.int64)
        self._weight = np.zeros(self.n_groups)
        # Per group and statistic: settled key prefix, count and weight of the
        # smaller keys, goal, count of keys <= the prefix's range, count of the
        # prefix's range, whether the goal is reachable.
        self._targets = [None] * self.n_groups

    def goals(self, n, total_weight):
        """Goals of one group of ``n`` scores (of positive weight) and total
        weight ``total_weight`` (``n`` unweighted): cumulative counts, or
        cumulative weights when weighted. A goal above the total is not
        reached (its value is ``inf``)."""
        raise NotImplementedError

    @property
    def _key_bits(self):
        return self.dtype.itemsize * 8

    @property
    def done(self):
        """Whether every order statistic is settled."""
        return self._bits == self._key_bits

    def _prefixes(self, g):
        """Sorted distinct prefixes of the reachable statistics of group ``g``."""
        t = self._targets[g]
        if t is None:
            return np.zeros(0, dtype=np.uint64)
        return np.unique(t["prefix"][t["live"]])

    def digit_counts(self, groups):
        """Counts of one chunk for the current pass.

        Parameters
        ----------
        groups : sequence of (scores, weights)
            For each group, its scores in this chunk (``self.dtype``,
            non-negative) and their weights (None when not ``weighted``).

        Returns
        -------
        counts : list of (codes, counts, weights)
            Per group, sorted distinct codes with the number and the total
            weight (None when not weighted) of the scores having each.
        """
        if self.done:
            raise ValueError("every pass of the order-statistic search is done.")
        rem = self._key_bits - self._bits
        out = []
        for g, (scores, weights) in enumerate(groups):
            scores = np.asarray(scores)
            if scores.dtype.itemsize > self.dtype.itemsize:  # never round
                raise ValueError(
                    f"the search is over {self.dtype} scores, got {scores.dtype} "
                    "ones: rounding them would move the order statistics."
                )
            scores = scores.astype(self.dtype, copy=False)
            if self.weighted:
                weights = np.asarray(weights, dtype=np.float64)
                positive = weights > 0
                if not positive.all():
                    scores, weights = scores[positive], weights[positive]
            else:
                weights = None
            keys = sortable_keys(scores).astype(np.uint64, copy=False)
            if self._bits == 0:
                codes = keys >> np.uint64(rem - DIGIT_BITS)
                out.append(_count_codes(codes, weights, 1 << DIGIT_BITS))
                continue
            prefixes = self._prefixes(g)
            if prefixes.size == 0:
                out.append(_no_counts(self.weighted))
                continue
            head = keys >> np.uint64(rem)
            pos = np.minimum(np.searchsorted(prefixes, head), prefixes.size - 1)
            keep = np.flatnonzero(prefixes[pos] == head)
            if weights is not None:
                weights = weights[keep]
            if self._collect:  # the keys themselves
                codes = keys[keep]
            else:  # the prefix's index, then the next digit
                digit = (keys[keep] >> np.uint64(rem - DIGIT_BITS)) & _MASK
                codes = (pos[keep].astype(np.uint64) << np.uint64(DIGIT_BITS)) | digit
            out.append(_count_codes(codes, weights))
        return out

    @staticmethod
    def merge(parts):
        """Add the counts of several chunks (outputs of :meth:`digit_counts`
        or of this method)."""
        merged = []
        for per_group in zip(*list(parts), strict=True):
            codes = np.concatenate([p[0] for p in per_group])
            uniq, inverse = np.unique(codes, return_inverse=True)
            inverse = inverse.ravel()
            counts = np.bincount(
                inverse,
                weights=np.concatenate([p[1] for p in per_group]).astype(np.float64),
                minlength=uniq.size,
            ).astype(np.int64)
            weights = None
            if per_group[0][2] is not None:
                weights = np.bincount(
                    inverse,
                    weights=np.concatenate([p[2] for p in per_group]),
                    minlength=uniq.size,
                )
            merged.append((uniq, counts, weights))
        return merged

    def advance(self, counts):
        """Settle what this pass settles of every order statistic, from the
        merged counts of the whole data."""
        if len(counts) != self.n_groups:
            raise ValueError(
                f"expected the counts of {self.n_groups} groups, got {len(counts)}."
            )
        rem = self._key_bits - self._bits
        for g, (codes, n, w) in enumerate(counts):
            if self._bits == 0:
                self._start(g, n, w)
            t = self._targets[g]
            live = np.flatnonzero(t["live"]) if t is not None else []
            if not len(live):
                continue
            prefix = t["prefix"][live]
            if self._bits == 0:
                starts = np.zeros(live.size, dtype=np.intp)
                stops = np.full(live.size, codes.size, dtype=np.intp)
            elif self._collect:  # keys in [prefix << rem, (prefix + 1) << rem)
                low = prefix << np.uint64(rem)
                starts = np.searchsorted(codes, low, side="left")
                stops = np.searchsorted(codes, low + (np.uint64(1) << np.uint64(rem)))
            else:
                index = np.searchsorted(self._prefixes(g), prefix).astype(np.uint64)
                segment = codes >> np.uint64(DIGIT_BITS)
                starts = np.searchsorted(segment, index, side="left")
                stops = np.searchsorted(segment, index, side="right")
            for j, start, stop in zip(live, starts, stops, strict=True):
                self._settle(t, j, codes, n, w, start, stop)
        self._bits = self._key_bits if self._collect else self._bits + DIGIT_BITS
        self.n_passes += 1
        self._collect = not self.done and self._pending() <= self.collect_limit

    def _pending(self):
        """Rows the next pass reads: those of the settled prefixes' ranges."""
        total = 0
        for t in self._targets:
            if t is not None and t["live"].any():
                _, first = np.unique(t["prefix"][t["live"]], return_index=True)
                total += int(t["in_range"][t["live"]][first].sum())
        return total

    def _start(self, g, n, w):
        total = int(n.sum())
        self._n[g] = total
        self._weight[g] = float(w.sum()) if self.weighted else float(total)
        if total == 0 or not self._weight[g] > 0:
            return
        goal = np.asarray(self.goals(total, self._weight[g]), dtype=np.float64)
        if goal.size == 0:
            return
        self._targets[g] = {
            "prefix": np.zeros(goal.size, dtype=np.uint64),
            "below_n": np.zeros(goal.size, dtype=np.int64),
            "below_w": np.zeros(goal.size),
            "goal": goal,
            "at_most": np.zeros(goal.size, dtype=np.int64),
            "in_range": np.zeros(goal.size, dtype=np.int64),
            "live": goal <= self._weight[g],
        }

    def _settle(self, t, j, codes, n, w, start, stop):
        """Settle the next bits (or all bits) of statistic ``j`` of a group."""
        n_seg = n[start:stop]
        cum_n = t["below_n"][j] + np.cumsum(n_seg)
        if self.weighted:
            w_seg = w[start:stop]
            cum_w = t["below_w"][j] + np.cumsum(w_seg)
            candidates = np.flatnonzero(w_seg > 0)
            hit = candidates[cum_w[candidates] >= t["goal"][j]]
            # Rounding can leave the goal a hair above the last candidate.
            pos = hit[0] if hit.size else (candidates[-1] if candidates.size else -1)
        else:
            pos = int(np.searchsorted(cum_n, t["goal"][j], side="left"))
            pos = pos if pos < n_seg.size else -1
        if pos < 0:
            raise ValueError(
                "the data changed between the passes of an exact quantile search "
                "(a quantile fell outside the range found in the previous pass); "
                "quantiles need data that read the same in every pass."
            )
        code = codes[start + pos]
        if self._collect:
            t["prefix"][j] = code
        else:
            t["prefix"][j] = (t["prefix"][j] << np.uint64(DIGIT_BITS)) | (code & _MASK)
        t["at_most"][j] = cum_n[pos]
        t["in_range"][j] = n_seg[pos]
        t["below_n"][j] = cum_n[pos] - n_seg[pos]
        if self.weighted:
            t["below_w"][j] += float(np.sum(w_seg[:pos]))

    def values(self, g):
        """Settled values of group ``g`` and, for each, the number of scores
        at or below it; ``(None, None)`` for a group without scores.

        Returns
        -------
        values : ndarray of float64, ``inf`` where a goal is not reached
        at_most : ndarray of int64
        """
        if not self.done:
            raise ValueError(
                f"the order-statistic search is not finished after "
                f"{self.n_passes} pass(es)."
            )
        t = self._targets[g]
        if t is None:
            return None, None
        utype = np.uint32 if self.dtype == np.float32 else np.uint64
        values = t["prefix"].astype(utype).view(self.dtype).astype(np.float64)
        return np.where(t["live"], values, np.inf), t["at_most"]


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
            total = np.bincount(codes, weights=weights, minlength=span)[uniq]
        return uniq.astype(np.uint64), counts[uniq].astype(np.int64), total
    uniq, inverse = np.unique(codes, return_inverse=True)
    inverse = inverse.ravel()
    counts = np.bincount(inverse, minlength=uniq.size).astype(np.int64)
    total = None
    if weights is not None:
        total = np.bincount(inverse, weights=weights, minlength=uniq.size)
    return uniq, counts, total
