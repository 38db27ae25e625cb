"""Parametric scaling calibrators: Platt scaling and temperature scaling."""

import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from skcalib._base import BaseCalibrator, unit_weights
from skcalib._scores import softmax
from skcalib.calibration._binary import _BinaryMapCalibrator
from skcalib.calibration._newton import damped_newton

__all__ = ["PlattCalibrator", "TemperatureCalibrator"]


# --------------------------------------------------------------------- Platt
def _platt_terms(params, s, t, w):
    """Loss, gradient and Hessian of Platt's objective at ``(a, b)``.

    One pass with a single ``exp``: for ``z = a s + b``,
    ``loss = sum w (softplus(z) - t z)`` (the cross-entropy of
    ``sigmoid(z)`` against ``t``), ``grad = sum w (p - t) (s, 1)``,
    ``hess = sum w p (1 - p) (s, 1)(s, 1)^T``.
    """
    z = params[0] * s + params[1]
    e = np.exp(-np.abs(z))  # in (0, 1]: never overflows
    loss_i = np.maximum(z, 0.0) + np.log1p(e) - t * z
    inv = 1.0 / (1.0 + e)
    p = np.where(z >= 0, inv, e * inv)
    r = p - t
    h = p * (1.0 - p)
    if w is not None:
        loss_i *= w
        r *= w
        h *= w
    hs = h @ s
    grad = np.array([r @ s, r.sum()])
    hess = np.array([[h @ (s * s), hs], [hs, h.sum()]])
    return float(loss_i.sum()), grad, hess


def fit_platt(s, y, sample_weight=None, *, max_iter=100, tol=1e-10):
    """Fit Platt's sigmoid ``P(y=1 | s) = 1 / (1 + exp(-(a s + b)))``.

    Newton's method with a backtracking (Armijo) line search on Platt's
    convex two-parameter objective with smoothed targets (Platt 1999; Lin, Lin
    & Weng 2007). Scores are divided by ``max(1, max|s|)`` while solving (the
    optimum is mapped back), so logits of ±1e4 do not overflow. Each accepted
    step costs one pass over the data.

    Parameters
    ----------
    s : ndarray of shape (n,), float64
        Scores (log-odds).
    y : ndarray of shape (n,), {0, 1}
        Targets.
    sample_weight : ndarray of shape (n,) or None
    max_iter : int
    tol : float
        Stop when the Newton step is below ``tol * (1 + |params|)``.

    Returns
    -------
    a, b : float
        Slope and intercept on the original score scale.
    n_iter : int
    converged : bool
    """
    pos = y > 0.5
    w, n_pos, n_neg = platt_counts(pos, sample_weight)
    scale = max(1.0, float(np.max(np.abs(s))))
    terms = partial(_platt_chunk_terms, n_pos=n_pos, n_neg=n_neg, scale=scale)
    return _solve_platt(
        lambda p: terms(s, pos, w, p), n_pos, n_neg, scale, max_iter, tol
    )


def platt_counts(pos, sample_weight):
    """Weights divided by their maximum, and Platt's counts ``N+``, ``N-``.

    The counts are the weight totals of the classes as given (frequency
    weights, as in Platt's and scikit-learn's code); they are summed on the
    rescaled weights and multiplied back as Python floats, so weights of
    1e308 give ``inf`` counts (targets 1 and 0) instead of overflowing into
    NaN. Returns ``(w, n_pos, n_neg)``.
    """
    if sample_weight is None:
        n_pos = float(np.count_nonzero(pos))
        return None, n_pos, float(pos.size) - n_pos
    top = float(sample_weight.max(initial=0.0))
    if not top > 0:
        return sample_weight, 0.0, 0.0
    w, unit = unit_weights(sample_weight, top)
    return w, unit * float(w[pos].sum()), unit * float(w[~pos].sum())


def _platt_chunk_terms(s, pos, w, params, *, n_pos, n_neg, scale):
    """:func:`_platt_terms` with Platt's targets, on scores divided by
    ``scale``."""
    t = np.where(pos, 1.0 - 1.0 / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    return _platt_terms(params, s / scale, t, w)


def _solve_platt(terms, n_pos, n_neg, scale, max_iter, tol):
    """Newton from the smoothed base rate; ``(a, b, n_iter, converged)``."""
    b0 = np.log((n_pos + 1.0) / (n_neg + 1.0)) if n_pos + n_neg < np.inf else 0.0
    params = np.array([0.0, b0 if np.isfinite(b0) else 0.0])
    params, n_iter, converged, _ = damped_newton(
        terms, params, max_iter=max_iter, tol=tol
    )
    return params[0] / scale, params[1], n_iter, converged


def _platt_map_chunk_terms(scores, y, w, *, view, params, **kwargs):
    """Platt terms of one chunk of one map (see ``_BinaryMapCalibrator``)."""
    s, pos = view(scores, y)
    loss, grad, hess = _platt_chunk_terms(s, pos, w, params, **kwargs)
    return loss, grad, hess


def _abs_max_chunk(scores, y, w, *, view):
    return (float(np.max(np.abs(view(scores, y)[0]), initial=0.0)),)


class PlattCalibrator(_BinaryMapCalibrator):
    """Platt scaling: a logistic map of the log-odds.

    ``P(y = 1 | s) = 1 / (1 + exp(-(a s + b)))`` where ``s`` is the log-odds
    of the uncalibrated model (a decision value, or ``log(p / (1 - p))`` for a
    probability ``p``, computed without forming ``1 - p``). ``a`` and ``b``
    minimise the weighted cross-entropy against Platt's smoothed targets

    .. math::

        t_+ = \\frac{N_+ + 1}{N_+ + 2}, \\qquad t_- = \\frac{1}{N_- + 2},

    with ``N_+``/``N_-`` the (weighted) counts of positives and negatives. The
    smoothing is the regularisation: the targets are never 0 or 1, so the
    optimum is finite even when the scores separate the classes perfectly.
    The convex problem is solved by Newton's method with a line search.

    **Sample weights** are frequency weights, as in Platt's paper and in
    :class:`sklearn.calibration.CalibratedClassifierCV`: the cross-entropy
    is weighted by ``sample_weight`` and ``N_+``, ``N_-`` are the weight
    totals of the positives and negatives. A weight of 2 is therefore
    exactly a duplicated row and a weight of 0 a dropped one, but the
    result depends on the scale of the weights, by design: ``N_+`` is the
    amount of evidence, and the smoothing (one pseudo-sample per class)
    weighs less against more of it. Multiplying every weight by ``c``
    moves the targets towards 0 and 1 for ``c > 1`` (weights of 1e308:
    ``t_+ = 1``, ``t_- = 0``, unsmoothed logistic regression) and towards
    1/2 for ``c < 1`` (weights of 1e-300: nearly constant at the smoothed
    base rate). For importance or class-balancing weights whose scale means
    nothing, normalise them first (e.g. to mean 1, so that ``N_+ + N_-``
    is the number of rows). The weights are divided by their maximum inside
    the solver, so no scale overflows or underflows.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method giving scores (``"auto"``: decision_function
        if the estimator has it, else predict_proba).
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes (see the user guide).
    max_iter : int, default=100
        Newton iterations per map.
    tol : float, default=1e-10
        Relative step size that ends the Newton iterations.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    calibrators_ : list of ndarray of shape (2,)
        ``(a, b)`` of each map (one map for binary problems).
    coef_ : ndarray of shape (n_maps,)
        Slopes ``a``.
    intercept_ : ndarray of shape (n_maps,)
        Intercepts ``b``.
    n_iter_ : ndarray of shape (n_maps,)
        Newton iterations of each map.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : one parameter shared by all classes.
    sklearn.calibration.CalibratedClassifierCV : ``method="sigmoid"`` fits the
        same objective with L-BFGS (and ``p = 1 / (1 + exp(A f + B))``, so its
        ``A, B`` are our ``-a, -b``).

    References
    ----------
    .. [1] J. Platt, "Probabilistic outputs for support vector machines and
       comparisons to regularized likelihood methods", Advances in Large
       Margin Classifiers, 1999.
    .. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's
       probabilistic outputs for support vector machines", Machine Learning
       68, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import PlattCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 1000)
    >>> logits = 4.0 * (2 * y - 1) + rng.normal(scale=4.0, size=1000)  # over-confident
    >>> cal = PlattCalibrator().fit(logits, y)
    >>> cal.predict_proba(logits[:2]).shape
    (2, 2)
    >>> bool(0 < cal.coef_[0] < 1)   # the slope shrinks over-confident logits
    True
    """

    _parameter_constraints: dict = {
        **_BinaryMapCalibrator._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }
    _map_input = "log_odds"
    #: The smoothed targets use the weight totals (see the docstring).
    _rescale_sample_weight = False

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        multi_class="ovr",
        max_iter=100,
        tol=1e-10,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.tol = tol

    def _fit_map(self, score, target, sample_weight):
        return self._platt_result(
            *fit_platt(
                score, target, sample_weight, max_iter=self.max_iter, tol=self.tol
            )
        )

    def _fit_map_chunks(self, data, view, n_pos):
        (abs_max,) = data.map_scores(
            partial(_abs_max_chunk, view=view),
            combine=lambda parts: (max(p[0] for p in parts if p is not None),),
        )
        n_neg = data.total_weight - n_pos
        kwargs = {"n_pos": n_pos, "n_neg": n_neg, "scale": max(1.0, abs_max)}

        def terms(params):
            return data.map_scores(
                partial(_platt_map_chunk_terms, view=view, params=params, **kwargs)
            )

        return self._platt_result(
            *_solve_platt(terms, n_pos, n_neg, kwargs["scale"], self.max_iter, self.tol)
        )

    def _platt_result(self, a, b, n_iter, converged):
        if not converged:
            warnings.warn(
                f"Platt scaling did not converge in max_iter={self.max_iter} Newton "
                "iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=5,
            )
        return np.array([a, b, n_iter], dtype=np.float64)

    def _set_fitted_views(self):
        maps = [m for m in self.calibrators_ if m is not None]
        self.coef_ = np.array(
            [m[0] if m is not None else 1.0 for m in self.calibrators_]
        )
        self.intercept_ = np.array(
            [m[1] if m is not None else 0.0 for m in self.calibrators_]
        )
        self.n_iter_ = np.array([int(m[2]) for m in maps], dtype=int)
        self.calibrators_ = [None if m is None else m[:2] for m in self.calibrators_]

    def _apply_map(self, fitted, score):
        return expit(fitted[0] * score + fitted[1])


# --------------------------------------------------------------- temperature
def _temperature_terms(
    z, z_max, dy, beta, w, chunk_rows, n_jobs=1, coarse=False, inv_scale=1.0
):
    """NLL, gradient and second derivative in ``beta = 1 / T``.

    ``d = z - z_max`` are the logits shifted so that each row's maximum is 0
    (formed block by block, never whole), and ``dy`` the entry of the true
    class in ``d``. Per row, with ``q = softmax(beta d)``:
    ``nll = logsumexp(beta d) - beta dy``, ``d nll / d beta = E_q[d] - dy``,
    ``d2 nll / d beta2 = Var_q[d] >= 0`` (convex in ``beta``). Computed in
    float64 by blocks of rows (float32 input is never copied whole), on
    ``n_jobs`` threads; the block sums are added in a fixed order, so the
    result does not depend on ``n_jobs``. ``coarse=True`` computes the
    per-row terms in float32 (``exp`` is the cost, and about twice as fast
    in float32): approximate derivatives that only steer a first step.
    ``inv_scale`` (a power of two, so exact) multiplies ``d`` as it is
    formed; ``dy`` is passed already multiplied. Squares of gaps of 1e200
    then do not overflow, nor those of 1e-200 underflow.
    """
    dtype = np.float32 if coarse else np.float64

    def block(start):
        stop = start + chunk_rows
        dc = np.subtract(
            z[start:stop], z_max[start:stop, None], dtype=dtype, casting="unsafe"
        )
        if inv_scale != 1.0:
            dc *= dtype(inv_scale)
        e = np.multiply(dc, dtype(beta))
        np.exp(e, out=e)
        s0 = np.einsum("ij->i", e).astype(np.float64)
        m1 = np.einsum("ij,ij->i", e, dc) / s0
        e *= dc
        m2 = np.einsum("ij,ij->i", e, dc) / s0
        dyc = dy[start:stop]
        terms = np.vstack(
            (np.log(s0) - beta * dyc, m1 - dyc, np.maximum(m2 - m1 * m1, 0.0))
        )
        if w is None:
            return terms.sum(axis=1)
        return terms @ w[start:stop]

    starts = range(0, z.shape[0], chunk_rows)
    if n_jobs > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            parts = list(pool.map(block, starts))
    else:
        parts = [block(start) for start in starts]
    return np.sum(parts, axis=0)


def _newton_temperature(
    terms, u, total_weight, max_iter, tol, bounds, coarse_first=False
):
    """Safeguarded Newton on the root of the NLL derivative in ``u = log beta``.

    ``terms(beta, coarse)`` returns the NLL and its first and second
    derivatives in ``beta`` summed over the data (one pass; see
    :func:`_temperature_terms`). ``coarse_first``: the first pass uses
    float32 derivatives; its Newton step is taken only if it stays in the
    bracket, it never moves the bracket and never ends the iteration.
    """
    u_lo, u_hi = -np.log(bounds[1]), -np.log(bounds[0])
    lo, hi = u_lo, u_hi  # bracket of the root in u
    status = "max_iter"
    n_iter = 0
    last_newton = None  # size of the previous step if it was a Newton step
    coarse = coarse_first
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        beta = np.exp(u)
        _, g, h = terms(beta, coarse)
        if coarse:
            coarse = False
            u_new = u - g / (h * beta) if h > 0 else np.nan
            if lo <= u_new <= hi:
                last_newton, u = abs(u_new - u), u_new
            continue
        if abs(g * beta) <= 1e-15 * total_weight:
            status = "converged"  # derivative in u vanishes to machine precision
            break
        if g < 0:
            lo = u
            if u >= u_hi:
                status = "lower_bound"  # T wants to go below its lower bound
                break
        else:
            hi = u
            if u <= u_lo:
                status = "upper_bound"
                break
        slope = h * beta
        u_new = u - g / slope if slope > 0 else np.inf
        newton = lo <= u_new <= hi
        if not newton:
            # Newton left the bracket: try the bound itself first, else bisect.
            if hi == u_hi and u_new > hi:
                u_new = u_hi
            elif lo == u_lo and u_new < lo:
                u_new = u_lo
            else:
                u_new = 0.5 * (lo + hi)
        step, u = abs(u_new - u), u_new
        if step <= tol:
            status = "converged"
            break
        if newton and last_newton is not None and step <= 0.5 * last_newton:
            # Two Newton steps in a row that shrink: the error left after
            # this one is about M * step**2, with M ~ step / last_newton**2
            # estimated from them (floored at 1). Below tol, one more pass
            # over the data would only confirm it.
            rate = max(1.0, step / last_newton**2)
            if rate * step * step <= tol:
                status = "converged"
                break
        last_newton = step if newton else None
    return u, n_iter, status


#: ``T`` is searched in ``[lower, UPPER_FACTOR * max_gap]``: above it the
#: likelihood is flat to about ``1 / UPPER_FACTOR`` (see :func:`temperature_bounds`).
UPPER_FACTOR = 1e12


def temperature_bounds(max_gap, max_weighted_gap, total_weight, n_classes):
    """Bracket ``(lower, upper)`` of the maximum-likelihood temperature.

    Both follow the scale of the scores, so logits multiplied by ``c`` give
    a bracket multiplied by ``c`` (and ``T`` multiplied by ``c``). With
    ``d_i = z_{i, y_i} - max_j z_ij <= 0``: each row's NLL is at least
    ``-d_i / T`` and the NLL at ``T -> inf`` is ``W log K``, so the optimum
    satisfies ``T* >= max_i w_i |d_i| / (W log K)``; half of that is
    ``lower``, which is therefore never the answer. ``upper`` is
    :data:`UPPER_FACTOR` times ``max_i |d_i|``: beyond it every row's NLL is
    within ``1 / UPPER_FACTOR`` (relative) of that of uniform
    probabilities, i.e. the scores carry no usable information.

    Parameters
    ----------
    max_gap : float
        ``max_i |d_i|`` over the rows of positive weight (> 0).
    max_weighted_gap : float
        ``max_i w_i |d_i|`` (weights as passed to the fit).
    total_weight : float
        ``W = sum_i w_i``.
    n_classes : int
        ``K``.
    """
    lower = 0.5 * max_weighted_gap / (total_weight * np.log(max(n_classes, 2)))
    return float(lower), float(UPPER_FACTOR * max_gap)


def fit_temperature(
    logits,
    y,
    sample_weight=None,
    *,
    max_iter=100,
    tol=1e-8,
    bounds=None,
    n_jobs=1,
):
    """Maximum-likelihood temperature by safeguarded Newton on ``log(1/T)``.

    The NLL is convex in ``beta = 1/T``; its derivative is increasing in
    ``u = log beta``. Newton steps on the root of that derivative in ``u``
    use the exact first and second derivatives (float64); a bracket of the
    root is kept, and a step leaving it is replaced by bisection, so the
    iteration always converges. It stops when a step in ``log T`` is below
    ``tol``, or when two consecutive Newton steps shrink quadratically and
    the error they predict after the last one, ``M * step**2`` (``M``
    estimated from the two steps, at least 1), is below ``tol``: the error
    left in ``log T`` is then about ``tol`` or less, and the pass over the
    data that would only confirm it is saved.

    The bracket follows the scale of the scores (:func:`temperature_bounds`)
    and the start is the weighted mean gap ``-d_i`` of the rows whose true
    class is not on top, so multiplying the logits by ``c`` multiplies ``T``
    by ``c`` (up to ``tol``). Weights are divided by their maximum first:
    the result does not depend on their scale (weights of 1e308 do not
    overflow, 5e-324 does not underflow).

    On more than 200 000 rows, a first Newton run on every 16th row gives the
    starting point, and the first pass over all rows computes its Newton
    step in float32 (twice as fast; it is only a step, the bracket and the
    stopping rule use float64 passes): the full data are then read about
    three times (the row maxima, a float32 and a float64 Newton pass).

    Parameters
    ----------
    logits : ndarray of shape (n, K), float32 or float64
        Logits or log-probabilities (any per-row constant); not copied.
    y : ndarray of shape (n,)
        Encoded labels.
    sample_weight : ndarray of shape (n,) or None
    max_iter : int
    tol : float
    bounds : tuple of two floats or None
        Search range of ``T``; ``None``: :func:`temperature_bounds`.
    n_jobs : int

    Returns
    -------
    temperature : float
    n_iter : int
        Newton/bisection iterations on the full data.
    status : {"converged", "max_iter", "lower_bound", "upper_bound"}
    """
    z = logits
    n = z.shape[0]
    if sample_weight is not None:
        top = float(sample_weight.max(initial=0.0))
        sample_weight = unit_weights(sample_weight, top)[0]
    z_max = z.max(axis=1).astype(np.float64)
    dy = z[np.arange(n), y] - z_max
    active = dy if sample_weight is None else dy[sample_weight > 0]
    if np.all(active == 0):
        if np.array_equal(z_max, z.min(axis=1)):
            # Every row is constant: the NLL does not depend on T at all.
            return 1.0, 0, "converged"
        # Every sample's true class has the top score: the NLL decreases in
        # beta without bound, the infimum is at T -> 0.
        if bounds is None:
            bounds = _separated_bounds(z_max - z.min(axis=1), sample_weight)
        return float(bounds[0]), 0, "lower_bound"
    gap = -dy
    w_gap = gap if sample_weight is None else gap * sample_weight
    total_all = float(n if sample_weight is None else sample_weight.sum())
    if bounds is None:
        bounds = temperature_bounds(
            float(active.min() * -1.0), float(w_gap.max()), total_all, z.shape[1]
        )
    # Solve in units of the largest gap (a power of two: exact), so that the
    # squared gaps in the derivatives neither overflow nor underflow.
    scale = _gap_scale(float(-active.min()))
    bounds = (bounds[0] / scale, bounds[1] / scale)
    dy = dy / scale
    coarse_ok = n > 200_000 and 2.0**-60 <= scale <= 2.0**60
    wrong = gap > 0
    # Start: the weighted mean gap of the rows whose true class is not on top.
    if sample_weight is None:
        t0 = float(gap[wrong].mean())
    else:
        ww = sample_weight[wrong]
        t0 = float(gap[wrong] @ ww / ww.sum()) if ww.sum() > 0 else float(gap.max())
    t0 = min(max(t0 / scale, bounds[0]), bounds[1])
    chunk_rows = max(1, 2**16 // max(1, z.shape[1]))

    def terms_of(rows):
        zr, z_max_r, dy_r = z[rows], z_max[rows], dy[rows]
        w_r = None if sample_weight is None else sample_weight[rows]

        def terms(beta, coarse):
            return _temperature_terms(
                zr,
                z_max_r,
                dy_r,
                beta,
                w_r,
                chunk_rows,
                n_jobs,
                coarse=coarse,
                inv_scale=1.0 / scale,
            )

        return terms, float(zr.shape[0] if w_r is None else w_r.sum())

    u = -np.log(t0)
    if n > 200_000:
        terms, total = terms_of(slice(None, None, 16))
        if total > 0:
            u_sub, _, status = _newton_temperature(
                terms, u, total, max_iter, 1e-3, bounds
            )
            if status == "converged":
                u = u_sub
    terms, total = terms_of(slice(None))
    u, n_iter, status = _newton_temperature(
        terms, u, total, max_iter, tol, bounds, coarse_first=coarse_ok
    )
    return float(np.exp(-u)) * scale, n_iter, status


def _gap_scale(max_gap):
    """The power of two nearest ``max_gap`` (> 0): the unit of the solver."""
    return float(2.0 ** np.round(np.log2(max_gap)))


#: When every sample is right, ``T`` is reported at this fraction of the
#: largest score range of a row (the likelihood increases up to ``T -> 0``).
SEPARATED_FRACTION = 1e-4


def _separated_bounds(ranges, sample_weight):
    """Bounds when every true class is on top: ``T`` stops at
    :data:`SEPARATED_FRACTION` times the largest row range (scale-free)."""
    if sample_weight is not None:
        ranges = ranges[sample_weight > 0]
    scale = float(ranges.max())
    return SEPARATED_FRACTION * scale, UPPER_FACTOR * scale


def _first_chunk_temperature(scores, y, w):
    """``log(1 / T)`` fitted to 1e-3 on one chunk, or None."""
    if w is not None and not w.sum() > 0:
        return None
    temperature, _, status = fit_temperature(scores.logits, y, w, tol=1e-3)
    return -np.log(temperature) if status == "converged" else None


def _temperature_chunk_scale(scores, y, w):
    """``(max |d|, max w |d|, max row range)`` of one chunk (rows of
    positive weight), for :func:`temperature_bounds`."""
    z = scores.logits
    z_max = z.max(axis=1).astype(np.float64)
    gap = z_max - z[np.arange(z.shape[0]), y]
    ranges = z_max - z.min(axis=1)
    if w is not None:
        keep = w > 0
        w_gap = gap[keep] * w[keep]
        gap, ranges = gap[keep], ranges[keep]
    else:
        w_gap = gap
    return tuple(float(v.max(initial=0.0)) for v in (gap, w_gap, ranges))


def _temperature_chunk_terms(scores, y, w, *, beta, coarse, scale=1.0):
    """:func:`_temperature_terms` of one chunk of scores, gaps in units of
    ``scale``."""
    z = scores.logits
    z_max = z.max(axis=1).astype(np.float64)
    dy = (z[np.arange(z.shape[0]), y] - z_max) / scale
    chunk_rows = max(1, 2**16 // max(1, z.shape[1]))
    return tuple(
        _temperature_terms(
            z, z_max, dy, beta, w, chunk_rows, 1, coarse=coarse, inv_scale=1 / scale
        )
    )


class TemperatureCalibrator(BaseCalibrator):
    """Temperature scaling: divide the logits by one fitted temperature.

    .. math::

        \\hat p(y = k \\mid z) = \\frac{\\exp(z_k / T)}{\\sum_j \\exp(z_j / T)}

    with ``T > 0`` minimising the weighted negative log-likelihood on the
    calibration data. Native multiclass; dividing by ``T`` never changes the
    predicted class. Probabilities are turned into log-probabilities first
    (softmax is invariant to a per-row constant, so ``log p`` is as good as
    the logits). A binary 1-D score ``s`` becomes the logits ``(0, s)``, so
    ``P(y = 1) = sigmoid(s / T)``.

    The NLL is convex in ``1/T``: ``T`` is found by Newton's method on
    ``log(1/T)`` with exact derivatives in float64, safeguarded by a bracket
    (bisection when a Newton step leaves it), until a step in ``log T`` is
    below ``tol``. On large data a first run on every 16th row gives the
    starting point, so the scores are read about three times in all.

    The search range follows the scale of the scores, so logits multiplied
    by ``c`` give ``c`` times the temperature (and the same NLL), for any
    ``c``. Its lower end is provably below the optimum (half of
    ``max_i w_i g_i / (W log K)``, with ``g_i`` the gap between the top
    score and the true class's score); its upper end is ``1e12 max_i g_i``,
    beyond which the scores carry no information (a warning says so). When
    every calibration sample's true class has the top score, the
    likelihood increases without bound as ``T -> 0``: ``T`` stops at
    ``1e-4`` times the largest score range of a row, with a warning.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    max_iter : int, default=100
        Newton/bisection iterations.
    tol : float, default=1e-8
        Tolerance on the last Newton step in ``log T`` (the error left after
        it is about ``tol**2``).
    n_jobs : int or None, default=None
        Threads for the passes over the scores (numpy releases the GIL);
        ``None`` means 1 unless in a :func:`joblib.parallel_backend` context,
        ``-1`` all cores. The result does not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    temperature_ : float
        The fitted temperature (> 0). Above 1: the model was over-confident.
    n_iter_ : int
        Iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    PlattCalibrator : two parameters per class, binary or one-vs-rest.
    sklearn.calibration.CalibratedClassifierCV : ``method="temperature"``
        (scikit-learn >= 1.8) minimises the same NLL with Brent's method; it
        maps a 1-D decision value ``s`` to the logits ``(-s, s)``, so its
        temperature is twice ours on 1-D binary scores.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = rng.normal(size=(2000, 3)) + np.eye(3)[y]  # calibrated logits
    >>> ts = TemperatureCalibrator().fit(3.0 * logits, y)   # three times too sharp
    >>> round(ts.temperature_, 1)
    3.1
    >>> float(ts.predict_proba(3.0 * logits[:1]).sum())
    1.0
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        max_iter=100,
        tol=1e-8,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs

    def _fit(self, scores, y, sample_weight):
        self._set_temperature(
            *fit_temperature(
                scores.logits,
                y,
                sample_weight,
                max_iter=self.max_iter,
                tol=self.tol,
                n_jobs=effective_n_jobs(self.n_jobs),
            )
        )

    def _fit_chunks(self, data):
        # Same Newton iteration, each pass a sum over the chunks, in units of
        # the largest gap as in fit. A problem whose NLL does not depend on
        # T (constant rows) stops at T = 1; one where every sample is right
        # with a margin runs to the lower bound.
        max_gap, max_weighted_gap, max_range = data.map_scores(
            _temperature_chunk_scale,
            combine=lambda parts: tuple(
                max(p[i] for p in parts if p is not None) for i in range(3)
            ),
        )
        if max_gap == 0:
            if max_range == 0:  # constant rows: the NLL does not depend on T
                self._set_temperature(1.0, 0, "converged")
            else:  # every sample right: the infimum is at T -> 0
                self._set_temperature(SEPARATED_FRACTION * max_range, 0, "lower_bound")
            return
        scale = _gap_scale(max_gap)
        lo, hi = temperature_bounds(
            max_gap, max_weighted_gap, data.total_weight, data.classes.size
        )
        bounds = (lo / scale, hi / scale)

        def terms(beta, coarse):
            return data.map_scores(
                partial(_temperature_chunk_terms, beta=beta, coarse=coarse, scale=scale)
            )

        # Start from the temperature of the first chunk (read once more, on
        # its own): the passes over all chunks then begin near the optimum,
        # the first of them in float32, as in fit.
        start = data.first_scores(_first_chunk_temperature)
        if start is not None:
            start = min(
                max(start + np.log(scale), -np.log(bounds[1])), -np.log(bounds[0])
            )
        u, n_iter, status = _newton_temperature(
            terms,
            -np.log(min(max(1.0, bounds[0]), bounds[1])) if start is None else start,
            data.total_weight,
            self.max_iter,
            self.tol,
            bounds,
            coarse_first=start is not None and 2.0**-60 <= scale <= 2.0**60,
        )
        self._set_temperature(float(np.exp(-u)) * scale, n_iter, status)

    def _set_temperature(self, temperature, n_iter, status):
        if status == "max_iter":
            warnings.warn(
                f"Temperature scaling did not converge in max_iter={self.max_iter} "
                f"iterations (T={temperature:.6g}); increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif status in ("lower_bound", "upper_bound"):
            warnings.warn(
                f"The likelihood is maximised at the {status.replace('_', ' ')} "
                f"T={temperature:g}: "
                + (
                    "every calibration sample is predicted correctly with a margin."
                    if status == "lower_bound"
                    else f"{UPPER_FACTOR:g} times the largest gap between the true "
                    "class's score and the top score; the scores carry no "
                    "information about the labels."
                ),
                UserWarning,
                stacklevel=4,
            )
        self.temperature_ = temperature
        self.n_iter_ = n_iter

    def _predict_proba(self, scores):
        # The scores as fitted (logits as given, log p for probabilities):
        # log-softmax would round away the information of tiny logits.
        logits = scores.logits
        return softmax(logits / logits.dtype.type(self.temperature_))
