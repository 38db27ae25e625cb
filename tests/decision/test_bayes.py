"""Bayes decisions from probabilities and a cost matrix (skcalib.decision)."""

import pickle

import numpy as np
import pytest
from _discovery import default_instance, score_calibrator_classes
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix, make_scorer
from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

from skcalib import (
    BayesDecisionClassifier,
    CalibratedClassifier,
    IdentityCalibrator,
    IsotonicCalibrator,
    TemperatureCalibrator,
)
from skcalib.decision import bayes_decisions, expected_cost

#: Three rows and a cost matrix (rows: true class, columns: action) whose
#: decisions were computed by hand. Expected costs sum_k p_k C[k, a]:
#: row 0: (1.0, 1.7, 3.0) -> 0; row 1: (2.35, 1.55, 1.95) -> 1 (argmax
#: would say 0); row 2: (5.1, 2.0, 0.7) -> 2. The transposed matrix gives
#: row 2 (3.0, 0.7, 1.7) -> 1, so the orientation matters (its row 0 is a
#: tie, 0.8 and 0.8, decided by rounding).
PROBA3 = np.array([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.1, 0.3, 0.6]])
COST3 = np.array([[0.0, 2.0, 4.0], [1.0, 0.0, 1.0], [8.0, 3.0, 0.0]])


def _slow_decisions(proba, cost):
    """Loop reference: expected cost of each action, first minimum wins."""
    out = []
    for p in proba:
        risks = [
            sum(p[k] * cost[k, a] for k in range(len(p))) for a in range(cost.shape[1])
        ]
        best = 0
        for a, r in enumerate(risks):
            if r < risks[best]:
                best = a
        out.append(best)
    return np.array(out)


def _multiclass(n=1200, k=3, seed=0):
    X, y = make_classification(
        n, n_classes=k, n_informative=4, n_clusters_per_class=1, random_state=seed
    )
    return X, y


# ----------------------------------------------------------------- the rule
def test_hand_computed_decisions():
    assert bayes_decisions(PROBA3, COST3).tolist() == [0, 1, 2]
    assert bayes_decisions(PROBA3, COST3.T)[1:].tolist() == [1, 1]
    with_abstain = np.column_stack([COST3, np.full(3, 1.2)])  # row 1: 1.2 < 1.55
    assert bayes_decisions(PROBA3, with_abstain).tolist() == [0, -1, 2]
    got = bayes_decisions(
        PROBA3, with_abstain, labels=["x", "y", "z"], abstain_label="?"
    )
    assert got.tolist() == ["x", "?", "z"] and got.dtype.kind == "U"


def test_hand_computed_expected_cost():
    with_abstain = np.column_stack([COST3, np.full(3, 1.2)])
    y = [0, 2, 2]
    assert expected_cost(
        y, [0, -1, 2], with_abstain, labels=[0, 1, 2]
    ) == pytest.approx(0.4)
    got = expected_cost(
        y, [0, -1, 2], with_abstain, labels=[0, 1, 2], sample_weight=[1, 2, 1]
    )
    assert got == pytest.approx(0.6)
    assert expected_cost([0, 1, 2], [1, 2, 0], COST3) == pytest.approx((2 + 1 + 8) / 3)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_matmul_equals_loop_reference(k):
    rng = np.random.default_rng(k)
    proba = rng.dirichlet(np.ones(k), size=400)
    cost = rng.uniform(-1, 3, size=(k, k + 1))
    assert np.array_equal(
        bayes_decisions(proba, cost, abstain_label=k), _slow_decisions(proba, cost)
    )
    assert np.array_equal(
        bayes_decisions(proba, cost[:, :k]), _slow_decisions(proba, cost[:, :k])
    )


def test_chow_reject_rule():
    """0-1 costs and abstain cost c: predict the argmax iff max p >= 1 - c."""
    rng = np.random.default_rng(1)
    proba = rng.dirichlet(np.ones(4), size=2000)
    c = 0.3
    cost = np.column_stack([1 - np.eye(4), np.full(4, c)])
    expected = np.where(proba.max(axis=1) >= 1 - c, proba.argmax(axis=1), -1)
    assert np.array_equal(bayes_decisions(proba, cost), expected)
    assert 0.1 < np.mean(expected == -1) < 0.9  # both kinds of decision occur


def test_zero_one_cost_is_argmax():
    rng = np.random.default_rng(2)
    proba = rng.dirichlet(np.ones(5), size=500)
    assert np.array_equal(bayes_decisions(proba, 1 - np.eye(5)), proba.argmax(axis=1))


def test_ties_go_to_the_lowest_column():
    half = np.array([[0.5, 0.5]])  # exact in binary: equal expected costs
    assert bayes_decisions(half, 1 - np.eye(2)).tolist() == [0]
    assert bayes_decisions(half, 1 - np.eye(2), labels=["b", "a"]).tolist() == ["b"]
    # a class costs 0.5, abstaining 0.5: the class, not abstaining
    cost = np.column_stack([1 - np.eye(2), np.full(2, 0.5)])
    assert bayes_decisions(half, cost).tolist() == [0]
    assert bayes_decisions(half, cost + [0, 0, -1e-9]).tolist() == [-1]


def test_binary_1d_equals_2d_and_float32():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=300)
    cost = np.array([[0.0, 1.0, 0.25], [3.0, 0.0, 0.25]])
    one = bayes_decisions(p, cost)
    assert np.array_equal(one, bayes_decisions(np.column_stack([1 - p, p]), cost))
    assert np.array_equal(one, bayes_decisions(p[:, None], cost))
    p32 = np.column_stack([1 - p, p]).astype(np.float32)
    assert np.mean(bayes_decisions(p32, cost) == one) > 0.99


def test_abstain_label_of_another_kind_gives_object_dtype():
    cost = np.column_stack([COST3, np.full(3, 1.2)])
    got = bayes_decisions(PROBA3, cost, labels=["x", "y", "z"])
    assert got.dtype == object and got.tolist() == ["x", -1, "z"]
    assert expected_cost(
        ["x", "z", "z"], got, cost, labels=["x", "y", "z"]
    ) == pytest.approx(0.4)


def test_expected_cost_matches_confusion_matrix():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, 500)
    d = rng.integers(0, 4, 500)
    cost = rng.uniform(0, 2, size=(4, 4))
    reference = (confusion_matrix(y, d, labels=range(4)) * cost).sum() / y.size
    assert expected_cost(y, d, cost) == pytest.approx(reference, rel=1e-12)


def test_expected_cost_weights():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 60)
    d = rng.integers(-1, 3, 60)
    cost = np.column_stack([rng.uniform(0, 2, (3, 3)), np.full(3, 0.3)])
    w = rng.integers(0, 3, 60)
    repeated = expected_cost(np.repeat(y, w), np.repeat(d, w), cost, labels=[0, 1, 2])
    assert expected_cost(
        y, d, cost, sample_weight=w, labels=[0, 1, 2]
    ) == pytest.approx(repeated, rel=1e-12)


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (3, 5), (3,)])
def test_cost_matrix_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"\(3, 3\).*\(3, 4\).*got shape"):
        bayes_decisions(PROBA3, np.ones(shape))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_cost_matrix_with_nan_or_inf_names_the_entry(bad):
    cost = COST3.copy()
    cost[1, 2] = bad
    with pytest.raises(ValueError, match=rf"cost_matrix\[1, 2\] is {bad}"):
        bayes_decisions(PROBA3, cost)
    with pytest.raises(ValueError, match=r"cost_matrix\[1, 2\]"):
        expected_cost([0, 1, 2], [0, 1, 2], cost)
    with pytest.raises(ValueError, match=r"cost_matrix\[1, 2\]"):
        BayesDecisionClassifier(cost_matrix=cost).fit(PROBA3, [0, 1, 2])


def test_non_numeric_cost_matrix():
    with pytest.raises(ValueError, match="cost_matrix must be a 2-D array of numbers"):
        bayes_decisions(PROBA3, [["a", "b", "c"]] * 3)


def test_rows_not_summing_to_one():
    with pytest.raises(ValueError, match="rows must sum to 1.*row 1"):
        bayes_decisions([[0.5, 0.5], [0.6, 0.6]], 1 - np.eye(2))
    with pytest.raises(ValueError, match="probabilities in"):
        bayes_decisions([0.5, 1.5], 1 - np.eye(2))
    with pytest.raises(ValueError, match="NaN"):
        bayes_decisions([0.5, np.nan], 1 - np.eye(2))


def test_three_d_proba_names_the_shape():
    with pytest.raises(ValueError, match=r"got shape \(2, 3, 3\); average"):
        bayes_decisions(np.full((2, 3, 3), 1 / 3), COST3)


def test_labels_errors():
    with pytest.raises(ValueError, match="one label per class"):
        bayes_decisions(PROBA3, COST3, labels=[0, 1])
    with pytest.raises(ValueError, match="unique"):
        bayes_decisions(PROBA3, COST3, labels=[0, 1, 1])
    cost = np.column_stack([COST3, np.ones(3)])
    with pytest.raises(ValueError, match="abstain_label=-1 is one of the class labels"):
        bayes_decisions(PROBA3, cost, labels=[-1, 0, 1])


def test_expected_cost_errors():
    with pytest.raises(ValueError, match=r"not in labels=\[0, 1, 2\]"):
        expected_cost([0, 1, 2], [0, 1, 5], COST3)
    with pytest.raises(ValueError, match="nor abstain_label=-1"):
        expected_cost([0, 1, 2], [0, 1, 5], np.column_stack([COST3, np.ones(3)]))
    with pytest.raises(ValueError, match="no abstain column"):
        expected_cost([0, 1, 2], [0, 1, -1], COST3)
    with pytest.raises(ValueError, match="pass labels="):
        expected_cost([0, 1, 1], [0, 1, 1], COST3)
    with pytest.raises(ValueError, match=r"y_true contains label\(s\) \[7\]"):
        expected_cost([0, 1, 7], [0, 1, 1], COST3, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="3 samples but decisions has 2"):
        expected_cost([0, 1, 2], [0, 1], COST3)


def test_classifier_errors():
    with pytest.raises(ValueError, match=r"\(2, 2\).*\(2, 3\).*got shape \(3, 3\)"):
        BayesDecisionClassifier(cost_matrix=COST3).fit([[0.3, 0.7], [0.6, 0.4]], [0, 1])
    cost = np.column_stack([1 - np.eye(2), np.ones(2)])
    with pytest.raises(ValueError, match="abstain_label=1 is one of the class"):
        BayesDecisionClassifier(cost_matrix=cost, abstain_label=1).fit(
            [[0.3, 0.7], [0.6, 0.4]], [0, 1]
        )


# --------------------------------------------------------- the estimator
def test_classifier_after_a_calibrator_and_in_a_pipeline():
    X, y = _multiclass()
    clf = LogisticRegression(C=10).fit(X[:400], y[:400])
    coef = clf.coef_.copy()
    cost = np.array([[0, 1, 1, 0.3], [1, 0, 1, 0.3], [6, 6, 0, 0.3]], dtype=float)
    cal = TemperatureCalibrator(estimator=clf).fit(X[400:800], y[400:800])
    expected = bayes_decisions(cal.predict_proba(X[800:]), cost, labels=cal.classes_)
    assert {-1, 0, 1, 2} <= set(expected.tolist())

    meta = BayesDecisionClassifier(TemperatureCalibrator(estimator=clf), cost)
    meta.fit(X[400:800], y[400:800])
    assert meta.estimator_.estimator is clf and np.array_equal(clf.coef_, coef)
    assert np.array_equal(meta.predict(X[800:]), expected)
    np.testing.assert_allclose(meta.predict_proba(X[800:]), cal.predict_proba(X[800:]))

    pipe = make_pipeline(
        TemperatureCalibrator(estimator=clf), BayesDecisionClassifier(cost_matrix=cost)
    ).fit(X[400:800], y[400:800])
    assert np.array_equal(pipe.predict(X[800:]), expected)
    again = pickle.loads(pickle.dumps(meta))
    assert np.array_equal(again.predict(X[800:]), expected)
    assert np.array_equal(
        clone(meta).fit(X[400:800], y[400:800]).predict(X[800:]), expected
    )


@pytest.mark.parametrize("cls", score_calibrator_classes(), ids=lambda c: c.__name__)
def test_after_every_calibrator_in_a_pipeline(cls):
    """Raw logits -> any calibrator -> Bayes decisions, with string labels."""
    X, y = _multiclass(900, seed=1)
    clf = LogisticRegression().fit(X[:300], y[:300])
    logits = clf.decision_function(X[300:])
    labels = np.array(["ant", "bee", "cat"])[y[300:]]
    cost = np.array([[0, 1, 2, 0.4], [1, 0, 2, 0.4], [4, 4, 0, 0.4]], dtype=float)
    cal = default_instance(cls).fit(logits[:300], labels[:300])
    pipe = make_pipeline(
        default_instance(cls),
        BayesDecisionClassifier(cost_matrix=cost, abstain_label="?"),
    )
    pipe.fit(logits[:300], labels[:300])
    expected = bayes_decisions(
        cal.predict_proba(logits[300:]), cost, labels=cal.classes_, abstain_label="?"
    )
    assert np.array_equal(pipe.predict(logits[300:]), expected)
    assert set(expected.tolist()) <= {"ant", "bee", "cat", "?"}


def test_frozen_and_cross_fitted_estimators():
    X, y = _multiclass(seed=2)
    clf = LogisticRegression().fit(X[:600], y[:600])
    frozen = BayesDecisionClassifier(FrozenEstimator(clf), cost_matrix=COST3)
    frozen.fit(X[600:], y[600:])
    expected = bayes_decisions(clf.predict_proba(X[600:]), COST3, labels=clf.classes_)
    assert np.array_equal(frozen.predict(X[600:]), expected)
    assert frozen.n_features_in_ == X.shape[1]

    crossed = BayesDecisionClassifier(
        CalibratedClassifier(LogisticRegression(), IsotonicCalibrator(), cv=3), COST3
    ).fit(X, y)
    probs = crossed.estimator_.predict_proba(X)
    assert np.array_equal(crossed.predict(X), bayes_decisions(probs, COST3))


def test_default_cost_is_the_argmax():
    X, y = _multiclass(seed=3)
    clf = LogisticRegression().fit(X, y)
    meta = BayesDecisionClassifier(FrozenEstimator(clf)).fit(X, y)
    assert np.array_equal(meta.predict(X), clf.predict(X))
    np.testing.assert_array_equal(meta.cost_matrix_, 1 - np.eye(3))


@parametrize_with_checks([BayesDecisionClassifier(LogisticRegression())])
def test_sklearn_checks_on_features(estimator, check):
    """Wrapping a classifier that takes features, every check passes."""
    check(estimator)


@pytest.mark.parametrize(
    "check_name",
    ["check_fit_score_takes_y", "check_sample_weights_list", "check_supervised_y_2d"],
)
def test_range_checks_pass_with_declared_logits(check_name):
    """The range checks listed in tests/test_common.py pass with logits declared."""
    est = BayesDecisionClassifier(IdentityCalibrator(score_type="logit"))
    getattr(estimator_checks, check_name)("BayesDecisionClassifier", est)


# ------------------------------------------------ binary parity with sklearn
#: Two cost matrices (rows: true class) and their Bayes thresholds
#: p* = (C01 - C00) / ((C01 - C00) + (C10 - C11)).
BINARY_COSTS = [
    (np.array([[0.0, 1.0], [5.0, 0.0]]), 1 / 6),
    (np.array([[-1.0, 2.0], [4.0, 0.5]]), 3 / 6.5),
]


@pytest.mark.parametrize(("cost", "threshold"), BINARY_COSTS)
def test_binary_threshold_is_elkans(cost, threshold):
    eps = 1e-9
    p = np.sort(np.r_[np.linspace(0.001, 0.999, 999), threshold - eps, threshold + eps])
    meta = BayesDecisionClassifier(cost_matrix=cost).fit(
        p[:, None], (p > 0.5).astype(int)
    )
    assert np.array_equal(meta.predict(p[:, None]), (p > threshold).astype(int))
    fixed = FixedThresholdClassifier(
        FrozenEstimator(meta.estimator_),
        threshold=threshold,
        response_method="predict_proba",
    ).fit(p[:, None], (p > 0.5).astype(int))
    assert np.array_equal(meta.predict(p[:, None]), fixed.predict(p[:, None]))


def _exactly_calibrated(levels=200, copies=400):
    """Scores on a grid whose empirical frequency of class 1 at each score is
    the score itself, exactly: the
    empirical cost of each threshold is its expected cost, without sampling
    noise."""
    odd = 2 * np.arange(levels) + 1
    assert copies % (2 * levels) == 0
    grid = odd / (2 * levels)
    positives = odd * (copies // (2 * levels))
    p = np.repeat(grid, copies)
    y = (np.tile(np.arange(copies), levels) < np.repeat(positives, copies)).astype(int)
    return p, y, grid


@pytest.mark.parametrize(("cost", "threshold"), BINARY_COSTS)
def test_tuned_threshold_finds_the_bayes_threshold_on_calibrated_data(cost, threshold):
    p, y, grid = _exactly_calibrated()
    X = p[:, None]
    meta = BayesDecisionClassifier(cost_matrix=cost).fit(X, y)
    scorer = make_scorer(
        expected_cost, greater_is_better=False, cost_matrix=cost, labels=[0, 1]
    )
    tuned = TunedThresholdClassifierCV(
        FrozenEstimator(meta.estimator_),
        scoring=scorer,
        cv="prefit",
        refit=False,
        thresholds=np.linspace(0, 1, 1001),
    ).fit(X, y)
    step = grid[1] - grid[0]  # any threshold between two scores is as good
    assert abs(tuned.best_threshold_ - threshold) <= step
    assert np.array_equal(tuned.predict(X), meta.predict(X))
    assert expected_cost(y, meta.predict(X), cost) == pytest.approx(
        -tuned.best_score_, rel=1e-12
    )
