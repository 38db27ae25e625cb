"""The arithmetic of the kernel calibration error (Widmann et al. 2019).

The matrix-valued kernel is ``k(p, p') = exp(-d(p, p') / nu) I_K``, with
``d`` the Euclidean distance (``metric="euclidean"``) or the total variation
distance ``TV(p, p') = sum_k |p_k - p'_k| / 2`` (``metric="tv"``, the kernel
of the experiments of Widmann et al.), times the identity, so the term of a
pair of samples is

``h_ij = exp(-d(p_i, p_j) / nu) (e_{y_i} - p_i) . (e_{y_j} - p_j)``.

Every function here takes validated float64 probabilities ``P`` of shape
``(n, K)`` and label codes (column indices). The label codes may have a
second axis of ``c`` columns: ``c`` label vectors scored at once against the
same kernel (the observed labels, or the labels drawn by consistency
resampling), so that the kernel is computed once for all of them.
"""

import numpy as np
from scipy.spatial.distance import pdist

__all__ = []  # private module

#: Rows of a block of the quadratic estimator: its memory is O(BLOCK**2).
BLOCK = 256
#: Pairs whose Gram-formula squared distance is below this fraction of
#: ``max ||p_i||^2 + max ||p_j||^2`` (over the block) get their distance
#: recomputed from the difference (the formula loses the digits of
#: near-equal rows; the square root would turn a rounding error of 1e-17
#: into a distance of 3e-9).
NEAR_TIE = 1e-6
#: Rows whose pairwise distances give the median heuristic: all pairs up to
#: this many rows (the exact median of up to 8.4 million distances, 67 MB),
#: else the pairs of this many rows taken evenly spaced from the rows sorted
#: by their values (lexicographically), so never from their positions: the
#: bandwidth does not depend on the row order either way.
MEDIAN_ROWS = 4096
#: Entries (float64) of the largest temporary of the resampling loops.
RESAMPLE_ENTRIES = 1 << 22
#: Entries (float64) of the ``(rows, rows, classes)`` temporary of the total
#: variation distances of a block.
TV_ENTRIES = 1 << 21
METRICS = ("euclidean", "tv")


def _pairwise_distances(A, B):
    """Euclidean distances of the rows of ``A`` to the rows of ``B``."""
    sa = np.einsum("ij,ij->i", A, A)
    sb = np.einsum("ij,ij->i", B, B)
    D2 = A @ B.T
    D2 *= -2.0
    D2 += sa[:, None]
    D2 += sb[None, :]
    tie = NEAR_TIE * (sa.max(initial=0.0) + sb.max(initial=0.0))
    if D2.size and D2.min() < tie:
        rows, cols = np.nonzero(D2 < tie)
        diff = A[rows] - B[cols]
        D2[rows, cols] = np.einsum("ij,ij->i", diff, diff)
    np.maximum(D2, 0.0, out=D2)
    return np.sqrt(D2, out=D2)


def _pairwise_tv(A, B):
    """Total variation distances ``sum_k |a_ik - b_jk| / 2`` of the rows of
    ``A`` to the rows of ``B``, a few columns at a time (a temporary of at
    most :data:`TV_ENTRIES` entries); exactly 0 for equal rows."""
    D = np.zeros((A.shape[0], B.shape[0]))
    step = max(1, TV_ENTRIES // max(D.size, 1))
    for c in range(0, A.shape[1], step):  # a loop over classes, not samples
        cols = slice(c, c + step)
        D += np.abs(A[:, None, cols] - B[None, :, cols]).sum(axis=2)
    D *= 0.5
    return D


def distance_matrix(A, B, metric="euclidean"):
    """Distances ``d(a_i, b_j)`` of the kernel's ``metric``."""
    return _pairwise_tv(A, B) if metric == "tv" else _pairwise_distances(A, B)


def kernel_matrix(A, B, nu, metric="euclidean"):
    """``exp(-d(a_i, b_j) / nu)`` for the rows of ``A`` and ``B``."""
    K = distance_matrix(A, B, metric)
    K *= -1.0 / nu
    return np.exp(K, out=K)


def _median(d):
    """The median of the 1-D float array ``d`` (as :func:`numpy.median`),
    partitioning ``d`` in place instead of a copy."""
    half = d.size // 2
    if d.size % 2:
        d.partition(half)
        return float(d[half])
    d.partition([half - 1, half])
    return float((d[half - 1] + d[half]) / 2)


def canonical_order(P, y):
    """The permutation that sorts the rows ``(p_i, y_i)`` lexicographically
    (first column of ``P`` first, the label last): rows in any order come
    out in the same order (rows that tie are equal), so a sum over them
    rounds the same way."""
    return np.lexsort((y, *P.T[::-1]))


def median_rows(P):
    """The rows whose pairwise distances give the median heuristic: all of
    them up to :data:`MEDIAN_ROWS` rows; else :data:`MEDIAN_ROWS` rows at
    the evenly spaced positions ``round(i (n - 1) / (MEDIAN_ROWS - 1))`` of
    the rows sorted lexicographically (by the first column, ties by the
    second, ...). Sorting by the values makes the choice a function of the
    set of rows: rows in another order give the same rows (rows that tie in
    every column are equal, so which of them is taken does not matter)."""
    n = P.shape[0]
    if n <= MEDIAN_ROWS:
        return P
    order = np.lexsort(P.T[::-1])
    picks = np.linspace(0, n - 1, MEDIAN_ROWS).round().astype(np.intp)
    return P[order[picks]]


def _median_all(d, n):
    """The median of the ``n**2`` entries of the distance matrix whose
    pairs ``i < j`` have the distances ``d``: its ``n`` zeros on the
    diagonal and every distance twice. Entry ``t`` of the sorted matrix is 0
    for ``t < n``, else the distance of rank ``(t - n) // 2``."""
    total = n * n
    ranks = [total // 2] if total % 2 else [total // 2 - 1, total // 2]
    needed = sorted({(t - n) // 2 for t in ranks if t >= n})
    if needed:
        d.partition(needed)
    values = [d[(t - n) // 2] if t >= n else 0.0 for t in ranks]
    return float(sum(values) / len(values))


def median_bandwidth(P, metric="euclidean", diagonal=False):
    """The median heuristic: the median of the distances ``d(p_i, p_j)``
    (the kernel's ``metric``) over the pairs ``i < j`` of
    :func:`median_rows` (every row up to :data:`MEDIAN_ROWS` rows: the exact
    median); with ``diagonal=True``, the median of all the entries of their
    distance matrix, the zeros ``d(p_i, p_i)`` included and every pair
    twice (the median of the experiments of Widmann et al. 2019). Zero
    distances (tied rows) are left out when the median is 0; 1.0 when every
    row is the same (the kernel is then 1 for any bandwidth). It does not
    depend on the order of the rows: the distances of a permutation are the
    same numbers (``(a - b)**2 == (b - a)**2`` and ``|a - b| == |b - a|``
    exactly)."""
    rows = median_rows(P)
    d = pdist(rows, "cityblock") * 0.5 if metric == "tv" else pdist(rows)
    if diagonal:
        nu = _median_all(d, rows.shape[0])
    else:
        nu = _median(d) if d.size else 0.0
    if nu > 0:
        return nu
    positive = d[d > 0]
    return _median(positive) if positive.size else 1.0


def _one_hot_residuals(P, Y):
    """``e_y - p`` for each of the ``c`` label columns of ``Y``: an array of
    shape ``(rows, K, c)``."""
    n, k = P.shape
    R = np.repeat(-P[:, :, None], Y.shape[1], axis=2)
    rows = np.arange(n)[:, None]
    cols = np.arange(Y.shape[1])[None, :]
    R[rows, Y, cols] += 1.0
    return R


def quadratic_sums(P, Y, nu, block=BLOCK, metric="euclidean"):
    """``sum_{i<j} h_ij`` for each label column of ``Y`` (shape ``(n, c)``),
    block by block: memory ``O(block**2 + block K c)``."""
    n = P.shape[0]
    c = Y.shape[1]
    total = np.zeros(c)
    starts = range(0, n, block)
    residuals = {}
    for s in starts:
        I = slice(s, min(s + block, n))
        RI = residuals.pop(s, None)
        if RI is None:
            RI = _one_hot_residuals(P[I], Y[I])
        for t in starts:
            if t < s:
                continue
            J = slice(t, min(t + block, n))
            kernel = kernel_matrix(P[I], P[J], nu, metric)
            if t == s:
                np.fill_diagonal(kernel, 0.0)
                RJ = RI
            else:
                RJ = residuals.get(t)
                if RJ is None and len(residuals) * block * P.shape[1] * c < (
                    RESAMPLE_ENTRIES
                ):
                    RJ = residuals[t] = _one_hot_residuals(P[J], Y[J])
                elif RJ is None:
                    RJ = _one_hot_residuals(P[J], Y[J])
            KR = (kernel @ RJ.reshape(RJ.shape[0], -1)).reshape(RI.shape[0], -1, c)
            part = np.einsum("ikc,ikc->c", RI, KR)
            total += 0.5 * part if t == s else part
    return total


def _row_distances(A, B, AB):
    """``||a_i - b_i||`` of the rows of ``A`` and ``B`` from their inner
    products ``AB`` (no ``(m, K)`` temporary), near-ties recomputed from the
    difference as in :func:`_pairwise_distances`."""
    sa = np.einsum("ij,ij->i", A, A)
    sb = np.einsum("ij,ij->i", B, B)
    D2 = sa + sb
    tie = NEAR_TIE * D2
    D2 -= 2.0 * AB
    near = np.flatnonzero(D2 < tie)
    if near.size:
        diff = A[near] - B[near]
        D2[near] = np.einsum("ij,ij->i", diff, diff)
    np.maximum(D2, 0.0, out=D2)
    return np.sqrt(D2, out=D2)


def linear_pair_terms(P, Y, metric="euclidean"):
    """The terms ``h_{2i, 2i+1}`` of the linear estimator, without the
    kernel factor, for each label column of ``Y`` (shape ``(m, c)``), and
    the kernel distances ``d(p_{2i}, p_{2i+1})`` (shape ``(m,)``)."""
    m, k = P.shape[0] // 2, P.shape[1]
    A, B = P[0 : 2 * m : 2], P[1 : 2 * m : 2]
    ya, yb = Y[0 : 2 * m : 2], Y[1 : 2 * m : 2]
    AB = np.einsum("ij,ij->i", A, B)
    flat = P.reshape(-1)
    start = 2 * k * np.arange(m)[:, None]
    inner = AB[:, None] - flat.take(start + k + ya) - flat.take(start + yb)
    inner += ya == yb
    if metric == "tv":
        return inner, 0.5 * np.abs(A - B).sum(axis=1)
    return inner, _row_distances(A, B, AB)


def linear_terms(P, Y, nu, metric="euclidean"):
    """``h_{2i, 2i+1}`` for ``i < n // 2``, shape ``(n // 2, c)``."""
    inner, dist = linear_pair_terms(P, Y, metric)
    return inner * np.exp(-dist / nu)[:, None]


def draw_labels(P, n_draws, rng):
    """Labels drawn from the predictions, ``y*_i ~ Categorical(p_i)``, for
    ``n_draws`` independent copies: shape ``(n, n_draws)``, ``intp``."""
    n, k = P.shape
    u = rng.random((n, n_draws))
    cdf = np.cumsum(P, axis=1)
    Y = np.zeros((n, n_draws), dtype=np.intp)
    for j in range(k - 1):
        Y += u > cdf[:, j : j + 1]
    return np.minimum(Y, k - 1, out=Y)


def self_terms(P, Y):
    """``h_ii = ||e_{y_i} - p_i||^2 = 1 - 2 p_{i y_i} + ||p_i||^2`` (the
    kernel is 1 at distance 0) for each label column of ``Y``."""
    sq = np.einsum("ij,ij->i", P, P)[:, None]
    return 1.0 - 2.0 * np.take_along_axis(P, Y, axis=1) + sq


def biased_from_sums(sums, P, Y):
    """SKCE_b ``= (2 sum_{i<j} h_ij + sum_i h_ii) / n**2`` from the sums of
    :func:`quadratic_sums`."""
    n = P.shape[0]
    return (2.0 * sums + self_terms(P, Y).sum(axis=0)) / (n * n)


def resampled_quadratic(P, nu, n_resamples, rng, metric="euclidean", biased=False):
    """SKCE_uq (SKCE_b with ``biased=True``) of ``n_resamples`` label
    vectors drawn from ``P``."""
    n, k = P.shape
    per_batch = max(1, RESAMPLE_ENTRIES // (min(n, BLOCK) * k))
    out = []
    for start in range(0, n_resamples, per_batch):
        Y = draw_labels(P, min(per_batch, n_resamples - start), rng)
        sums = quadratic_sums(P, Y, nu, metric=metric)
        out.append(biased_from_sums(sums, P, Y) if biased else sums / (n * (n - 1) / 2))
    return np.concatenate(out)


def resampled_linear(P, nu, n_resamples, rng, metric="euclidean"):
    """SKCE_ul of ``n_resamples`` label vectors drawn from ``P``."""
    n, k = P.shape
    m = n // 2
    per_batch = max(1, RESAMPLE_ENTRIES // max(n, 1))
    kernel = None
    out = []
    for start in range(0, n_resamples, per_batch):
        Y = draw_labels(P, min(per_batch, n_resamples - start), rng)
        inner, dist = linear_pair_terms(P, Y, metric)
        if kernel is None:
            kernel = np.exp(-dist / nu)
        out.append(kernel @ inner / m)
    return np.concatenate(out)
