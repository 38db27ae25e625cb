"""The one place in skcalib that computes bin edges, assigns scores to bins and
accumulates per-bin sums.

Every binned metric, the histogram-binning calibrator and the reliability
display go through these three functions, so the bin convention is written
once.

Bin convention
--------------
``n_bins`` bins with edges ``e_0 = 0 < e_1 < ... < e_m = 1`` are right-closed:
bin ``j`` holds the scores ``s`` with ``e_j < s <= e_{j+1}``, except the first
bin, which is closed on both sides, ``[0, e_1]``. This is the convention of
:func:`sklearn.calibration.calibration_curve` (``np.searchsorted`` on the
interior edges with ``side="left"``). A score equal to an interior edge goes
to the lower bin.

Quantile edges are data values (the inverted empirical CDF), so a tie at an
edge stays together in the lower bin. An edge at the smallest score ``0`` is
kept: the first bin is then ``[0, 0]`` and holds exactly the scores equal to
0 (``edges[0] == edges[1] == 0``, the only pair of equal edges), so a mass
of scores at 0 is never merged with larger scores. An edge at the largest
score with positive weight is dropped (it would open an empty top bin).
Rows of weight 0 play no part in the edges: a weight of 0 is the same as
dropping the row, and a weight of 2 the same as a duplicated row.

Edges are compared with the scores *in the precision of the scores*: for
float32 scores the edges are rounded to float32 first, so a float32
probability of ``0.3`` (``= float32(3 / 10)``) sits exactly on the float32
edge ``0.3`` of 10 uniform bins and lands in the lower bin, as it would in
exact arithmetic. (Comparing a float32 ``0.3`` with a float64 edge would put
it in the upper bin.)
"""

from functools import lru_cache
from numbers import Integral

import numpy as np

from skcalib._core import accel as _accel
from skcalib._core.compat import Interval
from skcalib._core.quantile_search import (
    edges_from_quantiles,
    quantile_levels,
    weighted_quantiles,
)

__all__ = []  # private module: nothing public here

#: Edges of at most this many bins are assigned through a cell table (see
#: :func:`assign_bins`); more bins use a binary search.
_TABLE_MAX_BINS = 1 << 16

#: :func:`check_n_bins` always allows this many bins, whatever the data.
MIN_BIN_CAP = 1 << 16

#: ``strategy="discrete"`` (one bin per distinct score) accepts at most this
#: many distinct scores per group; more means continuous scores.
DISCRETE_MAX_VALUES = 4096

#: The binning strategies of :func:`bin_edges`.
STRATEGIES = ("uniform", "quantile", "discrete")


class _NBinsInterval(Interval):
    """``Interval(Integral, 1, None)`` that also rejects ``bool`` (sklearn's
    ``Interval(Integral, ...)`` accepts ``True`` as 1). The upper bound,
    which depends on the data, is :func:`check_n_bins`'s, applied at fit."""

    def __init__(self):
        super().__init__(Integral, 1, None, closed="left")

    def is_satisfied_by(self, val):
        if isinstance(val, bool | np.bool_):
            return False
        return super().is_satisfied_by(val)

    def __str__(self):
        return "an int >= 1 (not a bool)"


#: The ``_parameter_constraints`` entry of every estimator with ``n_bins``.
N_BINS_CONSTRAINT = _NBinsInterval()


def check_n_bins(n_bins, n_samples=None):
    """Validated number of bins: an integer in ``[1, max(n_samples, 65536)]``.

    ``bool`` is rejected (an ``int`` to Python, not a bin count). The upper
    bound keeps the per-bin statistics (``O(n_classes * n_bins)`` memory) in
    proportion to the data: more bins than samples leave bins empty by
    necessity, and up to :data:`MIN_BIN_CAP` (65536) bins are always allowed.
    ``n_samples=None`` (data not seen yet): the bound is 65536.

    Raises
    ------
    ValueError
        Naming the value and the bound.
    """
    if isinstance(n_bins, bool | np.bool_) or not isinstance(n_bins, Integral):
        shown = n_bins.item() if isinstance(n_bins, np.generic) else n_bins
        raise ValueError(f"n_bins must be an integer >= 1, got {shown!r}.")
    n_bins = int(n_bins)
    if n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins}.")
    cap = max(MIN_BIN_CAP, 0 if n_samples is None else int(n_samples))
    if n_bins > cap:
        data = "" if n_samples is None else f", n_samples={int(n_samples)}"
        raise ValueError(
            f"n_bins={n_bins} is too large: at most max({MIN_BIN_CAP}{data}) = "
            f"{cap} bins are allowed (the per-bin statistics take memory in "
            "proportion to n_bins; with more bins than samples most bins are "
            "empty)."
        )
    return n_bins


#: The bin-count rules of :func:`numpy.histogram_bin_edges` that
#: :func:`resolve_n_bins` accepts: those that depend on the number of
#: samples only, each ``n -> ceil(rule(n))`` as numpy computes it.
N_BINS_RULES = {
    "sqrt": "ceil(sqrt(n))",
    "sturges": "ceil(log2(n)) + 1",
    "rice": "ceil(2 * n ** (1 / 3))",
}


def resolve_n_bins(n_bins, n_samples):
    """The number of bins of ``n_bins``: an int unchanged, or the count that
    a rule of :data:`N_BINS_RULES` gives for ``n_samples`` (at least 1).

    The rules are numpy's (:func:`numpy.histogram_bin_edges`) on data of
    range 1: numpy takes the bin width ``range / rule(n)`` and then
    ``ceil(range / width)`` bins, that is ``ceil(rule(n))``; ``"sturges"`` is
    ``log2(n) + 1``, so ``ceil(log2(n)) + 1``. The rules of numpy that read
    the spread of the data (``"fd"``, ``"scott"``, ``"doane"``, ``"stone"``
    and ``"auto"``, the larger of ``"fd"`` and ``"sturges"``) are not
    offered; a ``ValueError`` names the ones that are.
    """
    if not isinstance(n_bins, str):
        return n_bins
    if n_bins not in N_BINS_RULES:
        raise ValueError(
            f"n_bins={n_bins!r} is not a bin-count rule skcalib resolves; pass "
            f"an int or one of {sorted(N_BINS_RULES)} (numpy's rules that need "
            "the number of samples only; 'fd', 'scott', 'doane', 'stone' and "
            "'auto' read the spread of the scores and are not offered)."
        )
    n = max(int(n_samples), 1)
    if n_bins == "sqrt":
        count = np.ceil(np.sqrt(n))
    elif n_bins == "sturges":
        count = np.ceil(np.log2(n)) + 1
    else:
        count = np.ceil(2 * np.cbrt(n))
    return max(int(count), 1)


def bin_edges(scores, n_bins, strategy="uniform", sample_weight=None):
    """Edges of ``n_bins`` bins on ``[0, 1]``.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Probabilities in ``[0, 1]`` (used only by ``strategy="quantile"``).
    n_bins : int
        Number of bins asked for, as :func:`check_n_bins` allows for the
        number of ``scores`` (a bool or a larger count is a ``ValueError``).
    strategy : {"uniform", "quantile"}
        ``"uniform"``: equal-width bins. ``"quantile"``: equal-mass bins whose
        interior edges are quantiles of ``scores`` (weighted by
        ``sample_weight``, inverted empirical CDF, so edges are data values
        and a score on an edge is in the lower bin). Edges that coincide
        because scores tie are merged, and an edge at the largest score (of
        positive weight) is dropped, so fewer than ``n_bins`` bins may be
        returned (one when every score is equal), none of them empty. An
        edge at 0 is kept: the first bin is then ``[0, 0]`` (``edges[1] ==
        0``), so the scores at exactly 0 are not merged with larger ones.
        With fewer distinct scores than bins, every distinct score has its
        own bin.
        ``"discrete"``: one bin per distinct score (of positive weight), for
        the outputs of discrete calibrators (histogram binning,
        scaling-binning), whose binned error is then computed without any
        pooling of values: the interior edges are the distinct scores but
        the largest (right-closed bins, so each bin holds exactly one
        distinct score; a score of 0 gets the bin ``[0, 0]``). ``n_bins``
        is not used. At most :data:`DISCRETE_MAX_VALUES` (4096) distinct
        scores: more raise a ``ValueError`` (continuous scores; use
        ``"uniform"`` or ``"quantile"`` bins).
    sample_weight : ndarray of shape (n_samples,), default=None
        Weights for the quantiles; rows of weight 0 are ignored (the same as
        dropping them).

    Returns
    -------
    edges : ndarray of shape (n_bins_effective + 1,), float64
        Increasing, ``edges[0] == 0`` and ``edges[-1] == 1``; strictly
        increasing except for ``edges[1] == 0`` (the bin ``[0, 0]``).
    """
    n_bins = check_n_bins(n_bins, None if scores is None else scores.shape[0])
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy not in STRATEGIES:
        raise ValueError(
            f"strategy must be 'uniform', 'quantile' or 'discrete', got {strategy!r}."
        )
    scores = np.asarray(scores).ravel()
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64).ravel()
        keep = w > 0
        if not keep.all():
            scores, w = scores[keep], w[keep]
        sample_weight = w
    if scores.size == 0:
        return np.array([0.0, 1.0])
    if strategy == "discrete":
        return discrete_edges(scores)
    interior = weighted_quantiles(scores, quantile_levels(n_bins), sample_weight)
    return edges_from_quantiles(interior, scores.max())


def discrete_edges(scores):
    """Edges of one bin per distinct value of ``scores`` (see
    :func:`bin_edges`, ``strategy="discrete"``)."""
    values = np.unique(scores)  # in the dtype of the scores: exact edges
    if values.size > DISCRETE_MAX_VALUES:
        raise ValueError(
            "strategy='discrete' puts one bin per distinct probability, but "
            f"these have {values.size} distinct values (at most "
            f"{DISCRETE_MAX_VALUES}): they look continuous; use "
            "strategy='uniform' or strategy='quantile' with n_bins."
        )
    return edges_from_quantiles(values[:-1], values[-1])


@lru_cache(maxsize=32)
def _cell_tables(interior_bytes, dtype_char, n_cells):
    """Bin of each of ``n_cells + 1`` cells of ``[0, 1]`` and whether it is
    ambiguous (see :func:`_assign_by_cells`); read-only, cached."""
    interior = np.frombuffer(interior_bytes, dtype=np.dtype(dtype_char))
    # Cell c holds the scores s with c / G <= s < (c + 1) / G; cell G holds
    # s >= 1. Powers of two: these bounds are exact in float32 and float64.
    starts = (np.arange(n_cells + 2, dtype=np.float64) / n_cells).astype(interior.dtype)
    counts = np.searchsorted(interior, starts, side="left")
    bins = counts[:-1].astype(np.intp)
    # Every score of a cell has the same number of edges strictly below it
    # unless an edge lies in [start, end) of the cell.
    ambiguous = counts[1:] != counts[:-1]
    # Out-of-range scores are clipped into the first or last cell.
    ambiguous[0] |= interior.size > 0 and interior[0] < 0
    ambiguous[-1] = interior.size > 0 and interior[-1] >= 1
    bins.flags.writeable = ambiguous.flags.writeable = False
    return bins, ambiguous


@lru_cache(maxsize=32)
def _cell_codes(interior_bytes, dtype_char, n_cells):
    """The bin of each cell, -1 for an ambiguous one (for the compiled
    kernels of :mod:`skcalib._core.accel`); read-only, cached."""
    bins, ambiguous = _cell_tables(interior_bytes, dtype_char, n_cells)
    # The smallest integer type keeps the table in the first-level cache.
    dtype = np.int16 if bins.size and bins[-1] < np.iinfo(np.int16).max else np.int32
    codes = np.where(ambiguous, -1, bins).astype(dtype)
    codes.flags.writeable = False
    return codes


def _kernel_tables(interior):
    """``(interior, codes, n_cells)`` for the kernels of :mod:`skcalib._core.accel`."""
    n_cells = _n_cells(interior.size + 1)
    codes = _cell_codes(interior.tobytes(), interior.dtype.char, n_cells)
    return interior, codes, n_cells


def _n_cells(n_bins):
    """Number of cells (a power of two, >= 16 per bin) of the table path."""
    return max(1 << 12, 1 << int(np.ceil(np.log2(16 * n_bins))))


def _cells(scores, interior, in_range=False):
    """Cell of each score and the tables of :func:`_cell_tables`.

    ``in_range=True``: the caller guarantees scores in ``[0, 1]`` (no NaN),
    so the clipping passes are skipped (a score of 1 has cell ``G``, which
    the tables hold).
    """
    n_cells = _n_cells(interior.size + 1)
    bins, ambiguous = _cell_tables(interior.tobytes(), interior.dtype.char, n_cells)
    # The cells are computed in int32 and then widened to the index type:
    # float64 -> int32 truncation is vectorised on x86, float64 -> int64 is
    # not (the two steps take about half the time of the direct cast).
    cell = np.empty(scores.shape, dtype=np.int32)
    if in_range:
        # The exact product, truncated (= floored, as it is >= 0) while it is
        # written to the integer output.
        np.multiply(scores, scores.dtype.type(n_cells), out=cell, casting="unsafe")
        return cell.astype(np.intp), bins, ambiguous
    with np.errstate(over="ignore", invalid="ignore"):
        product = scores * scores.dtype.type(n_cells)
    np.fmin(product, n_cells, out=product)  # NaN becomes n_cells (the last bin)
    np.fmax(product, 0, out=product)
    cell[...] = product
    return cell.astype(np.intp), bins, ambiguous


def _assign_by_cells(scores, interior):
    """:func:`assign_bins` through a table of ``G`` equal cells of ``[0, 1]``.

    ``G`` is a power of two, so the cell of a score, ``floor(score * G)``, is
    computed without rounding error in float32 and float64. A cell that no
    edge cuts lies in one bin, read from a table; the few scores of the cells
    an edge cuts (at most one cell per edge, so a fraction of about
    ``1 / 16`` of the bins' width) get a binary search. Scores outside
    ``[0, 1]`` (and NaN) are clipped into the first or last cell first. Same
    result as ``np.searchsorted`` on the interior edges for every input.
    """
    shape = scores.shape
    scores = scores.reshape(-1)
    cell, bins, ambiguous = _cells(scores, interior)
    ids = bins.take(cell)
    fix = np.flatnonzero(ambiguous.take(cell))
    if fix.size:
        ids[fix] = np.searchsorted(interior, scores[fix], side="left")
    return ids.reshape(shape)


def _table_path(scores, edges):
    """The interior edges in the score dtype, and whether the cell-table
    path applies (float32/float64 scores, 2 to 65536 bins)."""
    scores = np.asarray(scores)
    edges = np.asarray(edges)
    n_bins = edges.size - 1
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    interior = np.ascontiguousarray(edges[1:-1], dtype=dtype)
    fast = scores.dtype in (np.float32, np.float64) and 1 < n_bins <= _TABLE_MAX_BINS
    return scores, interior, fast


def lookup_bins(scores, edges, table, *, in_range=False):
    """``table[assign_bins(scores, edges)]`` without the bin indices.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        As for :func:`assign_bins`.
    edges : ndarray of shape (n_bins + 1,)
        As returned by :func:`bin_edges`.
    table : ndarray of shape (n_bins,) or (n_bins, m)
        One value (or row of values) per bin.
    in_range : bool, default=False
        The caller guarantees scores in ``[0, 1]`` without NaN (saves the
        clipping passes).

    Returns
    -------
    values : ndarray of shape (n_samples,) or (n_samples, m)
        The value (row) of each score's bin.
    """
    scores, interior, fast = _table_path(scores, edges)
    table = np.asarray(table)
    if not fast:
        return table[np.searchsorted(interior, scores, side="left")]
    shape = scores.shape + table.shape[1:]
    scores = scores.reshape(-1)
    if in_range:
        out = _accel.cell_lookup(scores, *_kernel_tables(interior), table)
        if out is not None:
            return out.reshape(shape)
    cell, bins, ambiguous = _cells(scores, interior, in_range)
    out = table[bins].take(cell, axis=0)
    fix = np.flatnonzero(ambiguous.take(cell))
    if fix.size:
        out[fix] = table[np.searchsorted(interior, scores[fix], side="left")]
    return out.reshape(shape)


def binned_sums(
    scores, edges, sample_weight=None, *values, in_range=False, binary_target=False
):
    """``bin_sums(assign_bins(scores, edges), n_bins, sample_weight, *values)``
    without the bin indices: totals are accumulated per cell of the table
    path, then per bin.

    ``binary_target=True``: the caller guarantees that the single value array
    holds 0/1 (bool, or integers that are 0 or 1), so counting the non-zero
    entries sums it (no boolean copy on the compiled path).
    """
    scores, interior, fast = _table_path(scores, edges)
    n_bins = interior.size + 1
    values = tuple(np.asarray(v) for v in values)
    if not fast:
        ids = np.searchsorted(interior, scores, side="left")
        return bin_sums(ids, n_bins, sample_weight, *values)
    scores = scores.reshape(-1)
    if len(values) == 1 and (binary_target or values[0].dtype == bool):
        target = values[0].reshape(-1)
        if in_range and sample_weight is None:
            sums = _accel.cell_counts(scores, target, *_kernel_tables(interior), n_bins)
            if sums is not None:
                return sums
        if target.dtype != bool:
            values = (target != 0,)
    cell, bins, ambiguous = _cells(scores, interior, in_range)
    fix = np.flatnonzero(ambiguous.take(cell))
    totals = bin_sums(cell, bins.size, sample_weight, *values, overwrite_ids=True)
    if not fix.size:
        return tuple(np.bincount(bins, weights=t, minlength=n_bins) for t in totals)
    exact = bin_sums(
        np.searchsorted(interior, scores[fix], side="left"),
        n_bins,
        None if sample_weight is None else np.asarray(sample_weight)[fix],
        *[np.asarray(v)[fix] for v in values],
    )
    clean = ~ambiguous
    return tuple(
        np.bincount(bins[clean], weights=t[clean], minlength=n_bins) + e
        for t, e in zip(totals, exact, strict=True)
    )


def assign_bins(scores, edges):
    """Bin index of each score under the right-closed convention.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Values in ``[0, 1]``; float32 stays float32.
    edges : ndarray of shape (n_bins + 1,)
        As returned by :func:`bin_edges`.

    Returns
    -------
    bin_ids : ndarray of shape (n_samples,), intp
        In ``[0, n_bins - 1]``. Scores below 0 go to the first bin and above 1
        (or NaN) to the last (callers validate the range before).

    Notes
    -----
    Float32/float64 scores with up to 65536 bins take a cell-table path
    (``floor(score * G)`` for a power of two ``G``, a table lookup, and a
    binary search only for the few scores next to an edge), several times
    faster than a binary search for all scores and with identical results
    (edge values, NaN and out-of-range scores included).
    """
    scores, interior, fast = _table_path(scores, edges)
    if fast:
        return _assign_by_cells(scores, interior)
    return np.searchsorted(interior, scores, side="left")


def bin_sums(bin_ids, n_bins, sample_weight=None, *values, overwrite_ids=False):
    """Weighted per-bin totals in one ``np.bincount`` pass per quantity.

    Parameters
    ----------
    bin_ids : ndarray of shape (n_samples,)
        From :func:`assign_bins`.
    n_bins : int
        Number of bins (the length of every output).
    sample_weight : ndarray of shape (n_samples,) or None
        Weights; ``None`` counts every sample once.
    *values : ndarray of shape (n_samples,)
        Quantities to sum per bin (for example confidence and correctness),
        each multiplied by its sample's weight.
    overwrite_ids : bool, default=False
        ``bin_ids`` is the caller's scratch array and may be overwritten
        (saves a copy when the only value is boolean).

    Returns
    -------
    totals : tuple of ndarray of shape (n_bins,), float64
        ``(weight_per_bin, sum_of_values[0]_per_bin, ...)``. Sums are
        accumulated in float64 whatever the input dtype.
    """
    values = [np.asarray(v) for v in values]
    if sample_weight is None:
        flags = [i for i, v in enumerate(values) if v.dtype == bool]
        sums = [None] * len(values)
        if flags:
            # Counts and the first boolean's sums from one bincount of
            # 2 * bin + value (exact integers, faster than two passes).
            first = flags[0]
            if overwrite_ids and len(values) == 1 and bin_ids.dtype == np.intp:
                bin_ids *= 2  # the caller's scratch array: no new one
                bin_ids += values[first]
                keys = bin_ids
            else:
                keys = bin_ids * 2 + values[first]
            both = np.bincount(keys, minlength=2 * n_bins)
            both = both.reshape(-1, 2).astype(np.float64)
            counts = both.sum(axis=1)
            sums[first] = both[:, 1].copy()
        else:
            counts = np.bincount(bin_ids, minlength=n_bins).astype(np.float64)
        # np.bincount accumulates its weights in float64 whatever their dtype.
        for i, v in enumerate(values):
            if sums[i] is None:
                sums[i] = np.bincount(bin_ids, weights=v, minlength=n_bins)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        counts = np.bincount(bin_ids, weights=w, minlength=n_bins)
        sums = [np.bincount(bin_ids, weights=w * v, minlength=n_bins) for v in values]
    return (counts, *sums)
