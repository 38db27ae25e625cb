"""The temperature-scaling solver: a safeguarded Newton method in ``log(1/T)``
on the multinomial NLL, for whole arrays and for chunk passes."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from skcalib._core.scores import log_floored
from skcalib._core.weights import unit_weights

__all__ = []  # private module


# --------------------------------------------------------------- temperature
def _temperature_terms(
    z,
    z_max,
    dy,
    beta,
    w,
    chunk_rows,
    n_jobs=1,
    coarse=False,
    inv_scale=1.0,
    probabilities=False,
):
    """NLL, gradient and second derivative in ``beta = 1 / T``.

    ``d = z - z_max`` are the logits shifted so that each row's maximum is 0
    (formed block by block, never whole), and ``dy`` the entry of the true
    class in ``d``. Per row, with ``q = softmax(beta d)``:
    ``nll = logsumexp(beta d) - beta dy``, ``d nll / d beta = E_q[d] - dy``,
    ``d2 nll / d beta2 = Var_q[d] >= 0`` (convex in ``beta``). Computed in
    float64 by blocks of rows (float32 input is never copied whole), on
    ``n_jobs`` threads; the block sums are added in a fixed order, so the
    result does not depend on ``n_jobs``. ``coarse=True`` computes the
    per-row terms in float32 (``exp`` is the cost, and about twice as fast
    in float32): approximate derivatives that only steer a first step.
    ``inv_scale`` (a power of two, so exact) multiplies ``d`` as it is
    formed; ``dy`` is passed already multiplied. Squares of gaps of 1e200
    then do not overflow, nor those of 1e-200 underflow.
    ``probabilities=True``: ``z`` holds probabilities, whose logits
    (:func:`~skcalib._core.scores.log_floored`) are taken block by block.
    """
    dtype = np.float32 if coarse else np.float64

    def block(start):
        stop = start + chunk_rows
        zb = log_floored(z[start:stop]) if probabilities else z[start:stop]
        w_b = None if w is None else w[start:stop]
        return _block_terms(
            zb, z_max[start:stop], dy[start:stop], w_b, beta, dtype, inv_scale,
            owned=probabilities,
        )  # fmt: skip

    return np.sum(_map_blocks(block, z.shape[0], chunk_rows, n_jobs), axis=0)


def _map_blocks(block, n, chunk_rows, n_jobs):
    """``[block(start)]`` for the blocks of rows, on ``n_jobs`` threads."""
    starts = range(0, n, chunk_rows)
    if n_jobs > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            return list(pool.map(block, starts))
    return [block(start) for start in starts]


def _block_terms(zb, z_max, dy, w, beta, dtype, inv_scale, owned):
    """The three sums of :func:`_temperature_terms` over one block of logits
    ``zb`` (``owned``: a temporary that may be overwritten)."""
    dc = _shifted(zb, z_max, dtype, owned)
    if inv_scale != 1.0:
        dc *= dtype(inv_scale)
    e = np.multiply(dc, dtype(beta))
    np.exp(e, out=e)
    s0 = np.einsum("ij->i", e).astype(np.float64, copy=False)
    m1 = np.einsum("ij,ij->i", e, dc) / s0
    e *= dc
    m2 = np.einsum("ij,ij->i", e, dc) / s0
    terms = (np.log(s0) - beta * dy, m1 - dy, np.maximum(m2 - m1 * m1, 0.0))
    if w is None:  # each sum as that of its row of the stacked terms
        return np.array([t.sum() for t in terms])
    return np.vstack(terms) @ w


def _shifted(zb, z_max, dtype, owned):
    """``zb - z_max[:, None]`` in ``dtype``: the values of
    ``np.subtract(zb, z_max[:, None], dtype=dtype, casting="unsafe")`` (both
    cast to ``dtype`` first), without its slow mixed-type loop. ``owned``:
    ``zb`` is a temporary that may be overwritten."""
    shift = z_max.astype(dtype, copy=False)[:, None]
    if zb.dtype != dtype:
        zb, owned = zb.astype(dtype), True
    if owned:
        zb -= shift
        return zb
    return zb - shift


def _newton_temperature(
    terms, u, total_weight, max_iter, tol, bounds, coarse_first=False
):
    """Safeguarded Newton on the root of the NLL derivative in ``u = log beta``.

    ``terms(beta, coarse)`` returns the NLL and its first and second
    derivatives in ``beta`` summed over the data (one pass; see
    :func:`_temperature_terms`). ``coarse_first``: the first pass uses
    float32 derivatives; its Newton step is taken only if it stays in the
    bracket, it never moves the bracket and never ends the iteration.
    """
    u_lo, u_hi = -np.log(bounds[1]), -np.log(bounds[0])
    lo, hi = u_lo, u_hi  # bracket of the root in u
    status = "max_iter"
    n_iter = 0
    last_newton = None  # size of the previous step if it was a Newton step
    coarse = coarse_first
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        beta = np.exp(u)
        _, g, h = terms(beta, coarse)
        if coarse:
            coarse = False
            u_new = u - g / (h * beta) if h > 0 else np.nan
            if lo <= u_new <= hi:
                last_newton, u = abs(u_new - u), u_new
            continue
        if abs(g * beta) <= 1e-15 * total_weight:
            status = "converged"  # derivative in u vanishes to machine precision
            break
        if g < 0:
            lo = u
            if u >= u_hi:
                status = "lower_bound"  # T wants to go below its lower bound
                break
        else:
            hi = u
            if u <= u_lo:
                status = "upper_bound"
                break
        slope = h * beta
        u_new = u - g / slope if slope > 0 else np.inf
        newton = lo <= u_new <= hi
        if not newton:
            # Newton left the bracket: try the bound itself first, else bisect.
            if hi == u_hi and u_new > hi:
                u_new = u_hi
            elif lo == u_lo and u_new < lo:
                u_new = u_lo
            else:
                u_new = 0.5 * (lo + hi)
        step, u = abs(u_new - u), u_new
        if step <= tol:
            status = "converged"
            break
        if newton and last_newton is not None and step <= 0.5 * last_newton:
            # Two Newton steps in a row that shrink: the error left after
            # this one is about M * step**2, with M ~ step / last_newton**2
            # estimated from them (floored at 1). Below tol, one more pass
            # over the data would only confirm it.
            rate = max(1.0, step / last_newton**2)
            if rate * step * step <= tol:
                status = "converged"
                break
        last_newton = step if newton else None
    return u, n_iter, status


#: ``T`` is searched in ``[lower, UPPER_FACTOR * max_gap]``: above it the
#: likelihood is flat to about ``1 / UPPER_FACTOR`` (see :func:`temperature_bounds`).
UPPER_FACTOR = 1e12


def temperature_bounds(max_gap, max_weighted_gap, total_weight, n_classes):
    """Bracket ``(lower, upper)`` of the maximum-likelihood temperature.

    Both follow the scale of the scores, so logits multiplied by ``c`` give
    a bracket multiplied by ``c`` (and ``T`` multiplied by ``c``). With
    ``d_i = z_{i, y_i} - max_j z_ij <= 0``: each row's NLL is at least
    ``-d_i / T`` and the NLL at ``T -> inf`` is ``W log K``, so the optimum
    satisfies ``T* >= max_i w_i |d_i| / (W log K)``; half of that is
    ``lower``, which is therefore never the answer. ``upper`` is
    :data:`UPPER_FACTOR` times ``max_i |d_i|``: beyond it every row's NLL is
    within ``1 / UPPER_FACTOR`` (relative) of that of uniform
    probabilities, i.e. the scores carry no usable information.

    Parameters
    ----------
    max_gap : float
        ``max_i |d_i|`` over the rows of positive weight (> 0).
    max_weighted_gap : float
        ``max_i w_i |d_i|`` (weights as passed to the fit).
    total_weight : float
        ``W = sum_i w_i``.
    n_classes : int
        ``K``.
    """
    lower = 0.5 * max_weighted_gap / (total_weight * np.log(max(n_classes, 2)))
    return float(lower), float(UPPER_FACTOR * max_gap)


def _check_normal_gap(max_gap):
    """Refuse a largest logit gap below the smallest normal float64: 1 /
    scale would overflow and the solver's unit is lost (the fit returned
    T = 2e-310 for gaps of 2e-322, probabilities 0.5 apart)."""
    if max_gap < np.finfo(np.float64).tiny:
        raise ValueError(
            f"The largest gap between a true-class logit and its row's top "
            f"logit is {max_gap:.3g}, below the smallest normal float64 "
            f"({np.finfo(np.float64).tiny:.3g}): subnormal scores keep only a "
            "few significant bits and cannot be scaled. Multiply X by a large "
            "constant (for example 2.0**600); the temperature is multiplied "
            "by it."
        )


def fit_temperature(
    logits,
    y,
    sample_weight=None,
    *,
    max_iter=100,
    tol=1e-8,
    bounds=None,
    n_jobs=1,
    probabilities=False,
):
    """Maximum-likelihood temperature by safeguarded Newton on ``log(1/T)``.

    The NLL is convex in ``beta = 1/T``; its derivative is increasing in
    ``u = log beta``. Newton steps on the root of that derivative in ``u``
    use the exact first and second derivatives (float64); a bracket of the
    root is kept, and a step leaving it is replaced by bisection, so the
    iteration always converges. It stops when a step in ``log T`` is below
    ``tol``, or when two consecutive Newton steps shrink quadratically and
    the error they predict after the last one, ``M * step**2`` (``M``
    estimated from the two steps, at least 1), is below ``tol``: the error
    left in ``log T`` is then about ``tol`` or less, and the pass over the
    data that would only confirm it is saved.

    The bracket follows the scale of the scores (:func:`temperature_bounds`)
    and the start is the weighted mean gap ``-d_i`` of the rows whose true
    class is not on top, so multiplying the logits by ``c`` multiplies ``T``
    by ``c`` (up to ``tol``). Weights are divided by their maximum first:
    the result does not depend on their scale (weights of 1e308 do not
    overflow, 5e-324 does not underflow).

    On more than 200 000 rows, a first Newton run on every 16th row gives the
    starting point, and the first pass over all rows computes its Newton
    step in float32 (twice as fast; it is only a step, the bracket and the
    stopping rule use float64 passes): the full data are then read about
    three times (the row maxima, a float32 and a float64 Newton pass).

    The fit is :func:`solve_temperature` over the numpy passes
    :class:`_NumpyPasses` (the array-API fit runs the same driver over its
    own passes).

    Parameters
    ----------
    logits : ndarray of shape (n, K), float32 or float64
        Logits or log-probabilities (any per-row constant); not copied.
    y : ndarray of shape (n,)
        Encoded labels.
    sample_weight : ndarray of shape (n,) or None
    max_iter : int
    tol : float
    bounds : tuple of two floats or None
        Search range of ``T``; ``None``: :func:`temperature_bounds`.
    n_jobs : int
    probabilities : bool, default=False
        ``logits`` holds probabilities: their logits
        :func:`~skcalib._core.scores.log_floored` are taken block by block
        in every pass (never an ``n x K`` array; the same temperature bit
        for bit as passing ``log_floored(logits)``).

    Returns
    -------
    temperature : float
    n_iter : int
        Newton/bisection iterations on the full data.
    status : {"converged", "max_iter", "lower_bound", "upper_bound"}
    """
    if sample_weight is not None:
        top = float(sample_weight.max(initial=0.0))
        sample_weight = unit_weights(sample_weight, top)[0]
    passes = _NumpyPasses(logits, y, sample_weight, n_jobs, probabilities)
    return solve_temperature(
        passes, logits.shape, max_iter=max_iter, tol=tol, bounds=bounds
    )


#: Beyond this many rows, a first run on every :data:`SUBSAMPLE_STEP`-th row
#: gives the start, and the first pass over all rows is in float32.
LARGE_ROWS = 200_000
SUBSAMPLE_STEP = 16


def moderate_scale(scale):
    """Whether gaps in units of ``scale`` may be computed in float32 (no
    subnormal or overflowing factor)."""
    return 2.0**-60 <= scale <= 2.0**60


def solve_temperature(passes, shape, *, max_iter, tol, bounds):
    """The temperature fit of every backend, over that backend's ``passes``.

    Everything but reading the data is here, once: the degenerate problems,
    :func:`_check_normal_gap`, the unit of the largest gap (a power of two),
    the bracket, the start, the first run on every :data:`SUBSAMPLE_STEP`-th
    row beyond :data:`LARGE_ROWS` rows, the float32 first pass and the
    Newton iteration (:func:`_newton_temperature`). ``passes`` (numpy:
    :class:`_NumpyPasses`; array API:
    :class:`~skcalib._core.xp.solvers_temperature._NamespacePasses`) reads
    the data; with ``g_i = -d_i >= 0`` the gap of row ``i``, it has

    ``gaps()``
        ``(max_gap, W)``: ``max_i g_i`` over the rows of positive weight (0
        when every true class is on top) and the total weight.
    ``degenerate()``
        When ``max_gap == 0``: ``(constant, widest)``, whether every row is
        constant and the largest row range over the rows of positive weight.
    ``rescale(scale)``
        Takes the gaps to units of ``scale`` for the passes; returns
        ``(max_i w_i g_i, start)`` in those units, ``start`` the weighted
        mean gap of the rows whose true class is not on top.
    ``terms(step)``
        ``terms(beta, coarse)`` over every ``step``-th row: the NLL and its
        two derivatives in ``beta`` (:func:`_temperature_terms`), the
        per-row terms in float32 where ``coarse``.
    ``weight(step)``
        The total weight of every ``step``-th row.

    Parameters
    ----------
    passes : object
    shape : tuple of two ints
        ``(n, K)`` of the logits.
    max_iter, tol, bounds
        As :func:`fit_temperature`.

    Returns
    -------
    temperature, n_iter, status
        As :func:`fit_temperature`.
    """
    n, n_classes = shape
    max_gap, total = passes.gaps()
    if max_gap == 0:
        constant, widest = passes.degenerate()
        if constant:
            # Every row is constant: the NLL does not depend on T at all.
            return 1.0, 0, "converged"
        # Every sample's true class has the top score: the NLL decreases in
        # beta without bound, the infimum is at T -> 0.
        if bounds is None:
            bounds = _separated_bounds(np.array([widest]), None)
        return float(bounds[0]), 0, "lower_bound"
    _check_normal_gap(max_gap)
    # Solve in units of the largest gap (a power of two: exact), so that the
    # squared gaps in the derivatives neither overflow nor underflow; the
    # bracket is computed in those units too (in the units of the scores,
    # subnormal gaps would give a lower bound of 0 and a log of 0).
    scale = _gap_scale(max_gap)
    max_weighted_gap, start = passes.rescale(scale)
    if bounds is None:
        bounds = temperature_bounds(
            1.0 * max_gap / scale, max_weighted_gap, total, n_classes
        )
    else:
        bounds = (bounds[0] / scale, bounds[1] / scale)
    u = -np.log(min(max(start, bounds[0]), bounds[1]))
    sub_total = passes.weight(SUBSAMPLE_STEP) if n > LARGE_ROWS else 0.0
    if sub_total > 0:
        terms = passes.terms(SUBSAMPLE_STEP)
        u_sub, _, status = _newton_temperature(
            terms, u, sub_total, max_iter, 1e-3, bounds
        )
        if status == "converged":
            u = u_sub
    u, n_iter, status = _newton_temperature(
        passes.terms(1),
        u,
        total,
        max_iter,
        tol,
        bounds,
        coarse_first=n > LARGE_ROWS and moderate_scale(scale),
    )
    return float(np.exp(-u)) * scale, n_iter, status


class _NumpyPasses:
    """The passes of :func:`solve_temperature` over numpy logits, or over
    probabilities whose logits are taken block by block in each pass."""

    def __init__(self, z, y, sample_weight, n_jobs, probabilities):
        self.z, self.w = z, sample_weight
        self.n_jobs, self.probabilities = n_jobs, probabilities
        self.chunk_rows = max(1, 2**16 // max(1, z.shape[1]))
        self.z_max, self.dy = _row_max_and_gap(z, y, probabilities)
        self.inv_scale = 1.0

    def gaps(self):
        w = self.w
        active = self.dy if w is None else self.dy[w > 0]
        total = float(self.dy.size if w is None else w.sum())
        return float(-active.min(initial=0.0)), total

    def degenerate(self):
        z_min = _row_min(self.z, self.probabilities)
        ranges = self.z_max - z_min
        if self.w is not None:
            ranges = ranges[self.w > 0]
        return np.array_equal(self.z_max, z_min), float(ranges.max(initial=0.0))

    def rescale(self, scale):
        gap, w = -self.dy, self.w
        self.dy, self.inv_scale = self.dy / scale, 1.0 / scale
        w_gap = -self.dy if w is None else -self.dy * w
        wrong = gap > 0
        if w is None:
            start = float(gap[wrong].mean())
        else:
            ww = w[wrong]
            start = float(gap[wrong] @ ww / ww.sum()) if ww.sum() > 0 else gap.max()
        return float(w_gap.max()), float(start) / scale

    def weight(self, step):
        rows = slice(None, None, step)
        return float(self.dy[rows].size if self.w is None else self.w[rows].sum())

    def terms(self, step):
        rows = slice(None, None, step)
        z, z_max, dy = self.z[rows], self.z_max[rows], self.dy[rows]
        w = None if self.w is None else self.w[rows]

        def terms(beta, coarse):
            return _temperature_terms(
                z,
                z_max,
                dy,
                beta,
                w,
                self.chunk_rows,
                self.n_jobs,
                coarse=coarse,
                inv_scale=self.inv_scale,
                probabilities=self.probabilities,
            )

        return terms


#: Elements per block of the passes that take the logits of probabilities.
_LOG_BLOCK = 1 << 18


def _logit_blocks(z, probabilities):
    """``(rows, logits of those rows)`` by blocks (the whole array for logits)."""
    if not probabilities:
        yield slice(None), z
        return
    step = max(1, _LOG_BLOCK // max(1, z.shape[1]))
    for start in range(0, z.shape[0], step):
        rows = slice(start, start + step)
        yield rows, log_floored(z[rows])


def _row_max_and_gap(z, y, probabilities):
    """float64 row maxima of the logits and ``dy = z_true - z_max`` (<= 0)."""
    z_max = np.empty(z.shape[0])
    z_true = np.empty(z.shape[0], dtype=z.dtype)
    for rows, zb in _logit_blocks(z, probabilities):
        z_max[rows] = zb.max(axis=1)
        z_true[rows] = zb[np.arange(zb.shape[0]), y[rows]]
    return z_max, z_true - z_max


def _row_min(z, probabilities):
    """Row minima of the logits (dtype of ``z``)."""
    z_min = np.empty(z.shape[0], dtype=z.dtype)
    for rows, zb in _logit_blocks(z, probabilities):
        z_min[rows] = zb.min(axis=1)
    return z_min


def _gap_scale(max_gap):
    """The power of two nearest ``max_gap`` (> 0): the unit of the solver."""
    return float(2.0 ** np.round(np.log2(max_gap)))


#: When every sample is right, ``T`` is reported at this fraction of the
#: largest score range of a row (the likelihood increases up to ``T -> 0``).
SEPARATED_FRACTION = 1e-4


def _separated_bounds(ranges, sample_weight):
    """Bounds when every true class is on top: ``T`` stops at
    :data:`SEPARATED_FRACTION` times the largest row range (scale-free)."""
    if sample_weight is not None:
        ranges = ranges[sample_weight > 0]
    scale = float(ranges.max())
    return SEPARATED_FRACTION * scale, UPPER_FACTOR * scale
