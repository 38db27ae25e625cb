"""reliability_curve: per-bin values, empty bins, intervals, the contract."""

import dataclasses

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from skcalib.metrics import (
    ReliabilityCurve,
    expected_calibration_error,
    reliability_curve,
)

from ._reference import ref_bins, ref_edges


def _data(n=500, k=3, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    y = np.array([rng.choice(k, p=q**0.8 / (q**0.8).sum()) for q in p])
    return y, p


def _check_against_bins(curve, values, targets, weights, n_bins, strategy):
    edges = ref_edges(values, n_bins, strategy, weights)
    np.testing.assert_allclose(curve.edges, edges, rtol=0, atol=0)
    w = [1.0] * len(values) if weights is None else list(weights)
    bins = ref_bins(values, targets, w, edges, np.asarray(values).dtype.type)
    for j, (wb, sv, st, _w2, cnt) in enumerate(bins):
        assert curve.counts[j] == pytest.approx(wb, abs=1e-12)
        assert curve.n_samples[j] == cnt
        assert curve.nonempty[j] == (wb > 0)
        if wb > 0:
            assert curve.mean_confidence[j] == pytest.approx(sv / wb, abs=1e-12)
            assert curve.accuracy[j] == pytest.approx(st / wb, abs=1e-12)
            assert curve.lower[j] <= curve.accuracy[j] <= curve.upper[j]
        else:
            for a in (curve.mean_confidence, curve.accuracy, curve.lower, curve.upper):
                assert np.isnan(a[j])


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_each_kind_matches_naive_bins(strategy, weighted):
    y, p = _data()
    w = np.random.default_rng(1).uniform(0.2, 2, y.size) if weighted else None
    pred, conf = p.argmax(axis=1), p.max(axis=1)
    c = reliability_curve(y, p, n_bins=10, strategy=strategy, sample_weight=w)
    assert (c.kind, c.strategy, c.class_index) == ("confidence", strategy, None)
    _check_against_bins(c, list(conf), list(pred == y), w, 10, strategy)
    for k in range(3):
        c = reliability_curve(
            y,
            p,
            n_bins=10,
            strategy=strategy,
            kind="classwise",
            class_index=k,
            sample_weight=w,
        )
        assert c.class_index == k
        _check_against_bins(c, list(p[:, k]), list(y == k), w, 10, strategy)
        c = reliability_curve(
            y,
            p,
            n_bins=10,
            strategy=strategy,
            kind="top_label",
            class_index=k,
            sample_weight=w,
        )
        sel = pred == k
        _check_against_bins(
            c,
            list(conf[sel]),
            list(y[sel] == k),
            None if w is None else w[sel],
            10,
            strategy,
        )


def test_top_label_without_class_is_confidence():
    y, p = _data(seed=2)
    a = reliability_curve(y, p)
    b = reliability_curve(y, p, kind="top_label")
    for f in ("edges", "mean_confidence", "accuracy", "counts", "lower", "upper"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_empty_bins_are_reported_not_dropped():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.05, 0.95, 0.99, 0.1])
    c = reliability_curve(y, p, n_bins=10, kind="classwise")
    assert c.edges.shape == (11,) and c.counts.shape == (10,)
    np.testing.assert_array_equal(c.nonempty, [True] + [False] * 8 + [True])
    assert np.isnan(c.accuracy[1:9]).all() and np.isnan(c.mean_confidence[1:9]).all()
    assert np.isnan(c.lower[1:9]).all() and np.isnan(c.upper[1:9]).all()
    np.testing.assert_array_equal(c.counts[1:9], 0)
    assert c.counts.sum() == 4


def test_matches_sklearn_calibration_curve_binary():
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(size=700), rng.integers(0, 11, 300) / 10])
    y = (rng.uniform(size=p.size) < p**1.3).astype(int)
    for n_bins in (5, 10, 15):
        prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins)
        c = reliability_curve(y, p, n_bins=n_bins, kind="classwise")
        np.testing.assert_allclose(c.accuracy[c.nonempty], prob_true, rtol=1e-12)
        np.testing.assert_allclose(c.mean_confidence[c.nonempty], prob_pred, rtol=1e-12)
        # 1-D input defaults to the positive class; 2-D binary too.
        c2 = reliability_curve(
            y, np.column_stack([1 - p, p]), n_bins=n_bins, kind="classwise"
        )
        np.testing.assert_allclose(c2.accuracy[c2.nonempty], prob_true, rtol=1e-12)


def test_curve_gaps_give_the_ece():
    y, p = _data(seed=4)
    c = reliability_curve(y, p, n_bins=12)
    keep = c.nonempty
    ece = np.sum(c.counts[keep] * np.abs(c.accuracy[keep] - c.mean_confidence[keep]))
    assert ece / c.counts.sum() == pytest.approx(
        expected_calibration_error(y, p, n_bins=12)
    )


def test_wilson_interval_values():
    # 5 successes out of 10 at 95%: the Wilson interval is (0.2366, 0.7634).
    y = np.array([1] * 5 + [0] * 5)
    p = np.full(10, 0.55)
    c = reliability_curve(y, p, n_bins=2, kind="classwise")
    assert c.lower[1] == pytest.approx(0.236593, abs=1e-6)
    assert c.upper[1] == pytest.approx(0.763407, abs=1e-6)
    c90 = reliability_curve(y, p, n_bins=2, kind="classwise", confidence_level=0.9)
    assert c.lower[1] < c90.lower[1] < c90.upper[1] < c.upper[1]
    # 0 out of 4: lower bound 0, upper z^2 / (n + z^2).
    c0 = reliability_curve(
        [0, 0, 0, 0], [0.6, 0.7, 0.8, 0.9], n_bins=1, kind="classwise", labels=[0, 1]
    )
    assert c0.lower[0] == 0.0
    assert c0.upper[0] == pytest.approx(1.959964**2 / (4 + 1.959964**2), rel=1e-6)


def test_interval_uses_effective_sample_size():
    y = np.array([1] * 5 + [0] * 5)
    p = np.full(10, 0.55)
    base = reliability_curve(y, p, n_bins=2, kind="classwise")
    # Constant weights: same effective size, same interval.
    scaled = reliability_curve(
        y, p, n_bins=2, kind="classwise", sample_weight=np.full(10, 7.0)
    )
    assert scaled.lower[1] == pytest.approx(base.lower[1])
    assert scaled.counts[1] == 70 and scaled.n_samples[1] == 10
    # Unequal weights: (sum w)^2 / sum w^2 < 10 samples -> wider.
    w = np.array([5, 1, 1, 1, 1, 5, 1, 1, 1, 1.0])
    wide = reliability_curve(y, p, n_bins=2, kind="classwise", sample_weight=w)
    assert wide.accuracy[1] == pytest.approx(0.5)
    assert wide.upper[1] - wide.lower[1] > base.upper[1] - base.lower[1]


def test_result_is_frozen_and_read_only():
    c = reliability_curve([0, 1, 1], [0.2, 0.8, 0.6])
    assert isinstance(c, ReliabilityCurve)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.kind = "classwise"
    with pytest.raises(ValueError, match="read-only"):
        c.counts[0] = 3
    names = {f.name for f in dataclasses.fields(ReliabilityCurve)}
    assert {
        "edges",
        "mean_confidence",
        "accuracy",
        "counts",
        "n_samples",
        "lower",
        "upper",
        "nonempty",
        "kind",
        "strategy",
        "class_index",
    } <= names


def test_binary_classwise_defaults_to_positive_class():
    y = np.array(["no", "yes", "yes", "no"])
    p = np.array([0.2, 0.7, 0.9, 0.4])  # P("yes")
    c = reliability_curve(y, p, n_bins=2, kind="classwise")
    assert c.class_index == 1
    np.testing.assert_allclose(c.accuracy, [0.0, 1.0])
    c0 = reliability_curve(y, p, n_bins=2, kind="classwise", class_index=0)
    np.testing.assert_allclose(c0.mean_confidence, [0.2, 0.7])


def test_quantile_bins_are_equal_mass():
    rng = np.random.default_rng(5)
    p = rng.beta(5, 1, size=1000)
    y = (rng.uniform(size=1000) < p).astype(int)
    c = reliability_curve(y, p, n_bins=10, strategy="quantile", kind="classwise")
    assert c.counts.size == 10
    # Inverted-CDF quantiles at the levels k / 10: exactly 100 per bin
    np.testing.assert_array_equal(c.counts, 100)


# ------------------------------------------- unpacking like calibration_curve
def _binary_sample(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    return (rng.uniform(size=n) < p**1.5).astype(int), p


@pytest.mark.parametrize("n_bins", [4, 5, 8, 10, 15])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_unpacks_like_sklearn_calibration_curve(strategy, n_bins):
    # 5 and 10 bins: n * k / n_bins is an integer, where levels rounded up
    # (np.linspace gives 0.6000000000000001 for 3 / 5) moved an edge by one
    y, p = _binary_sample()
    prob_true, prob_pred = reliability_curve(
        y, p, n_bins=n_bins, strategy=strategy, kind="classwise"
    )
    want_true, want_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    np.testing.assert_allclose(prob_true, want_true, rtol=1e-12)
    np.testing.assert_allclose(prob_pred, want_pred, rtol=1e-12)


def test_unpacking_drops_empty_bins_and_keeps_attributes():
    y = np.array([0, 1, 1, 0, 1, 1])
    p = np.array([0.1, 0.6, 0.8, 0.9, 0.8, 0.95])
    curve = reliability_curve(y, p, n_bins=4, kind="classwise")
    prob_true, prob_pred = curve
    # By hand: bins [0, .25], (.5, .75], (.75, 1]; (.25, .5] is empty.
    np.testing.assert_allclose(prob_true, [0.0, 1.0, 0.75])
    np.testing.assert_allclose(prob_pred, [0.1, 0.6, 0.8625])
    assert curve.accuracy.shape == (4,)  # the attributes keep every bin
    # A multiclass one-vs-rest curve unpacks as sklearn's curve of that class.
    yk, proba = _data()
    pt, pp = reliability_curve(yk, proba, n_bins=5, kind="classwise", class_index=2)
    want_true, want_pred = calibration_curve(yk == 2, proba[:, 2], n_bins=5)
    np.testing.assert_allclose(pt, want_true, rtol=1e-12)
    np.testing.assert_allclose(pp, want_pred, rtol=1e-12)


@pytest.mark.parametrize("kind", ["confidence", "top_label"])
def test_pooled_curves_refuse_to_unpack(kind):
    y, p = _binary_sample(n=200)
    curve = reliability_curve(y, p, kind=kind)
    with pytest.raises(TypeError, match="kind='classwise'"):
        prob_true, prob_pred = curve
    # The CORP curve of one class unpacks too (its blocks).
    iso = reliability_curve(y, p, kind="classwise", strategy="isotonic", n_resamples=0)
    prob_true, prob_pred = iso
    np.testing.assert_allclose(prob_true, iso.accuracy)


def test_unpacking_stays_in_the_array_namespace():
    from _xp import dispatch_reason, import_namespace

    if dispatch_reason():
        pytest.skip(dispatch_reason())
    xps = import_namespace("array_api_strict")
    from sklearn import config_context

    y, p = _binary_sample(n=400)
    want_true, want_pred = calibration_curve(y, p, n_bins=5)
    with config_context(array_api_dispatch=True):
        curve = reliability_curve(
            xps.asarray(y), xps.asarray(p), n_bins=5, kind="classwise"
        )
    prob_true, prob_pred = curve
    assert type(prob_true) is type(xps.asarray(p))
    np.testing.assert_allclose(np.asarray(prob_true), want_true, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(prob_pred), want_pred, rtol=1e-12)
