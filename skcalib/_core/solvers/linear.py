"""Penalised multinomial log-loss of a linear map of log-probabilities.

The solver behind vector scaling, matrix scaling and Dirichlet calibration.
With features ``x_i`` (logits or log-probabilities, shape ``(n, K)``), sample
weights ``s_i`` and the parameters ``Theta = [W | b]`` (``K x (K + 1)``; for
vector scaling ``W`` is diagonal and ``Theta = (w, b)``, shape ``(2, K)``),
the objective is

.. math::

    J(\\Theta) = \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(a_i)
    - a_{i, y_i}\\right)}{\\sum_i s_i}
    + \\sum_{jl} C_{jl} (\\Theta_{jl} - \\Theta^0_{jl})^2,
    \\qquad a_i = W x_i + b,

the weighted mean negative log-likelihood plus a quadratic penalty with
coefficients ``C >= 0`` around a centre ``Theta0``: the identity map
``[I | 0]`` (``centre="identity"``), or ``0`` (``centre="zero"``: Kull et
al.'s Dir-L2 shrinks the map to the uniform prediction). ``J`` is convex.
It is computed in float64 by blocks of rows (about :data:`BLOCK_ENTRIES`
entries each), so float32 features are never copied whole in float64.

The solvers work on the features divided by ``x_scale = max(1, max |x_ij|)``
(over rows of positive weight), with ``W`` multiplied by it; the fitted map
is the same, but the stopping rule -- the largest absolute entry of the
gradient of ``J`` at most ``tol`` -- is then scale-free: logits of 1e4 do not
make it unreachable in float64.

* Vector scaling (``2K`` parameters): Newton's method with a backtracking
  line search on a subsampled Hessian while the gradient is large, then on
  one exact Hessian (:mod:`~skcalib._core.solvers.vector`); above
  :data:`MAX_BLOCK_CLASSES` classes (the dense ``2K x 2K`` Hessian costs
  ``O(n K^2)``) L-BFGS-B as below, preconditioned by its diagonal.
* Newton's method (vector scaling, and matrix scaling up to
  :data:`MAX_NEWTON_CLASSES` classes) steps on the pseudo-inverse of the
  Jacobi-scaled Hessian and, once the tolerance is met, polishes the fit to
  float64 rounding (:func:`_newton`): equal problems then give equal fits
  whatever the order or the scale of the rows.
* Matrix scaling (``K (K + 1)`` parameters) above
  :data:`MAX_NEWTON_CLASSES` classes: L-BFGS-B on the exact gradient,
  preconditioned by a linear change of variables: for each output class
  ``k`` the exact diagonal block ``sum_i s_i p_ik (1 - p_ik) [x_i, 1][x_i, 1]^T``
  of the Hessian plus the penalty is Cholesky-factored, ``L_k L_k^T``, and
  L-BFGS works on ``phi_k = L_k^T (Theta_k - Theta_k^start)``. The blocks are
  recomputed at the current point, and L-BFGS restarted from it, each time
  the gradient has shrunk by :data:`REFRESH_FACTOR`; a warm start that brings
  the previous fit's blocks keeps them (and the L-BFGS memory) in one run
  of at most :data:`WARM_PASS_ITER` iterations (see :func:`_lbfgs`). Above
  :data:`MAX_BLOCK_CLASSES` classes only the diagonals of the blocks are used
  (memory ``O(K^2)`` instead of ``O(K^3)``).

The row blocks are evaluated on ``n_jobs`` threads (numpy releases the GIL)
and their sums added in a fixed order, so the result does not depend on
``n_jobs``. While a solver runs, BLAS is limited to one thread: the products
are small (``m x K`` by ``K x K``) and multi-threaded BLAS only adds
overhead, which becomes severe (more than tenfold) when the cores are busy.
"""

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
from scipy.linalg.lapack import dtrtri
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from skcalib._core.solvers import vector
from skcalib._core.solvers.newton import SEPARATION_MAX_ENTRIES, separation
from skcalib._core.solvers.newton import polished_newton as _newton
from skcalib._core.weights import unit_weights

__all__ = []

#: Row blocks hold about this many entries, whatever the number of classes.
BLOCK_ENTRIES = 2**17

#: Above this many classes the preconditioner keeps only block diagonals.
MAX_BLOCK_CLASSES = 128

#: The preconditioner is computed on at most about this many rows (every
#: ``ceil(n / CURVATURE_ROWS)``-th row); it only steers the solver.
CURVATURE_ROWS = 16384

#: The preconditioner is refreshed when the gradient has shrunk this much.
REFRESH_FACTOR = 1e-2

#: A warm start keeps the previous fit's preconditioner for at most this many
#: iterations (then refreshes it as a cold start does); 0: it refreshes as a
#: cold start from the first (the strict path of the tests and benchmarks).
WARM_PASS_ITER = 100

#: Matrix scaling uses Newton's method up to this many classes (the dense
#: Hessian has ``(K (K + 1))**2`` entries), L-BFGS-B above.
MAX_NEWTON_CLASSES = 12


class _Reached(Exception):
    """Raised inside the objective when the gradient is small enough."""


def _row_blocks(n, k):
    step = max(1, BLOCK_ENTRIES // max(1, k))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


class PenalisedNLL:
    """The objective ``J`` on fixed data, in the solver's scaled parameters.

    Parameters
    ----------
    X : ndarray of shape (n, K), float32 or float64
        Features; read block by block, never copied whole.
    y : ndarray of shape (n,)
        Encoded labels in ``0 .. K-1``.
    sample_weight : ndarray of shape (n,) or None
        Non-negative weights with a positive sum.
    C : ndarray of shape (K, K + 1), or (2, K) for ``diagonal``
        Penalty coefficients on the original parameters (for ``diagonal``,
        the rows are ``w`` and ``b``).
    diagonal : bool
        Vector scaling: ``Theta = (w, b)`` and ``a = w * x + b``.
    x_scale : float or None, default=None
        Divide the features by this; ``None``: ``max(1, max |x_ij|)`` over
        the rows of positive weight.
    centre : {"identity", "zero"}, default="identity"
        Centre of the penalty: the identity map ``[I | 0]`` or ``0``. The
        identity map stays the default starting point either way.
    """

    def __init__(
        self, X, y, sample_weight, C, *, diagonal, x_scale=None, centre="identity"
    ):
        self.X = X
        self.y = y
        n, k = X.shape
        self.k = k
        self.diagonal = diagonal
        if sample_weight is None:
            self.w = None
        else:  # an exact power of two first: weights of 1e308 do not overflow,
            # nor subnormal ones (a division by their maximum did on numpy 1.25)
            self.w = unit_weights(np.asarray(sample_weight, dtype=np.float64))[0]
            self.w = self.w / self.w.sum()
        self.w_const = 1.0 / n
        self.blocks = _row_blocks(n, k)
        self.hessian_stride = vector.hessian_stride(n)
        self.pool = None  # a ThreadPoolExecutor while a solver runs in threads
        if x_scale is None:
            x_scale = 1.0
            for sl in self.blocks:
                xb = X[sl] if self.w is None else X[sl][self.w[sl] > 0]
                if xb.size:
                    x_scale = max(x_scale, float(xb.max()), -float(xb.min()))
        self.x_scale = x_scale
        # Theta' = Theta with W multiplied by x_scale: penalty and start move.
        self.C = np.array(C, dtype=np.float64)
        if diagonal:
            self.theta0 = np.vstack((np.full(k, x_scale), np.zeros(k)))
            # Divided twice, not by x_scale**2: that overflows above 1.3e154.
            self.C[0] /= x_scale
            self.C[0] /= x_scale
        else:
            self.theta0 = np.hstack((x_scale * np.eye(k), np.zeros((k, 1))))
            self.C[:, :k] /= x_scale
            self.C[:, :k] /= x_scale
        self.centre = (
            self.theta0 if centre == "identity" else np.zeros_like(self.theta0)
        )

    def scaled(self, theta):
        """Parameters on the original features to the solver's (the inverse
        of :meth:`original`)."""
        theta = np.array(theta, dtype=np.float64)
        if self.diagonal:
            theta[0] *= self.x_scale
        else:
            theta[:, :-1] *= self.x_scale
        return theta

    def separation_size(self):
        """Entries of the separation program: margins times free parameters."""
        n_rows = self.X.shape[0] if self.w is None else np.count_nonzero(self.w > 0)
        return int(n_rows * (self.k - 1) * np.count_nonzero(self.C == 0))

    def separation(self):
        """:func:`~skcalib._core.solvers.newton.separation` of the free
        parameters (those with no penalty), on the rows of positive weight:
        ``(n_separated, n_margins)``; ``n_separated`` is 0 without
        separation and None when the check is too large to run."""
        k = self.k
        free = np.argwhere(self.C == 0)  # (d, 2): (row, column) in Theta
        rows = (
            np.arange(self.X.shape[0]) if self.w is None else np.flatnonzero(self.w > 0)
        )
        n_margins = int(rows.size * (k - 1))
        if free.size == 0 or k < 2:
            return 0, n_margins
        if n_margins * free.shape[0] > SEPARATION_MAX_ENTRIES:
            return None, n_margins
        x = np.multiply(self.X[rows], 1.0 / self.x_scale, dtype=np.float64)
        y = self.y[rows]
        # Row r compares sample i with competitor j != y_i.
        other = np.tile(np.arange(k - 1), rows.size).reshape(rows.size, k - 1)
        other = other + (other >= y[:, None])
        i = np.repeat(np.arange(rows.size), k - 1)
        j = other.ravel()
        if self.diagonal:  # Theta = (w, b): parameter (0, c) or (1, c)
            cls = free[:, 1]
            value = np.where(free[:, 0] == 0, x[i][:, cls], 1.0)
        else:  # Theta = [W | b]: parameter (c, l) reads feature l (or 1)
            cls = free[:, 0]
            xt = np.hstack((x, np.ones((x.shape[0], 1))))
            value = xt[i][:, free[:, 1]]
        sign = (y[i][:, None] == cls).astype(np.float64) - (j[:, None] == cls)
        return separation(value * sign), n_margins

    def add_tie_break(self, strength):
        """Give every parameter a penalty of at least ``strength`` (scaled
        parameters): the objective becomes strictly convex, its minimiser
        unique."""
        self.C = np.maximum(self.C, strength)

    def original(self, theta):
        """Parameters of the map on the unscaled features."""
        theta = theta.copy()
        if self.diagonal:
            theta[0] /= self.x_scale
        else:
            theta[:, :-1] /= self.x_scale
        return theta

    # ------------------------------------------------------------ one block
    def _block(self, sl, theta):
        """Scaled float64 features, weights, centred ``a`` and softmax ``p``."""
        xb = np.multiply(self.X[sl], 1.0 / self.x_scale, dtype=np.float64)
        wb = self.w_const if self.w is None else self.w[sl][:, None]
        if self.diagonal:
            a = xb * theta[0]
            a += theta[1]
        else:
            a = xb @ theta[:, :-1].T
            a += theta[:, -1]
        a -= a.max(axis=1, keepdims=True)
        p = np.exp(a)
        s = p.sum(axis=1)
        p /= s[:, None]
        return xb, wb, a, p, s

    def _sum(self, fn):
        """``sum(fn(block) for block in self.blocks)``, on the pool if any.

        ``fn`` returns a tuple of arrays (or floats, or None); the tuples are
        added entry by entry as they arrive, in block order (so the result
        does not depend on the threads), and never kept all at once: with
        ``K = 1000`` classes one block's Hessian alone takes 32 MB.
        """
        if self.pool is None or len(self.blocks) == 1:
            parts = map(fn, self.blocks)
        else:
            parts = self.pool.map(fn, self.blocks)
        total = None
        for part in parts:
            if total is None:
                total = [
                    None if v is None else np.array(v, dtype=np.float64) for v in part
                ]
            else:
                for t, v in zip(total, part, strict=True):
                    if v is not None:
                        t += v
        return total

    def _block_terms(self, sl, theta, hessian):
        """Loss, gradient and (with ``hessian``) Hessian sums of one block;
        vector scaling: :func:`~skcalib._core.solvers.vector.block_terms`,
        but the gradient alone of more than :data:`MAX_BLOCK_CLASSES`
        classes (L-BFGS-B, stopped unpolished at ``tol``) is the residual
        form of the device path (``xp_linear``): the host and device fits
        then agree to rounding."""
        if self.diagonal and (hessian or self.k <= MAX_BLOCK_CLASSES):
            return vector.block_terms(self, sl, theta, hessian)
        xb, wb, a, p, s = self._block(sl, theta)
        rows = np.arange(xb.shape[0])
        yb = self.y[sl]
        li = np.log(s) - a[rows, yb]
        loss = float(li.sum() * wb if self.w is None else li @ self.w[sl])
        # uses p before it becomes the residual
        hess = _matrix_hessian(xb, wb, p) if hessian else None
        r = p
        r[rows, yb] -= 1.0
        r *= wb
        if self.diagonal:
            grad = np.vstack((np.sum(r * xb, axis=0), r.sum(axis=0)))
        else:
            grad = np.hstack((r.T @ xb, r.sum(axis=0)[:, None]))
        return loss, grad, hess

    def loss_grad(self, theta, hessian=False):
        """``J``, its gradient (shape of ``theta``) and, with ``hessian``,
        the exact Hessian of ``J`` in the order of ``theta.ravel()``: ``(w,
        b)`` for vector scaling (shape ``(2K, 2K)``), the rows of ``[W | b]``
        for matrix scaling (shape ``(K (K + 1), K (K + 1))``). Vector
        scaling also takes ``hessian="sub"``: the Hessian on every
        ``hessian_stride``-th row (see :mod:`~skcalib._core.solvers.vector`)."""
        loss, grad, hess = self._sum(lambda sl: self._block_terms(sl, theta, hessian))
        return self.add_penalty(theta, loss, grad, hess)

    def loss(self, theta):
        """``J`` alone (vector scaling: a cheaper pass than :meth:`loss_grad`)."""
        if not self.diagonal:
            return self.loss_grad(theta)[0]
        (loss,) = self._sum(lambda sl: vector.block_loss(self, sl, theta))
        return self.add_penalty(theta, loss, np.zeros_like(theta))[0]

    def add_penalty(self, theta, loss, grad, hess=None):
        """Add the penalty's value, gradient and Hessian to the data terms."""
        d = theta - self.centre
        loss = float(loss) + float(np.sum(self.C * d * d))
        grad += 2.0 * self.C * d
        if hess is not None:
            hess[np.diag_indices(self.C.size)] += 2.0 * self.C.ravel()
        return loss, grad, hess

    def curvature_blocks(self, theta, full):
        """Diagonal blocks of the Hessian of ``J`` (matrix scaling), one per
        output class: shape ``(K, K+1, K+1)``, or only their diagonals,
        shape ``(K, K+1)``, when ``full`` is False (vector scaling: the
        diagonal of the Hessian, shape ``(2, K)``, always). Computed on every
        ``ceil(n / CURVATURE_ROWS)``-th row."""
        k = self.k
        stride = -(-self.X.shape[0] // CURVATURE_ROWS)
        sub = self
        if stride > 1 and (self.w is None or self.w[::stride].sum() > 0):
            w = None if self.w is None else self.w[::stride]
            sub = PenalisedNLL(
                self.X[::stride],
                self.y[::stride],
                w,
                np.zeros_like(self.C),
                diagonal=self.diagonal,
                x_scale=self.x_scale,
            )
        sub.pool = self.pool

        def block(sl):
            xb, wb, _, p, _ = sub._block(sl, theta)
            h = p * (1.0 - p)
            h *= wb
            if self.diagonal:
                return (np.vstack((np.sum(h * xb * xb, axis=0), h.sum(axis=0))),)
            if not full:
                return (np.hstack((h.T @ (xb * xb), h.sum(axis=0)[:, None])),)
            xt = np.hstack((xb, np.ones((xb.shape[0], 1))))
            return (np.stack([(xt * h[:, j : j + 1]).T @ xt for j in range(k)]),)

        (out,) = sub._sum(block)
        self.last_curvature = (out.copy(), full)  # data part: a warm start's hint
        return self.add_curvature_penalty(out, full)

    def add_curvature_penalty(self, out, full):
        """Add the penalty's curvature to :meth:`curvature_blocks` output."""
        if full and not self.diagonal:
            idx = np.arange(self.k + 1)
            out[:, idx, idx] += 2.0 * self.C
        else:
            out += 2.0 * self.C
        return out

    def gauge_fix(self, theta):
        """Remove the directions that ``J`` cannot see.

        Softmax ignores a constant added to every output, so ``J`` does not
        change when ``v_l`` is added to every entry of column ``l`` of
        ``Theta`` (vector scaling: to every entry of ``b``). Where the
        penalty leaves such a column free, its mean deviation from the
        identity map is removed: the solution is then unique.
        """
        theta = theta.copy()
        if self.diagonal:
            if not np.any(self.C[1] > 0):
                theta[1] -= theta[1].mean()
            return theta
        free = ~np.any(self.C > 0, axis=0)
        shift = (theta[:, free] - self.theta0[:, free]).mean(axis=0)
        # Scores of 1e200 give a map 1e-200 times the identity: the shift
        # would round the fit away. Such columns stay as solved.
        size = np.max(np.abs(theta[:, free]), axis=0, initial=0.0)
        shift[np.abs(shift) > 1e6 * size] = 0.0
        theta[:, free] -= shift
        return theta


def _matrix_hessian(xb, wb, p):
    """Data part of the Hessian of ``J`` in ``[W | b]`` (rows of ``Theta``
    raveled) for one block: ``sum_i s_i (diag(p_i) - p_i p_i^T) (x) (t_i
    t_i^T)`` with ``t_i = [x_i, 1]``; ``O(m K^4)`` time, ``O(m K^2)`` memory."""
    m, k = p.shape
    xt = np.hstack((xb, np.ones((m, 1))))
    kron = (p[:, :, None] * xt[:, None, :]).reshape(m, k * (k + 1))
    weighted = kron * wb
    hess = -(kron.T @ weighted)
    # diagonal blocks sum_i s_i p_ij t_i t_i^T, one per output class j
    blocks = (weighted.T @ xt).reshape(k, k + 1, k + 1)
    view = hess.reshape(k, k + 1, k, k + 1)
    idx = np.arange(k)
    view[idx, :, idx, :] += blocks
    return hess


@contextmanager
def _threads(problem, n_jobs):
    """One BLAS thread, and ``n_jobs`` threads over the row blocks."""
    with threadpool_limits(limits=1, user_api="blas"):
        if n_jobs > 1 and len(problem.blocks) > 1:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                problem.pool = pool
                try:
                    yield
                finally:
                    problem.pool = None
        else:
            yield


# ---------------------------------------------------------------- Newton
def _start(problem, start):
    """The better (lower ``J``; the identity map on a tie) of
    ``problem.theta0`` and ``start`` (scaled parameters, or None)."""
    theta = problem.theta0.copy()
    if start is None:
        return theta
    if problem.loss_grad(start)[0] < problem.loss_grad(theta)[0]:
        return np.array(start, dtype=np.float64)
    return theta


def fit_vector(problem, *, max_iter, tol, n_jobs=1, start=None):
    """Vector scaling: :func:`~skcalib._core.solvers.vector.fit` up to
    :data:`MAX_BLOCK_CLASSES` classes, above that :func:`_lbfgs`
    preconditioned by the diagonal of the Hessian (the exact ``2K x 2K``
    Hessian costs ``O(n K^2)`` per step, and its memory ``O(K^2)`` per
    thread); ``n_jobs`` threads over blocks."""
    with _threads(problem, n_jobs):
        if problem.k > MAX_BLOCK_CLASSES:
            theta = _start(problem, start)
            return _lbfgs(problem, theta, max_iter=max_iter, tol=tol)
        # the numpy objective subsamples the Hessian (others compute it all)
        sub = type(problem).loss_grad is PenalisedNLL.loss_grad
        return vector.fit(problem, start, max_iter=max_iter, tol=tol, subsample=sub)


# ------------------------------------------------------------- L-BFGS-B
def _change_of_variables(problem, theta, full):
    """``(to_theta, to_phi_grad)`` for the block-Cholesky preconditioner."""
    k = problem.k
    hint = getattr(problem, "curvature_hint", None)
    problem.curvature_hint = None
    if hint is not None and hint[1] == full:
        # A warm start: the data part of the curvature at the previous
        # solution, with this problem's penalty (it only steers the solver).
        problem.last_curvature = hint
        curv = problem.add_curvature_penalty(hint[0].copy(), full)
    else:
        curv = problem.curvature_blocks(theta, full)
    if full:
        idx = np.arange(k + 1)
        ridge = 1e-10 * np.maximum(curv[:, idx, idx].max(axis=1), 1e-2)
        curv[:, idx, idx] += ridge[:, None]
        # L^{-1} block by block (LAPACK's triangular inverse: a third of the
        # time of a general inverse)
        lower_inv = np.stack([dtrtri(f, lower=1)[0] for f in np.linalg.cholesky(curv)])
        upper_inv = np.ascontiguousarray(np.swapaxes(lower_inv, 1, 2))

        def to_theta(phi):  # theta_k = start_k + L_k^{-T} phi_k
            return theta + (upper_inv @ phi.reshape(k, k + 1, 1))[:, :, 0]

        def to_phi_grad(g):  # g_phi_k = L_k^{-1} g_k
            return (lower_inv @ g[:, :, None])[:, :, 0].ravel()

    else:
        d = 1.0 / np.sqrt(curv + 1e-10 * max(float(curv.max()), 1e-2))

        def to_theta(phi):
            return theta + d * phi.reshape(theta.shape)

        def to_phi_grad(g):
            return (d * g).ravel()

    return to_theta, to_phi_grad


def fit_matrix(problem, *, max_iter, tol, n_jobs=1, start=None):
    """Matrix scaling: :func:`_newton` up to :data:`MAX_NEWTON_CLASSES`
    classes (``K (K + 1)`` parameters: the dense Hessian costs ``O(n K^4)``
    per step), above that :func:`_lbfgs`; ``n_jobs`` threads over blocks."""
    with _threads(problem, n_jobs):
        theta = _start(problem, start)
        if problem.k > MAX_NEWTON_CLASSES:
            return _lbfgs(problem, theta, max_iter=max_iter, tol=tol)
        return _newton(problem, theta, max_iter=max_iter, tol=tol)


def _has_hint(problem):
    """Whether a warm start left a curvature of the right form."""
    hint = getattr(problem, "curvature_hint", None)
    full = problem.k <= MAX_BLOCK_CLASSES and not problem.diagonal
    return hint is not None and hint[1] == full


def _lbfgs(problem, theta, *, max_iter, tol):
    """Block-preconditioned L-BFGS-B with restarts (matrix scaling, and
    vector scaling with many classes).

    A cold start refreshes the preconditioner (and restarts L-BFGS) each
    time the gradient has shrunk by :data:`REFRESH_FACTOR`. A warm start
    with a curvature hint (the previous fit's, on a path of strengths)
    keeps that preconditioner, and the L-BFGS memory, in one run to ``tol``
    of at most :data:`WARM_PASS_ITER` iterations; only then does it refresh
    as a cold start. The data curvature changes little between neighbouring
    fits, and recomputing it (``O(n K^3)``) cost more than the rest of a
    path fit.

    Returns
    -------
    theta : ndarray of shape (K, K + 1) or (2, K)
        ``[W | b]`` (vector scaling ``(w, b)``) on the original features.
    n_iter : int
        L-BFGS iterations, over all restarts.
    status : {"converged", "max_iter", "precision"}
        ``"precision"``: L-BFGS can no longer decrease ``J`` in float64.
    gmax : float
        Largest absolute entry of the (scaled) gradient at the end.
    """
    full = problem.k <= MAX_BLOCK_CLASSES and not problem.diagonal
    loss, grad, _ = problem.loss_grad(theta)
    gmax = float(np.max(np.abs(grad)))
    n_iter = 0
    status = "converged" if gmax <= tol else "max_iter"
    while status == "max_iter" and n_iter < max_iter:
        warm = WARM_PASS_ITER > 0 and _has_hint(problem)
        to_theta, to_phi_grad = _change_of_variables(problem, theta, full)
        best = {"loss": loss, "theta": theta, "gmax": gmax}
        target = tol if warm else max(tol, REFRESH_FACTOR * gmax)
        budget = max_iter - n_iter
        if warm:
            budget = min(budget, WARM_PASS_ITER)
        reached, iterations = _lbfgs_pass(
            problem, to_theta, to_phi_grad, best, target, budget
        )
        n_iter += iterations
        progress = best["loss"] < loss
        theta, loss, gmax = best["theta"], best["loss"], best["gmax"]
        if gmax <= tol:
            status = "converged"
        elif not reached and not progress:
            status = "precision"
    theta = problem.original(problem.gauge_fix(theta))
    return theta, n_iter, status, gmax


def _lbfgs_pass(problem, to_theta, to_phi_grad, best, target, budget):
    """One L-BFGS-B run in the preconditioned variables from ``best``'s
    point, for at most ``budget`` iterations, until the gradient is at most
    ``target`` (``best`` is updated with the lowest ``J`` seen). Returns
    ``(reached, iterations)``."""

    def fun(phi):
        th = to_theta(phi)
        f, g, _ = problem.loss_grad(th)
        if f <= best["loss"]:
            gm = float(np.max(np.abs(g)))
            best.update(loss=f, theta=th, gmax=gm)
            if gm <= target:
                raise _Reached
        return f, to_phi_grad(g)

    iterations = [0]

    def count(_xk):
        iterations[0] += 1

    reached = False
    try:
        minimize(
            fun,
            np.zeros(best["theta"].size),
            jac=True,
            method="L-BFGS-B",
            callback=count,
            options={
                "maxiter": budget,
                "maxfun": 20 * budget + 20,
                "ftol": 0.0,
                "gtol": 0.0,
            },
        )
    except _Reached:
        reached = True
        iterations[0] += 1  # the iteration that found the point
    return reached, max(1, iterations[0])
