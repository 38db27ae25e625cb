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

Edges are compared with the scores *in the precision of the scores*: for
float32 scores the edges are rounded to float32 first, so a float32
probability of ``0.3`` (``= float32(3 / 10)``) sits exactly on the float32
edge ``0.3`` of 10 uniform bins and lands in the lower bin, as it would in
exact arithmetic. (Comparing a float32 ``0.3`` with a float64 edge would put
it in the upper bin.)
"""

from functools import lru_cache

import numpy as np

__all__ = []  # private module: nothing public here

#: Uniform edges of at most this many bins are assigned arithmetically (see
#: :func:`assign_bins`); the bins are then far wider than the rounding error of
#: ``score * n_bins`` in float32, so the first guess is off by at most one bin.
_ARITHMETIC_MAX_BINS = 1 << 16


def _weighted_quantiles(scores, quantiles, sample_weight=None):
    """Quantiles of ``scores`` by the inverted empirical CDF.

    The quantile ``q`` is the smallest score whose cumulative (normalised)
    weight reaches ``q`` (``np.quantile(method="inverted_cdf")`` without
    weights). Edges are therefore data values, and a weight of 2 gives the
    same edges as a duplicated row.
    """
    if sample_weight is None:
        return np.quantile(scores, quantiles, method="inverted_cdf")
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    w = np.asarray(sample_weight, dtype=np.float64)[order]
    keep = w > 0
    s, w = s[keep], w[keep]
    cum = np.cumsum(w)
    cum /= cum[-1]
    idx = np.searchsorted(cum, quantiles, side="left")
    return s[np.minimum(idx, s.size - 1)].astype(np.float64)


def bin_edges(scores, n_bins, strategy="uniform", sample_weight=None):
    """Edges of ``n_bins`` bins on ``[0, 1]``.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Probabilities in ``[0, 1]`` (used only by ``strategy="quantile"``).
    n_bins : int
        Number of bins asked for (>= 1).
    strategy : {"uniform", "quantile"}
        ``"uniform"``: equal-width bins. ``"quantile"``: equal-mass bins whose
        interior edges are quantiles of ``scores`` (weighted by
        ``sample_weight``, inverted empirical CDF, so edges are data values);
        edges that coincide because scores tie are merged and an edge at the
        largest score is dropped, so fewer than ``n_bins`` bins may be
        returned (one when every score is equal), none of them empty.
    sample_weight : ndarray of shape (n_samples,), default=None
        Weights for the quantiles.

    Returns
    -------
    edges : ndarray of shape (n_bins_effective + 1,), float64
        Strictly increasing, ``edges[0] == 0`` and ``edges[-1] == 1``.
    """
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy != "quantile":
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}.")
    scores = np.asarray(scores).ravel()
    if scores.size == 0:
        return np.array([0.0, 1.0])
    interior = _weighted_quantiles(
        scores, np.linspace(0.0, 1.0, n_bins + 1)[1:-1], sample_weight
    )
    interior = np.clip(interior, 0.0, 1.0)
    # 0 and 1 are already the outer edges, and an edge at the largest score
    # would only open an empty top bin: every equal-mass bin holds data.
    top = min(1.0, float(scores.max()))
    interior = interior[(interior > 0.0) & (interior < top)]
    return np.concatenate(([0.0], np.unique(interior), [1.0]))


@lru_cache(maxsize=32)
def _uniform_edges(n_bins):
    """``np.linspace(0, 1, n_bins + 1)`` (read-only, cached)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    edges.flags.writeable = False
    return edges


@lru_cache(maxsize=32)
def _uniform_edges_in(n_bins, dtype_char):
    """Edges of ``n_bins`` uniform bins rounded to the score dtype, as two
    lookup tables: the left and the right edge of each bin, with NaN where a
    bin has no finite neighbour (the first bin's left, the last bin's right),
    so that a comparison against it is always false."""
    edges = _uniform_edges(n_bins).astype(np.dtype(dtype_char))
    left, right = edges[:-1].copy(), edges[1:].copy()
    left[0] = right[-1] = np.nan
    left.flags.writeable = right.flags.writeable = False
    return left, right


def _assign_uniform(scores, n_bins):
    """:func:`assign_bins` for ``np.linspace(0, 1, n_bins + 1)`` edges.

    ``floor(score * n_bins)`` (computed in the score dtype, clipped to the bin
    range; NaN goes to the last bin like ``np.searchsorted``) is at most one
    bin away from the answer; one comparison with the left and one with the
    right edge of that bin, both rounded to the score dtype, make it exact.
    Same result as the ``searchsorted`` rule for every input, in O(n) with no
    binary search.
    """
    left, right = _uniform_edges_in(n_bins, scores.dtype.char)
    with np.errstate(over="ignore"):  # huge scores: inf goes to the last bin
        guess = scores * scores.dtype.type(n_bins)
    np.fmin(guess, n_bins - 1, out=guess)
    np.fmax(guess, 0, out=guess)
    ids = guess.astype(np.intp)
    ids -= scores <= left[ids]
    ids += scores > right[ids]
    return ids


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
        to the last (callers validate the range before).

    Notes
    -----
    Uniform edges (``strategy="uniform"``) of float32/float64 scores take an
    arithmetic path, several times faster than the binary search and with
    identical results (edge values, NaN and out-of-range scores included).
    """
    scores = np.asarray(scores)
    edges = np.asarray(edges)
    n_bins = edges.size - 1
    if (
        scores.dtype in (np.float32, np.float64)
        and 1 < n_bins <= _ARITHMETIC_MAX_BINS
        and edges.dtype == np.float64
        and edges.ndim == 1
        and bool((edges == _uniform_edges(n_bins)).all())
    ):
        return _assign_uniform(scores, n_bins)
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    interior = np.asarray(edges[1:-1], dtype=dtype)
    return np.searchsorted(interior, scores, side="left")


def bin_sums(bin_ids, n_bins, sample_weight=None, *values):
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
            both = np.bincount(bin_ids * 2 + values[first], minlength=2 * n_bins)
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
