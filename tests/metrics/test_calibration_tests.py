"""Calibration tests (Spiegelhalter, Hosmer-Lemeshow, cumulative KS/Kuiper)
and the KS calibration error.

References: MAPIE 1.6 (``mapie.metrics.calibration``) for the Spiegelhalter,
KS and Kuiper p-values; scipy's chi-squared for Hosmer-Lemeshow; mpmath
(40 digits) for the tails of the Brownian-motion laws.
"""

import dataclasses

import numpy as np
import pytest
from scipy.stats import chi2

from skcalib.metrics import (
    CalibrationTestResult,
    cumulative_calibration_test,
    hosmer_lemeshow_test,
    ks_calibration_error,
    spiegelhalter_test,
)
from skcalib.metrics._calibration_tests import adjust_pvalues
from skcalib.metrics._calibration_tests_cumulative import (
    cumulative_summary,
    kolmogorov_sf,
    kuiper_sf,
    merge_prefix_summaries,
)

TESTS = [
    spiegelhalter_test,
    hosmer_lemeshow_test,
    lambda y, p, **kw: cumulative_calibration_test(y, p, statistic="ks", **kw),
    lambda y, p, **kw: cumulative_calibration_test(y, p, statistic="kuiper", **kw),
]


def _binary(n=400, power=1.0, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, size=n)
    y = (rng.uniform(size=n) < p**power).astype(int)
    return y, p


def _no_jitter(monkeypatch):
    mc = pytest.importorskip("mapie.metrics.calibration")
    monkeypatch.setattr(mc, "add_jitter", lambda x, **kwargs: np.asarray(x))
    return mc


@pytest.mark.parametrize("n, power", [(6, 1.0), (50, 1.3), (1000, 1.0), (1000, 2.0)])
def test_spiegelhalter_matches_mapie(n, power):
    mc = pytest.importorskip("mapie.metrics.calibration")
    y, p = _binary(n, power)
    greater = spiegelhalter_test(y, p, alternative="greater")
    assert greater.statistic == pytest.approx(
        mc.spiegelhalter_statistic(y, p), rel=1e-12
    )
    assert abs(greater.pvalue - mc.spiegelhalter_p_value(y, p)) < 1e-10
    # MAPIE's p-value is one-sided; the default is two-sided.
    one = mc.spiegelhalter_p_value(y, p)
    two = spiegelhalter_test(y, p).pvalue
    assert two == pytest.approx(2 * min(one, 1 - one), abs=1e-12)


@pytest.mark.parametrize("n, power", [(50, 1.3), (300, 1.0), (1000, 2.0)])
def test_ks_matches_mapie_without_jitter(monkeypatch, n, power):
    mc = _no_jitter(monkeypatch)
    y, p = _binary(n, power, seed=n)
    r = cumulative_calibration_test(y, p, statistic="ks")
    assert r.statistic == pytest.approx(
        mc.kolmogorov_smirnov_statistic(y, p), rel=1e-12
    )
    assert abs(r.pvalue - mc.kolmogorov_smirnov_p_value(y, p)) < 1e-10
    # The unscaled statistic: MAPIE's largest absolute cumulative difference.
    gap = np.abs(mc.cumulative_differences(y, p)).max()
    assert r.effect == pytest.approx(gap, rel=1e-12)
    assert r.reject(r.pvalue) and not r.reject(r.pvalue / 2)


@pytest.mark.parametrize("n, power", [(50, 1.3), (300, 1.0), (1000, 2.0), (6, 1.0)])
def test_kuiper_matches_mapie_without_jitter(monkeypatch, n, power):
    mc = _no_jitter(monkeypatch)
    y, p = _binary(n, power, seed=n)
    r = cumulative_calibration_test(y, p, statistic="kuiper")
    c = mc.cumulative_differences(y, p)
    sigma = mc.length_scale(p)
    # The range includes C_0 = 0 here (a Brownian motion starts at 0);
    # MAPIE's does not. The same when the cumulative differences cross 0.
    expected = (max(0.0, c.max()) - min(0.0, c.min())) / sigma
    assert r.statistic == pytest.approx(expected, rel=1e-12)
    assert abs(r.pvalue - (1 - mc.kuiper_cdf(expected))) < 1e-10
    if c.min() <= 0 <= c.max():
        assert abs(r.pvalue - mc.kuiper_p_value(y, p)) < 1e-10
    else:
        assert r.statistic > mc.kuiper_statistic(y, p)


def test_mapie_jitter_is_the_only_other_difference():
    """MAPIE moves each score by a relative 1e-8 jitter (random_state=1)."""
    mc = pytest.importorskip("mapie.metrics.calibration")
    y, p = _binary(500, 1.5, seed=3)
    r = cumulative_calibration_test(y, p, statistic="ks")
    assert r.statistic == pytest.approx(mc.kolmogorov_smirnov_statistic(y, p), rel=1e-6)
    assert r.statistic != mc.kolmogorov_smirnov_statistic(y, p)


@pytest.mark.parametrize("x", [0.3, 0.9, 1.0, 1.7, 3.0, 6.0, 9.0])
def test_brownian_tails_against_mpmath(x):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    xs = mp.mpf(x)
    ks = 4 * mp.nsum(lambda j: (-1) ** j * mp.ncdf(-(2 * j + 1) * xs), [0, mp.inf])
    ku = 8 * mp.nsum(lambda k: (-1) ** (k - 1) * k * mp.ncdf(-k * xs), [1, mp.inf])
    assert kolmogorov_sf(x)[0] == pytest.approx(float(ks), rel=1e-9, abs=1e-15)
    assert kuiper_sf(x)[0] == pytest.approx(float(ku), rel=1e-9, abs=1e-15)


def test_brownian_tails_are_continuous_at_the_switch():
    x = np.array([1 - 1e-12, 1.0])
    assert np.ptp(kolmogorov_sf(x)) < 1e-11
    assert np.ptp(kuiper_sf(x)) < 1e-11


def test_kolmogorov_is_not_the_bridge_law():
    """The endpoint is free: P(max|B| > x) is about twice kstwobign's tail."""
    from scipy.stats import kstwobign

    assert kolmogorov_sf(2.0)[0] == pytest.approx(0.0910005, abs=1e-7)
    assert kstwobign.sf(2.0) == pytest.approx(0.00067, abs=1e-5)


def test_hosmer_lemeshow_by_hand():
    y, p = _binary(1000, 1.4, seed=2)
    r = hosmer_lemeshow_test(y, p, ddof=2)
    # Deciles of risk: the inverted-CDF quantiles at the levels k / 10
    # (the shared equal-mass bins), right-closed groups.
    levels = np.arange(1, 10) / 10
    edges = np.quantile(p, levels, method="inverted_cdf")
    group = np.searchsorted(edges, p, side="left")
    stat = 0.0
    for g in range(10):
        o, e, n = y[group == g].sum(), p[group == g].sum(), (group == g).sum()
        stat += (o - e) ** 2 / (e * (1 - e / n))
    assert r.statistic == pytest.approx(stat, rel=1e-12)
    assert r.df == 8
    assert r.pvalue == pytest.approx(chi2.sf(stat, 8), rel=1e-12)
    r0 = hosmer_lemeshow_test(y, p)  # held-out predictions: df = groups
    assert r0.df == 10 and r0.pvalue == pytest.approx(chi2.sf(stat, 10), rel=1e-12)


def test_hosmer_lemeshow_ties_and_too_few_groups():
    y = np.array([0, 1, 0, 1, 1, 0, 1, 1])
    p = np.array([0.2, 0.2, 0.2, 0.2, 0.7, 0.7, 0.7, 0.7])
    r = hosmer_lemeshow_test(y, p)  # two groups: ties kept whole
    assert r.df == 2
    stat = (2 - 0.8) ** 2 / (0.8 * 0.8) + (3 - 2.8) ** 2 / (2.8 * 0.3)
    assert r.statistic == pytest.approx(stat)
    with pytest.raises(ValueError, match="no degree of freedom"):
        hosmer_lemeshow_test(y, p, ddof=2)


@pytest.mark.parametrize("test", TESTS)
def test_weights_scale_zero_and_order(test):
    y, p = _binary(300, 1.2, seed=5)
    p = np.round(p, 2)  # ties
    w = np.random.default_rng(1).integers(0, 4, y.size).astype(float)
    weighted = test(y, p, sample_weight=w)
    scaled = test(y, p, sample_weight=7.3 * w)
    assert scaled.statistic == pytest.approx(weighted.statistic, rel=1e-10)
    assert scaled.pvalue == pytest.approx(weighted.pvalue, rel=1e-9)
    keep = w > 0
    dropped = test(y[keep], p[keep], sample_weight=w[keep])
    assert dropped.statistic == pytest.approx(weighted.statistic, rel=1e-10)
    perm = np.random.default_rng(2).permutation(y.size)
    shuffled = test(y[perm], p[perm], sample_weight=w[perm])
    assert shuffled.statistic == pytest.approx(weighted.statistic, rel=1e-10)
    ones = test(y, p, sample_weight=np.full(y.size, 3.0))
    assert ones.statistic == pytest.approx(test(y, p).statistic, rel=1e-12)


def test_weighted_statistics_by_hand():
    """Relative weights: sums of w (y - p) over sqrt(sums of w**2 p (1 - p))."""
    y, p = _binary(200, 1.5, seed=11)
    w = np.random.default_rng(4).uniform(0.2, 3.0, y.size)
    z = np.sum(w * (y - p) * (1 - 2 * p)) / np.sqrt(
        np.sum(w**2 * (1 - 2 * p) ** 2 * p * (1 - p))
    )
    assert spiegelhalter_test(y, p, sample_weight=w).statistic == pytest.approx(z)
    order = np.argsort(p)
    c = np.cumsum((w * (y - p))[order])
    sd = np.sqrt(np.sum(w**2 * p * (1 - p)))
    ks = cumulative_calibration_test(y, p, sample_weight=w)
    assert ks.statistic == pytest.approx(np.abs(c).max() / sd, rel=1e-12)
    assert ks.effect == pytest.approx(np.abs(c).max() / w.sum(), rel=1e-12)


@pytest.mark.parametrize("test", TESTS)
def test_binary_1d_equals_2d(test):
    y, p = _binary(200, 1.2, seed=6)
    one = test(y, p)
    two = test(y, np.column_stack((1 - p, p)))
    assert one.statistic == pytest.approx(two.statistic, rel=1e-12)
    assert one.pvalue == pytest.approx(two.pvalue, rel=1e-12)
    assert one.per_class_pvalue is None and one.n_samples == 200


@pytest.mark.parametrize("correction", ["holm", "bonferroni"])
@pytest.mark.parametrize("test", TESTS)
def test_multiclass_one_vs_rest(test, correction):
    rng = np.random.default_rng(7)
    z = rng.normal(scale=2.0, size=(900, 4))
    proba = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(900, 1)) > proba.cumsum(axis=1)).sum(axis=1)
    sharp = proba**2 / (proba**2).sum(axis=1, keepdims=True)  # over-confident
    r = test(y, sharp, correction=correction)
    assert r.per_class_pvalue.shape == (4,)
    for k in range(4):
        alone = test((y == k).astype(int), sharp[:, k])
        assert r.per_class_statistic[k] == pytest.approx(alone.statistic, rel=1e-12)
        assert r.per_class_pvalue[k] == pytest.approx(alone.pvalue, rel=1e-12)
        assert r.per_class_effect[k] == pytest.approx(alone.effect, rel=1e-12)
    raw = r.per_class_pvalue
    biggest = np.argmax(np.abs(r.per_class_effect))
    assert r.effect == r.per_class_effect[biggest]
    assert r.pvalue == pytest.approx(min(1.0, 4 * raw.min()), rel=1e-12)
    np.testing.assert_array_equal(r.pvalues_adjusted, adjust_pvalues(raw, correction))
    assert r.correction == correction and r.reject(0.05)


def test_holm_and_bonferroni_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(
        adjust_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.2], rtol=1e-12
    )
    np.testing.assert_allclose(
        adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 0.8], rtol=1e-12
    )


def test_sorted_chunks_merge_exactly():
    y, p = _binary(2000, 1.3, seed=8)
    p = np.round(p, 3)
    order = np.argsort(p, kind="stable")
    y, p = y[order], p[order]
    cuts = np.searchsorted(p, [0.2, 0.5, 0.51, 0.9])  # between distinct values
    parts = [
        cumulative_summary(yc, pc)
        for yc, pc in zip(np.split(y, cuts), np.split(p, cuts), strict=True)
    ]
    merged = merge_prefix_summaries(parts)
    whole = cumulative_summary(y, p)
    for f in dataclasses.fields(whole):
        assert getattr(merged, f.name) == pytest.approx(getattr(whole, f.name))


def test_ks_calibration_error_kinds():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.2, 0.9, 0.6, 0.3])
    # sorted by p: y - p = -0.2, -0.3, 0.4, 0.1; prefix sums -0.2, -0.5, -0.1, 0.0
    assert ks_calibration_error(y, p, kind="classwise") == pytest.approx(
        (0.5 / 4 + 0.5 / 4) / 2
    )
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    y3 = np.array([0, 2, 2])
    # confidence: sorted 0.6 (wrong), 0.6 (right, tied), 0.7 (right)
    # tie taken whole: prefix sums at the tie end -0.2, then +0.1
    assert ks_calibration_error(y3, proba, labels=[0, 1, 2]) == pytest.approx(0.2 / 3)
    assert ks_calibration_error(
        y3, proba, kind="top_label", labels=[0, 1, 2]
    ) == pytest.approx((1 * 0.3 + 1 * 0.6 + 1 * 0.4) / 3)
    r = cumulative_calibration_test(y, p)
    assert r.effect == pytest.approx(0.5 / 4)


def test_ks_calibration_error_weights():
    y, p = _binary(300, 1.5, seed=9)
    w = np.random.default_rng(3).integers(0, 3, y.size)
    rows = np.repeat(np.arange(y.size), w)
    for kind in ("confidence", "top_label", "classwise"):
        assert ks_calibration_error(y, p, kind=kind, sample_weight=w) == (
            pytest.approx(ks_calibration_error(y[rows], p[rows], kind=kind))
        )
        assert ks_calibration_error(y, p, kind=kind, sample_weight=3.0 * w) == (
            pytest.approx(ks_calibration_error(y, p, kind=kind, sample_weight=w))
        )


def test_effects_are_on_the_probability_scale():
    y, p = _binary(5000, 1.0, seed=10)
    y_bad, p_bad = _binary(5000, 1.6, seed=10)
    for test in TESTS:
        good, bad = test(y, p), test(y_bad, p_bad)
        assert abs(good.effect) < abs(bad.effect)
        assert isinstance(good, CalibrationTestResult) and good.effect_name
    spieg = spiegelhalter_test(y, p)
    brier_excess = np.mean((y - p) ** 2) - np.mean(p * (1 - p))
    assert spieg.effect == pytest.approx(brier_excess, rel=1e-10)
    assert "CalibrationTestResult(statistic=" in repr(spieg)


def test_degenerate_probabilities():
    """Probabilities 0 and 1 have no variance: right is p = 1, wrong p = 0."""
    y = np.array([0, 1, 1, 0])
    p = np.array([0.0, 1.0, 1.0, 0.0])
    for statistic in ("ks", "kuiper"):
        right = cumulative_calibration_test(y, p, statistic=statistic)
        wrong = cumulative_calibration_test(1 - y, p, statistic=statistic)
        assert (right.statistic, right.pvalue) == (0.0, 1.0)
        assert (wrong.statistic, wrong.pvalue) == (np.inf, 0.0)
    right, wrong = spiegelhalter_test(y, p), spiegelhalter_test(1 - y, p)
    assert (right.statistic, right.pvalue) == (0.0, 1.0)
    assert wrong.pvalue == 0.0


def test_ks_calibration_error_binary_1d_equals_2d():
    y, p = _binary(300, 1.5, seed=12)
    p[:5] = 0.5  # ties at 1/2: class 0 is the prediction, as top1 says
    w = np.random.default_rng(5).uniform(0.5, 2.0, y.size)
    for kind in ("confidence", "top_label", "classwise"):
        one = ks_calibration_error(y, p, kind=kind, sample_weight=w)
        two = ks_calibration_error(
            y, np.column_stack((1 - p, p)), kind=kind, sample_weight=w
        )
        assert one == pytest.approx(two, rel=1e-12)
