"""Beta calibration against a reference solver, the betacal package and data."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

from skcalib import BetaCalibrator
from skcalib.calibration._beta import beta_midpoint
from skcalib.datasets import make_miscalibrated_scores

LN2 = np.log(2.0)


def _beta_scores(n, seed=0):
    """Probabilities with beta class-conditionals: the beta family is exact."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.where(y == 1, rng.beta(4, 1.5, n), rng.beta(1.2, 3, n))
    return p, y


def _reference(p, y, w, parameters, drop=()):
    """The plain weighted log-likelihood minimised by scipy's BFGS."""
    lp, l1 = np.log(p), np.log1p(-p)

    def unpack(v):
        v = list(v)
        a = 0.0 if "a" in drop else v.pop(0)
        if parameters == "am":
            return a, a, v.pop(0)
        b = 0.0 if "b" in drop else v.pop(0)
        c = (a - b) * LN2 if parameters == "ab" else v.pop(0)
        return a, b, c

    def nll(v):
        a, b, c = unpack(v)
        z = a * lp - b * l1 + c
        return -(w * (y * log_expit(z) + (1 - y) * log_expit(-z))).sum()

    n_free = {"abm": 3, "am": 2, "ab": 2}[parameters] - len(drop)
    res = minimize(
        nll, np.r_[np.ones(n_free - 1), 0.0], method="BFGS", options={"gtol": 1e-10}
    )
    return np.array(unpack(res.x)), res.fun


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_matches_reference_minimiser_with_weights(parameters):
    p, y = _beta_scores(2000)
    w = np.random.default_rng(1).uniform(0.2, 3.0, y.size)
    cal = BetaCalibrator(parameters=parameters).fit(p, y, sample_weight=w)
    (a, b, c), fun = _reference(p, y, w, parameters)
    # BFGS may stop a little short of the minimum (scipy 1.11 did, by 4e-7 on
    # c for "ab"): ours must reach at least its objective, and be close to it
    za, zb = cal.coef_[0]
    z_ours = za * np.log(p) - zb * np.log1p(-p) + cal.intercept_[0]
    ours = -(w * (y * log_expit(z_ours) + (1 - y) * log_expit(-z_ours))).sum()
    assert ours <= fun + 1e-9 * abs(fun)
    np.testing.assert_allclose(cal.coef_[0], [a, b], rtol=1e-5)
    assert cal.intercept_[0] == pytest.approx(c, rel=1e-5, abs=1e-6)
    assert 1 <= cal.n_iter_[0] <= 20
    z = a * np.log(p) - b * np.log1p(-p) + c
    np.testing.assert_allclose(cal.predict_proba(p)[:, 1], expit(z), atol=1e-7)


def test_parametrisations_nest():
    p, y = _beta_scores(3000, seed=2)
    abm = BetaCalibrator().fit(p, y)
    am = BetaCalibrator(parameters="am").fit(p, y)
    ab = BetaCalibrator(parameters="ab").fit(p, y)
    assert am.coef_[0, 0] == am.coef_[0, 1]
    assert ab.intercept_[0] == pytest.approx((ab.coef_[0, 0] - ab.coef_[0, 1]) * LN2)
    # the 3-parameter model has the best likelihood on its own data
    ll = {
        name: -np.log(m.predict_proba(p)[np.arange(y.size), y]).sum()
        for name, m in [("abm", abm), ("am", am), ("ab", ab)]
    }
    assert ll["abm"] <= ll["am"] + 1e-8 and ll["abm"] <= ll["ab"] + 1e-8
    # "am" is a logistic map of the log-odds: logistic regression on them
    s = np.log(p) - np.log1p(-p)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(s[:, None], y)
    assert am.coef_[0, 0] == pytest.approx(lr.coef_[0, 0], rel=1e-5)
    assert am.intercept_[0] == pytest.approx(lr.intercept_[0], rel=1e-5, abs=1e-6)


def test_negative_slope_is_dropped_and_refitted():
    # Positives at both ends and negatives in the middle-low range: the free
    # fit wants a < 0 (the map would rise again towards p = 0).
    rng = np.random.default_rng(3)
    p = np.r_[
        rng.uniform(1e-4, 1e-3, 150),
        rng.uniform(0.05, 0.4, 600),
        rng.uniform(0.6, 0.99, 400),
    ]
    y = np.r_[np.ones(150), (rng.uniform(size=600) < 0.05), np.ones(400)].astype(int)
    w = np.ones(y.size)
    (a_free, _, _), _ = _reference(p, y, w, "abm")
    assert a_free < 0
    cal = BetaCalibrator().fit(p, y)
    (a, b, c), _ = _reference(p, y, w, "abm", drop=("a",))
    assert cal.coef_[0, 0] == 0.0 and b > 0
    assert cal.coef_[0, 1] == pytest.approx(b, rel=1e-6)
    assert cal.intercept_[0] == pytest.approx(c, rel=1e-6)
    q = cal.predict_proba(np.sort(p))[:, 1]
    assert np.all(np.diff(q) >= -1e-15)  # never decreasing


def test_recovers_a_known_logistic_map():
    # P(y = 1 | s) = sigmoid(s / T): in beta terms a = b = 1 / T, c = 0.
    logits, y, _ = make_miscalibrated_scores(40000, 2, temperature=2.5, random_state=0)
    s = logits[:, 1] - logits[:, 0]
    for parameters in ["abm", "am", "ab"]:
        cal = BetaCalibrator(parameters=parameters).fit(s, y)
        np.testing.assert_allclose(cal.coef_[0], 0.4, atol=0.03)
        assert abs(cal.intercept_[0]) < 0.05
        assert cal.map_[0] == pytest.approx(0.5, abs=0.02)


def test_midpoint_solves_the_map_and_is_nan_without_crossing():
    p, y = _beta_scores(2000, seed=4)
    for parameters in ["abm", "am", "ab"]:
        cal = BetaCalibrator(parameters=parameters).fit(p, y)
        m = cal.map_[0]
        (a, b), c = cal.coef_[0], cal.intercept_[0]
        assert a * np.log(m) - b * np.log1p(-m) + c == pytest.approx(0, abs=1e-12)
        assert cal.predict_proba([m])[0, 1] == pytest.approx(0.5, abs=1e-12)
    assert BetaCalibrator(parameters="ab").fit(p, y).map_[0] == 0.5
    # boundary cases of the closed forms
    m = beta_midpoint(0.0, 2.0, -1.0)
    assert -2 * np.log1p(-m) - 1 == pytest.approx(0, abs=1e-12)
    m = beta_midpoint(3.0, 0.0, 0.5)
    assert 3 * np.log(m) + 0.5 == pytest.approx(0, abs=1e-12)
    assert np.isnan(beta_midpoint(0.0, 2.0, 0.5))
    assert np.isnan(beta_midpoint(3.0, 0.0, -0.5))
    assert np.isnan(beta_midpoint(0.0, 0.0, 0.0))


def test_betacal_parity():
    """betacal 1.1.0 (the authors' package) against skcalib.

    Differences come from betacal's solver: scikit-learn's
    ``LogisticRegression(C=99999999999)`` stops when its L-BFGS gradient is
    below 1e-4, a few 1e-3 from the optimum in the coefficients (its NLL is
    higher than ours); predictions agree to 1e-3.
    """
    betacal = pytest.importorskip("betacal")
    p, y = _beta_scores(3000, seed=5)
    lp, l1 = np.log(p), np.log1p(-p)
    for parameters in ["abm", "am", "ab"]:
        ours = BetaCalibrator(parameters=parameters).fit(p, y)
        # betacal sets warnings.filterwarnings("ignore") globally: contain it
        with warnings.catch_warnings():
            theirs = betacal.BetaCalibration(parameters).fit(p, y)
            q_theirs = theirs.predict(p)
        a, b, m = theirs.calibrator_.map_
        np.testing.assert_allclose(ours.coef_[0], [a, b], rtol=2e-2)
        if parameters != "am":  # betacal's "am" midpoint is exact; abm's searched
            assert ours.map_[0] == pytest.approx(m, abs=2e-3)
        q_ours = ours.predict_proba(p)[:, 1]
        np.testing.assert_allclose(q_ours, q_theirs, atol=2e-3)

        def nll(q):
            return -(y * np.log(q) + (1 - y) * np.log1p(-q)).sum()

        assert nll(q_ours) <= nll(q_theirs) + 1e-9
        assert np.allclose(
            ours.intercept_[0] + ours.coef_[0, 0] * lp - ours.coef_[0, 1] * l1,
            np.log(q_ours) - np.log1p(-q_ours),
        )
    assert betacal.__version__ == "1.1.0"


@pytest.mark.parametrize(
    "name",
    ["airlines_42493_rf", "2dplanes_727_cb3", "mozilla4_1046_cb3"],
)
def test_lowers_test_nll_on_splinecalib_pairs(shared_loader, name):
    # airlines rf is over-confident, the CatBoost cb3 models under-confident.
    pc, yc = shared_loader(f"splinecalib/calibset_{name}.npz")
    pt, yt = shared_loader(f"splinecalib/testset_{name}.npz")
    rows = np.arange(yt.size)
    before = -np.log(np.maximum(pt[rows, yt].astype(np.float64), 1e-12)).mean()
    cal = BetaCalibrator().fit(pc, yc)
    after = -np.log(cal.predict_proba(pt)[rows, yt]).mean()
    expected = {  # NLL before -> after (skcalib 0.1.0.dev0, numpy 2.4, scipy 1.17)
        "airlines_42493_rf": (0.8857, 0.6789),
        "2dplanes_727_cb3": (0.2395, 0.1816),
        "mozilla4_1046_cb3": (0.2229, 0.1763),
    }[name]
    assert before == pytest.approx(expected[0], abs=1e-4)
    assert after == pytest.approx(expected[1], abs=1e-3)
    assert after < before - 0.04


def test_multiclass_ovr_under_confident_mnist(shared_loader):
    pc, yc = shared_loader("splinecalib/mnist4_calib_set.npz")
    pt, yt = shared_loader("splinecalib/mnist4_test_set.npz")
    cal = BetaCalibrator().fit(pc, yc)
    assert cal.coef_.shape == (5, 2) and cal.map_.shape == (5,)
    rows = np.arange(yt.size)
    before = -np.log(pt[rows, yt].astype(np.float64)).mean()
    after = -np.log(cal.predict_proba(pt)[rows, yt].astype(np.float64)).mean()
    assert before == pytest.approx(0.5259, abs=1e-4)
    assert after == pytest.approx(0.2334, abs=1e-3)
    # each class's map is the binary fit of that class's score
    k = 3
    one = BetaCalibrator().fit(pc[:, k].astype(np.float64), (yc == k).astype(int))
    np.testing.assert_allclose(cal.coef_[k], one.coef_[0], rtol=1e-4)


def test_top_label_and_string_labels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 1500)
    logits = 3 * (rng.normal(size=(1500, 3)) + np.eye(3)[y])
    names = np.array(["a", "b", "c"])[y]
    cal = BetaCalibrator(multi_class="top_label").fit(logits, names)
    p = cal.predict_proba(logits)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert set(cal.predict(logits)) <= {"a", "b", "c"}
    assert len(cal.calibrators_) == 3 and cal.coef_.shape == (3, 2)


# --------------------------------------------------------------- equivalences
def test_weight_two_is_a_duplicate_and_zero_is_dropped():
    p, y = _beta_scores(400, seed=6)
    w = np.random.default_rng(7).integers(0, 3, y.size).astype(float)
    w[:2] = [1, 2]
    a = BetaCalibrator().fit(p, y, sample_weight=w)
    b = BetaCalibrator().fit(np.repeat(p, w.astype(int)), np.repeat(y, w.astype(int)))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9)
    np.testing.assert_allclose(a.predict_proba(p), b.predict_proba(p), atol=1e-12)


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_extreme_logits_and_probabilities_stay_finite(parameters):
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 300)
    s = rng.choice([-1e4, -3.0, 0.0, 3.0, 1e4], size=300) + (2 * y - 1)
    cal = BetaCalibrator(parameters=parameters).fit(s, y)
    grid = np.array([-1e4, -50.0, 0.0, 50.0, 1e4])
    q = cal.predict_proba(grid)
    assert np.isfinite(cal.coef_).all() and np.isfinite(q).all()
    assert (q > 0).all() and np.all(np.diff(q[:, 1]) >= 0)
    p = np.r_[np.zeros(50), np.ones(50), rng.uniform(size=200)]  # exact 0 and 1
    yy = (rng.uniform(size=300) < p).astype(int)
    assert np.isfinite(
        BetaCalibrator(parameters=parameters).fit(p, yy).predict_proba(p)
    ).all()


def test_separated_scores_warn_and_give_a_near_step_map():
    s = np.r_[np.linspace(-3, -1, 50), np.linspace(1, 3, 50)]
    y = np.r_[np.zeros(50), np.ones(50)].astype(int)
    with pytest.warns(UserWarning, match="separate the classes"):
        cal = BetaCalibrator().fit(s, y)
    q = cal.predict_proba(s)[:, 1]
    assert np.isfinite(q).all() and q[:50].max() < 1e-6 and q[50:].min() > 1 - 1e-6


def test_bad_parameters_and_input():
    with pytest.raises(InvalidParameterError, match="parameters"):
        BetaCalibrator(parameters="abc").fit(np.array([0.2, 0.8]), [0, 1])
    with pytest.raises(ValueError, match="one class"):
        BetaCalibrator().fit(np.array([0.2, 0.8]), [1, 1])
    with pytest.raises(ValueError, match="NaN"):
        BetaCalibrator().fit(np.array([0.2, np.nan]), [0, 1])


def test_weight_two_is_a_duplicate_on_a_dozen_rows_with_an_optimum():
    # 12 overlapping rows (the likelihood has a maximum, no warning): the
    # weighted and the repeated fits solve the same problem. On separated
    # rows they need not agree between the classes (see the Notes).
    p = np.array([0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8, 0.85, 0.9])
    y = np.array([0, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1])
    w = np.array([1, 2, 1, 3, 1, 2, 1, 1, 2, 1, 1, 2], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = BetaCalibrator().fit(p, y, sample_weight=w)
        reps = w.astype(int)
        b = BetaCalibrator().fit(np.repeat(p, reps), np.repeat(y, reps))
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-10)
