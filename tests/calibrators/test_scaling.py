"""Platt and temperature scaling against reference solvers and scikit-learn."""

import warnings

import numpy as np
import pytest
from _data import multiclass_logits
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.special import log_expit, log_softmax, logsumexp
from sklearn import __version__ as sklearn_version_str
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.utils.fixes import parse_version

from skcalib import PlattCalibrator, TemperatureCalibrator

sklearn_version = parse_version(sklearn_version_str)


class ScoreClassifier(ClassifierMixin, BaseEstimator):
    """A "classifier" whose decision_function returns its input: lets sklearn's
    CalibratedClassifierCV calibrate the very scores we calibrate."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        X = np.asarray(X, dtype=np.float64)
        return X[:, 0] if X.shape[1] == 1 else X

    def predict(self, X):
        d = self.decision_function(X)
        return self.classes_[(d > 0).astype(int) if d.ndim == 1 else d.argmax(axis=1)]


def _nll(logits, y, T):
    return -log_softmax(logits / T, axis=1)[np.arange(len(y)), y].mean()


# ---------------------------------------------------------------- temperature
@pytest.mark.parametrize("k, scale", [(3, 3.0), (10, 0.4), (2, 1.7)])
def test_temperature_matches_reference_minimiser(k, scale):
    logits, y = multiclass_logits(3000, k, scale=scale)
    ts = TemperatureCalibrator().fit(logits, y)
    ref = minimize_scalar(
        lambda t: _nll(logits, y, np.exp(t)),
        bounds=(-5, 5),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert ts.temperature_ > 0
    assert ts.temperature_ == pytest.approx(np.exp(ref.x), rel=1e-6)
    assert _nll(logits, y, ts.temperature_) == pytest.approx(ref.fun, abs=1e-8)
    assert _nll(logits, y, ts.temperature_) <= ref.fun + 1e-12
    assert 1 <= ts.n_iter_ <= 20


def _nll_derivative_root(logits, y, w):
    """log T where the weighted NLL derivative vanishes (brentq, float64)."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    zy = z[np.arange(len(y)), y]

    def derivative(log_t):  # d NLL / d beta, beta = 1 / T
        q = softmax_rows(z * np.exp(-log_t))
        return np.dot(w, (q * z).sum(axis=1) - zy)

    return brentq(derivative, -3.0, 3.0, xtol=1e-14, rtol=1e-15)


def softmax_rows(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype, weighted", [(np.float32, True), (np.float64, False)])
def test_temperature_large_n_path_matches_exact_root(dtype, weighted):
    # n > 200 000: subsample start, then a float32 Newton pass, then float64
    # passes with the predicted-error stop. The result must be the float64
    # root of the derivative all the same.
    logits, y = multiclass_logits(210_000, 4, scale=2.5, seed=5)
    logits = logits.astype(dtype)
    rng = np.random.default_rng(1)
    w = rng.uniform(0.0, 2.0, y.size) if weighted else None
    ts = TemperatureCalibrator().fit(logits, y, sample_weight=w)
    root = _nll_derivative_root(logits, y, np.ones(y.size) if w is None else w)
    assert np.log(ts.temperature_) == pytest.approx(root, abs=1e-8)
    assert ts.n_iter_ >= 2  # the float32 pass never ends the iteration


@pytest.mark.skipif(
    sklearn_version < parse_version("1.8"),
    reason="CalibratedClassifierCV(method='temperature') needs scikit-learn >= 1.8",
)
def test_temperature_matches_sklearn_calibrated_classifier_cv():
    logits, y = multiclass_logits(4000, 4, scale=2.5, seed=1)
    ours = TemperatureCalibrator().fit(logits, y)
    frozen = FrozenEstimator(ScoreClassifier().fit(logits, y))
    theirs = CalibratedClassifierCV(frozen, method="temperature").fit(logits, y)
    beta = theirs.calibrated_classifiers_[0].calibrators[0].beta_
    assert ours.temperature_ == pytest.approx(1.0 / beta, rel=1e-5)
    np.testing.assert_allclose(
        ours.predict_proba(logits), theirs.predict_proba(logits), atol=1e-6
    )


def test_temperature_on_cifar100_probabilities(shared_loader):
    probs, labels = shared_loader("netcal/densenet-bc-100-cifar-100.npz")
    fit_p, fit_y = probs[:5000], labels[:5000]
    ts = TemperatureCalibrator().fit(fit_p, fit_y)
    assert ts.score_type_ == "probability"
    logp = np.log(np.maximum(fit_p.astype(np.float64), 1e-12))
    ref = minimize_scalar(
        lambda t: _nll(logp, fit_y, np.exp(t)),
        bounds=(-3, 3),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert ts.temperature_ == pytest.approx(np.exp(ref.x), rel=1e-5)
    # DenseNet on CIFAR-100 is over-confident (Guo et al. 2017): T > 1 lowers
    # the test NLL of the other half.
    assert ts.temperature_ > 1.5
    test_p, test_y = probs[5000:], labels[5000:]
    rows = np.arange(test_y.size)
    before = -np.log(np.maximum(test_p[rows, test_y], 1e-12)).mean()
    after = -np.log(ts.predict_proba(test_p)[rows, test_y]).mean()
    assert after < before - 0.1
    # The predicted class never changes.
    np.testing.assert_array_equal(ts.predict(test_p), np.argmax(test_p, axis=1))


def test_temperature_binary_1d_is_sigmoid_of_scaled_score():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    s = 3.0 * ((2 * y - 1) + rng.normal(size=2000))
    ts = TemperatureCalibrator().fit(s, y)
    ts2 = TemperatureCalibrator().fit(np.column_stack([np.zeros_like(s), s]), y)
    assert ts.temperature_ == pytest.approx(ts2.temperature_, rel=1e-10)
    p = ts.predict_proba(s)[:, 1]
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-s / ts.temperature_)), rtol=1e-12)


def test_temperature_extreme_and_degenerate_scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    logits = rng.choice([-1e4, 1e4], size=(300, 3))
    ts = TemperatureCalibrator().fit(logits, y)
    p = ts.predict_proba(logits)
    assert np.isfinite(p).all() and np.allclose(p.sum(axis=1), 1)
    # constant scores carry no information: T = 1 is as good as any; stays finite
    const = np.zeros((50, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = TemperatureCalibrator(score_type="logit").fit(const, np.arange(50) % 3)
    assert ts.temperature_ == 1.0
    np.testing.assert_allclose(ts.predict_proba(const), 1 / 3)


def test_temperature_perfectly_separated_warns_and_stays_finite():
    y = np.arange(100) % 2
    logits = np.column_stack([-(2 * y - 1.0), 2 * y - 1.0])
    with pytest.warns(UserWarning, match="lower bound"):
        ts = TemperatureCalibrator().fit(logits, y)
    # 1e-4 times the largest row range (2): the floor follows the scale
    assert ts.temperature_ == pytest.approx(2e-4)
    assert np.isfinite(ts.predict_proba(logits)).all()


def test_temperature_not_converged_warns():
    logits, y = multiclass_logits(500, 3, scale=5.0)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        TemperatureCalibrator(max_iter=1).fit(logits, y)


# ---------------------------------------------------------------------- Platt
def _platt_reference(s, y, w=None):
    """Platt's objective minimised by BFGS from scipy: the obvious solver."""
    w = np.ones_like(s) if w is None else w
    n_pos, n_neg = w[y == 1].sum(), w[y == 0].sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def f(ab):
        z = ab[0] * s + ab[1]
        return -(w * (t * log_expit(z) + (1 - t) * log_expit(-z))).sum()

    def g(ab):
        z = ab[0] * s + ab[1]
        r = w * (1 / (1 + np.exp(-z)) - t)
        return np.array([r @ s, r.sum()])

    return minimize(f, [1.0, 0.0], jac=g, method="BFGS", options={"gtol": 1e-10}).x


def test_platt_matches_reference_solver_with_weights():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1500)
    s = 3.0 * (2 * y - 1) + rng.normal(scale=2.5, size=1500) + 0.7
    w = rng.uniform(0.2, 3.0, 1500)
    cal = PlattCalibrator().fit(s, y, sample_weight=w)
    a_ref, b_ref = _platt_reference(s, y, w)
    assert cal.coef_[0] == pytest.approx(a_ref, rel=1e-6)
    assert cal.intercept_[0] == pytest.approx(b_ref, rel=1e-6, abs=1e-8)
    assert cal.n_iter_[0] <= 15


def test_platt_matches_sklearn_sigmoid():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 3000)
    s = 2.0 * (2 * y - 1) + rng.normal(scale=2.0, size=3000)
    ours = PlattCalibrator().fit(s, y)
    frozen = FrozenEstimator(ScoreClassifier().fit(s[:, None], y))
    theirs = CalibratedClassifierCV(frozen, method="sigmoid").fit(s[:, None], y)
    sig = theirs.calibrated_classifiers_[0].calibrators[0]
    # sklearn parametrises p = 1 / (1 + exp(A s + B)): A = -a, B = -b. Its
    # L-BFGS stops at gtol=1e-6, so the two agree to about 1e-6.
    assert ours.coef_[0] == pytest.approx(-sig.a_, rel=1e-5)
    assert ours.intercept_[0] == pytest.approx(-sig.b_, abs=1e-5)
    np.testing.assert_allclose(
        ours.predict_proba(s), theirs.predict_proba(s[:, None]), atol=1e-6
    )


def test_platt_on_probabilities_uses_log_odds(shared_loader):
    probs, labels = shared_loader("pycalib/kitti__random_forest.npz")
    cal = PlattCalibrator().fit(probs, labels)
    assert cal.score_type_ == "probability"
    p1 = np.clip(probs[:, 1].astype(np.float64), 1e-12, 1 - 1e-12)
    s = np.log(p1) - np.log1p(-p1)
    # float32 probabilities: the log-odds agree to float32 precision
    a_ref, b_ref = _platt_reference(s, labels)
    assert cal.coef_[0] == pytest.approx(a_ref, rel=1e-3)
    assert cal.intercept_[0] == pytest.approx(b_ref, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_platt_separable_and_extreme_scores_stay_finite(scale):
    y = np.arange(200) % 2
    s = scale * (2 * y - 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        cal = PlattCalibrator().fit(s, y)
    assert np.isfinite(cal.coef_).all() and cal.coef_[0] > 0
    p = cal.predict_proba(s)[:, 1]
    # the smoothed targets bound the fit: (N+ + 1) / (N+ + 2) with N+ = 100
    np.testing.assert_allclose(p[y == 1], 101 / 102, rtol=1e-6)
    np.testing.assert_allclose(p[y == 0], 1 / 102, rtol=1e-6)


def test_platt_constant_scores_give_smoothed_prior():
    y = np.array([0, 0, 0, 1] * 25)
    cal = PlattCalibrator().fit(np.full(100, 0.3), y)
    # with a constant score the optimum is the smoothed base rate
    n_pos, n_neg = 25, 75
    t_pos, t_neg = (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2)
    expected = (n_pos * t_pos + n_neg * t_neg) / 100
    np.testing.assert_allclose(
        cal.predict_proba(np.array([0.3]))[0, 1], expected, rtol=1e-8
    )


def test_platt_multiclass_ovr_renormalises():
    logits, y = multiclass_logits(2000, 4, scale=3.0)
    cal = PlattCalibrator().fit(logits, y)
    assert cal.coef_.shape == (4,) and len(cal.calibrators_) == 4
    p = cal.predict_proba(logits)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # each class map equals a binary Platt fit on that class's log-odds
    lp = log_softmax(logits, axis=1)
    odds = lp[:, 2] - np.log(-np.expm1(lp[:, 2]))
    a_ref, b_ref = _platt_reference(odds, (y == 2).astype(int))
    assert cal.coef_[2] == pytest.approx(a_ref, rel=1e-6)
    assert cal.intercept_[2] == pytest.approx(b_ref, rel=1e-6)
    assert logsumexp(np.log(p), axis=1) == pytest.approx(np.zeros(2000), abs=1e-12)
