"""The one implementation of the weighted logistic terms and its solvers
(:mod:`skcalib._core.solvers.logistic`), against references: scikit-learn's
unpenalised ``LogisticRegression``, SciPy's BFGS on the same objective, and
finite differences of the loss."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skcalib._core.solvers.logistic import (
    affine_logistic_terms,
    fit_logistic,
    fit_platt,
    logistic_pointwise,
    logistic_terms,
)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(scale=2.0, size=n)
    t = (rng.random(n) < expit(0.7 * s - 0.3)).astype(float)
    return s, t, rng.uniform(0.2, 2.0, n)


def test_pointwise_terms_by_definition_and_at_extremes():
    z = np.array([-1e4, -3.0, 0.0, 2.0, 1e4])
    t = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    loss, r, h = logistic_pointwise(z, t, None)
    p = expit(z)
    ref = np.logaddexp(0.0, z) - t * z  # softplus(z) - t z
    assert loss == pytest.approx(ref.sum(), rel=1e-14)
    np.testing.assert_allclose(r, p - t, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(h, p * (1 - p), rtol=1e-12, atol=1e-300)
    w = np.array([1.0, 2.0, 0.0, 3.0, 1.0])
    loss_w, r_w, h_w = logistic_pointwise(z, t, w)
    assert loss_w == pytest.approx((w * ref).sum(), rel=1e-14)
    np.testing.assert_allclose(r_w, w * (p - t), atol=1e-300)


@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_and_hessian_are_those_of_the_loss(weighted):
    s, t, w = _data()
    w = w if weighted else None
    design = np.column_stack([s, s**2 / 4, np.ones_like(s)])
    coef = np.array([0.4, -0.2, 0.1])
    loss, grad, hess = logistic_terms(coef, design, t, w)
    eps = 1e-6
    for j in range(3):
        step = np.eye(3)[j] * eps
        up = logistic_terms(coef + step, design, t, w)
        down = logistic_terms(coef - step, design, t, w)
        assert (up[0] - down[0]) / (2 * eps) == pytest.approx(grad[j], rel=1e-6)
        np.testing.assert_allclose((up[1] - down[1]) / (2 * eps), hess[j], rtol=1e-5)


def test_affine_terms_are_the_design_terms_of_s_and_one():
    s, t, w = _data()
    params = np.array([0.8, -0.4])
    got = affine_logistic_terms(params, s, t, w)
    ref = logistic_terms(params, np.column_stack([s, np.ones_like(s)]), t, w)
    assert got[0] == pytest.approx(ref[0], rel=1e-13)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_fit_logistic_equals_unpenalised_sklearn(weighted):
    s, t, w = _data(n=600, seed=3)
    w = w if weighted else None
    design = np.column_stack([s, np.abs(s), np.ones_like(s)])
    coef, _, converged, _ = fit_logistic(design, t, w)
    assert converged
    ref = LogisticRegression(
        C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000
    ).fit(design[:, :2], t, sample_weight=w)
    np.testing.assert_allclose(coef[:2], ref.coef_[0], rtol=1e-7)
    assert coef[2] == pytest.approx(ref.intercept_[0], rel=1e-7)


def test_fit_platt_minimises_platts_objective():
    s, t, w = _data(n=300, seed=5)
    a, b, _, converged = fit_platt(s, t, w)
    assert converged
    n_pos, n_neg = w[t == 1].sum(), w[t == 0].sum()
    target = np.where(t == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def objective(ab):
        z = ab[0] * s + ab[1]
        return float(w @ (np.logaddexp(0.0, z) - target * z))

    ref = minimize(objective, np.zeros(2), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose([a, b], ref.x, rtol=1e-5, atol=1e-7)
