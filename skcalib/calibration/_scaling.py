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

from skcalib._base import BaseCalibrator
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
    w = sample_weight
    pos = y > 0.5
    n_pos = float(w[pos].sum()) if w is not None else float(pos.sum())
    n_neg = float(w[~pos].sum()) if w is not None else float((~pos).sum())
    scale = max(1.0, float(np.max(np.abs(s))))
    terms = partial(_platt_chunk_terms, n_pos=n_pos, n_neg=n_neg, scale=scale)
    return _solve_platt(
        lambda p: terms(s, pos, w, p), n_pos, n_neg, scale, max_iter, tol
    )


def _platt_chunk_terms(s, pos, w, params, *, n_pos, n_neg, scale):
    """:func:`_platt_terms` with Platt's targets, on scores divided by
    ``scale``."""
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    return _platt_terms(params, s / scale, t, w)


def _solve_platt(terms, n_pos, n_neg, scale, max_iter, tol):
    """Newton from the smoothed base rate; ``(a, b, n_iter, converged)``."""
    params = np.array([0.0, np.log((n_pos + 1.0) / (n_neg + 1.0))])
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

    with ``N_+``/``N_-`` the weighted counts of positives and negatives. The
    smoothing is the regularisation: the targets are never 0 or 1, so the
    optimum is finite even when the scores separate the classes perfectly.
    The convex problem is solved by Newton's method with a line search.

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
        n_neg = data.total_weight - n_pos
        (abs_max,) = data.map_scores(
            partial(_abs_max_chunk, view=view),
            combine=lambda parts: (max(p[0] for p in parts if p is not None),),
        )
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
def _temperature_terms(z, z_max, dy, beta, w, chunk_rows, n_jobs=1, coarse=False):
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
    """
    dtype = np.float32 if coarse else np.float64

    def block(start):
        stop = start + chunk_rows
        dc = np.subtract(
            z[start:stop], z_max[start:stop, None], dtype=dtype, casting="unsafe"
        )
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


def fit_temperature(
    logits,
    y,
    sample_weight=None,
    *,
    max_iter=100,
    tol=1e-8,
    bounds=(1e-4, 1e4),
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

    Returns
    -------
    temperature : float
    n_iter : int
        Newton/bisection iterations on the full data.
    status : {"converged", "max_iter", "lower_bound", "upper_bound"}
    """
    z = logits
    n = z.shape[0]
    z_max = z.max(axis=1).astype(np.float64)
    dy = z[np.arange(n), y] - z_max
    active = dy if sample_weight is None else dy[sample_weight > 0]
    if np.all(active == 0):
        if np.array_equal(z_max, z.min(axis=1)):
            # Every row is constant: the NLL does not depend on T at all.
            return 1.0, 0, "converged"
        # Every sample's true class has the top score: the NLL decreases in
        # beta without bound, the infimum is at T -> 0.
        return float(bounds[0]), 0, "lower_bound"
    chunk_rows = max(1, 2**16 // max(1, z.shape[1]))

    def terms_of(rows):
        zr, z_max_r, dy_r = z[rows], z_max[rows], dy[rows]
        w_r = None if sample_weight is None else sample_weight[rows]

        def terms(beta, coarse):
            return _temperature_terms(
                zr, z_max_r, dy_r, beta, w_r, chunk_rows, n_jobs, coarse=coarse
            )

        return terms, float(zr.shape[0] if w_r is None else w_r.sum())

    u = 0.0
    if n > 200_000:
        terms, total = terms_of(slice(None, None, 16))
        if total > 0:
            u, _, status = _newton_temperature(terms, u, total, max_iter, 1e-3, bounds)
            if status != "converged":
                u = 0.0
    terms, total = terms_of(slice(None))
    u, n_iter, status = _newton_temperature(
        terms, u, total, max_iter, tol, bounds, coarse_first=n > 200_000
    )
    return float(np.exp(-u)), n_iter, status


def _first_chunk_temperature(scores, y, w):
    """``log(1 / T)`` fitted to 1e-3 on one chunk, or None."""
    if w is not None and not w.sum() > 0:
        return None
    temperature, _, status = fit_temperature(scores.logits, y, w, tol=1e-3)
    return -np.log(temperature) if status == "converged" else None


def _temperature_chunk_terms(scores, y, w, *, beta, coarse):
    """:func:`_temperature_terms` of one chunk of scores."""
    z = scores.logits
    z_max = z.max(axis=1).astype(np.float64)
    dy = z[np.arange(z.shape[0]), y] - z_max
    chunk_rows = max(1, 2**16 // max(1, z.shape[1]))
    return tuple(
        _temperature_terms(z, z_max, dy, beta, w, chunk_rows, 1, coarse=coarse)
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
    starting point, so the scores are read about three times in all. ``T``
    is kept in ``[1e-4, 1e4]``: when every calibration sample is predicted
    correctly the likelihood increases without bound as
    ``T -> 0``, and ``T`` stops at ``1e-4`` with a warning.

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
        # Same Newton iteration, each pass a sum over the chunks. A problem
        # whose NLL does not depend on T (constant rows) stops at T = 1; one
        # where every sample is right with a margin runs to the lower bound.
        def terms(beta, coarse):
            return data.map_scores(
                partial(_temperature_chunk_terms, beta=beta, coarse=coarse)
            )

        # Start from the temperature of the first chunk (read once more, on
        # its own): the passes over all chunks then begin near the optimum,
        # the first of them in float32, as in fit.
        start = data.first_scores(_first_chunk_temperature)
        u, n_iter, status = _newton_temperature(
            terms,
            0.0 if start is None else start,
            data.total_weight,
            self.max_iter,
            self.tol,
            (1e-4, 1e4),
            coarse_first=start is not None,
        )
        self._set_temperature(float(np.exp(-u)), n_iter, status)

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
                    else "the scores carry no information about the labels."
                ),
                UserWarning,
                stacklevel=4,
            )
        self.temperature_ = temperature
        self.n_iter_ = n_iter

    def _predict_proba(self, scores):
        log_proba = scores.log_proba
        return softmax(log_proba / log_proba.dtype.type(self.temperature_))
