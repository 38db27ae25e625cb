"""CORP: the isotonic reliability curve, its consistency band and the CORP
decomposition, against a plain-Python PAV on real predictions."""

import numpy as np
import pytest
from _data import load_shared

from skcalib.metrics import (
    brier_score,
    calibration_refinement_decomposition,
    corp_decomposition,
    negative_log_likelihood,
    reliability_curve,
)


# ---------------------------------------------------------------- reference
def slow_pav(x, event, w):
    """Pool adjacent violators, written out: the weighted isotonic regression
    of ``event`` on ``x`` (ties of ``x`` pooled first), read at each sample."""
    groups = {}
    for xi, ei, wi in zip(x.tolist(), event.tolist(), w.tolist(), strict=True):
        s = groups.setdefault(xi, [0.0, 0.0])
        s[0] += wi * ei
        s[1] += wi
    keys = sorted(groups)
    blocks = []  # [weighted event sum, weight, number of distinct x]
    for k in keys:
        blocks.append([groups[k][0], groups[k][1], 1])
        while len(blocks) > 1 and (
            blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]
        ):
            last = blocks.pop()
            for j in range(3):
                blocks[-1][j] += last[j]
    value = {}
    i = 0
    for s, ww, m in blocks:
        for k in keys[i : i + m]:
            value[k] = s / ww
        i += m
    return np.array([value[xi] for xi in x.tolist()])


def slow_corp(x, event, w, score):
    """MCB, DSC, UNC and the score, each from its definition."""

    def mean_score(p):
        if score == "brier":
            loss = (p - event) ** 2
        else:
            q = np.where(event == 1, p, 1 - p)
            loss = -np.log(np.maximum(q, np.finfo(np.float64).eps))
        return float(np.sum(w * loss) / np.sum(w))

    base = float(np.sum(w * event) / np.sum(w))
    s, s_rc = mean_score(x), mean_score(slow_pav(x, event, w))
    unc = mean_score(np.full(x.size, base))
    return s, s - s_rc, unc - s_rc, unc


def _binary_rf():
    probs, labels = load_shared("splinecalib/testset_mozilla4_1046_rf.npz")
    return probs.astype(np.float64), labels


def _cifar():
    probs, labels = load_shared("netcal/lenet-5-cifar-10.npz")
    return probs[:4000], labels[:4000]


# -------------------------------------------------------------- real data
@pytest.mark.parametrize("score", ["brier", "log"])
def test_binary_parity_with_slow_pav_on_real_data(score):
    probs, y = _binary_rf()
    x = probs[:, 1]
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=y.size)
    ref = slow_corp(x, (y == 1).astype(float), w, score)
    d = corp_decomposition(y, probs, score=score, sample_weight=w)
    assert d.kind == "classwise" and d.class_index == 1
    got = (d.score, d.miscalibration, d.discrimination, d.uncertainty)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("score", ["brier", "log"])
def test_confidence_parity_with_slow_pav_on_cifar(score):
    probs, y = _cifar()
    conf = probs.max(axis=1).astype(np.float64)
    correct = (probs.argmax(axis=1) == y).astype(float)
    ref = slow_corp(conf, correct, np.ones(y.size), score)
    d = corp_decomposition(y, probs, score=score)
    assert d.kind == "confidence"
    got = (d.score, d.miscalibration, d.discrimination, d.uncertainty)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)


def test_isotonic_curve_matches_slow_pav_on_real_data():
    probs, y = _cifar()
    conf = probs.max(axis=1).astype(np.float64)
    correct = (probs.argmax(axis=1) == y).astype(float)
    curve = reliability_curve(y, probs, strategy="isotonic", n_resamples=0)
    ref = slow_pav(conf, correct, np.ones(y.size))
    lookup = dict(zip(conf.tolist(), ref.tolist(), strict=True))
    np.testing.assert_allclose(
        curve.curve_y, [lookup[v] for v in curve.curve_x.tolist()], rtol=1e-12
    )
    # One bin per block: its accuracy is the block's frequency, its weight
    # the block's size, and the bins hold every sample.
    blocks = np.searchsorted(curve.edges[1:-1], conf, side="left")
    np.testing.assert_array_equal(np.bincount(blocks), curve.n_samples)
    np.testing.assert_allclose(
        np.bincount(blocks, weights=correct) / np.bincount(blocks), curve.accuracy
    )
    np.testing.assert_allclose(
        np.bincount(blocks, weights=conf) / np.bincount(blocks),
        curve.mean_confidence,
    )
    assert np.all(np.diff(curve.accuracy) > 0) and curve.band_lower is None


# ---------------------------------------------------------- decomposition
@pytest.mark.parametrize("score", ["brier", "log"])
def test_identity_and_signs(score):
    rng = np.random.default_rng(1)
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=p.size) < p**2).astype(int)
    d = corp_decomposition(y, p, score=score)
    assert d.score == pytest.approx(
        d.miscalibration - d.discrimination + d.uncertainty, abs=1e-15
    )
    assert d.miscalibration > 0.01 and d.discrimination > 0.01
    same = brier_score(y, p) if score == "brier" else negative_log_likelihood(y, p)
    assert d.score == pytest.approx(same, rel=1e-12)
    loss = "brier" if score == "brier" else "log_loss"
    cr = calibration_refinement_decomposition(y, p, loss=loss, recalibration="isotonic")
    assert d.miscalibration == pytest.approx(cr.calibration, rel=1e-10)


def test_uncertainty_is_the_base_rate_score():
    y = np.array([0, 0, 0, 1])
    p = np.array([0.1, 0.3, 0.2, 0.6])  # perfectly ordered: DSC = UNC
    b = corp_decomposition(y, p)
    assert b.uncertainty == pytest.approx(0.25 * 0.75)
    assert b.discrimination == pytest.approx(b.uncertainty)
    lg = corp_decomposition(y, p, score="log")
    assert lg.uncertainty == pytest.approx(-(0.25 * np.log(0.25) + 0.75 * np.log(0.75)))
    assert lg.miscalibration == pytest.approx(lg.score)


def test_weights_are_repetitions_and_zero_weight_drops():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    w = rng.integers(0, 3, size=300)
    rep = np.repeat(np.arange(300), w)
    a = corp_decomposition(y, p, sample_weight=w, score="log")
    b = corp_decomposition(y[rep], p[rep], score="log")
    np.testing.assert_allclose(
        [a.score, a.miscalibration, a.discrimination, a.uncertainty],
        [b.score, b.miscalibration, b.discrimination, b.uncertainty],
        rtol=1e-12,
    )
    ca = reliability_curve(y, p, strategy="isotonic", kind="classwise", sample_weight=w)
    cb = reliability_curve(y[rep], p[rep], strategy="isotonic", kind="classwise")
    np.testing.assert_allclose(ca.accuracy, cb.accuracy, rtol=1e-12)
    np.testing.assert_allclose(ca.counts, cb.counts)
    np.testing.assert_allclose(ca.curve_x, cb.curve_x)


def test_multiclass_kinds():
    probs, y = _cifar()
    top = corp_decomposition(y, probs, kind="top_label", class_index=3)
    rows = probs.argmax(axis=1) == 3
    ref = slow_corp(
        probs[rows, 3].astype(np.float64),
        (y[rows] == 3).astype(float),
        np.ones(rows.sum()),
        "brier",
    )
    got = (top.score, top.miscalibration, top.discrimination, top.uncertainty)
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    cw = corp_decomposition(y, probs, kind="classwise", class_index=3)
    ref = slow_corp(
        probs[:, 3].astype(np.float64), (y == 3).astype(float), np.ones(y.size), "brier"
    )
    got = (cw.score, cw.miscalibration, cw.discrimination, cw.uncertainty)
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    with pytest.raises(ValueError, match="class_index"):
        corp_decomposition(y, probs, kind="classwise")


# -------------------------------------------------------- consistency band
def test_consistency_band_is_seeded_and_separates_miscalibration():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, size=4000)
    y_cal = (rng.uniform(size=p.size) < p).astype(int)
    y_mis = (rng.uniform(size=p.size) < p**2).astype(int)
    kw = dict(strategy="isotonic", kind="classwise", n_resamples=200)
    c1 = reliability_curve(y_cal, p, random_state=5, **kw)
    c2 = reliability_curve(y_cal, p, random_state=5, **kw)
    np.testing.assert_array_equal(c1.band_lower, c2.band_lower)
    assert c1.band_lower.shape == c1.curve_x.shape
    assert np.all(c1.band_lower <= c1.band_upper)
    # The band is about the diagonal: it holds x where the data are dense.
    inner = (c1.curve_x > 0.2) & (c1.curve_x < 0.8)
    holds = (c1.band_lower <= c1.curve_x) & (c1.curve_x <= c1.band_upper)
    assert holds[inner].mean() > 0.95

    def outside(c):
        return np.mean((c.curve_y < c.band_lower) | (c.curve_y > c.band_upper))

    assert outside(c1) < 0.2
    mis = reliability_curve(y_mis, p, random_state=5, **kw)
    assert outside(mis) > 0.6


def test_isotonic_curve_errors():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.2, 0.7, 0.6, 0.4])
    with pytest.raises(ValueError, match="n_resamples"):
        reliability_curve(y, p, strategy="isotonic", n_resamples=-1)
    with pytest.raises(ValueError, match="class_index"):
        reliability_curve(y, p, strategy="isotonic", class_index=1)


def test_array_api_input_is_computed_on_the_host():
    from _xp import namespace_for
    from sklearn import config_context

    xp, _, _ = namespace_for(("array_api_strict", None, "float64"))

    from skcalib._core.xp import to_numpy

    rng = np.random.default_rng(4)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=p.size) < p).astype(np.int64)
    kw = dict(strategy="isotonic", kind="classwise", random_state=1)
    expected = reliability_curve(y, p, **kw)
    d_expected = corp_decomposition(y, p, score="log")
    with config_context(array_api_dispatch=True):
        got = reliability_curve(xp.asarray(y), xp.asarray(p), **kw)
        d = corp_decomposition(xp.asarray(y), xp.asarray(p), score="log")
    for field in ("curve_x", "curve_y", "band_lower", "accuracy", "counts"):
        value = getattr(got, field)
        assert type(value).__module__.startswith("array_api_strict"), field
        np.testing.assert_allclose(to_numpy(value), getattr(expected, field))
    assert d == d_expected


def test_dask_input_is_refused_by_name():
    da = pytest.importorskip("dask.array")
    p = da.from_array(np.linspace(0.1, 0.9, 40), chunks=20)
    y = da.from_array(np.arange(40) % 2, chunks=20)
    with pytest.raises(TypeError, match="strategy='isotonic' needs in-memory"):
        reliability_curve(y, p, strategy="isotonic", kind="classwise")
