"""Shared fit and predict of ``softmax(W x + b)``: the base of vector scaling,
matrix scaling and Dirichlet calibration, the penalty forms and the
data-size rule behind ``reg_lambda="auto"``."""

import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval
from skcalib._core.scores import softmax
from skcalib._core.solvers.linear import PenalisedNLL, fit_matrix, fit_vector
from skcalib._core.solvers.temperature import fit_temperature
from skcalib._core.weights import check_count_weights
from skcalib._core.xp import solvers_linear as xp_linear
from skcalib._core.xp import to_numpy
from skcalib._core.xp.scores import softmax as xp_softmax
from skcalib.calibration._linear_chunks import ChunkedPenalisedNLL

__all__ = []

#: Ridge on every (scaled) parameter when the classes are separated.
TIE_BREAK = 1e-6

#: Problems with at most this many margin-parameter entries are checked for
#: separation before the fit; larger ones after a fit that looks divergent.
SEPARATION_FIRST_ENTRIES = 200_000

#: ``reg_lambda="auto"`` is ``AUTO_LAMBDA * K (K - 1) / n`` (ODIR), ``n``
#: the total weight (:func:`weight_total`).
AUTO_LAMBDA = 300.0

#: ``reg_mu="auto"`` is ``AUTO_MU * K / n``.
AUTO_MU = 1.0

#: Penalty forms of a full matrix ``W``; ``"l2"`` is the deprecated name of
#: ``"l2_identity"``.
PENALTIES = ("odir", "l2_identity", "l2_zero")


def weight_total(sample_weight, n):
    """The number of calibration rows the ``"auto"`` strengths count: the
    sum of the weights, read as repetition counts (``n`` unweighted), so
    that a weight of 2 is a duplicated row (scikit-learn's convention).

    Unlike Kish's effective size ``(sum s)^2 / sum s^2`` (the rule before),
    it depends on the scale of the weights: weights ``c s`` count as ``c``
    times as many rows."""
    if sample_weight is None:
        return float(n)
    return float(np.sum(sample_weight, dtype=np.float64))


def auto_strengths(k, n_eff):
    """``(reg_lambda, reg_mu)`` of ``"auto"``: ODIR strengths of
    ``AUTO_LAMBDA * K (K - 1) / n`` and ``AUTO_MU * K / n``, ``n`` the
    total weight (:func:`weight_total`; at least 1).

    In the penalised *mean* NLL this is a Gaussian prior of fixed variance
    on every off-diagonal entry of ``W`` (``1 / (2 AUTO_LAMBDA)``) and on
    every intercept (``1 / (2 AUTO_MU)``) of the summed log-likelihood: it
    fades as the data grow, and is strong when ``W`` has more entries than
    there are rows.
    """
    n_eff = max(n_eff, 1.0)
    return AUTO_LAMBDA * k * max(k - 1, 1) / n_eff, AUTO_MU * k / n_eff


def penalty_coefficients(k, penalty, lam, mu, diagonal):
    """Coefficients ``C`` of ``sum C * (Theta - centre)**2`` (see the solver)
    and the centre, ``"identity"`` or ``"zero"``."""
    lam, mu = float(lam), float(mu)
    if diagonal:
        return np.vstack((np.full(k, lam / k), np.full(k, mu / k))), "identity"
    c = np.empty((k, k + 1))
    if penalty == "odir":
        c[:, :k] = lam / (k * (k - 1)) if k > 1 else 0.0
        c[np.arange(k), np.arange(k)] = 0.0
    else:
        c[:, :k] = lam / (k * k)
    c[:, k] = mu / k
    return c, "zero" if penalty == "l2_zero" else "identity"


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
    _array_api_native = True

    @property
    def _rescale_sample_weight(self):
        # "auto" strengths count the calibration rows: the weights are
        # repetition counts (weight 2 is a duplicated row), taken as given
        # (the solvers divide them by their maximum, then their sum).
        return not self._counts_weights()

    def _counts_weights(self):
        return any(
            isinstance(getattr(self, name, None), str)
            for name in ("reg_lambda", "reg_mu")
        )

    def _total_weight(self, sample_weight, n):
        if self._counts_weights():
            check_count_weights(sample_weight, type(self).__name__)
        return weight_total(sample_weight, n)

    def _x(self, scores):
        return scores.logits if self._features == "logits" else scores.log_proba

    def _penalty_name(self):
        penalty = getattr(self, "penalty", None)
        if penalty == "l2":
            warnings.warn(
                f"{type(self).__name__}: penalty='l2' is deprecated and will be "
                "removed; it means 'l2_identity' (ridge on W - I, shrinking "
                "towards the scores as given). Kull et al.'s Dir-L2, a ridge on "
                "W and b shrinking towards 0, is penalty='l2_zero'.",
                FutureWarning,
                stacklevel=6,
            )
            return "l2_identity"
        return penalty

    def _resolve_strengths(self, k, n_eff):
        """Set ``penalty_``, ``reg_lambda_`` and ``reg_mu_`` (``"auto"``
        resolved by :func:`auto_strengths`); returns ``(C, centre)``."""
        penalty = None if self._diagonal else self._penalty_name()
        lam, mu = self.reg_lambda, self.reg_mu
        if isinstance(lam, str) or isinstance(mu, str):
            if penalty != "odir":
                raise ValueError(
                    f"{type(self).__name__}: reg_lambda='auto' and reg_mu='auto' "
                    f"are defined for penalty='odir' only, got penalty="
                    f"{self.penalty!r}; give reg_lambda and reg_mu as numbers."
                )
            auto_lam, auto_mu = auto_strengths(k, n_eff)
            lam = auto_lam if isinstance(lam, str) else lam
            mu = auto_mu if isinstance(mu, str) else mu
        self.reg_lambda_, self.reg_mu_ = float(lam), float(mu)
        if penalty is not None:
            self.penalty_ = penalty
        return penalty_coefficients(k, penalty, lam, mu, self._diagonal)

    def _warm_theta(self, problem, k):
        """The previous fit's map in the solver's scaled parameters, for
        ``warm_start=True`` (None without a usable previous fit)."""
        if not getattr(self, "warm_start", False):
            return None
        warm = getattr(self, "_warm_map", None)
        if warm is None:
            return None
        classes, coef, intercept, curvature = warm
        current = to_numpy(self.classes_)
        same = classes.shape == current.shape and np.all(classes == current)
        if not same or coef.shape[-1] != k:
            return None
        if curvature is not None and getattr(problem, "x_scale", None) == curvature[0]:
            problem.curvature_hint = curvature[1]
        theta = (
            np.vstack((coef, intercept))
            if self._diagonal
            else np.hstack((coef, intercept[:, None]))
        )
        return problem.scaled(theta)

    def _keep_warm(self, problem):
        # The map (with its classes) a warm-started fit starts from, and the
        # solver's last curvature (on the same feature scale) to steer it.
        last = getattr(problem, "last_curvature", None)
        curvature = None if last is None else (problem.x_scale, last)
        classes = to_numpy(self.classes_).copy()
        self._warm_map = (classes, self.coef_, self.intercept_, curvature)

    def _problem(self, scores, y, sample_weight):
        """``(problem, k, temperature_beta)``: the objective on numpy
        :class:`~skcalib._core.scores.Scores`, or on the device for
        :class:`~skcalib._core.xp.scores.XpScores`, and the function giving
        the temperature start ``x_scale / T``."""
        x = self._x(scores)
        k = x.shape[1]
        ns = getattr(scores, "ns", None)
        if ns is not None:
            C, centre = self._resolve_strengths(
                k, xp_linear.weight_total(ns, sample_weight, x.shape[0])
            )
            problem = xp_linear.XpPenalisedNLL(
                ns, x, y, sample_weight, C, diagonal=self._diagonal, centre=centre
            )
            return problem, k, lambda: xp_linear.temperature_beta(problem)
        C, centre = self._resolve_strengths(
            k, self._total_weight(sample_weight, x.shape[0])
        )
        problem = PenalisedNLL(
            x, y, sample_weight, C, diagonal=self._diagonal, centre=centre
        )
        return (
            problem,
            k,
            lambda: problem.x_scale / fit_temperature(x, y, sample_weight)[0],
        )

    def _fit_xp(self, scores, y, sample_weight):
        self._fit(scores, y, sample_weight)
        self.coef_ = scores.ns.asarray(self.coef_)
        self.intercept_ = scores.ns.asarray(self.intercept_)

    def _fit(self, scores, y, sample_weight):
        problem, k, temperature_beta = self._problem(scores, y, sample_weight)
        start = self._warm_theta(problem, k)
        if start is None:
            # Start from temperature scaling (W = I / T, b = 0: in every
            # family here, and at least as good as the identity, T = 1) when
            # it fits better: logits of 1e6 or 1e200 then start near the
            # optimum instead of deep in the saturated region where the
            # solver crawls.
            beta = temperature_beta()
            start = (
                np.vstack((np.full(k, beta), np.zeros(k)))
                if self._diagonal
                else np.hstack((beta * np.eye(k), np.zeros((k, 1))))
            )
        else:  # the scale of the previous map's diagonal
            beta = float(np.max(np.abs(start[0] if self._diagonal else start[:, :k])))
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
        self._keep_warm(problem)

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
        C, centre = self._resolve_strengths(k, data.total_weight)
        problem = ChunkedPenalisedNLL(
            data,
            "logits" if self._features == "logits" else "log_proba",
            C,
            diagonal=self._diagonal,
            centre=centre,
        )
        self._solve(problem, k, 1, start=self._warm_theta(problem, k))
        self._keep_warm(problem)

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
        if getattr(problem, "on_device", False):
            solver = xp_linear.fit_vector if self._diagonal else xp_linear.fit_matrix
        else:
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

    def _predict_proba_xp(self, scores):
        xp, ns = scores.xp, scores.ns
        x = self._x(scores)
        coef = ns.asarray(self.coef_, dtype=x.dtype)
        a = x * coef if self._diagonal else x @ xp.matrix_transpose(coef)
        return xp_softmax(xp, a + ns.asarray(self.intercept_, dtype=x.dtype))
