"""Multi-label metrics: each label is the binary problem of its column.

References: the package's binary metrics on each column, scikit-learn's
``brier_score_loss`` and ``log_loss`` per column (independent
implementations), hand computations on a 4 x 2 example, and the classwise
ECE of the one-hot encoding of a multiclass problem.
"""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss, make_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier

from skcalib.metrics import (
    MultilabelProbaScorer,
    brier_score,
    classwise_calibration_error,
    get_scorer,
    make_multilabel_scorer,
    multilabel_brier_score,
    multilabel_brier_scorer,
    multilabel_calibration_error,
    multilabel_ece_scorer,
    multilabel_log_loss,
    multilabel_nll_scorer,
    multilabel_reliability_curve,
    negative_log_likelihood,
    reliability_curve,
)

#: The example of the docstrings.
Y4 = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
P4 = np.array([[0.8, 0.3], [0.4, 0.6], [0.9, 0.7], [0.2, 0.1]])


def _data(n=500, n_labels=5, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.beta(0.7, 0.9, size=(n, n_labels))
    Y = (rng.uniform(size=(n, n_labels)) < P**1.3).astype(int)
    return Y, P, rng.uniform(0.2, 3.0, n)


def _ece_of_curve(curve, norm):
    """The error of a curve's bins, by hand."""
    keep = curve.nonempty
    w = curve.counts[keep]
    gap = np.abs(curve.accuracy[keep] - curve.mean_confidence[keep])
    if norm == "l1":
        return float((w * gap).sum() / w.sum())
    if norm == "l2":
        return float(np.sqrt((w * gap**2).sum() / w.sum()))
    return float(gap.max())


# ------------------------------------------------------- per-label values
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_per_label_ece_is_the_binary_curve_error(norm, strategy, weighted):
    Y, P, w = _data()
    w = w if weighted else None
    got = multilabel_calibration_error(
        Y, P, average=None, n_bins=10, strategy=strategy, norm=norm, sample_weight=w
    )
    assert got.shape == (5,)
    for j in range(5):
        curve = reliability_curve(
            Y[:, j], P[:, j], n_bins=10, strategy=strategy, kind="classwise",
            sample_weight=w,
        )  # fmt: skip
        assert got[j] == pytest.approx(_ece_of_curve(curve, norm), abs=1e-12)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_per_label_ece_equals_the_binary_classwise_error(norm):
    """For uniform bins and values off the edges, the binary classwise
    error (the mean over the two classes, which mirror each other) is the
    positive class's error."""
    Y, P, w = _data(seed=3)
    got = multilabel_calibration_error(Y, P, average=None, norm=norm, sample_weight=w)
    for j in range(5):
        ref = classwise_calibration_error(Y[:, j], P[:, j], norm=norm, sample_weight=w)
        assert got[j] == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_per_label_brier_and_log_loss_match_sklearn(weighted):
    Y, P, w = _data(seed=1)
    w = w if weighted else None
    brier = multilabel_brier_score(Y, P, average=None, sample_weight=w)
    nll = multilabel_log_loss(Y, P, average=None, sample_weight=w)
    for j in range(5):
        y, p = Y[:, j], P[:, j]
        assert brier[j] == pytest.approx(
            brier_score_loss(y, p, sample_weight=w), abs=1e-12
        )
        assert brier[j] == pytest.approx(brier_score(y, p, sample_weight=w), abs=1e-12)
        ref = log_loss(y, p, sample_weight=w, labels=[0, 1])
        assert nll[j] == pytest.approx(ref, abs=1e-12)
        assert nll[j] == pytest.approx(
            negative_log_likelihood(y, p, sample_weight=w), abs=1e-12
        )


def test_extreme_probabilities_as_the_binary_log_loss():
    """0 and 1 are used as the binary loss uses them: a sure, wrong 0 costs
    -log(eps) (its floor), a sure right one nothing."""
    Y = np.array([[1, 0], [0, 1], [1, 1]])
    P = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.5]])
    nll = multilabel_log_loss(Y, P, average=None)
    assert nll[0] == pytest.approx(-np.log(np.finfo(np.float64).eps) / 3, rel=1e-12)
    assert nll[1] == pytest.approx(np.log(2.0) / 3, rel=1e-12)
    for j in range(2):
        assert nll[j] == negative_log_likelihood(Y[:, j], P[:, j], labels=[0, 1])
    assert multilabel_brier_score(Y, P, average=None).tolist() == [1 / 3, 0.25 / 3]


# ---------------------------------------------------------------- averages
def test_averages_by_hand():
    """Label 0: bins [0, .5] (p .4, .2; y 0, 1) gap .2 and (.5, 1] (.8, .9;
    1, 1) gap .15: ECE .175; label 1: gaps .2 and .35: ECE .275;
    prevalences 3 and 2. Micro: the 8 entries pooled, gaps 0 and .25."""
    kw = dict(n_bins=2)
    per = multilabel_calibration_error(Y4, P4, average=None, **kw)
    np.testing.assert_allclose(per, [0.175, 0.275], atol=1e-12)
    assert multilabel_calibration_error(Y4, P4, **kw) == pytest.approx(0.225)
    weighted = multilabel_calibration_error(Y4, P4, average="weighted", **kw)
    assert weighted == pytest.approx((3 * 0.175 + 2 * 0.275) / 5, abs=1e-12)
    micro = multilabel_calibration_error(Y4, P4, average="micro", **kw)
    assert micro == pytest.approx(0.125, abs=1e-12)
    # Brier: label 0 (.04 + .16 + .01 + .64) / 4, label 1 (.09 + .16 + .09 + .01) / 4
    brier = [0.85 / 4, 0.35 / 4]
    np.testing.assert_allclose(multilabel_brier_score(Y4, P4, average=None), brier)
    assert multilabel_brier_score(Y4, P4) == pytest.approx(np.mean(brier))
    assert multilabel_brier_score(Y4, P4, average="weighted") == pytest.approx(
        (3 * brier[0] + 2 * brier[1]) / 5
    )
    nll = [-np.log([0.8, 0.6, 0.9, 0.2]).mean(), -np.log([0.7, 0.6, 0.7, 0.9]).mean()]
    np.testing.assert_allclose(multilabel_log_loss(Y4, P4, average=None), nll)
    assert multilabel_log_loss(Y4, P4, average="micro") == pytest.approx(np.mean(nll))


def test_weighted_average_uses_weighted_prevalence():
    w = np.array([1.0, 2.0, 0.5, 4.0])
    per = multilabel_calibration_error(Y4, P4, average=None, sample_weight=w)
    prevalence = w @ Y4  # label 0: 1 + .5 + 4, label 1: 2 + .5
    got = multilabel_calibration_error(Y4, P4, average="weighted", sample_weight=w)
    assert got == pytest.approx((prevalence * per).sum() / prevalence.sum(), abs=1e-12)


def test_micro_pools_the_entries_and_proper_scores_micro_equals_macro():
    Y, P, w = _data(seed=2)
    micro = multilabel_calibration_error(Y, P, average="micro", sample_weight=w)
    curve = reliability_curve(
        Y.ravel(), P.ravel(), kind="classwise", sample_weight=np.repeat(w, 5)
    )
    assert micro == pytest.approx(_ece_of_curve(curve, "l1"), abs=1e-12)
    for f in (multilabel_brier_score, multilabel_log_loss):
        a = f(Y, P, average="micro", sample_weight=w)
        assert a == pytest.approx(f(Y, P, sample_weight=w), abs=1e-12)


def test_label_without_positives_has_weight_zero():
    Y, P, _ = _data(n=200, n_labels=3, seed=4)
    Y[:, 1] = 0
    per = multilabel_calibration_error(Y, P, average=None)
    assert per[1] > 0  # defined: its probabilities against all zeros
    got = multilabel_calibration_error(Y, P, average="weighted")
    prevalence = Y.sum(axis=0)
    assert got == pytest.approx((prevalence * per).sum() / prevalence.sum())
    # A weight of 0 on the only positive rows of a label counts as no positive.
    with pytest.raises(ValueError, match="no label has a sample of positive"):
        multilabel_calibration_error(np.zeros((4, 2)), P4, average="weighted")
    w = np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="no label has a sample of positive"):
        multilabel_brier_score([[1, 0], [0, 0], [1, 0], [0, 0]], P4, sample_weight=w,
                               average="weighted")  # fmt: skip


def test_sample_weight_equals_repeated_rows():
    Y, P, _ = _data(n=150, seed=5)
    reps = np.random.default_rng(0).integers(0, 4, 150)
    reps[:3] = 1
    for average in ("macro", "micro", "weighted", None):
        for f in (multilabel_calibration_error, multilabel_brier_score):
            a = f(Y, P, average=average, sample_weight=reps.astype(float))
            b = f(
                np.repeat(Y, reps, axis=0), np.repeat(P, reps, axis=0), average=average
            )
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------ classwise relation
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"strategy": "quantile", "n_bins": 8},
        {"norm": "l2"},
        {"norm": "l2", "debias": True},
        {"norm": "max", "n_bins": 5},
    ],
    ids=["l1", "quantile", "l2", "l2-debiased", "max"],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_macro_of_one_hot_is_the_classwise_ece(options, weighted):
    rng = np.random.default_rng(6)
    P = rng.dirichlet(np.ones(4) * 0.6, size=700)
    y = (rng.uniform(size=(700, 1)) > np.cumsum(P, axis=1)).sum(axis=1).clip(0, 3)
    Y = np.eye(4, dtype=int)[y]
    w = rng.uniform(0.1, 2.0, 700) if weighted else None
    macro = multilabel_calibration_error(Y, P, sample_weight=w, **options)
    classwise = classwise_calibration_error(y, P, sample_weight=w, **options)
    assert abs(macro - classwise) <= 1e-12


# -------------------------------------------------------------- the curves
def test_curves_are_the_binary_curves():
    Y, P, w = _data(seed=7)
    curves = multilabel_reliability_curve(Y, P, n_bins=7, sample_weight=w)
    per = multilabel_calibration_error(Y, P, n_bins=7, sample_weight=w, average=None)
    assert len(curves) == 5
    for j, curve in enumerate(curves):
        ref = reliability_curve(
            Y[:, j], P[:, j], n_bins=7, kind="classwise", sample_weight=w
        )
        for field in ("edges", "counts", "accuracy", "mean_confidence", "lower"):
            np.testing.assert_array_equal(getattr(curve, field), getattr(ref, field))
        assert curve.class_index == 1 and curve.kind == "classwise"
        assert _ece_of_curve(curve, "l1") == pytest.approx(per[j], abs=1e-12)


# ------------------------------------------------------------------ errors
def test_bad_targets_and_shapes():
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        multilabel_calibration_error([0, 1, 1, 0], P4)
    with pytest.raises(ValueError, match=r"y_true\[1, 0\] = 2"):
        multilabel_brier_score([[1, 0], [2, 1], [1, 1], [1, 0]], P4)
    with pytest.raises(ValueError, match=r"shape of y_true \(4, 2\).*\(4, 3\)"):
        multilabel_log_loss(Y4, np.full((4, 3), 0.5))
    with pytest.raises(ValueError, match=r"shape of y_true \(4, 2\).*\(3, 2\)"):
        multilabel_calibration_error(Y4, P4[:3])


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (np.nan, "contains NaN; row 2"),
        (np.inf, r"y_proba\[:, 1\] \(label 1\) must hold probabilities"),
        (1.5, r"y_proba\[:, 1\] \(label 1\) must hold probabilities.*row 2"),
        (-0.1, r"label 1.*row 2 has -0.1"),
    ],
)
def test_bad_probabilities(value, match):
    P = P4.copy()
    P[2, 1] = value
    for f in (multilabel_calibration_error, multilabel_log_loss,
              multilabel_reliability_curve):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            f(Y4, P)


def test_list_of_per_label_arrays_is_refused():
    proba = [np.column_stack([1 - P4[:, j], P4[:, j]]) for j in range(2)]
    for f in (multilabel_calibration_error, multilabel_brier_score):
        with pytest.raises(ValueError, match=r"list of 2 per-label arrays.*classes_"):
            f(Y4, proba)
    # A nested list of numbers is a matrix, not a per-label list.
    assert multilabel_brier_score(Y4, P4.tolist()) == multilabel_brier_score(Y4, P4)


@pytest.mark.parametrize(
    ("weight", "match"),
    [
        ([1.0, -1.0, 1.0, 1.0], r"sample_weight\[1\] = -1.0"),
        ([1.0, np.nan, 1.0, 1.0], "NaN"),
        ([0.0, 0.0, 0.0, 0.0], "sums to 0"),
        ([1.0, 1.0], r"shape \(4,\)"),
    ],
)
def test_bad_sample_weight(weight, match):
    for f in (multilabel_calibration_error, multilabel_log_loss):
        with pytest.raises(ValueError, match=match):
            f(Y4, P4, sample_weight=weight)


def test_bad_options():
    with pytest.raises(ValueError, match="average"):
        multilabel_calibration_error(Y4, P4, average="samples")
    with pytest.raises(ValueError, match="debias=True is defined for norm='l2'"):
        multilabel_calibration_error(Y4, P4, debias=True)


def test_sparse_and_boolean_targets():
    import scipy.sparse as sp

    ref = multilabel_calibration_error(Y4, P4, n_bins=2)
    assert multilabel_calibration_error(sp.csr_matrix(Y4), P4, n_bins=2) == ref
    assert multilabel_calibration_error(Y4.astype(bool), P4, n_bins=2) == ref


# ----------------------------------------------------------------- scorers
@pytest.fixture(scope="module")
def multilabel_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    Y = (X[:, :3] + rng.normal(size=(300, 3)) > 0).astype(int)
    return X, Y


SCORERS = [
    ("neg_multilabel_calibration_error", multilabel_ece_scorer,
     multilabel_calibration_error),
    ("neg_multilabel_brier_score", multilabel_brier_scorer, multilabel_brier_score),
    ("neg_multilabel_log_loss", multilabel_nll_scorer, multilabel_log_loss),
]  # fmt: skip


@pytest.mark.parametrize(("name", "scorer", "metric"), SCORERS)
def test_scorer_of_a_matrix_predict_proba(multilabel_data, name, scorer, metric):
    X, Y = multilabel_data
    clf = OneVsRestClassifier(LogisticRegression()).fit(X, Y)
    expected = -metric(Y, clf.predict_proba(X))
    assert scorer(clf, X, Y) == expected
    assert get_scorer(name)(clf, X, Y) == expected
    assert isinstance(get_scorer(name), MultilabelProbaScorer)
    # the same value as scikit-learn's own make_scorer of the metric
    plain = make_scorer(
        metric, greater_is_better=False, response_method="predict_proba"
    )
    assert plain(clf, X, Y) == expected
    w = np.linspace(0.5, 2.0, Y.shape[0])
    assert scorer(clf, X, Y, sample_weight=w) == -metric(
        Y, clf.predict_proba(X), sample_weight=w
    )


@pytest.mark.parametrize(("name", "scorer", "metric"), SCORERS)
def test_scorer_of_a_list_predict_proba(multilabel_data, name, scorer, metric):
    """Each label's class-1 column is read by classes_: also for a label
    trained on one class (one column, class 0), where scikit-learn's own
    scorer passes the list on and the metric refuses it."""
    X, Y = multilabel_data
    Y = Y.copy()
    Y[:, 2] = 0
    clf = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, Y)
    assert [c.tolist() for c in clf.classes_] == [[0, 1], [0, 1], [0]]
    proba = clf.predict_proba(X)
    matrix = np.column_stack([proba[0][:, 1], proba[1][:, 1], np.zeros(len(X))])
    assert scorer(clf, X, Y) == -metric(Y, matrix)
    plain = make_scorer(
        metric, greater_is_better=False, response_method="predict_proba"
    )
    with pytest.raises(ValueError, match="list of 3 per-label arrays"):
        plain(clf, X, Y)
    two = MultiOutputClassifier(LogisticRegression()).fit(X, multilabel_data[1])
    matrix = np.column_stack([p[:, 1] for p in two.predict_proba(X)])
    assert scorer(two, X, multilabel_data[1]) == -metric(multilabel_data[1], matrix)


def test_scorer_in_a_grid_search_and_its_options(multilabel_data):
    X, Y = multilabel_data
    micro = make_multilabel_scorer(
        multilabel_calibration_error, greater_is_better=False, average="micro"
    )
    assert repr(micro) == (
        "make_multilabel_scorer(multilabel_calibration_error, "
        "greater_is_better=False, average='micro')"
    )
    search = GridSearchCV(
        OneVsRestClassifier(LogisticRegression()),
        {"estimator__C": [0.01, 1.0]},
        scoring={"ece": multilabel_ece_scorer, "micro": micro},
        refit="ece",
        cv=3,
    ).fit(X, Y)
    assert np.all(search.cv_results_["mean_test_ece"] <= 0)
    assert np.all(search.cv_results_["mean_test_micro"] <= 0)
    with pytest.raises(TypeError, match="has no predict_proba"):
        multilabel_brier_scorer(object(), X, Y)
