"""The loops of the fused binned-metric kernels, compiled by
:mod:`skcalib._core.accel` (plain Python in numba's subset; never called
uncompiled).

Each kernel reads ``y_proba`` once, row by row: it checks the row (values
in ``[0, 1]``, the row sum within ``tol`` of 1: in float64, or for the
top-1 scans below :data:`WIDE_CLASSES` columns in the dtype of ``y_proba``
with a ``tol`` that covers float32 rounding), finds its top-1
column and confidence (the first column at the maximum, as ``np.argmax``)
or bins every column, and adds the row to the per-cell sums. The sums are
kept per block of ``block`` rows and added to ``totals`` at the end of each
block, in the order of the numpy path (:mod:`skcalib._core.totals`): a
block's sums are sequential sums in row order (as ``np.bincount``), so the
totals are bit for bit those of the numpy path when ``block`` is its block.

The bin of a score ``s`` is read from the cell table of
:mod:`skcalib._core.binning` (``code[floor(s * n_cells)]``, a binary search
on ``interior`` for the cells an edge cuts); the product ``s * n_cells`` is
clamped to ``[0, n_cells]`` by two comparisons that also send NaN to the
last cell, so that every index stays inside the tables. The kernels return
whether a row failed the check (NaN included: its sum is NaN); the caller
then runs the numpy checks, whose messages name the bad row. ``weight`` of
size 0 means unweighted.

From :data:`WIDE_CLASSES` columns on, a row is checked by passes that the
compiler vectorises: its float64 sum in any order (the tolerance's margin
covers any order), and its largest and smallest entries compared as the
integers of the same bytes (``bits``), which order as the numbers for
values ``>= +0.0``; a set sign bit (a negative value, ``-0.0``, a negative
NaN) or a pattern above that of 1.0 (a positive NaN, an infinity) flags
the row, and the numpy check decides (``-0.0`` passes it, and the sums of
such a row are still exact). The classwise kernel adds the entries of each
class's first bin (most of the entries of a wide softmax) in one
vectorised pass, one class per lane, so that each cell's sum keeps its
sequential row order.

Below :data:`WIDE_CLASSES` columns the confidence and top-label kernel is
:func:`skcalib._core.accel.vector.top1_vector`: 16 rows at a time, one row
per vector lane.

Imported by :func:`skcalib._core.accel._kernels` only once numba is (this
module imports it).

``totals`` is ``(5, cells)``: weight, weighted confidence, weighted
accuracy, sum of squared weights, count (the rows of
:mod:`skcalib._core.totals`).
"""

import numpy as np
from numba.extending import register_jitable

from skcalib._core.accel.simd import high_columns, native_compress

__all__ = []  # private module

#: Whether numba compiles for a target with a native vector compress
#: (AVX-512): there :func:`high_entries` picks 16 columns at a time (about
#: 1.2x faster classwise ECE at 1e6 x 100 float32); elsewhere LLVM would expand the
#: compress lane by lane, slower than the scalar loop (measured for AVX2).
VECTOR_COMPRESS = native_compress()

#: From this many columns the top-1 scan takes vectorised passes over each
#: row (:func:`top1_wide`); below, rows in vector lanes
#: (:mod:`skcalib._core.accel.vector`; the quantile path's :func:`top1_scan`:
#: the scalar scan of four rows at a time).
WIDE_CLASSES = 32


@register_jitable
def flush(totals, hist, sums, weighted):
    """Add one block's sums to ``totals`` and zero them. ``hist``: counts of
    (cell, miss) and (cell, hit); ``sums``: (4, cells) weight, weighted
    confidence, weighted hits, squared weight (unweighted: row 1 only)."""
    for b in range(totals.shape[1]):
        count = hist[2 * b] + hist[2 * b + 1]
        if weighted:
            totals[0, b] += sums[0, b]
            totals[1, b] += sums[1, b]
            totals[2, b] += sums[2, b]
            totals[3, b] += sums[3, b]
        else:
            totals[0, b] += count
            totals[1, b] += sums[1, b]
            totals[2, b] += hist[2 * b + 1]
            totals[3, b] += count
        totals[4, b] += count
        hist[2 * b] = 0
        hist[2 * b + 1] = 0
        for r in range(4):
            sums[r, b] = 0.0


@register_jitable
def flush_counts(totals, count, hits, sums, weighted):
    """:func:`flush` for separate ``count`` and ``hits`` per cell."""
    for b in range(totals.shape[1]):
        if weighted:
            totals[0, b] += sums[0, b]
            totals[2, b] += sums[2, b]
            totals[3, b] += sums[3, b]
        else:
            totals[0, b] += count[b]
            totals[2, b] += hits[b]
            totals[3, b] += count[b]
        totals[1, b] += sums[1, b]
        totals[4, b] += count[b]
        count[b] = 0
        hits[b] = 0
        for r in range(4):
            sums[r, b] = 0.0


@register_jitable(fastmath={"reassoc"})
def row_sum(proba, i):
    """The float64 sum of row ``i`` in any order (vectorised). The row check
    only compares it with the tolerance, whose margin covers any order."""
    s = 0.0
    for j in range(proba.shape[1]):
        s += np.float64(proba[i, j])
    return s


@register_jitable
def row_bits(bits, i):
    """``(first column at the maximum, largest, smallest)`` of row ``i`` of
    the integer view ``bits`` of ``y_proba`` (vectorised). For values
    ``>= +0.0`` the bit patterns order as the numbers; a set sign bit (a
    negative value, -0.0 or a negative NaN) makes the smallest negative,
    and a positive NaN or infinity is larger than the pattern of 1.0: the
    row is then flagged, and the numpy check decides."""
    k = bits.shape[1]
    hi = bits[i, 0]
    lo = hi
    for j in range(1, k):
        b = bits[i, j]
        hi = max(hi, b)
        lo = min(lo, b)
    a = k
    for j in range(k):
        a = min(a, j if bits[i, j] == hi else k)
    return a, hi, lo


@register_jitable
def top1_wide(proba, bits, start, stop, pred, conf, tol):
    """:func:`top1_rows` for many columns: each row's sum, maximum and
    first column at the maximum by vectorised passes over the row (in
    cache), the maximum through the integer view ``bits``."""
    bad = False
    for i in range(start, stop):
        s = row_sum(proba, i)
        a, _, lo = row_bits(bits, i)
        m = proba[i, a]
        bad |= not (lo >= 0 and m <= 1 and abs(s - 1.0) <= tol)
        pred[i - start] = a
        conf[i - start] = m
    return bad


@register_jitable
def top1_four(proba, i, tol):
    """``(ok, (a0, a1, a2, a3), (m0, m1, m2, m3))`` of the rows ``i .. i +
    3``: whether all four pass the check, each one's first column at the
    maximum and the maximum. Four rows at a time: their dependency chains
    (sum, minimum, running maximum) overlap. The sums are in the dtype of
    ``proba`` (the caller's ``tol`` covers float32 rounding)."""
    m0, m1, m2, m3 = proba[i, 0], proba[i + 1, 0], proba[i + 2, 0], proba[i + 3, 0]
    s0, s1, s2, s3 = m0, m1, m2, m3
    lo0, lo1, lo2, lo3 = m0, m1, m2, m3
    a0 = a1 = a2 = a3 = 0
    for j in range(1, proba.shape[1]):
        v0, v1 = proba[i, j], proba[i + 1, j]
        v2, v3 = proba[i + 2, j], proba[i + 3, j]
        s0 += v0
        s1 += v1
        s2 += v2
        s3 += v3
        lo0, lo1, lo2, lo3 = min(lo0, v0), min(lo1, v1), min(lo2, v2), min(lo3, v3)
        if v0 > m0:
            m0, a0 = v0, j
        if v1 > m1:
            m1, a1 = v1, j
        if v2 > m2:
            m2, a2 = v2, j
        if v3 > m3:
            m3, a3 = v3, j
    ok = (lo0 >= 0) & (m0 <= 1) & (abs(s0 - 1.0) <= tol)
    ok &= (lo1 >= 0) & (m1 <= 1) & (abs(s1 - 1.0) <= tol)
    ok &= (lo2 >= 0) & (m2 <= 1) & (abs(s2 - 1.0) <= tol)
    ok &= (lo3 >= 0) & (m3 <= 1) & (abs(s3 - 1.0) <= tol)
    return ok, (a0, a1, a2, a3), (m0, m1, m2, m3)


@register_jitable
def top1_one(proba, i, tol):
    """``(ok, a, m)`` of row ``i`` (:func:`top1_four` for one row)."""
    m = proba[i, 0]
    s, lo, a = m, m, 0
    for j in range(1, proba.shape[1]):
        v = proba[i, j]
        s += v
        lo = min(lo, v)
        if v > m:
            m, a = v, j
    return (lo >= 0) & (m <= 1) & (abs(s - 1.0) <= tol), a, m


@register_jitable
def top1_last(proba, i, stop, tol):
    """:func:`top1_four` for the last ``stop - i < 4`` rows, the last one
    repeated in the places after ``stop``."""
    ok0, a0, m0 = top1_one(proba, i, tol)
    ok1, a1, m1 = top1_one(proba, min(i + 1, stop - 1), tol)
    ok2, a2, m2 = top1_one(proba, min(i + 2, stop - 1), tol)
    return ok0 & ok1 & ok2, (a0, a1, a2, a2), (m0, m1, m2, m2)


@register_jitable
def top1_rows(proba, start, stop, pred, conf, tol):
    """``pred[r]``, ``conf[r]`` of the rows ``start + r`` up to ``stop``;
    whether one failed the check (:func:`top1_four`)."""
    bad = False
    for i in range(start, stop, 4):
        if stop - i >= 4:
            ok, a, m = top1_four(proba, i, tol)
        else:
            ok, a, m = top1_last(proba, i, stop, tol)
        bad |= not ok
        for r in range(min(4, stop - i)):
            pred[i - start + r], conf[i - start + r] = a[r], m[r]
    return bad


def top1_cells(
    proba,
    bits,
    y,
    weight,
    interior,
    code,
    n_cells,
    n_bins,
    per_class,
    block,
    tol,
    totals,
):
    """Confidence (``per_class`` False) or top-label (cell ``pred * n_bins +
    bin``) sums of 2-D ``proba`` of at least :data:`WIDE_CLASSES` columns
    (fewer: :func:`skcalib._core.accel.vector.top1_vector`); returns whether
    a row failed the check. Each block's top-1 is found first
    (:func:`top1_wide`, into buffers in cache), then binned and added."""
    n = proba.shape[0]
    weighted = weight.size > 0
    hist = np.zeros(2 * totals.shape[1], dtype=np.int32)  # <= block rows
    sums = np.zeros((4, totals.shape[1]))
    pred = np.empty(block, dtype=np.intp)
    conf = np.empty(block, dtype=proba.dtype)
    top = float(n_cells)
    bad = False
    for start in range(0, n, block):
        stop = min(start + block, n)
        bad |= top1_wide(proba, bits, start, stop, pred, conf, tol)
        for r in range(stop - start):
            m = conf[r]
            x = m * n_cells
            x = x if x < top else top  # NaN too
            c = np.int32(x if x > 0 else 0.0)
            b = np.intp(code[c])
            if b < 0:  # a cell an edge cuts
                b = np.searchsorted(interior, m)
            if per_class:
                b += pred[r] * n_bins
            hit = pred[r] == y[start + r]
            hist[2 * b + hit] += 1
            if weighted:
                wi = weight[start + r]
                sums[0, b] += wi
                sums[1, b] += wi * m
                sums[2, b] += wi * hit
                sums[3, b] += wi * wi
            else:
                sums[1, b] += m
        flush(totals, hist, sums, weighted)
    return bad


@register_jitable
def low_entries(proba, i, e1, low, w, weighted):
    """Add the entries of row ``i`` in the first bin (``<= e1``) of their
    class to ``low`` (rows: count, weight, weighted value, squared weight;
    one column per class). A vectorised pass: each class is one lane, and
    an entry of another bin adds an exact 0, so every sum stays the
    sequential row-order sum of its cell."""
    if weighted:
        for j in range(proba.shape[1]):
            v = proba[i, j]
            first = v <= e1
            low[0, j] += first
            low[1, j] += w if first else 0.0
            low[2, j] += w * v if first else 0.0
            low[3, j] += w * w if first else 0.0
    else:
        for j in range(proba.shape[1]):
            v = proba[i, j]
            first = v <= e1
            low[0, j] += first
            low[2, j] += v if first else 0.0


@register_jitable
def high_entries(proba, i, e1, idx):
    """The columns of row ``i`` above the first bin, into ``idx``; their
    number. Where the target has a native vector compress
    (:data:`VECTOR_COMPRESS`), whole chunks of 16 columns by
    :func:`~skcalib._core.accel.simd.high_columns`; the other columns
    branch-free: each column is written, the count moves on for those above
    ``e1`` (the loop is written here, not in a helper, which numba would
    not inline)."""
    k = proba.shape[1]
    m = 0
    start = 0
    if VECTOR_COMPRESS:
        m = high_columns(proba, i, e1, idx)
        start = k - k % 16
    for j in range(start, k):
        idx[m] = j
        m += proba[i, j] > e1
    return m


@register_jitable
def add_entry(b, v, w, weighted, count, sums):
    """Add one entry of value ``v`` (weight ``w``) to cell ``b``."""
    count[b] += 1
    if weighted:
        sums[0, b] += w
        sums[1, b] += w * v
        sums[3, b] += w * w
    else:
        sums[1, b] += v


@register_jitable
def class_narrow(proba, y, weight, interior, code, n_cells, n_bins, block, tol, totals):
    """:func:`class_cells` for few columns: each entry checked and binned in
    one scalar loop over the row."""
    n, k = proba.shape
    weighted = weight.size > 0
    hist = np.zeros(2 * totals.shape[1], dtype=np.int32)  # <= block rows
    sums = np.zeros((4, totals.shape[1]))
    top = float(n_cells)
    bad = False
    for start in range(0, n, block):
        for i in range(start, min(start + block, n)):
            lo = proba[i, 0]
            hi = lo
            s = 0.0
            yi = y[i]
            wi = weight[i] if weighted else 1.0
            for j in range(k):
                v = proba[i, j]
                s += v
                lo = min(lo, v)
                hi = max(hi, v)
                x = v * n_cells
                x = x if x < top else top  # NaN too
                c = np.int32(x if x > 0 else 0.0)
                b = np.intp(code[c])
                if b < 0:
                    b = np.searchsorted(interior, v)
                b += j * n_bins
                hit = j == yi
                hist[2 * b + hit] += 1
                if weighted:
                    sums[0, b] += wi
                    sums[1, b] += wi * v
                    sums[2, b] += wi * hit
                    sums[3, b] += wi * wi
                else:
                    sums[1, b] += v
            bad |= not (lo >= 0 and hi <= 1 and abs(s - 1.0) <= tol)
        flush(totals, hist, sums, weighted)
    return bad


@register_jitable
def table_bin(v, interior, code, n_cells):
    """The bin of ``v`` through the cell table, clamped so that any value
    (a flagged row's, NaN included) reads inside the tables."""
    top = float(n_cells)
    x = v * n_cells
    x = x if x < top else top  # NaN too
    b = np.intp(code[np.int32(x if x > 0 else 0.0)])
    if b < 0:  # a cell an edge cuts
        b = np.searchsorted(interior, v)
    return b


def class_cells(
    proba, bits, one, y, weight, interior, code, n_cells, n_bins, block, tol, totals
):
    """Classwise sums of 2-D ``proba`` (cell ``column * n_bins + bin``, target
    ``y == column``); returns whether a row failed the check. ``one``: the
    bit pattern of 1.0 in ``bits``' integer type.

    Per row: the check by vectorised passes (:func:`row_sum`,
    :func:`row_bits`); the entries of the first bins (most of them) by one
    vectorised pass (:func:`low_entries`); the others, gathered without a
    branch (:func:`high_entries`), one by one through the cell table. The
    target is 1 in one column only: its count (and weight) is added once
    per row. A flagged row takes every entry through the clamped table."""
    n, k = proba.shape
    if k < WIDE_CLASSES:
        return class_narrow(
            proba, y, weight, interior, code, n_cells, n_bins, block, tol, totals
        )
    weighted = weight.size > 0
    count = np.zeros(totals.shape[1], dtype=np.int32)  # <= block rows
    hits = np.zeros(totals.shape[1], dtype=np.int32)
    sums = np.zeros((4, totals.shape[1]))
    low = np.zeros((4, k))
    idx = np.empty(k, dtype=np.intp)
    e1 = interior[0] if interior.size else proba.dtype.type(np.inf)
    fc = proba.dtype.type(n_cells)
    bad = False
    for start in range(0, n, block):
        for i in range(start, min(start + block, n)):
            s = row_sum(proba, i)
            _, hi, lo = row_bits(bits, i)
            ok = lo >= 0 and hi <= one and abs(s - 1.0) <= tol
            wi = weight[i] if weighted else 1.0
            if ok:  # every value in [0, 1]: no clamping
                low_entries(proba, i, e1, low, wi, weighted)
                for t in range(high_entries(proba, i, e1, idx)):
                    j = idx[t]
                    v = proba[i, j]
                    b = np.intp(code[np.int32(v * fc)])
                    if b < 0:
                        b = np.searchsorted(interior, v)
                    add_entry(b + j * n_bins, v, wi, weighted, count, sums)
            else:
                bad = True
                for j in range(k):
                    v = proba[i, j]
                    b = table_bin(v, interior, code, n_cells)
                    if b == 0:
                        low[0, j] += 1
                        low[1, j] += wi
                        low[2, j] += wi * v
                        low[3, j] += wi * wi
                    else:
                        add_entry(b + j * n_bins, v, wi, weighted, count, sums)
            j = y[i]
            b = table_bin(proba[i, j], interior, code, n_cells) + j * n_bins
            hits[b] += 1
            if weighted:
                sums[2, b] += wi
        for j in range(k):  # the first bins join the other cells
            b = j * n_bins
            count[b] = np.int32(low[0, j])
            sums[0, b], sums[1, b], sums[3, b] = low[1, j], low[2, j], low[3, j]
            for r in range(4):
                low[r, j] = 0.0
        flush_counts(totals, count, hits, sums, weighted)
    return bad


def top1_scan(proba, bits, pred, conf, tol):
    """``pred`` and ``conf`` (the first column at the row maximum, and the
    maximum) of 2-D ``proba``; returns whether a row failed the check."""
    if proba.shape[1] >= WIDE_CLASSES:
        return top1_wide(proba, bits, 0, proba.shape[0], pred, conf, tol)
    return top1_rows(proba, 0, proba.shape[0], pred, conf, tol)


def binary_cells(proba, one, y, weight, interior, code, n_cells, n_bins, kind, totals):
    """Sums of 1-D binary ``proba`` (the probability of class 1) in one block:
    ``kind`` 0 confidence, 1 top-label, 2 classwise (group 0 the scores
    ``one - p`` against ``y == 0``, group 1 ``p`` against ``y == 1``);
    ``one`` is 1 in the dtype of ``proba``. Returns whether a value is
    outside ``[0, 1]`` or NaN."""
    weighted = weight.size > 0
    hist = np.zeros(2 * totals.shape[1], dtype=np.int64)
    sums = np.zeros((4, totals.shape[1]))
    top = float(n_cells)
    bad = False
    for i in range(proba.size):
        p = proba[i]
        bad |= not (p >= 0 and p <= 1)
        neg = one - p
        for e in range(2 if kind == 2 else 1):
            if kind == 2:
                v = neg if e == 0 else p
                group = e
                hit = y[i] == e
            else:
                v = max(p, neg)
                group = np.intp(p > neg)
                hit = group == y[i]
            x = v * n_cells
            x = x if x < top else top  # NaN too
            c = np.int32(x if x > 0 else 0.0)
            b = np.intp(code[c])
            if b < 0:
                b = np.searchsorted(interior, v)
            if kind != 0:
                b += group * n_bins
            hist[2 * b + hit] += 1
            if weighted:
                wi = weight[i]
                sums[0, b] += wi
                sums[1, b] += wi * v
                sums[2, b] += wi * hit
                sums[3, b] += wi * wi
            else:
                sums[1, b] += v
    flush(totals, hist, sums, weighted)
    return bad
