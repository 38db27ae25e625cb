"""reliability_curve: Clopper-Pearson intervals, the bootstrap band, n_bins rules."""

import numpy as np
import pytest
from scipy.stats import beta, binom, binomtest

from skcalib.metrics import CalibrationAccumulator, reliability_curve
from skcalib.metrics._curve_band import clopper_pearson_interval


def _calibrated(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return (rng.uniform(size=n) < p).astype(int), p


# ------------------------------------------------------------ Clopper-Pearson
@pytest.mark.parametrize("level", [0.5, 0.95, 0.99])
def test_clopper_pearson_matches_scipy_binomtest(level):
    pairs = [(k, n) for n in (1, 2, 3, 7, 10, 31) for k in range(n + 1)]
    pairs += [(k, n) for n in (100, 997) for k in (0, 1, 2, 17, n // 2, n - 1, n)]
    k, n = np.array(pairs, dtype=float).T
    lower, upper = clopper_pearson_interval(k, n, level)
    for kk, nn, lo, hi in zip(k, n, lower, upper, strict=True):
        ref = binomtest(int(kk), int(nn)).proportion_ci(level, method="exact")
        assert lo == pytest.approx(ref.low, abs=1e-10)
        assert hi == pytest.approx(ref.high, abs=1e-10)


def test_curve_clopper_pearson_bins_match_binomtest():
    # Bin j of 5 uniform bins holds n_j samples, k_j of them positive.
    counts = [(0, 4), (3, 9), (6, 6), (1, 1), (12, 25)]
    p = np.concatenate([np.full(n, 0.1 + 0.2 * j) for j, (_, n) in enumerate(counts)])
    y = np.concatenate([[1] * k + [0] * (n - k) for k, n in counts])
    c = reliability_curve(y, p, n_bins=5, kind="classwise", interval="clopper-pearson")
    assert c.interval == "clopper-pearson"
    for j, (k, n) in enumerate(counts):
        ref = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert c.lower[j] == pytest.approx(ref.low, abs=1e-12)
        assert c.upper[j] == pytest.approx(ref.high, abs=1e-12)
    assert c.lower[0] == 0.0 and c.upper[2] == 1.0 and c.upper[3] == 1.0
    # Clopper-Pearson holds the Wilson interval of the same bin (n >= 2).
    w = reliability_curve(y, p, n_bins=5, kind="classwise")
    assert w.interval == "wilson"
    assert np.all(c.lower[[1, 4]] < w.lower[[1, 4]])
    assert np.all(c.upper[[1, 4]] > w.upper[[1, 4]])


def test_clopper_pearson_with_weights_uses_effective_counts():
    y = np.array([1, 1, 0, 0, 0, 1, 0, 0])
    p = np.full(8, 0.4)
    w = np.array([3.0, 1.0, 1.0, 2.0, 1.0, 1.0, 0.5, 2.5])
    c = reliability_curve(
        y, p, n_bins=1, kind="classwise", sample_weight=w, interval="clopper-pearson"
    )
    n_eff = w.sum() ** 2 / (w**2).sum()
    k = (w * y).sum() / w.sum() * n_eff
    assert c.lower[0] == pytest.approx(beta.ppf(0.025, k, n_eff - k + 1), rel=1e-10)
    assert c.upper[0] == pytest.approx(beta.ppf(0.975, k + 1, n_eff - k), rel=1e-10)
    # Constant weights: the unweighted interval.
    c7 = reliability_curve(
        y, p, n_bins=1, kind="classwise", sample_weight=np.full(8, 7.0),
        interval="clopper-pearson",
    )  # fmt: skip
    ref = binomtest(3, 8).proportion_ci(0.95, method="exact")
    assert (c7.lower[0], c7.upper[0]) == pytest.approx((ref.low, ref.high), abs=1e-12)


@pytest.mark.parametrize("n", [1, 5, 20, 60])
def test_clopper_pearson_exact_coverage_is_at_least_nominal(n):
    # Coverage at p: the binomial probability of the k whose interval holds p.
    k = np.arange(n + 1, dtype=float)
    lower, upper = clopper_pearson_interval(k, np.full(n + 1, float(n)), 0.9)
    p = np.linspace(0.001, 0.999, 999)
    inside = (lower[None, :] <= p[:, None]) & (p[:, None] <= upper[None, :])
    coverage = (binom.pmf(k[None, :], n, p[:, None]) * inside).sum(axis=1)
    assert coverage.min() >= 0.9 - 1e-9


def test_clopper_pearson_coverage_simulation():
    # Seeded: 400 data sets of 10 bins of 20 samples whose true frequency is
    # the bin's probability; per-bin coverage >= nominal within MC error.
    values = (np.arange(10) + 0.5) / 10
    p = np.repeat(values, 20)
    rng = np.random.default_rng(7)
    hits = np.zeros(10)
    for _ in range(400):
        y = (rng.uniform(size=p.size) < p).astype(int)
        c = reliability_curve(
            y, p, n_bins=10, kind="classwise", labels=[0, 1],
            interval="clopper-pearson",
        )  # fmt: skip
        hits += (c.lower <= values) & (values <= c.upper)
    coverage = hits / 400
    assert coverage.mean() >= 0.95
    assert coverage.min() >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 400)


def test_isotonic_curve_takes_the_interval():
    y, p = _calibrated(300, 0)
    c = reliability_curve(
        y, p, strategy="isotonic", kind="classwise", interval="clopper-pearson"
    )
    assert c.interval == "clopper-pearson" and c.band == "consistency"
    n = c.n_samples
    k = np.round(c.accuracy * n)
    lower, upper = clopper_pearson_interval(k, n, 0.95)
    np.testing.assert_allclose(c.lower, lower, atol=1e-10)
    np.testing.assert_allclose(c.upper, upper, atol=1e-10)


def test_accumulator_curve_takes_the_interval():
    y, p = _calibrated(500, 1)
    acc = CalibrationAccumulator(n_bins=8).update(y, p)
    got = acc.reliability_curve(kind="classwise", interval="clopper-pearson")
    ref = reliability_curve(
        y, p, n_bins=8, kind="classwise", interval="clopper-pearson"
    )
    np.testing.assert_allclose(got.lower, ref.lower, atol=1e-12)
    np.testing.assert_allclose(got.upper, ref.upper, atol=1e-12)
    assert got.n_bins == 8 and got.interval == "clopper-pearson"


# --------------------------------------------------------------- the band
@pytest.mark.parametrize("band", ["pointwise", "simultaneous"])
def test_band_is_reproducible_and_seeded(band):
    y, p = _calibrated(800, 2)
    args = dict(n_bins=10, kind="classwise", band=band, n_resamples=200)
    a = reliability_curve(y, p, random_state=3, **args)
    b = reliability_curve(y, p, random_state=3, **args)
    c = reliability_curve(y, p, random_state=4, **args)
    np.testing.assert_array_equal(a.band_lower, b.band_lower)
    np.testing.assert_array_equal(a.band_upper, b.band_upper)
    assert not np.array_equal(a.band_upper, c.band_upper)
    assert a.band == band
    assert np.all(a.band_lower <= a.accuracy) and np.all(a.accuracy <= a.band_upper)
    assert not a.band_lower.flags.writeable
    plain = reliability_curve(y, p, n_bins=10, kind="classwise")
    assert plain.band is None and plain.band_lower is None


def test_simultaneous_band_is_wider_than_pointwise():
    y, p = _calibrated(2000, 5)
    args = dict(n_bins=10, kind="classwise", n_resamples=500)
    pw = reliability_curve(y, p, band="pointwise", **args)
    sim = reliability_curve(y, p, band="simultaneous", **args)
    assert np.all(sim.band_upper - sim.band_lower > pw.band_upper - pw.band_lower)


def test_pointwise_band_matches_a_loop_over_row_resamples():
    # Weighted rows: the band against an explicit bootstrap (one index draw
    # per resample, per-bin sums by hand), same number of resamples.
    rng = np.random.default_rng(11)
    n, m, reps = 600, 6, 3000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    w = rng.exponential(size=n)
    c = reliability_curve(
        y, p, n_bins=m, kind="classwise", sample_weight=w, band="pointwise",
        n_resamples=reps, random_state=0,
    )  # fmt: skip
    bins = np.minimum((p * m).astype(int), m - 1)  # no p on an edge here
    freq = np.empty((reps, m))
    for r in range(reps):
        i = rng.integers(0, n, size=n)
        for j in range(m):
            sel = i[bins[i] == j]
            freq[r, j] = (w[sel] * y[sel]).sum() / w[sel].sum()
    lo, hi = np.quantile(freq, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(c.band_lower, lo, atol=0.02)
    np.testing.assert_allclose(c.band_upper, hi, atol=0.02)


@pytest.mark.slow
def test_band_covers_the_true_curve_at_the_nominal_rate():
    # Calibrated data, p ~ U(0, 1): the true frequency of a uniform bin is
    # its midpoint. 200 data sets; 95% bands.
    m, reps = 10, 200
    truth = (np.arange(m) + 0.5) / m
    whole, pointwise = 0, np.zeros(m)
    for r in range(reps):
        y, p = _calibrated(1000, 100 + r)
        args = dict(n_bins=m, kind="classwise", n_resamples=300, random_state=r)
        sim = reliability_curve(y, p, band="simultaneous", **args)
        pw = reliability_curve(y, p, band="pointwise", **args)
        whole += np.all((sim.band_lower <= truth) & (truth <= sim.band_upper))
        pointwise += (pw.band_lower <= truth) & (truth <= pw.band_upper)
    assert 0.90 <= whole / reps <= 0.99
    assert 0.92 <= (pointwise / reps).mean() <= 0.975


def test_simultaneous_band_does_not_collapse_on_all_equal_bins():
    # A bin whose outcomes are all 0: the pointwise band has zero width
    # there, the simultaneous one a width set by the bin's size.
    p = np.concatenate([np.full(30, 0.05), np.linspace(0.3, 0.95, 300)])
    rng = np.random.default_rng(0)
    y = np.concatenate([np.zeros(30, int), (rng.uniform(size=300) < p[30:])])
    args = dict(n_bins=5, kind="classwise", n_resamples=300)
    pw = reliability_curve(y, p, band="pointwise", **args)
    sim = reliability_curve(y, p, band="simultaneous", **args)
    assert pw.band_lower[0] == pw.band_upper[0] == 0.0
    assert sim.band_lower[0] == 0.0 and 0.02 < sim.band_upper[0] < 0.2


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(strategy="quantile", kind="confidence"),
        dict(strategy="uniform", kind="top_label", class_index=2),
        dict(strategy="quantile", kind="classwise", class_index=0),
    ],
)
def test_band_on_fixed_edges_of_every_kind(kwargs):
    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.ones(3), size=900)
    y = (rng.random(900)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
    w = rng.uniform(0.5, 2.0, size=900)
    for weight in (None, w):
        c = reliability_curve(
            y, proba, n_bins=8, sample_weight=weight, band="simultaneous",
            n_resamples=100, **kwargs,
        )  # fmt: skip
        filled = c.nonempty
        assert c.band_lower.shape == c.accuracy.shape
        assert np.all(c.band_lower[filled] <= c.accuracy[filled])
        assert np.all(c.accuracy[filled] <= c.band_upper[filled])
        assert np.all(np.isnan(c.band_lower[~filled]))


def test_band_errors():
    y, p = _calibrated(100, 0)
    with pytest.raises(ValueError, match="consistency band"):
        reliability_curve(y, p, strategy="isotonic", band="pointwise")
    with pytest.raises(ValueError, match="n_resamples >= 1"):
        reliability_curve(y, p, band="pointwise", n_resamples=0)
    with pytest.raises(ValueError, match="band"):
        reliability_curve(y, p, band="everywhere")


def test_band_refuses_dask():
    da = pytest.importorskip("dask.array")
    y, p = _calibrated(200, 0)
    with pytest.raises(TypeError, match="in-memory"):
        reliability_curve(
            da.from_array(y, chunks=50), da.from_array(p, chunks=50), band="pointwise"
        )
    with pytest.raises(TypeError, match="pass an int"):
        reliability_curve(
            da.from_array(y, chunks=50), da.from_array(p, chunks=50), n_bins="sqrt"
        )


# ------------------------------------------------------------- n_bins rules
@pytest.mark.parametrize("rule", ["sqrt", "sturges", "rice"])
@pytest.mark.parametrize("n", [2, 9, 100, 1000, 4321])
def test_n_bins_rule_is_numpys_count(rule, n):
    y, p = _calibrated(n, 0)
    p[:2] = [0.0, 1.0]  # numpy's rule on data of range 1
    expected = np.histogram_bin_edges(p, bins=rule).size - 1
    c = reliability_curve(y, p, n_bins=rule, kind="classwise", labels=[0, 1])
    assert c.n_bins == expected == c.edges.size - 1


def test_n_bins_rule_counts_the_rows_binned():
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(3), size=1000)
    y = rng.integers(0, 3, size=1000)
    w = np.where(np.arange(1000) < 400, 0.0, 1.0)  # 600 rows of weight > 0
    c = reliability_curve(y, proba, n_bins="sqrt", sample_weight=w)
    assert c.n_bins == int(np.ceil(np.sqrt(600)))
    k = int(np.count_nonzero(proba.argmax(axis=1) == 1))
    c = reliability_curve(y, proba, n_bins="sturges", kind="top_label", class_index=1)
    assert c.n_bins == int(np.ceil(np.log2(k))) + 1
    assert reliability_curve(y, proba, n_bins=7).n_bins == 7
    assert reliability_curve(y, proba, strategy="isotonic").n_bins is None


@pytest.mark.parametrize("rule", ["fd", "auto", "scott", "doane", "stone"])
def test_spread_based_rules_are_refused(rule):
    y, p = _calibrated(100, 0)
    with pytest.raises(ValueError, match="n_bins"):
        reliability_curve(y, p, n_bins=rule)
