"""The kernel calibration error (SKCE, Widmann et al. 2019) and its tests.

The references are the definitions written as plain double loops over the
pairs of samples; the estimators must equal them to 1e-12.
"""

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import norm

import skcalib.metrics._kernel_core as core
from skcalib.metrics import kernel_calibration_error, kernel_calibration_test
from skcalib.metrics._kernel_core import (
    draw_labels,
    median_bandwidth,
    quadratic_sums,
    resampled_linear,
    resampled_quadratic,
)
from skcalib.metrics._tests_result import CalibrationTestResult


def _calibrated(n, k=3, *, seed=0, temperature=1.0):
    """Dirichlet(1) predictions with labels drawn from them; the returned
    predictions are ``softmax(log p / temperature)`` (calibrated at 1)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.minimum((rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
    z = np.log(p) / temperature
    q = np.exp(z - z.max(axis=1, keepdims=True))
    return y, q / q.sum(axis=1, keepdims=True)


def _h(y, P, i, j, nu):
    """The term of the pair (i, j), straight from the definition."""
    k = P.shape[1]
    kernel = np.exp(-np.sqrt(np.sum((P[i] - P[j]) ** 2)) / nu) * np.eye(k)
    return (np.eye(k)[y[i]] - P[i]) @ kernel @ (np.eye(k)[y[j]] - P[j])


def _reference_uq(y, P, nu):
    n = len(y)
    pairs = itertools.combinations(range(n), 2)
    return sum(_h(y, P, i, j, nu) for i, j in pairs) / (n * (n - 1) / 2)


def _reference_ul(y, P, nu):
    m = len(y) // 2
    return sum(_h(y, P, 2 * i, 2 * i + 1, nu) for i in range(m)) / m


@pytest.mark.parametrize("n", [2, 3, 17, 40])
@pytest.mark.parametrize("k", [2, 4])
def test_estimators_equal_the_double_loop(n, k):
    y, P = _calibrated(n, k, seed=n + k, temperature=0.7)
    nu = 0.37
    uq = kernel_calibration_error(y, P, bandwidth=nu, labels=np.arange(k))
    ul = kernel_calibration_error(
        y, P, estimator="linear", bandwidth=nu, labels=np.arange(k)
    )
    assert uq == pytest.approx(_reference_uq(y, P, nu), rel=1e-12, abs=1e-14)
    assert ul == pytest.approx(_reference_ul(y, P, nu), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_blocks_do_not_change_the_quadratic_sum(block):
    y, P = _calibrated(30, 3, seed=1, temperature=1.3)
    expected = _reference_uq(y, P, 0.5) * (30 * 29 / 2)
    got = quadratic_sums(P, y[:, None], 0.5, block=block)[0]
    assert got == pytest.approx(expected, rel=1e-12)


def test_several_blocks_through_the_public_function():
    """n = 700 spans three blocks of 256 rows: against a full-matrix
    reference (vectorised, the same definition)."""
    y, P = _calibrated(700, 3, seed=2, temperature=1.4)
    nu = median_bandwidth(P)
    D = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(-1))
    R = np.eye(3)[y] - P
    H = np.exp(-D / nu) * (R @ R.T)
    expected = H[np.triu_indices(700, 1)].mean()
    assert kernel_calibration_error(y, P) == pytest.approx(expected, rel=1e-12)


def test_tied_rows_get_distance_zero():
    """Repeated predictions (random forests, rounding) are at distance 0
    exactly: the kernel is 1, not exp(-3e-9 / nu) from the Gram formula."""
    rng = np.random.default_rng(3)
    base = rng.dirichlet(np.ones(3), size=4)
    P = base[rng.integers(0, 4, 60)]
    y = rng.integers(0, 3, 60)
    nu = 0.2
    assert kernel_calibration_error(y, P, bandwidth=nu) == pytest.approx(
        _reference_uq(y, P, nu), rel=1e-13
    )
    linear = kernel_calibration_error(y, P, estimator="linear", bandwidth=nu)
    assert linear == pytest.approx(_reference_ul(y, P, nu), rel=1e-13)


def test_median_bandwidth():
    _, P = _calibrated(300, 4, seed=4)
    assert median_bandwidth(P) == pytest.approx(np.median(pdist(P)), rel=1e-13)
    _, big = _calibrated(2500, 4, seed=4)  # up to 4096 rows: every pair
    assert median_bandwidth(big) == pytest.approx(np.median(pdist(big)), rel=1e-13)
    # Mostly tied rows: the median of the positive distances.
    tied = np.repeat(P[:2], [50, 1], axis=0)
    assert median_bandwidth(tied) == pytest.approx(np.linalg.norm(P[0] - P[1]))
    assert median_bandwidth(np.repeat(P[:1], 5, axis=0)) == 1.0


def _slow_median_distance(P):
    """The median of ||p_i - p_j|| over all pairs i < j, row by row."""
    return np.median(
        np.concatenate(
            [np.sqrt(((P[i + 1 :] - P[i]) ** 2).sum(axis=1)) for i in range(len(P))]
        )
    )


def test_median_bandwidth_does_not_depend_on_the_row_order():
    """Issue 30, item 7: at n = 3000 the median came from 500 rows at evenly
    spaced positions, so permuted rows gave another bandwidth and another
    SKCE (-3.1778e-05 against -3.1704e-05 here). It is now the exact median
    of the 4.5 million pairs (the slow row-by-row median), and SKCE_uq sums
    its rows in their canonical order: permuted rows give the same bits."""
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.minimum((rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
    perm = np.random.default_rng(1).permutation(n)
    by_value = np.argsort(p[:, 0])
    nu = median_bandwidth(p)
    assert nu == pytest.approx(_slow_median_distance(p), rel=1e-14)
    assert median_bandwidth(p[perm]) == nu == median_bandwidth(p[by_value])
    uq = kernel_calibration_error(y, p)
    assert kernel_calibration_error(y[perm], p[perm]) == uq
    assert kernel_calibration_error(y[by_value], p[by_value]) == uq
    assert uq == pytest.approx(
        kernel_calibration_error(y, p, bandwidth=_slow_median_distance(p)),
        rel=1e-12,
    )
    # The quadratic consistency-resampling test: the same p-value for a seed.
    a = kernel_calibration_test(
        y[:400], p[:400], estimator="quadratic", n_resamples=50, random_state=0
    )
    sub = perm[perm < 400]
    b = kernel_calibration_test(
        y[sub], p[sub], estimator="quadratic", n_resamples=50, random_state=0
    )
    assert (a.statistic, a.pvalue) == (b.statistic, b.pvalue)


def test_median_bandwidth_subsample_above_median_rows(monkeypatch):
    """Above MEDIAN_ROWS rows the median is over the rows at evenly spaced
    ranks of the rows sorted by value (Python's tuple order here), so it
    does not depend on their order either."""
    monkeypatch.setattr(core, "MEDIAN_ROWS", 40)
    _, P = _calibrated(301, 4, seed=14)
    P[5] = P[17]  # a tied row
    ranked = sorted(map(tuple, P))
    picks = [round(i * 300 / 39) for i in range(40)]
    expected = _slow_median_distance(np.array([ranked[i] for i in picks]))
    nu = median_bandwidth(P)
    assert nu == pytest.approx(expected, rel=1e-14)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(301)
        assert median_bandwidth(P[perm]) == nu


def test_median_bandwidth_is_the_default():
    y, P = _calibrated(200, 3, seed=5, temperature=0.8)
    nu = np.median(pdist(P))
    for est in ("quadratic", "linear"):
        assert kernel_calibration_error(y, P, estimator=est) == pytest.approx(
            kernel_calibration_error(y, P, estimator=est, bandwidth=nu), rel=1e-12
        )


def test_quadratic_estimator_is_unbiased_under_calibration():
    """Mean of SKCE_uq over 400 calibrated samples of 60 rows is 0 within
    4 standard errors; with the same labels, the predictions at temperature
    1.5 score higher by more than 4 standard errors of the differences."""
    values, shifted = np.array(
        [
            [
                kernel_calibration_error(*_calibrated(60, 3, seed=s, temperature=t))
                for t in (1.0, 1.5)
            ]
            for s in range(400)
        ]
    ).T
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean()) < 4 * se
    diff = shifted - values
    assert diff.mean() > 4 * diff.std(ddof=1) / np.sqrt(diff.size)


def test_linear_estimator_merges_over_even_chunks():
    """SKCE_ul is a mean over disjoint pairs: the pair sums of chunks of
    even length, with a fixed bandwidth, add up to the full sum."""
    y, P = _calibrated(1001, 3, seed=6, temperature=1.2)
    nu = 0.4
    full = kernel_calibration_error(y, P, estimator="linear", bandwidth=nu)
    edges = [0, 200, 206, 650, 1001]  # even lengths, the last one odd
    total = pairs = 0
    for a, b in itertools.pairwise(edges):
        m = (b - a) // 2
        part = kernel_calibration_error(
            y[a:b], P[a:b], estimator="linear", bandwidth=nu, labels=[0, 1, 2]
        )
        total += m * part
        pairs += m
    assert pairs == 500
    assert total / pairs == pytest.approx(full, rel=1e-12)


def test_invariances():
    y, P = _calibrated(90, 3, seed=7, temperature=0.6)
    perm = np.random.default_rng(0).permutation(90)
    uq = kernel_calibration_error(y, P)
    assert kernel_calibration_error(y[perm], P[perm]) == pytest.approx(uq, rel=1e-12)
    names = np.array(["a", "b", "c"])
    assert kernel_calibration_error(names[y], P) == pytest.approx(uq, rel=1e-15)
    # Reordered columns with labels= naming the new order.
    order = [2, 0, 1]
    got = kernel_calibration_error(y, P[:, order], labels=order)
    assert got == pytest.approx(uq, rel=1e-12)
    # Binary: 1-D y_proba is the two columns (1 - p, p).
    yb, Pb = _calibrated(80, 2, seed=8, temperature=0.7)
    for est in ("quadratic", "linear"):
        assert kernel_calibration_error(yb, Pb[:, 1], estimator=est) == pytest.approx(
            kernel_calibration_error(yb, Pb, estimator=est), rel=1e-12
        )
    # float32 input is computed in float64.
    got32 = kernel_calibration_error(y, P.astype(np.float32))
    assert got32 == pytest.approx(uq, rel=1e-5, abs=1e-7)


def test_asymptotic_linear_test_is_the_normal_approximation():
    y, P = _calibrated(499, 3, seed=9, temperature=1.3)
    nu = np.median(pdist(P))
    terms = np.array([_h(y, P, 2 * i, 2 * i + 1, nu) for i in range(249)])
    z = np.sqrt(249) * terms.mean() / terms.std(ddof=1)
    r = kernel_calibration_test(y, P)
    assert isinstance(r, CalibrationTestResult)
    assert r.statistic == pytest.approx(terms.mean(), rel=1e-12)
    assert r.pvalue == pytest.approx(norm.sf(z), rel=1e-10)
    assert r.n_samples == 499 and r.df is None
    assert r.effect == pytest.approx(np.sqrt(max(terms.mean(), 0)))
    assert "normal" in r.method


@pytest.mark.parametrize("estimator", ["quadratic", "linear"])
def test_consistency_resampling_recomputes_the_estimator(estimator):
    """The resampled statistics are the estimator on labels drawn from the
    predictions (the batched code against one call per draw)."""
    y, P = _calibrated(41, 3, seed=10)
    nu = 0.3
    resample = resampled_quadratic if estimator == "quadratic" else resampled_linear
    null = resample(P, nu, 25, np.random.RandomState(0))
    Y = draw_labels(P, 25, np.random.RandomState(0))
    expected = [
        kernel_calibration_error(
            Y[:, b], P, estimator=estimator, bandwidth=nu, labels=[0, 1, 2]
        )
        for b in range(25)
    ]
    np.testing.assert_allclose(null, expected, rtol=1e-12, atol=1e-15)
    r = kernel_calibration_test(
        y,
        P,
        estimator=estimator,
        method="bootstrap",
        n_resamples=25,
        bandwidth=nu,
        random_state=0,
    )
    stat = kernel_calibration_error(y, P, estimator=estimator, bandwidth=nu)
    assert r.statistic == stat
    if estimator == "quadratic":  # the draws go to the rows sorted by (p, y)
        order = sorted(range(41), key=lambda i: (*P[i], y[i]))
        Y = draw_labels(P[order], 25, np.random.RandomState(0))
        expected = [
            kernel_calibration_error(Y[:, b], P[order], bandwidth=nu, labels=[0, 1, 2])
            for b in range(25)
        ]
    assert r.pvalue == (1 + np.sum(np.asarray(expected) >= stat)) / 26


@pytest.mark.parametrize("entries", [768, 1 << 22])
def test_resampling_batches_and_blocks(monkeypatch, entries):
    """Three blocks of rows and, with a small temporary budget, batches of
    a few draws and residual blocks recomputed instead of kept."""
    import skcalib.metrics._kernel_core as core

    monkeypatch.setattr(core, "RESAMPLE_ENTRIES", entries)
    _, P = _calibrated(600, 3, seed=13)
    null = resampled_quadratic(P, 0.4, 7, np.random.RandomState(1))
    if entries < 4096:  # one draw per batch: the same random stream
        Y = np.column_stack(
            [draw_labels(P, 1, rng)[:, 0] for rng in [np.random.RandomState(1)] * 7]
        )
    else:
        Y = draw_labels(P, 7, np.random.RandomState(1))
    expected = quadratic_sums(P, Y, 0.4, block=600) / (600 * 599 / 2)
    np.testing.assert_allclose(null, expected, rtol=1e-12, atol=1e-15)


def test_draw_labels_follow_the_predictions():
    P = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    Y = draw_labels(P, 200_000, np.random.default_rng(0))
    freq = np.stack([(Y == c).mean(axis=1) for c in range(3)], axis=1)
    np.testing.assert_allclose(freq, P, atol=4 * np.sqrt(0.25 / 200_000))
    assert np.all(Y[1] == 1) and not np.any(Y[2] == 1)


def test_bootstrap_test_rejects_miscalibration_and_is_reproducible():
    y, P = _calibrated(300, 3, seed=11, temperature=2.0)
    a = kernel_calibration_test(y, P, estimator="quadratic", random_state=3)
    b = kernel_calibration_test(y, P, estimator="quadratic", random_state=3)
    assert a.pvalue == b.pvalue and a.pvalue < 0.01
    assert "consistency resampling" in a.method


def test_errors():
    y, P = _calibrated(20, 3, seed=12)
    with pytest.raises(ValueError, match="sample_weight is not supported"):
        kernel_calibration_error(y, P, sample_weight=np.ones(20))
    with pytest.raises(ValueError, match="method='bootstrap'"):
        kernel_calibration_test(y, P, estimator="biased", method="asymptotic")
    with pytest.raises(ValueError, match="at least 4 samples"):
        kernel_calibration_test(y[:3], P[:3], labels=[0, 1, 2])
    with pytest.raises(ValueError, match="at least 2 samples"):
        kernel_calibration_error(y[:1], P[:1], labels=[0, 1, 2])
    with pytest.raises(ValueError, match="labels="):
        kernel_calibration_error(np.zeros(20, int), P)
    with pytest.raises(ValueError, match="bandwidth"):
        kernel_calibration_error(y, P, bandwidth=0.0)
