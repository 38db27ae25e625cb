"""Bias-corrected temperature scaling against a slow reference solver."""

import warnings

import numpy as np
import pytest
from _data import classification_split, multiclass_logits
from scipy.optimize import minimize
from scipy.special import log_softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import N_ITER_XFAILS, RANGE_XFAILS, RAW_SCORE_XFAILS

from skcalib import TemperatureCalibrator, VectorScalingCalibrator
from skcalib.calibration._bias_temperature import BiasCorrectedTemperatureCalibrator


def _reference(z, y, w=None):
    """BCTS by scipy's BFGS on ``(log T, b_1..b_{K-1})`` with ``b_0 = 0``."""
    k = z.shape[1]
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    w = w / w.sum()

    def nll(theta):
        b = np.concatenate(([0.0], theta[1:]))
        a = z * np.exp(-theta[0]) + b
        return -(w * log_softmax(a, axis=1)[np.arange(len(y)), y]).sum()

    res = minimize(nll, np.zeros(k), method="BFGS", options={"gtol": 1e-11})
    b = np.concatenate(([0.0], res.x[1:]))
    return np.exp(res.x[0]), b - b.mean(), nll(res.x)


def _biased_logits(n=3000, k=4, seed=0):
    z, y = multiclass_logits(n, k, seed=seed)
    return z + np.linspace(-1.5, 1.5, k), y


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_scipy_reference(seed):
    z, y = _biased_logits(seed=seed)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, len(y))
    for weights in (None, w):
        cal = BiasCorrectedTemperatureCalibrator().fit(z, y, sample_weight=weights)
        t_ref, b_ref, _ = _reference(z, y, weights)
        assert cal.temperature_ == pytest.approx(t_ref, rel=1e-6)
        np.testing.assert_allclose(cal.intercept_, b_ref, atol=1e-6)
        p_ref = np.exp(log_softmax(z / t_ref + b_ref, axis=1))
        np.testing.assert_allclose(cal.predict_proba(z), p_ref, atol=1e-6)


def test_optimality_conditions():
    # gradient in b zero: mean calibrated probability == label frequency;
    # gradient in 1/T zero: E_p[z] averaged == mean true-class score
    z, y = _biased_logits(seed=3)
    cal = BiasCorrectedTemperatureCalibrator().fit(z, y)
    p = cal.predict_proba(z)
    np.testing.assert_allclose(p.mean(axis=0), np.bincount(y) / len(y), atol=1e-9)
    zc = z - z.max(axis=1, keepdims=True)
    lhs = np.einsum("ij,ij->", p, zc) / len(y)
    rhs = zc[np.arange(len(y)), y].mean()
    assert lhs == pytest.approx(rhs, abs=1e-8)
    assert abs(cal.intercept_.sum()) < 1e-12


def test_between_temperature_and_vector_scaling():
    z, y = _biased_logits(seed=4)

    def nll(cal):
        p = cal.fit(z, y).predict_proba(z)
        return -np.log(p[np.arange(len(y)), y]).mean()

    ts = nll(TemperatureCalibrator())
    bcts = nll(BiasCorrectedTemperatureCalibrator())
    vs = nll(VectorScalingCalibrator())
    assert vs <= bcts + 1e-10 < ts


def test_row_constant_invariance_and_log_proba():
    # the shared scale makes z + c_i and log softmax(z) the same problem
    z, y = _biased_logits(seed=5)
    shifted = z + np.random.default_rng(0).normal(size=(len(y), 1)) * 10
    a = BiasCorrectedTemperatureCalibrator().fit(z, y)
    b = BiasCorrectedTemperatureCalibrator().fit(shifted, y)
    np.testing.assert_allclose(a.predict_proba(z), b.predict_proba(shifted), atol=1e-9)
    p = np.exp(log_softmax(z, axis=1))
    c = BiasCorrectedTemperatureCalibrator().fit(p, y)
    np.testing.assert_allclose(c.predict_proba(p), a.predict_proba(z), atol=1e-7)


def test_binary_1d_equals_2d_and_is_platt_without_smoothing():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    s = 3.0 * (2 * y - 1) + rng.normal(scale=3.0, size=2000) + 1.0
    one = BiasCorrectedTemperatureCalibrator().fit(s, y)
    two = BiasCorrectedTemperatureCalibrator().fit(np.column_stack((0 * s, s)), y)
    np.testing.assert_allclose(
        one.predict_proba(s), two.predict_proba(s[:, None] * [0, 1]), atol=1e-9
    )
    lr = LogisticRegression(C=np.inf, tol=1e-12, solver="newton-cholesky")
    lr.fit(s[:, None], y)
    np.testing.assert_allclose(
        one.predict_proba(s), lr.predict_proba(s[:, None]), atol=1e-6
    )


def test_weight_two_is_a_duplicated_row():
    z, y = _biased_logits(n=400, seed=6)
    w = np.ones(len(y))
    w[:50] = 2.0
    a = BiasCorrectedTemperatureCalibrator().fit(z, y, sample_weight=w)
    zz, yy = np.vstack((z, z[:50])), np.concatenate((y, y[:50]))
    b = BiasCorrectedTemperatureCalibrator().fit(zz, yy)
    np.testing.assert_allclose(a.predict_proba(z), b.predict_proba(z), atol=1e-9)


def test_wrapper_mode_equals_raw_mode():
    X_fit, y_fit, X_cal, y_cal = classification_split(n_classes=3)
    clf = LogisticRegression().fit(X_fit, y_fit)
    wrap = BiasCorrectedTemperatureCalibrator(estimator=clf).fit(X_cal, y_cal)
    raw = BiasCorrectedTemperatureCalibrator().fit(clf.decision_function(X_cal), y_cal)
    np.testing.assert_allclose(
        wrap.predict_proba(X_cal),
        raw.predict_proba(clf.decision_function(X_cal)),
        atol=1e-12,
    )
    assert clone(wrap).estimator is clf


def test_separated_scores_warn():
    y = np.repeat([0, 1, 2], 20)
    z = 5.0 * np.eye(3)[y]
    with pytest.warns(UserWarning, match="separate the classes"):
        BiasCorrectedTemperatureCalibrator(max_iter=20).fit(z, y)


def test_float32_in_float32_out():
    z, y = _biased_logits(n=500, seed=7)
    cal = BiasCorrectedTemperatureCalibrator().fit(z.astype(np.float32), y)
    assert cal.predict_proba(z.astype(np.float32)).dtype == np.float32


def test_column_mismatch_is_an_error():
    z, y = _biased_logits(n=300)
    cal = BiasCorrectedTemperatureCalibrator().fit(z, y)
    with pytest.raises(ValueError, match="3 features, but .* expecting 4"):
        cal.predict_proba(z[:, :3])


def _expected_failed_checks(estimator):
    return {**RAW_SCORE_XFAILS, **RANGE_XFAILS, **N_ITER_XFAILS}


@parametrize_with_checks(
    [BiasCorrectedTemperatureCalibrator()],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_scores_ranking_the_wrong_way_give_the_class_frequencies():
    # 1/T >= 0: with an unconstrained optimum below 0 the fit is 1/T = 0
    z, y = _biased_logits(n=600, seed=8)
    with pytest.warns(UserWarning, match="do not rank the labels"):
        cal = BiasCorrectedTemperatureCalibrator().fit(-z, y)
    assert cal.temperature_ == np.inf
    freq = np.bincount(y) / len(y)
    np.testing.assert_allclose(cal.predict_proba(-z[:3]), np.tile(freq, (3, 1)))
    # the constrained optimum: no 1/T >= 0 does better (scipy, bounded)
    nll0 = -np.log(freq[y]).mean()
    for beta in (1e-3, 1e-2, 1e-1):
        b = _reference_bias(-z * beta, y)
        assert nll0 <= b + 1e-12


def _reference_bias(a, y):
    """Smallest NLL of softmax(a + b) over b (BFGS)."""
    k = a.shape[1]

    def nll(b):
        return -log_softmax(a + b, axis=1)[np.arange(len(y)), y].mean()

    return minimize(nll, np.zeros(k), method="BFGS", options={"gtol": 1e-10}).fun
