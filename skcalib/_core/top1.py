"""The top-1 scan: predicted column and confidence of every row of ``y_proba``.

One pass over the probabilities, block by block (each block checked while
it is in cache), with no ``n x K`` copy. Used by every binned metric.
"""

import numpy as np

from skcalib._core import accel as _accel
from skcalib._core.inputs import check_finite_proba, check_proba_values
from skcalib._core.scores import rounding_tolerance

__all__ = []  # private module

#: Rows per block of the top-1 scan: about this many bytes of ``y_proba``.
_BLOCK_BYTES = 1 << 20
#: Up to this many classes the top-1 scan finds the arg-max by a bit mask
#: (exact in float32: sums of distinct powers of two below 2**24).
_BITMASK_MAX_CLASSES = 24


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


def fused_tolerance(proba):
    """The row-sum bound of the compiled kernels (:mod:`skcalib._core.accel`)
    for 2-D ``proba``: the tolerance of the probability check less a margin
    that covers the difference between their sequential float64 row sums and
    numpy's pairwise ones (at most ``K * 2**-53``). A row beyond it is
    decided by the numpy check."""
    return rounding_tolerance(proba.shape[1], proba.dtype) * (1 - 1e-6)


def fused_checked(proba, bad, check_values):
    """Whether the result of a compiled kernel that reported ``bad`` can be
    used: always when no row was flagged; with ``check_values``, after the
    numpy checks of the whole array pass (they raise the usual messages,
    naming the bad row); never without (the numpy path then handles the
    unchecked values as it always does)."""
    if not bad:
        return True
    if not check_values:
        return False
    check_finite_proba(proba)
    check_proba_values(proba)
    return True  # rows near the tolerance, which the exact check accepts


def top1(proba, check_values=True):
    """Predicted column and confidence of every row (see :func:`iter_top1`).

    One compiled pass with the ``fast`` extra (the same arrays)."""
    if proba.ndim == 2:
        fused = _accel.top1_scan(proba, fused_tolerance(proba))
        if fused is not None and fused_checked(proba, fused[2], check_values):
            return fused[0], fused[1]
    n = proba.shape[0]
    pred = np.empty(n, dtype=np.intp)
    conf = np.empty(n, dtype=proba.dtype)
    for start, stop, p, c in iter_top1(proba, check_values):
        pred[start:stop] = p
        conf[start:stop] = c
    return pred, conf
