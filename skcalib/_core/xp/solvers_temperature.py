"""The temperature-scaling passes on an array-API namespace (torch, CuPy,
array-api-strict, ...): the passes over the logits run on their device.

The fit is :func:`~skcalib._core.solvers.temperature.solve_temperature`, the
driver of the numpy fit (start, bracket, units of the largest gap, first run
on every 16th row beyond 200 000 rows, float32 first pass, safeguarded
Newton iteration in ``log(1/T)``), shared, not copied, over the passes of
:class:`_NamespacePasses`. Only the passes differ: the per-row terms are
computed in the compute dtype of the logits (float32 for float32 input,
float64 for float64), their sums over the rows in
:attr:`~skcalib._core.xp.Namespace.accumulate_dtype` (float64 where the
device has it), and each pass sends three scalars (the NLL and its two
derivatives) to the host, where the iteration runs.
"""

from skcalib._core.solvers.temperature import moderate_scale, solve_temperature
from skcalib._core.xp import to_numpy
from skcalib._core.xp.weights import xp_unit_weights

__all__ = []  # private module

#: Elements of the logits per block of a pass, on a CPU (1 MiB of float32,
#: near the cache) and on other devices (16 MiB: few kernel launches). The
#: temporaries of a block stay small whatever the number of rows.
BLOCK_ELEMENTS = {"cpu": 2**18, "other": 2**22}


def _block_rows(ns, n_columns):
    on_cpu = "cpu" in str(ns.device).lower()
    return max(1, BLOCK_ELEMENTS["cpu" if on_cpu else "other"] // max(1, n_columns))


def _host_floats(xp, values):
    """Scalars of the device as Python floats, in one transfer."""
    return [float(v) for v in to_numpy(xp.stack(values))]


def xp_temperature_terms(ns, z, z_max, dy, beta, w, dtype, inv_scale=1.0):
    """NLL, gradient and second derivative in ``beta = 1 / T`` summed over
    the rows, as Python floats: the terms of
    :func:`~skcalib._core.solvers.temperature._temperature_terms`.

    ``z_max`` are the row maxima (shape ``(n, 1)``), ``dy`` the true class's
    entry of ``(z - z_max) * inv_scale`` (accumulation dtype). Blocks of
    :data:`BLOCK_ELEMENTS` logits are cast to ``dtype``, shifted, scaled and
    exponentiated in ``dtype``; the per-row sums are taken to the
    accumulation dtype and the sums over the rows accumulated in it, on the
    device.
    """
    xp = ns.xp
    acc = ns.accumulate_dtype
    n = z.shape[0]
    beta = float(beta)
    block_rows = _block_rows(ns, z.shape[1])
    parts = []
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        zb, z_max_b = z[start:stop, ...], z_max[start:stop, ...]
        if zb.dtype != dtype:
            zb, z_max_b = xp.astype(zb, dtype), xp.astype(z_max_b, dtype)
        d = zb - z_max_b
        if inv_scale != 1.0:
            d = d * inv_scale
        e = xp.exp(d * beta)
        s0 = xp.astype(xp.sum(e, axis=1), acc)
        e = e * d
        m1 = xp.astype(xp.sum(e, axis=1), acc) / s0
        m2 = xp.astype(xp.sum(e * d, axis=1), acc) / s0
        dyb = dy[start:stop]
        terms = xp.stack(
            [xp.log(s0) - beta * dyb, m1 - dyb, xp.clip(m2 - m1 * m1, min=0.0)]
        )
        if w is None:
            parts.append(xp.sum(terms, axis=1))
        else:
            parts.append(terms @ w[start:stop])
    return tuple(float(v) for v in to_numpy(xp.sum(xp.stack(parts), axis=0)))


def _true_class_gaps(ns, z, y):
    """Row maxima ``(n, 1)`` (dtype of ``z``) and ``d_y = z[i, y_i] - max_j
    z_ij`` in the accumulation dtype (exact for float32 logits)."""
    xp = ns.xp
    n, k = z.shape
    z_max = xp.max(z, axis=1, keepdims=True)
    rows = xp.arange(n, dtype=xp.int64, device=ns.device)
    flat = xp.take(xp.reshape(z, (-1,)), rows * k + xp.astype(y, xp.int64))
    acc = ns.accumulate_dtype
    return z_max, xp.astype(flat, acc) - xp.astype(z_max[:, 0], acc)


def _summaries(ns, dy, w):
    """``(max active gap, max w * gap, W, sum of w * gap and of w over the
    wrong rows, max gap)`` from the device in one transfer."""
    xp = ns.xp
    gap = -dy
    wrong = gap > 0
    zero = xp.zeros_like(gap)
    if w is None:
        ww = xp.astype(wrong, gap.dtype)
        values = [xp.max(gap), xp.max(gap), xp.sum(xp.ones_like(gap))]
    else:
        ww = xp.where(wrong, w, zero)
        active = xp.where(w > 0, gap, zero)
        values = [xp.max(active), xp.max(gap * w), xp.sum(w)]
    values += [xp.sum(gap * ww), xp.sum(ww), xp.max(gap)]
    return _host_floats(xp, values)


class _NamespacePasses:
    """The passes of
    :func:`~skcalib._core.solvers.temperature.solve_temperature` on the
    device: one transfer for the summaries of the gaps, then one per pass."""

    def __init__(self, ns, z, y, w):
        self.ns, self.z, self.w = ns, z, w
        self.z_max, self.dy = _true_class_gaps(ns, z, y)
        self.summaries = _summaries(ns, self.dy, w)
        # float32 logits are computed in float32 where the unit of the gaps
        # is moderate (no subnormal factors); in the accumulation dtype
        # otherwise.
        self.dtype, self.inv_scale = z.dtype, 1.0

    def gaps(self):
        return self.summaries[0], self.summaries[2]

    def degenerate(self):
        xp, z, w = self.ns.xp, self.z, self.w
        acc = self.ns.accumulate_dtype
        ranges = xp.astype(self.z_max[:, 0], acc) - xp.astype(xp.min(z, axis=1), acc)
        active = ranges if w is None else xp.where(w > 0, ranges, xp.zeros_like(ranges))
        widest, all_rows = _host_floats(xp, [xp.max(active), xp.max(ranges)])
        return all_rows == 0, widest

    def rescale(self, scale):
        _, max_w_gap, _, wrong_gap, wrong_w, gap_max = self.summaries
        self.dy, self.inv_scale = self.dy / scale, 1.0 / scale
        if not moderate_scale(scale):
            self.dtype = self.ns.accumulate_dtype
        start = wrong_gap / wrong_w if wrong_w > 0 else gap_max
        return max_w_gap / scale, start / scale

    def weight(self, step):
        if self.w is None:
            return float(self.z[::step, ...].shape[0])
        return _host_floats(self.ns.xp, [self.ns.xp.sum(self.w[::step])])[0]

    def terms(self, step):
        z, z_max, dy = self.z[::step, ...], self.z_max[::step, ...], self.dy[::step]
        w = None if self.w is None else self.w[::step]

        def terms(beta, coarse):
            dtype = self.ns.xp.float32 if coarse else self.dtype
            return xp_temperature_terms(
                self.ns, z, z_max, dy, beta, w, dtype, inv_scale=self.inv_scale
            )

        return terms


def fit_temperature_xp(
    ns, logits, y, sample_weight=None, *, max_iter=100, tol=1e-8, bounds=None
):
    """Maximum-likelihood temperature of namespace logits, computed on their
    device: :func:`~skcalib._core.solvers.temperature.fit_temperature`.

    Parameters
    ----------
    ns : Namespace
        The namespace and device of the arrays.
    logits : array of shape (n, K), float32 or float64
        Logits or log-probabilities (any per-row constant).
    y : integer array of shape (n,)
        Encoded labels.
    sample_weight : array of shape (n,) or None
        In the accumulation dtype.
    max_iter : int
    tol : float
    bounds : tuple of two floats or None
        Search range of ``T``; ``None``:
        :func:`~skcalib._core.solvers.temperature.temperature_bounds`.

    Returns
    -------
    temperature : float
    n_iter : int
    status : {"converged", "max_iter", "lower_bound", "upper_bound"}
    """
    w = None if sample_weight is None else xp_unit_weights(ns, sample_weight)[0]
    passes = _NamespacePasses(ns, logits, y, w)
    return solve_temperature(
        passes, logits.shape, max_iter=max_iter, tol=tol, bounds=bounds
    )
