"""Scaling-binning: by-hand computation, equal-mass bins, a known map, data."""

import pickle

import numpy as np
import pytest
from scipy.special import expit
from sklearn.utils._param_validation import InvalidParameterError

from skcalib import (
    HistogramBinningCalibrator,
    PlattCalibrator,
    ScalingBinningCalibrator,
    TemperatureCalibrator,
)
from skcalib.calibration._scaling_binning import _row_keys, split_weights
from skcalib.datasets import make_miscalibrated_scores
from skcalib.metrics import expected_calibration_error


def _binary_logits(n, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return scale * (2 * y - 1) + rng.normal(scale=scale, size=n), y


def _split_of(cal, X, y, w=None):
    """The fitted split, recomputed from the documented rule."""
    scores = cal._scores(*cal._raw_scores(X, reset=False), reset=False)
    seed = np.random.RandomState(cal.random_state).randint(np.iinfo(np.int32).max)
    return split_weights(_row_keys(scores, seed), y, w, cal.split)


def test_by_hand_on_small_data():
    # 20 samples per class and split=0.5: 10 + 10 per class, no shared row.
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    s = 2.0 * (2 * y - 1) + rng.normal(scale=2.0, size=40)
    cal = ScalingBinningCalibrator(n_bins=4, split=0.5, random_state=3).fit(s, y)
    assert cal.scaler_ == "platt"
    w1, w2 = _split_of(cal, s, y)
    assert set(np.unique(w1)) == {0.0, 1.0} and np.all(w1 + w2 == 1)
    assert w1[y == 0].sum() == 10 and w1[y == 1].sum() == 10
    # stage 1: Platt on the first part
    first, second = w1 == 1, w2 == 1
    platt = PlattCalibrator().fit(s[first], y[first])
    assert cal.coef_[0] == pytest.approx(platt.coef_[0], rel=1e-12)
    assert cal.intercept_[0] == pytest.approx(platt.intercept_[0], rel=1e-12)
    # stage 2: quartiles of the scaled second part, right-closed bins, and
    # each bin's mean of the *scaled scores* (not of the labels)
    g = expit(platt.coef_[0] * s[second] + platt.intercept_[0])
    q = np.sort(g)
    edges = np.r_[0.0, q[4], q[9], q[14], 1.0]  # inverted-CDF quartiles
    np.testing.assert_allclose(cal.bin_edges_[0], edges, rtol=1e-12)
    means, freqs = [], []
    for j in range(4):
        inside = (g > edges[j]) & (g <= edges[j + 1]) | ((j == 0) & (g == 0))
        assert inside.sum() == 5  # equal mass
        means.append(g[inside].mean())
        freqs.append(y[second][inside].mean())
    np.testing.assert_allclose(cal.bin_proba_[0], means, rtol=1e-12)
    np.testing.assert_allclose(cal.bin_counts_[0], 5.0)
    assert not np.allclose(cal.bin_proba_[0], freqs)
    # prediction: the scaled score's bin value
    test = np.array([-9.0, -1.0, 0.0, 0.5, 9.0])
    gt = expit(platt.coef_[0] * test + platt.intercept_[0])
    ids = np.searchsorted(edges[1:-1], gt, side="left")
    np.testing.assert_allclose(cal.predict_proba(test)[:, 1], np.array(means)[ids])


def test_split_is_stratified_and_shares_one_row_per_class():
    s, y = _binary_logits(1001, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
    cal = ScalingBinningCalibrator(split=0.3, random_state=0).fit(s, y, sample_weight=w)
    w1, w2 = _split_of(cal, s, y, w)
    np.testing.assert_allclose(w1 + w2, w)
    for c in (0, 1):
        assert w1[y == c].sum() == pytest.approx(0.3 * w[y == c].sum())
        shared = (w1[y == c] > 0) & (w2[y == c] > 0)
        assert shared.sum() <= 1


@pytest.mark.parametrize("n_bins", [5, 10, 15])
def test_bins_have_equal_mass(n_bins):
    s, y = _binary_logits(3000, seed=3)
    cal = ScalingBinningCalibrator(n_bins=n_bins, split=0.5, random_state=0).fit(s, y)
    counts = cal.bin_counts_[0]
    assert counts.size == n_bins and len(cal.bin_edges_[0]) == n_bins + 1
    assert counts.max() - counts.min() <= 2.0
    assert counts.sum() == pytest.approx(1500)
    # outputs take exactly n_bins values, in increasing order of the bins
    assert np.all(np.diff(cal.bin_proba_[0]) > 0)
    assert np.unique(cal.predict_proba(s)[:, 1]).size == n_bins


def test_deterministic_given_random_state():
    s, y = _binary_logits(800, seed=4)
    a = ScalingBinningCalibrator(split=0.5, random_state=0).fit(s, y)
    b = ScalingBinningCalibrator(split=0.5, random_state=0).fit(s, y)
    c = ScalingBinningCalibrator(split=0.5, random_state=1).fit(s, y)
    np.testing.assert_array_equal(a.predict_proba(s), b.predict_proba(s))
    np.testing.assert_array_equal(a.bin_edges_[0], b.bin_edges_[0])
    assert a.coef_[0] != c.coef_[0]  # another split
    rng = np.random.RandomState(5)
    d = ScalingBinningCalibrator(split=0.5, random_state=rng).fit(s, y)
    e = ScalingBinningCalibrator(split=0.5, random_state=rng).fit(s, y)
    # no split (the default): random_state is not used
    f = ScalingBinningCalibrator(random_state=0).fit(s, y)
    g = ScalingBinningCalibrator(random_state=1).fit(s, y)
    np.testing.assert_array_equal(f.predict_proba(s), g.predict_proba(s))
    assert d.coef_[0] != e.coef_[0]  # a RandomState instance is consumed


def _true_calibration_error(pred, true):
    """L2 calibration error against the known P(y=1|s), for a map taking few
    values: E[(pred - E[true | pred])^2]^(1/2)."""
    _, inv = np.unique(pred, return_inverse=True)
    cond = np.bincount(inv, weights=true) / np.bincount(inv)
    return float(np.sqrt(np.mean((pred - cond[inv]) ** 2)))


def test_calibration_error_on_a_known_map():
    # True P(y=1|s) = sigmoid(s / 3) (make_miscalibrated_scores): Platt is
    # well specified, so scaling-binning's only error is from the binning.
    ce_sb, ce_hb = [], []
    for seed in range(4):
        logits, y, _ = make_miscalibrated_scores(
            2000, 2, temperature=3.0, random_state=seed
        )
        lt, _, true = make_miscalibrated_scores(
            50000, 2, temperature=3.0, random_state=100 + seed
        )
        sb = ScalingBinningCalibrator(n_bins=10, random_state=seed).fit(logits, y)
        hb = HistogramBinningCalibrator(
            n_bins=10, smoothing=0, strategy="quantile"
        ).fit(logits, y)
        ce_sb.append(_true_calibration_error(sb.predict_proba(lt)[:, 1], true[:, 1]))
        ce_hb.append(_true_calibration_error(hb.predict_proba(lt)[:, 1], true[:, 1]))
    uncalibrated = np.sqrt(np.mean((expit(lt[:, 1] - lt[:, 0]) - true[:, 1]) ** 2))
    assert uncalibrated > 0.12
    assert np.mean(ce_sb) < 0.02
    # Kumar et al.: lower calibration error than label-frequency binning
    assert np.mean(ce_sb) < 0.8 * np.mean(ce_hb)


@pytest.mark.parametrize("scaler", ["platt", "temperature"])
@pytest.mark.parametrize("multi_class", ["ovr", "top_label"])
def test_multiclass_modes(multi_class, scaler):
    logits, y, _ = make_miscalibrated_scores(3000, 4, temperature=2.0, random_state=0)
    cal = ScalingBinningCalibrator(
        multi_class=multi_class, scaler=scaler, split=0.5, random_state=0
    ).fit(logits, y)
    p = cal.predict_proba(logits)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    n_maps = 4 if multi_class == "ovr" else 1
    assert len(cal.bin_edges_) == len(cal.bin_proba_) == n_maps
    w1, _ = _split_of(cal, logits, y)
    first = w1 > 0
    if scaler == "temperature":
        ts = TemperatureCalibrator().fit(
            logits[first], y[first], sample_weight=w1[first]
        )
        assert cal.temperature_ == pytest.approx(ts.temperature_, rel=1e-6)
        assert not hasattr(cal, "coef_")
    else:
        assert cal.coef_.shape == (n_maps,) and not hasattr(cal, "temperature_")
    if multi_class == "top_label":
        top = np.argmax(logits, axis=1)
        conf = p[np.arange(3000), top]
        assert np.unique(conf).size <= cal.n_bins
        assert np.all(np.isin(np.round(conf, 12), np.round(cal.bin_proba_[0], 12)))


def test_auto_scaler():
    logits, y, _ = make_miscalibrated_scores(600, 3, random_state=0)
    assert ScalingBinningCalibrator().fit(logits, y).scaler_ == "platt"
    top = ScalingBinningCalibrator(multi_class="top_label").fit(logits, y)
    assert top.scaler_ == "platt"  # Kumar et al.'s top-label: Platt on the confidence
    s, yb = _binary_logits(300)
    assert ScalingBinningCalibrator().fit(s, yb).scaler_ == "platt"


@pytest.mark.parametrize(
    "name, before, after",
    [  # test NLL before -> after (skcalib 0.1.0.dev0, random_state=0)
        ("airlines_42493_rf", 0.8857, 0.6777),
        ("2dplanes_727_cb3", 0.2395, 0.1778),
        ("mozilla4_1046_cb3", 0.2229, 0.2066),
    ],
)
def test_lowers_test_nll_on_splinecalib_pairs(shared_loader, name, before, after):
    pc, yc = shared_loader(f"splinecalib/calibset_{name}.npz")
    pt, yt = shared_loader(f"splinecalib/testset_{name}.npz")
    rows = np.arange(yt.size)
    nll0 = -np.log(np.maximum(pt[rows, yt].astype(np.float64), 1e-12)).mean()
    # frozen with the first defaults: 10 bins, split=0.5
    cal = ScalingBinningCalibrator(n_bins=10, split=0.5, random_state=0)
    cal.fit(pc, yc)
    nll1 = -np.log(cal.predict_proba(pt)[rows, yt].astype(np.float64)).mean()
    assert nll0 == pytest.approx(before, abs=1e-4)
    assert nll1 == pytest.approx(after, abs=2e-3)


def test_mnist_under_confident_multiclass(shared_loader):
    pc, yc = shared_loader("splinecalib/mnist4_calib_set.npz")
    pt, yt = shared_loader("splinecalib/mnist4_test_set.npz")
    rows = np.arange(yt.size)
    cal = ScalingBinningCalibrator(n_bins=10, random_state=0).fit(pc, yc)
    assert len(cal.bin_proba_) == 5 and cal.coef_.shape == (5,)
    after = -np.log(cal.predict_proba(pt)[rows, yt].astype(np.float64)).mean()
    assert after == pytest.approx(0.2574, abs=2e-3)  # from 0.5259


def test_cifar10_top_label_ece(shared_loader):
    # Kumar et al.'s own VGG-16 predictions: top-label with temperature.
    probs, labels = shared_loader("verified_calibration/cifar10_vgg16.npz")
    perm = np.random.default_rng(0).permutation(labels.size)
    fit, test = perm[:5000], perm[5000:]
    cal = ScalingBinningCalibrator(multi_class="top_label", random_state=0)
    cal.fit(probs[fit], labels[fit])
    before = expected_calibration_error(labels[test], probs[test])
    after = expected_calibration_error(labels[test], cal.predict_proba(probs[test]))
    assert before == pytest.approx(0.0368, abs=1e-3)
    assert after < 0.02


# --------------------------------------------------------------- equivalences
def test_weight_two_is_a_duplicate_zero_is_dropped_and_permutation():
    s, y = _binary_logits(500, seed=6)
    w = np.random.default_rng(7).integers(0, 3, y.size).astype(float)
    w[:2] = [1, 2]
    a = ScalingBinningCalibrator(random_state=0).fit(s, y, sample_weight=w)
    rep = w.astype(int)
    b = ScalingBinningCalibrator(random_state=0).fit(
        np.repeat(s, rep), np.repeat(y, rep)
    )
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9)
    np.testing.assert_allclose(a.bin_edges_[0], b.bin_edges_[0], rtol=1e-12)
    np.testing.assert_allclose(a.predict_proba(s), b.predict_proba(s), rtol=1e-9)
    perm = np.random.default_rng(8).permutation(y.size)
    c = ScalingBinningCalibrator(random_state=0).fit(
        s[perm], y[perm], sample_weight=w[perm]
    )
    np.testing.assert_allclose(c.predict_proba(s), a.predict_proba(s), rtol=1e-9)


@pytest.mark.filterwarnings("ignore:The likelihood is maximised at the temperature")
def test_1d_2d_float32_and_extreme_logits():
    s, y = _binary_logits(800, seed=9)
    a = ScalingBinningCalibrator(random_state=0).fit(s, y).predict_proba(s)
    two = np.column_stack([np.zeros_like(s), s])
    np.testing.assert_array_equal(
        ScalingBinningCalibrator(random_state=0).fit(two, y).predict_proba(two), a
    )
    s32 = s.astype(np.float32)
    b = ScalingBinningCalibrator(random_state=0).fit(s32, y).predict_proba(s32)
    assert b.dtype == np.float32
    assert np.isclose(a, b, atol=1e-5).all(axis=1).mean() > 0.98
    rng = np.random.default_rng(10)
    ext = rng.choice([-1e4, -1.0, 0.0, 1.0, 1e4], size=(300, 3))
    ye = rng.integers(0, 3, 300)
    for mc in ("ovr", "top_label"):
        p = ScalingBinningCalibrator(multi_class=mc, random_state=0).fit(ext, ye)
        q = p.predict_proba(ext)
        assert np.isfinite(q).all() and (q > 0).all()
        np.testing.assert_allclose(q.sum(axis=1), 1.0)


def test_wrapper_mode_pickle_and_bad_parameters():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(1000, 6, random_state=0)
    clf = LogisticRegression().fit(X[:400], y[:400])
    cal = ScalingBinningCalibrator(estimator=clf, random_state=0).fit(X[400:], y[400:])
    raw = ScalingBinningCalibrator(random_state=0).fit(
        clf.decision_function(X[400:]), y[400:]
    )
    np.testing.assert_allclose(
        cal.predict_proba(X), raw.predict_proba(clf.decision_function(X))
    )
    again = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(again.predict_proba(X), cal.predict_proba(X))
    for params, match in [
        ({"split": 1.0}, "split"),
        ({"split": 0.0}, "split"),
        ({"n_bins": 0}, "n_bins"),
        ({"scaler": "isotonic"}, "scaler"),
        ({"multi_class": "multinomial"}, "multi_class"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            ScalingBinningCalibrator(**params).fit(np.array([0.2, 0.8]), [0, 1])
