"""The confidence and top-label kernel below
:data:`~skcalib._core.accel.kernels.WIDE_CLASSES` columns, compiled by
:mod:`skcalib._core.accel` (numba's subset of Python; imported only with
numba): groups of 16 rows checked, scanned and binned in vector lanes by
the intrinsics of :mod:`skcalib._core.accel.simd`, each row then added to
its cell in row order, as the other kernels of
:mod:`skcalib._core.accel.kernels` do (the same ``totals``, bit for bit
those of the numpy path).
"""

import numpy as np
from numba.extending import register_jitable

from skcalib._core.accel.kernels import flush, table_bin, top1_one
from skcalib._core.accel.simd import GROUP, top1_group, top1_group_add

__all__ = []  # private module


@register_jitable
def top1_row(
    proba, i, y, weight, interior, code, n_cells, n_bins, per_class, tol, hist, sums
):
    """Check and scan row ``i``
    (:func:`~skcalib._core.accel.kernels.top1_one`), bin its maximum through
    the cell table and add it to its cell; returns whether it passed the
    check. The reference for the groups of :func:`top1_vector`."""
    ok, a, m = top1_one(proba, i, tol)
    b = table_bin(m, interior, code, n_cells)
    if per_class:
        b += a * n_bins
    hit = a == y[i]
    hist[2 * b + hit] += 1
    if weight.size > 0:
        wi = weight[i]
        sums[0, b] += wi
        sums[1, b] += wi * m
        sums[2, b] += wi * hit
        sums[3, b] += wi * wi
    else:
        sums[1, b] += m
    return ok


def top1_vector(
    proba,
    y,
    weight,
    interior,
    code,
    n_cells,
    n_bins,
    per_class,
    block,
    tol,
    tau,
    tol_row,
    totals,
    width,
):
    """:func:`~skcalib._core.accel.kernels.top1_cells` for fewer than
    :data:`~skcalib._core.accel.kernels.WIDE_CLASSES` columns: groups of 16
    rows checked, scanned and binned in vector lanes
    (:mod:`skcalib._core.accel.simd`; ``width`` a tuple of ``K`` items, for
    the compile-time number of columns; ``tol`` and ``tau`` of
    :func:`skcalib._core.accel._vector_args`, ``tol_row`` the bound of the
    scalar check). A group that fails the check or holds a score near an
    edge, and the rows of a block after its last whole group, take
    :func:`top1_row`. Either way the rows are added to their cells in row
    order, so that the totals are bit for bit those of the numpy path."""
    n, k = proba.shape
    g = GROUP
    weighted = weight.size > 0
    hist = np.zeros(2 * totals.shape[1], dtype=np.int32)  # <= block rows
    sums = np.zeros((4, totals.shape[1]))
    conf = np.empty(g, dtype=proba.dtype)
    cell = np.empty(g, dtype=np.int32)
    slot = np.empty(g, dtype=np.int32)
    # the last group start whose loads stay inside the array: a row is read
    # from its first column on, max(k, lanes) entries
    reach = max(k, 64 // proba.itemsize)
    last = (n * k - reach) // k - (g - 1)
    s1 = sums[1]
    bad = False
    for start in range(0, n, block):
        stop = min(start + block, n)
        i = start
        while i + g <= stop and i <= last:
            if weighted:
                status = top1_group(
                    proba, y, i, conf, cell, slot, tol, n_bins, tau, per_class, width
                )
            else:
                status = top1_group_add(
                    proba, y, i, hist, s1, tol, n_bins, tau, per_class, width
                )
            if status != 0:
                for r in range(g):
                    args = (interior, code, n_cells, n_bins, per_class, tol_row)
                    bad |= not top1_row(proba, i + r, y, weight, *args, hist, sums)
            elif weighted:
                for r in range(g):
                    b = cell[r]
                    hist[slot[r]] += 1
                    wi = weight[i + r]
                    sums[0, b] += wi
                    sums[1, b] += wi * conf[r]
                    sums[2, b] += wi * (slot[r] & 1)
                    sums[3, b] += wi * wi
            i += g
        for r in range(i, stop):
            args = (interior, code, n_cells, n_bins, per_class, tol_row)
            bad |= not top1_row(proba, r, y, weight, *args, hist, sums)
        flush(totals, hist, sums, weighted)
    return bad
