"""Issue 14 (metrics): no guessed columns, weight-scale invariance, one NLL
clip rule, bounded n_bins, metric-appropriate messages, no NaN.

Every reference value is computed here by an obvious formula (or by
scikit-learn), never frozen from the code under test.
"""

import numpy as np
import pytest
from _discovery import metric_functions
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

import skcalib.metrics as M
from skcalib._core.inputs import check_n_bins, check_sample_weight
from skcalib.metrics import (
    CalibrationAccumulator,
    brier_score,
    calibration_refinement_decomposition,
    classwise_calibration_error,
    classwise_set_coverage,
    expected_calibration_error,
    get_scorer,
    make_proba_scorer,
    maximum_calibration_error,
    negative_log_likelihood,
    reliability_curve,
    set_coverage_score,
)

#: Every public metric of (y_true, y_proba), found by discovery.
METRICS = metric_functions()
#: Those returning a float (the interval has its own tests).
SCALAR_METRICS = [
    expected_calibration_error,
    maximum_calibration_error,
    classwise_calibration_error,
    brier_score,
    negative_log_likelihood,
]

P3 = np.array(
    [
        [0.7, 0.2, 0.1],
        [0.2, 0.7, 0.1],
        [0.6, 0.3, 0.1],
        [0.1, 0.8, 0.1],
        [0.3, 0.3, 0.4],
    ]
)
LAB = np.array([1, 2, 1, 2, 2])  # classes 1..3; 3 absent from y_true


def _call(metric, y, p, **kw):
    if metric is M.calibration_error_interval:
        kw.setdefault("n_resamples", 20)
        kw.setdefault("random_state", 0)
    return metric(y, p, **kw)


def test_discovery_finds_the_metrics():
    names = {m.__name__ for m in METRICS}
    assert {f.__name__ for f in SCALAR_METRICS} <= names
    assert {"reliability_curve", "calibration_refinement_decomposition"} <= names


# ----------------------------------------------------------- item 2: labels
def test_nll_absent_class_is_an_error_not_a_guess():
    # Before: the columns were guessed as 0..2 and the value was 1.667.
    with pytest.raises(ValueError, match=r"distinct label\(s\) \[1, 2\].*labels="):
        negative_log_likelihood(LAB, P3)
    want = -np.mean(np.log(P3[np.arange(5), LAB - 1]))  # column of label l: l - 1
    got = negative_log_likelihood(LAB, P3, labels=[1, 2, 3])
    assert got == pytest.approx(want, abs=1e-15)
    assert got == pytest.approx(log_loss(LAB, P3, labels=[1, 2, 3]), abs=1e-15)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.__name__)
def test_every_metric_refuses_to_guess_the_columns(metric):
    with pytest.raises(ValueError, match="pass labels="):
        _call(metric, LAB, P3)
    # Integer labels 0..K-1 with a class absent: not guessed either.
    with pytest.raises(ValueError, match="pass labels="):
        _call(metric, LAB - 1, P3)
    # 1-D binary y_proba: y_true must hold both labels.
    with pytest.raises(ValueError, match=r"1-D y_proba.*labels=\[negative, pos"):
        _call(metric, [1, 1, 1], [0.2, 0.7, 0.9])
    # With labels the metric runs.
    _call(metric, LAB, P3, labels=[1, 2, 3])
    # (four rows: the kernel test's variance needs two pairs)
    _call(metric, [1, 1, 1, 1], [0.2, 0.7, 0.9, 0.6], labels=[0, 1])


def test_more_distinct_labels_than_columns_is_an_error():
    with pytest.raises(ValueError, match="2 columns but y_true has 3 distinct"):
        expected_calibration_error([0, 1, 2], [[0.5, 0.5]] * 3)


def test_set_metrics_refuse_to_guess():
    sets = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]], bool)
    for metric in (set_coverage_score, classwise_set_coverage):
        with pytest.raises(ValueError, match="pass labels="):
            metric(LAB, sets)
    # By hand: label 1 is column 0 (rows 0, 2: covered), label 2 column 1
    # (rows 1, 3, 4: covered, covered, covered); with labels=[0, 1, 2] (the old
    # guess) label 1 would be column 1: rows 0, 2 -> True, False.
    assert set_coverage_score(LAB, sets, labels=[1, 2, 3]) == 1.0
    assert set_coverage_score(LAB, sets, labels=[2, 1, 3]) == pytest.approx(2 / 5)


def test_chunked_and_dask_paths_refuse_to_guess():
    with pytest.raises(ValueError, match="pass labels="):
        CalibrationAccumulator().update(LAB, P3)
    acc = CalibrationAccumulator(labels=[1, 2, 3]).update(LAB, P3)
    assert acc.negative_log_likelihood() == pytest.approx(
        negative_log_likelihood(LAB, P3, labels=[1, 2, 3]), abs=1e-12
    )
    da = pytest.importorskip("dask.array")
    yd, pd_ = da.from_array(LAB, chunks=2), da.from_array(P3, chunks=(2, 3))
    with pytest.raises(ValueError, match="pass labels="):
        negative_log_likelihood(yd, pd_)
    with pytest.raises(ValueError, match="pass labels="):
        expected_calibration_error(yd, pd_)
    assert negative_log_likelihood(yd, pd_, labels=[1, 2, 3]) == pytest.approx(
        negative_log_likelihood(LAB, P3, labels=[1, 2, 3]), abs=1e-12
    )


def _rare_class_data():
    """Labels 1..3; class 3 has 3 samples in folds 0-2 of KFold(5), so folds
    3 and 4 lack it while every training set holds it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] > 0, 2, 1)
    X[y == 2, 1] += 3
    for i in (10, 70, 130):
        y[i] = 3
        X[i] = [0, -8]
    return X, y


@pytest.mark.parametrize(
    "name, metric",
    [
        ("neg_log_loss", negative_log_likelihood),
        ("neg_expected_calibration_error", expected_calibration_error),
        ("neg_brier_score", brier_score),
        ("neg_classwise_calibration_error", classwise_calibration_error),
    ],
)
def test_cross_val_score_folds_missing_a_class(name, metric):
    # Before: folds 3 and 4 scored -7.57 / -7.07 (NLL), -0.94 / -0.92 (ECE).
    X, y = _rare_class_data()
    cv = KFold(5)
    got = cross_val_score(LogisticRegression(), X, y, scoring=get_scorer(name), cv=cv)
    want = []
    for train, test in cv.split(X):
        clf = LogisticRegression().fit(X[train], y[train])
        assert clf.classes_.tolist() == [1, 2, 3]
        proba = clf.predict_proba(X[test])
        want.append(-metric(y[test], proba, labels=clf.classes_))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert set(y[cv.split(X).__next__()[1]]) == {1, 2, 3}


def test_scorer_binary_column_and_sample_weight_and_grid_search():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] + rng.normal(size=200) > 0, "spam", "ham")
    clf = LogisticRegression().fit(X, y)
    w = rng.uniform(0.5, 2, 200)
    p_spam = clf.predict_proba(X)[:, 1]
    # One test row only of "ham": the binary column is still classes_[1].
    keep = np.r_[np.flatnonzero(y == "spam"), np.flatnonzero(y == "ham")[:1]]
    nll = get_scorer("neg_log_loss")
    assert nll(clf, X[keep], y[keep]) == pytest.approx(
        -log_loss(y[keep], p_spam[keep], labels=["ham", "spam"]), rel=1e-12
    )
    assert nll(clf, X, y, sample_weight=w) == pytest.approx(
        -log_loss(y, p_spam, sample_weight=w), rel=1e-12
    )
    # All "spam": a fold of one class, scored with the classifier's classes.
    only = np.flatnonzero(y == "spam")
    assert nll(clf, X[only], y[only]) == pytest.approx(
        np.mean(np.log(p_spam[only])), rel=1e-12
    )
    ece10 = make_proba_scorer(
        expected_calibration_error, greater_is_better=False, n_bins=10
    )
    assert ece10(clf, X, y) == pytest.approx(
        -expected_calibration_error(y, p_spam, n_bins=10, labels=clf.classes_)
    )
    search = GridSearchCV(
        LogisticRegression(),
        {"C": [0.1, 1.0]},
        scoring={"ece": ece10, "nll": nll},
        refit="nll",
        cv=3,
    ).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_ece"]))


# ---------------------------------------------------------- item 7: weights
def _binary_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**2).astype(int)
    return y, p


@pytest.mark.parametrize("value", [1e308, 5e-324, 3.7, 2.0**-1074 * 3])
def test_uniform_weights_of_any_size_change_nothing(value):
    # Before: 1e308 gave NaN for ECE, NLL and Brier; 5e-324 gave ECE 0.235
    # (unweighted 0.0633) on these data.
    y, p = _binary_data()
    w = np.full(y.size, value)
    for metric in SCALAR_METRICS:
        assert metric(y, p, sample_weight=w) == pytest.approx(
            metric(y, p), rel=1e-12, abs=1e-15
        ), metric.__name__
    for kw in ({"strategy": "quantile"}, {"norm": "l2", "debias": True}):
        assert expected_calibration_error(y, p, sample_weight=w, **kw) == pytest.approx(
            expected_calibration_error(y, p, **kw), rel=1e-12
        )
    dec = calibration_refinement_decomposition(y, p, sample_weight=w)
    ref = calibration_refinement_decomposition(y, p)
    assert dec.loss == pytest.approx(ref.loss, rel=1e-12)
    assert dec.temperature == pytest.approx(ref.temperature, rel=1e-6)


def test_weight_scale_invariance_of_varied_weights_and_curve_counts():
    y, p = _binary_data(seed=3)
    w = np.random.default_rng(3).uniform(0, 3, y.size)
    for c in (1e300, 1e-300, 7.0):
        for metric in SCALAR_METRICS:
            assert metric(y, p, sample_weight=w * c) == pytest.approx(
                metric(y, p, sample_weight=w), rel=1e-12
            ), metric.__name__
    curve = reliability_curve(y, p, sample_weight=w * 1e300, kind="classwise")
    ref = reliability_curve(y, p, sample_weight=w, kind="classwise")
    np.testing.assert_allclose(curve.counts, ref.counts * 1e300, rtol=1e-12)
    np.testing.assert_allclose(curve.accuracy, ref.accuracy, rtol=1e-12)
    np.testing.assert_allclose(curve.lower, ref.lower, rtol=1e-12)
    # A bin whose total weight is beyond float64: a clear error.
    with pytest.raises(ValueError, match="exceeds the float64 range"):
        reliability_curve(y, p, sample_weight=np.full(y.size, 1e308))


def test_integer_weights_divide_exactly():
    w, scale = check_sample_weight([3.0, 1.0, 0.0, 2.0], 4)
    assert scale == 2.0 and w.tolist() == [1.5, 0.5, 0.0, 1.0]
    assert check_sample_weight(None, 3) == (None, 1.0)
    w, scale = check_sample_weight([1e308, 3e307, 0.0], 3)
    assert 1 <= w.max() < 2 and np.isfinite(w.sum()) and scale == 2.0**1023
    # Equal weights are no weights; the weight is kept as the scale.
    assert check_sample_weight(np.full(3, 1e308), 3) == (None, 1e308)


def test_accumulator_and_dask_with_extreme_weights():
    y, p = _binary_data(seed=4)
    w = np.random.default_rng(4).uniform(0.1, 1, y.size)
    want = {m.__name__: m(y, p, sample_weight=w) for m in SCALAR_METRICS}
    # Chunks of very different weight scales, as a stream might give them.
    scales = [1e-300, 1e300, 1.0, 1e308 / 2]
    for order in (scales, scales[::-1]):
        acc = CalibrationAccumulator(n_bins=15, labels=[0, 1])
        ww = np.concatenate(
            [w[i * 100 : (i + 1) * 100] * c for i, c in enumerate(order)]
        )
        for i in range(4):
            rows = slice(i * 100, (i + 1) * 100)
            acc.update(y[rows], p[rows], ww[rows])
        assert acc.expected_calibration_error() == pytest.approx(
            expected_calibration_error(y, p, sample_weight=ww), rel=1e-9, abs=1e-15
        )
        assert acc.negative_log_likelihood() == pytest.approx(
            negative_log_likelihood(y, p, sample_weight=ww), rel=1e-9
        )
        assert np.isfinite(acc.brier_score())
    # Uniformly huge weights: the same as unweighted, no overflow.
    acc = CalibrationAccumulator(labels=[0, 1])
    for rows in (slice(0, 150), slice(150, 400)):
        acc.update(y[rows], p[rows], np.full(y[rows].size, 1e308))
    assert acc.total_weight_ == np.inf  # 400 x 1e308, in the user's units
    for name in ("expected_calibration_error", "negative_log_likelihood"):
        assert getattr(acc, name)() == pytest.approx(getattr(M, name)(y, p), rel=1e-12)
    assert acc.brier_score() == pytest.approx(brier_score(y, p), rel=1e-12)
    da = pytest.importorskip("dask.array")
    yd, pd_ = da.from_array(y, chunks=100), da.from_array(p, chunks=100)
    wd = da.from_array(w * 1e308, chunks=100)
    for metric in SCALAR_METRICS:
        assert metric(yd, pd_, sample_weight=wd) == pytest.approx(
            want[metric.__name__], rel=1e-12
        ), metric.__name__


# ------------------------------------------------------- item 9: NLL dtype
def test_nll_one_clip_rule_for_every_dtype():
    # Before: float32 clipped at float32 eps (15.9 per sample) and summed in
    # float32: 5.2379 against 5.4545 for float64 on the data below.
    rng = np.random.default_rng(0)
    z = rng.normal(size=(2000, 3)) * 6
    q = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = rng.integers(0, 3, 2000)
    q32 = q.astype(np.float32)
    p_true = q32[np.arange(y.size), y].astype(np.float64)
    want = -np.mean(np.log(np.maximum(p_true, np.finfo(np.float64).eps)))
    assert negative_log_likelihood(y, q32) == pytest.approx(want, abs=1e-12)
    assert negative_log_likelihood(y, q32) == pytest.approx(
        negative_log_likelihood(y, q32.astype(np.float64)), abs=1e-12
    )
    # A zero true-class probability costs -log(2.2e-16) = 36.04 in any dtype,
    # which is scikit-learn's cost for float64.
    for dtype in (np.float32, np.float64):
        p = np.array([[1.0, 0.0], [0.5, 0.5]], dtype=dtype)
        assert negative_log_likelihood([1, 0], p) == pytest.approx(
            (-np.log(np.finfo(np.float64).eps) + np.log(2)) / 2, rel=1e-12
        )
    assert negative_log_likelihood([1, 0], [[1.0, 0.0], [0.5, 0.5]]) == (
        pytest.approx(log_loss([1, 0], [[1.0, 0.0], [0.5, 0.5]]), rel=1e-12)
    )
    # The chunked path follows the same rule.
    acc = CalibrationAccumulator(labels=[0, 1, 2]).update(y, q32)
    assert acc.negative_log_likelihood() == pytest.approx(want, abs=1e-12)


# -------------------------------------------------------- n_bins bound
@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        classwise_calibration_error,
        reliability_curve,
        M.calibration_error_interval,
    ],
    ids=lambda m: m.__name__,
)
def test_huge_n_bins_is_a_value_error(metric):
    # Before: MemoryError (7.28 TiB).
    y, p = _binary_data(n=50)
    with pytest.raises(ValueError, match=r"n_bins=1000000000000 is too large"):
        _call(metric, y, p, n_bins=10**12)


def test_n_bins_bound_follows_the_data():
    assert check_n_bins(65536) == 65536
    assert check_n_bins(np.int64(7)) == 7 and type(check_n_bins(np.int64(7))) is int
    assert check_n_bins(100_000, n_samples=100_000) == 100_000
    with pytest.raises(ValueError, match=r"max\(65536, n_samples=100000\) = 100000"):
        check_n_bins(100_001, n_samples=100_000)
    with pytest.raises(ValueError, match=r"at most max\(65536\) = 65536"):
        check_n_bins(65537)
    for bad in (True, np.bool_(False), 0):
        with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
            check_n_bins(bad)
    with pytest.raises(ValueError, match=r"got True\.$"):
        check_n_bins(np.bool_(True))  # plain Python value in the message
    # More bins than samples, below the floor: allowed (empty bins).
    y, p = _binary_data(n=30)
    curve = reliability_curve(y, p, n_bins=1000, kind="classwise")
    assert curve.counts.sum() == 30
    with pytest.raises(ValueError, match="too large"):
        CalibrationAccumulator(n_bins=10**9)


# ------------------------------------------------------------ messages
def test_metric_messages_do_not_mention_score_type_or_numpy_reprs():
    bad_rows = P3.copy()
    bad_rows[2] = [0.5, 0.5, 0.5]
    for metric in METRICS:
        with pytest.raises(ValueError) as exc:
            _call(metric, LAB, bad_rows, labels=[1, 2, 3])
        msg = str(exc.value)
        assert "score_type" not in msg and "softmax" in msg, msg
        assert "row 2" in msg
    acc = CalibrationAccumulator(labels=[1, 2, 3])
    with pytest.raises(ValueError, match="softmax") as exc:
        acc.update(LAB, bad_rows)
    assert "score_type" not in str(exc.value)
    with pytest.raises(ValueError) as exc:
        brier_score([0, 1], [0.2, 0.3], sample_weight=np.array([1.0, -2.0]))
    assert "sample_weight[1] = -2.0." in str(exc.value)
    with pytest.raises(ValueError) as exc:
        expected_calibration_error(
            np.array([5, 5], dtype=np.int64), [0.2, 0.3], labels=np.array([0, 1])
        )
    assert "np." not in str(exc.value) and "[5]" in str(exc.value)


# ----------------------------------------------------------- item: no NaN
CASES = {
    "constant 1-D": ([0, 1, 0, 1], np.full(4, 0.5), None),
    "constant 2-D": ([0, 1, 2, 1], np.full((4, 3), 1 / 3), None),
    "one sample": ([1], [0.7], None),
    "one sample 2-D": ([2], [[0.2, 0.3, 0.5]], None),
    "weight on one row": ([0, 1, 0, 1], [0.1, 0.6, 0.3, 0.9], [0, 0, 5.0, 0]),
    "certain and wrong": ([1, 1, 0, 0], [0.0, 0.0, 1.0, 1.0], None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_nan_on_degenerate_inputs(case):
    y, p, w = CASES[case]
    labels = [0, 1, 2] if np.ndim(p) == 2 else [0, 1]
    for metric in SCALAR_METRICS:
        for kw in ({}, {"strategy": "quantile"}, {"norm": "l2", "debias": True}):
            if metric in (brier_score, negative_log_likelihood) and kw:
                continue
            if metric is maximum_calibration_error and "norm" in kw:
                continue
            value = metric(y, p, sample_weight=w, labels=labels, **kw)
            assert np.isfinite(value), (metric.__name__, kw)
    dec = calibration_refinement_decomposition(y, p, sample_weight=w, labels=labels)
    assert all(np.isfinite([dec.loss, dec.calibration, dec.refinement]))
    assert np.isfinite(dec.temperature)
    # By hand for two of them.
    if case == "weight on one row":  # only p = 0.3, y = 0 counts
        assert brier_score(y, p, sample_weight=w) == pytest.approx(0.09)
        assert negative_log_likelihood(y, p, sample_weight=w) == pytest.approx(
            -np.log(0.7)
        )
    if case == "certain and wrong":  # every sample wrong with confidence 1
        assert expected_calibration_error(y, p) == pytest.approx(1.0)
        assert negative_log_likelihood(y, p) == pytest.approx(
            -np.log(np.finfo(np.float64).eps)
        )
