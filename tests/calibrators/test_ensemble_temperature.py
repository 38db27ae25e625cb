"""Ensemble temperature scaling against a slow rewrite of the paper's
procedure, its simplex, its relation to temperature scaling, bad input and
real CIFAR predictions."""

import warnings

import numpy as np
import pytest
from _data import calibrated_logits, load_shared, multiclass_logits
from scipy.optimize import minimize, minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import N_ITER_XFAILS, RANGE_XFAILS, RAW_SCORE_XFAILS

from skcalib import EnsembleTemperatureCalibrator, TemperatureCalibrator


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _slow_ets(z, y, loss="brier", w=None, t=None, temperature_only=False):
    """The procedure of Zhang et al. as their code runs it (SLSQP from
    (1, 0, 0) on the simplex), with the temperature by maximum likelihood
    (a bounded scalar search, unless ``t`` is given) and the losses written
    sample by sample."""
    n, k = z.shape
    s = np.ones(n) if w is None else np.asarray(w, float)
    s = s / s.sum()

    def nll_t(log_t):
        p = _softmax(z / np.exp(log_t))
        return -sum(s[i] * np.log(p[i, y[i]]) for i in range(n))

    if t is None:
        t = np.exp(minimize_scalar(nll_t, bounds=(-5, 5), method="bounded",
                                   options={"xatol": 1e-10}).x)  # fmt: skip
    if temperature_only:
        return t, None, None
    comps = [_softmax(z / t), _softmax(z), np.full((n, k), 1.0 / k)]

    def mix_loss(wts):
        total = 0.0
        for i in range(n):
            q = sum(wts[j] * comps[j][i] for j in range(3))
            if loss == "brier":
                total += s[i] * sum((q[c] - (c == y[i])) ** 2 for c in range(k))
            else:
                total -= s[i] * np.log(q[y[i]])
        return total

    res = minimize(
        mix_loss,
        np.array([1.0, 0.0, 0.0]) if loss == "brier" else np.full(3, 1 / 3),
        method="SLSQP",
        bounds=[(0.0, 1.0)] * 3,
        constraints={"type": "eq", "fun": lambda v: v.sum() - 1.0},
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return t, res.x, mix_loss(res.x)


def _noisy_logits(n=300, k=4, seed=0, noise=0.2):
    """Too sharp logits (x3) of a calibrated model, with a share of random labels."""
    z, y = calibrated_logits(n, k, scale=2.0, seed=seed)
    rng = np.random.default_rng(seed + 100)
    y = np.where(rng.uniform(size=n) < noise, rng.integers(0, k, n), y)
    return 3.0 * z, y


@pytest.mark.parametrize("loss", ["brier", "log_loss"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_the_slow_procedure(loss, seed):
    z, y = _noisy_logits(seed=seed)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, y.size)
    for weights in (None, w):
        ets = EnsembleTemperatureCalibrator(loss=loss).fit(z, y, sample_weight=weights)
        t_ref = _slow_ets(z, y, loss, weights, temperature_only=True)[0]
        assert ets.temperature_ == pytest.approx(t_ref, rel=1e-6)
        # the weights, for the same temperature
        _, w_ref, f_ref = _slow_ets(z, y, loss, weights, t=ets.temperature_)
        np.testing.assert_allclose(ets.weights_, w_ref, atol=2e-5)
        p = ets.predict_proba(z)
        s = np.ones(y.size) if weights is None else weights
        s = s / s.sum()
        if loss == "brier":
            f = s @ ((p - np.eye(z.shape[1])[y]) ** 2).sum(axis=1)
        else:
            f = -s @ np.log(p[np.arange(y.size), y])
        assert f <= f_ref + 1e-12  # never worse than the reference optimum


def test_weights_on_the_simplex_and_better_than_each_vertex():
    z, y = _noisy_logits(n=2000, seed=2, noise=0.3)
    ets = EnsembleTemperatureCalibrator(loss="brier").fit(z, y)
    assert ets.weights_.shape == (3,)
    assert np.all(ets.weights_ >= 0) and ets.weights_.sum() == pytest.approx(1.0)
    assert ets.weights_[2] > 0.05  # the label noise is uniform

    def brier(weights):
        ets.weights_ = np.asarray(weights, float)
        p = ets.predict_proba(z)
        return ((p - np.eye(4)[y]) ** 2).sum(axis=1).mean()

    best = ets.weights_.copy()
    f = brier(best)
    for vertex in np.eye(3):
        assert f < brier(vertex)
    rng = np.random.default_rng(0)
    for other in rng.dirichlet([1, 1, 1], size=20):
        assert f <= brier(other) + 1e-14


def test_weight_one_on_temperature_is_temperature_scaling():
    z, y = _noisy_logits(seed=3)
    ts = TemperatureCalibrator().fit(z, y)
    ets = EnsembleTemperatureCalibrator().fit(z, y)
    assert ets.temperature_ == ts.temperature_  # the same solver, the same T
    ets.weights_ = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(ets.predict_proba(z), ts.predict_proba(z), atol=1e-15)


def test_well_specified_temperature_gets_almost_all_the_weight():
    # labels drawn from softmax(z) and scores 2.5 z: temperature scaling is
    # the true map; the uncalibrated and the uniform parts have no use
    z, y = calibrated_logits(40000, 5, scale=1.5, seed=4)
    ets = EnsembleTemperatureCalibrator().fit(2.5 * z, y)
    assert ets.temperature_ == pytest.approx(2.5, rel=0.03)
    assert ets.weights_[0] > 0.97


def test_temperature_one_ties_go_to_the_first_component():
    # constant rows: T = 1, every component is uniform; the mix is (1, 0, 0)
    y = np.array([0, 1, 2, 0, 1, 2])
    z = np.zeros((6, 3))
    ets = EnsembleTemperatureCalibrator(score_type="logit", loss="brier").fit(z, y)
    np.testing.assert_array_equal(ets.weights_, [1.0, 0.0, 0.0])
    # the log loss is flat too; whatever mix SLSQP returns predicts 1/3
    ets = EnsembleTemperatureCalibrator(score_type="logit").fit(z, y)
    np.testing.assert_allclose(ets.predict_proba(z), 1 / 3, rtol=1e-12)


def test_weight_two_is_a_duplicated_row():
    z, y = _noisy_logits(n=500, seed=5)
    w = np.ones(y.size)
    w[:60] = 2.0
    for loss in ("brier", "log_loss"):
        a = EnsembleTemperatureCalibrator(loss=loss).fit(z, y, sample_weight=w)
        b = EnsembleTemperatureCalibrator(loss=loss).fit(
            np.vstack((z, z[:60])), np.concatenate((y, y[:60]))
        )
        assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-9)
        np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-7)


def test_binary_1d_equals_2d_and_probabilities_equal_logits():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 1500)
    s = 4.0 * (2 * y - 1) + rng.normal(scale=4.0, size=1500)
    one = EnsembleTemperatureCalibrator().fit(s, y)
    two = EnsembleTemperatureCalibrator().fit(np.column_stack((0 * s, s)), y)
    np.testing.assert_allclose(one.weights_, two.weights_, atol=1e-12)
    np.testing.assert_allclose(
        one.predict_proba(s), two.predict_proba(np.column_stack((0 * s, s))), atol=1e-12
    )
    z, yy = multiclass_logits(900, 3, seed=6)
    p = _softmax(z)
    a = EnsembleTemperatureCalibrator().fit(z, yy)
    b = EnsembleTemperatureCalibrator().fit(p, yy)
    assert b.score_type_ == "probability"
    np.testing.assert_allclose(a.predict_proba(z), b.predict_proba(p), atol=1e-7)


def test_float32_and_extreme_logits():
    z, y = _noisy_logits(n=600, seed=7)
    a = EnsembleTemperatureCalibrator().fit(z.astype(np.float32), y)
    b = EnsembleTemperatureCalibrator().fit(z, y)
    p32 = a.predict_proba(z.astype(np.float32))
    assert p32.dtype == np.float32
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-5)
    np.testing.assert_allclose(p32, b.predict_proba(z), atol=1e-5)
    big = np.sign(z) * 1e4 + z  # +-1e4 logits: finite probabilities, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ets = EnsembleTemperatureCalibrator().fit(big, y)
        p = ets.predict_proba(big)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)
    assert np.isfinite(ets.temperature_) and ets.weights_.sum() == pytest.approx(1.0)


def test_bad_input():
    z, y = _noisy_logits(n=100, seed=8)
    with pytest.raises(ValueError, match="one class|at least two|2 classes"):
        EnsembleTemperatureCalibrator().fit(z[:, :2], np.zeros(100, int))
    bad = z.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        EnsembleTemperatureCalibrator().fit(bad, y)
    with pytest.raises(ValueError, match="loss"):
        EnsembleTemperatureCalibrator(loss="mse").fit(z, y)
    with pytest.raises(ValueError, match="column"):
        EnsembleTemperatureCalibrator().fit(z[:, :3], y)
    with pytest.raises(ValueError, match="[Nn]egative|sample_weight"):
        EnsembleTemperatureCalibrator().fit(z, y, sample_weight=-np.ones(100))


def test_separated_scores_warn():
    y = np.repeat([0, 1, 2], 20)
    with pytest.warns(UserWarning, match="lower bound"):
        ets = EnsembleTemperatureCalibrator().fit(5.0 * np.eye(3)[y], y)
    assert np.all(np.isfinite(ets.predict_proba(5.0 * np.eye(3)[y])))


@pytest.mark.parametrize(
    "name", ["wideresnet-16-4-cifar-10.npz", "densenet-bc-100-cifar-100.npz"]
)
def test_cifar_held_out_nll(name):
    # Guo et al.'s split: 5000 rows to fit, 5000 to evaluate (fixed seed)
    probs, labels = load_shared(f"netcal/{name}")
    order = np.random.default_rng(0).permutation(labels.size)
    fit, test = order[:5000], order[5000:]

    def nll(p):
        return -np.log(np.maximum(p[np.arange(test.size), labels[test]], 1e-300)).mean()

    base = nll(probs[test].astype(np.float64))
    ts = nll(
        TemperatureCalibrator().fit(probs[fit], labels[fit]).predict_proba(probs[test])
    )
    out = {}
    for loss in ("brier", "log_loss"):
        ets = EnsembleTemperatureCalibrator(loss=loss).fit(probs[fit], labels[fit])
        out[loss] = nll(ets.predict_proba(probs[test]))
    assert out["brier"] < base and out["log_loss"] < base
    # fitted for the log loss, the mix is never far from TS on held-out NLL
    assert out["log_loss"] < ts + 0.005
    assert out["brier"] < ts + 0.02


def _expected_failed_checks(estimator):
    return {**RAW_SCORE_XFAILS, **RANGE_XFAILS, **N_ITER_XFAILS}


@parametrize_with_checks(
    [EnsembleTemperatureCalibrator()], expected_failed_checks=_expected_failed_checks
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
