"""Cumulative differences of Arrieta-Ibarra et al. (2022): the Kolmogorov-
Smirnov and Kuiper calibration tests and the KS calibration error of Gupta
et al. (2021).

Sorted by score, the running sum ``C_k = sum_{j <= k} w_j (y_j - s_j) / W``
of a calibrated model is a martingale whose variance grows by
``w_j**2 s_j (1 - s_j)`` (relative weights: their scale does not
matter); scaled by its final standard deviation it tends to a standard
Brownian motion on ``[0, 1]`` (time changed, which leaves the maximum and
the range unchanged). The sum is evaluated at the end of each run of tied
scores only, so that the order inside a tie does not matter (no random
jitter, unlike MAPIE's).

What merges: the summary :class:`PrefixSummary` of a chunk of rows whose
scores are all above those of the previous chunks (sorted chunks, no tie
across a chunk boundary) merges exactly with :func:`merge_prefix_summaries`
and gives the same statistics as the whole data. Unsorted chunks do not
merge: the statistics need the global order of the scores.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = [
    "PrefixSummary",
    "cumulative_summary",
    "kolmogorov_sf",
    "kuiper_sf",
    "ks_error",
    "merge_prefix_summaries",
]

#: Below this value the survival functions use the series in
#: ``exp(-pi**2 / x**2)``; at and above it the series in normal tails.
_SWITCH = 1.0
#: Terms of the tail series: ``norm.sf(41) == 0`` in float64, and
#: ``(2 * 20 + 1) * _SWITCH >= 41``.
_TAIL_TERMS = 41


@dataclass(frozen=True)
class PrefixSummary:
    """Mergeable summary of the cumulative differences of sorted rows.

    ``total``: ``sum w (y - s)``; ``high`` and ``low``: the largest and the
    smallest prefix sum (the empty prefix, 0, included); ``variance``:
    ``sum w**2 s (1 - s)``; ``weight``: ``sum w``.
    """

    total: float
    high: float
    low: float
    variance: float
    weight: float


def cumulative_summary(y, s, w=None):
    """The :class:`PrefixSummary` of rows ``(y, s, w)`` (any order).

    Parameters
    ----------
    y : ndarray of shape (n,)
        0/1 outcomes.
    s : ndarray of shape (n,)
        Predicted probabilities of the outcome 1.
    w : ndarray of shape (n,) or None
        Weights (None: every row once).

    Returns
    -------
    summary : PrefixSummary
    """
    s = np.asarray(s, dtype=np.float64)
    # Any order of ties: the sums are read at the end of each tie only.
    order = np.argsort(s)
    s_sorted = s[order]
    d = np.asarray(y)[order] - s_sorted
    if w is not None:
        w_sorted = w[order]
        d *= w_sorted
    c = np.cumsum(d)
    ends = np.flatnonzero(s_sorted[1:] != s_sorted[:-1])
    c_ends = np.concatenate((c[ends], c[-1:]))
    v = s * (1.0 - s)  # sums need no order
    if w is not None:
        v *= w * w
    return PrefixSummary(
        total=float(c[-1]),
        high=max(0.0, float(c_ends.max())),
        low=min(0.0, float(c_ends.min())),
        variance=float(v.sum()),
        weight=float(s.size if w is None else w.sum()),
    )


def merge_prefix_summaries(summaries):
    """Summary of consecutive sorted chunks from the summary of each.

    Exact when every score of a chunk is above every score of the chunks
    before it (ties inside one chunk only).
    """
    offset, high, low, variance, weight = 0.0, 0.0, 0.0, 0.0, 0.0
    for part in summaries:
        high = max(high, offset + part.high)
        low = min(low, offset + part.low)
        offset += part.total
        variance += part.variance
        weight += part.weight
    return PrefixSummary(offset, high, low, variance, weight)


def kolmogorov_sf(x):
    """``P(max_{t <= 1} |B_t| > x)`` for a standard Brownian motion ``B``.

    Darling & Siegert (1953): ``1 - (4/pi) sum_k (-1)**k / (2k+1)
    exp(-(2k+1)**2 pi**2 / (8 x**2))`` below 1, and the equivalent
    ``4 sum_j (-1)**j Phi_bar((2j+1) x)`` (reflection principle) from 1 on,
    accurate in relative terms in the far tail. Not
    :data:`scipy.stats.kstwobign`, the law of the maximum of a Brownian
    *bridge* (the endpoint of the cumulative differences is free here).
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    out = np.ones_like(x)
    small = (x > 0) & (x < _SWITCH)
    if small.any():
        k = np.arange(8)[:, None] + 0.5
        xs = x[small]
        terms = (-1.0) ** (k - 0.5) / k * np.exp(-(k**2) * np.pi**2 / (2 * xs**2))
        out[small] = 1.0 - 2.0 / np.pi * terms.sum(axis=0)
    large = x >= _SWITCH
    if large.any():
        j = np.arange(_TAIL_TERMS // 2 + 1)[:, None]
        terms = (-1.0) ** j * norm.sf((2 * j + 1) * x[large])
        out[large] = 4.0 * terms.sum(axis=0)
    return np.clip(out, 0.0, 1.0)


def kuiper_sf(x):
    """``P(max_{t <= 1} B_t - min_{t <= 1} B_t > x)`` (range of a standard
    Brownian motion on ``[0, 1]``).

    Feller (1951): ``1 - sum_k (8/x**2 + 2/((k+1/2)**2 pi**2))
    exp(-2 (k+1/2)**2 pi**2 / x**2)`` below 1, and the integral of Feller's
    density, ``8 sum_k (-1)**(k-1) k Phi_bar(k x)``, from 1 on.
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    out = np.ones_like(x)
    small = (x > 0) & (x < _SWITCH)
    if small.any():
        k = np.arange(8)[:, None] + 0.5
        xs = x[small]
        terms = (8.0 / xs**2 + 2.0 / (k**2 * np.pi**2)) * np.exp(
            -2.0 * k**2 * np.pi**2 / xs**2
        )
        out[small] = 1.0 - terms.sum(axis=0)
    large = x >= _SWITCH
    if large.any():
        k = np.arange(1, _TAIL_TERMS + 1)[:, None]
        terms = (-1.0) ** (k - 1) * k * norm.sf(k * x[large])
        out[large] = 8.0 * terms.sum(axis=0)
    return np.clip(out, 0.0, 1.0)


def ks_error(y, s, w=None):
    """Largest absolute cumulative difference ``max_k |C_k|`` (Gupta et al.'s
    KS calibration error of ``(y, s)``; weights enter as a ratio)."""
    summary = cumulative_summary(y, s, w)
    return max(summary.high, -summary.low) / summary.weight
