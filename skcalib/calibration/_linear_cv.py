"""Matrix scaling and Dirichlet calibration with the strengths chosen by
cross-validated NLL along a warm-started regularisation path."""

import warnings
from numbers import Integral, Real

import numpy as np

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, StrOptions
from skcalib.calibration._linear_map import (
    _LinearMapCalibrator,
    auto_strengths,
)
from skcalib.calibration._matrix_scaling import MatrixScalingCalibrator

__all__ = ["DirichletCalibratorCV", "MatrixScalingCalibratorCV"]

#: The default ``reg_lambdas`` grid: ``"auto"``'s strength times these.
DEFAULT_LAMBDA_FACTORS = np.logspace(-2.0, 2.0, 9)


def _grid(values, auto, name):
    """A grid of strengths: ``None`` (``auto`` times the default factors), or
    the given values (finite, >= 0), sorted from the strongest."""
    if values is None:
        return np.sort(auto * DEFAULT_LAMBDA_FACTORS)[::-1]
    grid = np.asarray(values, dtype=np.float64).ravel()
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(
            f"{name} must hold at least one finite value >= 0, got {values!r}."
        )
    return np.unique(grid)[::-1]


#: Start each fit after the second of a row from the linear extrapolation,
#: in ``log reg_lambda``, of the two previous fits (else from the previous).
EXTRAPOLATE = True


def _extrapolated(maps, lams):
    """The warm map at ``lams[2]`` extrapolated linearly in ``log lam`` from
    the maps at ``lams[0]`` and ``lams[1]`` (the latter's curvature); the
    map at ``lams[1]`` when a strength is 0."""
    (classes, w0, b0, _), (_, w1, b1, curvature) = maps
    if np.any(lams <= 0):
        return maps[1]
    log = np.log(lams)
    t = (log[2] - log[1]) / (log[1] - log[0])
    return classes, w1 + t * (w1 - w0), b1 + t * (b1 - b0), curvature


#: Mean scores within this (times ``max(1, |lowest|)``) of the lowest are
#: ties: fits that stop at a gradient of ``tol = 1e-6`` move a held-out NLL
#: by up to about 1e-5 (measured on CIFAR-100, K = 100, against ``tol =
#: 1e-7``), so smaller differences do not rank the points.
SCORE_TIE = 1e-5


def _choice(mean):
    """``(i, j)`` of the first grid point (strongest ``reg_mu``, then
    strongest ``reg_lambda``) whose mean score ties with the lowest."""
    best = float(mean.min())
    first = np.flatnonzero(mean.ravel() <= best + SCORE_TIE * max(1.0, abs(best)))[0]
    return np.unravel_index(first, mean.shape)


class _LinearMapCV(_LinearMapCalibrator):
    """Cross-validated strengths for a full linear map (not for direct use)."""

    _array_api_native = False  # array-API inputs: the numpy code, on the host

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "penalty": [StrOptions({"odir", "l2_identity", "l2_zero"})],
        "reg_lambdas": ["array-like", None],
        "reg_mus": ["array-like", None],
        "cv": ["cv_object"],
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
        classes=None,
        penalty="odir",
        reg_lambdas=None,
        reg_mus=None,
        cv=5,
        max_iter=1000,
        tol=1e-6,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.penalty = penalty
        self.reg_lambdas = reg_lambdas
        self.reg_mus = reg_mus
        self.cv = cv
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs

    def _counts_weights(self):
        # a default grid is "auto"'s strengths times factors: it counts rows
        return self.reg_lambdas is None or self.reg_mus is None

    def _inner(self, n_classes):
        # the labels are encoded: classes= keeps a column whose class is
        # absent from a fold (or from all of y, see classes=)
        return MatrixScalingCalibrator(
            score_type="logit",
            classes=np.arange(n_classes),
            penalty=self.penalty,
            max_iter=self.max_iter,
            tol=self.tol,
            n_jobs=self.n_jobs,
            warm_start=True,
        )

    def _path_scores(self, x, y, w, folds, lams, mus):
        """Held-out NLL of every grid point and fold (shape ``(n_mus,
        n_lambdas, n_folds)``) and fold 0's map at each point."""
        scores_ = np.empty((mus.size, lams.size, len(folds)))
        first_maps = {}  # fold 0's map at each point: the refit's warm start
        for f, (train, test) in enumerate(folds):
            inner = self._inner(x.shape[1])
            wf = None if w is None else w[train]
            row_start = None
            for i, mu in enumerate(mus):
                path = []  # this row's maps so far
                for j, lam in enumerate(lams):
                    if j == 0 and row_start is not None:
                        inner._warm_map = row_start  # the previous row's start
                    elif j >= 2 and EXTRAPOLATE:
                        inner._warm_map = _extrapolated(path[-2:], lams[j - 2 : j + 1])
                    inner.set_params(reg_lambda=lam, reg_mu=mu)
                    inner.fit(x[train], y[train], wf)
                    path.append(inner._warm_map)
                    if f == 0:
                        first_maps[i, j] = inner._warm_map
                    q = inner.predict_proba(x[test])
                    ll = np.log(
                        np.maximum(q[np.arange(test.size), y[test]], 1e-300),
                        dtype=np.float64,
                    )
                    scores_[i, j, f] = (
                        -ll.mean() if w is None else -(ll @ w[test]) / w[test].sum()
                    )
                row_start = path[0]
        return scores_, first_maps

    def _fit(self, scores, y, sample_weight):
        x = np.asarray(self._x(scores))
        n, k = x.shape
        auto_lam, auto_mu = auto_strengths(k, self._total_weight(sample_weight, n))
        if self.penalty != "odir":  # the ODIR rule, per entry of W
            auto_lam *= k / max(k - 1, 1)
        lams = _grid(self.reg_lambdas, auto_lam, "reg_lambdas")
        mus = (
            np.array([auto_mu])
            if self.reg_mus is None
            else _grid(self.reg_mus, auto_mu, "reg_mus")
        )
        from sklearn.model_selection import check_cv  # not on import skcalib

        folds = list(check_cv(self.cv, y, classifier=True).split(x, y))
        for i, (train, _) in enumerate(folds):
            # a class absent from all of y (classes=) has no rows to miss
            missing = np.setdiff1d(np.unique(y), y[train])
            if missing.size:
                raise ValueError(
                    f"{type(self).__name__}: training fold {i} of cv={self.cv!r} "
                    f"has no sample of class {self.classes_[missing[0]]!r}; use "
                    "fewer folds or more calibration data."
                )
        w = sample_weight
        caught = {}
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            scores_, first_maps = self._path_scores(x, y, w, folds, lams, mus)
        for item in log:
            caught.setdefault((item.category, str(item.message)), item)
        i, j = _choice(scores_.mean(axis=2))
        self.reg_lambdas_, self.reg_mus_, self.cv_scores_ = lams, mus, scores_
        final = self._inner(x.shape[1]).set_params(reg_lambda=lams[j], reg_mu=mus[i])
        final._warm_map = first_maps[i, j]
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            final.fit(x, y, w)
        for item in log:
            caught.setdefault((item.category, str(item.message)), item)
        for (category, message), _ in caught.items():
            warnings.warn(
                f"{type(self).__name__} (inner fit): {message}", category, stacklevel=4
            )
        self.coef_, self.intercept_ = final.coef_, final.intercept_
        self.n_iter_ = final.n_iter_
        self.penalty_ = self.penalty
        self.reg_lambda_, self.reg_mu_ = float(lams[j]), float(mus[i])


_DOC = """{title}

    ``softmax(W x + b)`` on {features}, penalised as in
    :class:`{base}`, with ``(reg_lambda, reg_mu)`` chosen from a grid by
    the mean held-out NLL over the ``cv`` folds, then refitted on all the
    data. Along the path (``reg_lambda`` from the strongest, for each
    ``reg_mu``) each fit starts from the previous one (the problem is
    convex: the optimum does not depend on the start, only the time), and
    the final refit from fold 0's fit at the chosen point: at ``K = 100``,
    ``n = 5000`` a grid point costs a fraction of a cold fit (see
    ``python -m benchmarks regularisation``).

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {{"auto", "logit", "probability"}}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {{"auto", "decision_function", "predict_proba"}}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    penalty : {{"odir", "l2_identity", "l2_zero"}}, default="odir"
        Form of the penalty (see :class:`{base}`).
    reg_lambdas : array-like or None, default=None
        The ``reg_lambda`` grid; ``None``: the ``"auto"`` strength
        ``300 K (K - 1) / n`` times ``10**[-2, -1.5, ..., 2]`` (9
        values; for the L2 penalties ``300 K^2 / n`` times the same), ``n``
        the sum of ``sample_weight`` (or the number of rows): with a default
        grid the weights are repetition counts (see
        :class:`{base}`).
        Kull et al.'s grid ``lambda'`` maps as ``lambda' K (K - 1)`` (ODIR).
    reg_mus : array-like or None, default=None
        The ``reg_mu`` grid; ``None``: the ``"auto"`` strength ``K /
        n`` alone. Kull et al.'s ``mu'`` maps as ``mu' K``.
    cv : int, cross-validation generator or iterable, default=5
        Folds (:func:`sklearn.model_selection.check_cv`, stratified for an
        integer, without shuffling); every training fold must hold every
        class.
    max_iter : int, default=1000
        L-BFGS iterations of each fit.
    tol : float, default=1e-6
        Gradient tolerance of each fit (see :class:`{base}`).
    n_jobs : int or None, default=None
        Threads over the row blocks of each fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix ``W`` of the refit.
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b`` of the refit.
    penalty_ : str
        The penalty form.
    reg_lambda_, reg_mu_ : float
        The chosen strengths (the strongest among tied scores, see Notes).
    reg_lambdas_, reg_mus_ : ndarray
        The grids, strongest first.
    cv_scores_ : ndarray of shape (n_mus, n_lambdas, n_folds)
        Held-out mean NLL of each grid point and fold.
    n_iter_ : int
        L-BFGS iterations of the refit.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    {base} : one fit with given (or ``"auto"``) strengths.

    Notes
    -----
    The held-out NLL of a fold is the weighted mean of ``-log q_y`` over
    its rows (``q`` floored at 1e-300); the grid point with the lowest mean
    over folds wins, where means within ``1e-5 max(1, |lowest|)`` of the
    lowest tie (below the accuracy of fits to ``tol = 1e-6``) and the first
    of the ties (strongest ``reg_mu``, then strongest ``reg_lambda``) wins.
    Warnings of the inner fits are issued once each.

    Along a row, each fit after the second starts from the linear
    extrapolation (in ``log reg_lambda``) of the two previous fits, and
    every warm fit keeps the preconditioner of the fit it starts from (see
    :mod:`skcalib._core.solvers.linear`): Kull et al.'s full grid at ``K =
    100``, ``n = 5000`` (27 x 9 points, 5 folds) takes about 0.2 s of CPU
    a point and fold, 4 minutes in all (``python -m benchmarks.bench_cv_grid
    --paper-grid``).

    Array API: with ``array_api_dispatch=True``, inputs of another namespace
    are fitted by the numpy code on the host (one transfer each way); the
    fitted arrays and predictions come back in the input's namespace and
    device.

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import {name}
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 4, 2000)
    >>> logits = 3.0 * (rng.normal(size=(2000, 4)) + np.eye(4)[y])  # too sharp
    >>> proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    >>> cal = {name}(cv=3).fit(proba, y)
    >>> cal.cv_scores_.shape                  # 1 mu x 9 lambdas x 3 folds
    (1, 9, 3)
    >>> bool(cal.reg_lambda_ in cal.reg_lambdas_)
    True
    """


class MatrixScalingCalibratorCV(_LinearMapCV):
    _features = "logits"


class DirichletCalibratorCV(_LinearMapCV):
    _features = "log_proba"


MatrixScalingCalibratorCV.__doc__ = _DOC.format(
    title="Matrix scaling with cross-validated regularisation (MS-ODIR).",
    features="the scores as given (logits, or ``log p``)",
    base="MatrixScalingCalibrator",
    name="MatrixScalingCalibratorCV",
)
DirichletCalibratorCV.__doc__ = _DOC.format(
    title="Dirichlet calibration with cross-validated regularisation (Dir-ODIR).",
    features="the normalised log-probabilities ``log p``",
    base="DirichletCalibrator",
    name="DirichletCalibratorCV",
)
