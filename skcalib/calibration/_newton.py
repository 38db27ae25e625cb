"""Damped Newton's method for the small convex problems of Platt and beta
calibration (two or three parameters, one pass over the data per step)."""

import numpy as np

__all__ = []


def damped_newton(terms, start, *, max_iter, tol):
    """Minimise a smooth convex function by Newton steps with backtracking.

    Each iteration solves the Newton system (with a ridge of ``1e-12`` of
    the Hessian's trace, so constant features do not make it singular) and
    halves the step until the Armijo condition holds. It stops when the
    Newton decrement is at the level of float64 rounding of the loss, or when
    an accepted step is below ``tol * (1 + max|params|)``.

    Parameters
    ----------
    terms : callable
        ``terms(params) -> (loss, gradient, hessian)``.
    start : ndarray of shape (d,)
        Starting point.
    max_iter : int
        Largest number of Newton steps.
    tol : float
        Relative step size at which to stop.

    Returns
    -------
    params : ndarray of shape (d,)
    n_iter : int
    converged : bool
    loss : float
        The loss at ``params``.
    """
    params = np.asarray(start, dtype=np.float64)
    loss, grad, hess = terms(params)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        hess[np.diag_indices(params.size)] += 1e-12 * max(1.0, hess.trace())
        step = -np.linalg.solve(hess, grad)
        decrement = -grad @ step
        if decrement <= 1e-15 * max(1.0, abs(loss)):
            converged = True  # at the optimum to machine precision
            break
        alpha = 1.0
        while True:
            new = params + alpha * step
            new_loss, new_grad, new_hess = terms(new)
            if new_loss <= loss - 1e-4 * alpha * decrement or alpha < 1e-10:
                break
            alpha *= 0.5
        done = np.max(np.abs(alpha * step)) <= tol * (1.0 + np.max(np.abs(params)))
        params, loss, grad, hess = new, new_loss, new_grad, new_hess
        if done:
            converged = True
            break
    return params, n_iter, converged, loss


#: The separation check solves a linear program only up to this many
#: entries in its constraint matrix (margins times free parameters).
SEPARATION_MAX_ENTRIES = 4_000_000


def separation(margins):
    """Whether a direction makes every margin non-negative and some positive.

    ``margins`` (shape ``(m, d)``) holds, for each row and competing class,
    the derivative of that row's margin (its true class's linear score
    minus the competitor's) along each free parameter. A logistic or
    multinomial likelihood has a maximum (finite parameters) exactly when no
    direction ``v`` has ``margins @ v >= 0`` with some entry positive
    (Albert & Anderson 1984: complete or quasi-complete separation). The
    linear program ``max sum(margins @ v)`` subject to ``margins @ v >= 0``,
    ``-1 <= v <= 1`` (columns scaled to a largest entry of 1) decides it;
    its answer does not depend on the order of the rows.

    Returns
    -------
    n_separated : int or None
        The number of margins that the best direction makes positive (0: no
        separation), or None when the program is larger than
        :data:`SEPARATION_MAX_ENTRIES` or could not be solved.
    """
    from scipy.optimize import linprog

    m, d = margins.shape
    if m == 0 or d == 0:
        return 0
    if m * d > SEPARATION_MAX_ENTRIES:
        return None
    col = np.max(np.abs(margins), axis=0)
    keep = col > 0
    if not keep.any():
        return 0
    a = margins[:, keep] / col[keep]
    res = linprog(
        -a.sum(axis=0),
        A_ub=-a,
        b_ub=np.zeros(m),
        bounds=(-1.0, 1.0),
        method="highs",
    )
    if res.status != 0:
        return None
    value = a @ res.x
    # HiGHS meets constraints to about 1e-7: a margin counts above 1e-6.
    if value.min() < -1e-6:
        return None
    return int(np.count_nonzero(value > 1e-6))
