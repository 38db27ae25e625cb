"""Histogram binning and isotonic calibration against hand computations and
scikit-learn's IsotonicRegression."""

import numpy as np
import pytest
from _data import multiclass_logits
from sklearn.isotonic import IsotonicRegression

from skcalib import HistogramBinningCalibrator, IsotonicCalibrator


def _slow_binning(p, y, n_bins, w=None):
    """Per-bin weighted means by an explicit loop over bins and samples."""
    w = np.ones_like(p) if w is None else w
    edges = [j / n_bins for j in range(n_bins + 1)]
    out = []
    for j in range(n_bins):
        lo, hi = edges[j], edges[j + 1]
        members = [
            i for i in range(len(p)) if (lo < p[i] <= hi) or (j == 0 and p[i] == 0.0)
        ]
        tot = sum(w[i] for i in members)
        out.append(
            sum(w[i] * y[i] for i in members) / tot if tot > 0 else (lo + hi) / 2
        )
    return np.array(out)


def test_uniform_binning_equals_slow_reference_with_weights():
    rng = np.random.default_rng(0)
    p = rng.beta(2, 2, 700)
    y = (rng.uniform(size=700) < p**2).astype(int)
    w = rng.uniform(0.1, 2, 700)
    cal = HistogramBinningCalibrator(strategy="uniform", n_bins=12, smoothing=0).fit(
        p, y, sample_weight=w
    )
    expected = np.clip(_slow_binning(p, y, 12, w), 1e-12, 1 - 1e-12)
    np.testing.assert_allclose(cal.bin_proba_[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cal.bin_edges_[0], np.linspace(0, 1, 13))


def test_values_on_edges_go_to_the_lower_bin():
    # float32 random-forest-like probabilities k/10 sit exactly on the edges
    p = np.array([0.1, 0.2, 0.3, 0.3, 0.5, 0.7, 0.9, 1.0], dtype=np.float32)
    y = np.array([0, 0, 1, 1, 0, 1, 1, 1])
    cal = HistogramBinningCalibrator(strategy="uniform", n_bins=10, smoothing=0).fit(
        p, y
    )
    counts = cal.bin_counts_[0]
    # 0.1 -> bin 0 ([0, .1]), 0.2 -> bin 1, 0.3 -> bin 2, 0.5 -> 4, 0.7 -> 6, ...
    np.testing.assert_array_equal(np.flatnonzero(counts), [0, 1, 2, 4, 6, 8, 9])
    assert counts[2] == 2


def test_empty_bins_keep_the_midpoint_and_smoothing_shrinks():
    p = np.array([0.05, 0.05, 0.95, 0.95])
    y = np.array([0, 1, 1, 1])
    cal = HistogramBinningCalibrator(strategy="uniform", n_bins=4, smoothing=0).fit(
        p, y
    )
    np.testing.assert_allclose(cal.bin_proba_[0], [0.5, 0.375, 0.625, 1.0])
    out = cal.predict_proba(np.array([0.4, 0.6]))[:, 1]
    np.testing.assert_allclose(out, [0.375, 0.625])
    assert np.isfinite(cal.predict_proba(np.linspace(0, 1, 50))).all()
    smooth = HistogramBinningCalibrator(
        strategy="uniform", n_bins=4, smoothing=2.0
    ).fit(p, y)
    # bin 3: (2 positives + 2 * mean score 0.95) / (2 + 2)
    assert smooth.bin_proba_[0][3] == pytest.approx((2 + 2 * 0.95) / 4)


def test_quantile_bins_merge_ties_and_collapse_for_constant_scores():
    p = np.repeat([0.2, 0.5, 0.8], [50, 30, 20])
    y = np.tile([0, 1], 50)
    cal = HistogramBinningCalibrator(n_bins=10, smoothing=0, strategy="quantile").fit(
        p, y
    )
    edges = cal.bin_edges_[0]
    assert np.all(np.diff(edges) > 0) and len(edges) < 11
    np.testing.assert_allclose(edges, [0.0, 0.2, 0.5, 1.0])
    const = HistogramBinningCalibrator(n_bins=10, smoothing=0, strategy="quantile").fit(
        np.full(20, 0.3), np.arange(20) % 2
    )
    np.testing.assert_allclose(const.bin_edges_[0], [0.0, 1.0])
    np.testing.assert_allclose(const.predict_proba(np.array([0.9]))[:, 1], 0.5)


def test_binning_on_random_forest_probabilities(shared_loader):
    probs, labels = shared_loader("pycalib/kitti__random_forest.npz")
    cal = HistogramBinningCalibrator(strategy="uniform", n_bins=10, smoothing=0).fit(
        probs, labels
    )
    p1 = probs[:, 1]
    # by hand: float32 edges, right-closed
    edges32 = np.linspace(0, 1, 11).astype(np.float32)
    ids = np.searchsorted(edges32[1:-1], p1, side="left")
    expected = np.array([labels[ids == j].mean() for j in range(10)])
    np.testing.assert_allclose(cal.bin_proba_[0], expected, rtol=1e-12)


def test_isotonic_equals_isotonic_regression_on_log_odds():
    rng = np.random.default_rng(0)
    s = rng.normal(scale=3, size=1000)
    y = (rng.uniform(size=1000) < 1 / (1 + np.exp(-s / 2))).astype(int)
    w = rng.uniform(0.5, 2, 1000)
    cal = IsotonicCalibrator(score_type="logit", method="pav")
    cal.fit(s, y, sample_weight=w)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(
        s, y, sample_weight=w
    )
    grid = np.linspace(-12, 12, 301)
    expected = np.clip(ref.predict(grid), 1e-12, 1 - 1e-12)
    np.testing.assert_allclose(cal.predict_proba(grid)[:, 1], expected, rtol=1e-10)


def test_isotonic_on_probabilities_matches_at_fitted_points(shared_loader):
    probs, labels = shared_loader("splinecalib/calibset_mozilla4_1046_cb1.npz")
    cal = IsotonicCalibrator(method="pav").fit(probs, labels)
    p1 = probs[:, 1].astype(np.float64)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p1, labels)
    np.testing.assert_allclose(
        cal.predict_proba(probs)[:, 1],
        np.clip(ref.predict(p1), 1e-12, 1 - 1e-12),
        atol=1e-6,
    )
    out = cal.predict_proba(probs)
    assert out.min() > 0  # log-loss stays finite


def test_isotonic_keeps_order_of_extreme_logits():
    s = np.array([-1e4, -50.0, 40.0, 45.0, 1e4, 1e4 + 1])
    y = np.array([0, 0, 1, 0, 1, 1])
    cal = IsotonicCalibrator(score_type="logit").fit(s, y)
    p = cal.predict_proba(s)[:, 1]
    assert np.all(np.diff(p) >= 0)
    assert p[0] == pytest.approx(1e-12) and p[-1] == pytest.approx(1 - 1e-12)


@pytest.mark.parametrize("cls", [HistogramBinningCalibrator, IsotonicCalibrator])
def test_top_label_calibrates_the_confidence_per_predicted_class(cls):
    n, k = 3000, 4
    logits, y = multiclass_logits(n, k, scale=3, seed=0)
    cal = cls(multi_class="top_label").fit(logits, y)
    p = cal.predict_proba(logits)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    top = np.argmax(logits, axis=1)
    conf = p[np.arange(n), top]
    # the map of class 1 is a binary calibrator of the confidence of the rows
    # predicted as class 1 against "prediction correct"
    mask = top == 1
    ref = cls().fit(
        np.exp(logits[mask, 1] - np.logaddexp.reduce(logits[mask], axis=1)),
        (y[mask] == 1).astype(int),
    )
    raw = np.exp(logits[mask, 1] - np.logaddexp.reduce(logits[mask], axis=1))
    # a confidence below 1/K is raised to 1/K: the predicted class is kept
    expected = np.maximum(ref.predict_proba(raw)[:, 1], 1 / k)
    np.testing.assert_allclose(conf[mask], expected, atol=1e-9)
    np.testing.assert_array_equal(np.argmax(p, axis=1), top)
