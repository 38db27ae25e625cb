"""Per-cell statistics and loss sums of array-API inputs, on the device.

The counterpart of :mod:`skcalib._core.totals` and :mod:`skcalib._core.losses`
for inputs of another namespace (torch, CuPy, array-api-strict, ...): the
same cells, the same bins (right-closed, edges compared in the dtype of the
scores) and the same five sums per cell, computed where the data live. Only
the small results cross to the host, as float64 numpy arrays, so that the
reductions of :mod:`skcalib._core.totals` run unchanged.

Precision
---------
Sums are accumulated in :attr:`~skcalib._core.xp.Namespace.accumulate_dtype`
(float64 where the device has it): the scores are cast to float64 before
any product or sum, so float32 inputs give the totals of numpy's float64
path up to the order of the float64 additions (1e-12 relative on the
metrics of float64 input, 1e-6 absolute on the ECE of float32 input at
n = 1e7; measured: a few 1e-16). On a device without float64 (Apple's MPS)
the float sums are *blocked*: per-cell sums of blocks of
:data:`PAIRWISE_BLOCK` rows (one small matrix product each), then a
pairwise (tree) sum of the blocks, so the rounding error grows with
``log2(n)`` instead of ``n`` (float32 atomics, as in torchmetrics, drift
by 3e-3 at n = 1e7); counts and unweighted correct counts are exact
integers (a sort and a binary search).

Quantile edges: without weights they are the inverted-CDF quantiles of the
sorted scores, taken on the device (exactly numpy's edges); with weights,
and for ``strategy="discrete"``, the scores of each group (and their
weights) are moved to the host once and :func:`~skcalib._core.binning.bin_edges`
computes the edges (a cumulative weight on the device could round
differently at a tie); the sums are then computed on the device.
"""

import numpy as np

from skcalib._core.binning import bin_edges, check_n_bins
from skcalib._core.losses import LOSS_BRIER, LOSS_NLL, LOSS_W, NLL_FLOOR
from skcalib._core.quantile_search import (
    edges_from_quantiles,
    inverted_cdf_ranks,
    quantile_levels,
)
from skcalib._core.totals import ACC, CONF, COUNT, W2, W
from skcalib._core.xp import to_numpy

__all__ = []  # private module

#: Rows per block of the blocked (pairwise) float32 sums.
PAIRWISE_BLOCK = 64
#: Elements of the one-hot matrix of one step of the matrix-product sums.
_ONE_HOT_ELEMENTS = 1 << 22
#: Rows per block of the multiclass losses (``n x K`` work arrays).
_LOSS_BLOCK_ELEMENTS = 1 << 24


def use_pairwise(ns, pairwise=None):
    """Whether sums are blocked float32 sums: ``pairwise``, or by default
    when the device has no float64."""
    return not ns.has_float64 if pairwise is None else bool(pairwise)


# -------------------------------------------------------------- sums
def tree_sum(xp, parts):
    """Sum over axis 0 of ``parts`` by a balanced tree of additions."""
    while parts.shape[0] > 1:
        if parts.shape[0] % 2:
            parts = xp.concat([parts, xp.zeros_like(parts[:1, ...])], axis=0)
        half = parts.shape[0] // 2
        parts = parts[:half, ...] + parts[half:, ...]
    return parts[0, ...]


def _padded(xp, v, block):
    """``v`` (n, ...) padded with zero rows to a multiple of ``block``."""
    extra = (-v.shape[0]) % block
    if extra:
        pad = xp.zeros((extra, *v.shape[1:]), dtype=v.dtype, device=v.device)
        v = xp.concat([v, pad], axis=0)
    return v


def total(ns, v, pairwise=None):
    """``sum(v)`` of a 1-D array as a Python float: in the accumulation
    dtype, or blocked and pairwise (see the module's Notes)."""
    xp = ns.xp
    v = xp.astype(v, ns.accumulate_dtype)
    if not use_pairwise(ns, pairwise) or v.shape[0] <= PAIRWISE_BLOCK:
        return float(xp.sum(v)) if v.shape[0] else 0.0
    blocks = xp.reshape(_padded(xp, v, PAIRWISE_BLOCK), (-1, PAIRWISE_BLOCK))
    return float(tree_sum(xp, xp.sum(blocks, axis=1)))


def _integer_counts(ns, keys, n_keys):
    """Exact ``bincount(keys, minlength=n_keys)`` by a sort and a search."""
    xp = ns.xp
    ordered = xp.sort(keys)
    bounds = xp.arange(n_keys + 1, dtype=keys.dtype, device=ns.device)
    at = xp.searchsorted(ordered, bounds, side="left")
    return xp.astype(at[1:] - at[:-1], xp.int64)


def _matmul_sums(ns, ids, n_cells, columns, block, pairwise):
    """Per-cell sums ``(n_cells, q)`` of the columns ``(n, q)`` by one-hot
    products over blocks of rows (tree-summed when ``pairwise``)."""
    xp = ns.xp
    cells = xp.arange(n_cells, dtype=ids.dtype, device=ns.device)
    step = max(block, (_ONE_HOT_ELEMENTS // max(n_cells, 1)) // block * block)
    parts = []
    n = ids.shape[0]
    for start in range(0, n, step):
        i = ids[start : min(start + step, n)]
        v = columns[start : min(start + step, n), :]
        if pairwise:
            i = xp.reshape(_padded(xp, i, block), (-1, block))
            v = xp.reshape(_padded(xp, v, block), (i.shape[0], block, -1))
            hot = xp.astype(i[:, :, None] == cells, v.dtype)
            parts.append(xp.matmul(xp.matrix_transpose(hot), v))
        else:
            hot = xp.astype(i[:, None] == cells, v.dtype)
            parts.append(xp.matmul(xp.matrix_transpose(hot), v)[None, ...])
    stacked = xp.concat(parts, axis=0)
    return tree_sum(xp, stacked) if pairwise else xp.sum(stacked, axis=0)


def cell_sums(ns, ids, n_cells, columns, pairwise=None):
    """Per-cell sums of float ``columns`` (a list of (n,) arrays; None for
    a count) over the cells ``ids``, as a float64 numpy ``(q, n_cells)``."""
    xp = ns.xp
    pairwise = use_pairwise(ns, pairwise)
    acc = ns.accumulate_dtype
    if not pairwise and hasattr(xp, "bincount"):
        out = [
            xp.astype(
                xp.bincount(ids, minlength=n_cells)
                if c is None
                else xp.bincount(ids, weights=xp.astype(c, acc), minlength=n_cells),
                acc,
            )
            for c in columns
        ]
        return np.asarray(to_numpy(xp.stack(out)), dtype=np.float64)
    ones = xp.ones(ids.shape[0], dtype=acc, device=ns.device)
    stack = xp.stack([ones if c is None else xp.astype(c, acc) for c in columns])
    sums = _matmul_sums(
        ns, ids, n_cells, xp.matrix_transpose(stack), PAIRWISE_BLOCK, pairwise
    )
    return np.asarray(to_numpy(xp.matrix_transpose(sums)), dtype=np.float64)


def five_sums(ns, ids, n_cells, value, target, weight, pairwise=None):
    """The (5, n_cells) statistics of :mod:`skcalib._core.totals` (weight,
    weighted confidence, weighted accuracy, squared weights, count)."""
    xp = ns.xp
    acc = ns.accumulate_dtype
    out = np.zeros((5, n_cells))
    if ids.shape[0] == 0:
        return out
    value = xp.astype(value, acc)
    if weight is None:
        if use_pairwise(ns, pairwise):  # exact integer counts
            keys = ids * 2 + xp.astype(target, ids.dtype)
            both = np.asarray(to_numpy(_integer_counts(ns, keys, 2 * n_cells)))
            both = both.reshape(-1, 2).astype(np.float64)
            count, hits = both.sum(axis=1), both[:, 1]
            (s_conf,) = cell_sums(ns, ids, n_cells, [value], pairwise)
        else:
            count, s_conf, hits = cell_sums(
                ns, ids, n_cells, [None, value, xp.astype(target, acc)], pairwise
            )
        out[[W, W2, COUNT]] = count
        out[CONF], out[ACC] = s_conf, hits
        return out
    target = xp.astype(target, acc)
    cols = [weight, weight * value, weight * target, weight * weight]
    out[[W, CONF, ACC, W2]] = cell_sums(ns, ids, n_cells, cols, pairwise)
    if use_pairwise(ns, pairwise):
        out[COUNT] = to_numpy(_integer_counts(ns, ids, n_cells))
    else:
        out[COUNT] = cell_sums(ns, ids, n_cells, [None], pairwise)[0]
    return out


# ----------------------------------------------------------------- bins
def _np_dtype(ns, dtype):
    return np.float64 if dtype == ns.xp.float64 else np.float32


def assign(ns, scores, edges):
    """Bin of each score (right-closed bins; edges in the scores' dtype)."""
    xp = ns.xp
    interior = edges[1:-1].astype(_np_dtype(ns, scores.dtype))
    if interior.size == 0:
        return xp.zeros(scores.shape, dtype=xp.int64, device=ns.device)
    boundaries = xp.asarray(interior, device=ns.device)
    return xp.astype(xp.searchsorted(boundaries, scores, side="left"), xp.int64)


def edges_of(ns, scores, n_bins, strategy, weight):
    """:func:`~skcalib._core.binning.bin_edges` of one group's scores."""
    if strategy == "uniform":
        return bin_edges(None, n_bins, "uniform")
    if strategy == "discrete" or weight is not None:
        w = None if weight is None else to_numpy(weight)
        return bin_edges(to_numpy(scores), n_bins, strategy, w)
    xp = ns.xp
    n = scores.shape[0]
    n_bins = check_n_bins(n_bins, n)
    if n == 0:
        return np.array([0.0, 1.0])
    ranks = inverted_cdf_ranks(n, quantile_levels(n_bins))
    ordered = xp.sort(scores)
    picked = xp.take(ordered, xp.asarray(ranks, device=ns.device), axis=0)
    return edges_from_quantiles(to_numpy(picked), float(ordered[-1]))


# --------------------------------------------------------------- groups
def top1(ns, proba):
    """``(pred, conf)``: column of the row maximum (the first on ties) and
    the maximum, in the dtype of ``proba``."""
    xp = ns.xp
    if proba.ndim == 1:
        neg = 1 - proba
        return xp.astype(proba > neg, xp.int64), xp.maximum(proba, neg)
    return xp.astype(xp.argmax(proba, axis=1), xp.int64), xp.max(proba, axis=1)


def _column(ns, proba, k):
    """Probability of class ``k``, contiguous (a copy of a 2-D column)."""
    if proba.ndim == 1:
        return proba if k == 1 else 1 - proba
    return ns.xp.asarray(proba[:, k], copy=True)


def iter_groups(ns, y, proba, weight, n_classes, kind, class_index, top):
    """``(scores, targets, weights)`` of each group (see
    :func:`skcalib._core.totals.iter_groups`)."""
    if kind == "classwise":
        classes = range(n_classes) if class_index is None else [class_index]
        for c in classes:
            yield _column(ns, proba, c), y == c, weight
        return
    pred, conf = top
    correct = pred == y
    classes = range(n_classes) if class_index is None else [class_index]
    for g in classes:
        rows = pred == g
        w = None if weight is None else weight[rows]
        yield conf[rows], correct[rows], w


def statistics(
    ns,
    y,
    proba,
    weight,
    n_classes,
    kind,
    n_bins,
    strategy,
    class_index=None,
    *,
    pairwise=None,
):
    """Per-cell statistics ``(5, n_groups, n_bins)`` (float64 numpy) and the
    edges of each group, as :func:`skcalib._core.totals.statistics`.

    ``y``: class codes (int64, of the namespace); ``proba``: 1-D or 2-D
    validated probabilities in their compute dtype; ``weight``: scaled
    weights in the accumulation dtype, or None.
    """
    top = None if kind == "classwise" else top1(ns, proba)
    shared = kind == "confidence" or (kind == "top_label" and strategy == "uniform")
    if shared and class_index is None:
        pred, conf = top
        edges = edges_of(ns, conf, n_bins, strategy, weight)
        ids = assign(ns, conf, edges)
        m = edges.size - 1
        n_groups = n_classes if kind == "top_label" else 1
        cells = ids if n_groups == 1 else pred * m + ids
        sums = five_sums(ns, cells, n_groups * m, conf, pred == y, weight, pairwise)
        return sums.reshape(5, n_groups, m), [edges] * n_groups
    parts = []
    for scores, target, w in iter_groups(
        ns, y, proba, weight, n_classes, kind, class_index, top
    ):
        edges = edges_of(ns, scores, n_bins, strategy, w)
        m = edges.size - 1
        ids = assign(ns, scores, edges)
        parts.append((five_sums(ns, ids, m, scores, target, w, pairwise), edges))
    m = max(t.shape[1] for t, _ in parts)
    totals = np.zeros((5, len(parts), m))
    for g, (t, _) in enumerate(parts):
        totals[:, g, : t.shape[1]] = t
    return totals, [e for _, e in parts]


# --------------------------------------------------------------- losses
def _row_blocks(proba):
    if proba.ndim == 1:
        return proba.shape[0] or 1
    return max(1, _LOSS_BLOCK_ELEMENTS // proba.shape[1])


def _weighted(ns, v, weight, pairwise):
    return total(ns, v if weight is None else v * weight, pairwise)


def _sample_losses(ns, y, proba, n_classes, nll, brier):
    """Per-sample NLL and Brier terms (accumulation dtype) of rows of ``proba``."""
    xp = ns.xp
    acc = ns.accumulate_dtype
    out = {}
    if proba.ndim == 1:
        p = xp.astype(proba, acc)
        p_true = xp.where(y == 1, p, 1.0 - p)
        pos = p
    else:
        hot = y[:, None] == xp.arange(proba.shape[1], dtype=y.dtype, device=ns.device)
        zero = xp.zeros((), dtype=proba.dtype, device=ns.device)
        p_true = xp.astype(xp.sum(xp.where(hot, proba, zero), axis=1), acc)
        pos = xp.astype(proba[:, 1], acc) if n_classes == 2 else None
    if nll:
        out["nll"] = -xp.log(xp.clip(p_true, min=NLL_FLOOR))
    if brier:
        if n_classes == 2:
            d = pos - xp.astype(y, acc)
            out["brier"] = d * d
        else:
            diff = xp.astype(proba, acc) - xp.astype(hot, acc)
            out["brier"] = xp.sum(diff * diff, axis=1)
    return out


def loss_sums(ns, y, proba, weight, n_classes, *, nll=True, brier=True, pairwise=None):
    """``[sum w, sum w * NLL, sum w * Brier]`` (float64 numpy), as
    :func:`skcalib._core.losses.loss_sums`, computed on the device by blocks
    of rows."""
    sums = np.zeros(3)
    n = y.shape[0]
    sums[LOSS_W] = float(n) if weight is None else total(ns, weight, pairwise)
    step = _row_blocks(proba)
    for start in range(0, n, step):
        stop = min(start + step, n)
        w = None if weight is None else weight[start:stop]
        losses = _sample_losses(
            ns, y[start:stop], proba[start:stop, ...], n_classes, nll, brier
        )
        if nll:
            sums[LOSS_NLL] += _weighted(ns, losses["nll"], w, pairwise)
        if brier:
            sums[LOSS_BRIER] += _weighted(ns, losses["brier"], w, pairwise)
    return sums
