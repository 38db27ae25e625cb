"""The temperature-scaling solver on an array-API namespace (torch, CuPy,
array-api-strict, ...): the passes over the logits run on their device.

The counterpart of :func:`skcalib._core.solvers.temperature.fit_temperature`,
step for step: the same start, bracket, units of the largest gap, first run
on every 16th row beyond 200 000 rows, float32 first pass, and the same
safeguarded Newton iteration in ``log(1/T)``
(:func:`~skcalib._core.solvers.temperature._newton_temperature`, shared, not
copied). Only the passes differ: the per-row terms are computed in the
compute dtype of the logits (float32 for float32 input, float64 for float64),
their sums over the rows in :attr:`~skcalib._core.xp.Namespace.accumulate_dtype`
(float64 where the device has it), and each pass sends three scalars (the
NLL and its two derivatives) to the host, where the iteration runs.
"""

import numpy as np

from skcalib._core.solvers.temperature import (
    _gap_scale,
    _newton_temperature,
    _separated_bounds,
    temperature_bounds,
)
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


def _degenerate(ns, z, z_max, w, bounds):
    """``(T, 0, status)`` when every true class has the top score (as
    :func:`~skcalib._core.solvers.temperature.fit_temperature`)."""
    xp = ns.xp
    acc = ns.accumulate_dtype
    ranges = xp.astype(z_max[:, 0], acc) - xp.astype(xp.min(z, axis=1), acc)
    active = ranges if w is None else xp.where(w > 0, ranges, xp.zeros_like(ranges))
    widest, all_rows = _host_floats(xp, [xp.max(active), xp.max(ranges)])
    if all_rows == 0:
        # Every row is constant: the NLL does not depend on T at all.
        return 1.0, 0, "converged"
    if bounds is None:
        bounds = _separated_bounds(np.array([widest]), None)
    return float(bounds[0]), 0, "lower_bound"


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
        Search range of ``T``; ``None``: :func:`temperature_bounds`.

    Returns
    -------
    temperature : float
    n_iter : int
    status : {"converged", "max_iter", "lower_bound", "upper_bound"}
    """
    xp, z = ns.xp, logits
    n = z.shape[0]
    w = None if sample_weight is None else xp_unit_weights(ns, sample_weight)[0]
    z_max, dy = _true_class_gaps(ns, z, y)
    max_gap, max_w_gap, total_all, wrong_gap, wrong_w, gap_max = _summaries(ns, dy, w)
    if max_gap == 0:
        return _degenerate(ns, z, z_max, w, bounds)
    if bounds is None:
        bounds = temperature_bounds(max_gap, max_w_gap, total_all, z.shape[1])
    scale = _gap_scale(max_gap)
    bounds = (bounds[0] / scale, bounds[1] / scale)
    dy = dy / scale
    moderate = 2.0**-60 <= scale <= 2.0**60
    # float32 logits are computed in float32 where the unit of the gaps is
    # moderate (no subnormal factors); in the accumulation dtype otherwise.
    dtype = z.dtype if moderate else ns.accumulate_dtype
    t0 = wrong_gap / wrong_w if wrong_w > 0 else gap_max
    t0 = min(max(t0 / scale, bounds[0]), bounds[1])

    def terms_of(rows, total=None):
        z_r, z_max_r, dy_r = z[rows, ...], z_max[rows, ...], dy[rows]
        w_r = None if w is None else w[rows]

        def terms(beta, coarse):
            return xp_temperature_terms(
                ns,
                z_r,
                z_max_r,
                dy_r,
                beta,
                w_r,
                xp.float32 if coarse else dtype,
                inv_scale=1.0 / scale,
            )

        if total is None:
            total = z_r.shape[0] if w_r is None else _host_floats(xp, [xp.sum(w_r)])[0]
        return terms, float(total)

    u = -np.log(t0)
    if n > 200_000:
        terms, total = terms_of(slice(None, None, 16))
        if total > 0:
            u_sub, _, status = _newton_temperature(
                terms, u, total, max_iter, 1e-3, bounds
            )
            if status == "converged":
                u = u_sub
    terms, total = terms_of(slice(None), total_all)
    u, n_iter, status = _newton_temperature(
        terms, u, total, max_iter, tol, bounds, coarse_first=n > 200_000 and moderate
    )
    return float(np.exp(-u)) * scale, n_iter, status
