"""Scorers in model selection; get_scorer and its fallback."""

import copy
import pickle

import numpy as np
import pytest
import sklearn
import sklearn.metrics
from scipy.special import expit, softmax
from sklearn.datasets import make_classification
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import _scorer as sklearn_scorer_module
from sklearn.metrics import check_scoring, make_scorer
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    TunedThresholdClassifierCV,
    cross_validate,
)
from sklearn.utils.fixes import parse_version

from skcalib import HistogramBinningCalibrator, TemperatureCalibrator
from skcalib.metrics import (
    ProbaScorer,
    brier_score,
    brier_scorer,
    classwise_calibration_error,
    classwise_ece_scorer,
    ece_scorer,
    expected_calibration_error,
    get_scorer,
    get_scorer_names,
    maximum_calibration_error,
    mce_scorer,
    negative_log_likelihood,
    nll_scorer,
)

OURS = {
    "neg_expected_calibration_error": expected_calibration_error,
    "neg_maximum_calibration_error": maximum_calibration_error,
    "neg_classwise_calibration_error": classwise_calibration_error,
    "neg_brier_score": brier_score,
    "neg_log_loss": negative_log_likelihood,
}


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=900, n_features=6, random_state=0)
    clf = LogisticRegression(C=100.0).fit(X[:300], y[:300])
    return clf, X[300:], y[300:]


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, n_classes=3, random_state=1
    )
    clf = LogisticRegression().fit(X[:300], y[:300])
    return clf, X[300:], y[300:]


@pytest.mark.parametrize("data", ["binary", "multiclass"])
def test_scorers_are_negated_metrics(data, request):
    clf, X, y = request.getfixturevalue(data)
    proba = clf.predict_proba(X)
    given = proba[:, 1] if proba.shape[1] == 2 else proba  # what sklearn passes
    for scorer, metric in [
        (ece_scorer, expected_calibration_error),
        (mce_scorer, maximum_calibration_error),
        (classwise_ece_scorer, classwise_calibration_error),
        (brier_scorer, brier_score),
        (nll_scorer, negative_log_likelihood),
    ]:
        value = scorer(clf, X, y)
        assert value == pytest.approx(-metric(y, given))
        assert value == pytest.approx(-metric(y, proba))
        assert value <= 0
    for name, metric in OURS.items():
        assert get_scorer(name)(clf, X, y) == pytest.approx(-metric(y, proba))


@pytest.mark.parametrize("data", ["binary", "multiclass"])
def test_sklearn_names_give_sklearn_values(data, request):
    clf, X, y = request.getfixturevalue(data)
    names = ["neg_log_loss"]
    if data == "binary" or parse_version(sklearn.__version__) >= parse_version("1.7"):
        names.append("neg_brier_score")  # multiclass Brier in sklearn >= 1.7
    for name in names:
        assert get_scorer(name)(clf, X, y) == pytest.approx(
            sklearn.metrics.get_scorer(name)(clf, X, y)
        )


def test_string_labels_binary_scorer():
    X, y = make_classification(n_samples=400, n_features=4, random_state=2)
    names = np.where(y == 1, "spam", "ham")
    clf = LogisticRegression().fit(X, names)
    p = clf.predict_proba(X)[:, 1]  # P("spam"), the larger label
    assert ece_scorer(clf, X, names) == pytest.approx(
        -expected_calibration_error(names, p)
    )
    assert brier_scorer(clf, X, names) == pytest.approx(
        -brier_score(names == "spam", p)
    )


def test_grid_search_with_calibrator_and_multimetric(binary):
    clf, X, y = binary
    search = GridSearchCV(
        HistogramBinningCalibrator(estimator=clf),
        {"n_bins": [5, 10]},
        scoring={"ece": ece_scorer, "brier": brier_scorer},
        refit="brier",
        cv=3,
    ).fit(X, y)
    res = search.cv_results_
    for key in ("mean_test_ece", "mean_test_brier", "rank_test_brier"):
        assert key in res and np.all(np.isfinite(res[key]))
    assert np.all(res["mean_test_ece"] <= 0) and np.all(res["mean_test_brier"] <= 0)
    assert search.best_index_ == int(np.argmax(res["mean_test_brier"]))
    # One split by hand.
    train, test = next(StratifiedKFold(3).split(X, y))
    cal = HistogramBinningCalibrator(estimator=clf, n_bins=5).fit(X[train], y[train])
    p = cal.predict_proba(X[test])
    assert res["split0_test_ece"][0] == pytest.approx(
        -expected_calibration_error(y[test], p)
    )
    assert res["split0_test_brier"][0] == pytest.approx(-brier_score(y[test], p))


def test_cross_validate_names_and_dicts(multiclass):
    clf, X, y = multiclass
    scoring = {name: get_scorer(name) for name in OURS}
    scoring["acc"] = get_scorer("accuracy")
    out = cross_validate(
        TemperatureCalibrator(estimator=clf), X, y, scoring=scoring, cv=3
    )
    for name in OURS:
        assert np.all(out[f"test_{name}"] <= 0)
    assert np.all(out["test_acc"] > 0.5)
    # A list of names goes through sklearn's own lookup: ours are scorers.
    out = cross_validate(
        TemperatureCalibrator(estimator=clf),
        X,
        y,
        cv=3,
        scoring={"ece": ece_scorer, "nll": nll_scorer, "cw": classwise_ece_scorer},
    )
    assert out["test_ece"].shape == (3,)


def test_get_scorer_fallback_and_names():
    assert get_scorer("accuracy") is not None
    assert get_scorer(None) is None
    with pytest.raises(ValueError, match="not a valid scoring value"):
        get_scorer("neg_calibration_nonsense")
    names = get_scorer_names()
    assert set(OURS) <= set(names)
    assert set(sklearn.metrics.get_scorer_names()) <= set(names)
    assert names == sorted(names)
    # sklearn's registry is untouched.
    assert "neg_expected_calibration_error" not in sklearn.metrics.get_scorer_names()
    with pytest.raises(ValueError):
        sklearn.metrics.get_scorer("neg_expected_calibration_error")
    # A copy each time.
    assert get_scorer("neg_expected_calibration_error") is not ece_scorer


def test_scorer_with_missing_class_in_fold(multiclass):
    clf, X, y = multiclass
    keep = y != 2  # class 2 absent from y: the scorer names the columns
    proba = clf.predict_proba(X[keep])
    value = ece_scorer(clf, X[keep], y[keep])
    assert value == pytest.approx(
        -expected_calibration_error(y[keep], proba, labels=clf.classes_)
    )
    with pytest.raises(ValueError, match="pass labels="):
        expected_calibration_error(y[keep], proba)


# ------------------------------------------------ scikit-learn's consumers
# Issue 30 item 10: every consumer of a scorer in scikit-learn works with ours
# (LogisticRegressionCV used to raise AttributeError: no _response_method).
def test_scorers_are_sklearn_scorers():
    for scorer, metric in [
        (ece_scorer, expected_calibration_error),
        (nll_scorer, negative_log_likelihood),
    ]:
        assert isinstance(scorer, sklearn_scorer_module._Scorer)
        assert scorer._score_func is metric
        assert scorer._sign == -1 and scorer._kwargs == {}
        assert scorer._response_method == "predict_proba"
    assert isinstance(get_scorer("neg_expected_calibration_error"), ProbaScorer)
    assert (
        pickle.loads(pickle.dumps(ece_scorer))._score_func is expected_calibration_error
    )


def _lrcv_reference(search, X, y, folds, metric, sample_weight=None):
    """scores_ of a binary LogisticRegressionCV recomputed from its paths."""
    paths = search.coefs_paths_[search.classes_[1]]
    ref = np.empty(paths.shape[:2])
    for f, (_, test) in enumerate(folds):
        for c in range(paths.shape[1]):
            coef = paths[f, c]
            p1 = expit(X[test] @ coef[:-1] + coef[-1])
            sw = None if sample_weight is None else sample_weight[test]
            ref[f, c] = -metric(y[test], p1, sample_weight=sw)
    return ref


@pytest.mark.parametrize(
    "scorer, metric",
    [(ece_scorer, expected_calibration_error), (brier_scorer, brier_score)],
)
def test_logistic_regression_cv(binary, scorer, metric):
    _, X, y = binary
    folds = list(StratifiedKFold(3).split(X, y))
    search = LogisticRegressionCV(Cs=[0.01, 1.0, 100.0], cv=folds, scoring=scorer)
    search.fit(X, y)
    np.testing.assert_allclose(
        search.scores_[1], _lrcv_reference(search, X, y, folds, metric), rtol=1e-12
    )


def test_logistic_regression_cv_multiclass_fold_without_a_class(multiclass):
    # A test fold without class 2: LogisticRegressionCV passes labels=classes
    # (without them the metric could not name the columns and would raise).
    _, X, y = multiclass
    rows = np.arange(y.size)
    test = rows[y != 2][:60]
    folds = [(np.setdiff1d(rows, test), test), (rows[100:], rows[:100])]
    search = LogisticRegressionCV(Cs=[0.1, 1.0], cv=folds, scoring=nll_scorer)
    search.fit(X, y)
    for c in range(2):  # the multinomial map of fold 0 at each C, from its path
        coef = np.stack([search.coefs_paths_[k][0, c] for k in search.classes_])
        proba = softmax(X[test] @ coef[:, :-1].T + coef[:, -1], axis=1)
        ref = -negative_log_likelihood(y[test], proba, labels=search.classes_)
        assert search.scores_[search.classes_[0]][0, c] == pytest.approx(ref, rel=1e-12)


def test_tuned_threshold_classifier_cv(binary):
    # The curve scorer scores 0/1 predictions: Brier = ECE = error rate, so
    # each threshold's score is accuracy - 1.
    clf, X, y = binary
    thresholds = np.linspace(0.05, 0.95, 19)
    runs = {}
    for name, scoring in [
        ("brier", brier_scorer),
        ("ece", ece_scorer),
        ("acc", "accuracy"),
    ]:
        tuned = TunedThresholdClassifierCV(
            clf,
            scoring=scoring,
            cv="prefit",
            refit=False,
            thresholds=thresholds,
            store_cv_results=True,
        )
        runs[name] = tuned.fit(X, y)
    acc = runs["acc"].cv_results_["scores"]
    for name in ("brier", "ece"):
        np.testing.assert_allclose(
            runs[name].cv_results_["scores"], acc - 1, atol=1e-12
        )
        assert runs[name].best_threshold_ == runs["acc"].best_threshold_
    p1 = clf.predict_proba(X)[:, 1]
    errors = [np.mean((p1 >= t) != (y == 1)) for t in thresholds]
    assert runs["brier"].best_score_ == pytest.approx(-min(errors))


def test_permutation_importance_equals_sklearns_scorers(binary):
    clf, X, y = binary
    theirs = {
        "brier": make_scorer(
            sklearn.metrics.brier_score_loss,
            greater_is_better=False,
            response_method="predict_proba",
        ),
        "nll": "neg_log_loss",
    }
    ours = {"brier": brier_scorer, "nll": nll_scorer}
    kw = {"n_repeats": 3, "random_state": 0}
    single = permutation_importance(clf, X, y, scoring=brier_scorer, **kw)
    got = permutation_importance(clf, X, y, scoring=ours, **kw)
    ref = permutation_importance(clf, X, y, scoring=theirs, **kw)
    for name in ours:
        np.testing.assert_allclose(
            got[name].importances, ref[name].importances, atol=1e-12
        )
    np.testing.assert_allclose(single.importances, ref["brier"].importances, atol=1e-12)
    assert np.abs(ref["brier"].importances_mean).max() > 1e-3  # not all zero


def test_check_scoring(multiclass):
    clf, X, y = multiclass
    assert check_scoring(clf, scoring=ece_scorer) is ece_scorer
    multi = check_scoring(
        clf, scoring={"ece": ece_scorer, "nll": nll_scorer, "acc": "accuracy"}
    )
    scores = multi(clf, X, y)  # the cached predict_proba serves both of ours
    proba = clf.predict_proba(X)
    assert scores["ece"] == pytest.approx(-expected_calibration_error(y, proba))
    assert scores["nll"] == pytest.approx(-negative_log_likelihood(y, proba))
    assert scores["acc"] == pytest.approx(np.mean(clf.predict(X) == y))


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def test_metadata_routing_of_sample_weight(binary, routing):
    _, X, y = binary
    sw = np.random.default_rng(0).uniform(0.1, 3.0, y.size)
    folds = list(StratifiedKFold(3).split(X, y))
    brier = get_scorer("neg_brier_score").set_score_request(sample_weight=True)
    ece = copy.deepcopy(ece_scorer).set_score_request(sample_weight=True)
    # cross_validate: the weights reach the scorer only
    model = LogisticRegression().set_fit_request(sample_weight=False)
    out = cross_validate(
        model,
        X,
        y,
        cv=folds,
        scoring={"brier": brier, "ece": ece},
        params={"sample_weight": sw},
    )
    for f, (train, test) in enumerate(folds):
        p = LogisticRegression().fit(X[train], y[train]).predict_proba(X[test])
        assert out["test_brier"][f] == pytest.approx(
            -brier_score(y[test], p, sample_weight=sw[test])
        )
        assert out["test_ece"][f] == pytest.approx(
            -expected_calibration_error(y[test], p, sample_weight=sw[test])
        )
        assert out["test_brier"][f] != pytest.approx(-brier_score(y[test], p))
    # GridSearchCV, multi-metric, refit on ours
    search = GridSearchCV(
        model,
        {"C": [0.1, 1.0]},
        cv=folds,
        scoring={"brier": brier, "ece": ece},
        refit="brier",
    ).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(
        [search.cv_results_[f"split{f}_test_brier"][1] for f in range(3)],
        out["test_brier"],
    )
    # LogisticRegressionCV: the weights fit the paths and weight the scores
    lrcv = LogisticRegressionCV(Cs=[0.1, 1.0], cv=folds, scoring=brier)
    lrcv.set_fit_request(sample_weight=True).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(
        lrcv.scores_[1], _lrcv_reference(lrcv, X, y, folds, brier_score, sw), rtol=1e-12
    )
    # not requested: scikit-learn refuses the weights, as for its own scorers
    with pytest.raises((TypeError, ValueError), match="sample_weight"):
        cross_validate(
            model, X, y, cv=folds, scoring=nll_scorer, params={"sample_weight": sw}
        )


def test_set_score_request_needs_routing():
    with pytest.raises(RuntimeError, match="enable_metadata_routing"):
        copy.deepcopy(ece_scorer).set_score_request(sample_weight=True)
