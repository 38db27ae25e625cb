"""The penalised multinomial NLL of :mod:`skcalib._core.solvers.linear` on
the device: vector scaling, matrix scaling and Dirichlet calibration of
array-API inputs.

:class:`XpPenalisedNLL` is :class:`~skcalib._core.solvers.linear.PenalisedNLL`
(same objective ``J``, same scaled parametrisation, same penalties, centre,
start, gauge fix and stopping rule) with its data-touching methods written
with the array-API standard functions. The features stay on the device in
their compute dtype; each block of rows is cast to the accumulation dtype
(float64 where the device has it, as the numpy solver casts its blocks)
for the per-row terms, and the block sums are added on the device. The
numpy solvers drive it on the host, unchanged: polished Newton
(:func:`~skcalib._core.solvers.newton.polished_newton`) up to
:data:`~skcalib._core.solvers.linear.MAX_BLOCK_CLASSES` classes (vector
scaling) or :data:`~skcalib._core.solvers.linear.MAX_NEWTON_CLASSES`
classes (matrix scaling), scipy's L-BFGS-B above. What crosses per
evaluation of ``J`` is the parameter vector (``2K`` or ``K (K + 1)``
numbers, host to device), the loss and its gradient, and for a Newton step
the Hessian (``(2K)^2`` or ``(K (K + 1))^2`` numbers: at most 65 536 and
24 336) back; the ``n x K`` data never cross. Exceptions, both bounded: the
separation check (a linear program on the host) receives the rows of
positive weight when its program has at most
:data:`~skcalib._core.solvers.newton.SEPARATION_MAX_ENTRIES` entries, and
the L-BFGS preconditioner's curvature blocks come back (``K (K+1)^2``
numbers) when it is refreshed.
"""

import copy

import numpy as np

from skcalib._core.solvers import linear
from skcalib._core.solvers.linear import BLOCK_ENTRIES, CURVATURE_ROWS, PenalisedNLL
from skcalib._core.solvers.newton import SEPARATION_MAX_ENTRIES
from skcalib._core.solvers.temperature import SEPARATED_FRACTION
from skcalib._core.xp import to_numpy

__all__ = []  # private module

#: Row blocks on an accelerator hold about this many entries (a block's
#: float64 temporaries then take a few times 32 MB).
XP_BLOCK_ENTRIES = 2**22

#: Row blocks on a CPU device (torch CPU, array-api-strict) hold about this
#: many entries, as the numpy solver's: their temporaries stay in the cache.
CPU_BLOCK_ENTRIES = BLOCK_ENTRIES


def _block_entries(ns):
    return CPU_BLOCK_ENTRIES if "cpu" in str(ns.device).lower() else XP_BLOCK_ENTRIES


def weight_total(ns, sample_weight, n):
    """The total weight computed on the device (the rule of
    :func:`skcalib.calibration._linear_map.weight_total`)."""
    if sample_weight is None:
        return float(n)
    return float(ns.xp.sum(sample_weight))


def _normalised(xp, w):
    """Weights divided by their maximum, then by their sum (as numpy)."""
    if w is None:
        return None
    w = w / xp.max(w)
    return w / xp.sum(w)


class _Rows:
    """Features, labels and normalised weights of the rows ``J`` sums over."""

    def __init__(self, ns, X, y, w, work):
        self.ns, self.xp, self.X, self.y, self.w, self.work = ns, ns.xp, X, y, w, work
        n, k = X.shape
        self.w_const = 1.0 / n
        step = max(1, _block_entries(ns) // max(1, k))
        self.blocks = [slice(s, min(s + step, n)) for s in range(0, n, step)]
        self.classes = ns.xp.arange(k, device=ns.device)

    def block(self, sl, th, diagonal, x_scale):
        """Scaled features, weights (a scalar or a column), the one-hot
        labels, the centred ``a``, ``p = softmax(a)`` and its row sums."""
        xp = self.xp
        xb = xp.astype(self.X[sl, :], self.work) * (1.0 / x_scale)
        wb = self.w_const if self.w is None else self.w[sl][:, None]
        if diagonal:
            a = xb * th[0, :] + th[1, :]
        else:
            a = xb @ xp.matrix_transpose(th[:, :-1]) + th[:, -1]
        a = a - xp.max(a, axis=1, keepdims=True)
        p = xp.exp(a)
        s = xp.sum(p, axis=1)
        p = p / s[:, None]
        onehot = xp.astype(self.y[sl][:, None] == self.classes[None, :], self.work)
        return xb, wb, onehot, a, p, s

    def total(self, fn):
        """``sum(fn(block))`` of flat device vectors, moved to the host once."""
        out = None
        for sl in self.blocks:
            part = fn(sl)
            out = part if out is None else out + part
        return np.asarray(to_numpy(out), dtype=np.float64)


def _flat(xp, *arrays):
    return xp.concat([xp.reshape(a, (-1,)) for a in arrays])


class XpPenalisedNLL(PenalisedNLL):
    """:class:`~skcalib._core.solvers.linear.PenalisedNLL` on device arrays.

    Parameters
    ----------
    ns : Namespace
        Namespace and device of the data.
    X : array of shape (n, K)
        Features in their compute dtype; read block by block.
    y : integer array of shape (n,)
        Encoded labels on the device.
    sample_weight : array of shape (n,) or None
        Checked weights in the accumulation dtype.
    C, diagonal, centre
        As for :class:`~skcalib._core.solvers.linear.PenalisedNLL`.
    """

    on_device = True

    def __init__(self, ns, X, y, sample_weight, C, *, diagonal, centre="identity"):
        xp = ns.xp
        n, k = X.shape
        w = _normalised(xp, sample_weight)
        kept = X if w is None else xp.where((w > 0)[:, None], X, 0.0)
        x_scale = max(1.0, float(xp.max(kept)), -float(xp.min(kept)))
        # The parent sets C, theta0 and the centre from x_scale alone; it
        # gets a zero-stride stand-in of the data's shape (no memory).
        super().__init__(
            np.broadcast_to(np.float64(0.0), (n, k)),
            None,
            None,
            C,
            diagonal=diagonal,
            x_scale=x_scale,
            centre=centre,
        )
        self.ns, self.X, self.y, self.w = ns, X, y, w
        self.work = ns.accumulate_dtype
        self.rows = _Rows(ns, X, y, w, self.work)
        self.blocks = self.rows.blocks
        self.n_rows = n if w is None else int(xp.count_nonzero(w > 0))

    def _theta(self, theta):
        return self.ns.asarray(np.asarray(theta, dtype=np.float64), dtype=self.work)

    def separation_size(self):
        """As :meth:`PenalisedNLL.separation_size`."""
        return int(self.n_rows * (self.k - 1) * np.count_nonzero(self.C == 0))

    def separation(self):
        """As :meth:`PenalisedNLL.separation`, on the host: the rows of
        positive weight cross once, only when the program is small enough
        to be solved (at most ``SEPARATION_MAX_ENTRIES`` entries)."""
        n_free = int(np.count_nonzero(self.C == 0))
        n_margins = int(self.n_rows * (self.k - 1))
        if n_free == 0 or self.k < 2:
            return 0, n_margins
        if n_margins * n_free > SEPARATION_MAX_ENTRIES:
            return None, n_margins
        host = copy.copy(self)
        X, y = self.X, self.y
        if self.w is not None:
            X, y = X[self.w > 0], y[self.w > 0]
        host.X, host.y, host.w = to_numpy(X), to_numpy(y), None
        return PenalisedNLL.separation(host)

    def loss_grad(self, theta, hessian=False):
        """As :meth:`PenalisedNLL.loss_grad` (numpy results on the host)."""
        xp, k, diagonal = self.ns.xp, self.k, self.diagonal
        th = self._theta(theta)
        d = th.shape[0] * th.shape[1]

        def block(sl):
            xb, wb, onehot, a, p, s = self.rows.block(sl, th, diagonal, self.x_scale)
            li = xp.log(s) - xp.sum(a * onehot, axis=1)
            loss = xp.sum(li) * wb if self.w is None else xp.sum(li * wb[:, 0])
            hess = _hessian_terms(xp, xb, wb, p, diagonal) if hessian else ()
            r = (p - onehot) * wb
            if diagonal:
                grad = xp.stack((xp.sum(r * xb, axis=0), xp.sum(r, axis=0)))
            else:
                grad = xp.concat(
                    (xp.matrix_transpose(r) @ xb, xp.sum(r, axis=0)[:, None]), axis=1
                )
            return _flat(xp, loss, grad, *hess)

        out = self.rows.total(block)
        loss, grad = float(out[0]), out[1 : 1 + d].reshape(theta.shape)
        hess = _assemble_hessian(out[1 + d :], k, diagonal) if hessian else None
        return self.add_penalty(theta, loss, grad, hess)

    def curvature_blocks(self, theta, full):
        """As :meth:`PenalisedNLL.curvature_blocks`, on every
        ``ceil(n / CURVATURE_ROWS)``-th row."""
        xp, k, diagonal = self.ns.xp, self.k, self.diagonal
        stride = -(-self.X.shape[0] // CURVATURE_ROWS)
        rows = self.rows
        if stride > 1 and (self.w is None or float(xp.sum(self.w[::stride])) > 0):
            w = None if self.w is None else _normalised(xp, self.w[::stride])
            rows = _Rows(self.ns, self.X[::stride, :], self.y[::stride], w, self.work)
        th = self._theta(theta)

        def block(sl):
            xb, wb, _, _, p, _ = rows.block(sl, th, diagonal, self.x_scale)
            h = p * (1.0 - p) * wb
            if diagonal:
                return _flat(xp, xp.sum(h * xb * xb, axis=0), xp.sum(h, axis=0))
            if not full:
                return _flat(
                    xp,
                    xp.concat(
                        (
                            xp.matrix_transpose(h) @ (xb * xb),
                            xp.sum(h, axis=0)[:, None],
                        ),
                        axis=1,
                    ),
                )
            ones = xp.ones((xb.shape[0], 1), dtype=xb.dtype, device=self.ns.device)
            xt = xp.concat((xb, ones), axis=1)
            return _flat(
                xp,
                *[xp.matrix_transpose(xt * h[:, j : j + 1]) @ xt for j in range(k)],
            )

        out = rows.total(block)
        if diagonal:
            out = out.reshape(2, k)
        else:
            out = out.reshape((k, k + 1, k + 1) if full else (k, k + 1))
        self.last_curvature = (out.copy(), full)
        return self.add_curvature_penalty(out, full)


def _hessian_terms(xp, xb, wb, p, diagonal):
    """Device parts of a block's Hessian (see :func:`_assemble_hessian`)."""
    if diagonal:
        px = p * xb
        m = xp.concat((px, p), axis=1) * (wb**0.5)
        return (
            -(xp.matrix_transpose(m) @ m),
            xp.sum(wb * px * xb, axis=0),
            xp.sum(wb * p, axis=0),
            xp.sum(wb * px, axis=0),
        )
    m, k = p.shape
    ones = xp.ones((m, 1), dtype=xb.dtype, device=xb.device)
    xt = xp.concat((xb, ones), axis=1)
    kron = xp.reshape(p[:, :, None] * xt[:, None, :], (m, k * (k + 1)))
    weighted = kron * wb
    return (
        -(xp.matrix_transpose(kron) @ weighted),
        xp.matrix_transpose(weighted) @ xt,
    )


def _assemble_hessian(flat, k, diagonal):
    """The Hessian of the data terms from :func:`_hessian_terms`'s sums, as
    :meth:`PenalisedNLL.loss_grad` and ``_matrix_hessian`` assemble it."""
    if diagonal:
        size = 4 * k * k
        hess = flat[:size].reshape(2 * k, 2 * k)
        xx, p, px = flat[size:].reshape(3, k)
        idx = np.arange(k)
        hess[idx, idx] += xx
        hess[idx + k, idx + k] += p
        hess[idx, idx + k] += px
        hess[idx + k, idx] += px
        return hess
    d = k * (k + 1)
    hess = flat[: d * d].reshape(d, d)
    blocks = flat[d * d :].reshape(k, k + 1, k + 1)
    view = hess.reshape(k, k + 1, k, k + 1)
    idx = np.arange(k)
    view[idx, :, idx, :] += blocks
    return hess


def fit_vector(problem, *, max_iter, tol, n_jobs=1, start=None):
    """:func:`skcalib._core.solvers.linear.fit_vector` on an
    :class:`XpPenalisedNLL`: the device computes, ``n_jobs`` is unused (the
    host's BLAS, for the small Newton systems, gets one thread as there)."""
    return linear.fit_vector(problem, max_iter=max_iter, tol=tol, start=start)


def fit_matrix(problem, *, max_iter, tol, n_jobs=1, start=None):
    """:func:`skcalib._core.solvers.linear.fit_matrix` on an
    :class:`XpPenalisedNLL` (``n_jobs`` is unused)."""
    return linear.fit_matrix(problem, max_iter=max_iter, tol=tol, start=start)


def _top_summary(problem):
    """``(n_wrong, max_range)``: rows of positive weight whose true class is
    not on top, and the largest row range (``max - min``) of those rows."""
    rows, xp = problem.rows, problem.ns.xp
    n_wrong, top_range = 0, 0.0
    for sl in rows.blocks:
        x = rows.X[sl, :]
        top = xp.max(x, axis=1)
        spread = top - xp.min(x, axis=1)
        onehot = rows.y[sl][:, None] == rows.classes[None, :]
        wrong = xp.any(onehot & (x < top[:, None]), axis=1)
        if rows.w is not None:
            active = rows.w[sl] > 0
            wrong = wrong & active
            spread = xp.where(active, spread, 0.0)
        summary = xp.stack(
            (xp.astype(xp.count_nonzero(wrong), spread.dtype), xp.max(spread))
        )
        count, spread_max = (float(v) for v in to_numpy(summary))
        n_wrong, top_range = n_wrong + int(count), max(top_range, spread_max)
    return n_wrong, top_range


def temperature_beta(problem, *, max_iter=100, tol=1e-8):
    """Multiplier ``beta = x_scale / T`` of the scaled features at the
    maximum-likelihood temperature ``T``: the start of the linear maps.

    The numpy path takes it from
    :func:`~skcalib._core.solvers.temperature.fit_temperature`; here a
    safeguarded Newton method in ``u = log beta`` (a bracket of the root of
    the derivative, bisection when a step leaves it) computes it on the
    device, one pass and three scalars per iteration. It is only a start:
    the fit converges from it to the same optimum. Edge cases as
    ``fit_temperature``: constant rows give ``T = 1``; when every true
    class is on top, ``T`` is ``SEPARATED_FRACTION`` times the largest row
    range.
    """
    xp, rows, x_scale = problem.ns.xp, problem.rows, problem.x_scale
    n_wrong, top_range = _top_summary(problem)
    if n_wrong == 0:
        if top_range == 0:
            return x_scale
        return x_scale / (SEPARATED_FRACTION * top_range)

    def terms(beta):
        th = problem._theta(np.vstack((np.full(problem.k, beta), np.zeros(problem.k))))

        def block(sl):
            xb, wb, onehot, _, q, _ = rows.block(sl, th, True, x_scale)
            m1 = xp.sum(q * xb, axis=1)
            m2 = xp.sum(q * xb * xb, axis=1)
            g = m1 - xp.sum(xb * onehot, axis=1)
            h = xp.clip(m2 - m1 * m1, 0.0, None)
            parts = xp.stack((g, h))
            return xp.sum(parts * (wb if rows.w is None else wb[:, 0]), axis=1)

        return rows.total(block)

    u, lo, hi = float(np.log(x_scale)), -np.inf, np.inf
    for _ in range(max_iter):
        beta = float(np.exp(u))
        g, h = terms(beta)
        slope_g, slope_h = beta * g, beta * beta * h + beta * g
        if abs(slope_g) <= 1e-15:
            break
        if slope_g < 0:
            lo = u
        else:
            hi = u
        new = u - slope_g / slope_h if slope_h > 0 else np.nan
        if not lo < new < hi:  # leaves the bracket: bisect, or expand
            new = 0.5 * (lo + hi) if np.isfinite(lo + hi) else u + np.sign(-g) * 2.0
        step, u = abs(new - u), new
        if step <= tol or u > 700.0 or u < -700.0:
            break
    return float(np.exp(min(max(u, -700.0), 700.0)))
