"""The cubic B-spline basis of :class:`~skcalib.SplineCalibrator` (knots at
weighted quantiles, the design with straight-line continuation, the
roughness penalty) and the design stored as a band: each row's nonzeros lie
in a few contiguous columns, so products with it cost ``O(n k^2)``, not
``O(n m^2)``."""

import numpy as np
from scipy.interpolate import BSpline

__all__ = [
    "MIN_KNOT_GAP",
    "BandedDesign",
    "SplineBasis",
    "merge_close_knots",
    "weighted_knots",
]

#: Gauss-Legendre nodes and weights on [0, 1] (2 points: exact for the
#: piecewise quadratic ``f''^2`` of a cubic spline).
_GL_NODES = 0.5 + np.array([-0.5, 0.5]) / np.sqrt(3.0)
_GL_WEIGHTS = np.array([0.5, 0.5])


# ----------------------------------------------------------------- the basis
def weighted_knots(score, w, n_knots):
    """The distinct weighted quantiles ``0, 1/(n_knots - 1), ..., 1`` of
    ``score`` (the inverse of the weighted empirical distribution function:
    the smallest score whose cumulative weight reaches each level), so the
    first and last knots are the smallest and largest score. Fewer than
    ``n_knots`` when quantiles coincide (tied or few distinct scores) or
    nearly coincide (:func:`merge_close_knots`)."""
    order = np.argsort(score, kind="stable")
    s = score[order]
    cum = np.cumsum(np.ones_like(s) if w is None else w[order])
    levels = np.linspace(0.0, 1.0, n_knots) * cum[-1]
    idx = np.minimum(np.searchsorted(cum, levels, side="left"), s.size - 1)
    knots = np.unique(np.r_[s[0], s[idx], s[-1]])
    return merge_close_knots(knots)


#: Knot intervals narrower than this fraction of the median interval are
#: closed (see :func:`merge_close_knots`).
MIN_KNOT_GAP = 1e-3


def merge_close_knots(knots):
    """Drop interior knots that leave an interval narrower than
    :data:`MIN_KNOT_GAP` times the median knot interval (the end knots,
    the smallest and largest score, stay).

    Quantiles that fall inside a cluster of nearly tied scores give such
    intervals: float32 probabilities floored at 1e-12 make about a tenth
    of a CIFAR-10 class's scores agree to 1e-8 in log-odds, and two
    knots 1.4e-8 apart. The roughness of an interval grows as its width
    to the power -3, so this one put entries of 1e30 in ``Omega`` beside
    curvatures of 10: the penalty was lost to rounding (the free fit was
    unpenalised, whatever ``lambda``) and the monotone solver diverged.
    A ratio of 1e-3 keeps the spread of ``Omega`` within 1e9."""
    if knots.size < 3:
        return knots
    gap = MIN_KNOT_GAP * float(np.median(np.diff(knots)))
    keep = [knots[0]]
    for knot in knots[1:-1]:  # at most n_knots knots, not samples
        if knot - keep[-1] >= gap:
            keep.append(knot)
    if len(keep) > 1 and knots[-1] - keep[-1] < gap:
        keep.pop()
    return np.array([*keep, knots[-1]])


class SplineBasis:
    """Clamped cubic B-splines on the knots, continued linearly outside them.

    The score ``s`` is mapped to ``u = (s - k_0) / (k_last - k_0)`` in
    ``[0, 1]``; the spline's knot vector holds the interior ``u`` of the
    knots, with the ends repeated four times, so there are
    ``n_knots + 2`` basis functions (one, a constant, for a single knot).
    Outside ``[0, 1]`` each function is continued by its tangent at the end,
    so a fitted map extrapolates as a straight line in the log-odds (as
    Platt scaling does) with the slope it has at the end knot.
    """

    def __init__(self, knots):
        self.knots = np.asarray(knots, dtype=np.float64)
        self.lo = float(self.knots[0])
        self.width = float(self.knots[-1] - self.knots[0])
        if self.knots.size < 2:
            self.n_basis = 1
            return
        u = (self.knots - self.lo) / self.width
        self.t = np.r_[[0.0] * 4, u[1:-1], [1.0] * 4]
        self.n_basis = self.t.size - 4
        self._spline = BSpline(self.t, np.eye(self.n_basis), 3, extrapolate=False)
        self._end_slope = self._spline.derivative(1)(np.array([0.0, 1.0]))

    def design(self, score):
        """The basis functions at ``score``: shape (n, n_basis)."""
        score = np.asarray(score, dtype=np.float64)
        if self.n_basis == 1:
            return np.ones((score.shape[0], 1))
        u = (score - self.lo) / self.width
        inside = np.clip(u, 0.0, 1.0)
        out = BSpline.design_matrix(inside, self.t, 3).toarray()
        below, above = u < 0.0, u > 1.0
        if below.any():
            out[below] += u[below, None] * self._end_slope[0]
        if above.any():
            out[above] += (u[above] - 1.0)[:, None] * self._end_slope[1]
        return out

    def roughness(self):
        """``Omega`` with ``c^T Omega c = int_0^1 f''(u)^2 du`` for the spline
        of coefficients ``c`` (exact: Gauss-Legendre on each knot interval)."""
        if self.n_basis == 1:
            return np.zeros((1, 1))
        edges = np.unique(self.t)
        widths = np.diff(edges)
        nodes = (edges[:-1, None] + widths[:, None] * _GL_NODES).ravel()
        weights = (widths[:, None] * _GL_WEIGHTS).ravel()
        second = self._spline.derivative(2)(nodes)
        return (second * weights[:, None]).T @ second


class BandedDesign:
    """A design matrix ``B`` (n, m) whose row ``i`` is zero outside the
    columns ``start[i], ..., start[i] + k - 1``, stored as ``start`` (n,)
    and ``values`` (n, k).

    A cubic B-spline row has at most 4 nonzeros, contiguous: inside the
    knots those of the knot interval's 4 B-splines; beyond the end knots
    the tangent continuation adds the end slopes, nonzero only for the
    first (last) two functions, beside the first (last) function's 1.
    ``k`` is measured on the rows given (the widest span of nonzeros), so
    the band holds every nonzero of ``B`` whatever its pattern.

    Examples
    --------
    >>> import numpy as np
    >>> dense = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]])
    >>> band = BandedDesign(dense)
    >>> band.width, band.start.tolist()
    (2, [0, 1])
    >>> band.matvec(np.ones(3)).tolist()
    [3.0, 7.0]
    >>> np.array_equal(band.gram(np.ones(2)), dense.T @ dense)
    True
    """

    def __init__(self, dense):
        dense = np.asarray(dense, dtype=np.float64)
        self.n_rows, self.n_cols = dense.shape
        nonzero = dense != 0.0
        first = np.argmax(nonzero, axis=1)  # 0 for a zero row
        last = self.n_cols - 1 - np.argmax(nonzero[:, ::-1], axis=1)
        span = np.maximum(last - first + 1, 1)
        self.width = int(span.max(initial=1))
        self.start = np.minimum(first, self.n_cols - self.width)
        self._cols = self.start[:, None] + np.arange(self.width)  # (n, k)
        self.values = np.take_along_axis(dense, self._cols, axis=1)
        # rows grouped by their band (at most m - k + 1 groups): each product
        # is one BLAS call per group on contiguous rows
        self._order = np.argsort(self.start, kind="stable")
        starts, first_row = np.unique(self.start[self._order], return_index=True)
        last_row = np.r_[first_row[1:], self.n_rows]
        self._groups = [
            (int(j), int(lo), int(hi))
            for j, lo, hi in zip(starts, first_row, last_row, strict=True)
        ]
        self._sorted = self.values[self._order]
        outer = self._sorted[:, :, None] * self._sorted[:, None, :]
        self._outer = outer.reshape(self.n_rows, -1)  # (n, k * k)

    def dense(self):
        """``B`` as a dense array (n, m)."""
        out = np.zeros((self.n_rows, self.n_cols))
        np.put_along_axis(out, self._cols, self.values, axis=1)
        return out

    def matvec(self, coef):
        """``B @ coef``: shape (n,)."""
        out = np.empty(self.n_rows)
        for j, lo, hi in self._groups:  # the band's groups, not samples
            out[lo:hi] = self._sorted[lo:hi] @ coef[j : j + self.width]
        return self._unsort(out)

    def rmatvec(self, r):
        """``B.T @ r``: shape (m,)."""
        out = np.zeros(self.n_cols)
        rs = r[self._order]
        for j, lo, hi in self._groups:
            out[j : j + self.width] += rs[lo:hi] @ self._sorted[lo:hi]
        return out

    def gram(self, h):
        """``B.T @ diag(h) @ B``: shape (m, m); each group of rows adds
        its ``h``-weighted outer products to a (k, k) block."""
        k = self.width
        out = np.zeros((self.n_cols, self.n_cols))
        hs = h[self._order]
        for j, lo, hi in self._groups:
            out[j : j + k, j : j + k] += (hs[lo:hi] @ self._outer[lo:hi]).reshape(k, k)
        return out

    def quadratic(self, mat):
        """``diag(B @ mat @ B.T)``: shape (n,)."""
        k = self.width
        out = np.empty(self.n_rows)
        for j, lo, hi in self._groups:
            out[lo:hi] = self._outer[lo:hi] @ mat[j : j + k, j : j + k].ravel()
        return self._unsort(out)

    def _unsort(self, sorted_rows):
        out = np.empty_like(sorted_rows)
        out[self._order] = sorted_rows
        return out
