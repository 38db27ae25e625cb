"""Regression tests of issue 14 (binning and warnings): quantile edges at 0,
weight 0 == a dropped row, n_bins validation, warnings of inner fits said
once at the user's call, top-label shares of underflowing probabilities."""

import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from skcalib import (
    CalibratedClassifier,
    HistogramBinningCalibrator,
    PlattCalibrator,
    ScalingBinningCalibrator,
)
from skcalib._core.binning import (
    MIN_BIN_CAP,
    assign_bins,
    bin_edges,
)
from skcalib._core.quantile_search import QuantileEdgeSearch
from skcalib.calibration import AutoCalibrator
from skcalib.metrics import classwise_calibration_error, expected_calibration_error


def _slow_bins(scores, edges):
    """Right-closed bins (lo, hi], the first one [0, e1], by a Python loop."""
    out = []
    for s in scores:
        j = 0
        while j < len(edges) - 2 and s > edges[j + 1]:
            j += 1
        out.append(j)
    return np.array(out)


def _search_edges(scores, n_bins, weights=None):
    """The edges of QuantileEdgeSearch in one chunk."""
    search = QuantileEdgeSearch(1, n_bins, scores.dtype, weighted=weights is not None)
    while not search.done:
        search.advance(search.digit_counts([(scores, weights)]))
    return search.edges()[0]


# ------------------------------------------------------------ edges at 0
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scores_zero_and_one_get_two_bins(dtype):
    s = np.array([0.0] * 6 + [1.0] * 4, dtype=dtype)
    edges = bin_edges(s, 10, "quantile")
    # before: [0, 1] (one bin holding both masses)
    np.testing.assert_array_equal(edges, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(assign_bins(s, edges), [0] * 6 + [1] * 4)
    np.testing.assert_array_equal(_search_edges(s, 10), edges)


@pytest.mark.parametrize("n_bins", [3, 4, 10, 15])
def test_fewer_distinct_scores_than_bins_each_gets_a_bin(n_bins):
    values = np.array([0.0, 0.3, 0.7, 1.0])
    s = np.repeat(values, [5, 5, 5, 5])
    edges = bin_edges(s, n_bins, "quantile")
    ids = assign_bins(values, edges)
    np.testing.assert_array_equal(ids, _slow_bins(values, edges))
    if n_bins >= 4:  # as many bins as distinct values: one value per bin
        np.testing.assert_array_equal(ids, [0, 1, 2, 3])
    np.testing.assert_array_equal(_search_edges(s, n_bins), edges)


def test_scores_on_edges_follow_the_right_closed_rule():
    rng = np.random.default_rng(0)
    s = np.round(rng.random(300), 1)  # random-forest-like ties, 0 and 1 included
    for strategy in ("uniform", "quantile"):
        edges = bin_edges(s, 7, strategy)
        probe = np.concatenate([edges, s])
        np.testing.assert_array_equal(
            assign_bins(probe, edges), _slow_bins(probe, edges)
        )


def test_classwise_error_of_an_always_wrong_model_is_one():
    y = np.array([0, 1] * 50)
    wrong = (1 - y).astype(float)  # scores in {0, 1}, always wrong
    for strategy in ("uniform", "quantile"):
        # before: quantile 0.11 (the masses at 0 and 1 shared a bin)
        assert classwise_calibration_error(
            y, wrong, strategy=strategy
        ) == pytest.approx(1.0)
        assert expected_calibration_error(y, wrong, strategy=strategy) == pytest.approx(
            1.0
        )


def test_histogram_quantile_separates_zero_and_one():
    y = np.array([0, 1] * 50)
    cal = HistogramBinningCalibrator(n_bins=15, strategy="quantile", smoothing=0)
    cal.fit(y.astype(float), y)
    p = cal.predict_proba(np.array([0.0, 1.0]))[:, 1]
    # before: both 0.5
    np.testing.assert_allclose(p, [1e-12, 1 - 1e-12])


def test_saturated_logits_quantile_as_good_as_uniform():
    rng = np.random.default_rng(0)
    z = rng.normal(size=4000) * 3
    y = (rng.random(z.size) < expit(z)).astype(int)
    X = z * 1e4  # probabilities exactly 0 or 1
    acc = {}
    for strategy in ("uniform", "quantile"):
        cal = HistogramBinningCalibrator(strategy=strategy).fit(X[:2000], y[:2000])
        acc[strategy] = np.mean(cal.predict(X[2000:]) == y[2000:])
    # before: quantile 0.51, uniform 0.84
    assert acc["quantile"] == pytest.approx(acc["uniform"], abs=0.01)
    assert acc["quantile"] > 0.8


# ------------------------------------------------------ weight 0 == dropped
def test_issue_example_weight_zero_is_a_dropped_row():
    p = np.array([0.1, 0.2, 0.3, 0.9])
    y = np.array([0, 1, 1, 0])
    w = np.array([1.0, 1.0, 1.0, 0.0])
    a = HistogramBinningCalibrator(n_bins=4, smoothing=0, strategy="quantile")
    a.fit(p, y, sample_weight=w)
    b = HistogramBinningCalibrator(n_bins=4, smoothing=0, strategy="quantile").fit(
        p[:3], y[:3]
    )
    np.testing.assert_array_equal(a.bin_edges_[0], [0.0, 0.1, 0.2, 1.0])
    np.testing.assert_array_equal(a.bin_edges_[0], b.bin_edges_[0])
    # before: 0.65 (an edge at 0.3 from the weight-0 row at 0.9)
    assert a.predict_proba([0.5])[0, 1] == pytest.approx(1.0)
    np.testing.assert_array_equal(a.predict_proba(p), b.predict_proba(p))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weight_zero_and_two_in_every_binning_path(strategy):
    rng = np.random.default_rng(1)
    n = 400
    p = np.round(rng.random(n), 2)
    p[:20] = 0.0
    p[20:40] = 1.0
    y = (rng.random(n) < p).astype(int)
    w = rng.integers(0, 3, n).astype(float)
    w[p == p.max()] = 0.0  # the largest scores weigh nothing
    rep = w.astype(int)
    pr, yr = np.repeat(p, rep), np.repeat(y, rep)
    np.testing.assert_array_equal(
        bin_edges(p, 10, strategy, w), bin_edges(pr, 10, strategy)
    )
    if strategy == "quantile":
        np.testing.assert_array_equal(
            _search_edges(p, 10, w), bin_edges(pr, 10, strategy)
        )
    a = HistogramBinningCalibrator(n_bins=10, smoothing=0, strategy=strategy)
    b = HistogramBinningCalibrator(n_bins=10, smoothing=0, strategy=strategy)
    a.fit(p, y, sample_weight=w)
    b.fit(pr, yr)
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid))
    for metric in (expected_calibration_error, classwise_calibration_error):
        assert metric(y, p, strategy=strategy, sample_weight=w) == pytest.approx(
            metric(yr, pr, strategy=strategy), rel=1e-12
        )


def test_weights_of_1e308_do_not_overflow():
    rng = np.random.default_rng(2)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    for cal in (
        # fixed bins, no prior: only ratios of weights matter (the default
        # counts weights, see test_quality_binning.py)
        HistogramBinningCalibrator(n_bins=15, strategy="quantile", smoothing=0),
        # the temperature scaler: the Platt scaler gets the weights as given,
        # as PlattCalibrator does (its overflow is fit_platt's)
        ScalingBinningCalibrator(scaler="temperature", random_state=0),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            big = cal.fit(p, y, sample_weight=np.full(300, 1e308)).predict_proba(p)
        ones = cal.fit(p, y).predict_proba(p)
        assert np.isfinite(big).all()
        np.testing.assert_allclose(big, ones, rtol=1e-9)


# ------------------------------------------------------------------ n_bins
@pytest.mark.parametrize("cls", [HistogramBinningCalibrator, ScalingBinningCalibrator])
@pytest.mark.parametrize("n_bins", [True, False, 10**12, 0, 2.0])
def test_n_bins_bool_and_huge_are_errors(cls, n_bins):
    p = np.array([0.1, 0.4, 0.6, 0.9] * 5)
    y = np.array([0, 1, 0, 1] * 5)
    with pytest.raises(ValueError, match="n_bins"):
        cls(n_bins=n_bins).fit(p, y)


def test_bin_edges_names_the_bound():
    with pytest.raises(ValueError, match=f"at most max\\({MIN_BIN_CAP}\\) = "):
        bin_edges(None, 10**12)
    scores = np.linspace(0, 1, 100_000)
    with pytest.raises(ValueError, match="n_samples=100000"):
        bin_edges(scores, 100_001, "quantile")
    assert bin_edges(None, MIN_BIN_CAP).size == MIN_BIN_CAP + 1
    with pytest.raises(ValueError, match="got True"):
        bin_edges(None, True)
    assert bin_edges(None, np.int64(2)).tolist() == [0.0, 0.5, 1.0]


# ------------------------------------------------------ inner-fit warnings
def _warnings_of(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        func()
    return caught


@pytest.mark.parametrize("ensemble", [True, False])
def test_cross_fitting_warns_once_at_the_users_call(ensemble):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    est = CalibratedClassifier(
        LogisticRegression(max_iter=1), PlattCalibrator(), cv=5, ensemble=ensemble
    )
    caught = _warnings_of(lambda: est.fit(X, y))
    # before: 5 (ensemble) or 6 warnings, each at sklearn/linear_model
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1
    assert conv[0].filename == __file__
    expected = "in 5 of 5 folds" + ("" if ensemble else " and the classifier's fit")
    assert expected in str(conv[0].message)
    with pytest.warns(ConvergenceWarning, match="in 5 of 5 folds") as record:
        est.fit(X, y)
    assert record[0].filename == __file__


class _NoisyPlatt(PlattCalibrator):
    """Platt scaling that warns at every fit (with a fold-dependent number)."""

    def _fit(self, scores, y, sample_weight):
        warnings.warn(f"noisy fit on {y.size} rows", UserWarning, stacklevel=2)
        return super()._fit(scores, y, sample_weight)


def test_auto_calibrator_warns_once_per_distinct_warning():
    rng = np.random.default_rng(0)
    z = rng.normal(size=300)
    y = (rng.random(300) < expit(z)).astype(int)
    auto = AutoCalibrator([_NoisyPlatt()], cv=4, n_std_errors=0)
    caught = _warnings_of(lambda: auto.fit(3 * z, y))  # Platt beats identity
    noisy = [w for w in caught if "noisy fit" in str(w.message)]
    # before: 5 warnings (4 splits and the refit) at sklearn/base.py
    assert [w.filename for w in noisy] == [__file__, __file__]
    assert "in 4 of 4 splits" in str(noisy[0].message)
    assert "refitting the chosen candidate" in str(noisy[1].message)


# ------------------------------------------------- top-label shares
def test_top_label_shares_follow_underflowing_probabilities():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(600, 3)) * 2
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
    for cal in (
        HistogramBinningCalibrator(multi_class="top_label"),
        ScalingBinningCalibrator(multi_class="top_label", random_state=0),
    ):
        cal.fit(logits, y)
        row = np.array([[1e4, 0.0, -1e4]])
        p = cal.predict_proba(row)[0]
        # before: the two others shared 1 - c evenly (both probabilities
        # underflow to 0); their true ratio is exp(1e4)
        assert p[1] == pytest.approx(1.0 - p[0], rel=1e-12)
        assert p[2] == 0.0
        np.testing.assert_allclose(
            cal.predict_proba(logits).sum(axis=1), 1.0, rtol=1e-12
        )
