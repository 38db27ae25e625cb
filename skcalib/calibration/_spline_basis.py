"""The spline design stored as a band: each row's nonzeros lie in a few
contiguous columns, so products with it cost ``O(n k^2)``, not ``O(n m^2)``."""

import numpy as np

__all__ = ["BandedDesign"]


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
