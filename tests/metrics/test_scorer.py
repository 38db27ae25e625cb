"""Scorers in model selection; get_scorer and its fallback."""

import numpy as np
import pytest
import sklearn
import sklearn.metrics
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.utils.fixes import parse_version

from skcalib import HistogramBinningCalibrator, TemperatureCalibrator
from skcalib.metrics import (
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
