"""Spline calibration: a penalised logistic cubic spline of the log-odds
(after Lucena 2018), its penalty chosen by approximate leave-one-out."""

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

from skcalib._core.compat import Interval, StrOptions
from skcalib._core.solvers.logistic import logistic_pointwise
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator
from skcalib.calibration._spline_basis import (
    BandedDesign,
    SplineBasis,
    weighted_knots,
)

__all__ = ["SplineCalibrator"]

#: Penalties tried by ``penalty="auto"``, largest first (each fit starts from
#: the previous one). ``1e4`` is a straight line (Platt scaling) to 1e-11 on
#: the data sets measured. Forest probabilities (pycalib's KITTI and PCam
#: random and Mondrian forests: point masses at 0 and 1, log-odds over
#: +-27.6) need ``1e-8`` to ``1e-9``: a grid stopping at ``1e-6`` lost to
#: splinecalib by up to 10% in held-out NLL there. The smallest estimate
#: alone then over-fits small sets (on mozilla4, 3109 rows, it chose 1e-8
#: and the held-out log-loss rose from 0.1368 to 0.1376): the choice takes
#: the largest penalty within one standard error (:func:`one_se_choice`).
PENALTY_GRID = np.logspace(4, -10, 15)

#: A leave-one-out log-loss above this many nats per row means the one-step
#: approximation failed (scores far outside the bulk, e.g. +-1e4 logits among
#: +-5, make the leverage of a row blow up): its values are then rounding
#: noise that depends on the row order, so the strongest penalty of the grid
#: (closest to Platt scaling) is taken, with a warning.
LOO_UNRELIABLE = 10.0


# ------------------------------------------------------------ the fit of one
def _solve(hess, grad):
    """``hess^-1 grad``, Jacobi-scaled."""
    d = np.sqrt(np.maximum(np.diag(hess), 1e-300))
    scaled = hess / d[:, None] / d[None, :]
    try:
        return np.linalg.solve(scaled, grad / d) / d
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(scaled, grad / d, rcond=None)[0] / d


def _penalised_terms(theta, *, design, tr, t, w, omega, lam):
    """Loss, gradient and Hessian in ``theta`` (coefficients ``tr @ theta``)
    of the penalised fit on the banded spline ``design``."""
    loss, r, h = logistic_pointwise(design.matvec(tr @ theta), t, w)
    pen = omega @ theta
    return (
        loss + 0.5 * lam * float(theta @ pen),
        tr.T @ design.rmatvec(r) + lam * pen,
        tr.T @ design.gram(h) @ tr + lam * omega,
    )


def penalty_coordinates(omega, monotonic):
    """Coordinates ``theta`` of the coefficients, ``c = T theta``, in which
    the fit is solved: returns ``(T, P, bounded)`` with ``P = T^T Omega T``
    the penalty in ``theta`` and ``bounded`` the coordinates kept >= 0.

    * free map: ``T`` from the eigenvectors of ``Omega``, scaled so that
      ``P`` is the identity on the curved directions and 0 on the straight
      lines the penalty leaves free. The data's curvature along the lines
      then never adds to the penalty's (a penalty of 1e8 would otherwise
      round it away) and the Jacobi-scaled Newton system stays well
      conditioned for any penalty;
    * ``monotonic``: ``T`` is lower-triangular ones, ``theta`` the first
      coefficient and the increments, ``theta[1:] >= 0`` (non-decreasing
      B-spline coefficients make a non-decreasing spline).
    """
    n = omega.shape[0]
    if monotonic:
        tri = np.tril(np.ones((n, n)))
        return tri, tri.T @ omega @ tri, np.r_[False, np.ones(n - 1, dtype=bool)]
    values, vectors = np.linalg.eigh(omega)
    curved = values > 1e-10 * max(float(values.max(initial=0.0)), 0.0)
    curved &= values > 0
    scale = np.where(curved, 1.0 / np.sqrt(np.where(curved, values, 1.0)), 1.0)
    return vectors * scale, np.diag(curved.astype(np.float64)), np.zeros(n, bool)


def projected_newton(terms, theta, bounded, *, max_iter, tol):
    """Minimise a smooth convex function subject to ``theta[bounded] >= 0`` by
    projected Newton steps (Bertsekas 1982): coordinates at their bound
    whose gradient pushes outwards are held, the others take the Newton
    step of their block of the Hessian; the step is projected on the bounds
    and halved until the Armijo condition holds. Stops when the projected
    step is below ``tol * (1 + max|theta|)`` or the decrease of a full step
    is below ``1e-9`` of the loss. With nothing bounded this is Newton's
    method with a line search; the step solves the full Hessian (no
    eigenvalue cut: a penalty of 1e8 dwarfs the data's curvature along the
    straight lines it leaves free, which a relative cut would drop).
    Returns ``(theta, n_iter, converged)``."""
    loss, grad, hess = terms(theta)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        scale = 1.0 + np.max(np.abs(theta))
        held = bounded & (theta <= 1e-12 * scale) & (grad > 0)
        free = ~held
        step = np.zeros_like(theta)
        step[free] = -_solve(hess[np.ix_(free, free)], grad[free])
        level = max(1.0, abs(loss))
        if -(grad @ step) <= 1e-15 * level:
            return theta, n_iter, True
        # Near the optimum (a decrease at 1e-9 of the loss) the full step is
        # taken and ends the iterations: Newton's quadratic convergence puts
        # it at the optimum to rounding, where the loss cannot resolve an
        # Armijo test and the step, in the directions the penalty leaves
        # free, is at the rounding of an ill-conditioned solve.
        alpha = 1.0
        while True:
            new = theta + alpha * step
            new[bounded] = np.maximum(new[bounded], 0.0)
            new_loss, new_grad, new_hess = terms(new)
            decrease = grad @ (theta - new)
            if (
                new_loss <= loss - 1e-4 * decrease
                or (alpha == 1.0 and decrease <= 1e-9 * level)
                or alpha < 1e-10
            ):
                break
            alpha *= 0.5
        moved = np.max(np.abs(new - theta))
        theta, loss, grad, hess = new, new_loss, new_grad, new_hess
        if moved <= tol * scale or (alpha == 1.0 and decrease <= 1e-9 * level):
            return theta, n_iter, True
    return theta, n_iter, False


def loo_log_loss(
    design, tr, y, t, w, theta, omega, lam, free=None, unit=1.0, per_row=False
):
    """Approximate leave-one-out log-loss of the penalised fit ``theta``
    (coefficients ``tr @ theta`` on the banded spline ``design``).

    Removing row ``i`` (one unit of its weight ``w_i``, or all of it when
    ``w_i < 1``: ``r_i = min(w_i, 1)``) moves its log-odds from ``z_i`` to

    .. math::

        z_{-i} \\approx z_i + \\frac{r_i (p_i - t_i) a_i}{1 - r_i v_i a_i},
        \\qquad a_i = x_i^T H^{-1} x_i,\\ v_i = p_i (1 - p_i),

    one Newton step from the full fit with the Hessian ``H`` of the full
    objective updated by Sherman-Morrison (Rad & Maleki 2020). The targets
    ``t`` and the penalty are those of the full fit. Returns the weighted
    mean of ``-log`` of the left-out probability of the 0/1 label ``y``.
    ``free``: the coordinates of ``theta`` that move (monotone fits: those
    whose constraint is inactive); None: all. With ``x_i = T_f^T b_i``
    (``b_i`` the row of the B-spline design, ``T_f`` the free columns of
    ``tr``), ``a_i = b_i^T M b_i`` for ``M = T_f H^+ T_f^T`` (m, m): a
    band's products per row. ``unit``: the weight of one row in the units
    of ``w`` (weights divided by ``c`` give ``unit = 1 / c``: the same
    estimate). ``per_row``: also return each row's left-out ``-log``
    probability (unweighted), as ``(mean, rows)``.
    """
    z = design.matvec(tr @ theta)
    _, _, h = logistic_pointwise(z, t, None)  # h = v = p (1 - p)
    p = expit(z)
    tf = tr if free is None else tr[:, free]
    om = omega if free is None else omega[np.ix_(free, free)]
    ww = np.ones_like(z) if w is None else w
    hess = tf.T @ design.gram(ww * h) @ tf + lam * om
    a = design.quadratic(tf @ np.linalg.pinv(hess, hermitian=True) @ tf.T)
    r = np.minimum(ww, unit)
    denom = np.maximum(1.0 - r * h * a, 1e-12)
    z_loo = z + r * (p - t) * a / denom
    rows = np.logaddexp(0.0, z_loo) - np.where(y, z_loo, 0.0)
    mean = float(ww @ rows) / float(ww.sum())
    return (mean, rows) if per_row else mean


def _counts_and_targets(pos, w):
    """Weights in fit units, one row's weight in them, Platt's targets, the
    total weight and the starting log-odds.

    The fit is the same in any unit of weight (its penalty is per unit of
    total weight), so weights whose largest is beyond ``2**+-64`` are
    divided by a power of two that brings it into [0.5, 1): weighted sums
    of rows at logits +-1e4 stay finite up to the float64 range (exact, no
    rounding). Platt's
    targets take the weights as counts: with one row weighing ``unit``,
    ``(n + 1) / (n + 2) = (n_u + unit) / (n_u + 2 unit)`` for ``n = n_u /
    unit``. Weights all below ``2**-1020`` are counts of about 0: targets
    1/2 and start 0, the limits of those formulas.
    """
    unit = 1.0
    exponent = 0 if w is None or not w.size else int(np.frexp(w.max())[1])
    if abs(exponent) > 64:  # weights as given where no sum can overflow
        w = np.ldexp(w, -exponent)
        unit = float(np.ldexp(1.0, -exponent)) if exponent > -1020 else np.inf
    n_pos = float(np.count_nonzero(pos) if w is None else w[pos].sum())
    n_neg = float(pos.size - n_pos if w is None else w[~pos].sum())
    if np.isinf(unit):
        return w, unit, np.full(pos.size, 0.5), n_pos + n_neg, 0.0
    t = np.where(
        pos, (n_pos + unit) / (n_pos + 2.0 * unit), unit / (n_neg + 2.0 * unit)
    )
    return w, unit, t, n_pos + n_neg, float(np.log((n_pos + unit) / (n_neg + unit)))


def one_se_choice(losses, row_losses, w, n):
    """Index of the largest penalty (the grid runs from the largest) whose
    leave-one-out log-loss is within one standard error of the smallest:
    the one-standard-error rule of Breiman et al. (Hastie, Tibshirani &
    Friedman 2009, section 7.10). The standard error is that of the mean
    of the row-wise differences with the best penalty, over ``n`` rows
    (the weight total: the weights are counts). The smallest loss alone
    over-fits small sets, where the estimates of neighbouring penalties
    differ by less than their noise.
    """
    losses = np.asarray(losses, dtype=np.float64)
    best = int(np.argmin(losses))
    diff = np.asarray(row_losses) - row_losses[best]  # (n_grid, n_rows)
    ww = np.ones(diff.shape[1]) if w is None else w
    mean = diff @ ww / ww.sum()
    var = ((diff - mean[:, None]) ** 2) @ ww / ww.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(var / n) if n > 0 else np.full_like(var, np.inf)
    within = np.flatnonzero(losses - losses[best] <= se)
    return int(within[0]) if within.size else best


def fit_spline_map(score, pos, w, *, n_knots, penalty, monotonic, max_iter, tol):
    """Fit one map: knots, Platt's targets, the penalty (given or chosen
    from :data:`PENALTY_GRID` by :func:`loo_log_loss`) and the spline.

    Returns ``(fitted, converged)`` with ``fitted`` a dict of ``knots``,
    ``coef``, ``penalty``, ``loo_loss`` (per penalty tried, or None) and
    ``n_iter``.
    """
    if w is not None:
        keep = w > 0
        score, pos, w = score[keep], pos[keep], w[keep]
    pos = np.asarray(pos, dtype=bool)
    w, unit, t, total, start_value = _counts_and_targets(pos, w)
    basis = SplineBasis(weighted_knots(score, w, n_knots))
    design = BandedDesign(basis.design(score))
    start = np.full(basis.n_basis, start_value)
    grid = PENALTY_GRID if penalty == "auto" else np.array([float(penalty)])
    if basis.n_basis == 1:  # one distinct score: a constant, no penalty to choose
        grid = grid[:1]
    tr, pen, bounded = penalty_coordinates(basis.roughness(), monotonic)
    theta = np.linalg.lstsq(tr, start, rcond=None)[0]
    fits, losses, row_losses, n_iter, converged = [], [], [], 0, True
    for lam in grid:
        theta, it, ok = projected_newton(
            partial(
                _penalised_terms,
                design=design,
                tr=tr,
                t=t,
                w=w,
                omega=pen,
                lam=lam * total,
            ),
            theta,
            bounded,
            max_iter=max_iter,
            tol=tol,
        )
        n_iter, converged = n_iter + it, converged and ok
        fits.append(tr @ theta)
        if grid.size > 1:
            scale = 1.0 + np.max(np.abs(theta))
            free = ~bounded | (theta > 1e-9 * scale)
            mean, rows = loo_log_loss(
                design,
                tr,
                pos,
                t,
                w,
                theta,
                pen,
                lam * total,
                free=free,
                unit=unit,
                per_row=True,
            )
            losses.append(mean)
            row_losses.append(rows)
    best = one_se_choice(losses, row_losses, w, total / unit) if losses else 0
    if losses and not np.all(
        np.isfinite(losses) & (np.array(losses) <= LOO_UNRELIABLE)
    ):
        warnings.warn(
            f"SplineCalibrator: the approximate leave-one-out log-loss reached "
            f"{max(losses):.3g} nats per row, so it cannot choose the penalty "
            f"(scores far outside the bulk?); the strongest penalty "
            f"{grid[0]:g} is used. Pass penalty= to choose it yourself.",
            UserWarning,
            stacklevel=3,
        )
        best = 0
    fitted = {
        "knots": basis.knots,
        "coef": fits[best],
        "penalty": float(grid[best]),
        "loo_loss": np.array(losses) if losses else None,
        "n_iter": n_iter,
    }
    return fitted, converged


# ------------------------------------------------------------------ estimator
class SplineCalibrator(_OneVsRestCalibrator):
    """Spline calibration: a penalised logistic cubic spline of the log-odds.

    For the model's log-odds ``s`` of the class (binary: the positive
    class; one-vs-rest: each class; top-label: the predicted class),

    .. math::

        P(y = 1 \\mid s) = \\sigma(f(s)),

    with ``f`` a cubic spline whose knots are the weighted quantiles
    ``0, 1/(m-1), ..., 1`` of the calibration scores (``m = n_knots``),
    continued as a straight line beyond the first and last knot. Its
    coefficients minimise the weighted cross-entropy against Platt's
    smoothed targets ``t_+ = (N_+ + 1)/(N_+ + 2)``, ``t_- = 1/(N_- + 2)``
    plus a roughness penalty,

    .. math::

        \\sum_i w_i\\, \\ell(t_i, f(s_i))
        + \\frac{\\lambda W}{2} \\int_0^1 f''(u)^2\\, du,

    where ``u`` is the score rescaled so the knots span ``[0, 1]`` (the
    penalty does not depend on the units of the scores) and ``W`` the
    total weight (``lambda`` is per sample). The penalty leaves straight
    lines free, so a very large ``lambda`` gives Platt scaling
    (:class:`PlattCalibrator`) and a small one a free spline. This is the
    method of Lucena [1]_ (penalised logistic regression on a cubic spline
    basis of the log-odds, the penalty chosen by cross-validation) with
    three choices of ours: the penalty is the integrated squared second
    derivative (a smoothing spline's, instead of a ridge on the
    coefficients that also shrinks the straight line), Platt's targets
    keep the optimum finite when the scores separate the classes (instead
    of synthetic points on the diagonal), and ``penalty="auto"`` picks
    ``lambda`` from ``1e4, 1e3, ..., 1e-10`` by the **approximate
    leave-one-out** log-loss of Rad & Maleki [2]_ (one Newton step from
    the full fit per left-out row; deterministic, no folds, one fit per
    ``lambda``) instead of one random fold, with the one-standard-error
    rule [3]_: the largest ``lambda`` whose estimate is within one
    standard error of the smallest.

    Neither the method nor the fitted map is monotone by default (neither
    is Lucena's); ``monotonic=True`` constrains the B-spline coefficients
    to be non-decreasing, which makes the map non-decreasing everywhere.

    **Knots.** When quantiles coincide (tied scores, or fewer distinct
    scores than ``n_knots``) the distinct ones are kept: a map has
    ``n_knots_[k] <= n_knots`` knots, reported per map. So are nearly
    coincident ones: an interior knot closer to the previous one than
    1e-3 of the median knot interval is dropped (floored probabilities,
    ties to rounding, once put two knots 1.4e-8 apart and the penalty out
    of reach of double precision; see ``merge_close_knots``). Two distinct scores
    give a straight line (Platt scaling with the penalty's help); one
    distinct score (constant scores) gives a constant, the mean of Platt's
    targets ``(N_+ t_+ + N_- t_-) / N`` (as :class:`PlattCalibrator`
    does), the only thing such data determine.

    **Sample weights** are frequency weights, as in
    :class:`PlattCalibrator` (whose targets this uses): a weight of 2 is a
    duplicated row, exactly, for the fit and for the leave-one-out choice
    of ``lambda`` (which leaves out one unit of weight, or all of a row
    lighter than 1); the result depends on the scale of the weights.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    n_knots : int, default=16
        Largest number of knots per map (at least 2).
    penalty : "auto" or float, default="auto"
        ``lambda`` (> 0), or ``"auto"``: the one of smallest approximate
        leave-one-out log-loss among ``1e4, 1e3, ..., 1e-10`` (the
        largest within one standard error of the smallest).
    monotonic : bool, default=False
        Constrain each map to be non-decreasing.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes (see the user guide).
    max_iter : int, default=100
        Newton iterations per fit (per ``lambda``).
    tol : float, default=1e-10
        Relative step size that ends the Newton iterations (projected
        Newton iterations for ``monotonic=True``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    calibrators_ : list of dict or None
        Each map's ``knots`` (log-odds), ``coef`` (B-spline coefficients),
        ``penalty``, ``loo_loss`` and ``n_iter``; ``None`` for a top-label
        class never predicted at fit (its confidence is kept).
    knots_ : list of ndarray
        The knots of each map, in log-odds (empty for a ``None`` map).
    n_knots_ : ndarray of shape (n_maps,)
        Number of knots of each map (0 for a ``None`` map).
    penalty_ : ndarray of shape (n_maps,)
        The ``lambda`` of each map (NaN for a ``None`` map).
    n_iter_ : ndarray of shape (n_maps,)
        Solver iterations of each map, over every ``lambda`` tried.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    PlattCalibrator : the straight line this tends to as ``lambda`` grows.
    IsotonicCalibrator : any non-decreasing map, piecewise constant.

    Notes
    -----
    The reference implementation, ``splinecalib`` (0.0.13, and its copy in
    ``ml_insights``), differs as said above and also: its knots are 30
    distinct scores drawn at random plus the probabilities 0.1, ..., 0.9;
    its basis is a natural spline (linear beyond the end knots, as here);
    its final fit uses the training part of the last fold only, not all
    the data.

    The penalty is measured in units of the whole knot range: a few
    calibration scores far from the rest (log-odds of +-1e4 among scores
    of +-5) become the end knots and squeeze the others into a sliver of
    ``[0, 1]``, where the same ``lambda`` smooths much more (measured: the
    in-sample log-loss of 400 rows rose by 0.02 when two such rows were
    added). Clip such scores first if they are few. Fit cost: one Newton
    solve per ``lambda`` (11 for ``"auto"``) per map; a row of the cubic
    B-spline design has at most 4 nonzeros, contiguous, so each Newton
    step costs ``O(n)`` (10 products per row for the Hessian) plus
    ``O(m^3)`` for the ``m = n_knots + 2`` coefficients.

    **Known limitation.** With scores far outside the bulk (e.g. a few
    logits of +-1e4 among values of +-5) and few rows, the approximate
    leave-one-out estimate and the penalty's eigendecomposition are
    ill-conditioned: the chosen penalty can then depend on the row order,
    on the scale of the weights or on rounding of the scores, and the
    eigensolver may fail. When the estimate exceeds 10 nats per row the
    strongest penalty is used, with a warning; pass ``penalty=`` (a fixed
    value) for reproducible fits on such data.

    References
    ----------
    .. [1] B. Lucena, "Spline-based probability calibration",
       arXiv:1809.07751, 2018.
    .. [2] K. R. Rad and A. Maleki, "A scalable estimate of the
       out-of-sample prediction error via approximate leave-one-out
       cross-validation", Journal of the Royal Statistical Society B 82(4),
       2020.
    .. [3] T. Hastie, R. Tibshirani and J. Friedman, "The Elements of
       Statistical Learning", 2nd ed., Springer, 2009, section 7.10.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import SplineCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000)
    >>> s = rng.normal(size=2000) + 2.0 * (2 * y - 1)
    >>> logits = s ** 3 / 4            # miscalibrated in a way no line fixes
    >>> cal = SplineCalibrator().fit(logits, y)
    >>> cal.n_knots_.tolist()
    [16]
    >>> p = cal.predict_proba(np.array([-2.0, 0.0, 2.0]) ** 3 / 4)[:, 1]
    >>> p.round(2)  # the true P(y = 1 | s) = sigmoid(4 s): 0.0, 0.5, 1.0
    array([0. , 0.5, 1. ])
    """

    _parameter_constraints: dict = {
        **_OneVsRestCalibrator._parameter_constraints,
        "n_knots": [Interval(Integral, 2, None, closed="left")],
        "penalty": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "monotonic": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }
    _map_input = "log_odds"
    #: Platt's smoothed targets use the weight totals (see the docstring).
    _rescale_sample_weight = False

    def __init__(
        self,
        estimator=None,
        *,
        n_knots=16,
        penalty="auto",
        monotonic=False,
        score_type="auto",
        response_method="auto",
        classes=None,
        multi_class="ovr",
        max_iter=100,
        tol=1e-10,
    ):
        self.estimator = estimator
        self.n_knots = n_knots
        self.penalty = penalty
        self.monotonic = monotonic
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.tol = tol

    def _fit_map(self, score, target, sample_weight):
        fitted, converged = fit_spline_map(
            np.asarray(score, dtype=np.float64),
            target > 0.5,
            sample_weight,
            n_knots=self.n_knots,
            penalty=self.penalty,
            monotonic=self.monotonic,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        if not converged:
            warnings.warn(
                f"Spline calibration did not converge in max_iter={self.max_iter} "
                "iterations for some penalty; increase max_iter.",
                ConvergenceWarning,
                stacklevel=5,
            )
        return fitted

    def _set_fitted_views(self):
        maps = self.calibrators_
        self.knots_ = [np.zeros(0) if m is None else m["knots"] for m in maps]
        self.n_knots_ = np.array([k.size for k in self.knots_], dtype=int)
        self.penalty_ = np.array(
            [np.nan if m is None else m["penalty"] for m in maps], dtype=np.float64
        )
        self.n_iter_ = np.array([0 if m is None else m["n_iter"] for m in maps])

    def _apply_map(self, fitted, score):
        z = SplineBasis(fitted["knots"]).design(score) @ fitted["coef"]
        return expit(z)
