"""The fast vector scaling solver (``skcalib._core.solvers.vector``) reaches
the optimum of Newton's method with the exact Hessian at every step, and its
block terms are those of the definition."""

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

from skcalib import VectorScalingCalibrator
from skcalib._core.solvers import linear, vector
from skcalib._core.solvers.newton import polished_newton


def _logits(n, k, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.standard_normal((n, k))
    z[np.arange(n), y] += 1.5
    return (2.0 * z).astype(dtype), y


def _problem(z, y, w=None, lam=0.0, mu=0.0):
    k = z.shape[1]
    C = np.vstack((np.full(k, lam / k), np.full(k, mu / k)))
    return linear.PenalisedNLL(z, y, w, C, diagonal=True)


def _dense_terms(z, y, w, theta, x_scale):
    """Loss, gradient and Hessian of the data part of ``J`` from the
    definition, row by row (in the solver's scaled parameters)."""
    x = z.astype(np.float64) / x_scale
    n, k = x.shape
    w = np.full(n, 1.0 / n) if w is None else w / w.sum()
    a = x * theta[0] + theta[1]
    p = softmax(a, axis=1)
    loss = -np.sum(w * log_softmax(a, axis=1)[np.arange(n), y])
    r = p.copy()
    r[np.arange(n), y] -= 1.0
    grad = np.vstack(((w[:, None] * r * x).sum(0), (w[:, None] * r).sum(0)))
    hess = np.zeros((2 * k, 2 * k))
    for i in range(n):
        jac = np.hstack((np.diag(x[i]), np.eye(k)))  # da_i / d(w, b)
        cov = np.diag(p[i]) - np.outer(p[i], p[i])
        hess += w[i] * jac.T @ cov @ jac
    return loss, grad, hess


@pytest.mark.parametrize("weighted", [False, True])
def test_block_terms_are_those_of_the_definition(weighted):
    z, y = _logits(300, 5, seed=0)
    w = np.random.default_rng(1).uniform(0.0, 2.0, 300) if weighted else None
    problem = _problem(z, y, w)
    theta = problem.theta0 * 0.7
    theta[1] = np.linspace(-0.5, 0.5, 5)
    loss, grad, hess = problem.loss_grad(theta, hessian=True)
    ref = _dense_terms(z, y, w, theta, problem.x_scale)
    np.testing.assert_allclose(loss, ref[0], rtol=1e-13)
    np.testing.assert_allclose(grad, ref[1], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(hess, ref[2], rtol=1e-10, atol=1e-15)
    assert problem.loss(theta) == pytest.approx(loss, rel=1e-14)
    # all rows in the "subsample" (stride 1): the exact Hessian
    assert problem.hessian_stride == 1
    np.testing.assert_array_equal(problem.loss_grad(theta, hessian="sub")[2], hess)


def test_subsampled_hessian_uses_every_stride_th_row(monkeypatch):
    monkeypatch.setattr(vector, "SUB_HESSIAN_ROWS", 100)
    z, y = _logits(1000, 4, seed=2)
    problem = _problem(z, y)
    assert problem.hessian_stride == 10
    theta = problem.theta0 * 0.5
    sub = problem.loss_grad(theta, hessian="sub")[2]
    # one block here: rows 0, 10, 20, ... with weight 1 / 100 each
    ref = _dense_terms(z[::10], y[::10], None, theta, problem.x_scale)[2]
    np.testing.assert_allclose(sub, ref, rtol=1e-10, atol=1e-15)
    exact = problem.loss_grad(theta, hessian=True)[2]
    assert not np.allclose(sub, exact, rtol=1e-3)


@pytest.mark.parametrize(
    ("weighted", "lam", "mu"), [(False, 0.0, 0.0), (True, 0.0, 0.0), (False, 0.5, 0.1)]
)
def test_fit_equals_exact_hessian_newton(monkeypatch, weighted, lam, mu):
    # a subsampled Hessian at n = 6000 (every 6th row) as at n = 1e6
    monkeypatch.setattr(vector, "SUB_HESSIAN_ROWS", 1000)
    z, y = _logits(6000, 8, seed=3)
    z[:, 2] *= 3.0  # classes of different scales
    w = np.random.default_rng(4).uniform(0.0, 3.0, 6000) if weighted else None
    start = _problem(z, y, w, lam, mu).theta0 * 0.6
    fast = _problem(z, y, w, lam, mu)
    assert fast.hessian_stride == 6
    theta, _, status, gmax = linear.fit_vector(
        fast, max_iter=100, tol=1e-8, start=start
    )
    ref_problem = _problem(z, y, w, lam, mu)
    ref, _, ref_status, _ = polished_newton(
        ref_problem, linear._start(ref_problem, start), max_iter=100, tol=1e-8
    )
    assert status == ref_status == "converged"
    assert gmax <= 1e-8
    np.testing.assert_allclose(theta[0], ref[0], rtol=1e-10)
    np.testing.assert_allclose(theta[1], ref[1], rtol=1e-9, atol=1e-12)


def test_fit_from_a_far_start_and_threads(monkeypatch):
    monkeypatch.setattr(vector, "SUB_HESSIAN_ROWS", 500)
    z, y = _logits(5000, 6, seed=5, dtype=np.float64)
    z *= 4.0  # the identity map is far from the optimum
    one = VectorScalingCalibrator().fit(z, y)
    two = VectorScalingCalibrator(n_jobs=2).fit(z, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    problem = _problem(z, y)
    ref, *_ = polished_newton(problem, problem.theta0.copy(), max_iter=100, tol=1e-8)
    np.testing.assert_allclose(one.coef_, ref[0], rtol=1e-10)
    np.testing.assert_allclose(one.intercept_, ref[1], rtol=1e-9, atol=1e-12)


def test_identity_kept_on_a_tie():
    z, y = _logits(400, 3, seed=6)
    problem = _problem(z, y)
    calls = []
    original = problem.loss_grad

    def spy(theta, hessian=False):
        calls.append(np.array(theta))
        return original(theta, hessian)

    problem.loss_grad = spy
    linear.fit_vector(problem, max_iter=100, tol=1e-8, start=problem.theta0.copy())
    # the start's pass, then (a tie) the identity's own first pass
    np.testing.assert_array_equal(calls[0], problem.theta0)
    np.testing.assert_array_equal(calls[1], problem.theta0)
