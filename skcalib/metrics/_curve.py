"""Per-bin calibration statistics and the reliability curve.

Every binned metric reduces the same per-cell sums: a *cell* is a bin of one
*group* (one group for the confidence curve, one per class for the top-label
and classwise variants). Per cell the sums are the weight, the weighted
confidence, the weighted accuracy (observed frequency), the sum of squared
weights (for the effective sample size) and the unweighted count. They are
additive, so they can be accumulated block by block, merged across chunks, and
recomputed under bootstrap resampling weights by one sparse product.

Bins come from :mod:`skcalib._core.binning` (right-closed, ``(lo, hi]``,
the first bin ``[0, e_1]``).
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import ndtri

from skcalib._core.binning import assign_bins, bin_edges, bin_sums
from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    BINNING_CONSTRAINTS,
    COMMON_CONSTRAINTS,
    KINDS,
    binary_column,
    check_finite_proba,
    check_metric_inputs,
    check_n_bins,
    check_proba_values,
    is_dask_collection,
    reject_discrete_dask,
)

__all__ = ["ReliabilityCurve", "reliability_curve"]

#: Rows per block of the top-1 scan: about this many bytes of ``y_proba``.
_BLOCK_BYTES = 1 << 20
#: Up to this many classes the top-1 scan finds the arg-max by a bit mask
#: (exact in float32: sums of distinct powers of two below 2**24).
_BITMASK_MAX_CLASSES = 24
#: Rows of the statistics array: weight, weighted confidence, weighted accuracy,
#: sum of squared weights, unweighted count.
W, CONF, ACC, W2, COUNT = range(5)


# ------------------------------------------------------------------- top-1
def _check_block(proba, block, start, stop, conf):
    """Check one block; name the row of the whole array in the message."""
    if np.isnan(conf.max()):
        bad = start + int(np.flatnonzero(np.isnan(conf))[0])
        raise ValueError(f"y_proba contains NaN; row {bad} is {proba[bad].tolist()}.")
    try:
        check_proba_values(block)
    except ValueError:
        # Re-check the whole array: the message names the worst row of all
        # of it (and how many rows are off), with its global index.
        check_finite_proba(proba)
        check_proba_values(proba)
        raise


def _block_rows(proba):
    k = proba.shape[1]
    return int(min(1 << 16, max(1024, _BLOCK_BYTES // (k * proba.itemsize))))


def _iter_transposed(proba, check_values):
    """Yield ``(start, stop, block_t, row_max)`` with ``block_t`` the rows
    ``start:stop`` transposed, ``(K, rows)`` in a reused buffer (valid until
    the next step), checked when ``check_values``."""
    n, k = proba.shape
    rows = _block_rows(proba)
    buf = np.empty((k, rows), dtype=proba.dtype)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        blk_t = buf[:, : stop - start]
        np.copyto(blk_t, proba[start:stop].T)
        conf = np.maximum.reduce(blk_t, axis=0)
        if check_values:
            _check_block(proba, blk_t.T, start, stop, conf)
        yield start, stop, blk_t, conf


def iter_top1(proba, check_values=True):
    """Yield ``(start, stop, pred, conf)`` for blocks of rows of ``proba``.

    ``pred`` is the column of the row maximum (the first one on ties, as
    ``np.argmax``) and ``conf`` the maximum, in the dtype of ``proba``. With
    ``check_values`` each block is checked (finite, in [0, 1], rows summing to
    1) while it is in cache. One pass over ``proba``; no ``n x K`` copy.

    For up to 24 classes each block is transposed into a small buffer so that
    every operation runs over contiguous memory: the maximum is a
    column-wise reduction, and the arg-max is read from the exponent of
    ``sum_j 2**(K-1-j) [p_j == max]`` (a matrix-vector product).
    """
    n = proba.shape[0]
    if proba.ndim == 1:
        if check_values:
            check_finite_proba(proba)
            check_proba_values(proba)
        neg = 1 - proba
        yield 0, n, (proba > neg).astype(np.intp), np.maximum(proba, neg)
        return
    k = proba.shape[1]
    if k > _BITMASK_MAX_CLASSES:
        rows = _block_rows(proba)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            block = proba[start:stop]
            pred = block.argmax(axis=1)
            conf = block[np.arange(stop - start), pred]
            if check_values:
                _check_block(proba, block, start, stop, conf)
            yield start, stop, pred, conf
        return
    powers = 2.0 ** np.arange(k - 1, -1, -1, dtype=np.float32)
    rows = _block_rows(proba)
    hit = np.empty((k, rows), dtype=np.float32)
    for start, stop, blk_t, conf in _iter_transposed(proba, check_values):
        hit_t = hit[:, : stop - start]
        np.equal(blk_t, conf, out=hit_t, casting="unsafe")  # 1.0 where at the max
        code = powers @ hit_t  # highest set bit = first column at the maximum
        pred = (k + 126) - (code.view(np.int32) >> 23)  # float32 exponent
        yield start, stop, pred, conf


def top1(proba, check_values=True):
    """Predicted column and confidence of every row (see :func:`iter_top1`)."""
    n = proba.shape[0]
    pred = np.empty(n, dtype=np.intp)
    conf = np.empty(n, dtype=proba.dtype)
    for start, stop, p, c in iter_top1(proba, check_values):
        pred[start:stop] = p
        conf[start:stop] = c
    return pred, conf


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


def _group_edges(value, group, n_groups, n_bins, strategy, weight):
    """Edges of each group and the bin of each entry (the cell in its group)."""
    if strategy == "uniform" or n_groups == 1:
        edges = bin_edges(value, n_bins, strategy, weight)
        return [edges] * n_groups, assign_bins(value, edges)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    edges, ids = [], np.empty(value.size, dtype=np.intp)
    for g in range(n_groups):
        sel = order[bounds[g] : bounds[g + 1]]
        e = bin_edges(
            value[sel], n_bins, strategy, None if weight is None else weight[sel]
        )
        edges.append(e)
        ids[sel] = assign_bins(value[sel], e)
    return edges, ids


def _classwise_parts(inp, n_bins, strategy, classes):
    """Yield ``(probability, target, edges, bin ids)`` of each class."""
    for c in classes:
        col = binary_column(inp.proba, c) if inp.proba.ndim == 1 else inp.proba[:, c]
        col = np.ascontiguousarray(col)
        edges = bin_edges(col, n_bins, strategy, inp.sample_weight)
        yield col, inp.y == c, edges, assign_bins(col, edges)


def _classwise_uniform(inp, n_bins, check_values):
    """Classwise statistics of uniform bins, transposed block by block."""
    k = inp.n_classes
    edges = bin_edges(None, n_bins, "uniform")
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


def cell_assignment(inp, kind, n_bins, strategy, class_index=None, top=None):
    """:class:`Cells` of a binned metric (all groups, or one ``class_index``)."""
    y, w, k = inp.y, inp.sample_weight, inp.n_classes
    if kind == "classwise":
        classes = range(k) if class_index is None else [class_index]
        parts = list(_classwise_parts(inp, n_bins, strategy, classes))
        m = max(p[2].size - 1 for p in parts)
        return Cells(
            rows=None if len(parts) == 1 else np.tile(np.arange(y.size), len(parts)),
            cells=np.concatenate([g * m + p[3] for g, p in enumerate(parts)]),
            value=np.concatenate([p[0] for p in parts]),
            target=np.concatenate([p[1] for p in parts]),
            n_groups=len(parts),
            n_bins=m,
            edges=[p[2] for p in parts],
        )
    pred, conf = top1(inp.proba, check_values=False) if top is None else top
    correct = pred == y
    rows = None
    if kind == "top_label" and class_index is not None:
        rows = np.flatnonzero(pred == class_index)
        conf, correct, pred = conf[rows], correct[rows], np.zeros(rows.size, np.intp)
    n_groups = k if kind == "top_label" and class_index is None else 1
    group = pred if n_groups > 1 else None
    ws = w if rows is None or w is None else w[rows]
    edges, ids = _group_edges(conf, group, n_groups, n_bins, strategy, ws)
    m = max(e.size - 1 for e in edges)
    cells = ids if n_groups == 1 else group * m + ids
    return Cells(rows, cells, conf, correct, n_groups, m, edges)


def cell_totals(inp, cells):
    """The (5, n_groups, n_bins) statistics of :class:`Cells`."""
    totals = np.zeros((5, cells.n_groups * cells.n_bins))
    w = inp.sample_weight
    if w is not None and cells.rows is not None:
        w = w[cells.rows]
    _accumulate(totals, cells.cells, w, cells.value, cells.target)
    return totals.reshape(5, cells.n_groups, cells.n_bins), cells.edges


def statistics(inp, kind, n_bins, strategy, class_index=None, check_values=True):
    """Per-cell statistics ``(5, n_groups, n_bins)`` and the edges of each group.

    Uniform bins are accumulated block by block during the one pass over
    ``y_proba`` (O(block) extra memory): confidence and top-label in the top-1
    scan, classwise over transposed blocks. Quantile bins need the values
    first (O(n) memory): top-1 arrays, or one class at a time.
    """
    top_kind = kind in ("confidence", "top_label")
    if top_kind and strategy == "uniform" and class_index is None:
        edges = bin_edges(None, n_bins, "uniform")
        groups = inp.n_classes if kind == "top_label" else 1
        totals = np.zeros((5, groups * n_bins))
        w = inp.sample_weight
        for start, stop, pred, conf in iter_top1(inp.proba, check_values):
            ids = assign_bins(conf, edges)
            if groups > 1:
                ids += pred * n_bins
            correct = pred == inp.y[start:stop]
            _accumulate(
                totals, ids, None if w is None else w[start:stop], conf, correct
            )
        return totals.reshape(5, groups, n_bins), [edges] * groups
    if top_kind:
        top = top1(inp.proba, check_values)
        return cell_totals(
            inp, cell_assignment(inp, kind, n_bins, strategy, class_index, top)
        )
    if strategy == "uniform" and class_index is None and inp.proba.ndim == 2:
        return _classwise_uniform(inp, n_bins, check_values)
    if check_values:
        check_finite_proba(inp.proba)
        check_proba_values(inp.proba)
    # One class at a time: O(n) memory.
    classes = range(inp.n_classes) if class_index is None else [class_index]
    parts = []
    for col, target, edges, ids in _classwise_parts(inp, n_bins, strategy, classes):
        t = np.zeros((5, edges.size - 1))
        _accumulate(t, ids, inp.sample_weight, col, target)
        parts.append((t, edges))
    m = max(t.shape[1] for t, _ in parts)
    totals = np.zeros((5, len(parts), m))
    for g, (t, _) in enumerate(parts):
        totals[:, g, : t.shape[1]] = t
    return totals, [e for _, e in parts]


# -------------------------------------------------------------------- curve
@dataclass(frozen=True, eq=False)
class ReliabilityCurve:
    """Per-bin values of a reliability diagram, from :func:`reliability_curve`.

    Every bin is reported, empty ones included: an empty bin has
    ``counts == 0``, ``nonempty == False`` and NaN ``mean_confidence``,
    ``accuracy``, ``lower`` and ``upper``. Arrays are read-only.

    Attributes
    ----------
    edges : ndarray of shape (n_bins + 1,)
        Bin edges, increasing from 0 to 1; bin ``j`` is ``(edges[j],
        edges[j + 1]]`` and the first bin also holds 0.
    mean_confidence : ndarray of shape (n_bins,)
        Weighted mean predicted probability (confidence) in each bin.
    accuracy : ndarray of shape (n_bins,)
        Weighted observed frequency of the event (correct prediction, or the
        class) in each bin.
    counts : ndarray of shape (n_bins,)
        Total sample weight in each bin (the number of samples without
        weights).
    n_samples : ndarray of shape (n_bins,)
        Number of samples in each bin, ignoring weights.
    lower, upper : ndarray of shape (n_bins,)
        Wilson score interval of ``accuracy`` at ``confidence_level``, with
        the effective sample size ``(sum w)**2 / sum w**2`` of the bin (the
        number of samples without weights).
    nonempty : ndarray of shape (n_bins,), bool
        Bins holding positive weight.
    kind : str
        ``"confidence"``, ``"top_label"`` or ``"classwise"``.
    strategy : str
        ``"uniform"``, ``"quantile"`` or ``"discrete"`` (``"fixed"``: edges given to
        :class:`CalibrationAccumulator`).
    class_index : int or None
        The column the curve is about, or None (pooled top-1 confidence).
    confidence_level : float
        Level of ``lower`` and ``upper``.

    See Also
    --------
    reliability_curve : Computes it.
    skcalib.plotting.ReliabilityDisplay : Draws it.
    """

    edges: np.ndarray
    mean_confidence: np.ndarray
    accuracy: np.ndarray
    counts: np.ndarray
    n_samples: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    nonempty: np.ndarray
    kind: str
    strategy: str
    class_index: int | None
    confidence_level: float


def wilson_interval(successes, n_eff, confidence_level):
    """Wilson score interval of a proportion ``successes / n_eff`` (NaN if 0)."""
    z = float(ndtri(0.5 + confidence_level / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / n_eff
        z2n = z * z / n_eff
        centre = (p + z2n / 2) / (1 + z2n)
        half = z * np.sqrt(p * (1 - p) / n_eff + z2n / (4 * n_eff)) / (1 + z2n)
    # The interval contains p (exactly, despite rounding: 0 at p = 0).
    lower = np.clip(np.minimum(centre - half, p), 0.0, 1.0)
    upper = np.clip(np.maximum(centre + half, p), 0.0, 1.0)
    return lower, upper


def _resolve_class_index(kind, class_index, n_classes):
    if class_index is not None and not 0 <= class_index < n_classes:
        raise ValueError(
            f"class_index must be in [0, {n_classes - 1}] (a column of y_proba), "
            f"got {class_index}."
        )
    if kind == "confidence" and class_index is not None:
        raise ValueError(
            "kind='confidence' pools all classes; class_index needs "
            "kind='top_label' or kind='classwise'."
        )
    if kind == "classwise" and class_index is None:
        if n_classes == 2:
            return 1
        raise ValueError(
            "kind='classwise' needs class_index (the column of the class) when "
            f"there are {n_classes} classes."
        )
    return None if class_index is None else int(class_index)


@validate_params(
    {
        **COMMON_CONSTRAINTS,
        **BINNING_CONSTRAINTS,
        "kind": [StrOptions(set(KINDS))],
        "class_index": [Interval(Integral, 0, None, closed="left"), None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def reliability_curve(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    class_index=None,
    sample_weight=None,
    labels=None,
    confidence_level=0.95,
):
    """Per-bin confidence, accuracy, counts and intervals of a reliability diagram.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class, in the
        order of ``labels``.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Equal-width bins, or equal-mass bins from the (weighted) quantiles of
        the binned probabilities (tied quantiles are merged, so fewer bins may
        be returned), or one bin per distinct probability (``n_bins`` unused;
        at most 4096 distinct values, else a ``ValueError``).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        What is binned:

        * ``"confidence"``: the top-1 probability of every sample against
          whether the top-1 class is right;
        * ``"top_label"``: with ``class_index=k``, the same for the samples
          predicted as class ``k`` only; without, the same as
          ``"confidence"``;
        * ``"classwise"``: the probability of class ``class_index`` against
          ``y == class``, over all samples (``class_index`` defaults to the
          positive class, column 1, for binary input).
    class_index : int, default=None
        Column of ``y_proba`` (index into ``labels``) the curve is about.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted
        labels of ``y_true``.
    confidence_level : float, default=0.95
        Level of the per-bin Wilson intervals.

    Returns
    -------
    curve : ReliabilityCurve
        Per-bin ``edges``, ``mean_confidence``, ``accuracy``, ``counts``,
        ``n_samples``, ``lower``, ``upper``, ``nonempty``.

    See Also
    --------
    expected_calibration_error : The weighted mean gap of this curve.
    sklearn.calibration.calibration_curve : Binary only; drops empty bins.
    skcalib.plotting.ReliabilityDisplay : Draws this curve.

    Notes
    -----
    Bins are right-closed, :math:`(e_j, e_{j+1}]`, the first one
    :math:`[0, e_1]`, as in :func:`sklearn.calibration.calibration_curve`; a
    probability equal to an edge lands in the lower bin (edges are compared in
    the dtype of ``y_proba``). For bin :math:`B_j` with weights :math:`w_i`,
    predicted probabilities :math:`c_i` and outcomes :math:`a_i \\in \\{0, 1\\}`:

    .. math::

        \\mathrm{conf}_j = \\frac{\\sum_{i \\in B_j} w_i c_i}{\\sum_{i \\in B_j} w_i},
        \\qquad
        \\mathrm{acc}_j = \\frac{\\sum_{i \\in B_j} w_i a_i}{\\sum_{i \\in B_j} w_i}.

    The Wilson score interval [2]_ of :math:`\\mathrm{acc}_j` uses the
    effective sample size :math:`n_j = (\\sum w_i)^2 / \\sum w_i^2` (Kish),
    which is the count when there are no weights.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] E. B. Wilson, "Probable inference, the law of succession, and
       statistical inference", JASA 22, 1927.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import reliability_curve
    >>> y = np.array([0, 1, 1, 0, 1, 1])
    >>> p = np.array([0.1, 0.6, 0.8, 0.9, 0.8, 0.95])  # P(y = 1)
    >>> curve = reliability_curve(y, p, n_bins=4, kind="classwise")
    >>> curve.counts
    array([1., 0., 1., 4.])
    >>> curve.accuracy          # the empty bin is NaN, not dropped
    array([0.  ,  nan, 1.  , 0.75])
    >>> curve.mean_confidence
    array([0.1   ,   nan, 0.6   , 0.8625])
    """
    if any(is_dask_collection(a) for a in (y_true, y_proba, sample_weight)):
        reject_discrete_dask(strategy)
        from skcalib._backends.dask import reliability_curve as dask_curve

        return dask_curve(
            y_true,
            y_proba,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            class_index=class_index,
            sample_weight=sample_weight,
            labels=labels,
            confidence_level=confidence_level,
        )
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels, check_values=False
    )
    n_bins = check_n_bins(n_bins, inp.n_samples)
    class_index = _resolve_class_index(kind, class_index, inp.n_classes)
    pooled = "confidence" if kind == "top_label" and class_index is None else kind
    totals, edges = statistics(inp, pooled, n_bins, strategy, class_index=class_index)
    return curve_from_totals(
        totals[:, 0, : edges[0].size - 1],
        edges[0],
        kind=kind,
        strategy=strategy,
        class_index=class_index,
        confidence_level=confidence_level,
        weight_scale=inp.weight_scale,
    )


def curve_from_totals(
    t, edges, *, kind, strategy, class_index, confidence_level, weight_scale=1.0
):
    """:class:`ReliabilityCurve` from the ``(5, n_bins)`` statistics of one group.

    ``weight_scale``: the weights of ``t`` are the user's divided by it (see
    :func:`~skcalib._core.inputs.check_sample_weight`); ``counts`` is
    given back in the user's units.
    """
    filled = t[W] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(filled, t[CONF] / t[W], np.nan)
        acc = np.where(filled, t[ACC] / t[W], np.nan)
        n_eff = np.where(filled, t[W] ** 2 / t[W2], np.nan)
    lower, upper = wilson_interval(acc * n_eff, n_eff, confidence_level)
    counts = t[COUNT].astype(np.intp)
    with np.errstate(over="ignore"):
        weight = t[W] * weight_scale
    if not np.isfinite(weight).all():
        bad = int(np.flatnonzero(~np.isfinite(weight))[0])
        raise ValueError(
            f"the total sample weight of bin {bad} exceeds the float64 range "
            f"({t[W][bad].item():.6g} x {weight_scale:.6g}); divide sample_weight "
            "by a constant (no value of the curve but counts depends on it)."
        )
    arrays = [edges, conf, acc, weight, counts, lower, upper, filled]
    for a in arrays:
        a.flags.writeable = False
    return ReliabilityCurve(
        *arrays,
        kind=kind,
        strategy=strategy,
        class_index=class_index,
        confidence_level=float(confidence_level),
    )
