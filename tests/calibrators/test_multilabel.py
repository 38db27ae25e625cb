"""MultiLabelCalibrator: per-label (and shared) binary calibration of a
label-indicator ``y``.

Every equality below is against the binary calibrator fitted by hand on one
column (or on the stacked columns), to 1e-12: the multi-label calibrator
must add nothing but the bookkeeping.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_multilabel_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, make_scorer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skcalib import (
    IsotonicCalibrator,
    MultiLabelCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)

ATOL = 1e-12
BINARY = [PlattCalibrator, IsotonicCalibrator, TemperatureCalibrator]


def _ml_logits(n=600, n_labels=4, *, scale=3.0, seed=0):
    """Over-confident logits ``scale * z`` of labels drawn with true
    probabilities ``expit(z)``, label rates from about 0.2 to 0.6."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, n_labels)) + np.linspace(-1.2, 0.4, n_labels)
    y = (rng.random((n, n_labels)) < expit(z)).astype(int)
    return scale * z, y


def _binary_p1(cal, column):
    return cal.predict_proba(column)[:, 1]


def _mean_log_loss(y_true, proba):
    """Macro NLL: mean over labels of sklearn's log_loss of each column."""
    y_true, proba = np.asarray(y_true), np.asarray(proba)
    return np.mean(
        [
            log_loss(y_true[:, j], proba[:, j], labels=[0, 1])
            for j in range(y_true.shape[1])
        ]
    )


def _ml_data(n_samples=1200, seed=0):
    X, Y = make_multilabel_classification(
        n_samples=n_samples, n_features=10, n_classes=4, random_state=seed
    )
    return train_test_split(X, Y, test_size=0.5, random_state=seed)


# --------------------------------------------------------------- raw mode
@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
@pytest.mark.parametrize("kind", ["logit", "probability"])
def test_per_label_equals_the_binary_fit_of_each_column(cls, kind):
    Z, y = _ml_logits()
    X = Z if kind == "logit" else expit(Z)
    Zt, _ = _ml_logits(n=200, seed=1)
    Xt = Zt if kind == "logit" else expit(Zt)
    cal = MultiLabelCalibrator(cls()).fit(X, y)
    proba = cal.predict_proba(Xt)
    assert proba.shape == (200, 4)
    assert cal.n_labels_ == 4 and len(cal.calibrators_) == 4
    np.testing.assert_array_equal(cal.classes_, np.arange(4))
    for j in range(4):
        ref = cls().fit(X[:, j], y[:, j])  # 1-D column: the binary rules
        assert cal.calibrators_[j].score_type_ == ref.score_type_ == kind
        np.testing.assert_allclose(
            proba[:, j], _binary_p1(ref, Xt[:, j]), rtol=0, atol=ATOL
        )
    np.testing.assert_array_equal(cal.transform(Xt), proba)


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
def test_shared_equals_the_binary_fit_of_the_stacked_columns(cls):
    Z, y = _ml_logits()
    Zt, _ = _ml_logits(n=200, seed=1)
    cal = MultiLabelCalibrator(cls(), shared=True).fit(Z, y)
    ref = cls().fit(Z.T.ravel(), y.T.ravel())  # label 0's rows, then 1's, ...
    proba = cal.predict_proba(Zt)
    for j in range(4):
        np.testing.assert_allclose(
            proba[:, j], _binary_p1(ref, Zt[:, j]), rtol=0, atol=ATOL
        )
    assert not isinstance(cal.calibrators_, list)


def test_shared_temperature_is_one_temperature_for_all_labels():
    Z, y = _ml_logits(n=4000, scale=3.0)
    cal = MultiLabelCalibrator(TemperatureCalibrator(), shared=True).fit(Z, y)
    # labels drawn from expit(Z / 3): the pooled temperature is about 3
    assert 2.7 < cal.calibrators_.temperature_ < 3.3
    np.testing.assert_allclose(
        cal.predict_proba(Z),
        expit(Z / cal.calibrators_.temperature_),
        rtol=0,
        atol=1e-12,
    )


def test_default_calibrator_is_platt_and_is_never_fitted():
    Z, y = _ml_logits()
    given = PlattCalibrator()
    cal = MultiLabelCalibrator(given).fit(Z, y)
    assert not hasattr(given, "classes_")  # cloned, not fitted
    default = MultiLabelCalibrator().fit(Z, y)
    np.testing.assert_array_equal(default.predict_proba(Z), cal.predict_proba(Z))
    assert all(isinstance(c, PlattCalibrator) for c in default.calibrators_)


def test_predict_is_the_indicator_of_probabilities_above_one_half():
    Z, y = _ml_logits()
    cal = MultiLabelCalibrator().fit(Z, y)
    pred = cal.predict(Z)
    assert pred.shape == y.shape and pred.dtype.kind == "i"
    np.testing.assert_array_equal(pred, (cal.predict_proba(Z) > 0.5).astype(int))
    assert cal.score(Z, y) == np.mean(np.all(pred == y, axis=1))  # subset accuracy


def test_float32_scores_give_float32_probabilities():
    Z, y = _ml_logits()
    cal = MultiLabelCalibrator(TemperatureCalibrator()).fit(Z.astype(np.float32), y)
    assert cal.predict_proba(Z.astype(np.float32)).dtype == np.float32


# ----------------------------------------------------------- sample weight
@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
def test_sample_weight_goes_to_each_binary_fit(cls):
    Z, y = _ml_logits()
    w = np.random.default_rng(5).uniform(0.2, 3.0, size=len(y))
    cal = MultiLabelCalibrator(cls()).fit(Z, y, sample_weight=w)
    for j in range(4):
        ref = cls().fit(Z[:, j], y[:, j], sample_weight=w)
        np.testing.assert_allclose(
            cal.predict_proba(Z)[:, j], _binary_p1(ref, Z[:, j]), rtol=0, atol=ATOL
        )
    shared = MultiLabelCalibrator(cls(), shared=True).fit(Z, y, sample_weight=w)
    ref = cls().fit(Z.T.ravel(), y.T.ravel(), sample_weight=np.tile(w, 4))
    np.testing.assert_allclose(
        shared.predict_proba(Z)[:, 2], _binary_p1(ref, Z[:, 2]), rtol=0, atol=ATOL
    )


def test_weight_two_is_a_duplicated_row():
    Z, y = _ml_logits(n=300)
    w = np.ones(300)
    w[:50] = 2
    a = MultiLabelCalibrator().fit(Z, y, sample_weight=w).predict_proba(Z)
    Zd, yd = np.vstack([Z, Z[:50]]), np.vstack([y, y[:50]])
    b = MultiLabelCalibrator().fit(Zd, yd).predict_proba(Z)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


# ------------------------------------------------------------ wrapper mode
def _wrapped(name, X, Y):
    if name == "MultiOutputClassifier":
        return MultiOutputClassifier(LogisticRegression(max_iter=1000)).fit(X, Y)
    if name == "OneVsRestClassifier":
        return OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(X, Y)
    if name == "KNeighborsClassifier":
        return KNeighborsClassifier(n_neighbors=15).fit(X, Y)
    return RandomForestClassifier(n_estimators=30, random_state=0).fit(X, Y)


def _label_p1(clf, X, j):
    """Label j's class-1 probability, read by hand from each estimator."""
    if isinstance(clf, MultiOutputClassifier):
        return clf.estimators_[j].predict_proba(X)[:, 1]
    if isinstance(clf, OneVsRestClassifier):
        return clf.estimators_[j].predict_proba(X)[:, 1]
    col = list(clf.classes_[j]).index(1)
    return clf.predict_proba(X)[j][:, col]


WRAPPED = [
    "MultiOutputClassifier",
    "OneVsRestClassifier",
    "KNeighborsClassifier",
    "RandomForestClassifier",
]


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", WRAPPED)
def test_wrapper_mode_equals_the_binary_fit_of_each_label(name, cls, monkeypatch):
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped(name, X_fit, Y_fit)

    def refit(*args, **kwargs):
        raise AssertionError("the prefit estimator was refit")

    monkeypatch.setattr(type(clf), "fit", refit)
    cal = MultiLabelCalibrator(cls(), estimator=clf).fit(X_cal, Y_cal)
    assert cal.n_features_in_ == 10
    proba = cal.predict_proba(X_fit[:100])
    for j in range(Y_cal.shape[1]):
        ref = cls(score_type="probability").fit(_label_p1(clf, X_cal, j), Y_cal[:, j])
        assert cal.calibrators_[j].score_type_ == "probability"
        np.testing.assert_allclose(
            proba[:, j], _binary_p1(ref, _label_p1(clf, X_fit[:100], j)), atol=ATOL
        )


def test_wrapper_mode_equals_the_binary_calibrator_wrapping_each_label():
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped("MultiOutputClassifier", X_fit, Y_fit)
    cal = MultiLabelCalibrator(estimator=clf).fit(X_cal, Y_cal)
    for j, est in enumerate(clf.estimators_):
        ref = PlattCalibrator(estimator=est, response_method="predict_proba")
        ref.fit(X_cal, Y_cal[:, j])
        np.testing.assert_allclose(
            cal.predict_proba(X_fit)[:, j], ref.predict_proba(X_fit)[:, 1], atol=ATOL
        )


def test_classes_follow_a_one_d_estimator_classes_else_label_indices():
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    ovr = _wrapped("OneVsRestClassifier", X_fit, Y_fit)
    ovr.classes_ = np.array([10, 20, 30, 40])  # its own names of the labels
    cal = MultiLabelCalibrator(estimator=ovr).fit(X_cal, Y_cal)
    np.testing.assert_array_equal(cal.classes_, [10, 20, 30, 40])
    moc = _wrapped("MultiOutputClassifier", X_fit, Y_fit)  # list of classes_
    cal = MultiLabelCalibrator(estimator=moc).fit(X_cal, Y_cal)
    np.testing.assert_array_equal(cal.classes_, np.arange(4))


def test_clone_keeps_the_prefit_estimator_and_get_params_round_trips():
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped("RandomForestClassifier", X_fit, Y_fit)
    cal = MultiLabelCalibrator(IsotonicCalibrator(), shared=True, estimator=clf)
    copy = clone(cal)
    assert copy.estimator is clf and copy.calibrator is not cal.calibrator
    params = cal.get_params()
    assert params["shared"] is True and "calibrator__method" in params
    again = MultiLabelCalibrator(**cal.get_params(deep=False))
    assert again.get_params() == params
    copy.set_params(calibrator__method="pav").fit(X_cal, Y_cal)
    assert copy.calibrators_.method == "pav"


# ------------------------------------------------------------------ errors
def test_targets_that_are_not_label_indicators_are_refused():
    Z, y = _ml_logits()
    with pytest.raises(ValueError, match="label-indicator matrix of shape"):
        MultiLabelCalibrator().fit(Z[:, :1], y[:, 0])  # 1-D binary
    with pytest.raises(ValueError, match="label-indicator matrix of shape"):
        MultiLabelCalibrator().fit(Z[:, :1], np.arange(len(y)) % 3)  # multiclass
    bad = y.copy()
    bad[7, 2] = 2
    with pytest.raises(ValueError, match=r"y\[7, 2\] = 2"):
        MultiLabelCalibrator().fit(Z, bad)
    with pytest.raises(ValueError, match="requires y to be passed"):
        MultiLabelCalibrator().fit(Z, None)


def test_score_columns_must_match_the_labels():
    Z, y = _ml_logits()
    with pytest.raises(ValueError, match="X has 3 label columns but y has 4"):
        MultiLabelCalibrator().fit(Z[:, :3], y)
    cal = MultiLabelCalibrator().fit(Z, y)
    with pytest.raises(ValueError, match="X has 3 features"):
        cal.predict_proba(Z[:, :3])
    with pytest.raises(ValueError, match="X gives 600 samples but y has 599"):
        MultiLabelCalibrator().fit(Z, y[:-1])


def test_wrapped_label_count_at_predict_must_match_the_fit():
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped("OneVsRestClassifier", X_fit, Y_fit)
    cal = MultiLabelCalibrator(estimator=clf).fit(X_cal, Y_cal)
    cal.estimator = _wrapped("OneVsRestClassifier", X_fit, Y_fit[:, :3])
    with pytest.raises(ValueError, match="has 3 labels .columns. but the calibrator"):
        cal.predict_proba(X_cal)
    with pytest.raises(ValueError, match="has 3 label columns but y has 4"):
        MultiLabelCalibrator(estimator=cal.estimator).fit(X_cal, Y_cal)


def test_a_constant_label_is_an_error_unless_shared():
    Z, y = _ml_logits()
    y[:, 1] = 0
    with pytest.raises(ValueError, match=r"label 1 is 0 in all 600 .*0 positives"):
        MultiLabelCalibrator().fit(Z, y)
    y[:, 1] = 1
    with pytest.raises(ValueError, match=r"label 1 is 1 in all 600 .*shared=True"):
        MultiLabelCalibrator().fit(Z, y)
    MultiLabelCalibrator(shared=True).fit(Z, y)  # pooled: fine
    with pytest.raises(ValueError, match="every label is 0 in all 600"):
        MultiLabelCalibrator(shared=True).fit(Z, np.zeros_like(y))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_are_refused_at_fit_and_predict(value):
    Z, y = _ml_logits()
    bad = Z.copy()
    bad[3, 2] = value
    with pytest.raises(ValueError, match=r"non-finite score .* row 3, label 2"):
        MultiLabelCalibrator().fit(bad, y)
    cal = MultiLabelCalibrator().fit(Z, y)
    with pytest.raises(ValueError, match=r"non-finite score .* row 3, label 2"):
        cal.predict_proba(bad)


def test_columns_read_as_different_score_types_are_an_error():
    Z, y = _ml_logits()
    X = Z.copy()
    X[:, 3] = expit(Z[:, 3])  # one column of probabilities among logits
    with pytest.raises(ValueError, match=r"labels \[3\] as 'probability'"):
        MultiLabelCalibrator().fit(X, y)
    with pytest.warns(UserWarning, match="looks like probabilities"):  # Platt's
        cal = MultiLabelCalibrator(PlattCalibrator(score_type="logit")).fit(X, y)
    assert {c.score_type_ for c in cal.calibrators_} == {"logit"}


def test_a_calibrator_in_wrapper_mode_is_refused():
    Z, y = _ml_logits()
    inner = PlattCalibrator(estimator=LogisticRegression().fit(Z, y[:, 0]))
    with pytest.raises(ValueError, match="must be in raw-score mode"):
        MultiLabelCalibrator(inner).fit(Z, y)


# -------------------------------------------- sklearn tools and invariants
def test_pipeline_and_grid_search_with_a_per_label_log_loss_scorer():
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped("MultiOutputClassifier", X_fit, Y_fit)
    Z_cal = np.column_stack([_label_p1(clf, X_cal, j) for j in range(4)])
    scorer = make_scorer(
        _mean_log_loss, greater_is_better=False, response_method="predict_proba"
    )
    pipe = make_pipeline(FunctionTransformer(), MultiLabelCalibrator())
    pipe.fit(Z_cal, Y_cal)
    np.testing.assert_array_equal(
        pipe.predict_proba(Z_cal),
        MultiLabelCalibrator().fit(Z_cal, Y_cal).predict_proba(Z_cal),
    )
    grid = {
        "calibrator": [PlattCalibrator(), IsotonicCalibrator()],
        "shared": [False, True],
    }
    search = GridSearchCV(
        MultiLabelCalibrator(estimator=clf), grid, scoring=scorer, cv=3
    )
    search.fit(X_cal, Y_cal)
    assert len(search.cv_results_["mean_test_score"]) == 4
    best = search.best_estimator_
    assert best.estimator is clf
    by_hand = -_mean_log_loss(Y_cal, best.predict_proba(X_cal))
    assert scorer(best, X_cal, Y_cal) == pytest.approx(by_hand, rel=1e-12)


def test_generic_invariants_on_label_data():
    """What the common checks cannot test in raw-score mode (their X has
    more columns than their y), on label data: pickle, idempotent fit,
    row order and subsets, list inputs and weights, fit returns self."""
    Z, y = _ml_logits()
    cal = MultiLabelCalibrator(IsotonicCalibrator())
    assert cal.fit(Z, y) is cal
    proba = cal.predict_proba(Z)
    again = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(again.predict_proba(Z), proba)
    np.testing.assert_array_equal(cal.fit(Z, y).predict_proba(Z), proba)
    perm = np.random.default_rng(0).permutation(len(y))
    np.testing.assert_allclose(cal.predict_proba(Z[perm]), proba[perm], atol=0)
    np.testing.assert_array_equal(cal.predict_proba(Z[:7]), proba[:7])
    listed = MultiLabelCalibrator(IsotonicCalibrator()).fit(
        Z.tolist(), y.tolist(), sample_weight=[1.0] * len(y)
    )
    np.testing.assert_allclose(listed.predict_proba(Z), proba, atol=ATOL)
    assert cal.n_features_in_ == 4
    np.testing.assert_array_equal(
        cal.get_feature_names_out(), ["proba_0", "proba_1", "proba_2", "proba_3"]
    )


def test_unfitted_calibrator_says_so():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MultiLabelCalibrator().predict_proba(np.zeros((2, 3)))


# ------------------------------------------------------------- real task
@pytest.mark.slow
def test_per_label_calibration_lowers_held_out_nll_of_a_random_forest():
    """A RandomForestClassifier trained on
    ``sklearn.datasets.make_multilabel_classification(n_samples=6000,
    n_classes=5, random_state=0)`` (2000 rows each to train, calibrate and
    test): per-label Platt, isotonic and temperature scaling lower the
    held-out macro NLL (mean over labels of ``log_loss`` per column; the
    forest's probabilities of exactly 0 or 1 clipped to 1e-15 from them)."""
    X, Y = make_multilabel_classification(
        n_samples=6000, n_features=20, n_classes=5, random_state=0
    )
    X_fit, X_rest, Y_fit, Y_rest = train_test_split(
        X, Y, train_size=2000, random_state=0
    )
    X_cal, X_test, Y_cal, Y_test = train_test_split(
        X_rest, Y_rest, train_size=2000, random_state=0
    )
    rf = RandomForestClassifier(n_estimators=100, min_samples_leaf=1, random_state=0)
    rf.fit(X_fit, Y_fit)
    raw = np.column_stack([_label_p1(rf, X_test, j) for j in range(5)])
    before = _mean_log_loss(Y_test, np.clip(raw, 1e-15, 1 - 1e-15))
    print(f"\nuncalibrated macro NLL {before:.4f}")
    for cls in BINARY:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = MultiLabelCalibrator(cls(), estimator=rf).fit(X_cal, Y_cal)
        after = _mean_log_loss(Y_test, cal.predict_proba(X_test))
        print(f"{cls.__name__:>22} macro NLL {after:.4f}")
        assert after < before


def test_per_label_platt_agrees_with_sklearn_sigmoid_calibration_per_label():
    """Another implementation: sklearn's CalibratedClassifierCV(method="sigmoid")
    of each frozen per-label LogisticRegression (decision values = the
    log-odds of its probabilities; L-BFGS, so agreement to 1e-4)."""
    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    clf = _wrapped("MultiOutputClassifier", X_fit, Y_fit)
    ours = MultiLabelCalibrator(estimator=clf).fit(X_cal, Y_cal).predict_proba(X_fit)
    for j, est in enumerate(clf.estimators_):
        peer = CalibratedClassifierCV(FrozenEstimator(est), method="sigmoid")
        peer.fit(X_cal, Y_cal[:, j])
        np.testing.assert_allclose(
            ours[:, j], peer.predict_proba(X_fit)[:, 1], rtol=0, atol=1e-4
        )


def test_wrapper_mode_reads_per_label_lists_through_the_score_cache():
    from skcalib import ScoreCache

    X_fit, X_cal, Y_fit, Y_cal = _ml_data()
    rf = _wrapped("RandomForestClassifier", X_fit, Y_fit)  # a list per label
    ref = MultiLabelCalibrator(estimator=rf).fit(X_cal, Y_cal).predict_proba(X_fit)
    with ScoreCache():
        for _ in range(2):  # the second fit reads the cached list
            cal = MultiLabelCalibrator(estimator=rf).fit(X_cal, Y_cal)
            np.testing.assert_array_equal(cal.predict_proba(X_fit), ref)
