"""Issue 14, scaling calibrators: no silent guesses (regression tests).

Each test reproduces a wrong result or crash of the issue; the reference
numbers come from the scale-equivariance of the models (logits times ``c``
give the same probabilities), from the same fit with unit weights, or from
an order of the rows.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcalib import (
    BetaCalibrator,
    DirichletCalibrator,
    MatrixScalingCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
    VennAbersCalibrator,
)
from skcalib._core.solvers.linear import PenalisedNLL, fit_matrix
from skcalib._core.solvers.logistic import fit_platt
from skcalib._core.solvers.newton import separation
from skcalib._core.solvers.temperature import fit_temperature
from skcalib.metrics import negative_log_likelihood

LINEAR = [VectorScalingCalibrator, MatrixScalingCalibrator, DirichletCalibrator]


def _twelve_rows(seed):
    """3 classes, 4 rows each: an affine map of the logits separates them."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 4)
    z = rng.normal(size=(12, 3)) * 2 + rng.uniform(0, 4) * np.eye(3)[y]
    return z, y, rng.normal(size=(200, 3)) * 3


def _unpenalised(cls):
    """Scale-equivariant instance (the default ODIR ridge of matrix scaling
    is not: it penalises the coefficients of scaled logits differently)."""
    if cls is MatrixScalingCalibrator:
        return cls(score_type="logit", reg_lambda=0.0, reg_mu=0.0)
    return cls(score_type="logit")


# ------------------------------------------------------------ item 5: separation
@pytest.mark.parametrize(
    ("cls", "kwargs", "seed"),
    [
        (MatrixScalingCalibrator, {"reg_lambda": 0.0, "reg_mu": 0.0}, 9),
        (DirichletCalibrator, {"reg_lambda": 0.0, "reg_mu": 0.0}, 33),
        (DirichletCalibrator, {}, 3),  # ODIR leaves the diagonal free
    ],
)
def test_separated_twelve_rows_warn_and_do_not_depend_on_row_order(cls, kwargs, seed):
    # Before: no warning, |coef| 55, 164 and 569, and six row orders gave
    # test probabilities that differ by 1.0, 0.994 and 0.999.
    z, y, z_test = _twelve_rows(seed)
    probas, coefs = [], []
    for seed in range(6):
        perm = np.random.default_rng(seed).permutation(12)
        with pytest.warns(UserWarning, match="separate the classes"):
            cal = cls(**kwargs).fit(z[perm], y[perm])
        probas.append(cal.predict_proba(z_test))
        coefs.append(np.abs(cal.coef_).max())
    probas = np.array(probas)
    assert np.abs(probas - probas[0]).max() < 1e-4
    assert max(coefs) < 20


def test_separation_detector_on_hand_made_margins():
    # One direction separates (x > 0 for positives, x < 0 for negatives).
    x = np.array([-2.0, -1.0, 1.0, 3.0])
    t = np.array([0, 0, 1, 1])
    assert separation(((2 * t - 1) * x)[:, None]) == 4
    # Overlap: positives and negatives on both sides -> no separation.
    t = np.array([1, 0, 1, 0])
    design = np.column_stack([x, np.ones(4)])
    assert separation((2 * t - 1)[:, None] * design) == 0
    # Quasi-separation: a tie at 0 between a positive and a negative.
    x = np.array([-1.0, 0.0, 0.0, 1.0])
    t = np.array([0, 0, 1, 1])
    assert separation(((2 * t - 1) * x)[:, None]) == 2


def test_overlapping_classes_do_not_warn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 400)
    z = rng.normal(size=(400, 3)) + np.eye(3)[y]
    for cls in LINEAR:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cls().fit(z, y)


# ---------------------------------------------------- item 8: temperature range
@pytest.mark.parametrize("factor", [1e4, 1e200, 1e-200])
def test_temperature_follows_the_scale_of_the_logits(factor):
    # Before (factor 1e4): T capped at 1e4, NLL 2.313 instead of 1.792 and a
    # "carry no information" warning.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 6, 2000)
    z = rng.normal(size=(2000, 6)) + 0.3 * np.eye(6)[y]
    ref = TemperatureCalibrator(score_type="logit").fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = TemperatureCalibrator(score_type="logit").fit(factor * z, y)
    assert got.temperature_ == pytest.approx(factor * ref.temperature_, rel=1e-8)
    nll_ref = negative_log_likelihood(y, ref.predict_proba(z))
    nll = negative_log_likelihood(y, got.predict_proba(factor * z))
    assert nll == pytest.approx(nll_ref, abs=1e-9)
    assert nll < np.log(6) - 0.01  # informative scores


def test_temperature_of_uninformative_scores_warns_at_a_relative_bound():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 300)
    z = rng.normal(size=(300, 3))
    z[np.arange(300), y] -= 0.5  # the true class is worse than average
    with pytest.warns(UserWarning, match="carry no information"):
        ts = TemperatureCalibrator(score_type="logit").fit(z, y)
    assert ts.temperature_ > 1e11 * np.abs(z).max()
    np.testing.assert_allclose(ts.predict_proba(z), 1 / 3, atol=1e-9)


# ------------------------------------------------------------ item 7: weights
@pytest.mark.parametrize("value", [1e308, 5e-324])
def test_temperature_weight_scale_direct_call(value):
    # Before: 5e-324 gave T 1.756 instead of 1.945 (denormal sums).
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 500)
    z = 3.0 * (rng.normal(size=(500, 3)) + np.eye(3)[y])
    ref = fit_temperature(z, y)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fit_temperature(z, y, np.full(500, value))[0]
    assert got == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("value", [1e308, 5e-324])
def test_linear_solver_weight_scale_direct_call(value):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 300)
    z = rng.normal(size=(300, 3)) + np.eye(3)[y]
    c = np.zeros((3, 4))
    ref = fit_matrix(
        PenalisedNLL(z, y, None, c, diagonal=False), max_iter=500, tol=1e-9
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        problem = PenalisedNLL(z, y, np.full(300, value), c, diagonal=False)
        got = fit_matrix(problem, max_iter=500, tol=1e-9)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-8)


def test_platt_extreme_weights_are_finite_and_follow_the_documented_counts():
    # Before: weights 1e308 gave NaN with overflow warnings.
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 400)
    s = 2.0 * (2 * y - 1) + rng.normal(scale=2.0, size=400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = PlattCalibrator().fit(s, y, sample_weight=np.full(400, 1e308))
    assert np.isfinite(huge.coef_).all() and np.isfinite(huge.intercept_).all()
    # Frequency weights: N+ = W+ = inf, targets 1 and 0, i.e. unsmoothed
    # logistic regression (fit_platt with 0/1 targets and huge counts).
    a, b, _, _ = fit_platt(s, y.astype(float), np.full(400, 1e300))
    assert huge.coef_[0] == pytest.approx(a, rel=1e-8)
    # A weight of 2 is a duplicated row.
    w = np.ones(400)
    w[:10] = 2.0
    dup = PlattCalibrator().fit(np.r_[s, s[:10]], np.r_[y, y[:10]])
    two = PlattCalibrator().fit(s, y, sample_weight=w)
    assert two.coef_[0] == pytest.approx(dup.coef_[0], rel=1e-9)


# -------------------------------------------- overflow of x_scale**2 (crashes)
@pytest.mark.parametrize("cls", LINEAR)
def test_logits_of_1e200_give_finite_probabilities(cls):
    # Before: OverflowError from x_scale**2 in the linear solver.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60)
    z = rng.normal(size=(60, 3)) + np.eye(3)[y]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = _unpenalised(cls).fit(1e200 * z, y)
    p = big.predict_proba(1e200 * z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    if cls is not DirichletCalibrator:  # the same model on scaled logits
        ref = _unpenalised(cls).fit(z, y).predict_proba(z)
        np.testing.assert_allclose(p, ref, atol=1e-8)


@pytest.mark.parametrize("cls", [VectorScalingCalibrator, MatrixScalingCalibrator])
def test_logits_of_1e6_fit_like_the_logits(cls):
    # Before: vector scaling did not converge (0.98 off), starting from the
    # identity deep in the saturated region.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60)
    z = rng.normal(size=(60, 3)) + np.eye(3)[y]
    ref = _unpenalised(cls).fit(z, y).predict_proba(z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _unpenalised(cls).fit(1e6 * z, y).predict_proba(1e6 * z)
    np.testing.assert_allclose(got, ref, atol=1e-6)


# ---------------------------------------------- extremes in every method owned
ALL = [
    TemperatureCalibrator,
    PlattCalibrator,
    VectorScalingCalibrator,
    MatrixScalingCalibrator,
    DirichletCalibrator,
    BetaCalibrator,
    VennAbersCalibrator,
]


def _extreme_cases():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 90)
    return y, {
        "saturated": rng.choice([-1e4, 1e4], size=(90, 3)),
        "saturated_right": (2 * np.eye(3)[y] - 1) * 1e4 + rng.normal(size=(90, 3)),
        "float32": (3 * rng.normal(size=(90, 3)) + np.eye(3)[y]).astype(np.float32),
        "constant": np.full((90, 3), 5.0),
        "huge": 1e200 * rng.normal(size=(90, 3)),
    }


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    "case", ["saturated", "saturated_right", "float32", "constant", "huge"]
)
def test_extreme_scores_finite_and_no_numpy_warnings(cls, case):
    y, cases = _extreme_cases()
    X = cases[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = cls(score_type="logit").fit(X, y)
        p = cal.predict_proba(X)
    assert p.dtype == X.dtype
    assert np.isfinite(p).all()
    tol = 1e-5 if X.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=tol)
    # Only our own warnings, each with plain values in its message.
    for w in caught:
        assert issubclass(w.category, (UserWarning, ConvergenceWarning)), w
        assert not issubclass(w.category, RuntimeWarning), w
        assert "np." not in str(w.message), w
    if hasattr(cal, "n_iter_"):
        assert np.all(np.asarray(cal.n_iter_) >= 0)


# ---------------------------------------- issue 16: fits at the optimum itself
def _saturated(seed, n=114, k=5):
    """Integer logits with a tenth of the rows at +-1e4 (labels drawn before
    the extremes), the case of the property suite that reordered to 0.03."""
    rng = np.random.default_rng(seed)
    z = np.round(rng.normal(size=(n, k)) * 3)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), k - 1)
    y[: 5 * k] = np.arange(5 * k) % k
    rows = rng.choice(n, size=n // 10, replace=False)
    z[rows, rng.integers(0, k, rows.size)] = rng.choice([-1e4, 1e4], rows.size)
    probe = np.vstack([z, np.zeros(k), 1e4 * np.eye(k)[0], -1e4 * np.eye(k)[-1]])
    return z, y, probe, rng


@pytest.mark.parametrize("cls", LINEAR)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_saturated_logits_fit_does_not_depend_on_row_order_or_weight_scale(cls, seed):
    # Before: the solver stopped at its gradient tolerance (or max_iter),
    # where the flat directions of W left the predictions at the +-1e4
    # rows up to 0.034 (Dirichlet) / 4.5e-4 (matrix) apart under a
    # permutation and 6e-5 apart under weights x 1e3. Newton polishing
    # reaches the optimum to float64 rounding.
    # "auto" strengths count the weights as rows (their sum is n): weights
    # x 1e3 are compared at the strengths the unit-scale fit resolved.
    z, y, probe, rng = _saturated(seed)
    w = rng.uniform(0.5, 2.0, y.size)
    perm = rng.permutation(y.size)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fitted = cls().fit(z, y, sample_weight=w)
        a = fitted.predict_proba(probe)
        b = cls().fit(z[perm], y[perm], sample_weight=w[perm]).predict_proba(probe)
        same = {"reg_lambda": fitted.reg_lambda_, "reg_mu": fitted.reg_mu_}
        c = cls(**same).fit(z, y, sample_weight=w * 1e3).predict_proba(probe)
        d = cls(**same).fit(z, y, sample_weight=w * 1e-300).predict_proba(probe)
    assert not [r for r in record if issubclass(r.category, ConvergenceWarning)]
    for other in (b, c, d):
        np.testing.assert_allclose(other, a, rtol=0, atol=1e-9)


@pytest.mark.parametrize("cls", LINEAR)
def test_constant_score_column_gets_no_step_along_what_the_data_cannot_see(cls):
    # A constant column beside the intercept: w_0 * c + b_0 is all the data
    # see. Before: the Newton ridge turned rounding noise of the gradient
    # into steps along w_0, so weights x 1e3 moved predictions at scores
    # of 1e4 in that column by 2.8e-3 (vector scaling).
    rng = np.random.default_rng(4)
    z = rng.normal(size=(24, 4))
    z[:, 0] = 0.5
    y = np.arange(24) % 4
    w = rng.uniform(0.5, 2.0, y.size)
    probe = np.vstack([np.zeros(4), 1e4 * np.eye(4)[0]])
    a = cls(score_type="logit").fit(z, y, sample_weight=w)
    # "auto" strengths count the weights as rows: compared at a's strengths
    same = {k: getattr(a, k + "_") for k in ("reg_lambda", "reg_mu")}
    b = cls(score_type="logit", **same).fit(z, y, sample_weight=w * 1e3)
    np.testing.assert_allclose(
        b.predict_proba(probe), a.predict_proba(probe), rtol=0, atol=1e-9
    )
