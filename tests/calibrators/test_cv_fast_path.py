"""Issue 16 item 3: the fast regularisation path of the CV estimators (warm
fits that keep the previous preconditioner, extrapolated starts) chooses the
point of the strict path and the same maps, on real predictions."""

import warnings

import numpy as np
import pytest
from _data import load_shared
from scipy.special import logsumexp

from skcalib import DirichletCalibrator
from skcalib._core.solvers import linear
from skcalib.calibration import _linear_cv
from skcalib.calibration._linear_cv import (
    DirichletCalibratorCV,
    _choice,
    _extrapolated,
)

K = 20


@pytest.fixture(scope="module")
def cifar20():
    """DenseNet-BC-100 on CIFAR-100 (netcal), restricted to the rows of the
    first 20 classes, probabilities renormalised over them (K = 20 > the
    Newton limit: the L-BFGS path); the first 900 rows, and the rest."""
    p, y = load_shared("netcal/densenet-bc-100-cifar-100.npz")
    keep = y < K
    p = p[keep][:, :K].astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    return p[:900], y[keep][:900], p[900:], y[keep][900:]


def _objective(cal, p, y):
    """The ODIR objective of DirichletCalibrator's Notes, computed here from
    the formula (features ``log(max(p, 1e-12))``, unweighted mean NLL)."""
    a = np.log(np.maximum(p, 1e-12)) @ cal.coef_.T + cal.intercept_
    nll = np.mean(logsumexp(a, axis=1) - a[np.arange(y.size), y])
    off = cal.coef_ - np.diag(np.diag(cal.coef_))
    return (
        nll
        + cal.reg_lambda_ / (K * (K - 1)) * np.sum(off**2)
        + cal.reg_mu_ / K * np.sum(cal.intercept_**2)
    )


def _cv(p, y):
    lams = np.array([0.01, 0.1, 1.0, 10.0]) * K * (K - 1)  # Kull et al.'s lambda'
    mus = np.array([0.1, 10.0]) * K
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DirichletCalibratorCV(
            reg_lambdas=lams, reg_mus=mus, cv=3, tol=1e-8, max_iter=5000
        ).fit(p, y)


def test_fast_path_chooses_the_strict_point_and_map(cifar20, monkeypatch):
    p, y, p_test, y_test = cifar20
    fast = _cv(p, y)
    monkeypatch.setattr(linear, "WARM_PASS_ITER", 0)
    monkeypatch.setattr(_linear_cv, "EXTRAPOLATE", False)
    strict = _cv(p, y)
    assert (fast.reg_lambda_, fast.reg_mu_) == (strict.reg_lambda_, strict.reg_mu_)
    # Both stop at a gradient of 1e-8. The nearly unregularised points (300
    # rows a fold for 420 parameters; the last of the grid, strongest first) are
    # ill-conditioned: there the held-out NLL moves by ~1e-4 within the
    # tolerance, in either path (measured: up to 7e-4); it is ~0.4 above the
    # chosen point's. At the two strongest reg_lambda the held-out NLL of a
    # fold differs by up to 8.8e-6 (numpy 1.25 / scikit-learn 1.6.1 and
    # numpy 2.4 / 1.9 alike): features log p reach |log 1e-12| = 28, so
    # parameters 1e-6 apart move held-out logits by ~3e-5.
    np.testing.assert_allclose(fast.cv_scores_, strict.cv_scores_, atol=2e-3)
    np.testing.assert_allclose(
        fast.cv_scores_[:, :2], strict.cv_scores_[:, :2], atol=5e-5
    )
    # The refit is the optimum a tight cold fit finds. Compared by what the
    # data identify (the objective, the probabilities), not by coefficients,
    # which move within the solver's tolerance along flat directions.
    cold = DirichletCalibrator(
        reg_lambda=fast.reg_lambda_, reg_mu=fast.reg_mu_, tol=1e-10, max_iter=5000
    ).fit(p, y)
    best = _objective(cold, p, y)
    # measured: 3e-14 above the tight fit's objective (fast and strict)
    assert _objective(fast, p, y) - best < 1e-11
    assert _objective(strict, p, y) - best < 1e-11
    for q in (p, p_test):  # measured: 2.5e-7 apart at most
        np.testing.assert_allclose(
            fast.predict_proba(q), cold.predict_proba(q), atol=5e-6
        )
        np.testing.assert_allclose(
            fast.predict_proba(q), strict.predict_proba(q), atol=5e-6
        )


def test_warm_fit_with_a_stale_preconditioner_reaches_the_optimum(cifar20):
    # A warm start keeps the previous fit's curvature (here from a far
    # stronger penalty): the fit still meets tol, at the cold fit's optimum.
    p, y, _, _ = cifar20
    warm = DirichletCalibrator(warm_start=True, reg_mu=1.0, tol=1e-8, max_iter=5000)
    warm.set_params(reg_lambda=1e4).fit(p, y)
    warm.set_params(reg_lambda=1.0).fit(p, y)
    cold = DirichletCalibrator(reg_lambda=1.0, reg_mu=1.0, tol=1e-8, max_iter=5000)
    cold.fit(p, y)
    with warnings.catch_warnings():  # may stop at the float64 floor above 1e-11
        warnings.simplefilter("ignore")
        tight = DirichletCalibrator(
            reg_lambda=1.0, reg_mu=1.0, tol=1e-11, max_iter=20000
        ).fit(p, y)
    # This fit is ill-conditioned: its coefficients move within tol (warm and
    # cold 2e-5 to 3.4e-4 apart, depending on the BLAS and the numpy/scipy
    # release), so the test compares what the data identify. Measured: the
    # objective 1e-12 to 4e-12 above the tight fit's; a fit stopped at a
    # gradient of 1e-7 (ten times tol) is 2e-10 to 1e-9 above it, one stopped
    # at 1e-6 is 1e-7 above.
    best = _objective(tight, p, y)
    assert _objective(warm, p, y) - best < 1e-10
    assert _objective(cold, p, y) - best < 1e-10
    # probabilities: measured 1.7e-6 apart (2.6e-6 from the tight fit)
    np.testing.assert_allclose(warm.predict_proba(p), cold.predict_proba(p), atol=1e-5)
    np.testing.assert_allclose(warm.predict_proba(p), tight.predict_proba(p), atol=1e-5)


def test_extrapolated_start_is_linear_in_log_lambda():
    classes = np.arange(2)
    a = (classes, np.eye(2), np.zeros(2), None)
    b = (classes, 2 * np.eye(2), np.ones(2), "hint")
    _, w, c, hint = _extrapolated([a, b], np.array([100.0, 10.0, 1.0]))
    np.testing.assert_array_equal(w, 3 * np.eye(2))  # one more step of +I
    np.testing.assert_array_equal(c, 2 * np.ones(2))
    assert hint == "hint"
    # half a decade: half a step; a zero strength: the previous map
    _, w, _, _ = _extrapolated([a, b], np.array([100.0, 10.0, 10**0.5]))
    np.testing.assert_allclose(w, 2.5 * np.eye(2))
    assert _extrapolated([a, b], np.array([100.0, 10.0, 0.0])) is b


def test_choice_takes_the_first_of_scores_tied_within_fit_accuracy():
    # rows: reg_mu strongest first; columns: reg_lambda strongest first
    mean = np.array([[0.9, 0.800004, 0.85], [0.95, 0.8, 0.801]])
    assert _choice(mean) == (0, 1)  # 4e-6 above the lowest: a tie
    mean[0, 1] = 0.80002  # 2e-5 above: not a tie
    assert _choice(mean) == (1, 1)
    assert _choice(np.array([[5.0, 4.00003, 4.0]])) == (0, 1)  # relative to |4|
