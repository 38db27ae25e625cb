"""Vector scaling, matrix scaling and Dirichlet calibration computed on the
device for array-API inputs (torch CPU, array-api-strict): the same fit as
numpy (same solver path, same iterations), predictions in the input's
namespace and dtype."""

import warnings

import numpy as np
import pytest
from _xp import assert_close, namespace_for, same_namespace, to_np, to_xp
from sklearn import config_context

from skcalib import (
    DirichletCalibrator,
    MatrixScalingCalibrator,
    VectorScalingCalibrator,
)
from skcalib._core.solvers.temperature import fit_temperature
from skcalib._core.xp import Namespace, namespace
from skcalib._core.xp import solvers_linear as xp_linear
from skcalib.calibration._linear_cv import (
    DirichletCalibratorCV,
    MatrixScalingCalibratorCV,
)

NAMESPACES = [("torch", "cpu"), ("array_api_strict", None)]
CLASSES = [VectorScalingCalibrator, MatrixScalingCalibrator, DirichletCalibrator]


def _logits(n, k, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return 2.0 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]), y


def _fit_both(est, X, y, case, sample_weight=None, dtype="float64"):
    xp, device, xdtype = namespace_for((*case, dtype))
    ref = est.__class__(**est.get_params()).fit(X, y, sample_weight=sample_weight)
    sw = None if sample_weight is None else to_xp(sample_weight, xp, device)
    with config_context(array_api_dispatch=True):
        got = est.fit(to_xp(X, xp, device, xdtype), to_xp(y, xp, device), sw)
        proba = got.predict_proba(to_xp(X, xp, device, xdtype))
    return ref, got, proba, xp, xdtype


def _rel(actual, expected):
    actual, expected = to_np(actual), np.asarray(expected)
    return np.max(np.abs(actual - expected)) / np.max(np.abs(expected))


@pytest.mark.parametrize("case", NAMESPACES, ids=lambda c: c[0])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    ("cls", "k"),
    [
        (VectorScalingCalibrator, 4),
        (VectorScalingCalibrator, 150),  # L-BFGS-B above 128 classes
        (MatrixScalingCalibrator, 5),
        (MatrixScalingCalibrator, 16),  # L-BFGS-B, block preconditioner
        (DirichletCalibrator, 5),
    ],
)
def test_device_fit_matches_numpy(cls, k, weighted, case):
    X, y = _logits(40 * k, k)
    w = np.random.default_rng(1).uniform(0, 2, y.size) if weighted else None
    if weighted:
        w[:7] = 0.0
    ref, got, proba, xp, dtype = _fit_both(cls(), X, y, case, w)
    assert same_namespace(got.coef_, xp) and same_namespace(got.intercept_, xp)
    assert _rel(got.coef_, ref.coef_) <= 1e-6
    assert _rel(got.intercept_, ref.intercept_) <= 1e-6
    assert got.n_iter_ == ref.n_iter_  # the same solver, step for step
    assert proba.dtype == dtype
    assert_close(proba, ref.predict_proba(X), "float64")


@pytest.mark.parametrize("case", NAMESPACES, ids=lambda c: c[0])
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_float32_input_gives_float32_output(cls, case):
    X, y = _logits(600, 4, seed=3)
    X = X.astype(np.float32)
    ref, got, proba, xp, dtype = _fit_both(cls(), X, y, case, dtype="float32")
    assert proba.dtype == dtype
    assert_close(proba, ref.predict_proba(X), "float32")
    assert _rel(got.coef_, ref.coef_) <= 1e-6  # both fit in float64


def test_row_blocks_do_not_change_the_fit(monkeypatch):
    X, y = _logits(900, 6, seed=4)
    xp, device, dtype = namespace_for(("torch", "cpu", "float64"))
    one = _fit_both(MatrixScalingCalibrator(), X, y, NAMESPACES[0])[1]
    monkeypatch.setattr(xp_linear, "CPU_BLOCK_ENTRIES", 6 * 100)
    monkeypatch.setattr(xp_linear, "XP_BLOCK_ENTRIES", 6 * 100)
    X_xp = to_xp(X, xp, device, dtype)
    with config_context(array_api_dispatch=True):
        ns = namespace(X_xp)
    problem = xp_linear.XpPenalisedNLL(
        ns, X_xp, to_xp(y, xp, device), None, np.zeros((6, 7)), diagonal=False
    )
    assert len(problem.blocks) == 9
    many = _fit_both(MatrixScalingCalibrator(), X, y, NAMESPACES[0])[1]
    np.testing.assert_allclose(to_np(many.coef_), to_np(one.coef_), rtol=1e-10)
    assert many.n_iter_ == one.n_iter_


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_fitted_on_numpy_predicts_on_the_device(cls):
    xp, device, dtype = namespace_for(("torch", "cpu", "float64"))
    X, y = _logits(400, 3, seed=5)
    est = cls().fit(X, y)
    with config_context(array_api_dispatch=True):
        proba = est.predict_proba(to_xp(X, xp, device, dtype))
    assert same_namespace(proba, xp)
    assert_close(proba, est.predict_proba(X), "float64")


def test_separated_classes_warn_as_numpy():
    X = np.array([[2.0, -1.0], [1.5, 0.0], [-1.0, 1.0], [0.0, 3.0]])
    y = np.array([0, 0, 1, 1])
    with pytest.warns(UserWarning, match="separate the classes"):
        ref, got, proba, _, _ = _fit_both(
            VectorScalingCalibrator(), X, y, NAMESPACES[1]
        )
    assert_close(proba, ref.predict_proba(X), "float64")


def test_warm_start_on_the_device_reaches_the_cold_fit():
    X, y = _logits(500, 4, seed=6)
    xp, device, dtype = namespace_for(("torch", "cpu", "float64"))
    Xx, yx = to_xp(X, xp, device, dtype), to_xp(y, xp, device)
    with config_context(array_api_dispatch=True):
        est = DirichletCalibrator(reg_lambda=1e-2, reg_mu=1e-2, warm_start=True)
        est.fit(Xx, yx).set_params(reg_lambda=1e-3).fit(Xx, yx)
    cold = DirichletCalibrator(reg_lambda=1e-3, reg_mu=1e-2).fit(X, y)
    np.testing.assert_allclose(to_np(est.coef_), cold.coef_, rtol=1e-6, atol=1e-9)


def test_device_temperature_start_is_numpy_temperature():
    xp, device, dtype = namespace_for(("array_api_strict", None, "float64"))
    X, y = _logits(700, 5, seed=7)
    X = 30.0 * X  # x_scale > 1: the features are scaled
    ns = Namespace(xp, device)
    C = np.zeros((2, 5))
    problem = xp_linear.XpPenalisedNLL(
        ns, to_xp(X, xp, device, dtype), to_xp(y, xp, device), None, C, diagonal=True
    )
    temperature = fit_temperature(X, y)[0]
    beta = xp_linear.temperature_beta(problem)
    np.testing.assert_allclose(beta, problem.x_scale / temperature, rtol=1e-7)


def test_device_temperature_start_edge_cases():
    xp, device, dtype = namespace_for(("array_api_strict", None, "float64"))
    ns = Namespace(xp, device)
    C = np.zeros((2, 2))
    for X, y in [
        (np.ones((4, 2)), np.array([0, 1, 0, 1])),  # constant rows: T = 1
        (np.array([[3.0, 0.0], [0.0, 2.0]]), np.array([0, 1])),  # all on top
    ]:
        problem = xp_linear.XpPenalisedNLL(
            ns,
            to_xp(X, xp, device, dtype),
            to_xp(y, xp, device),
            None,
            C,
            diagonal=True,
        )
        beta = xp_linear.temperature_beta(problem)
        assert beta == pytest.approx(problem.x_scale / fit_temperature(X, y)[0])


@pytest.mark.parametrize("cls", [MatrixScalingCalibratorCV, DirichletCalibratorCV])
def test_cv_variants_stay_on_the_host(cls):
    assert not cls._array_api_native
    X, y = _logits(300, 3, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref, got, proba, xp, _ = _fit_both(cls(cv=2), X, y, NAMESPACES[0])
    assert same_namespace(proba, xp) and same_namespace(got.coef_, xp)
    assert_close(proba, ref.predict_proba(X), "float64")
