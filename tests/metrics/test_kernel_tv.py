"""The estimators, kernel and p-values of Widmann et al. (2019) (issue 36).

The total variation kernel ``exp(-TV(p, q) / gamma) I_K`` with the median
of the experiments (over the whole distance matrix, its zero diagonal
included, as ``median(pairwise(TotalVariation(), predictions))`` of the
paper's code computes it), the biased estimator SKCE_b, the paper's names
of the estimators, the distribution-free p-values and the bootstrap of the
degenerate SKCE_uq. The references are the definitions written as plain
double loops; the hand-computed two-sample cases mirror those of the tests
of CalibrationErrors.jl (``test/skce/biased.jl``: 0, 0.5, ``1 - k``, 0.5).
"""

import itertools

import numpy as np
import pytest
from scipy.stats import kstest

import skcalib.metrics._kernel_core as core
from skcalib.metrics import kernel_calibration_error, kernel_calibration_test
from skcalib.metrics._kernel_core import (
    draw_labels,
    median_bandwidth,
    quadratic_sums,
    resampled_quadratic,
)
from skcalib.metrics._kernel_pvalues import bootstrap_quadratic_null

LABELS = [0, 1, 2]


def _calibrated(n, k=3, *, seed=0, temperature=1.0):
    """Dirichlet(1) predictions with labels drawn from them, returned as
    ``softmax(log p / temperature)`` (calibrated at 1)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.minimum((rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
    z = np.log(p) / temperature
    q = np.exp(z - z.max(axis=1, keepdims=True))
    return y, q / q.sum(axis=1, keepdims=True)


def _tv(p, q):
    return sum(abs(a - b) for a, b in zip(p, q, strict=True)) / 2


def _h(y, P, i, j, gamma, distance=_tv):
    k = P.shape[1]
    kernel = np.exp(-distance(P[i], P[j]) / gamma) * np.eye(k)
    return (np.eye(k)[y[i]] - P[i]) @ kernel @ (np.eye(k)[y[j]] - P[j])


def _slow_b(y, P, gamma):
    n = len(y)
    return sum(_h(y, P, i, j, gamma) for i in range(n) for j in range(n)) / n**2


def _slow_uq(y, P, gamma):
    n = len(y)
    pairs = itertools.combinations(range(n), 2)
    return sum(_h(y, P, i, j, gamma) for i, j in pairs) / (n * (n - 1) / 2)


def _slow_ul(y, P, gamma):
    m = len(y) // 2
    return sum(_h(y, P, 2 * i, 2 * i + 1, gamma) for i in range(m)) / m


def _slow_medians(P, distance=_tv):
    """The median over the pairs i < j, and over the whole n x n matrix."""
    n = len(P)
    matrix = [[distance(P[i], P[j]) for j in range(n)] for i in range(n)]
    upper = [matrix[i][j] for i in range(n) for j in range(i + 1, n)]
    return np.median(upper), np.median(matrix)


@pytest.mark.parametrize("n", [2, 3, 17, 40])
@pytest.mark.parametrize("k", [2, 4])
def test_tv_estimators_equal_the_double_loop(n, k):
    y, P = _calibrated(n, k, seed=n + k, temperature=0.7)
    gamma = 0.29
    options = dict(kernel="tv", bandwidth=gamma, labels=np.arange(k))
    for estimator, slow in (
        ("SKCE_b", _slow_b),
        ("SKCE_uq", _slow_uq),
        ("SKCE_ul", _slow_ul),
    ):
        got = kernel_calibration_error(y, P, estimator=estimator, **options)
        assert got == pytest.approx(slow(y, P, gamma), rel=1e-12, abs=1e-14)


def test_median_of_the_experiments_includes_the_diagonal():
    """The paper's gamma is the median of all n^2 entries (n zeros on the
    diagonal, each pair twice): below the median over the pairs i < j."""
    for n in (2, 3, 7, 50, 51):
        _, P = _calibrated(n, 4, seed=n)
        pairs, whole = _slow_medians(P)
        assert median_bandwidth(P, "tv") == pytest.approx(pairs, rel=1e-13)
        assert median_bandwidth(P, "tv", diagonal=True) == pytest.approx(
            whole, rel=1e-13
        )
        euclid = _slow_medians(P, lambda a, b: np.sqrt(np.sum((a - b) ** 2)))
        assert median_bandwidth(P, diagonal=True) == pytest.approx(euclid[1])
        if n > 2:
            assert whole < pairs
    # Through the public function: bandwidth="median_all" is that gamma.
    y, P = _calibrated(60, 3, seed=3, temperature=1.3)
    whole = _slow_medians(P)[1]
    got = kernel_calibration_error(y, P, kernel="tv", bandwidth="median_all")
    assert got == pytest.approx(_slow_uq(y, P, whole), rel=1e-12)
    got = kernel_calibration_error(y, P, kernel="tv")
    assert got == pytest.approx(_slow_uq(y, P, _slow_medians(P)[0]), rel=1e-12)


def test_two_samples_by_hand():
    """P = ([1, 0], [0, 1]): TV = 1, so gamma = 1 over the pair and 0.5
    over the matrix [[0, 1], [1, 0]]. With labels (1, 0) the residuals are
    (-1, 1) and (1, -1): h_11 = h_22 = 2, h_12 = -2 exp(-1 / gamma)."""
    P = np.array([[1.0, 0.0], [0.0, 1.0]])
    tv = dict(kernel="tv", labels=[0, 1])
    for bandwidth, gamma in (("median", 1.0), ("median_all", 0.5), (0.125, 0.125)):
        k = np.exp(-1.0 / gamma)
        opts = dict(tv, bandwidth=bandwidth)
        y = np.array([1, 0])
        assert kernel_calibration_error(
            y, P, estimator="biased", **opts
        ) == pytest.approx(1 - k)
        for est in ("unbiased_quadratic", "unbiased_linear"):
            got = kernel_calibration_error(y, P, estimator=est, **opts)
            assert got == pytest.approx(-2 * k)
        # Correct labels: 0; one wrong label: h = 2 on its own diagonal.
        assert kernel_calibration_error([0, 1], P, estimator="SKCE_b", **opts) == 0
        for y in ([0, 0], [1, 1]):
            assert kernel_calibration_error(
                y, P, estimator="SKCE_b", **opts
            ) == pytest.approx(0.5)
            assert kernel_calibration_error(y, P, estimator="SKCE_uq", **opts) == 0


def test_estimator_names():
    y, P = _calibrated(80, 3, seed=4, temperature=1.4)
    groups = (
        ("quadratic", "unbiased_quadratic", "SKCE_uq"),
        ("linear", "unbiased_linear", "SKCE_ul"),
        ("biased", "SKCE_b"),
    )
    for names in groups:
        values = {kernel_calibration_error(y, P, estimator=e) for e in names}
        assert len(values) == 1
    with pytest.raises(ValueError, match="estimator"):
        kernel_calibration_error(y, P, estimator="skce_uq")
    with pytest.raises(ValueError, match="kernel"):
        kernel_calibration_error(y, P, kernel="laplacian")


def test_biased_estimator_properties():
    """SKCE_b = ((n - 1) SKCE_uq + mean h_ii) / n: never negative, and the
    same for permuted rows (canonical order)."""
    y, P = _calibrated(300, 3, seed=5)
    for kernel in ("euclidean", "tv"):
        b = kernel_calibration_error(y, P, estimator="biased", kernel=kernel)
        uq = kernel_calibration_error(y, P, kernel=kernel)
        diagonal = np.mean(np.sum((np.eye(3)[y] - P) ** 2, axis=1))
        assert b == pytest.approx((299 * uq + diagonal) / 300, rel=1e-12)
        assert b > 0
        perm = np.random.default_rng(0).permutation(300)
        assert kernel_calibration_error(
            y[perm], P[perm], estimator="biased", kernel=kernel
        ) == pytest.approx(b, rel=1e-14)


def test_tv_blocks_and_class_chunks(monkeypatch):
    """Several row blocks and, with a small temporary, a few classes at a
    time: the same sums as one block."""
    y, P = _calibrated(70, 5, seed=6, temperature=0.8)
    whole = quadratic_sums(P, y[:, None], 0.3, block=70, metric="tv")
    monkeypatch.setattr(core, "TV_ENTRIES", 200)
    chunked = quadratic_sums(P, y[:, None], 0.3, block=16, metric="tv")
    np.testing.assert_allclose(chunked, whole, rtol=1e-12)
    expected = _slow_uq(y, P, 0.3) * (70 * 69 / 2)
    assert whole[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kernel", ["euclidean", "tv"])
def test_all_predictions_equal(kernel):
    """Every distance is 0, so the median gamma would be 0: the kernel is 1
    at any bandwidth, the bandwidth is 1.0 (documented) and the estimators
    are the pair means of the residual inner products."""
    P = np.tile([0.2, 0.5, 0.3], (9, 1))
    y = np.array([0, 1, 2, 1, 1, 0, 2, 1, 1])
    R = np.eye(3)[y] - P
    G = R @ R.T
    assert median_bandwidth(P, kernel) == 1.0
    assert median_bandwidth(P, kernel, diagonal=True) == 1.0
    for bandwidth in ("median", "median_all", 1e-3):
        opts = dict(kernel=kernel, bandwidth=bandwidth, labels=LABELS)
        uq = kernel_calibration_error(y, P, **opts)
        assert uq == pytest.approx(G[np.triu_indices(9, 1)].mean(), abs=1e-15)
        b = kernel_calibration_error(y, P, estimator="biased", **opts)
        assert b == pytest.approx(G.mean(), abs=1e-15)
        r = kernel_calibration_test(y, P, method="distribution_free", **opts)
        assert np.isfinite(r.pvalue)


def test_distribution_free_pvalues_are_the_bounds():
    y, P = _calibrated(101, 3, seed=7, temperature=2.5)
    n, B = 101, 2.0
    for estimator in ("biased", "unbiased_quadratic", "unbiased_linear"):
        r = kernel_calibration_test(
            y, P, estimator=estimator, method="distribution_free", kernel="tv"
        )
        t = r.statistic
        if estimator == "biased":
            s = max(0.0, np.sqrt(n * t / B) - 1)
            expected = np.exp(-(s**2) / 2)
        else:
            expected = np.exp(-50 * max(t, 0) ** 2 / (2 * B**2))
        assert r.pvalue == pytest.approx(expected, rel=1e-12)
        assert "distribution-free" in r.method and "SKCE_" in r.method
    # A negative estimate gets 1 (the one-sided bound is for t > 0).
    yc, Pc = _calibrated(200, 3, seed=8)
    r = kernel_calibration_test(yc, Pc, estimator="SKCE_ul", method="distribution_free")
    assert r.statistic < 0 and r.pvalue == 1.0


def test_distribution_free_rejects_gross_miscalibration():
    """Always class 0 while predicting it with probability 0.05."""
    P = np.tile([0.05, 0.5, 0.45], (600, 1))
    P[::2] = [0.05, 0.45, 0.5]
    y = np.zeros(600, dtype=int)
    for estimator in ("biased", "unbiased_quadratic", "unbiased_linear"):
        r = kernel_calibration_test(
            y, P, estimator=estimator, method="distribution_free", labels=LABELS
        )
        assert r.pvalue < 1e-3, estimator


def _pvalues(n, reps, **options):
    out = []
    for seed in range(reps):
        y, P = _calibrated(n, 3, seed=100 + seed)
        r = kernel_calibration_test(y, P, labels=LABELS, random_state=seed, **options)
        out.append(r.pvalue)
    return np.array(out)


def test_pvalues_under_calibration():
    """Distribution-free p-values are conservative (ecdf(a) <= a for every
    level a); the asymptotic ones are roughly uniform (Kolmogorov-Smirnov
    against U(0, 1) not rejected at 1%, and ecdf(0.1) within 4 binomial
    standard errors of 0.1). 200 seeds, TV kernel with the paper's
    median."""
    tv = dict(kernel="tv", bandwidth="median_all")
    levels = np.linspace(0.05, 0.95, 10)
    for estimator in ("biased", "unbiased_quadratic", "unbiased_linear"):
        p = _pvalues(100, 200, estimator=estimator, method="distribution_free", **tv)
        assert np.all(np.mean(p[:, None] <= levels, axis=0) <= levels)
    for estimator, n in (("unbiased_quadratic", 100), ("unbiased_linear", 400)):
        p = _pvalues(
            n, 200, estimator=estimator, method="asymptotic", n_resamples=199, **tv
        )
        assert kstest(p, "uniform").pvalue > 0.01, estimator
        assert abs(np.mean(p <= 0.1) - 0.1) < 4 * np.sqrt(0.09 / 200), estimator


def _slow_degenerate_bootstrap(y, P, gamma, counts):
    """U* of one bootstrap sample, straight from the definition: the mean
    over the ordered pairs of distinct draws of the centred term."""
    n = len(y)
    H = np.array([[_h(y, P, i, j, gamma) for j in range(n)] for i in range(n)])
    g = H.mean(axis=1)
    mu = H.mean()
    draws = np.repeat(np.arange(n), counts)
    total = 0.0
    for a, b in itertools.permutations(range(n), 2):
        i, j = draws[a], draws[b]
        total += H[i, j] - g[i] - g[j] + mu
    return total / (n * (n - 1))


def test_bootstrap_of_the_degenerate_statistic_is_the_definition(monkeypatch):
    y, P = _calibrated(13, 3, seed=9, temperature=1.2)
    gamma = 0.4
    monkeypatch.setattr(core, "BLOCK", 5)  # not used by the default argument
    null = bootstrap_quadratic_null(P, y, gamma, "tv", 6, np.random.RandomState(0))
    counts = np.random.RandomState(0).multinomial(13, np.full(13, 1 / 13), size=6)
    expected = [_slow_degenerate_bootstrap(y, P, gamma, c) for c in counts]
    np.testing.assert_allclose(null, expected, rtol=1e-11, atol=1e-14)


def test_bootstrap_of_the_degenerate_statistic_in_blocks_and_batches(monkeypatch):
    """Three blocks of rows and batches of two resamples give the same
    draws as one batch (the multinomial stream is drawn batch by batch, so
    compare with the batches drawn the same way)."""
    import skcalib.metrics._kernel_pvalues as pv

    y, P = _calibrated(600, 3, seed=10)
    rng = np.random.RandomState(3)
    one = bootstrap_quadratic_null(P, y, 0.3, "euclidean", 4, rng)
    monkeypatch.setattr(pv, "RESAMPLE_ENTRIES", 1200)
    two = bootstrap_quadratic_null(P, y, 0.3, "euclidean", 4, np.random.RandomState(3))
    # Same stream: multinomial draws of size 2 twice equal one draw of 4.
    np.testing.assert_allclose(two, one, rtol=1e-10, atol=1e-14)


def test_asymptotic_quadratic_test_end_to_end():
    y, P = _calibrated(150, 3, seed=11, temperature=0.3)
    r = kernel_calibration_test(
        y, P, estimator="SKCE_uq", method="asymptotic", kernel="tv", random_state=0
    )
    rows = np.lexsort((y, *P.T[::-1]))
    null = bootstrap_quadratic_null(
        P[rows],
        y[rows],
        median_bandwidth(P, "tv"),
        "tv",
        1000,
        np.random.RandomState(0),
    )
    assert r.statistic == kernel_calibration_error(y, P, kernel="tv")
    assert r.pvalue == (1 + np.sum(null >= r.statistic)) / 1001
    assert r.pvalue < 0.01 and "degenerate U-statistic" in r.method


def test_biased_consistency_resampling_recomputes_the_estimator():
    y, P = _calibrated(41, 3, seed=12)
    null = resampled_quadratic(P, 0.3, 9, np.random.RandomState(0), "tv", True)
    Y = draw_labels(P, 9, np.random.RandomState(0))
    expected = [
        kernel_calibration_error(
            Y[:, b], P, estimator="biased", kernel="tv", bandwidth=0.3, labels=LABELS
        )
        for b in range(9)
    ]
    np.testing.assert_allclose(null, expected, rtol=1e-12)
    r = kernel_calibration_test(
        y, P, estimator="biased", n_resamples=30, random_state=0
    )
    assert "SKCE_b" in r.method and "consistency resampling" in r.method
    with pytest.raises(ValueError, match="distribution_free"):
        kernel_calibration_test(y, P, estimator="SKCE_b", method="asymptotic")
