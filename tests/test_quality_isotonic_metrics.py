"""Issue 16, items 7-9: centered isotonic regression, the isotonic and
cross-fitted calibration-refinement decompositions, the classwise root mean
square and one bin per distinct value.

References: slow Python loops written here from the papers' definitions,
scikit-learn's IsotonicRegression, and uncertainty-calibration 0.1.4
(``calibration.get_calibration_error``, Kumar et al. 2019) where installed.
"""

import numpy as np
import pytest
from scipy.special import expit, logit
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import roc_auc_score

from skcalib import HistogramBinningCalibrator, IsotonicCalibrator
from skcalib.metrics import (
    brier_score,
    calibration_refinement_decomposition,
    classwise_calibration_error,
    expected_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)


# ------------------------------------------------------- slow references
def slow_pav(y, w):
    """Pool-adjacent-violators by the textbook loop: (value, weight, members)."""
    blocks = []
    for i, (yi, wi) in enumerate(zip(y, w, strict=True)):
        blocks.append([yi, wi, [i]])
        while len(blocks) > 1 and blocks[-2][0] >= blocks[-1][0]:
            v2, w2, m2 = blocks.pop()
            v1, w1, m1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, m1 + m2])
    return blocks


def slow_cir(x, y, w, grid):
    """Centered isotonic regression (Oron & Flournoy 2017, strict): block
    centres at the weighted mean score, linear between them, flat to the
    ends of the data and beyond."""
    order = np.argsort(x)
    x, y, w = x[order], y[order], w[order]
    blocks = slow_pav(list(y), list(w))
    kx = [sum(w[j] * x[j] for j in m) / sum(w[j] for j in m) for _, _, m in blocks]
    ky = [v for v, _, _ in blocks]
    kx, ky = [x[0]] + kx + [x[-1]], [ky[0]] + ky + [ky[-1]]
    return np.interp(grid, kx, ky)


# ------------------------------------------------------------ item 7: CIR
def test_centered_isotonic_matches_the_slow_definition():
    rng = np.random.default_rng(0)
    s = rng.normal(scale=2, size=400)  # distinct log-odds
    y = (rng.uniform(size=s.size) < expit(s)).astype(float)
    w = rng.uniform(0.5, 2.0, s.size)
    cal = IsotonicCalibrator(score_type="logit").fit(s, y, sample_weight=w)
    grid = np.linspace(-8, 8, 801)
    expected = np.clip(slow_cir(s, y, w, grid), 1e-12, 1 - 1e-12)
    np.testing.assert_allclose(cal.predict_proba(grid)[:, 1], expected, atol=1e-12)


def test_centered_isotonic_hand_example():
    # log-odds -2.197, -0.847, -0.405, 0.405, 1.386, 2.197; PAV blocks
    # {x1}: 0, {x2, x3}: 1/2, {x4, x5, x6}: 1; centres -0.626 and 1.329.
    p = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    x = logit(p)
    c2, c3 = (x[1] + x[2]) / 2, (x[3] + x[4] + x[5]) / 3
    want = np.interp(x, [x[0], c2, c3, x[5]], [0.0, 0.5, 1.0, 1.0])
    got = IsotonicCalibrator().fit(p, y).predict_proba(p)[:, 1]
    np.testing.assert_allclose(got, np.clip(want, 1e-12, 1 - 1e-12), atol=1e-12)
    assert got[2] == pytest.approx(0.5 + 0.5 * (x[2] - c2) / (c3 - c2))


def test_pav_method_is_sklearn_isotonic_regression():
    rng = np.random.default_rng(1)
    s = rng.normal(scale=3, size=1000)
    y = (rng.uniform(size=1000) < expit(s / 2)).astype(int)
    cal = IsotonicCalibrator(score_type="logit", method="pav").fit(s, y)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y)
    grid = np.linspace(-12, 12, 301)
    np.testing.assert_allclose(
        cal.predict_proba(grid)[:, 1],
        np.clip(ref.predict(grid), 1e-12, 1 - 1e-12),
        rtol=1e-10,
    )


def test_centered_weights_are_counts():
    rng = np.random.default_rng(2)
    s = np.round(rng.normal(size=300), 2)  # ties
    y = (rng.uniform(size=s.size) < expit(s)).astype(int)
    w = rng.integers(0, 3, s.size)
    a = IsotonicCalibrator(score_type="logit").fit(s, y, sample_weight=w)
    b = IsotonicCalibrator(score_type="logit").fit(np.repeat(s, w), np.repeat(y, w))
    grid = np.linspace(-3, 3, 121)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-12)
    c = IsotonicCalibrator(score_type="logit").fit(s, y, sample_weight=w * 1e-300)
    np.testing.assert_allclose(c.predict_proba(grid), a.predict_proba(grid), atol=1e-12)


@pytest.mark.parametrize(
    "name", ["splinecalib/{}_mozilla4_1046_cb2", "splinecalib/{}_airlines_42493_cb1"]
)
def test_centered_keeps_the_roc_auc_on_real_data(shared_loader, name):
    p_cal, y_cal = shared_loader(name.format("calibset") + ".npz")
    p_test, y_test = shared_loader(name.format("testset") + ".npz")
    raw = roc_auc_score(y_test, p_test[:, 1])
    auc, nll = {}, {}
    for method in ("pav", "centered"):
        cal = IsotonicCalibrator(method=method).fit(p_cal, y_cal)
        q = cal.predict_proba(p_test)
        auc[method] = roc_auc_score(y_test, q[:, 1])
        nll[method] = negative_log_likelihood(y_test, q)
    # measured (benchmarks/bench_isotonic_ranking.py): raw 0.96881 / 0.60741,
    # pav 0.96749 / 0.60473, centered = raw to 1e-5
    assert abs(auc["centered"] - raw) < 1e-4
    assert raw - auc["pav"] > 1e-3
    assert nll["centered"] < nll["pav"]


def test_centered_is_strictly_increasing_inside_the_blocks():
    rng = np.random.default_rng(4)
    s = rng.normal(size=2000)
    y = (rng.uniform(size=s.size) < expit(2 * s)).astype(int)
    cal = IsotonicCalibrator(score_type="logit").fit(s, y)
    knots = cal.calibrators_[0].X_thresholds_
    grid = np.linspace(knots[1], knots[-2], 5000)  # first to last centre
    assert np.all(np.diff(cal.predict_proba(grid)[:, 1]) > 0)
    pav = IsotonicCalibrator(score_type="logit", method="pav").fit(s, y)
    assert np.unique(pav.predict_proba(s)[:, 1]).size < 0.1 * s.size
    assert np.unique(cal.predict_proba(s)[:, 1]).size > 0.8 * s.size


# ------------------------------------------- item 8: the decomposition
def test_isotonic_decomposition_hand_computed_pav():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    y = np.array([0, 1, 0, 0, 1, 1])
    # PAV: the violators (1, 0, 0) pool to 1/3; the rest is already monotone.
    r = np.array([0, 1 / 3, 1 / 3, 1 / 3, 1, 1])
    blocks = slow_pav(list(y.astype(float)), [1.0] * 6)
    assert [b[0] for b in blocks] == [0.0, pytest.approx(1 / 3), 1.0]
    brier = np.mean((p - y) ** 2)
    res = calibration_refinement_decomposition(
        y, p, loss="brier", recalibration="isotonic"
    )
    assert res.loss == pytest.approx(brier, rel=1e-12)
    assert res.refinement == pytest.approx(np.mean((r - y) ** 2), rel=1e-12)
    assert res.calibration == pytest.approx(brier - 1 / 9, rel=1e-12)
    assert np.isnan(res.temperature) and res.recalibration == "isotonic"
    res = calibration_refinement_decomposition(y, p, recalibration="isotonic")
    assert res.refinement == pytest.approx((np.log(3) + 2 * np.log(1.5)) / 6)


def _kinked(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    z = logit(p)
    y = (rng.uniform(size=n) < expit(np.where(z > 0, 0.58 * z, 2.4 * z))).astype(int)
    return y, p


def test_kinked_miscalibration_is_seen_by_isotonic_only():
    y, p = _kinked()
    temp = calibration_refinement_decomposition(y, p)
    iso = calibration_refinement_decomposition(y, p, recalibration="isotonic")
    cross = calibration_refinement_decomposition(y, p, recalibration="isotonic", cv=5)
    assert temp.calibration < 3e-4
    assert iso.calibration == pytest.approx(0.0527, abs=5e-4)
    # out of sample: less than in-sample (no overfit), far more than temperature
    assert 0.03 < cross.calibration < iso.calibration and cross.cv == 5
    # The isotonic family contains every temperature map (binary): in-sample
    # its refinement is lower, and lower than the base rate's loss (DSC >= 0).
    assert iso.refinement <= temp.refinement + 1e-12
    rate = np.full(p.size, y.mean())
    assert iso.refinement <= negative_log_likelihood(y, rate)
    iso_b = calibration_refinement_decomposition(
        y, p, loss="brier", recalibration="isotonic"
    )
    pav = IsotonicRegression(y_min=0, y_max=1).fit(p, y).predict(p)
    assert iso_b.refinement == pytest.approx(brier_score(y, pav), rel=1e-10)


def test_cross_fitted_term_is_not_biased_towards_overfitting():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 3000)
    y = (rng.uniform(size=p.size) < p).astype(int)  # calibrated
    iso = calibration_refinement_decomposition(y, p, recalibration="isotonic")
    cross = calibration_refinement_decomposition(y, p, recalibration="isotonic", cv=5)
    t_cross = calibration_refinement_decomposition(y, p, cv=5)
    assert iso.calibration > 0.003  # in-sample PAV fits the noise
    assert cross.calibration < 0.001 and t_cross.calibration < 0.001
    assert t_cross.temperature == pytest.approx(1.0, abs=0.1)


def test_decomposition_variants_weights_and_errors():
    y, p = _kinked(n=400, seed=6)
    w = np.random.default_rng(6).integers(0, 3, y.size)
    a = calibration_refinement_decomposition(
        y, p, recalibration="isotonic", sample_weight=w
    )
    b = calibration_refinement_decomposition(
        np.repeat(y, w), np.repeat(p, w), recalibration="isotonic"
    )
    assert a.calibration == pytest.approx(b.calibration, rel=1e-10)
    y3 = np.arange(30) % 3
    p3 = np.full((30, 3), 1 / 3)
    with pytest.raises(ValueError, match="recalibration='temperature'"):
        calibration_refinement_decomposition(y3, p3, recalibration="isotonic")
    res = calibration_refinement_decomposition(y3, p3, cv=3)
    assert res.calibration == pytest.approx(0.0, abs=1e-9)


# ------------------------------- item 9: classwise rms and discrete bins
def slow_classwise(y, proba, *, rms, debias=False):
    """Per class: one bin per distinct value, L2 gap; mean or rms of classes."""
    per_class = []
    for k in range(proba.shape[1]):
        col, hit = proba[:, k], (y == k).astype(float)
        d = 0.0
        for v in np.unique(col):
            sel = col == v
            acc, nb = hit[sel].mean(), sel.sum()
            sq = (acc - col[sel].mean()) ** 2
            if debias:
                sq = sq - acc * (1 - acc) / (nb - 1) if nb >= 2 else 0.0
            d += nb / y.size * sq
        per_class.append(d)
    d = np.array(per_class)
    if rms:
        m = d.mean()
        return np.sign(m) * np.sqrt(abs(m))
    return np.mean(np.sign(d) * np.sqrt(np.abs(d)))


def _prototypes(n=3000, k=4, m=25, seed=0):
    """Rows drawn from m fixed probability vectors: at most m values a column."""
    rng = np.random.default_rng(seed)
    proto = rng.dirichlet(np.ones(k), m)
    proba = proto[rng.integers(0, m, n)]
    sharp = proba**1.5 / (proba**1.5).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(sharp, axis=1)).sum(axis=1)
    return np.minimum(y, k - 1), proba


@pytest.mark.parametrize("debias", [False, True])
def test_discrete_classwise_matches_slow_loop(debias):
    y, proba = _prototypes()
    for rms in (False, True):
        got = classwise_calibration_error(
            y,
            proba,
            strategy="discrete",
            norm="l2",
            debias=debias,
            average="rms" if rms else "mean",
        )
        assert got == pytest.approx(slow_classwise(y, proba, rms=rms, debias=debias))


@pytest.mark.parametrize("debias", [False, True])
def test_marginal_l2_matches_uncertainty_calibration(debias):
    uc = pytest.importorskip("calibration")
    y, proba = _prototypes(seed=1)
    ref = uc.get_calibration_error(proba, y, p=2, debias=debias, mode="marginal")
    got = classwise_calibration_error(
        y, proba, strategy="discrete", norm="l2", debias=debias, average="rms"
    )
    # uncertainty-calibration clips each class's debiased estimate at 0; no
    # class is below 0 here, so the two agree.
    assert got == pytest.approx(ref, rel=1e-10)


def test_discrete_bins_evaluate_histogram_binning_exactly(shared_loader):
    uc = pytest.importorskip("calibration")
    probs, labels = shared_loader("pycalib/kitti__XGBoost.npz")
    half = labels.size // 2
    cal = HistogramBinningCalibrator(n_bins=20).fit(probs[:half], labels[:half])
    q = cal.predict_proba(probs[half:])[:, 1]
    y = labels[half:]
    got = expected_calibration_error(
        y, q, strategy="discrete", kind="classwise", norm="l2"
    )
    assert got == pytest.approx(uc.get_calibration_error(q, y, p=2, debias=False))
    curve = reliability_curve(y, q, strategy="discrete", kind="classwise")
    distinct = np.unique(q)
    assert curve.nonempty.sum() == distinct.size
    np.testing.assert_array_equal(curve.mean_confidence[curve.nonempty], distinct)


def test_discrete_edges_and_the_cap():
    y = np.array([0, 1, 1, 0, 1, 0])
    p = np.array([0.0, 0.3, 0.3, 1.0, 1.0, 0.3])  # values on the ends
    curve = reliability_curve(y, p, strategy="discrete", kind="classwise")
    np.testing.assert_array_equal(curve.counts, [1, 3, 2])
    np.testing.assert_allclose(curve.accuracy, [0, 2 / 3, 0.5])
    cont = np.random.default_rng(0).uniform(size=5000)
    yc = (cont > 0.5).astype(int)
    with pytest.raises(ValueError, match="strategy='uniform'"):
        expected_calibration_error(yc, cont, strategy="discrete")


def test_rms_average_rules():
    y, proba = _prototypes(seed=2)
    per_class = [
        expected_calibration_error(
            (y == k).astype(int), proba[:, k], kind="classwise", norm="l1"
        )
        for k in range(proba.shape[1])
    ]
    got = classwise_calibration_error(y, proba, average="rms")
    assert got == pytest.approx(np.sqrt(np.mean(np.square(per_class))))
    assert classwise_calibration_error(y, proba) == pytest.approx(np.mean(per_class))
    with pytest.raises(ValueError, match="kind='classwise'"):
        expected_calibration_error(y, proba, average="rms")


def test_discrete_refuses_dask():
    da = pytest.importorskip("dask.array")
    y, proba = _prototypes(n=200)
    with pytest.raises(TypeError, match="strategy='discrete'"):
        expected_calibration_error(
            da.from_array(y), da.from_array(proba), strategy="discrete"
        )
