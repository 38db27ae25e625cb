"""register_scorers: skcalib's scorer names as strings in scikit-learn."""

import sys
import types

import numpy as np
import pytest
import sklearn
import sklearn.metrics
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import check_scoring, make_scorer
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.utils._param_validation import (
    InvalidParameterError,
    StrOptions,
    validate_params,
)

from skcalib import TemperatureCalibrator
from skcalib._core import compat
from skcalib.metrics import (
    aurc_scorer,
    classwise_ece_scorer,
    ece_scorer,
    get_scorer,
    mce_scorer,
    smooth_ece_scorer,
)
from skcalib.metrics._register import register_scorers, unregister_scorers

ECE = "neg_expected_calibration_error"
REGISTERED = {
    ECE: ece_scorer,
    "neg_maximum_calibration_error": mce_scorer,
    "neg_classwise_calibration_error": classwise_ece_scorer,
    "neg_aurc": aurc_scorer,
    "neg_smooth_calibration_error": smooth_ece_scorer,
}
#: The multi-label scorers, registered too (scored on multi-label data in
#: tests/metrics/test_multilabel_metrics.py).
MULTILABEL = (
    "neg_multilabel_brier_score",
    "neg_multilabel_calibration_error",
    "neg_multilabel_log_loss",
)


@pytest.fixture(autouse=True)
def unregistered():
    """Every test starts and ends with scikit-learn's own names only."""
    unregister_scorers()
    before = sklearn.metrics.get_scorer_names()
    yield
    unregister_scorers()
    assert sklearn.metrics.get_scorer_names() == before


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=600, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    return LogisticRegression().fit(X[:200], y[:200]), X[200:], y[200:]


def test_names_are_unknown_to_sklearn_until_registered(data):
    clf, X, y = data
    with pytest.raises(InvalidParameterError, match="'scoring' parameter"):
        GridSearchCV(clf, {"C": [1.0]}, scoring=ECE).fit(X, y)
    assert register_scorers() == sorted([*REGISTERED, *MULTILABEL])
    names = sklearn.metrics.get_scorer_names()
    assert set(REGISTERED) <= set(names) and names == sorted(names)
    for name, scorer in REGISTERED.items():
        assert sklearn.metrics.get_scorer(name)(clf, X, y) == scorer(clf, X, y)
        assert check_scoring(clf, scoring=name)(clf, X, y) == scorer(clf, X, y)
    # scikit-learn's own names stay scikit-learn's scorers.
    held = sklearn.metrics.get_scorer("neg_log_loss")
    assert held._score_func is sklearn.metrics.log_loss


def test_grid_search_string_equals_object(data):
    clf, X, y = data
    register_scorers()
    grid = {"C": [0.01, 1.0]}
    by_name = GridSearchCV(clf, grid, scoring=ECE, cv=3).fit(X, y)
    by_object = GridSearchCV(clf, grid, scoring=ece_scorer, cv=3).fit(X, y)
    for key in ("split0_test_score", "split2_test_score", "mean_test_score"):
        np.testing.assert_array_equal(
            by_name.cv_results_[key], by_object.cv_results_[key]
        )
    assert by_name.best_params_ == by_object.best_params_
    # Multi-metric: a list of names, refit on one of ours.
    names = [ECE, "neg_aurc", "accuracy"]
    multi = GridSearchCV(clf, grid, scoring=names, refit=ECE, cv=3).fit(X, y)
    np.testing.assert_array_equal(
        multi.cv_results_[f"mean_test_{ECE}"], by_object.cv_results_["mean_test_score"]
    )
    assert multi.best_index_ == by_object.best_index_


def test_cross_validate_strings_equal_objects(data):
    clf, X, y = data
    register_scorers()
    model = TemperatureCalibrator(estimator=clf)
    by_name = cross_validate(model, X, y, cv=3, scoring=list(REGISTERED))
    by_object = cross_validate(model, X, y, cv=3, scoring=REGISTERED)
    for name in REGISTERED:
        values = by_name[f"test_{name}"]
        np.testing.assert_array_equal(values, by_object[f"test_{name}"])
        assert np.all(values <= 0)
    single = cross_validate(model, X, y, cv=3, scoring="neg_aurc")["test_score"]
    np.testing.assert_array_equal(single, by_object["test_neg_aurc"])


def test_logistic_regression_cv_with_a_registered_name(data):
    # Issue 30 item 10: LogisticRegressionCV rebuilds the scorer from its
    # private attributes; it raised AttributeError (no _response_method).
    _, X, y = data
    register_scorers()
    folds = list(StratifiedKFold(3).split(X, y))
    by_name = LogisticRegressionCV(Cs=[0.1, 1.0], cv=folds, scoring=ECE).fit(X, y)
    by_object = LogisticRegressionCV(Cs=[0.1, 1.0], cv=folds, scoring=ece_scorer)
    by_object.fit(X, y)
    for k in by_name.classes_:
        np.testing.assert_array_equal(by_name.scores_[k], by_object.scores_[k])
    assert np.all(by_name.scores_[k] <= 0)


def test_idempotent_and_undone(data):
    clf, X, y = data
    table = compat.sklearn_scorer_table()
    assert register_scorers() == register_scorers()
    assert table[ECE] is ece_scorer
    assert unregister_scorers() == sorted([*REGISTERED, *MULTILABEL])
    assert unregister_scorers() == []
    assert ECE not in table
    for options in compat.scoring_name_option_sets():
        assert not options & {*REGISTERED, *MULTILABEL}
    with pytest.raises(ValueError, match="not a valid scoring value"):
        sklearn.metrics.get_scorer(ECE)


def test_refuses_to_overwrite_a_different_scorer():
    with pytest.raises(ValueError, match="already has a scorer named 'neg_log_loss'"):
        register_scorers(["neg_aurc", "neg_log_loss"])
    assert "neg_aurc" not in sklearn.metrics.get_scorer_names()  # all or nothing
    table = compat.sklearn_scorer_table()
    other = make_scorer(sklearn.metrics.accuracy_score)  # another library's
    table[ECE] = other
    try:
        with pytest.raises(ValueError, match="does not overwrite"):
            register_scorers()
        assert unregister_scorers(ECE) == []  # not ours: left alone
        assert table[ECE] is other
    finally:
        del table[ECE]


def test_unknown_name():
    with pytest.raises(ValueError, match="not skcalib scorer names"):
        register_scorers(["neg_expected_calibration_eror"])


def test_constraints_built_after_registration_are_cleaned(monkeypatch):
    """A module imported while the names are registered builds its sets from
    ``get_scorer_names()``; unregistering takes the names out of them too."""
    register_scorers(ECE)
    module = types.ModuleType("late_sklearn_user")

    @validate_params(
        {"scoring": [StrOptions(set(sklearn.metrics.get_scorer_names()))]},
        prefer_skip_nested_validation=True,
    )
    def search(scoring):
        return get_scorer(scoring)

    module.search = search
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert search(ECE) is not None
    unregister_scorers()
    with pytest.raises(InvalidParameterError):
        search(ECE)
    assert search("accuracy") is not None


def test_scan_never_touches_proxies(monkeypatch):
    """A module attribute whose ``__class__`` warns (as torch's deprecated
    ``torch.distributed.reduce_op``) is skipped without being asked."""

    class Proxy:
        def __getattribute__(self, name):
            raise AssertionError(f"the scan read {name!r} of a proxy")

    module = types.ModuleType("proxy_holder")
    module.proxy = Proxy()
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert register_scorers(ECE) == [ECE]


def test_changed_mechanism_names_the_version(monkeypatch):
    monkeypatch.setattr(compat, "_sklearn_scorer_module", types.SimpleNamespace())
    with pytest.raises(RuntimeError, match=f"scikit-learn {sklearn.__version__} "):
        register_scorers()
    monkeypatch.undo()
    constraints = GridSearchCV._parameter_constraints
    monkeypatch.setitem(constraints, "scoring", [callable, dict, None])
    with pytest.raises(RuntimeError, match="scoring of GridSearchCV"):
        register_scorers()
    assert ECE not in sklearn.metrics.get_scorer_names()
