"""Per-cell sufficient statistics of the binned metrics, and their reductions.

Every binned metric reduces the same per-cell sums: a *cell* is a bin of one
*group* (one group for the confidence curve, one per class for the top-label
and classwise variants). Per cell the sums are the weight, the weighted
confidence, the weighted accuracy (observed frequency), the sum of squared
weights (for the effective sample size) and the unweighted count. They are
additive, so they can be accumulated block by block, merged across chunks
(:class:`~skcalib.metrics.CalibrationAccumulator`, Dask blocks), and
recomputed under bootstrap resampling weights by one sparse product.

Bins come from :mod:`skcalib._core.binning` (right-closed, ``(lo, hi]``,
the first bin ``[0, e_1]``).
"""

from dataclasses import dataclass

import numpy as np

from skcalib._core import accel as _accel
from skcalib._core.binning import (
    _TABLE_MAX_BINS,
    _kernel_tables,
    assign_bins,
    bin_edges,
    bin_sums,
)
from skcalib._core.inputs import (
    binary_column,
    check_finite_proba,
    check_proba_values,
)
from skcalib._core.top1 import (
    _block_rows,
    _iter_transposed,
    fused_checked,
    fused_tolerance,
    iter_top1,
    top1,
)

__all__ = []  # private module

#: Rows of the statistics array: weight, weighted confidence, weighted accuracy,
#: sum of squared weights, unweighted count.
W, CONF, ACC, W2, COUNT = range(5)
#: Up to this many classes the top-label groups are found by one scan per
#: class, beyond by one stable sort (the same rows in the same order).
_SCAN_MAX_CLASSES = 16


def check_values(inp):
    """Check the probabilities of a chunk (finite, in [0, 1], rows sum to 1)."""
    check_finite_proba(inp.proba)
    check_proba_values(inp.proba)


# ------------------------------------------------------------------ groups
def class_members(codes, n_classes):
    """The rows of each class ``0 .. n_classes - 1`` of the encoded labels
    ``codes``, each in row order: one scan per class up to
    :data:`_SCAN_MAX_CLASSES` classes, one stable sort beyond (the same
    rows either way).

    Examples
    --------
    >>> [r.tolist() for r in class_members(np.array([2, 0, 2, 1]), 4)]
    [[1], [3], [0, 2], []]
    """
    if n_classes <= _SCAN_MAX_CLASSES:
        return [np.flatnonzero(codes == g) for g in range(n_classes)]
    order = np.argsort(codes, kind="stable")  # row order within a class
    bounds = np.searchsorted(codes[order], np.arange(n_classes + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(n_classes)]


def iter_groups(inp, kind, class_index=None, top=None):
    """Yield the binned entries of each group: ``(rows, scores, targets,
    weights)``, ``rows`` the samples of the entries (None: all, in order).

    ``"confidence"``: one group, the top-1 probability against top-1
    correctness. ``"top_label"``: one group per predicted class (or only
    ``class_index``), its samples in row order. ``"classwise"``: one group
    per class (or only ``class_index``), its probability against ``y ==
    class``. ``top``: the :func:`~skcalib._core.top1.top1` arrays, if known.
    Values are not checked.
    """
    w = inp.sample_weight
    if kind == "classwise":
        classes = range(inp.n_classes) if class_index is None else [class_index]
        for c in classes:
            col = (
                binary_column(inp.proba, c) if inp.proba.ndim == 1 else inp.proba[:, c]
            )
            yield None, np.ascontiguousarray(col), inp.y == c, w
        return
    pred, conf = top1(inp.proba, check_values=False) if top is None else top
    correct = pred == inp.y
    if kind == "confidence":
        yield None, conf, correct, w
        return
    if class_index is not None:
        members = [np.flatnonzero(pred == class_index)]
    else:
        members = class_members(pred, inp.n_classes)
    for rows in members:
        yield rows, conf[rows], correct[rows], None if w is None else w[rows]


def grouped_scores(inp, kind, class_index=None, top=None):
    """The list of :func:`iter_groups`."""
    return list(iter_groups(inp, kind, class_index, top))


# --------------------------------------------------------------- statistics
@dataclass
class Cells:
    """Assignment of entries to cells, for statistics and the bootstrap.

    Entry ``e`` belongs to sample ``rows[e]`` (``rows is None``: entry ``e``
    is sample ``e``), has value (confidence) ``value[e]`` and target
    (correct, or of the class) ``target[e]``, and falls in cell
    ``cells[e] = group * n_bins + bin``.
    """

    rows: np.ndarray | None
    cells: np.ndarray
    value: np.ndarray
    target: np.ndarray
    n_groups: int
    n_bins: int
    edges: list


def _accumulate(totals, ids, weight, value, target):
    """Add the five per-cell sums of some entries to ``totals`` (5, C)."""
    n_cells = totals.shape[1]
    if weight is None:
        count, s_conf, s_acc = bin_sums(ids, n_cells, None, value, target)
        totals[[W, W2, COUNT]] += count
    else:
        w, s_conf, s_acc, w2 = bin_sums(ids, n_cells, weight, value, target, weight)
        (count,) = bin_sums(ids, n_cells, None)
        totals[W] += w
        totals[W2] += w2
        totals[COUNT] += count
    totals[CONF] += s_conf
    totals[ACC] += s_acc


def cell_assignment(inp, kind, n_bins, strategy, class_index=None, top=None):
    """:class:`Cells` of a binned metric (all groups, or one ``class_index``).

    Entries are the samples in row order (``rows`` None) for the confidence
    and top-label kinds without ``class_index``, the samples of the class
    for one ``class_index``, and one entry per (class, sample) for the
    classwise kind.
    """
    if kind != "classwise":
        top = top1(inp.proba, check_values=False) if top is None else top
    shared = kind == "confidence" or (kind == "top_label" and strategy == "uniform")
    if shared and class_index is None:  # one binning of all rows
        pred, conf = top
        edges = bin_edges(conf, n_bins, strategy, inp.sample_weight)
        ids = assign_bins(conf, edges)
        n_groups = inp.n_classes if kind == "top_label" else 1
        m = edges.size - 1
        cells = ids if n_groups == 1 else pred * m + ids
        return Cells(None, cells, conf, pred == inp.y, n_groups, m, [edges] * n_groups)
    groups = grouped_scores(inp, kind, class_index, top)
    edges = [bin_edges(s, n_bins, strategy, w) for _, s, _, w in groups]
    ids = [assign_bins(g[1], e) for g, e in zip(groups, edges, strict=True)]
    m = max(e.size - 1 for e in edges)
    if len(groups) == 1:
        rows, value, target, _ = groups[0]
        return Cells(rows, ids[0], value, target, 1, m, edges)
    if kind == "top_label":  # each sample in the cell of its class, row order
        pred, conf = top
        cells = np.empty(inp.n_samples, dtype=np.intp)
        for g, (group, b) in enumerate(zip(groups, ids, strict=True)):
            cells[group[0]] = g * m + b
        return Cells(None, cells, conf, pred == inp.y, len(groups), m, edges)
    every = np.arange(inp.n_samples)
    return Cells(
        rows=np.tile(every, len(groups)),
        cells=np.concatenate([g * m + b for g, b in enumerate(ids)]),
        value=np.concatenate([g[1] for g in groups]),
        target=np.concatenate([g[2] for g in groups]),
        n_groups=len(groups),
        n_bins=m,
        edges=edges,
    )


def cell_totals(inp, cells):
    """The (5, n_groups, n_bins) statistics of :class:`Cells`."""
    totals = np.zeros((5, cells.n_groups * cells.n_bins))
    w = inp.sample_weight
    if w is not None and cells.rows is not None:
        w = w[cells.rows]
    _accumulate(totals, cells.cells, w, cells.value, cells.target)
    return totals.reshape(5, cells.n_groups, cells.n_bins), cells.edges


def _group_totals(groups, edges_of):
    """Statistics ``(5, n_groups, max_bins)`` of groups binned one at a time
    (``edges_of(scores, weights)``: the edges of a group); and the edges."""
    parts = []
    for _, scores, target, weight in groups:
        edges = edges_of(scores, weight)
        t = np.zeros((5, edges.size - 1))
        _accumulate(t, assign_bins(scores, edges), weight, scores, target)
        parts.append((t, edges))
    m = max(t.shape[1] for t, _ in parts)
    totals = np.zeros((5, len(parts), m))
    for g, (t, _) in enumerate(parts):
        totals[:, g, : t.shape[1]] = t
    return totals, [e for _, e in parts]


def _fused_uniform(inp, kind, edges, check_values):
    """Statistics ``(5, cells)`` of uniform bins from the one-pass compiled
    kernel (:func:`skcalib._core.accel.binned_totals`), bit for bit those of
    the numpy path; None when that path should run."""
    proba = inp.proba
    n_bins = edges.size - 1
    if n_bins > _TABLE_MAX_BINS:
        return None
    interior = np.ascontiguousarray(edges[1:-1], dtype=proba.dtype)
    fused = _accel.binned_totals(
        proba,
        inp.y,
        inp.sample_weight,
        _kernel_tables(interior),
        n_bins,
        kind,
        _block_rows(proba) if proba.ndim == 2 else proba.size,
        fused_tolerance(proba) if proba.ndim == 2 else 0.0,
    )
    if fused is None or not fused_checked(proba, fused[1], check_values):
        return None
    return fused[0]


def _top1_uniform(inp, kind, n_bins, check_values):
    """Confidence or top-label statistics of uniform bins, in the top-1 scan."""
    edges = bin_edges(None, n_bins, "uniform")
    groups = inp.n_classes if kind == "top_label" else 1
    fused = _fused_uniform(inp, kind, edges, check_values)
    if fused is not None:
        return fused.reshape(5, groups, n_bins), [edges] * groups
    totals = np.zeros((5, groups * n_bins))
    w = inp.sample_weight
    for start, stop, pred, conf in iter_top1(inp.proba, check_values):
        ids = assign_bins(conf, edges)
        if groups > 1:
            ids += pred * n_bins
        correct = pred == inp.y[start:stop]
        _accumulate(totals, ids, None if w is None else w[start:stop], conf, correct)
    return totals.reshape(5, groups, n_bins), [edges] * groups


def _classwise_uniform(inp, n_bins, check_values):
    """Classwise statistics of uniform bins, transposed block by block."""
    k = inp.n_classes
    edges = bin_edges(None, n_bins, "uniform")
    fused = _fused_uniform(inp, "classwise", edges, check_values)
    if fused is not None:
        return fused.reshape(5, k, n_bins), [edges] * k
    if inp.proba.ndim == 1:  # binary: the two columns one at a time
        if check_values:
            check_finite_proba(inp.proba)
            check_proba_values(inp.proba)
        return _group_totals(iter_groups(inp, "classwise"), lambda *_: edges)
    totals = np.zeros((5, k * n_bins))
    offsets = (np.arange(k) * n_bins)[:, None]
    columns = np.arange(k)[:, None]
    w = inp.sample_weight
    for start, stop, blk_t, _ in _iter_transposed(inp.proba, check_values):
        cells = assign_bins(blk_t, edges) + offsets
        targets = inp.y[start:stop] == columns
        wb = None if w is None else np.tile(w[start:stop], k)
        _accumulate(totals, cells.ravel(), wb, blk_t.ravel(), targets.ravel())
    return totals.reshape(5, k, n_bins), [edges] * k


def statistics(inp, kind, n_bins, strategy, class_index=None, check_values=True):
    """Per-cell statistics ``(5, n_groups, n_bins)`` and the edges of each group.

    Uniform bins are accumulated block by block during the one pass over
    ``y_proba`` (O(block) extra memory): confidence and top-label in the top-1
    scan, classwise over transposed blocks. Quantile bins need the values
    first (O(n) memory): top-1 arrays, or one class at a time.

    With the ``fast`` extra (numba), uniform bins take one compiled pass
    that checks the values, finds the top-1 and adds every row to its cell
    (:func:`skcalib._core.accel.binned_totals`), and quantile bins a
    compiled checked top-1 scan: the same sums, bit for bit (the same
    blocks, each summed in row order), and the same errors.
    """
    top_kind = kind in ("confidence", "top_label")
    if top_kind and strategy == "uniform" and class_index is None:
        return _top1_uniform(inp, kind, n_bins, check_values)
    if top_kind:
        top = top1(inp.proba, check_values)
        return cell_totals(
            inp, cell_assignment(inp, kind, n_bins, strategy, class_index, top)
        )
    if strategy == "uniform" and class_index is None:
        return _classwise_uniform(inp, n_bins, check_values)
    if check_values:
        check_finite_proba(inp.proba)
        check_proba_values(inp.proba)
    # One class at a time: O(n) memory.
    return _group_totals(
        iter_groups(inp, kind, class_index),
        lambda scores, weight: bin_edges(scores, n_bins, strategy, weight),
    )


def _uniform_bins(edges_list):
    """The number of bins when every group has the same uniform edges, else None."""
    first = edges_list[0]
    m = first.size - 1
    uniform = np.array_equal(first, np.linspace(0.0, 1.0, m + 1))
    if uniform and all(e is first or np.array_equal(e, first) for e in edges_list):
        return m
    return None


def chunk_totals(inp, kind, edges_list, class_index=None, check=True):
    """Per-cell statistics ``(5, n_groups, max_bins)`` of one chunk.

    Parameters
    ----------
    inp : MetricInputs
    kind : {"confidence", "top_label", "classwise"}
    edges_list : list of ndarray
        The edges of each group (see :func:`iter_groups`). Uniform edges
        shared by every group run the code of the metric functions
        (:func:`statistics`).
    class_index : int or None
    check : bool
        Check the probability values (fused with the binning pass for
        uniform edges).
    """
    m = _uniform_bins(edges_list)
    if m is not None:
        totals, _ = statistics(
            inp, kind, m, "uniform", class_index=class_index, check_values=check
        )
        return totals
    if check:
        check_values(inp)
    edges = iter(edges_list)
    totals, _ = _group_totals(
        iter_groups(inp, kind, class_index), lambda *_: next(edges)
    )
    return totals


# --------------------------------------------------------------- reductions
def reduce_totals(totals, kind, norm, debias, average="mean"):
    """Calibration error from per-cell statistics ``(..., 5, G, M)``.

    Vectorised over leading axes (bootstrap resamples). ``average``: how
    ``kind="classwise"`` combines the classes' errors, their mean or their
    root mean square (for ``norm="l2"``: the root of the mean of the
    classes' squared errors, debiased or not, with its sign).
    """
    w = totals[..., W, :, :]
    filled = w > 0
    safe_w = np.where(filled, w, 1.0)
    acc = totals[..., ACC, :, :] / safe_w
    gap = np.where(filled, acc - totals[..., CONF, :, :] / safe_w, 0.0)
    axes = (-1,) if kind == "classwise" else (-2, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = w / w.sum(axis=axes, keepdims=True)
    if norm == "l1":
        err = (share * np.abs(gap)).sum(axis=axes)
    elif norm == "max":
        err = np.abs(gap).max(axis=axes)
    else:
        sq = gap * gap
        if debias:
            w2 = totals[..., W2, :, :]
            n_eff = np.where(filled, w * w / np.where(w2 > 0, w2, 1.0), 0.0)
            enough = n_eff >= 2
            var = acc * (1 - acc) / np.where(enough, n_eff - 1, 1.0)
            sq = np.where(enough, sq - var, 0.0)
        d = (share * sq).sum(axis=axes)
        if kind == "classwise" and average == "rms":
            d = d.mean(axis=-1)
        err = np.sign(d) * np.sqrt(np.abs(d))
        if kind == "classwise" and average == "rms":
            return err
    if kind == "classwise":
        err = err.mean(axis=-1) if average == "mean" else np.sqrt((err**2).mean(-1))
    return err


def check_norm(norm, debias):
    """``debias`` needs ``norm="l2"``."""
    if debias and norm != "l2":
        raise ValueError(
            f"debias=True is defined for norm='l2' only (the debiased squared "
            f"error), got norm={norm!r}."
        )


def check_totals(n_samples, total_weight):
    """The errors the metric functions raise for empty or weightless data."""
    if n_samples == 0:
        raise ValueError("y_true is empty; at least one sample is needed.")
    if not total_weight > 0:
        raise ValueError("sample_weight sums to 0; the metric is undefined.")


def rescale_stats(stats, ratio):
    """Multiply per-cell statistics ``(5, ...)`` by a weight ratio, in place.

    The weight, confidence and accuracy sums scale with the weights, the sum
    of squared weights with their square, the count not at all.
    """
    if ratio != 1.0:
        stats[[W, CONF, ACC]] *= ratio
        stats[W2] *= ratio * ratio
    return stats


def merged_scale(scale, other):
    """The common scale of two weighted sums and the ratio of each to it.

    A scale of 0 (no data, or only weights of 0) takes the other's.
    """
    new = max(scale, other)
    if new == 0.0:
        return 0.0, 1.0, 1.0
    return new, scale / new, other / new
