"""A ConformalClassifier fitted on scores in chunks (numpy chunks, Dask
arrays) has the threshold of the in-memory fit, exactly: the distributed
order statistic (:class:`ThresholdSearch`) against the sorted scores
(:func:`quantiles_of_sorted`), and the whole fit against ``fit``. The Spark
and Ray equalities are in ``tests/backends/``."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skcalib.calibration import HistogramBinningCalibrator, TemperatureCalibrator
from skcalib.conformal import ConformalClassifier
from skcalib.conformal._quantile import (
    ThresholdSearch,
    quantiles_of_sorted,
    sort_scores,
)
from skcalib.datasets import load_predictions

ALPHAS = [0.01, 0.05, 0.1, 0.2, 0.5, 0.9]


def _run(search, chunks, rng):
    """The passes of ``search`` over ``chunks`` (per-group (scores, weights)
    lists), the chunk counts merged in a shuffled order."""
    while not search.done:
        parts = [search.digit_counts(c) for c in chunks]
        rng.shuffle(parts)
        search.advance(search.merge(parts))
    return search.thresholds()


def _scores(kind, n, rng):
    if kind == "ties":  # a few distinct values, thresholds on ties
        return rng.integers(0, 6, n) / 5
    if kind == "near zero":  # LAC scores of a confident model
        return rng.beta(0.3, 8.0, n)
    return rng.random(n) * 1.5  # APS/RAPS scores above 1 too


@pytest.mark.parametrize("limit", [0, 30, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("kind", ["ties", "near zero", "spread"])
def test_threshold_search_equals_sorted_scores(kind, weights, dtype, limit):
    rng = np.random.default_rng(abs(hash((kind, str(weights)))) % 2**32)
    kwargs = {} if limit is None else {"collect_limit": limit}
    for n in (1, 4, 9, 19, 200, 3001):
        s = _scores(kind, n, rng).astype(dtype)
        w = None
        if weights == "integer":
            w = rng.integers(0, 4, n).astype(float)
        elif weights == "float":
            w = rng.uniform(0, 2, n)
        cuts = np.sort(rng.integers(0, n + 1, 4))
        pieces = np.split(np.arange(n), cuts)
        chunks = [[(s[i], None if w is None else w[i])] for i in pieces]
        search = ThresholdSearch(1, ALPHAS, dtype, w is not None, **kwargs)
        (got,) = _run(search, chunks, rng)
        want = quantiles_of_sorted(*sort_scores(s, w), ALPHAS)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float64


def test_threshold_search_groups_and_empty_group():
    """Per-class thresholds at once; a class without rows is infinite."""
    rng = np.random.default_rng(5)
    a, b = rng.random(500), rng.random(3)
    empty = np.zeros(0)
    chunks = [
        [(a[:250], None), (b, None), (empty, None)],
        [(a[250:], None), (empty, None), (empty, None)],
    ]
    search = ThresholdSearch(3, [0.1], np.float64, weighted=False)
    got = _run(search, chunks, rng)
    np.testing.assert_array_equal(got[0], quantiles_of_sorted(*sort_scores(a), [0.1]))
    assert np.isinf(got[1]).all() and np.isinf(got[2]).all()  # 3 rows; none
    assert search.n_passes == 2  # a histogram, then the bins' scores


def _cifar():
    d = load_predictions("cifar10_wideresnet")
    p = d.probs.astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    w = np.random.default_rng(1).integers(0, 4, p.shape[0]).astype(float)
    return p, d.labels, w


CASES = [
    {},
    {"class_conditional": True, "alpha": 0.05},
    {"method": "aps", "randomized": False},
    {"method": "aps", "include_last_label": False},
    {"method": "raps", "k_reg": 2, "lam": 0.02, "randomized": False},
    {"method": "top_k", "alpha": 0.02},
]


def _chunks(arrays, cuts=(1000, 1001, 4000, 9000)):
    bounds = [0, *cuts, arrays[0].shape[0]]
    pairs = zip(bounds[:-1], bounds[1:], strict=True)
    return [tuple(a[i:j] for a in arrays) for i, j in pairs]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_chunks_equals_fit(case, weighted, dtype):
    p, y, w = _cifar()
    p = p.astype(dtype)
    arrays = (p, y, w) if weighted else (p, y)
    ref = ConformalClassifier(**case).fit(p, y, sample_weight=w if weighted else None)
    got = ConformalClassifier(**case).fit_chunks(_chunks(arrays))
    np.testing.assert_array_equal(got.threshold_, ref.threshold_)
    np.testing.assert_array_equal(got.predict_set(p[:500]), ref.predict_set(p[:500]))
    assert got.randomized_ is False


def test_fit_chunks_with_a_calibrator_fits_it_in_chunks():
    """The calibrator is fitted on the chunks too: its map is the in-memory
    one to the solver's tolerance, and the threshold follows."""
    p, y, _ = _cifar()
    z = np.log(np.clip(p, 1e-12, None))
    for calibrator, tol in [
        (TemperatureCalibrator(), 1e-8),
        (HistogramBinningCalibrator(n_bins=8), 0.0),
    ]:
        ref = ConformalClassifier(calibrator=calibrator).fit(z, y)
        got = ConformalClassifier(calibrator=calibrator).fit_chunks(_chunks((z, y)))
        assert got.calibrator_ is not calibrator
        assert got.threshold_ == pytest.approx(ref.threshold_, rel=tol, abs=tol)
        np.testing.assert_allclose(
            got.predict_proba(z[:300]), ref.predict_proba(z[:300]), atol=max(tol, 1e-12)
        )


def test_fit_chunks_refuses_what_needs_positions_or_all_scores():
    p, y, _ = _cifar()
    chunks = _chunks((p, y))
    with pytest.raises(ValueError, match="randomized=False"):
        ConformalClassifier(method="aps").fit_chunks(chunks)
    with pytest.raises(ValueError, match="pass k_reg and lam as numbers"):
        ConformalClassifier(method="raps", lam=0.1, randomized=False).fit_chunks(chunks)
    with pytest.raises(TypeError, match="skcalib calibrator that fits in chunks"):
        ConformalClassifier(calibrator=LogisticRegression()).fit_chunks(chunks)
    cp = ConformalClassifier(alpha=0.1).fit_chunks(chunks)
    same = cp.predict_set(p[:5], alpha=0.1)
    np.testing.assert_array_equal(same, cp.predict_set(p[:5]))
    with pytest.raises(ValueError, match=r"keeps the threshold of its alpha=0.1 only"):
        cp.predict_set(p[:5], alpha=0.2)
    with pytest.raises(ValueError, match="estimator=None"):
        ConformalClassifier(estimator=LogisticRegression()).fit_chunks(chunks)


def test_fit_chunks_warns_for_too_few_samples_at_the_callers_line():
    p, y, _ = _cifar()
    with pytest.warns(UserWarning, match="needs at least 99 calibration") as rec:
        cp = ConformalClassifier(alpha=0.01).fit_chunks(_chunks((p[:50], y[:50]), ()))
    assert rec[0].filename == __file__
    assert np.isinf(cp.threshold_)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ConformalClassifier(alpha=0.01).fit(p[:50], y[:50])
    assert rec[0].filename == __file__


da = pytest.importorskip("dask.array")


@pytest.mark.parametrize("case", CASES[:2], ids=["lac", "class-conditional"])
def test_dask_fit_and_sets_equal_in_memory(case):
    p, y, w = _cifar()
    dp, dy, dw = (da.from_array(a, chunks=(3000,) + a.shape[1:]) for a in (p, y, w))
    got = ConformalClassifier(**case).fit(dp, dy, sample_weight=dw)
    ref = ConformalClassifier(**case).fit(p, y, sample_weight=w)
    np.testing.assert_array_equal(got.threshold_, ref.threshold_)
    sets = got.predict_set(dp)
    assert type(sets).__module__.startswith("dask")
    np.testing.assert_array_equal(sets.compute(), ref.predict_set(p))
    with pytest.raises(ValueError, match="takes one alpha"):
        got.predict_set(dp, alpha=[0.1, 0.2])


def test_many_classes_class_conditional_chunks_equal_fit():
    """More classes than one scan per class serves (the stable-sort path of
    ``class_members``): the same per-class thresholds."""
    rng = np.random.default_rng(8)
    k, n = 40, 6000
    p = rng.dirichlet(np.full(k, 0.3), n)
    y = np.array([rng.choice(k, p=row) for row in p])
    case = {"class_conditional": True, "alpha": 0.2, "classes": np.arange(k)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rare classes: infinite thresholds
        ref = ConformalClassifier(**case).fit(p, y)
        got = ConformalClassifier(**case).fit_chunks(_chunks((p, y)))
    np.testing.assert_array_equal(got.threshold_, ref.threshold_)
    assert np.isfinite(ref.threshold_).sum() > k // 2


def test_search_refuses_to_round_its_scores():
    search = ThresholdSearch(1, [0.1], np.float32, weighted=False)
    with pytest.raises(ValueError, match="over float32 scores, got float64"):
        search.digit_counts([(np.array([0.1, 0.2]), None)])
