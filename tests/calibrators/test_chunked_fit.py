"""Fitting in chunks (``fit_chunks``) and on Dask arrays equals ``fit`` on the
concatenated data: every pass is a sum of per-chunk statistics.

Temperatures are compared to ``2e-8`` relative: both fits stop within their
``tol=1e-8`` of the optimum in ``log T`` (from different starting points)."""

from functools import partial

import numpy as np
import pytest
from _data import binary_logits, multiclass_logits
from scipy.special import softmax

from skcalib import (
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)


def _split(*arrays, sizes=(700, 1, 0, 1299, 1000)):
    """Uneven chunks (one of one row, one empty) of every array."""
    bounds = np.cumsum((0, *sizes))
    assert bounds[-1] == len(arrays[0])
    return [
        tuple(a[s:e] for a in arrays)
        for s, e in zip(bounds[:-1], bounds[1:], strict=True)
    ]


#: 3000 four-class logits (``k`` and ``scale`` vary) and binary log-odds.
_multiclass = partial(multiclass_logits, n=3000, k=4, scale=3.0, seed=0)
_binary = partial(binary_logits, 3000, scale=2.5, seed=1)


WEIGHTS = np.random.default_rng(5).uniform(0.0, 2.0, 3000)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_temperature_chunks_equal_fit(weighted, dtype):
    z, y = _multiclass()
    z = z.astype(dtype)
    w = WEIGHTS if weighted else None
    chunks = _split(z, y, w) if weighted else _split(z, y)
    got = TemperatureCalibrator().fit_chunks(chunks)
    ref = TemperatureCalibrator().fit(z, y, sample_weight=w)
    assert got.temperature_ == pytest.approx(ref.temperature_, rel=2e-8)
    assert got.score_type_ == ref.score_type_ == "logit"
    assert got.n_features_in_ == 4
    np.testing.assert_allclose(got.predict_proba(z), ref.predict_proba(z), atol=1e-7)


def test_temperature_chunks_probabilities_and_string_labels():
    z, y = _multiclass(k=3)
    p = softmax(z, axis=1)
    labels = np.array(["cat", "dog", "eel"])[y]
    got = TemperatureCalibrator().fit_chunks(_split(p, labels))
    ref = TemperatureCalibrator().fit(p, labels)
    assert got.score_type_ == "probability"
    assert got.temperature_ == pytest.approx(ref.temperature_, rel=2e-8)
    assert list(got.classes_) == ["cat", "dog", "eel"]


@pytest.mark.parametrize("weighted", [False, True])
def test_platt_chunks_equal_fit_binary_and_ovr(weighted):
    s, y = _binary()
    w = WEIGHTS if weighted else None
    chunks = _split(s, y, w) if weighted else _split(s, y)
    got = PlattCalibrator().fit_chunks(chunks)
    ref = PlattCalibrator().fit(s, y, sample_weight=w)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-9, atol=1e-12)
    z, y3 = _multiclass(k=3)
    got = PlattCalibrator().fit_chunks(_split(z, y3))
    ref = PlattCalibrator().fit(z, y3)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_allclose(got.predict_proba(z), ref.predict_proba(z), atol=1e-10)


@pytest.mark.parametrize("smoothing", [0.0, 3.0])
def test_histogram_binning_chunks_equal_fit(smoothing):
    z, y = _multiclass(k=3)
    p = softmax(z, axis=1).astype(np.float32)
    got = HistogramBinningCalibrator(n_bins=12, smoothing=smoothing)
    got.fit_chunks(_split(p, y, WEIGHTS))
    ref = HistogramBinningCalibrator(n_bins=12, smoothing=smoothing)
    ref.fit(p, y, sample_weight=WEIGHTS)
    for a, b in zip(got.bin_proba_, ref.bin_proba_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(got.bin_counts_, ref.bin_counts_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["quantile", "hybrid"])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_binning_equal_mass_edges_in_chunks_equal_fit(strategy, weighted):
    """The exact search gives the in-memory edges, so the same table."""
    z, y = _multiclass(k=3)
    p = softmax(z, axis=1)
    w = WEIGHTS if weighted else None
    for dtype in (np.float64, np.float32):
        x = p.astype(dtype)
        got = HistogramBinningCalibrator(n_bins=12, strategy=strategy)
        got.fit_chunks(_split(x, y, w) if weighted else _split(x, y))
        ref = HistogramBinningCalibrator(n_bins=12, strategy=strategy)
        ref.fit(x, y, sample_weight=w)
        for a, b in zip(got.bin_edges_, ref.bin_edges_, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(got.bin_proba_, ref.bin_proba_, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_isotonic_chunks_exact_on_discrete_scores_close_otherwise():
    rng = np.random.default_rng(3)
    s = rng.integers(-20, 21, 3000) / 4.0  # 161 distinct log-odds
    y = (rng.uniform(size=s.size) < 1 / (1 + np.exp(-s))).astype(int)
    got = IsotonicCalibrator(score_type="logit").fit_chunks(_split(s, y, WEIGHTS))
    ref = IsotonicCalibrator(score_type="logit").fit(s, y, sample_weight=WEIGHTS)
    grid = np.linspace(-6, 6, 301)
    np.testing.assert_allclose(
        got.predict_proba(grid), ref.predict_proba(grid), atol=1e-12
    )
    s, y = _binary()  # continuous scores: pooled at 1/65536 of their range
    got = IsotonicCalibrator().fit_chunks(_split(s, y))
    ref = IsotonicCalibrator().fit(s, y)
    assert np.abs(got.predict_proba(s) - ref.predict_proba(s)).max() < 2e-3


def test_callable_source_and_bad_chunk_input():
    z, y = _multiclass()
    chunks = _split(z, y)
    got = TemperatureCalibrator().fit_chunks(lambda: iter(chunks))
    assert got.temperature_ == pytest.approx(
        TemperatureCalibrator().fit(z, y).temperature_, rel=2e-8
    )
    with pytest.raises(TypeError, match="read several times"):
        TemperatureCalibrator().fit_chunks(iter(chunks))
    # data that change between passes (unseeded generation) are an error
    passes = iter([[(z[:4], np.arange(4))], [(z[:4], np.full(4, 9))]])
    with pytest.raises(ValueError, match="label 9, not among the labels"):
        TemperatureCalibrator().fit_chunks(lambda: next(passes))
    with pytest.raises(ValueError, match="no chunk"):
        TemperatureCalibrator().fit_chunks([])
    bad = [chunks[0], (np.where(chunks[3][0] > 5, np.nan, chunks[3][0]), chunks[3][1])]
    with pytest.raises(ValueError, match="NaN"):
        TemperatureCalibrator().fit_chunks(bad)
    with pytest.raises(ValueError, match="different numbers of columns"):
        TemperatureCalibrator().fit_chunks([chunks[0], (z[:10, :3], y[:10])])
    with pytest.raises(ValueError, match="one class only"):
        TemperatureCalibrator().fit_chunks([(z[:5], np.zeros(5, int))])
    with pytest.raises(ValueError, match="3 column"):
        TemperatureCalibrator().fit_chunks([(z[:, :3], y)])
    with pytest.raises(TypeError, match="cannot be fitted in chunks"):
        BetaCalibrator().fit_chunks(_split(*_binary()))
    with pytest.raises(ValueError, match="multi_class='ovr' only"):
        PlattCalibrator(multi_class="top_label").fit_chunks(chunks)


def test_wrapper_mode_refuses_chunks():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="raw scores only"):
        PlattCalibrator(estimator=clf).fit_chunks([(X, y)])


@pytest.mark.parametrize(
    "make",
    [
        lambda: VectorScalingCalibrator(tol=1e-10),
        lambda: MatrixScalingCalibrator(reg_lambda=1e-2, reg_mu=1e-2, tol=1e-8),
        lambda: DirichletCalibrator(reg_lambda=1.0, tol=1e-8),
    ],
)
def test_linear_maps_chunks_equal_fit(make):
    z, y = _multiclass(k=4, scale=2.0)
    got = make().fit_chunks(_split(z, y, WEIGHTS))
    ref = make().fit(z, y, sample_weight=WEIGHTS)
    # Same optimum up to the solver tolerance: the weakly penalised matrix
    # map has flat directions (a column of W added to every output), so its
    # parameters agree to ~1e-6 while the probabilities agree to 1e-7.
    np.testing.assert_allclose(got.coef_, ref.coef_, atol=1e-5)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, atol=1e-5)
    np.testing.assert_allclose(got.predict_proba(z), ref.predict_proba(z), atol=1e-7)


def test_vector_scaling_many_classes_chunks_use_lbfgs(monkeypatch):
    from skcalib._core.solvers import linear as _linear_solver

    monkeypatch.setattr(_linear_solver, "MAX_BLOCK_CLASSES", 2)  # L-BFGS path
    z, y = _multiclass(k=4, scale=2.0)
    got = VectorScalingCalibrator(tol=1e-10).fit_chunks(_split(z, y))
    ref = VectorScalingCalibrator(tol=1e-10).fit(z, y)
    np.testing.assert_allclose(got.predict_proba(z), ref.predict_proba(z), atol=1e-7)
