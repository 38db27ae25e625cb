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
