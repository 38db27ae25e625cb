"""Venn-ABERS against a per-test-point isotonic refit, and on real data."""

import pickle

import numpy as np
import pytest
from _data import multiclass_logits
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils._param_validation import InvalidParameterError

from skcalib import VennAbersCalibrator
from skcalib.calibration._venn_abers import venn_abers_interval, venn_abers_table


def _slow_pair(s, y, test, w=None):
    """(p0, p1) by refitting sklearn's IsotonicRegression with the test point
    added as a negative, then as a positive: the definition, O(n) per point."""
    w = np.ones_like(s) if w is None else w
    p0, p1 = [], []
    for t in test:
        pair = []
        for label in (0.0, 1.0):
            iso = IsotonicRegression(out_of_bounds="clip").fit(
                np.r_[s, t], np.r_[y, label], sample_weight=np.r_[w, 1.0]
            )
            pair.append(iso.predict([t])[0])
        p0.append(pair[0])
        p1.append(pair[1])
    return np.array(p0), np.array(p1)


def _test_points(s, rng):
    """Calibration scores themselves (ties), gaps, and points outside."""
    return np.r_[s, s + 0.25, rng.normal(scale=4, size=20), s.min() - 1, s.max() + 1]


@pytest.mark.parametrize("seed", range(6))
def test_equals_isotonic_refit_per_test_point(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    if seed % 2:
        s = rng.integers(-4, 5, n).astype(float)  # many ties
    else:
        s = rng.normal(scale=2, size=n)
    y = (rng.uniform(size=n) < expit(s + rng.normal(size=n))).astype(float)
    test = _test_points(s, rng)
    p0, p1 = venn_abers_interval(venn_abers_table(s, y), test)
    r0, r1 = _slow_pair(s, y, test)
    np.testing.assert_allclose(p0, r0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p1, r1, rtol=0, atol=1e-12)
    assert np.all(p0 <= p1 + 1e-15)


def test_large_tables_use_sorted_lookup_with_the_same_result():
    rng = np.random.default_rng(9)
    s = np.round(rng.normal(scale=3, size=20_000), 3)  # ties and gaps
    y = (rng.uniform(size=s.size) < expit(s)).astype(float)
    table = venn_abers_table(s, y)
    assert table[0].size > 4096
    test = np.r_[s[:3000], rng.normal(scale=4, size=3000), s.min() - 1, s.max() + 1]
    p0, p1 = venn_abers_interval(table, test)
    x, t0, t1 = table
    np.testing.assert_array_equal(p0, t0[np.searchsorted(x, test, side="right")])
    np.testing.assert_array_equal(p1, t1[np.searchsorted(x, test, side="left")])


def test_estimator_equals_refit_and_merges_the_pair():
    rng = np.random.default_rng(10)
    s = np.round(rng.normal(scale=2, size=120), 1)
    y = (rng.uniform(size=120) < expit(s)).astype(int)
    test = _test_points(s, rng)
    va = VennAbersCalibrator().fit(s, y)
    p0, p1 = va.predict_interval(test)
    r0, r1 = _slow_pair(s, y.astype(float), test)
    np.testing.assert_allclose(p0, r0, atol=1e-12)
    np.testing.assert_allclose(p1, r1, atol=1e-12)
    proba = va.predict_proba(test)
    assert isinstance(proba, np.ndarray) and proba.shape == (test.size, 2)
    np.testing.assert_allclose(proba[:, 1], r1 / (1 - r0 + r1), atol=1e-12)
    assert np.all((p0 <= proba[:, 1]) & (proba[:, 1] <= p1))
    # never 0 or 1: p in [1 / (n + 2), (n + 1) / (n + 2)]
    assert proba.min() >= 1 / 122 - 1e-15
    np.testing.assert_array_equal(va.predict(test), (proba[:, 1] > 0.5).astype(int))


def test_integer_weights_are_repetitions_and_fractions_raise():
    rng = np.random.default_rng(11)
    s = rng.normal(size=80)
    y = (rng.uniform(size=80) < expit(2 * s)).astype(int)
    w = rng.integers(0, 4, 80).astype(float)
    test = _test_points(s, rng)
    a = VennAbersCalibrator().fit(s, y, sample_weight=w)
    b = VennAbersCalibrator().fit(
        np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int))
    )
    for u, v in zip(a.predict_interval(test), b.predict_interval(test), strict=True):
        np.testing.assert_allclose(u, v, atol=1e-15)
    r0, r1 = _slow_pair(s, y.astype(float), test, w)
    np.testing.assert_allclose(a.predict_interval(test)[0], r0, atol=1e-12)
    np.testing.assert_allclose(a.predict_interval(test)[1], r1, atol=1e-12)
    with pytest.raises(ValueError, match=r"integer repetition counts.*\[3\] = 0.5"):
        VennAbersCalibrator().fit(s, y, sample_weight=np.r_[1, 1, 1, 0.5, np.ones(76)])


def test_cross_venn_abers_merges_folds_with_geometric_means():
    rng = np.random.default_rng(12)
    s = rng.normal(scale=2, size=90)
    y = (rng.uniform(size=90) < expit(s)).astype(int)
    test = _test_points(s, rng)
    va = VennAbersCalibrator(cv=3, random_state=0).fit(s, y)
    assert len(va.calibrators_[0]) == 3
    folds = StratifiedKFold(3, shuffle=True, random_state=0).split(s, y)
    pairs = [_slow_pair(s[idx], y[idx].astype(float), test) for _, idx in folds]
    p0 = np.array([p[0] for p in pairs])
    p1 = np.array([p[1] for p in pairs])
    g1 = np.prod(p1, axis=0) ** (1 / 3)
    g0 = np.prod(1 - p0, axis=0) ** (1 / 3)
    proba = va.predict_proba(test)[:, 1]
    np.testing.assert_allclose(proba, g1 / (g0 + g1), atol=1e-12)
    lo, hi = va.predict_interval(test)
    np.testing.assert_allclose(lo, p0.min(axis=0), atol=1e-12)
    np.testing.assert_allclose(hi, p1.max(axis=0), atol=1e-12)
    assert np.all((lo <= proba) & (proba <= hi))
    # deterministic given random_state, different for another one
    again = VennAbersCalibrator(cv=3, random_state=0).fit(s, y).predict_proba(test)
    np.testing.assert_array_equal(again[:, 1], proba)
    other = VennAbersCalibrator(cv=3, random_state=1).fit(s, y).predict_proba(test)
    assert not np.allclose(other[:, 1], proba)


@pytest.mark.parametrize("cv", [None, 4])
def test_multiclass_intervals_per_class_and_top_label(cv):
    rng = np.random.default_rng(13)
    y = rng.integers(0, 4, 1200)
    logits = 2.5 * (rng.normal(size=(1200, 4)) + np.eye(4)[y])
    va = VennAbersCalibrator(cv=cv, random_state=0).fit(logits, y)
    proba = va.predict_proba(logits)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    p0, p1 = va.predict_interval(logits)
    assert p0.shape == p1.shape == (1200, 4) and np.all(p0 <= p1)
    if cv is None:  # class 2's pair is the binary predictor of "class 2 or not"
        lp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        odds = lp[:, 2] - np.log(-np.expm1(lp[:, 2]))
        one = VennAbersCalibrator(score_type="logit").fit(odds, (y == 2).astype(int))
        np.testing.assert_allclose(p1[:, 2], one.predict_interval(odds)[1], atol=1e-12)
    top = VennAbersCalibrator(cv=cv, multi_class="top_label", random_state=0)
    top.fit(logits, y)
    t0, t1 = top.predict_interval(logits)
    assert t0.shape == (1200,) and np.all(t0 <= t1)
    conf = top.predict_proba(logits)[np.arange(1200), np.argmax(logits, axis=1)]
    # the top-label rule keeps the predicted class: a confidence below 1/K
    # is raised to 1/K (the uniform row), possibly above the pair's upper end
    assert np.all((t0 - 1e-12 <= conf) & (conf <= np.maximum(t1, 1 / 4) + 1e-12))


@pytest.mark.parametrize(
    "name, before, after",
    [  # test NLL before -> after (skcalib 0.1.0.dev0, numpy 2.4, sklearn 1.9.1)
        ("airlines_42493_rf", 0.8857, 0.6770),
        ("2dplanes_727_cb3", 0.2395, 0.1616),
        ("mozilla4_1046_cb3", 0.2229, 0.1783),
    ],
)
def test_lowers_test_nll_on_splinecalib_pairs(shared_loader, name, before, after):
    pc, yc = shared_loader(f"splinecalib/calibset_{name}.npz")
    pt, yt = shared_loader(f"splinecalib/testset_{name}.npz")
    rows = np.arange(yt.size)
    nll0 = -np.log(np.maximum(pt[rows, yt].astype(np.float64), 1e-12)).mean()
    va = VennAbersCalibrator().fit(pc, yc)
    nll1 = -np.log(va.predict_proba(pt)[rows, yt]).mean()
    assert nll0 == pytest.approx(before, abs=1e-4)
    assert nll1 == pytest.approx(after, abs=1e-3)
    p0, p1 = va.predict_interval(pt)
    assert np.median(p1 - p0) < 0.01  # thousands of samples: nearly precise


def test_mnist_under_confident_multiclass(shared_loader):
    pc, yc = shared_loader("splinecalib/mnist4_calib_set.npz")
    pt, yt = shared_loader("splinecalib/mnist4_test_set.npz")
    rows = np.arange(yt.size)
    va = VennAbersCalibrator().fit(pc, yc)
    after = -np.log(va.predict_proba(pt)[rows, yt].astype(np.float64)).mean()
    assert after == pytest.approx(0.2335, abs=1e-3)  # from 0.5259


# --------------------------------------------------------------- equivalences
def test_extreme_and_constant_scores():
    rng = np.random.default_rng(14)
    ext = rng.choice([-1e4, -1.0, 0.0, 1.0, 1e4], 300)
    ye = (rng.uniform(size=300) < expit(np.clip(ext, -3, 3))).astype(int)
    q = (
        VennAbersCalibrator()
        .fit(ext, ye)
        .predict_proba(np.array([-1e5, -1e4, 1e4, 1e5]))
    )
    assert np.isfinite(q).all() and (q > 0).all() and np.all(np.diff(q[:, 1]) >= 0)
    const = VennAbersCalibrator(score_type="logit")
    const.fit(np.zeros((40, 3)), np.arange(40) % 3)
    q = const.predict_proba(np.zeros((2, 3)))  # class frequencies 14, 13, 13
    np.testing.assert_allclose(q, [[15 / 43, 14 / 43, 14 / 43]] * 2, atol=1e-12)


def test_pickle_keeps_the_intervals_and_bad_parameters():
    s, y = multiclass_logits(400, 3, seed=14)
    va = VennAbersCalibrator().fit(s, y)
    again = pickle.loads(pickle.dumps(va))
    for u, v in zip(again.predict_interval(s), va.predict_interval(s), strict=True):
        np.testing.assert_array_equal(u, v)
    with pytest.raises(InvalidParameterError, match="cv"):
        VennAbersCalibrator(cv=1).fit(np.array([0.2, 0.8]), [0, 1])
    with pytest.raises(ValueError, match="n_splits=5"):
        VennAbersCalibrator(cv=5).fit(np.array([0.2, 0.8, 0.3]), [0, 1, 0])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        VennAbersCalibrator().predict_interval(np.array([0.5]))
