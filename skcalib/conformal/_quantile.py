"""The split-conformal threshold: a weighted order statistic of the
calibration scores, with the test point counted once."""

import numpy as np

from skcalib._core.order_search import COLLECT_LIMIT, OrderStatisticSearch

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
    return float(quantiles_of_sorted(*sort_scores(scores, sample_weight), [alpha])[0])


def sort_scores(scores, sample_weight=None):
    """Calibration scores in increasing order and their cumulative weights.

    What :func:`quantiles_of_sorted` needs for the threshold at any level;
    rows of weight 0 are dropped. Unweighted, the cumulative weights are
    ``1, 2, ..., n``.

    Parameters
    ----------
    scores : ndarray of shape (n,)
    sample_weight : ndarray of shape (n,) or None

    Returns
    -------
    sorted_scores : ndarray of shape (n_kept,)
    cum_weight : ndarray of shape (n_kept,), float64
    """
    if sample_weight is None:
        return np.sort(scores), np.arange(1.0, scores.size + 1.0)
    keep = sample_weight > 0
    scores, weight = scores[keep], sample_weight[keep]
    order = np.argsort(scores, kind="stable")
    return scores[order], np.cumsum(weight[order], dtype=np.float64)


def quantiles_of_sorted(sorted_scores, cum_weight, alphas, test_weight=1.0):
    """Split-conformal thresholds at several levels, from :func:`sort_scores`.

    For each ``alpha`` the first sorted score whose cumulative weight reaches
    :math:`(1 - \\alpha)(W + w)` (up to the slack :data:`_LEVEL_RTOL`),
    ``inf`` when none does, with :math:`w` the weight of the test point
    (``test_weight``, 1 for split conformal: the weighted quantile of the
    calibration scores plus a point mass :math:`w` at :math:`+\\infty`, as
    in the weighted conformal prediction of Tibshirani et al. 2019).
    Non-increasing in ``alpha``, so the sets of a larger ``alpha`` are
    subsets of those of a smaller one.

    ``alphas`` and ``test_weight`` broadcast against each other (e.g.
    ``(1, m)`` levels and ``(n, 1)`` test weights give ``(n, m)``
    thresholds): one ``searchsorted`` for all.

    Returns
    -------
    thresholds : ndarray of the broadcast shape of ``alphas`` and \
            ``test_weight``, float64
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    test_weight = np.asarray(test_weight, dtype=np.float64)
    if sorted_scores.size == 0:
        return np.full(np.broadcast_shapes(alphas.shape, test_weight.shape), np.inf)
    level = (1.0 - alphas) * (cum_weight[-1] + test_weight)
    k = np.searchsorted(cum_weight, level - _LEVEL_RTOL * level, side="left")
    values = sorted_scores[np.minimum(k, sorted_scores.size - 1)].astype(np.float64)
    return np.where(k < sorted_scores.size, values, np.inf)


class ThresholdSearch(OrderStatisticSearch):
    """Split-conformal thresholds of scores read pass by pass.

    For each group (all calibration rows, or the rows of each class) and
    each level, the threshold :func:`quantiles_of_sorted` gives on the
    group's scores, found from two to four passes over the data in chunks
    (see :class:`~skcalib._core.order_search.OrderStatisticSearch`):
    the scores are never held together.

    Parameters
    ----------
    n_groups : int
    alphas : array-like of shape (m,)
        Miscoverage levels.
    dtype : {numpy.float32, numpy.float64}
        Dtype of the scores (non-negative).
    weighted : bool
    collect_limit : int, optional

    Notes
    -----
    Exactly :func:`quantiles_of_sorted` without weights and with weights
    whose sums are exact (integers below ``2**53``); with other weights the
    total and the cumulative weights are summed in another order, which can
    move a threshold only when a cumulative weight is within ``~1e-16``
    (relative) of the level, far inside its slack :data:`_LEVEL_RTOL`.

    Examples
    --------
    >>> s = np.array([0.3, 0.1, 0.7, 0.2, 0.9, 0.4, 0.5, 0.8, 0.6])
    >>> search = ThresholdSearch(1, [0.2, 0.5], np.float64, weighted=False)
    >>> while not search.done:
    ...     search.advance(search.merge([search.digit_counts([(s[:4], None)]),
    ...                                  search.digit_counts([(s[4:], None)])]))
    >>> search.thresholds()[0]
    array([0.8, 0.5])
    >>> quantiles_of_sorted(*sort_scores(s), [0.2, 0.5])
    array([0.8, 0.5])
    """

    def __init__(self, n_groups, alphas, dtype, weighted, collect_limit=COLLECT_LIMIT):
        super().__init__(n_groups, dtype, weighted, collect_limit)
        self.alphas = np.asarray(alphas, dtype=np.float64)

    def goals(self, n, total_weight):
        """The level :math:`(1 - \\alpha)(W + 1)` of each ``alpha``, less its
        slack (the goal of :func:`quantiles_of_sorted`)."""
        level = (1.0 - self.alphas) * (total_weight + 1.0)
        return level - _LEVEL_RTOL * level

    def thresholds(self):
        """Per group, the thresholds at ``alphas`` (``inf`` where too few
        scores, and for a group without any).

        Returns
        -------
        thresholds : list of ndarray of shape (m,), float64
        """
        out = []
        for g in range(self.n_groups):
            values, _ = self.values(g)
            out.append(np.full(self.alphas.shape, np.inf) if values is None else values)
        return out


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


def check_alphas(alpha):
    """Levels of :meth:`ConformalClassifier.predict_set`: a float in (0, 1),
    or a non-empty 1-D list of strictly increasing floats in (0, 1).

    Returns
    -------
    alphas : ndarray of shape (m,), float64
    scalar : bool
        Whether ``alpha`` was one number (sets of shape ``(n, K)`` rather
        than ``(n, K, m)``).
    """
    if np.ndim(alpha) == 0:
        try:
            value = float(alpha)
        except (TypeError, ValueError):
            raise ValueError(
                f"alpha must be a float in (0, 1) or a list of them, got {alpha!r}."
            ) from None
        if not 0.0 < value < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        return np.array([value]), True
    try:
        alphas = np.asarray(alpha, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"alpha must be a float in (0, 1) or a list of them, got {alpha!r}."
        ) from None
    if alphas.ndim != 1:
        raise ValueError(
            f"alpha must be a float or a 1-D list of floats, got an array of "
            f"shape {alphas.shape}."
        )
    if alphas.size == 0:
        raise ValueError("alpha is an empty list: give at least one level in (0, 1).")
    bad = np.flatnonzero(~((alphas > 0.0) & (alphas < 1.0)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"alpha must be in (0, 1), got {float(alphas[i])!r} at position {i} of "
            f"{alphas.tolist()}."
        )
    down = np.flatnonzero(np.diff(alphas) <= 0.0)
    if down.size:
        i = int(down[0]) + 1
        raise ValueError(
            f"alpha levels must be strictly increasing, got {float(alphas[i])!r} after "
            f"{float(alphas[i - 1])!r} (position {i} of {alphas.tolist()})."
        )
    return alphas, False
