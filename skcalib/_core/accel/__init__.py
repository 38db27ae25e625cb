"""Optional compiled kernels (the ``fast`` extra: numba) for fused passes.

numpy runs one pass over the data per operation. For the cheapest methods
(histogram binning: a cell, a table look-up and a count per score) the time
is the memory traffic of those passes, not arithmetic: a fit then reads the
scores three or four times. With numba installed, the loops below do the
same work in one pass each:

* :func:`value_range`: the minimum and maximum of an array, and whether it
  holds NaN (one pass instead of ``min`` and ``max``);
* :func:`present_in_span`: which integers of a small range an array of
  labels holds, stopping once it has seen them all;
* :func:`cell_counts`: the per-bin count and positive count of 0/1 targets
  through the cell table of :mod:`skcalib._core.binning`;
* :func:`cell_lookup`: the per-bin value (or pair of values) of a table for
  every score;
* :func:`binned_totals`: the per-cell sums of the binned metrics
  (confidence, top-label or classwise, uniform bins) in one pass over
  ``y_proba`` that also checks it and finds each row's top-1 (loops in
  :mod:`skcalib._core.accel.kernels`; below 32 columns, 16 rows at a time
  in vector lanes, :mod:`skcalib._core.accel.vector`, compiled once per
  number of columns);
* :func:`top1_scan`: the checked top-1 scan alone (for quantile bins);
* :func:`compiled`: a loop of another module that numpy cannot vectorise
  (the Venn-ABERS hull sweep), compiled.

Each result equals the numpy path's exactly (integer counts, the same table
rows, the same binary search for the scores of ambiguous cells); the tests
run both, so which path a call takes changes its speed, never its result.

**When the kernels run.** Loading them costs once per process: importing
numba (about 0.4 s) and, per kernel and argument types, reading the
compiled code from numba's disk cache (about 0.1 s; with an empty cache,
compiling it: 1 to 5 s per kernel, the vector kernel of the binned metrics
the longest). That is the time the numpy path takes for about 5e7 to 1e8
entries, so:

* an input of at least :data:`MIN_SIZE` entries (``2**26``, 6.7e7: e.g.
  6.7e6 x 10 probabilities; 1e7 x 10 is above it) takes the kernel,
  loading it first if needed: the numpy path would take about as long as a
  warm load (0.4 s to 0.5 s for a confidence ECE, 6 ms per 1e6 entries
  saved by the kernel), so a first call costs at most about twice the numpy
  path with a warm numba cache and every later call is faster. With an
  empty cache the first such call also pays the compilation (seconds,
  once: numba writes the cache for later processes);
* an input of fewer than :data:`MIN_SIZE` entries takes the numpy path
  and does not import numba, so ``import skcalib`` and a first call on,
  say, 2e5 x 10 cost the same with or without numba. Two exceptions, both
  from :data:`WARM_SIZE` entries (``2**16``) up: a kernel that this process
  has already loaded for the same argument types runs (no load cost: after
  an earlier large call); and once this process has run :data:`MIN_SIZE`
  entries of such inputs on the numpy path in place of a kernel (a loop of
  calls on mid-size inputs: 0.4 s or so of numpy work), the kernels load
  and compile as these calls need them. Loading then costs at most what
  the numpy path has already cost (with a warm numba cache) and the rest
  of the loop runs at the kernels' speed; with an empty cache that call
  pays the compilation, once;
* :func:`compiled` (a Python loop, about a hundred times slower than its
  compiled form) counts the entries it has run in Python in this process
  and compiles once they reach :data:`LOOP_BUDGET` (about 0.5 s of Python
  loop, the cost of a warm load and compile): a Venn-ABERS fit on 2e5 rows
  and 10 classes runs its first sweeps in Python and the others compiled.

The thresholds were measured on the 2-core development machine
(``python -m benchmarks cold-start``); they change a speed, never a
result. Set the environment variable ``SKCALIB_DISABLE_NUMBA=1`` to use
numpy only.
"""

import os
import warnings
from functools import cache, lru_cache
from types import SimpleNamespace

import numpy as np

__all__ = []  # private module

#: Inputs with at least this many entries take the kernels, loading (or
#: compiling) them first if needed; smaller ones take the numpy path.
MIN_SIZE = 1 << 26

#: Inputs with fewer entries always take the numpy path; from here to
#: :data:`MIN_SIZE` a kernel runs only if it is already loaded in this
#: process for the same argument types (no load, no compilation).
WARM_SIZE = 1 << 16

#: Entries that :func:`compiled` lets run as a Python loop in a process
#: before it compiles the loop (about 0.5 s of Python; a sweep of
#: Venn-ABERS costs about 0.5 us per entry in Python).
LOOP_BUDGET = 1 << 20

#: Entries run as Python loops so far in this process (see :func:`compiled`).
_loop_work = [0]

#: A call that the kernels decline (the numpy path runs).
_DECLINED = object()


def _value_range(x):
    lo = x[0]
    hi = x[0]
    nan = False
    for i in range(x.size):
        v = x[i]
        nan |= v != v
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi, nan


def _present_in_span(y, lo, seen):
    left = seen.size
    for i in range(y.size):
        v = y[i] - lo
        if not seen[v]:
            seen[v] = True
            left -= 1
            if left == 0:
                break
    return seen


# The kernels below read ``code[cell]`` for the cell ``floor(s * n_cells)``
# of a score ``s`` in ``[0, 1]`` (callers promise such scores). The cell is
# clamped twice, in float and in int32 (both nearly free): a finite score
# outside ``[0, 1]`` then lands in an edge cell, in the bin
# ``assign_bins`` gives it, and NaN (which validated input never holds)
# still reads inside the table. A helper function for these lines is not
# inlined by numba and costs five times the loop.


def _cell_counts(scores, target, interior, code, n_cells, n_bins):
    hist = np.zeros(2 * n_bins, dtype=np.int64)
    top = float(n_cells)
    for i in range(scores.size):
        s = scores[i]
        c = min(max(np.int32(min(max(s * n_cells, 0.0), top)), 0), n_cells)
        b = np.intp(code[c])
        if b < 0:  # a cell an edge cuts
            b = np.searchsorted(interior, s)
        hist[2 * b + (target[i] != 0)] += 1
    counts = np.empty(n_bins)
    positives = np.empty(n_bins)
    for b in range(n_bins):
        counts[b] = hist[2 * b] + hist[2 * b + 1]
        positives[b] = hist[2 * b + 1]
    return counts, positives


def _cell_lookup1(scores, interior, code, n_cells, table, out):
    top = float(n_cells)
    for i in range(scores.size):
        s = scores[i]
        c = min(max(np.int32(min(max(s * n_cells, 0.0), top)), 0), n_cells)
        b = np.intp(code[c])
        if b < 0:
            b = np.searchsorted(interior, s)
        out[i] = table[b]
    return out


def _cell_lookup2(scores, interior, code, n_cells, table, out):
    # Two columns spelled out: a loop over the columns is several times
    # slower (the compiler cannot rule out that out and table overlap).
    t0 = table[:, 0].copy()
    t1 = table[:, 1].copy()
    top = float(n_cells)
    for i in range(scores.size):
        s = scores[i]
        c = min(max(np.int32(min(max(s * n_cells, 0.0), top)), 0), n_cells)
        b = np.intp(code[c])
        if b < 0:
            b = np.searchsorted(interior, s)
        out[i, 0] = t0[b]
        out[i, 1] = t1[b]
    return out


def _jit(numba, fn):
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError:  # no writable cache location: compile per process
        return numba.njit(nogil=True)(fn)


@lru_cache(maxsize=1)
def _kernels():
    """The compiled kernels, or None without numba (imported on first use:
    ``import skcalib`` stays light)."""
    if os.environ.get("SKCALIB_DISABLE_NUMBA", "").strip() not in ("", "0"):
        return None
    try:
        import numba
    except ImportError:
        return None
    from skcalib._core.accel import kernels as fused
    from skcalib._core.accel import vector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SimpleNamespace(
            numba=numba,
            value_range=_jit(numba, _value_range),
            present_in_span=_jit(numba, _present_in_span),
            cell_counts=_jit(numba, _cell_counts),
            cell_lookup1=_jit(numba, _cell_lookup1),
            cell_lookup2=_jit(numba, _cell_lookup2),
            top1_cells=_jit(numba, fused.top1_cells),
            top1_vector=_jit(numba, vector.top1_vector),
            class_cells=_jit(numba, fused.class_cells),
            top1_scan=_jit(numba, fused.top1_scan),
            binary_cells=_jit(numba, fused.binary_cells),
        )


def kernels_for(size):
    """The kernels for an input of ``size`` elements, or None (numpy path).

    Below :data:`MIN_SIZE` they are given only from :data:`WARM_SIZE`, once
    loaded in this process or once the numpy path has run
    :data:`MIN_SIZE` entries of such inputs here (:func:`_spent`); each call
    then goes through :func:`_run`, which may still decline a kernel.
    """
    if size >= MIN_SIZE:
        return _kernels()
    if size < WARM_SIZE:
        return None
    if not _loaded() and not _spent(size):
        return None  # numba not loaded: not for one mid-size input
    return _kernels()


#: Entries of inputs from WARM_SIZE to MIN_SIZE that the numpy path has run
#: in this process in place of a kernel that was not loaded (or compiled).
_numpy_work = [0]


def _spent(size):
    """Count ``size`` entries run on the numpy path in place of a kernel;
    whether this process has run :data:`MIN_SIZE` such entries (the time a
    warm load of the kernels costs: loading them now costs at most what
    the numpy path has already cost, and saves from here on)."""
    if _numpy_work[0] >= MIN_SIZE:
        return True
    _numpy_work[0] += size
    return False


def _loaded():
    """Whether :func:`_kernels` has run in this process (numba imported)."""
    info = getattr(_kernels, "cache_info", None)  # None: replaced (benchmarks)
    return info is None or info().currsize > 0


def _ready(fn, args):
    """Whether the numba dispatcher ``fn`` has code for the types of
    ``args`` in this process (calling it neither compiles nor reads the
    disk cache)."""
    try:
        return tuple(fn.typeof_pyval(a) for a in args) in fn.overloads
    except Exception:  # a type numba cannot name: let the numpy path run
        return False


def _run(fn, size, *args):
    """``fn(*args)``, or :data:`_DECLINED` for an input below
    :data:`MIN_SIZE` whose call would load or compile ``fn`` before this
    process has run :data:`MIN_SIZE` entries on the numpy path."""
    if size < MIN_SIZE and not _ready(fn, args) and not _spent(size):
        return _DECLINED
    return fn(*args)


@cache
def _compiled(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _jit(_kernels().numba, fn)


def compiled(fn, size):
    """``fn`` compiled by numba for an input of ``size`` elements, or None
    (run ``fn`` as Python: small input, no numba, or switched off). ``fn``
    is a plain function of another module written in numba's subset of
    Python.

    A Python loop is slow enough that compiling it pays for itself within
    one fit on a few hundred thousand entries, but not on one small call:
    ``fn`` runs as Python until this process has run :data:`LOOP_BUDGET`
    entries that way (inputs below :data:`WARM_SIZE` never count, nor
    compile), then compiled, for every later input of at least
    :data:`WARM_SIZE` entries. An input of :data:`MIN_SIZE` entries or more
    compiles at once.
    """
    if size < min(WARM_SIZE, MIN_SIZE):
        return None
    if fn not in _compiled_fns and size < MIN_SIZE and _loop_work[0] < LOOP_BUDGET:
        _loop_work[0] += size
        return None
    if kernels_for(max(size, MIN_SIZE)) is None:  # no numba, or switched off
        return None
    _compiled_fns.add(fn)
    return _compiled(fn)


#: The functions :func:`compiled` has compiled in this process.
_compiled_fns = set()


def value_range(x):
    """``(min, max, has_nan)`` of a non-empty numeric array.

    One pass with the kernels (contiguous arrays), else ``min`` and ``max``
    (NaN propagates through them: ``has_nan`` is then ``isnan(min)``).
    """
    k = kernels_for(x.size)
    if k is not None and (x.flags.c_contiguous or x.flags.f_contiguous):
        found = _run(k.value_range, x.size, x.reshape(-1, order="A"))
        if found is not _DECLINED:
            lo, hi, nan = found
            return x.dtype.type(lo), x.dtype.type(hi), bool(nan)
    lo, hi = x.min(), x.max()
    return lo, hi, bool(lo != lo)


def present_in_span(y, lo, span):
    """Whether each of ``lo .. lo + span - 1`` is in the signed integer
    array ``y`` (all of whose values are in that range), or None when the
    numpy path (a ``bincount``) should run. The scan stops once every value
    is seen: labels covering their range are checked in a few hundred
    steps."""
    k = kernels_for(y.size)
    if k is None or y.dtype.kind != "i" or y.ndim != 1 or not y.flags.c_contiguous:
        return None
    seen = np.zeros(span, dtype=np.bool_)
    found = _run(k.present_in_span, y.size, y, y.dtype.type(lo), seen)
    return None if found is _DECLINED else found


def cell_counts(scores, target, interior, code, n_cells, n_bins):
    """Per-bin ``(counts, positives)`` (float64) of a 0/1 ``target`` (bool
    or integer: non-zero is positive), or None when the numpy path should
    run. ``scores`` are in ``[0, 1]``."""
    k = kernels_for(scores.size)
    if k is None:
        return None
    args = (scores, target, interior, code, n_cells, n_bins)
    found = _run(k.cell_counts, scores.size, *args)
    return None if found is _DECLINED else found


def cell_lookup(scores, interior, code, n_cells, table):
    """``table[bin of each score]`` for a table of shape ``(n_bins,)`` or
    ``(n_bins, 2)``, or None when the numpy path should run. ``scores`` are
    in ``[0, 1]``."""
    k = kernels_for(scores.size)
    if k is None or table.ndim > 2 or (table.ndim == 2 and table.shape[1] != 2):
        return None
    out = np.empty((scores.size,) + table.shape[1:], dtype=table.dtype)
    fn = k.cell_lookup1 if table.ndim == 1 else k.cell_lookup2
    found = _run(fn, scores.size, scores, interior, code, n_cells, table, out)
    return None if found is _DECLINED else found


def _fused_ok(proba, k, ndim=2):
    """Whether the fused kernels take ``proba`` (C-contiguous float, 1-D or
    2-D with at least two columns as ``ndim`` says)."""
    return (
        k is not None
        and proba.ndim == ndim
        and (ndim == 1 or proba.shape[1] >= 2)
        and proba.flags.c_contiguous
        and proba.dtype in (np.float32, np.float64)
    )


_KIND_CODES = {"confidence": 0, "top_label": 1, "classwise": 2}


def _bits(proba):
    """The integer view of float ``proba`` (same bytes) and the bit pattern
    of 1.0 in it: the kernels compare non-negative floats as integers."""
    itype = np.int64 if proba.dtype == np.float64 else np.int32
    one = np.array(1.0, dtype=proba.dtype).view(itype)[()]
    return proba.view(itype), one


def _top1_tolerance(proba, tol):
    """The row-sum bound of the top-1 scans, which sum each row in the dtype
    of ``proba``: in float32, ``tol`` less ``K * 2**-23``, more than the
    rounding of a float32 sum of ``K`` values in ``[0, 1]`` (a row within
    the bound is within ``tol`` for any order and precision of the sum)."""
    if proba.dtype == np.float32:
        return tol - proba.shape[1] * 2.0**-23
    return tol


def _narrow_limit():
    """:data:`skcalib._core.accel.kernels.WIDE_CLASSES` (numba loaded)."""
    from skcalib._core.accel.kernels import WIDE_CLASSES

    return WIDE_CLASSES


def _vector_args(proba, interior, n_bins, tol):
    """``(tol, tau)`` of the vector kernel: the row-sum bound rounded down
    and the edge margin (:func:`skcalib._core.accel.simd.uniform_tau`)
    rounded up to values of the dtype of ``proba``, in which the kernel
    compares; None (the numpy path) for bins far from uniform, or a bound of
    0.5 or more (below it a failing float32 row sum fails in float32 too).
    """
    from skcalib._core.accel.simd import uniform_tau

    tau = uniform_tau(interior, n_bins, proba.dtype)
    if tau is None or not 0 <= tol < 0.5:
        return None
    ftype = proba.dtype.type
    tol_d, tau_d = ftype(tol), ftype(tau)
    if tol_d > tol:
        tol_d = np.nextafter(tol_d, ftype(0))
    if tau_d < tau:
        tau_d = np.nextafter(tau_d, ftype(1))
    return float(tol_d), float(tau_d)


def binned_totals(proba, y, weight, tables, n_bins, kind, block, tol):
    """Per-cell sums ``(5, cells)`` (see :mod:`skcalib._core.accel.kernels`)
    and whether a row failed the check (``|row sum - 1| > tol``, a value
    outside ``[0, 1]`` or NaN), or None when the numpy path should run.

    ``tables``: ``(interior, codes, n_cells)`` of
    :func:`skcalib._core.binning._kernel_tables` for the edges of every
    group; ``kind``: ``"confidence"``, ``"top_label"`` or ``"classwise"``;
    ``block``: the rows per block of the numpy path (the same sums, bit for
    bit; 1-D ``proba`` is one block, and ``tol`` is not used); ``y``: column
    codes; ``weight``: float64 or None.
    """
    k = kernels_for(proba.size)
    if not _fused_ok(proba, k, proba.ndim):
        return None
    n_classes = 2 if proba.ndim == 1 else proba.shape[1]
    groups = 1 if kind == "confidence" else n_classes
    totals = np.zeros((5, groups * n_bins))
    y = np.ascontiguousarray(y, dtype=np.intp)
    w = np.empty(0) if weight is None else np.ascontiguousarray(weight, np.float64)
    if proba.ndim == 1:  # binary, one block (as the numpy path)
        one = proba.dtype.type(1)
        args = (*tables, n_bins, _KIND_CODES[kind], totals)
        bad = _run(k.binary_cells, proba.size, proba, one, y, w, *args)
    elif kind == "classwise":
        bits, one = _bits(proba)
        args = (*tables, n_bins, block, tol, totals)
        bad = _run(k.class_cells, proba.size, proba, bits, one, y, w, *args)
    else:
        per_class = kind == "top_label"
        tol = _top1_tolerance(proba, tol)
        if proba.shape[1] < _narrow_limit():
            vector = _vector_args(proba, tables[0], n_bins, tol)
            if vector is None:
                return None
            args = (*tables, n_bins, per_class, block, *vector, tol, totals)
            lanes = (0,) * proba.shape[1]
            bad = _run(k.top1_vector, proba.size, proba, y, w, *args, lanes)
        else:
            args = (*tables, n_bins, per_class, block, tol, totals)
            bits = _bits(proba)[0]
            bad = _run(k.top1_cells, proba.size, proba, bits, y, w, *args)
    if bad is _DECLINED:
        return None
    return totals, bool(bad)


def top1_scan(proba, tol):
    """``(pred, conf, bad)`` of 2-D ``proba`` in one checked pass (``bad`` as
    for :func:`binned_totals`), or None when the numpy path should run."""
    k = kernels_for(proba.size)
    if not _fused_ok(proba, k):
        return None
    pred = np.empty(proba.shape[0], dtype=np.intp)
    conf = np.empty(proba.shape[0], dtype=proba.dtype)
    tol = _top1_tolerance(proba, tol)
    bad = _run(k.top1_scan, proba.size, proba, _bits(proba)[0], pred, conf, tol)
    if bad is _DECLINED:
        return None
    return pred, conf, bool(bad)
