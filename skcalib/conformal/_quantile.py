"""The split-conformal threshold: a weighted order statistic of the
calibration scores, with the test point counted once."""

import numpy as np

__all__ = []  # private module

#: Relative slack of the quantile level ``(1 - alpha)(W + 1)``, so that a level
#: that is an integer in exact arithmetic (``alpha=0.44``, ``n=24``: 14, computed
#: as 14.000000000000002) is not moved to the next order statistic by rounding.
_LEVEL_RTOL = 1e-10


def conformal_quantile(scores, alpha, sample_weight=None):
    """The split-conformal threshold of calibration scores.

    The smallest calibration score :math:`s_{(k)}` whose cumulative weight
    reaches :math:`(1 - \\alpha)(W + 1)`, where :math:`W` is the total weight
    and the test point counts with weight 1. Unweighted, this is the
    :math:`\\lceil (n + 1)(1 - \\alpha) \\rceil`-th smallest score, the
    empirical quantile at level :math:`\\lceil (n + 1)(1 - \\alpha) \\rceil / n`.
    Weights are repetition counts: a weight of 2 is a duplicated row, 0 a
    dropped one.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Nonconformity scores of the calibration samples.
    alpha : float in (0, 1)
        Miscoverage level.
    sample_weight : ndarray of shape (n,) or None
        Non-negative weights.

    Returns
    -------
    threshold : float
        ``inf`` when the level exceeds the total weight
        (:math:`(n + 1)(1 - \\alpha) > n`, i.e. :math:`n < (1 - \\alpha) /
        \\alpha`): too few samples for any finite threshold.
    """
    if sample_weight is not None:
        keep = sample_weight > 0
        scores, weight = scores[keep], sample_weight[keep]
    if scores.size == 0:
        return np.inf
    if sample_weight is None:
        k = _rank(alpha, scores.size)
        if k > scores.size:
            return np.inf
        return float(np.partition(scores, k - 1)[k - 1])
    order = np.argsort(scores, kind="stable")
    cum = np.cumsum(weight[order], dtype=np.float64)
    level = (1.0 - alpha) * (cum[-1] + 1.0)
    k = int(np.searchsorted(cum, level - _LEVEL_RTOL * level, side="left"))
    if k >= cum.size:
        return np.inf
    return float(scores[order[k]])


def _rank(alpha, n):
    """``ceil((n + 1)(1 - alpha))``, up to the slack :data:`_LEVEL_RTOL`."""
    level = (1.0 - alpha) * (n + 1.0)
    return int(np.ceil(level - _LEVEL_RTOL * level))


def _min_samples(alpha):
    """Smallest ``n`` with a finite threshold: ``_rank(alpha, n) <= n``."""
    n = max(1, int(np.floor((1.0 - alpha) / alpha)) - 1)
    while _rank(alpha, n) > n:
        n += 1
    return n
