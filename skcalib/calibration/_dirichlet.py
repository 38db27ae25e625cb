"""Linear maps of logits: vector scaling, matrix scaling, Dirichlet calibration.

All three fit ``softmax(W x + b)`` by penalised maximum likelihood with the
solvers of :mod:`skcalib.calibration._linear_solver`; they differ in the
shape of ``W`` (diagonal or full), in the features ``x`` (the scores as
given, or normalised log-probabilities) and in their default penalty.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from skcalib._base import BaseCalibrator
from skcalib._scores import softmax
from skcalib.calibration._linear_solver import (
    ChunkedPenalisedNLL,
    PenalisedNLL,
    fit_matrix,
    fit_vector,
)
from skcalib.calibration._scaling import fit_temperature

#: Ridge on every (scaled) parameter when the classes are separated.
TIE_BREAK = 1e-6

#: Problems with at most this many margin-parameter entries are checked for
#: separation before the fit; larger ones after a fit that looks divergent.
SEPARATION_FIRST_ENTRIES = 200_000

__all__ = [
    "DirichletCalibrator",
    "MatrixScalingCalibrator",
    "VectorScalingCalibrator",
]


class _LinearMapCalibrator(BaseCalibrator):
    """Shared fit and predict of ``softmax(W x + b)`` (not for direct use).

    Subclasses set ``_diagonal`` (vector scaling: ``W`` diagonal) and
    ``_features`` (``"logits"``: ``Scores.logits``, the scores as given up to
    the log of probabilities; ``"log_proba"``: normalised log-probabilities).
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "reg_mu": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": [Integral, None],
    }
    _diagonal = False
    _features = "logits"

    def _x(self, scores):
        return scores.logits if self._features == "logits" else scores.log_proba

    def _penalty_coefficients(self, k):
        """Coefficients ``C`` of ``sum C * (Theta - Theta0)**2`` (see solver)."""
        lam, mu = float(self.reg_lambda), float(self.reg_mu)
        if self._diagonal:
            return np.vstack((np.full(k, lam / k), np.full(k, mu / k)))
        c = np.empty((k, k + 1))
        if self.penalty == "odir":
            c[:, :k] = lam / (k * (k - 1))
            c[np.arange(k), np.arange(k)] = 0.0
        else:
            c[:, :k] = lam / (k * k)
        c[:, k] = mu / k
        return c

    def _fit(self, scores, y, sample_weight):
        x = self._x(scores)
        k = x.shape[1]
        problem = PenalisedNLL(
            x, y, sample_weight, self._penalty_coefficients(k), diagonal=self._diagonal
        )
        # Start from temperature scaling (W = I / T, b = 0: in every family
        # here, and at least as good as the identity, T = 1) when it fits
        # better: logits of 1e6 or 1e200 then start near the optimum instead
        # of deep in the saturated region where the solver crawls.
        temperature = fit_temperature(x, y, sample_weight)[0]
        beta = problem.x_scale / temperature
        start = (
            np.vstack((np.full(k, beta), np.zeros(k)))
            if self._diagonal
            else np.hstack((beta * np.eye(k), np.zeros((k, 1))))
        )
        n_jobs = effective_n_jobs(self.n_jobs)
        # The separation check (a linear program) runs before the fit on
        # small problems, where separation is common and the program cheap,
        # and otherwise only after a fit that looks like it diverges.
        small = problem.separation_size() <= SEPARATION_FIRST_ENTRIES
        tol = self._separation_check(problem) if small else self.tol
        status = self._solve(problem, k, n_jobs, start=start, tol=tol)
        if not small and self._diverging(status, beta, problem.x_scale):
            tol = self._separation_check(problem)
            if tol != self.tol:
                self._solve(problem, k, n_jobs, start=start, tol=tol)

    def _diverging(self, status, beta, x_scale):
        """Whether the fitted map looks like a run towards infinity: not
        converged, or scaled coefficients 20 times those of the temperature
        start (or intercepts beyond 20)."""
        scale = np.max(np.abs(self.coef_)) * x_scale
        return (
            status != "converged"
            or scale > 20 * max(beta, 1.0)
            or np.max(np.abs(self.intercept_)) > 20
        )

    def _fit_chunks(self, data):
        k = data.classes.size
        problem = ChunkedPenalisedNLL(
            data,
            "logits" if self._features == "logits" else "log_proba",
            self._penalty_coefficients(k),
            diagonal=self._diagonal,
        )
        self._solve(problem, k, 1)

    def _separation_check(self, problem):
        """Warn, and break the tie, when the likelihood has no maximum.

        With (quasi-)separated classes the free parameters (those without a
        penalty) run off to infinity along a direction the data cannot
        rank; the solver would stop anywhere on its way, at a point that
        depends on rounding (on the order of the rows). A ridge of
        :data:`TIE_BREAK` on every parameter makes the minimiser unique (as
        the ridge vanishes it tends to the maximum-margin map), and it is
        found to a gradient of ``1e-2 * TIE_BREAK``. Returns the tolerance.
        """
        n_sep, n_margins = problem.separation()
        if not n_sep:
            return self.tol
        problem.add_tie_break(TIE_BREAK)
        warnings.warn(
            f"{type(self).__name__}: the calibration scores separate the classes "
            f"({n_sep} of the {n_margins} sample/competitor "
            "margins can be made arbitrarily large): the likelihood has no "
            "maximum and its parameters are unbounded. A tie-breaking ridge "
            f"of {TIE_BREAK:g} gives a near-step map; set reg_lambda and reg_mu "
            "> 0 (tuned by cross-validation), or use more calibration data.",
            UserWarning,
            stacklevel=5,
        )
        return min(self.tol, 1e-2 * TIE_BREAK)

    def _solve(self, problem, k, n_jobs, start=None, tol=None):
        solver = fit_vector if self._diagonal else fit_matrix
        tol = self.tol if tol is None else tol
        theta, n_iter, status, gmax = solver(
            problem, max_iter=self.max_iter, tol=tol, n_jobs=n_jobs, start=start
        )
        name = type(self).__name__
        if status == "max_iter":
            warnings.warn(
                f"{name} did not converge in max_iter={self.max_iter} iterations "
                f"(largest gradient entry {gmax:.2e} > tol={tol:g}); increase "
                "max_iter or the regularisation (reg_lambda, reg_mu).",
                ConvergenceWarning,
                stacklevel=5,
            )
        elif status == "precision":
            warnings.warn(
                f"{name} stopped after {n_iter} iterations: the objective cannot "
                f"decrease further in float64, but the largest gradient entry "
                f"{gmax:.2e} > tol={tol:g}; increase tol or the regularisation.",
                ConvergenceWarning,
                stacklevel=5,
            )
        if self._diagonal:
            self.coef_, self.intercept_ = theta[0], theta[1]
        else:
            self.coef_ = np.ascontiguousarray(theta[:, :k])
            self.intercept_ = theta[:, k].copy()
        self.n_iter_ = int(n_iter)
        return status

    def _predict_proba(self, scores):
        x = self._x(scores)
        dtype = x.dtype
        coef = self.coef_.astype(dtype, copy=False)
        a = x * coef if self._diagonal else x @ coef.T
        a += self.intercept_.astype(dtype, copy=False)
        return softmax(a)


class VectorScalingCalibrator(_LinearMapCalibrator):
    """Vector scaling: one scale and one offset per class on the logits.

    .. math::

        \\hat p(y \\mid z) = \\operatorname{softmax}(w \\odot z + b),
        \\qquad w, b \\in \\mathbb{R}^K.

    Temperature scaling is the special case ``w = 1/T``, ``b = 0``; unlike
    it, vector scaling can change the predicted class. The fit starts from
    "no change" (``w = 1``, ``b = 0``) and minimises the weighted mean
    negative log-likelihood plus an optional ridge towards that start (see
    Notes); ``2K`` parameters need little data.

    ``z`` are the scores as given (:attr:`~skcalib._scores.Scores.logits`):
    2-D logits or decision values unchanged, ``log p`` for probabilities
    (floored at 1e-12), and the log-probabilities ``(log(1 - p), log p)`` of
    a 1-D binary score. Vector scaling is **not** invariant to adding a
    constant to a row of logits (``w * (z + c) = w * z + c w``): the logits
    and the log-probabilities of one model give different fits. Guo et al.
    use the logits; :class:`DirichletCalibrator` with a very large
    ``reg_lambda`` is vector scaling of the log-probabilities.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    reg_lambda : float, default=0.0
        Strength ``lambda >= 0`` of the penalty on ``w - 1``.
    reg_mu : float, default=0.0
        Strength ``mu >= 0`` of the penalty on the intercept ``b``.
    max_iter : int, default=100
        Newton iterations.
    tol : float, default=1e-8
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (gradient taken with the scores divided by
        ``max(1, max |z|)``, so that ``tol`` does not depend on their scale).
    n_jobs : int or None, default=None
        Threads over the blocks of rows (numpy releases the GIL); ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1``
        all cores. The result does not depend on it. BLAS is kept to one
        thread during the fit (the products are small).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    coef_ : ndarray of shape (n_classes,)
        The scales ``w`` (the diagonal of ``W``).
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``; with ``reg_mu=0`` they are defined up to a common
        constant (softmax ignores it) and returned with zero sum.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : one shared scale; never changes the prediction.
    MatrixScalingCalibrator : a full matrix ``W``.
    DirichletCalibrator : a full, regularised matrix on log-probabilities.

    Notes
    -----
    With sample weights ``s_i``, ``w`` and ``b`` minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(w \\odot z_i + b)
        - (w \\odot z_i + b)_{y_i}\\right)}{\\sum_i s_i}
        + \\frac{\\lambda}{K} \\sum_k (w_k - 1)^2
        + \\frac{\\mu}{K} \\sum_k b_k^2 .

    The NLL is a weighted *mean*: the penalty does not fade as the
    calibration set grows, and scaling all weights changes nothing. It is
    minimised by Newton's method with the exact ``2K x 2K`` Hessian and a
    backtracking line search, in float64, reading the scores by blocks of
    rows (float32 scores are never copied whole in float64). An iteration
    costs ``O(n K^2)`` time and ``O(K^2)`` memory, plus ``O(K)`` per row of
    a block. Scores that separate the classes get a warning and the
    tie-breaking ridge described in :class:`MatrixScalingCalibrator`.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import VectorScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = 2.0 * rng.normal(size=(20000, 3))           # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(20000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> scores = z * [3.0, 1.0, 0.5] + [1.0, 0.0, 0.0]  # distorted per class
    >>> vs = VectorScalingCalibrator().fit(scores, y)
    >>> vs.coef_.round(1)                               # undoes the scales
    array([0.3, 1. , 2. ])
    >>> vs.intercept_.round(1)                          # and the offset (sum 0)
    array([-0.2,  0.1,  0.1])
    >>> vs.predict_proba(scores[:2]).sum(axis=1)
    array([1., 1.])
    """

    _diagonal = True

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        reg_lambda=0.0,
        reg_mu=0.0,
        max_iter=100,
        tol=1e-8,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs


class MatrixScalingCalibrator(_LinearMapCalibrator):
    """Matrix scaling: an affine map of the logits, then softmax.

    .. math::

        \\hat p(y \\mid z) = \\operatorname{softmax}(W z + b),
        \\qquad W \\in \\mathbb{R}^{K \\times K},\\ b \\in \\mathbb{R}^K.

    The fit starts from "no change" (``W = I``, ``b = 0``) and minimises the
    weighted mean negative log-likelihood plus a penalty (see Notes); by
    default there is none: the matrix scaling of Guo et al. 2017. Its
    ``K (K + 1)`` parameters overfit quickly (Guo et al. found it worse than
    temperature scaling on CIFAR-100): with many classes set ``reg_lambda``
    (tuned by cross-validation) -- with ``penalty="odir"`` this is the
    "MS-ODIR" of Kull et al. 2019 -- or use :class:`DirichletCalibrator`.

    ``z`` are the scores as given (:attr:`~skcalib._scores.Scores.logits`):
    2-D logits or decision values unchanged, ``log p`` for probabilities
    (floored at 1e-12), and the log-probabilities ``(log(1 - p), log p)`` of
    a 1-D binary score. ``softmax(W z + b)`` is **not** invariant to adding a
    constant to a row of ``z`` (unless the rows of ``W`` have equal sums):
    the logits and the log-probabilities of one model give different fits.
    On probabilities and 1-D binary scores, ``z`` is ``log p`` and matrix
    scaling is the same model as :class:`DirichletCalibrator`: with equal
    ``penalty``, ``reg_lambda`` and ``reg_mu`` the two give the same fit up
    to rounding.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    penalty : {"odir", "l2"}, default="odir"
        Form of the penalty on ``W`` (see Notes): ``"odir"`` penalises the
        off-diagonal entries only (a large ``reg_lambda`` gives vector
        scaling); ``"l2"`` penalises ``W - I`` (a large ``reg_lambda`` gives
        back the scores, up to the intercept).
    reg_lambda : float, default=0.0
        Strength ``lambda >= 0`` of the penalty on ``W``.
    reg_mu : float, default=0.0
        Strength ``mu >= 0`` of the penalty on the intercept ``b``.
    max_iter : int, default=1000
        L-BFGS iterations (over all restarts).
    tol : float, default=1e-6
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (gradient taken with the scores divided by
        ``max(1, max |z|)``, so that ``tol`` does not depend on their scale).
    n_jobs : int or None, default=None
        Threads over the blocks of rows (numpy releases the GIL); ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1``
        all cores. The result does not depend on it. BLAS is kept to one
        thread during the fit (the products are small).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix ``W``; row ``j`` gives the calibrated logit of class ``j``.
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``.
    n_iter_ : int
        L-BFGS iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    VectorScalingCalibrator : diagonal ``W``, ``2K`` parameters.
    DirichletCalibrator : the same map on log-probabilities, ODIR-regularised.
    TemperatureCalibrator : ``W = I / T``, ``b = 0``.

    Notes
    -----
    With sample weights ``s_i`` and ``a_i = W z_i + b``, ``W`` and ``b``
    minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(a_i)
        - a_{i, y_i}\\right)}{\\sum_i s_i} + P(W) + \\frac{\\mu}{K}
        \\sum_j b_j^2,

    with ``P(W) = lambda / (K (K - 1)) * sum_{j != l} W_jl**2`` for
    ``penalty="odir"`` (off-diagonal and intercept regularisation, Kull et
    al. 2019) and ``P(W) = lambda / K**2 * sum_{j, l} (W - I)_jl**2`` for
    ``"l2"``. The NLL is a weighted *mean*: the penalty does not fade as the
    calibration set grows, and scaling all weights changes nothing.

    Softmax ignores a constant added to every calibrated logit, so a column
    of ``[W | b]`` that no penalty touches (all of them when
    ``reg_lambda=reg_mu=0``) is defined only up to a constant; it is
    returned with the mean of ``W - I`` (or of ``b``) over its rows equal
    to zero (unless the identity is more than 1e6 times the fitted column,
    as for logits of 1e200, where that shift would round the fit away).

    The solver starts from the better of the identity map and temperature
    scaling (``W = I / T``, fitted first), so that scores of any scale
    start near the optimum. When the calibration data are (quasi-)
    separated -- some direction of the unpenalised parameters never lowers
    any sample's margin and raises some (a linear program decides it, up
    to 4e6 margin-parameter entries) -- the likelihood has no maximum and
    the solver would stop anywhere on its way to infinity, at a point that
    depends on the order of the rows. A ``UserWarning`` then says so, and a
    tie-breaking ridge of ``1e-6`` on every parameter (on the features
    divided by ``max |z|``) makes the minimiser unique: a near-step map,
    the same for any order of the rows.

    Solver: L-BFGS-B with the exact gradient, in float64, reading the scores
    by blocks of rows (float32 scores are never copied whole in float64), in
    variables preconditioned by the exact per-class diagonal blocks of the
    Hessian, refreshed each time the gradient drops a hundredfold. Cost per
    iteration ``O(n K^2)``; the preconditioner costs ``O(n K^3)`` per
    refresh and ``O(K^3)`` memory (8 MB at ``K = 100``; above 128 classes
    only its diagonal, ``O(K^2)``, is kept). ``K = 100``, ``n = 5000``
    takes a few seconds (see the user guide).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import MatrixScalingCalibrator, TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(20000, 3))                 # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(20000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> mix = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
    >>> scores = z @ mix.T                              # classes mixed up
    >>> ms = MatrixScalingCalibrator().fit(scores, y)
    >>> err = np.abs(ms.predict_proba(scores) - p).max()   # true probabilities
    >>> round(float(err), 2)
    0.05
    >>> ts = TemperatureCalibrator().fit(scores, y)      # cannot undo a mixing
    >>> round(float(np.abs(ts.predict_proba(scores) - p).max()), 2)
    0.74
    """

    _parameter_constraints: dict = {
        **_LinearMapCalibrator._parameter_constraints,
        "penalty": [StrOptions({"odir", "l2"})],
    }

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        penalty="odir",
        reg_lambda=0.0,
        reg_mu=0.0,
        max_iter=1000,
        tol=1e-6,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.penalty = penalty
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs


class DirichletCalibrator(MatrixScalingCalibrator):
    """Dirichlet calibration: regularised matrix scaling of log-probabilities.

    .. math::

        \\hat p(y \\mid p) = \\operatorname{softmax}(W \\log p + b)

    (Kull et al. 2019), where ``log p`` are the normalised log-probabilities
    of the model (probabilities floored at 1e-12; the log-softmax of
    logits). It is the exact calibration map when the class-conditional
    distributions of ``p`` are Dirichlet; for two classes it is beta
    calibration, ``sigmoid(a log p - c log(1 - p) + d)``. ``W`` and ``b``
    minimise the weighted mean negative log-likelihood plus, by default, the
    ODIR penalty (off-diagonal and intercept regularisation; see Notes). The
    diagonal of ``W`` is free, so a large ``reg_lambda`` gives vector scaling
    of ``log p`` and a small one full matrix scaling.

    **Relation to matrix scaling.** The map is
    :class:`MatrixScalingCalibrator` applied to ``log p``. On probabilities
    and on 1-D binary scores the two classes see the same features, and with
    equal ``penalty``, ``reg_lambda`` and ``reg_mu`` give the same fit up to
    rounding: only their defaults differ (this one is regularised). On 2-D
    logits they differ: matrix scaling uses the logits as given, Dirichlet
    calibration their log-softmax, which removes the per-row constant (so
    logits and their softmax probabilities give the same fit here).

    The strengths are meant to be tuned, e.g. by
    :class:`~sklearn.model_selection.GridSearchCV` over ``reg_lambda`` and
    ``reg_mu`` (powers of ten) with the log-loss. The defaults minimised
    the 5-fold cross-validated log-loss, summed over two CIFAR-100 networks
    (``K = 100``, 5000 calibration rows; see the user guide): strong, because
    there are twice as many parameters as rows. With fewer classes or more
    data a smaller ``reg_lambda`` is usually better; too large a value only
    falls back to vector scaling.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    penalty : {"odir", "l2"}, default="odir"
        Form of the penalty on ``W`` (see Notes): ``"odir"`` penalises the
        off-diagonal entries only; ``"l2"`` penalises ``W - I``.
    reg_lambda : float, default=1e4
        Strength ``lambda >= 0`` of the penalty on ``W``.
    reg_mu : float, default=1.0
        Strength ``mu >= 0`` of the penalty on the intercept ``b``.
    max_iter : int, default=1000
        L-BFGS iterations (over all restarts).
    tol : float, default=1e-6
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (gradient taken with ``log p`` divided by
        ``max(1, max |log p|)``, so that ``tol`` does not depend on its
        scale).
    n_jobs : int or None, default=None
        Threads over the blocks of rows (numpy releases the GIL); ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1``
        all cores. The result does not depend on it. BLAS is kept to one
        thread during the fit (the products are small).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix ``W`` applied to ``log p``; row ``j`` gives the calibrated
        logit of class ``j``.
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``.
    n_iter_ : int
        L-BFGS iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    MatrixScalingCalibrator : the same map on the scores as given.
    VectorScalingCalibrator : diagonal ``W``.
    TemperatureCalibrator : ``W = I / T``, ``b = 0``.

    Notes
    -----
    With sample weights ``s_i`` and ``a_i = W \\log p_i + b``, ``W`` and
    ``b`` minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(a_i)
        - a_{i, y_i}\\right)}{\\sum_i s_i}
        + \\frac{\\lambda}{K (K - 1)} \\sum_{j \\ne l} W_{jl}^2
        + \\frac{\\mu}{K} \\sum_j b_j^2

    (``penalty="odir"``; ``"l2"`` replaces the middle term by
    ``lambda / K**2 * sum_{j, l} (W - I)_jl**2``). The NLL is a weighted
    *mean*, as in Kull et al.'s code: the penalty does not fade as the
    calibration set grows, and scaling all weights changes nothing. Solver,
    cost and identification of ``W`` and ``b`` are those of
    :class:`MatrixScalingCalibrator`.

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [3] M. Kull, T. Silva Filho and P. Flach, "Beta calibration: a
       well-founded and easily implemented improvement on logistic
       calibration for binary classifiers", AISTATS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import DirichletCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 4, 4000)
    >>> logits = 3.0 * (rng.normal(size=(4000, 4)) + np.eye(4)[y])  # too sharp
    >>> proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    >>> dc = DirichletCalibrator().fit(proba, y)
    >>> dc.coef_.shape
    (4, 4)
    >>> bool(np.all(np.diag(dc.coef_) < 1))  # shrinks the over-confident scores
    True
    """

    _features = "log_proba"

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        penalty="odir",
        reg_lambda=1e4,
        reg_mu=1.0,
        max_iter=1000,
        tol=1e-6,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.penalty = penalty
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
