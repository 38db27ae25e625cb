"""The top-1 scan of narrow rows in vector lanes, written in LLVM IR (numba
intrinsics of the ``fast`` extra; imported only with numba).

Below :data:`~skcalib._core.accel.kernels.WIDE_CLASSES` columns a row is
too short for the compiler to vectorise its scan, and a scalar scan costs
several times one read of the array. The intrinsics here take 16 rows at a
time, one row per vector lane (a *group*):

1. *Columns.* Each row is loaded as a vector of ``L`` entries (16 float32 or
   8 float64: one 64-byte register) from its first column, and the ``L x L``
   block is transposed by the butterfly of Eklundh (1972): ``log2(L)``
   stages, each exchanging the off-diagonal sub-blocks of pairs of vectors
   (``shufflevector`` with constant masks, which the backend lowers to the
   target's permutes). A row of more than ``L`` columns takes further
   blocks; the last one starts at column ``K - L`` so that no load passes
   the row's end (columns loaded twice are taken once). The number of
   columns ``K`` is a compile-time constant (the length of a tuple
   argument: one compilation per ``K``), so the columns stay in registers
   and the transposes keep only the permutes that feed a used column.
2. *Scan.* Per lane, in column order: the row sum (in the dtype of
   ``proba``), the running maximum and the first column at it (``>``, as
   :func:`numpy.argmax` for rows without NaN), and the OR of the entries'
   bits. The check of the scalar kernels follows: no entry with the sign
   bit set, maximum ``<= 1``, ``|sum - 1| <= tol``, computed in the dtype
   of ``proba`` with ``tol`` exact in it (:func:`skcalib._core.accel._vector_args`
   rounds it down; the float32 difference ``sum - 1`` is exact for sums in
   ``[0.5, 2]``, and outside that the row fails either way).
3. *Bins.* The bin of a maximum ``m`` among ``n_bins`` near-uniform bins is
   ``floor(m * n_bins)`` (the product in the dtype of ``proba``), clamped to
   ``n_bins - 1``, plus ``pred * n_bins`` for top-label cells. It equals the
   bin of the edges (``searchsorted(interior, m)``, right-closed bins)
   whenever the product is farther than ``tau`` from every interior integer
   ``1 .. n_bins - 1`` (:func:`uniform_tau`); a row nearer an edge makes the
   group *ambiguous*.
4. *Cells.* The top-1 column is compared with the label ``y``; the
   histogram slot of a row is ``2 * cell + hit``.

The status of a group is 0, or 1 when a row failed the check (or has an
entry with the sign bit set: ``-0.0`` passes the scalar check), or 2 when
a row was ambiguous; for a status other than 0 the caller runs the scalar
per-row code on the group (its results are the reference), so the totals
stay bit for bit those of the numpy path. :func:`top1_group` writes each
row's maximum, cell and slot to buffers (the weighted sums are added by
the caller); :func:`top1_group_add` adds an unweighted group to the counts
and the confidence sums itself, row by row in row order.

The IR is target independent (numba compiles it for the host CPU). On
AVX-512 a group of float32 rows of 10 columns takes 48 permutes for the
transpose, and the kernel runs at about twice the time of one plain read of
the array (``python -m benchmarks ece-speed``). Each group also prefetches
the rows :data:`PREFETCH` bytes ahead.

The caller guarantees that every load is inside ``proba`` and ``y``: rows
``start .. start + 15`` exist and, when ``K < L``, the last row's ``L``
entries end inside the array; and that ``K`` is below 32.

References
----------
J. O. Eklundh, "A fast computer method for matrix transposing", IEEE
Transactions on Computers C-21 (7), 801-803, 1972.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = []  # private module

#: Rows per group (vector lanes of the scan).
GROUP = 16
#: Bytes ahead of a group's rows that it prefetches (of 1, 2, 3, 4 and
#: 8 KiB, 2 and 3 KiB were fastest on 1e7 x 10 rows, float32 and float64).
PREFETCH = 2048
I32 = ir.IntType(32)


def uniform_tau(interior, n_bins, dtype):
    """The ambiguity margin of step 3 for these edges, or None when the
    edges are too far from uniform for the rule.

    ``tau`` bounds ``|e_j * n_bins - j|`` over the interior edges ``e_j``
    (``j = 1 .. n_bins - 1``, computed in float64), plus the rounding of
    the product ``m * n_bins`` in ``dtype`` (at most ``n_bins`` half-units
    in the last place of 1), plus that again three times over as a margin
    for the float64 rounding of the bound. If the computed product ``x`` is
    farther than ``tau`` from ``j``, the exact product of ``m`` is on the
    same side of ``e_j * n_bins`` as ``x`` is of ``j``, so ``m`` is on
    that side of ``e_j``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.accel.simd import uniform_tau
    >>> edges = np.linspace(0, 1, 16)[1:-1]
    >>> bool(uniform_tau(edges, 15, np.float64) < 1e-13)
    True
    >>> uniform_tau(np.array([0.1, 0.9]), 3, np.float64) is None
    True
    """
    if n_bins < 1 or interior.size != n_bins - 1:
        return None
    j = np.arange(1, n_bins, dtype=np.float64)
    spread = np.abs(interior.astype(np.float64) * n_bins - j).max(initial=0.0)
    tau = spread + 4 * n_bins * float(np.finfo(dtype).epsneg)
    return tau if tau < 0.25 else None


def _vector(ty, n=GROUP):
    return ir.VectorType(ty, n)


def _const(ty, value, n=GROUP):
    return ir.Constant(_vector(ty, n), [value] * n)


def _splat(builder, value):
    vt = _vector(value.type)
    v = builder.insert_element(
        ir.Constant(vt, ir.Undefined), value, ir.Constant(I32, 0)
    )
    zeros = ir.Constant(_vector(I32), [0] * GROUP)
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined), zeros)


def _ptr(builder, base, index, vt):
    return builder.bitcast(builder.gep(base, [index]), vt.as_pointer())


def _transpose(builder, rows):
    """The transpose of ``n`` (a power of two) vectors of ``n`` lanes:
    stages of block size ``b = n / 2 .. 1``, each swapping the off-diagonal
    ``b x b`` blocks of the pairs of vectors ``(i, i + b)``."""
    v = list(rows)
    n = len(v)
    b = n // 2
    while b >= 1:
        low = [lane if lane & b == 0 else n + lane - b for lane in range(n)]
        high = [lane + b if lane & b == 0 else n + lane for lane in range(n)]
        low, high = (ir.Constant(_vector(I32, n), m) for m in (low, high))
        new = list(v)
        for i in range(n):
            if i & b == 0:
                new[i] = builder.shuffle_vector(v[i], v[i + b], low)
                new[i + b] = builder.shuffle_vector(v[i], v[i + b], high)
        v = new
        b //= 2
    return v


def _prefetch(builder, data, offset, nbytes):
    """Prefetch ``nbytes`` from :data:`PREFETCH` bytes after element
    ``offset`` of ``data``, one cache line at a time (a hint: never a
    fault, also past the array's end)."""
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p, I32, I32, I32])
    fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty=fnty)
    base = builder.bitcast(builder.gep(data, [offset]), i8p)
    flags = [ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)]
    for line in range(0, nbytes, 64):
        at = ir.Constant(offset.type, PREFETCH + line)
        builder.call(fn, [builder.gep(base, [at]), *flags])


def _columns(builder, data, start, k, lanes, intp):
    """Step 1: the ``k`` columns (vectors of 16 lanes) of rows ``start ..
    start + 15``."""
    vt = _vector(data.type.pointee, lanes)
    cols = [None] * k
    for c0 in range(0, k, lanes):
        first = c0 if k < lanes or c0 + lanes <= k else k - lanes
        halves = []
        for half in range(GROUP // lanes):
            rows = []
            for r in range(lanes):
                row = builder.add(start, ir.Constant(intp, half * lanes + r))
                at = builder.add(
                    builder.mul(row, ir.Constant(intp, k)), ir.Constant(intp, first)
                )
                rows.append(builder.load(_ptr(builder, data, at, vt), align=1))
            halves.append(_transpose(builder, rows))
        for c in range(lanes):
            j = first + c
            if c0 <= j < k:
                if len(halves) == 1:
                    cols[j] = halves[0][c]
                else:  # two 8-lane halves as one 16-lane vector
                    whole = ir.Constant(_vector(I32), list(range(GROUP)))
                    cols[j] = builder.shuffle_vector(halves[0][c], halves[1][c], whole)
    return cols


def _scan(builder, cols):
    """Step 2: ``(sum, sign, maximum, first column at it)`` of 16 lanes;
    ``sign`` is set in a lane whose row has an entry with the sign bit set
    (a negative value, -0.0 or a negative NaN)."""
    width = 32 if cols[0].type.element == ir.FloatType() else 64
    it = _vector(ir.IntType(width))
    s = m = cols[0]
    bits = builder.bitcast(cols[0], it)
    pred = ir.Constant(_vector(I32), None)
    for j, v in enumerate(cols[1:], start=1):
        s = builder.fadd(s, v)
        bits = builder.or_(bits, builder.bitcast(v, it))
        gt = builder.fcmp_ordered(">", v, m)
        m = builder.select(gt, v, m)
        pred = builder.select(gt, _const(I32, j), pred)
    sign = builder.icmp_signed("<", bits, ir.Constant(it, None))
    return s, sign, m, pred


def _all(builder, mask):
    bits = builder.bitcast(mask, ir.IntType(GROUP))
    return builder.icmp_unsigned("==", bits, ir.Constant(bits.type, (1 << GROUP) - 1))


def _any(builder, mask):
    bits = builder.bitcast(mask, ir.IntType(GROUP))
    return builder.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))


def _group(context, builder, argtys, args):
    """Steps 1-4 on ``(proba, y, start, tol, n_bins, tau, per_class, k)``:
    ``(status, maxima, cells, slots)``."""
    proba_t, y_t, start_t, tol_t, nb_t, tau_t, per_class_t, k_t = argtys
    ary = context.make_array(proba_t)(context, builder, value=args[0])
    labels = context.make_array(y_t)(context, builder, value=args[1])
    intp = context.get_value_type(types.intp)
    elt = ary.data.type.pointee
    ft, it = _vector(elt), _vector(I32)
    lanes = 16 if proba_t.dtype == types.float32 else 8
    k = k_t.count
    dtype = proba_t.dtype
    start = context.cast(builder, args[2], start_t, types.intp)
    tol = _splat(builder, context.cast(builder, args[3], tol_t, dtype))
    nb = context.cast(builder, args[4], nb_t, types.int32)
    tau = _splat(builder, context.cast(builder, args[5], tau_t, dtype))
    per_class = context.cast(builder, args[6], per_class_t, types.boolean)

    offset = builder.mul(start, ir.Constant(intp, k))
    _prefetch(builder, ary.data, offset, GROUP * k * (64 // lanes))
    s, sign, m, pred = _scan(
        builder, _columns(builder, ary.data, start, k, lanes, intp)
    )

    one, zero = _const(elt, 1.0), _const(elt, 0.0)
    ok = builder.and_(builder.not_(sign), builder.fcmp_ordered("<=", m, one))
    ok = builder.and_(ok, builder.fcmp_ordered("<=", builder.fsub(s, one), tol))
    ok = builder.and_(ok, builder.fcmp_ordered("<=", builder.fsub(one, s), tol))

    # step 3. x = m * n_bins is in [0, n_bins] for rows that pass the check;
    # any other value (NaN included) becomes 0, so that the conversion is
    # defined. The gaps x - floor(x) and floor(x) + 1 - x are exact.
    nb_f = _splat(builder, builder.sitofp(nb, elt))
    x = builder.fmul(m, nb_f)
    inside = builder.and_(
        builder.fcmp_ordered(">=", x, zero), builder.fcmp_ordered("<=", x, nb_f)
    )
    x = builder.select(inside, x, zero)
    b = builder.fptosi(x, it)  # floor, as x >= 0
    low = builder.sitofp(b, ft)
    high = builder.fadd(low, one)
    top = builder.fsub(nb_f, one)  # the last interior integer

    def near(edge, gap):
        interior = builder.and_(
            builder.fcmp_ordered(">=", edge, one), builder.fcmp_ordered("<=", edge, top)
        )
        return builder.and_(interior, builder.fcmp_ordered("<", gap, tau))

    ambiguous = builder.or_(
        near(low, builder.fsub(x, low)), near(high, builder.fsub(high, x))
    )
    nb_v = _splat(builder, nb)
    last = builder.sub(nb_v, _const(I32, 1))
    b = builder.select(builder.icmp_signed(">", b, last), last, b)
    b = builder.select(per_class, builder.add(b, builder.mul(pred, nb_v)), b)

    # step 4
    yt = labels.data.type.pointee
    y = builder.load(_ptr(builder, labels.data, start, _vector(yt)), align=1)
    wide = builder.sext(pred, _vector(yt)) if yt.width > 32 else pred
    hit = builder.zext(builder.icmp_signed("==", wide, y), it)
    slot = builder.add(builder.add(b, b), hit)

    status = builder.select(
        _any(builder, ambiguous), ir.Constant(I32, 2), ir.Constant(I32, 0)
    )
    status = builder.select(_all(builder, ok), status, ir.Constant(I32, 1))
    return status, m, b, slot


def _literal_k(k):
    return isinstance(k, types.UniTuple) and 0 < k.count < 32


@intrinsic
def top1_group(
    typingctx, proba, y, start, conf, cell, slot, tol, n_bins, tau, per_class, k
):
    """Steps 1-4 for rows ``start .. start + 15`` of 2-D C-contiguous float
    ``proba`` with ``len(k)`` columns: ``conf[r]`` the maximum of row
    ``start + r``, ``cell[r]`` its cell and ``slot[r]`` its histogram slot
    (int32 buffers of 16); returns the status (int32). ``tol`` and ``tau``
    are exact in the dtype of ``proba``; ``y`` is an integer array."""
    if not _literal_k(k):
        return None
    sig = types.int32(proba, y, start, conf, cell, slot, tol, n_bins, tau, per_class, k)

    def codegen(context, builder, signature, args):
        t = signature.args
        status, *values = _group(context, builder, t[:3] + t[6:], args[:3] + args[6:])
        origin = ir.Constant(context.get_value_type(types.intp), 0)
        for i, v in zip((3, 4, 5), values, strict=True):
            data = context.make_array(t[i])(context, builder, value=args[i]).data
            builder.store(v, _ptr(builder, data, origin, v.type), align=1)
        return status

    return sig, codegen


def _add_rows(builder, hist, sums, m, b, slot):
    """Add the 16 rows to ``hist`` (per slot) and ``sums`` (float64 per
    cell), in row order (the extracted lanes do not pass through memory)."""
    for r in range(GROUP):
        lane = ir.Constant(I32, r)
        p = builder.gep(hist, [builder.extract_element(slot, lane)])
        builder.store(builder.add(builder.load(p), ir.Constant(p.type.pointee, 1)), p)
        q = builder.gep(sums, [builder.extract_element(b, lane)])
        v = builder.extract_element(m, lane)
        if v.type != ir.DoubleType():
            v = builder.fpext(v, ir.DoubleType())
        builder.store(builder.fadd(builder.load(q), v), q)


@intrinsic
def top1_group_add(
    typingctx, proba, y, start, hist, sums, tol, n_bins, tau, per_class, k
):
    """:func:`top1_group` for unweighted sums: when the status is 0, adds the
    16 rows to ``hist`` (int32 count per slot) and ``sums`` (float64
    confidence sum per cell) itself; else leaves both as they were."""
    if not _literal_k(k):
        return None
    sig = types.int32(proba, y, start, hist, sums, tol, n_bins, tau, per_class, k)

    def codegen(context, builder, signature, args):
        t = signature.args
        status, m, b, slot = _group(
            context, builder, t[:3] + t[5:], args[:3] + args[5:]
        )
        hist = context.make_array(t[3])(context, builder, value=args[3]).data
        sums = context.make_array(t[4])(context, builder, value=args[4]).data
        clean = builder.icmp_signed("==", status, ir.Constant(I32, 0))
        with builder.if_then(clean, likely=True):
            _add_rows(builder, hist, sums, m, b, slot)
        return status

    return sig, codegen


def native_compress():
    """Whether numba compiles for a target with AVX-512 (``vpcompressd``):
    the features it is told (``NUMBA_CPU_FEATURES``) or the host's."""
    from llvmlite import binding
    from numba.core import config

    features = config.CPU_FEATURES
    if features is None:
        features = binding.get_host_cpu_features().flatten()
    return "+avx512f" in features.split(",")


@intrinsic
def high_columns(typingctx, proba, i, e1, idx):
    """The columns of row ``i`` of 2-D C-contiguous float ``proba`` whose
    entry is above ``e1`` (in the dtype of ``proba``), in column order, into
    the ``intp`` array ``idx``; returns their number (int64). Columns in
    chunks of 16: a vector comparison, then the chosen column numbers
    written one after the other by ``llvm.masked.compressstore``
    (``vpcompressq`` on AVX-512) and counted by ``llvm.ctpop``: no branch
    per column. The last ``K % 16`` columns are compared one at a time."""
    sig = types.int64(proba, i, e1, idx)

    def codegen(context, builder, signature, args):
        proba_t, i_t, e1_t, idx_t = signature.args
        ary = context.make_array(proba_t)(context, builder, value=args[0])
        out = context.make_array(idx_t)(context, builder, value=args[3]).data
        intp = context.get_value_type(types.intp)
        i64 = ir.IntType(64)
        elt = ary.data.type.pointee
        k = builder.extract_value(ary.shape, 1)
        row = builder.mul(context.cast(builder, args[1], i_t, types.intp), k)
        e1 = _splat(builder, context.cast(builder, args[2], e1_t, proba_t.dtype))
        it = _vector(intp)  # the items of idx
        mask_t = _vector(ir.IntType(1))
        store_t = ir.FunctionType(ir.VoidType(), [it, intp.as_pointer(), mask_t])
        name = f"llvm.masked.compressstore.v{GROUP}i{intp.width}"
        store = cgutils.get_or_insert_function(builder.module, store_t, name)
        i16 = ir.IntType(GROUP)
        ctpop = builder.module.declare_intrinsic("llvm.ctpop", [i16])
        lanes = ir.Constant(it, list(range(GROUP)))
        count = cgutils.alloca_once_value(builder, ir.Constant(i64, 0))
        chunks = builder.sdiv(k, ir.Constant(intp, GROUP))
        with cgutils.for_range(builder, chunks) as loop:
            c0 = builder.mul(loop.index, ir.Constant(intp, GROUP))
            at = builder.add(row, c0)
            v = builder.load(_ptr(builder, ary.data, at, _vector(elt)), align=1)
            high = builder.fcmp_ordered(">", v, e1)
            m = builder.load(count)
            columns = builder.add(_splat(builder, c0), lanes)
            builder.call(store, [columns, builder.gep(out, [m]), high])
            n_high = builder.call(ctpop, [builder.bitcast(high, i16)])
            builder.store(builder.add(m, builder.zext(n_high, i64)), count)
        return builder.load(count)

    return sig, codegen
