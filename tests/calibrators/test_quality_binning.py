"""Issue 16, items 4-6: top-label keeps the predicted class, scaling-binning
as Kumar et al., histogram bins that follow the data."""

import warnings

import numpy as np
import pytest
from _discovery import estimator_classes
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.utils._param_validation import StrOptions

from skcalib import HistogramBinningCalibrator, ScalingBinningCalibrator
from skcalib.calibration._one_vs_rest import share_rest
from skcalib.metrics import negative_log_likelihood, nll_scorer


def _top_label_calibrators():
    """Every public calibrator with a parameter that accepts "top_label"."""
    found = []
    for cls in estimator_classes():
        for param, options in getattr(cls, "_parameter_constraints", {}).items():
            if any(
                isinstance(o, StrOptions) and "top_label" in o.options for o in options
            ):
                found.append(pytest.param(cls, param, id=cls.__name__))
    return found


TOP_LABEL = _top_label_calibrators()


def test_discovery_finds_the_top_label_calibrators():
    names = {p.id for p in TOP_LABEL}
    assert {
        "HistogramBinningCalibrator",
        "IsotonicCalibrator",
        "ScalingBinningCalibrator",
    } <= names


# ------------------------------------------------- item 4: argmax kept
def _reference_shares(log_proba, top, c):
    """One row: water-filling by bisection on lambda (slow, obvious)."""
    k = log_proba.size
    c = max(c, 1.0 / k)
    q = np.exp(log_proba - log_proba.max())
    q[top] = 0.0
    lo, hi = 0.0, 1.0
    while np.minimum(c, hi * q).sum() < 1.0 - c:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.minimum(c, mid * q).sum() < 1.0 - c else (lo, mid)
    out = np.minimum(c, hi * q)
    out[top] = c
    return out


@pytest.mark.parametrize("k", [2, 3, 10, 100])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shares_are_capped_water_filling_and_keep_argmax(k, dtype):
    rng = np.random.default_rng(k)
    n = 200
    logits = rng.normal(size=(n, k)) * rng.uniform(0.2, 4, (n, 1))
    logits[: n // 4, 1] = logits[: n // 4, 0]  # ties: argmax is the first one
    log_proba = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    top = np.argmax(log_proba, axis=1)
    c = rng.uniform(0, 1, n)
    p = share_rest(log_proba, top, c, dtype)
    assert p.dtype == dtype
    np.testing.assert_array_equal(np.argmax(p, axis=1), top)
    atol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=atol)
    # c is kept (a binned confidence stays a bin value) unless below 1/K
    expected_c = np.maximum(c, 1.0 / k).astype(dtype)
    np.testing.assert_allclose(p[np.arange(n), top], expected_c, rtol=4 * atol)
    if dtype == np.float64:
        for i in range(0, n, 7):
            ref = _reference_shares(log_proba[i], top[i], c[i])
            np.testing.assert_allclose(p[i], ref, atol=1e-9)


def test_shares_below_the_cap_are_unchanged_proportions():
    log_proba = np.log([[0.5, 0.3, 0.2]])
    p = share_rest(log_proba, np.array([0]), np.array([0.6]))
    np.testing.assert_allclose(p, [[0.6, 0.24, 0.16]], rtol=1e-12)
    # c = 0.35: the proportional share of class 1 (0.39) is capped at 0.35
    p = share_rest(log_proba, np.array([0]), np.array([0.35]))
    np.testing.assert_allclose(p, [[0.35, 0.35, 0.30]], rtol=1e-12)
    assert np.argmax(p) == 0


@pytest.mark.parametrize("cls, param", TOP_LABEL)
def test_top_label_keeps_the_predicted_class_on_cifar100(shared_loader, cls, param):
    # before: isotonic changed the argmax of 15.8% of the test rows of this
    # split (error 24.2% -> 26.7%), histogram binning 11.3%, Platt 10.6%,
    # beta 14.5%, Venn-ABERS 14.1%, scaling-binning 1.8%
    probs, labels = shared_loader("netcal/densenet-bc-100-cifar-100.npz")
    probs = probs.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    idx = np.arange(labels.size)
    i_cal, i_test = train_test_split(
        idx, test_size=0.5, stratify=labels, random_state=0
    )
    cal = cls(**{param: "top_label"}, score_type="probability")
    if "random_state" in cal.get_params():
        cal.set_params(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal.fit(probs[i_cal], labels[i_cal])
    p = cal.predict_proba(probs[i_test])
    np.testing.assert_array_equal(np.argmax(p, axis=1), np.argmax(probs[i_test], 1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


# ------------------------------------------------ item 5: scaling-binning
def _multiclass(n=4000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = 2.5 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y])
    return logits, y


def test_top_label_default_is_platt_on_the_confidence():
    logits, y = _multiclass()
    cal = ScalingBinningCalibrator(multi_class="top_label", split=None).fit(logits, y)
    assert cal.scaler_ == "platt" and cal.coef_.shape == (1,)
    p = cal.predict_proba(logits)
    conf = p.max(axis=1)
    assert np.unique(conf).size <= cal.n_bins
    np.testing.assert_array_equal(np.argmax(p, axis=1), np.argmax(logits, axis=1))


def test_marginal_proba_takes_n_bins_values_per_class_unrenormalised():
    logits, y = _multiclass()
    cal = ScalingBinningCalibrator(n_bins=7, random_state=0).fit(logits, y)
    m = cal.predict_marginal_proba(logits)
    for k in range(4):
        assert np.all(np.isin(m[:, k], cal.bin_proba_[k]))
        assert np.unique(m[:, k]).size <= 7
    np.testing.assert_allclose(
        cal.predict_proba(logits), m / m.sum(axis=1, keepdims=True), rtol=1e-12
    )
    assert not np.allclose(m.sum(axis=1), 1.0)
    top = ScalingBinningCalibrator(multi_class="top_label").fit(logits, y)
    with pytest.raises(ValueError, match="multi_class='ovr'"):
        top.predict_marginal_proba(logits)


def test_no_split_matches_uncertainty_calibration(shared_loader):
    uc = pytest.importorskip("calibration.calibrators")
    probs, labels = shared_loader("verified_calibration/cifar10_vgg16.npz")
    probs = probs.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    i_cal, i_test = train_test_split(
        np.arange(labels.size), test_size=0.5, stratify=labels, random_state=0
    )
    theirs = uc.PlattBinnerMarginalCalibrator(i_cal.size, 15)
    theirs.train_calibration(probs[i_cal], labels[i_cal])
    ref = theirs.calibrate(probs[i_test])
    ours = ScalingBinningCalibrator(n_bins=15, split=None, score_type="probability")
    m = ours.fit(probs[i_cal], labels[i_cal]).predict_marginal_proba(probs[i_test])
    # the same algorithm (Platt, then 15 equal-mass bins of its outputs, each
    # the mean Platt output); Platt's smoothed targets and the quantile rule
    # of the edges differ, so the outputs agree to about 1e-3 on average
    assert np.abs(m - ref).mean() < 2e-3
    nll = negative_log_likelihood(labels[i_test], m / m.sum(1, keepdims=True))
    nll_ref = negative_log_likelihood(labels[i_test], ref / ref.sum(1, keepdims=True))
    assert nll == pytest.approx(nll_ref, rel=0.02)


# -------------------------------------------------- item 6: histogram bins
def test_auto_bins_follow_the_calibration_size():
    rng = np.random.default_rng(0)
    p = rng.random(5000)
    y = (rng.random(5000) < p).astype(int)
    cal = HistogramBinningCalibrator().fit(p, y)
    # hybrid edges: 13 equal-width and 12 equal-mass bins, edges merged
    assert cal.n_bins_ == [25] and 14 < cal.bin_edges_[0].size <= 26
    uniform = HistogramBinningCalibrator(strategy="uniform").fit(p, y)
    assert uniform.bin_edges_[0].size == 26
    # below 1000 samples, 5 bins (issue 31: one bin below 400 was a constant)
    assert HistogramBinningCalibrator().fit(p[:150], y[:150]).n_bins_ == [5]
    k = 3
    logits = rng.normal(size=(3000, k))
    yk = rng.integers(0, k, 3000)
    top = HistogramBinningCalibrator(multi_class="top_label").fit(logits, yk)
    counts = np.bincount(np.argmax(logits, axis=1), minlength=k)
    assert top.n_bins_ == [max(5, c // 200) for c in counts]


def test_prior_keeps_tiny_bins_sane_and_matches_the_formula():
    p = np.array([0.05, 0.06, 0.9, 0.91, 0.92, 0.93])
    y = np.array([0, 0, 1, 1, 1, 0])
    cal = HistogramBinningCalibrator(n_bins=2, smoothing=5.0).fit(p, y)
    mean0, mean1 = p[:2].mean(), p[2:].mean()
    expected = [(0 + 5 * mean0) / (2 + 5), (3 + 5 * mean1) / (4 + 5)]
    np.testing.assert_allclose(cal.bin_proba_[0], expected, rtol=1e-12)
    plain = HistogramBinningCalibrator(n_bins=2, smoothing=0).fit(p, y)
    assert plain.bin_proba_[0][0] == 1e-12  # NLL 27.6 on a positive there


def test_default_counts_weights_duplicate_zero_and_extreme_scales():
    rng = np.random.default_rng(1)
    p = rng.random(900)
    y = (rng.random(900) < p).astype(int)
    w = rng.integers(0, 3, 900).astype(float)
    rep = w.astype(int)
    a = HistogramBinningCalibrator().fit(p, y, sample_weight=w)
    b = HistogramBinningCalibrator().fit(np.repeat(p, rep), np.repeat(y, rep))
    assert a.n_bins_ == b.n_bins_ == [max(5, int(w.sum()) // 200)]
    grid = np.linspace(0, 1, 51)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        big = HistogramBinningCalibrator().fit(p, y, sample_weight=np.full(900, 1e308))
        assert np.isfinite(big.predict_proba(grid)).all()
    # fixed bins without a prior: the scale of the weights does not matter
    fixed = HistogramBinningCalibrator(n_bins=15, smoothing=0)
    one = fixed.fit(p, y, sample_weight=w).predict_proba(grid)
    tiny = fixed.fit(p, y, sample_weight=w * 2.0**-900).predict_proba(grid)
    np.testing.assert_array_equal(one, tiny)


def test_grid_search_over_int_and_auto_bins():
    rng = np.random.default_rng(2)
    p = rng.random(1200)
    y = (rng.random(1200) < p**2).astype(int)
    search = GridSearchCV(
        HistogramBinningCalibrator(),
        {"n_bins": [5, 10, "auto"], "smoothing": [0.0, 5.0]},
        scoring=nll_scorer,
        cv=3,
    ).fit(p, y)
    assert search.best_params_["n_bins"] in (5, 10, "auto")
    with pytest.raises(ValueError, match="n_bins"):
        HistogramBinningCalibrator(n_bins="sqrt").fit(p, y)


def test_auto_default_lowers_nll_on_cifar100(shared_loader):
    # before: 15 uniform bins, no prior: 2.838 on this split (uncalibrated
    # 1.241); netcal HistogramBinning(bins=15): 3.391; n/200 uniform bins
    # with the prior: 1.2875; the default hybrid edges: 1.1009
    probs, labels = shared_loader("netcal/densenet-bc-100-cifar-100.npz")
    probs = probs.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    i_cal, i_test = train_test_split(
        np.arange(labels.size), test_size=0.5, stratify=labels, random_state=0
    )
    cal = HistogramBinningCalibrator(score_type="probability")
    p = cal.fit(probs[i_cal], labels[i_cal]).predict_proba(probs[i_test])
    assert negative_log_likelihood(labels[i_test], p) == pytest.approx(1.1009, abs=2e-3)
    uniform = HistogramBinningCalibrator(strategy="uniform", score_type="probability")
    p = uniform.fit(probs[i_cal], labels[i_cal]).predict_proba(probs[i_test])
    assert negative_log_likelihood(labels[i_test], p) == pytest.approx(1.2875, abs=2e-3)
    old = HistogramBinningCalibrator(
        n_bins=15, smoothing=0, strategy="uniform", score_type="probability"
    )
    p = old.fit(probs[i_cal], labels[i_cal]).predict_proba(probs[i_test])
    assert negative_log_likelihood(labels[i_test], p) == pytest.approx(2.8379, abs=2e-3)
