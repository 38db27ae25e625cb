"""Issue 31, item 3: ``n_bins="auto"`` never gives fewer bins than the data
support. ``floor(n / 200)`` alone gave one bin below 400 calibration rows, so
the default ``HistogramBinningCalibrator`` was a constant (100 separable rows:
0.5 for every input, ROC-AUC 0.5)."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.metrics import roc_auc_score

from skcalib import HistogramBinningCalibrator
from skcalib.calibration._binning import AUTO_MIN_BINS, auto_n_bins


def _rule(n, d):
    """The documented rule, written out: floor(n / 200) from n = 1000 on,
    else min(5, d) (d distinct scores), at least 1."""
    if n >= 1000:
        return n // 200
    return max(1, n // 200, min(5, d))


# n -> bins, by hand: n // 200 is 0 below 200, 1 below 400, 4 below 1000
EDGE_SIZES = {1: 1, 2: 2, 10: 5, 100: 5, 399: 5, 400: 5, 1000: 5, 10**5: 500}


def test_the_minimum_is_five():
    assert AUTO_MIN_BINS == 5


@pytest.mark.parametrize("n, expected", EDGE_SIZES.items())
def test_auto_bins_at_edge_sizes(n, expected):
    assert expected == _rule(n, n)
    assert auto_n_bins(n, n_distinct=n) == expected
    if n < 2:  # one row holds one class: nothing to fit
        return
    p = (np.arange(n) + 0.5) / n  # n distinct scores
    y = np.arange(n) % 2
    cal = HistogramBinningCalibrator().fit(p, y)
    assert cal.n_bins_ == [expected]


@pytest.mark.parametrize(
    "n, d, expected",
    [(100, 1, 1), (100, 2, 2), (300, 3, 3), (399, 4, 4), (399, 7, 5), (1000, 3, 5)],
)
def test_auto_bins_with_few_distinct_scores(n, d, expected):
    assert expected == _rule(n, d)
    values = np.linspace(0.1, 0.9, d)
    p = values[np.arange(n) % d]
    y = (np.arange(n) // d) % 2
    assert HistogramBinningCalibrator().fit(p, y).n_bins_ == [expected]


def test_weights_count_rows_and_zero_weights_add_no_distinct_score():
    p = (np.arange(50) + 0.5) / 50
    y = np.arange(50) % 2
    # 50 rows of weight 40: 2000 samples, 10 bins (n // 200)
    cal = HistogramBinningCalibrator().fit(p, y, sample_weight=np.full(50, 40.0))
    assert cal.n_bins_ == [10]
    # 3 scores carry weight: min(5, 3) bins
    w = np.zeros(50)
    w[:3] = 1.0
    cal = HistogramBinningCalibrator().fit(p, y, sample_weight=w)
    assert cal.n_bins_ == [3]


def test_top_label_maps_count_their_own_rows():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, 60)
    top = HistogramBinningCalibrator(multi_class="top_label").fit(logits, y)
    counts = np.bincount(np.argmax(logits, axis=1), minlength=3)
    assert min(counts) >= 5  # every class predicted by 5 rows or more
    assert top.n_bins_ == [5, 5, 5]


def _separable(n=100, seed=0):
    rng = np.random.default_rng(seed)
    half = n // 2
    p = np.concatenate([rng.uniform(0.05, 0.45, half), rng.uniform(0.55, 0.95, half)])
    y = np.repeat([0, 1], half)
    return p, y


def test_100_separable_rows_keep_their_ranking():
    p, y = _separable()
    assert roc_auc_score(y, p) == 1.0
    cal = HistogramBinningCalibrator().fit(p, y)
    out = cal.predict_proba(p)[:, 1]
    # before: one bin, 0.5 for every row (ROC-AUC 0.5)
    assert np.unique(out).size > 1
    assert roc_auc_score(y, out) == roc_auc_score(y, p) == 1.0
    # in two classes, the median edge of the hybrid bins lies between them
    assert cal.n_bins_ == [5]
    assert out[y == 1].min() > 0.5 > out[y == 0].max()


def test_chunks_and_one_fit_resolve_the_same_small_bins():
    p, y = _separable()
    chunks = [(p[a:b], y[a:b]) for a, b in ((0, 30), (30, 70), (70, 100))]
    for strategy in ("hybrid", "uniform"):
        got = HistogramBinningCalibrator(strategy=strategy).fit_chunks(chunks)
        ref = HistogramBinningCalibrator(strategy=strategy).fit(p, y)
        assert got.n_bins_ == ref.n_bins_ == [5]
        np.testing.assert_array_equal(got.bin_edges_[0], ref.bin_edges_[0])
    few = np.where(p < 0.5, 0.2, 0.8)
    got = HistogramBinningCalibrator().fit_chunks(
        [(few[:40], y[:40]), (few[40:], y[40:])]
    )
    assert got.n_bins_ == [2]


def test_array_api_path_resolves_the_same_small_bins():
    from _xp import dispatch_reason, import_namespace

    if dispatch_reason():
        pytest.skip(dispatch_reason())
    xp = import_namespace("array_api_strict")
    p, y = _separable()
    few = np.where(p < 0.5, 0.2, 0.8)
    w = np.ones(100)
    w[50:] = 0.0
    w[0] = 0.0
    for score, weight, expected in ((p, None, 5), (few, None, 2), (p, w, 5)):
        ref = HistogramBinningCalibrator().fit(score, y, sample_weight=weight)
        xw = None if weight is None else xp.asarray(weight)
        with config_context(array_api_dispatch=True):
            est = HistogramBinningCalibrator().fit(
                xp.asarray(score), xp.asarray(y), sample_weight=xw
            )
        assert est.n_bins_ == ref.n_bins_ == [expected]
    # 49 rows of weight 1 carry one score below 0.5: min(5, 1) = 1 bin
    w_one = np.zeros(100)
    w_one[1:50] = 1.0
    with config_context(array_api_dispatch=True):
        est = HistogramBinningCalibrator().fit(
            xp.asarray(few), xp.asarray(y), sample_weight=xp.asarray(w_one)
        )
    assert est.n_bins_ == [1]
