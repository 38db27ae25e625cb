"""Vector scaling's objective terms and Newton solver (``2K`` parameters).

The terms of :class:`~skcalib._core.solvers.linear.PenalisedNLL` for the
diagonal map ``a_i = w * x_i + b``, block by block, with the costs that
matter at ``n = 1e6``, ``K = 100`` in mind:

* one pass over a block forms ``e = exp(a - max a)`` (``a`` formed from
  the raw block in one multiplication); the gradient is
  ``sum_i s_i e_ij x_ij / S_i - sum_{i: y_i = j} s_i x_ij`` (and the same
  without ``x``), two matrix-vector products and a class count per block,
  instead of a residual matrix and its products;
* the Hessian is ``D - M^T M`` with ``M = sqrt(s) [p * x, p]`` (``n x 2K``)
  and ``D`` its ``2 x 2`` blocks per class: the ``O(n K^2)`` part is three
  ``K x K`` products (the fourth is a transpose);
* :func:`lazy_newton` computes that ``O(n K^2)`` Hessian on every
  ``hessian_stride``-th row of each block (:data:`SUB_HESSIAN_ROWS` rows in
  all) while the gradient is large, where a Newton step on it is as good as
  one on the exact Hessian, and the exact Hessian only once the gradient is
  at most :data:`EXACT_HESSIAN_GRADIENT`; that one is kept for the last
  steps and the polish (the Hessian hardly moves there), which then cost a
  gradient pass each.

The fit is that of Newton's method on the exact Hessian: every step is
accepted on the exact ``J`` (a backtracking line search), the stopping rule
is the exact gradient, and the last steps and the polish use the exact
Hessian, whose pseudo-inverse moves along no direction that ``J`` cannot see
(:func:`~skcalib._core.solvers.newton.newton_step`).
"""

import numpy as np

from skcalib._core.solvers.newton import POLISH_STEPS, ROUNDING, newton_step

__all__ = []

#: While the gradient is large, the Hessian is computed on about this many
#: rows (every ``ceil(n / SUB_HESSIAN_ROWS)``-th row of each block).
SUB_HESSIAN_ROWS = 65536

#: The exact Hessian is computed once the largest gradient entry is at most
#: this (scaled features, weights of sum 1), and kept for the last steps.
EXACT_HESSIAN_GRADIENT = 1e-6

#: With a kept exact Hessian, a step that shrinks the largest gradient entry
#: less than this much makes the solver compute it anew.
REFRESH_RATIO = 1e-2

#: A Newton step from a point whose largest gradient entry is at most
#: ``EXACT_AHEAD * EXACT_HESSIAN_GRADIENT`` computes the exact Hessian at
#: the new point in the same pass (it is likely to be needed there).
EXACT_AHEAD = 100.0

#: Polishing stops before a step smaller than this times ``1 + max |theta|``.
POLISH_STEP = 1e-13


def hessian_stride(n):
    """Row stride of the subsampled Hessian of ``n`` rows (1: all rows)."""
    return max(1, -(-n // SUB_HESSIAN_ROWS))


def block_loss(problem, sl, theta):
    """Data part of ``J`` on one block of rows (vector scaling)."""
    a = _scores(problem, sl, theta)
    ay = a[np.arange(a.shape[0]), problem.y[sl]]
    np.exp(a, out=a)
    li = np.log(a.sum(axis=1))
    li -= ay
    if problem.w is None:
        return (float(li.sum() * problem.w_const),)
    return (float(li @ problem.w[sl]),)


def _scores(problem, sl, theta):
    """``a - max(a)`` by rows, with ``a = x' w' + b`` formed from the raw
    features in one pass (``x' w' = x (w' / x_scale)``)."""
    a = np.multiply(problem.X[sl], theta[0] / problem.x_scale, dtype=np.float64)
    a += theta[1]
    a -= a.max(axis=1, keepdims=True)
    return a


def block_terms(problem, sl, theta, hessian):
    """Loss, gradient and Hessian sums of one block (vector scaling).

    ``hessian``: False (none), True (exact) or ``"sub"`` (on every
    ``problem.hessian_stride``-th row of the block, scaled to the block's
    weight).
    """
    k, x_inv = problem.k, 1.0 / problem.x_scale
    xb, yb = problem.X[sl], problem.y[sl]
    e = _scores(problem, sl, theta)
    m = e.shape[0]
    rows = np.arange(m)
    ay = e[rows, yb]
    np.exp(e, out=e)
    s = e.sum(axis=1)
    li = np.log(s)
    li -= ay
    if problem.w is None:
        wb = np.full(m, problem.w_const)
        loss = float(li.sum() * problem.w_const)
    else:
        wb = problem.w[sl]
        loss = float(li @ wb)
    q = wb / s  # weight / sum(e): s_i p_ij = q_i e_ij
    stride = getattr(problem, "hessian_stride", 1) if hessian == "sub" else 1
    keep = None
    if hessian:  # e before it becomes e * x: every stride-th row (or all,
        # when those weigh nothing)
        sub = slice(None, None, stride)
        if stride > 1 and not wb[sub].sum() > 0:
            sub = slice(None)
        keep = (e[sub].copy(), sub)
    pb = q @ e  # sum_i s_i p_ij
    e *= xb
    pw = (q @ e) * x_inv  # sum_i s_i p_ij x'_ij
    grad = np.vstack(
        (
            pw - np.bincount(yb, weights=wb * xb[rows, yb], minlength=k) * x_inv,
            pb - np.bincount(yb, weights=wb, minlength=k),
        )
    )
    hess = None
    if hessian:
        e_sub, sub = keep
        xs = np.multiply(xb[sub], x_inv, dtype=np.float64)
        hess = _block_hessian(xs, e_sub, wb[sub], s[sub], float(wb.sum()))
    return loss, grad, hess


def _block_hessian(xs, e, wb, s, w_block):
    """``D - M^T M`` (see the module) on the rows given, scaled by the
    block's weight ``w_block`` over theirs: ``xs`` the scaled features,
    ``e`` the exponentials of the centred scores, ``s`` their row sums."""
    k = xs.shape[1]
    w_rows = float(wb.sum())
    if w_rows > 0 and w_rows != w_block:
        wb = wb * (w_block / w_rows)
    q = wb / s
    root = np.sqrt(wb) / s
    u = e * root[:, None]  # sqrt(s_i) p_i
    v = u * xs  # sqrt(s_i) p_i x'_i
    hess = np.empty((2 * k, 2 * k))
    hess[:k, :k] = v.T @ v
    hess[:k, k:] = v.T @ u
    hess[k:, :k] = hess[:k, k:].T
    hess[k:, k:] = u.T @ u
    np.negative(hess, out=hess)
    ex = e * xs
    idx = np.arange(k)
    hess[idx, idx] += q @ (ex * xs)
    hess[idx + k, idx + k] += q @ e
    pw = q @ ex
    hess[idx, idx + k] += pw
    hess[idx + k, idx] += pw
    return hess


def _negligible(step, theta):
    """Whether the step moves no entry by more than :data:`POLISH_STEP`
    times ``1 + max |theta|``: further polishing would change the fit at the
    level of rounding only."""
    return float(np.max(np.abs(step))) <= POLISH_STEP * (
        1.0 + float(np.max(np.abs(theta)))
    )


class _State:
    """The iterate of :func:`lazy_newton` and what is known there."""

    def __init__(self, theta, terms, exact):
        self.theta = theta
        self.loss, self.grad, self.hess = terms
        self.exact = exact  # hess is the exact Hessian (maybe of an earlier point)
        self.here = True  # hess was computed at theta

    def refresh(self, problem):
        """The exact Hessian at the current point (one more pass)."""
        self.hess = problem.loss_grad(self.theta, hessian=True)[2]
        self.exact = self.here = True

    @property
    def gmax(self):
        return float(np.max(np.abs(self.grad)))

    def move(self, theta, terms, keep_hessian):
        hess = self.hess if keep_hessian else terms[2]
        self.theta, (self.loss, self.grad, _) = theta, terms
        self.hess, self.here = hess, not keep_hessian


def fit(problem, start, *, max_iter, tol, subsample):
    """:func:`lazy_newton` from the better (lower ``J``; the identity map
    on a tie) of ``problem.theta0`` and ``start`` (scaled parameters, or
    None), as :func:`skcalib._core.solvers.linear._start` chooses, from one
    pass for the identity's ``J`` alone and the first Newton pass at
    ``start``. ``subsample``: ``problem`` is the numpy objective, which
    has the cheaper :meth:`loss` and ``hessian="sub"``."""
    numpy, subsample = subsample, subsample and problem.hessian_stride > 1
    theta, first = problem.theta0.copy(), None
    if start is not None:
        start = np.array(start, dtype=np.float64)
        first = problem.loss_grad(start, hessian="sub" if subsample else True)
        own = problem.loss(theta) if numpy else problem.loss_grad(theta)[0]
        if first[0] < own:
            theta = start
        else:
            first = None
    return lazy_newton(
        problem, theta, max_iter=max_iter, tol=tol, subsample=subsample, first=first
    )


def lazy_newton(problem, theta, *, max_iter, tol, subsample, first=None):
    """:func:`~skcalib._core.solvers.newton.polished_newton` with the
    Hessian subsampled while the gradient is large and the exact one kept
    for the last steps (see the module).

    ``subsample``: whether ``problem.loss_grad`` understands
    ``hessian="sub"``; otherwise the exact Hessian is computed at every
    point until it is kept. ``first``: the terms at ``theta``, computed
    with ``hessian="sub"`` (or True), if at hand. Returns as
    ``polished_newton``.
    """
    far = "sub" if subsample else True
    if first is None:
        first = problem.loss_grad(theta, hessian=far)
    st = _State(theta, first, not subsample)
    n_iter, polish, status = 0, 0, "max_iter"
    while True:
        converged = status == "converged"
        if not converged and st.gmax <= tol:
            status = "converged"
            continue
        if (converged and polish >= POLISH_STEPS) or (
            not converged and n_iter >= max_iter
        ):
            break
        final = converged or st.gmax <= EXACT_HESSIAN_GRADIENT
        if final and not st.exact:
            st.refresh(problem)
        g = st.grad.ravel()
        step = newton_step(st.hess, g).reshape(st.theta.shape)
        decrement = -g @ step.ravel()
        if converged:
            if not decrement > 0 or _negligible(step, st.theta):
                break
            new = st.theta + step
            terms = problem.loss_grad(new)
            if not terms[0] <= st.loss + ROUNDING * max(1.0, abs(st.loss)):
                break
            polish += 1  # not counted in n_iter: the tolerance was met
            st.move(new, terms, keep_hessian=True)
            continue
        if not decrement > 1e-15 * max(1.0, abs(st.loss)):
            if not st.exact:  # judge on the exact Hessian
                st.refresh(problem)
                continue
            # J is at its minimum to rounding: polish; "converged" only if
            # the gradient then is at most tol (below)
            status = "converged" if decrement >= 0 else "precision"
            continue
        n_iter += 1
        if final:
            ask = False  # keep the exact Hessian
        else:
            ask = True if st.gmax <= EXACT_AHEAD * EXACT_HESSIAN_GRADIENT else far
        new, terms = _line_search(problem, st, step, decrement, ask)
        if not terms[0] <= st.loss:
            if not (st.exact and st.here):  # retry on the exact Hessian here
                st.refresh(problem)
                continue
            status = "precision"
            break
        gmax = st.gmax
        st.move(new, terms, keep_hessian=not ask)
        if ask:
            st.exact = ask is True
        elif st.gmax > REFRESH_RATIO * gmax:
            st.exact = False  # computed anew at the next step
    gmax = st.gmax
    if status == "converged" and not gmax <= tol:
        status = "precision"  # never "converged" above the tolerance
    theta = problem.original(problem.gauge_fix(st.theta))
    return theta, n_iter, status, gmax


def _line_search(problem, st, step, decrement, hessian):
    """Backtracking (Armijo) along ``step`` from ``st``; returns the point
    and its terms (Hessian as ``hessian`` asks)."""
    alpha = 1.0
    while True:
        new = st.theta + alpha * step
        terms = problem.loss_grad(new, hessian=hessian)
        if terms[0] <= st.loss - 1e-4 * alpha * decrement or alpha < 1e-10:
            return new, terms
        alpha *= 0.5
