"""partial_fit: after batches B1..Bm, the calibrator is fit on their
concatenation (raw scores and wrapper mode, weights, float32), forgetting
is the explicitly weighted fit, classes_ are fixed by the first call."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from skcalib import (
    BetaCalibrator,
    HistogramBinningCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)

# (calibrator, the scores it is given: logits or probabilities)
CASES = [
    (TemperatureCalibrator, "logit"),
    (PlattCalibrator, "logit"),
    (VectorScalingCalibrator, "logit"),
    (HistogramBinningCalibrator, "proba"),
    (HistogramBinningCalibrator(strategy="quantile", n_bins=12), "proba"),
    (BetaCalibrator, "proba"),
]
IDS = ["temperature", "platt", "vector", "histogram", "histogram-quantile", "beta"]


def _make(cal):
    return clone(cal) if not isinstance(cal, type) else cal()


def _data(n=4000, k=3, seed=0, kind="logit", dtype=np.float64):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = 2.5 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y])
    if kind == "proba":
        z = np.exp(z - z.max(axis=1, keepdims=True))
        z /= z.sum(axis=1, keepdims=True)
    return z.astype(dtype), y, rng.uniform(0.2, 3.0, n)


def _batches(n, sizes):
    edges = np.cumsum([0, *sizes])
    assert edges[-1] == n
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _stream(cal, X, y, w, parts):
    for s in parts:
        cal.partial_fit(X[s], y[s], None if w is None else w[s])
    return cal


@pytest.mark.parametrize(("cal", "kind"), CASES, ids=IDS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equals_fit_on_concatenation(cal, kind, weighted, dtype):
    X, y, w = _data(kind=kind, dtype=dtype)
    w = w if weighted else None
    parts = _batches(len(y), [1000, 37, 1500, 963, 500])
    streamed = _stream(_make(cal), X, y, w, parts)
    whole = _make(cal).fit(X, y, sample_weight=w)
    p_stream, p_whole = streamed.predict_proba(X), whole.predict_proba(X)
    assert p_stream.dtype == dtype
    nll = [
        log_loss(y, p, sample_weight=w, labels=[0, 1, 2]) for p in (p_stream, p_whole)
    ]
    assert abs(nll[0] - nll[1]) <= 1e-8
    np.testing.assert_allclose(p_stream, p_whole, rtol=0, atol=1e-10)
    assert (
        streamed.score_type_
        == whole.score_type_
        == kind.replace("proba", "probability")
    )


@pytest.mark.parametrize(("cal", "kind"), CASES, ids=IDS)
def test_binary_one_column_and_mixed_weights(cal, kind):
    X, y, w = _data(k=2, kind=kind)
    x = X[:, 1] if kind == "proba" else X[:, 1] - X[:, 0]  # 1-D positive score
    parts = _batches(len(y), [1200, 1800, 1000])
    streamed = _make(cal)
    streamed.partial_fit(x[parts[0]], y[parts[0]])  # unweighted batch: weight 1
    streamed.partial_fit(x[parts[1]], y[parts[1]], w[parts[1]])
    streamed.partial_fit(x[parts[2]], y[parts[2]])
    w_all = np.concatenate([np.ones(1200), w[parts[1]], np.ones(1000)])
    whole = _make(cal).fit(x, y, sample_weight=w_all)
    np.testing.assert_allclose(
        streamed.predict_proba(x), whole.predict_proba(x), rtol=0, atol=1e-10
    )


@pytest.mark.parametrize(("cal", "kind"), CASES, ids=IDS)
def test_wrapper_mode(cal, kind):
    rng = np.random.default_rng(3)
    F = rng.normal(size=(3000, 4))
    y = (F[:, 0] + F[:, 1] ** 2 + rng.normal(size=3000) > 1).astype(int)
    y = y + (F[:, 2] > 1)  # three classes
    clf = LogisticRegression().fit(F[:500], y[:500])
    method = "decision_function" if kind == "logit" else "predict_proba"
    cal = _make(cal).set_params(estimator=clf, response_method=method)
    parts = _batches(3000, [700, 1300, 1000])
    streamed = _stream(clone(cal), F, y, None, parts)
    whole = clone(cal).fit(F, y)
    np.testing.assert_allclose(
        streamed.predict_proba(F), whole.predict_proba(F), rtol=0, atol=1e-10
    )
    assert streamed.classes_.tolist() == clf.classes_.tolist()


def test_fitted_attributes_follow_every_batch():
    X, y, _ = _data()
    ts = TemperatureCalibrator().partial_fit(X[:2000], y[:2000])
    assert (
        ts.temperature_ == TemperatureCalibrator().fit(X[:2000], y[:2000]).temperature_
    )
    ts.partial_fit(1.7 * X[2000:], y[2000:])  # a sharper second half
    both = np.concatenate([X[:2000], 1.7 * X[2000:]])
    expected = TemperatureCalibrator().fit(both, y).temperature_
    assert ts.temperature_ == expected  # refitted on reading, not the old value
    again = pickle.loads(pickle.dumps(ts.partial_fit(X[:5], y[:5])))
    both = np.concatenate([both, X[:5]])
    assert (
        again.temperature_
        == TemperatureCalibrator().fit(both, np.concatenate([y, y[:5]])).temperature_
    )


@pytest.mark.parametrize(("cal", "kind"), CASES, ids=IDS)
def test_forgetting_factor_is_a_weighted_fit(cal, kind):
    X, y, w = _data(kind=kind)
    parts = _batches(len(y), [1000, 1000, 1000, 1000])
    lam = 0.6
    streamed = _stream(_make(cal).set_params(forgetting_factor=lam), X, y, w, parts)
    decay = np.repeat(lam ** np.array([3.0, 2.0, 1.0, 0.0]), 1000)
    whole = _make(cal).fit(X, y, sample_weight=w * decay)
    np.testing.assert_allclose(
        streamed.predict_proba(X), whole.predict_proba(X), rtol=0, atol=1e-10
    )
    # and it does forget: the fit differs from the unweighted stream
    plain = _stream(_make(cal), X, y, w, parts)
    assert np.abs(plain.predict_proba(X) - streamed.predict_proba(X)).max() > 1e-4


def test_forgetting_follows_a_drift():
    # The second half is twice as sharp: with forgetting, T approaches the
    # temperature of the recent batches.
    rng = np.random.default_rng(1)
    y = rng.integers(0, 4, 20000)
    z = rng.normal(size=(20000, 4)) + np.eye(4)[y]
    z[10000:] *= 4.0
    parts = _batches(20000, [1000] * 20)
    plain = _stream(TemperatureCalibrator(), z, y, None, parts).temperature_
    recent = TemperatureCalibrator().fit(z[10000:], y[10000:]).temperature_
    forget = _stream(TemperatureCalibrator(forgetting_factor=0.5), z, y, None, parts)
    assert abs(forget.temperature_ - recent) < 0.05 * recent
    assert abs(plain - recent) > 0.2 * recent


def test_classes_fixed_by_the_first_call():
    X, y, _ = _data()
    labels = np.array(["a", "b", "c"])[y]
    first = y[:500] != 2  # no "c" in the first batch
    cal = PlattCalibrator()
    with pytest.raises(ValueError, match=r"one class only.*pass classes="):
        cal.partial_fit(X[:10][y[:10] == 0], labels[:10][y[:10] == 0])
    assert not hasattr(cal, "classes_")  # a failed first batch fits nothing
    with pytest.raises(ValueError, match=r"3 column\(s\) but there are 2 classes"):
        cal.partial_fit(X[:500][first], labels[:500][first])
    assert not hasattr(cal, "classes_")
    # classes= at the first call fixes all three
    cal = PlattCalibrator().partial_fit(
        X[:500][first], labels[:500][first], classes=["a", "b", "c"]
    )
    cal.partial_fit(X[500:], labels[500:], classes=["a", "b", "c"])
    order = np.concatenate([np.flatnonzero(first), np.arange(500, len(y))])
    whole = PlattCalibrator().fit(X[order], labels[order])
    np.testing.assert_allclose(cal.predict_proba(X), whole.predict_proba(X), atol=1e-10)
    with pytest.raises(ValueError, match=r"differs from the classes_"):
        cal.partial_fit(X[:5], labels[:5], classes=["a", "b"])


def test_unseen_class_is_an_error():
    X, y, _ = _data()
    ts = TemperatureCalibrator().partial_fit(X[:100], y[:100], classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"label\(s\) \[7\] not among the classes_"):
        ts.partial_fit(X[:3], np.array([0, 7, 1]))
    est = LogisticRegression().fit(X, y)
    cal = TemperatureCalibrator(estimator=est).partial_fit(X[:50], y[:50])
    with pytest.raises(ValueError, match=r"label\(s\) \[5\] not among"):
        cal.partial_fit(X[:2], [5, 0])
    with pytest.raises(ValueError, match=r"disagrees with"):
        TemperatureCalibrator(estimator=est).partial_fit(X, y, classes=[2, 1, 0])


def test_one_class_so_far_is_an_error_at_use():
    X, y, _ = _data()
    ts = TemperatureCalibrator().partial_fit(X[y == 0], y[y == 0], classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"hold one class only \(\[0\]\)"):
        ts.predict_proba(X[:3])
    ts.partial_fit(X[y == 1], y[y == 1])
    assert ts.predict_proba(X[:3]).shape == (3, 3)


def test_bad_batches():
    X, y, w = _data(kind="proba")
    cal = BetaCalibrator(score_type="probability").partial_fit(X[:100], y[:100])
    bad = X[100:110].copy()
    bad[3] *= 0.9  # a row that misses 1
    with pytest.raises(ValueError, match=r"sum"):
        cal.partial_fit(bad, y[100:110])
    nan = X[100:110].copy()
    nan[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cal.partial_fit(nan, y[100:110])
    with pytest.raises(ValueError, match=r"expecting 3 features"):
        cal.partial_fit(X[100:110, :2], y[100:110])
    with pytest.raises(ValueError, match=r"Negative values"):
        cal.partial_fit(X[100:110], y[100:110], -w[100:110])
    with pytest.raises(ValueError, match=r"samples but y has"):
        cal.partial_fit(X[100:110], y[100:109])
    # the bad batches were not kept
    whole = BetaCalibrator(score_type="probability").fit(X[:100], y[:100])
    np.testing.assert_allclose(cal.predict_proba(X), whole.predict_proba(X), atol=1e-12)
    with pytest.raises(ValueError, match=r"forgetting_factor"):
        BetaCalibrator(forgetting_factor=0.0).partial_fit(X, y)


def test_fit_discards_the_stream_and_partial_fit_after_fit_restarts():
    X, y, _ = _data()
    ts = TemperatureCalibrator().partial_fit(X[:1000], y[:1000])
    ts.fit(X[1000:], y[1000:])
    assert (
        ts.temperature_ == TemperatureCalibrator().fit(X[1000:], y[1000:]).temperature_
    )
    # fit keeps no rows: a partial_fit after it starts a new stream, and says so
    with pytest.warns(UserWarning, match=r"starts a new stream"):
        ts.partial_fit(X[:700], y[:700])
    ts.partial_fit(X[700:1000], y[700:1000])
    assert (
        ts.temperature_ == TemperatureCalibrator().fit(X[:1000], y[:1000]).temperature_
    )


@pytest.mark.parametrize(("cal", "kind"), CASES, ids=IDS)
def test_partial_fit_calls_do_not_refit_and_use_refits_once(cal, kind):
    X, y, _ = _data(kind=kind)
    cal = _make(cal)
    calls = []
    fit = cal._fit
    cal._fit = lambda *a: calls.append(1) or fit(*a)
    for s in _batches(len(y), [1000] * 4):
        cal.partial_fit(X[s], y[s])
    assert calls == []
    cal.predict_proba(X[:2])
    cal.predict(X[:2])
    assert hasattr(cal, "n_iter_") or hasattr(cal, "calibrators_")
    assert calls == [1]


def test_histogram_edges_come_from_all_batches():
    # Documented behaviour: the kept rows are refitted, so equal-mass (and
    # "auto" count) edges are those of every batch, not frozen at the first.
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(0, 0.5, 2000), rng.uniform(0.5, 1, 2000)])
    y = (rng.uniform(size=4000) < p).astype(int)
    cal = HistogramBinningCalibrator(strategy="quantile", n_bins=4, smoothing=0)
    cal.partial_fit(p[:2000], y[:2000])
    first_edges = cal.bin_edges_[0].copy()
    cal.partial_fit(p[2000:], y[2000:])
    np.testing.assert_allclose(
        cal.bin_edges_[0], np.quantile(p, [0, 0.25, 0.5, 0.75, 1]), atol=2e-3
    )
    assert first_edges[2] < 0.3 < cal.bin_edges_[0][2]
    auto = HistogramBinningCalibrator().partial_fit(p[:2000], y[:2000])
    assert auto.n_bins_ == [10]  # floor(2000 / 200)
    auto.partial_fit(p[2000:], y[2000:])
    assert auto.n_bins_ == [20]
