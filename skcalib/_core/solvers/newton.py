"""Damped Newton's method for the small convex problems of Platt and beta
calibration (two or three parameters, one pass over the data per step), the
polished Newton's method of vector and matrix scaling
(:func:`polished_newton`), and the separation check."""

import numpy as np

__all__ = []


def damped_newton(terms, start, *, max_iter, tol):
    """Minimise a smooth convex function by Newton steps with backtracking.

    Each iteration takes the minimum-norm Newton step (the pseudo-inverse of
    the Jacobi-scaled Hessian, eigenvalues below ``1e-12`` of the largest
    dropped), so a direction the data do not see (the slope of constant
    scores beside the intercept) is never moved along: the result is then
    the start's value there, whatever the order or the weight-0 rows of the
    data, instead of rounding noise amplified by a tiny ridge. It halves the
    step until the Armijo condition holds. It stops when the
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
        step = -_pinv_solve(hess, grad)
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


def _pinv_solve(hess, grad):
    """``pinv(hess) @ grad`` for a symmetric positive semi-definite ``hess``,
    through its Jacobi-scaled eigen-decomposition (relative cut 1e-12)."""
    d = np.sqrt(np.maximum(np.diag(hess), 0.0))
    d[d == 0] = 1.0
    scaled = hess / d[:, None] / d[None, :]
    values, vectors = np.linalg.eigh(scaled)
    keep = values > 1e-12 * max(values.max(), 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
    return (vectors @ (inv * (vectors.T @ (grad / d)))) / d


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


#: Newton steps taken after the tolerance is met (see :func:`polished_newton`).
POLISH_STEPS = 3

#: Relative rounding of ``J`` (a sum over blocks of rows): a polishing step
#: may raise it by this much times ``max(1, |J|)``.
ROUNDING = 1e-14

#: After Jacobi scaling, eigenvalues of the Hessian below this times the
#: largest are directions ``J`` cannot see (see :func:`newton_step`).
NULL_CURVATURE = 1e-10


def newton_step(hess, grad):
    """The Newton step ``-H^+ g`` (``g`` raveled): ``H`` scaled to a unit
    diagonal (Jacobi), then solved on its eigenvectors of eigenvalue above
    :data:`NULL_CURVATURE` times the largest.

    Directions that ``J`` cannot see (the softmax gauge, a constant feature
    beside the intercept, a parameter that no row of positive weight
    reaches) have zero curvature: their gradient is rounding noise, which a
    ridge would turn into a step of arbitrary size that depends on the
    order of the rows. The pseudo-inverse takes no step along them, so the
    iterate keeps the start's component there: the same for any order or
    scale of the rows. The Jacobi scaling makes the cut independent of the
    scale of each parameter (logits of 1e4 beside logits of 1 give
    curvatures 1e8 apart)."""
    diag = np.diag(hess)
    scale = np.zeros_like(diag)
    np.divide(1.0, np.sqrt(diag), out=scale, where=diag > 0)
    h = hess * scale[:, None]
    h *= scale[None, :]
    vals, vecs = np.linalg.eigh(h)
    keep = vals > NULL_CURVATURE * max(float(vals[-1]), 0.0)
    vecs = vecs[:, keep]
    gs = grad * scale
    return -scale * (vecs @ ((vecs.T @ gs) / vals[keep]))


def polished_newton(problem, theta, *, max_iter, tol):
    """Newton's method with a backtracking line search, then polishing.

    Iterates until the largest gradient entry is at most ``tol`` (or the
    Newton decrement is at the rounding level of ``J``), then takes up to
    :data:`POLISH_STEPS` further Newton steps (full steps, kept while ``J``
    does not rise beyond its rounding). Newton's method converges
    quadratically, so from a gradient of ``tol`` two steps reach the
    optimum to float64 rounding: the fit no longer depends on where the
    tolerance happened to stop the iterations, which depends on the order
    and the scale of the rows. Without polishing, a gradient of ``tol``
    leaves the parameters up to ``tol / c`` from the optimum along a
    direction of curvature ``c`` (``c`` ~ 1e-8 along the ``W`` entries of
    logits of ~1 divided by ``x_scale = 1e4``), and predictions at scores
    of 1e4 amplify that by 1e4.

    Returns
    -------
    theta : ndarray of the shape of ``problem.theta0``
        The map on the original features.
    n_iter : int
        Newton steps taken until the tolerance was met (polishing steps
        not included).
    status : {"converged", "max_iter", "precision"}
        ``"precision"``: no step decreases ``J`` in float64 any more.
    gmax : float
        Largest absolute entry of the (scaled) gradient at the end.
    """
    loss, grad, hess = problem.loss_grad(theta, hessian=True)
    n_iter = 0
    status = "max_iter"
    polish = 0
    while True:
        converged = status == "converged"
        if not converged and np.max(np.abs(grad)) <= tol:
            status = "converged"
            continue
        if converged and polish >= POLISH_STEPS:
            break
        if not converged and n_iter >= max_iter:
            break
        g = grad.ravel()
        step = newton_step(hess, g)
        decrement = -g @ step
        slack = ROUNDING * max(1.0, abs(loss))
        if converged:
            if not decrement > 0:
                break
            new = theta + step.reshape(theta.shape)
            new_loss, new_grad, new_hess = problem.loss_grad(new, hessian=True)
            if not new_loss <= loss + slack:
                break
            polish += 1  # not counted in n_iter: the tolerance was met
            theta, loss, grad, hess = new, new_loss, new_grad, new_hess
            continue
        if not decrement > 1e-15 * max(1.0, abs(loss)):
            # J is at its minimum to rounding: polish (pure Newton steps
            # need no decrease); "converged" only if the gradient then is
            # at most tol (below)
            status = "converged" if decrement >= 0 else "precision"
            continue
        n_iter += 1
        step = step.reshape(theta.shape)
        alpha = 1.0
        while True:
            new = theta + alpha * step
            new_loss, new_grad, new_hess = problem.loss_grad(new, hessian=True)
            if new_loss <= loss - 1e-4 * alpha * decrement or alpha < 1e-10:
                break
            alpha *= 0.5
        if not new_loss <= loss:
            status = "precision"
            break
        theta, loss, grad, hess = new, new_loss, new_grad, new_hess
    gmax = float(np.max(np.abs(grad)))
    if status == "converged" and not gmax <= tol:
        status = "precision"  # never "converged" above the tolerance
    return problem.original(problem.gauge_fix(theta)), n_iter, status, gmax
