"""calibration_by_group: every group's numbers against the metric functions
on the group's rows (the slow, obvious reference), Holm's adjustment against
a hand computation and against the formula of statsmodels' ``multipletests``
(written out here: statsmodels is not a dependency), weights against
repeated rows, and bad input."""

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

import skcalib
from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    corp_decomposition,
    cumulative_calibration_test,
    expected_calibration_error,
    hosmer_lemeshow_test,
    negative_log_likelihood,
    reliability_curve,
    spiegelhalter_test,
)
from skcalib.monitoring import GroupCalibrationResult, calibration_by_group
from skcalib.monitoring._groups import _adjusted

CURVE_FIELDS = ("edges", "mean_confidence", "accuracy", "counts", "n_samples")
CURVE_FIELDS += ("lower", "upper", "nonempty")


def _data(n=1500, k=3, seed=0, groups=("a", "b", "c", "d")):
    """Probabilities (1-D for k=2), labels drawn from a sharpened version
    (so the model is miscalibrated), and unequal groups."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(k), size=n)
    sharp = proba**0.6 / (proba**0.6).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > sharp.cumsum(axis=1)).sum(axis=1)
    y = np.minimum(y, k - 1)
    share = np.linspace(1, 2, len(groups))
    g = rng.choice(np.asarray(groups), size=n, p=share / share.sum())
    return y, (proba[:, 1] if k == 2 else proba), g


def _top1(p):
    """Predicted column and confidence, written out (1-D: positive class)."""
    if p.ndim == 1:
        return (p > 0.5).astype(int), np.maximum(p, 1 - p)
    return p.argmax(axis=1), p.max(axis=1)


def _same_curve(a, b):
    for f in CURVE_FIELDS:
        assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------- reference
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("kind", ["confidence", "classwise"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_each_group_equals_the_metrics_on_its_rows(k, kind, strategy, weighted):
    y, p, g = _data(k=k)
    labels = np.arange(k)
    rng = np.random.default_rng(1)
    w = rng.uniform(0.2, 3.0, size=y.size) if weighted else None
    res = calibration_by_group(
        y,
        p,
        g,
        n_bins=8,
        strategy=strategy,
        kind=kind,
        sample_weight=w,
        n_resamples=200,
        random_state=0,
    )
    assert res.groups.tolist() == ["a", "b", "c", "d"]
    for i, group in enumerate(res.groups):
        rows = g == group
        yg, pg = y[rows], p[rows]
        wg = None if w is None else w[rows]
        common = {"labels": labels, "sample_weight": wg}
        binned = {"n_bins": 8, "strategy": strategy}
        assert res.n[i] == rows.sum()
        assert res.weight[i] == pytest.approx(rows.sum() if w is None else wg.sum())
        pred, conf = _top1(pg)
        assert res.accuracy[i] == pytest.approx(np.average(pred == yg, weights=wg))
        ece = expected_calibration_error(yg, pg, kind=kind, **binned, **common)
        assert res.ece[i] == pytest.approx(ece, rel=1e-12, abs=1e-15)
        assert res.brier[i] == pytest.approx(brier_score(yg, pg, **common), rel=1e-12)
        nll = negative_log_likelihood(yg, pg, **common)
        assert res.nll[i] == pytest.approx(nll, rel=1e-12)
        if kind == "confidence":
            mcb = corp_decomposition(yg, pg, kind="confidence", **common).miscalibration
            test = cumulative_calibration_test(
                (pred == yg).astype(int), conf, labels=[0, 1], sample_weight=wg
            )
        else:
            mcb = np.mean(
                [
                    corp_decomposition(
                        yg, pg, kind="classwise", class_index=c, **common
                    ).miscalibration
                    for c in range(k)
                ]
            )
            test = cumulative_calibration_test(yg, pg, **common)
        assert res.corp_mcb[i] == pytest.approx(mcb, rel=1e-12, abs=1e-15)
        assert res.pvalue[i] == pytest.approx(test.pvalue, rel=1e-12)
        assert res.tests[i].statistic == pytest.approx(test.statistic, rel=1e-12)
        ci = calibration_error_interval(
            yg, pg, kind=kind, n_resamples=200, random_state=0, **binned, **common
        )
        assert (res.ece_low[i], res.ece_high[i]) == (ci.low, ci.high)
        assert res.intervals[i].statistic == pytest.approx(res.ece[i], rel=1e-12)
        curve = reliability_curve(yg, pg, kind="confidence", **binned, **common)
        _same_curve(res.curves[i], curve)
        if kind == "classwise":
            assert len(res.class_curves[i]) == k
            for c, got in enumerate(res.class_curves[i]):
                want = reliability_curve(
                    yg, pg, kind="classwise", class_index=c, **binned, **common
                )
                _same_curve(got, want)
        else:
            assert res.class_curves is None
    assert (res.note == "").all()


@pytest.mark.parametrize(
    ("test", "func"),
    [("spiegelhalter", spiegelhalter_test), ("hosmer_lemeshow", hosmer_lemeshow_test)],
)
def test_the_other_tests_are_those_of_the_metrics(test, func):
    y, p, g = _data(k=3)
    res = calibration_by_group(y, p, g, test=test, n_resamples=50, random_state=0)
    for i, group in enumerate(res.groups):
        rows = g == group
        pred, conf = _top1(p[rows])
        want = func((pred == y[rows]).astype(int), conf, labels=[0, 1])
        assert res.pvalue[i] == pytest.approx(want.pvalue, rel=1e-12)
    assert res.test == want.method


def test_discrete_strategy_bins_each_groups_values():
    rng = np.random.default_rng(3)
    p = rng.choice([0.1, 0.3, 0.55, 0.8, 0.95], size=800)
    y = (rng.random(800) < p).astype(int)
    g = rng.integers(0, 3, size=800)
    res = calibration_by_group(y, p, g, strategy="discrete", n_resamples=50)
    for i in range(3):
        rows = g == i
        want = expected_calibration_error(y[rows], p[rows], strategy="discrete")
        assert res.ece[i] == pytest.approx(want, rel=1e-12)
        assert res.curves[i].n_bins is None


def test_groups_are_sorted_ints_or_strings():
    y, p, g = _data(k=2, groups=("z", "b", "m"))
    res = calibration_by_group(y, p, g, n_resamples=20)
    assert res.groups.tolist() == ["b", "m", "z"]
    codes = np.select([g == "z", g == "b"], [30, -4], 7)
    res_int = calibration_by_group(y, p, codes.tolist(), n_resamples=20)
    assert res_int.groups.tolist() == [-4, 7, 30]
    # the same partition (b -> -4, m -> 7, z -> 30): the same rows in order
    assert_allclose(res_int.ece, res.ece, rtol=1e-15)
    assert_array_equal(res_int.n, res.n)


def test_an_int_seed_makes_a_groups_interval_independent_of_the_others():
    y, p, g = _data(k=3)
    full = calibration_by_group(y, p, g, n_resamples=100, random_state=7)
    keep = g != "a"
    part = calibration_by_group(
        y[keep], p[keep], g[keep], n_resamples=100, random_state=7, labels=[0, 1, 2]
    )
    assert_array_equal(full.ece_low[1:], part.ece_low)
    assert_array_equal(full.ece_high[1:], part.ece_high)


# ------------------------------------------------------------------ Holm
def _statsmodels_holm(pvals):
    """``multipletests(pvals, method="holm")[1]`` as statsmodels computes it
    (statsmodels/stats/multitest.py, 0.14): sort, multiply the i-th smallest
    (from 0) by ``m - i``, running maximum, clip at 1, unsort."""
    pvals = np.asarray(pvals, dtype=float)
    order = np.argsort(pvals)
    ntests = pvals.size
    corrected_raw = pvals[order] * np.arange(ntests, 0, -1)
    corrected = np.minimum(1.0, np.maximum.accumulate(corrected_raw))
    out = np.empty_like(corrected)
    out[order] = corrected
    return out


def test_holm_by_hand():
    # sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06,
    # 0.04 * 1 = 0.04 -> 0.06 (step-down: never below the previous one)
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert_allclose(_adjusted(p, "holm"), [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    assert_allclose(_adjusted(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02])
    assert_array_equal(_adjusted(p, None), p)
    # untested groups (NaN) are not in the family: m = 2 here
    q = np.array([np.nan, 0.02, np.nan, 0.3])
    assert_allclose(_adjusted(q, "holm"), [np.nan, 0.04, np.nan, 0.3])
    assert np.isnan(_adjusted(np.full(3, np.nan), "holm")).all()


@pytest.mark.parametrize("seed", range(5))
def test_holm_equals_the_statsmodels_formula(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=25) ** 3
    p[[3, 7]] = p[5]  # ties
    p[11] = 1.0
    assert_allclose(_adjusted(p, "holm"), _statsmodels_holm(p), rtol=1e-15)


def test_the_result_is_adjusted_over_the_tested_groups():
    y, p, g = _data(n=3000, k=3, groups=tuple("abcdefgh"))
    g = g.astype(object)
    g[:5] = "tiny"  # 5 rows: below min_group_size
    res = calibration_by_group(y, p, g, n_resamples=50, random_state=0)
    tiny = res.groups.tolist().index("tiny")
    tested = np.arange(len(res)) != tiny
    assert np.isnan(res.pvalue[tiny]) and np.isnan(res.pvalue_adjusted[tiny])
    assert_allclose(
        res.pvalue_adjusted[tested], _statsmodels_holm(res.pvalue[tested]), rtol=1e-15
    )
    raw = calibration_by_group(y, p, g, adjust=None, n_resamples=50)
    assert_array_equal(raw.pvalue_adjusted, raw.pvalue)
    assert res.reject(1.0).tolist() == tested.tolist()


# --------------------------------------------------------------- weights
def test_integer_weights_equal_repeated_rows():
    y, p, g = _data(n=900, k=3)
    w = np.random.default_rng(2).integers(0, 4, size=y.size)
    kw = {"n_bins": 6, "n_resamples": 20, "kind": "classwise"}
    weighted = calibration_by_group(y, p, g, sample_weight=w, **kw)
    rep = np.repeat(np.arange(y.size), w)
    repeated = calibration_by_group(y[rep], p[rep], g[rep], **kw)
    assert_array_equal(weighted.weight, repeated.n)
    for name in ("accuracy", "ece", "corp_mcb", "brier", "nll"):
        assert_allclose(getattr(weighted, name), getattr(repeated, name), rtol=1e-12)
    for a, b in zip(weighted.curves, repeated.curves, strict=True):
        for f in ("edges", "mean_confidence", "accuracy", "counts"):
            assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-12)


def test_a_group_of_zero_weight_is_an_error_naming_it():
    y, p, g = _data(k=2)
    w = np.where(g == "c", 0.0, 1.0)
    with pytest.raises(
        ValueError, match=r"sample_weight sums to 0 in group\(s\) \['c'\]"
    ):
        calibration_by_group(y, p, g, sample_weight=w)


# ------------------------------------------------------------ bad input
def test_groups_of_the_wrong_length():
    y, p, g = _data(k=2)
    with pytest.raises(
        ValueError, match=r"groups must have shape \(1500,\).*\(1499,\)"
    ):
        calibration_by_group(y, p, g[:-1])
    with pytest.raises(ValueError, match=r"got shape \(1500, 1\)"):
        calibration_by_group(y, p, g[:, None])


@pytest.mark.parametrize("missing", [np.nan, None, "pd.NA"])
def test_missing_groups_are_an_error_naming_the_row(missing):
    y, p, g = _data(k=2)
    if missing == "pd.NA":
        pd = pytest.importorskip("pandas")
        missing = pd.NA
    bad = g.astype(object)
    bad[17] = missing
    with pytest.raises(ValueError, match=r"missing values; groups\[17\] is"):
        calibration_by_group(y, p, bad)
    floats = np.where(g == "a", 1.0, 2.0)
    floats[3] = np.nan
    with pytest.raises(ValueError, match=r"groups\[3\] is nan\."):
        calibration_by_group(y, p, floats)


def test_groups_that_do_not_sort_together():
    y, p, g = _data(k=2)
    mixed = g.astype(object)
    mixed[0] = 5
    with pytest.raises(TypeError, match=r"sort together.*\['int', 'str'\]"):
        calibration_by_group(y, p, mixed)


def test_probabilities_not_summing_to_one():
    y, p, g = _data(k=3)
    p = p.copy()
    p[10] *= 0.9
    with pytest.raises(ValueError, match="row 10"):
        calibration_by_group(y, p, g)


def test_bad_parameters():
    y, p, g = _data(k=2)
    with pytest.raises(InvalidParameterError, match="min_group_size"):
        calibration_by_group(y, p, g, min_group_size=1)
    with pytest.raises(InvalidParameterError, match="adjust"):
        calibration_by_group(y, p, g, adjust="fdr")
    with pytest.raises(InvalidParameterError, match="kind"):
        calibration_by_group(y, p, g, kind="top_label")
    with pytest.raises(ValueError, match="n_bins must be an integer"):
        calibration_by_group(y, p, g, n_bins=True)


def test_a_one_row_group_keeps_its_metrics_without_interval_or_test():
    y, p, g = _data(k=3)
    g = g.astype(object)
    g[42] = "solo"
    res = calibration_by_group(y, p, g, n_resamples=30)
    i = res.groups.tolist().index("solo")
    assert res.n[i] == 1
    ece = expected_calibration_error(y[[42]], p[[42]], labels=[0, 1, 2])
    assert res.ece[i] == pytest.approx(ece)
    assert res.brier[i] == pytest.approx(
        brier_score(y[[42]], p[[42]], labels=[0, 1, 2])
    )
    assert np.isnan([res.ece_low[i], res.ece_high[i], res.pvalue[i]]).all()
    assert res.intervals[i] is None and res.tests[i] is None
    assert res.note[i] == "fewer than min_group_size=10 rows: no interval, no test"
    assert (np.delete(res.note, i) == "").all()


def test_a_group_with_one_class_is_a_group():
    y, p, g = _data(k=3)
    y = y.copy()
    y[g == "b"] = 2
    res = calibration_by_group(y, p, g, kind="classwise", n_resamples=30)
    i = res.groups.tolist().index("b")
    rows = g == "b"
    want = expected_calibration_error(
        y[rows], p[rows], kind="classwise", labels=[0, 1, 2]
    )
    assert res.ece[i] == pytest.approx(want, rel=1e-12)
    assert np.isfinite([res.ece_low[i], res.pvalue[i], res.corp_mcb[i]]).all()


def test_labels_are_needed_when_y_does_not_name_the_columns():
    y, p, g = _data(k=3)
    with pytest.raises(ValueError, match="labels="):
        calibration_by_group(np.minimum(y, 1), p, g)


# --------------------------------------------------------------- output
def test_to_dict_is_json_and_as_frame_holds_the_arrays():
    y, p, g = _data(k=3)
    g = g.astype(object)
    g[0] = "solo"
    res = calibration_by_group(y, p, g, kind="classwise", n_resamples=30)
    d = res.to_dict(curves=True)
    text = json.dumps(d, allow_nan=False)  # NaN became None
    back = json.loads(text)
    assert [r["group"] for r in back["groups"]] == res.groups.tolist()
    assert back["classes"] == [0, 1, 2] and back["kind"] == "classwise"
    assert len(back["groups"][0]["class_curves"]) == 3
    solo = back["groups"][res.groups.tolist().index("solo")]
    assert solo["pvalue"] is None and solo["note"].startswith("fewer than")
    pd = pytest.importorskip("pandas")
    frame = res.as_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(back["groups"][0])[:13]
    assert_allclose(frame["ece"], res.ece)
    assert_array_equal(frame["group"], res.groups)
    assert "n_groups=5" in repr(res) and "tested=4" in repr(res)


def test_exported_from_the_package():
    assert skcalib.calibration_by_group is calibration_by_group
    assert skcalib.GroupCalibrationResult is GroupCalibrationResult
    assert "calibration_by_group" in skcalib.monitoring.__all__
