"""The p-values of the kernel calibration tests of Widmann et al. (2019).

Distribution-free bounds (valid at every ``n``, conservative) and the
bootstrap approximation of the asymptotic null distribution of SKCE_uq
(Arcones and Gine 1992). The normal approximation of SKCE_ul and
consistency resampling live in :mod:`skcalib.metrics._kernel`.

Every function takes validated float64 probabilities ``P`` of shape
``(n, K)``, label codes ``y`` and the kernel (``nu``, ``metric``) as
:mod:`skcalib.metrics._kernel_core` does.
"""

import numpy as np

from skcalib.metrics._kernel_core import (
    BLOCK,
    RESAMPLE_ENTRIES,
    _one_hot_residuals,
    kernel_matrix,
    self_terms,
)

__all__ = []  # private module

#: The uniform bound ``B`` of the terms, ``|h_ij| <= B``: the kernel is at
#: most 1 and ``|(e_y - p) . (e_y' - p')| <= 2`` (``-2`` for ``p = e_y'``,
#: ``p' = e_y``; ``2`` for ``p = p' = e_k``, ``k != y = y'``).
TERM_BOUND = 2.0


def distribution_free_pvalue(statistic, n, estimator):
    """The distribution-free bound of the p-value of [1] (Theorem 4).

    SKCE_b: McDiarmid's inequality for ``sqrt(SKCE_b)``, the norm of a mean
    of ``n`` vectors of squared norm at most ``B``,
    ``exp(-max(0, sqrt(n SKCE_b / B) - 1)**2 / 2)``. SKCE_uq and SKCE_ul:
    Hoeffding's inequality for a U-statistic (a mean of ``n // 2``
    independent pair terms for SKCE_ul) with terms in ``[-B, B]``,
    ``exp(-(n // 2) t**2 / (2 B**2))`` at ``t = max(SKCE, 0)``: the bound
    holds for ``t > 0`` only, so a negative estimate gets 1.
    """
    if estimator == "biased":
        s = max(0.0, np.sqrt(n * max(statistic, 0.0) / TERM_BOUND) - 1.0)
        return float(np.exp(-(s**2) / 2.0))
    t = max(statistic, 0.0)
    return float(np.exp(-(n // 2) * t**2 / (2.0 * TERM_BOUND**2)))


def _term_blocks(P, y, nu, metric, block=BLOCK):
    """``(I, J, H_IJ)`` for the blocks ``I <= J`` of the matrix of the
    terms ``h_ij`` (the diagonal ``h_ii`` exact, from :func:`self_terms`)."""
    n = P.shape[0]
    R = _one_hot_residuals(P, y[:, None])[:, :, 0]
    diagonal = self_terms(P, y[:, None])[:, 0]
    for s in range(0, n, block):
        I = slice(s, min(s + block, n))
        for t in range(s, n, block):
            J = slice(t, min(t + block, n))
            H = kernel_matrix(P[I], P[J], nu, metric)
            H *= R[I] @ R[J].T
            if t == s:
                np.fill_diagonal(H, diagonal[I])
            yield I, J, H


def _row_means(P, y, nu, metric):
    """``g_i = mean_k h_ik`` over every ``k`` (``k = i`` included)."""
    g = np.zeros(P.shape[0])
    for I, J, H in _term_blocks(P, y, nu, metric):
        g[I] += H.sum(axis=1)
        if I != J:
            g[J] += H.sum(axis=0)
    return g / P.shape[0]


def bootstrap_quadratic_null(P, y, nu, metric, n_resamples, rng):
    """``n_resamples`` bootstrap draws of SKCE_uq under the null.

    The degenerate U-statistic of the bootstrap sample (rows drawn with
    replacement, ``c_a`` copies of row ``a``) with the centred kernel
    ``h~(a, b) = h_ab - g_a - g_b + mu`` (``g`` the row means of the
    ``n x n`` term matrix, ``mu`` their mean, which is SKCE_b):

    ``U* = (c' H c - c . diag(H) - 2 (n - 1) c . g + mu n (n - 1)) / (n (n - 1))``

    (the sum of ``h~`` over the ordered pairs of distinct draws). Its law
    approximates the asymptotic null distribution of SKCE_uq, a weighted
    sum of centred chi-squares (Arcones and Gine 1992), as in [1]. The
    quadratic forms are computed block by block of the term matrix, a batch
    of resamples at a time: memory ``O(BLOCK**2 + batch n)``.
    """
    n = P.shape[0]
    g = _row_means(P, y, nu, metric)
    mu = float(g.mean())
    diagonal = self_terms(P, y[:, None])[:, 0]
    per_batch = max(1, RESAMPLE_ENTRIES // n)
    out = []
    for start in range(0, n_resamples, per_batch):
        size = min(per_batch, n_resamples - start)
        C = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.float64)
        quad = np.zeros(size)
        for I, J, H in _term_blocks(P, y, nu, metric):
            part = np.einsum("bi,bi->b", C[:, I] @ H, C[:, J])
            quad += part if I == J else 2.0 * part
        pairs = n * (n - 1)
        out.append((quad - C @ diagonal - 2 * (n - 1) * (C @ g) + mu * pairs) / pairs)
    return np.concatenate(out)
