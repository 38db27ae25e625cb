"""CalibratedClassifier: cross-fitting against scikit-learn and hand-written loops.

Reference values come from scikit-learn's ``CalibratedClassifierCV`` run on the
same data and splits in the same test (any installed version >= 1.6.1;
``method="temperature"`` needs >= 1.8), or from per-split loops written out
with scikit-learn's splitters and skcalib calibrators in wrapper mode.
"""

import pickle
import warnings

import numpy as np
import pytest
from joblib import parallel_config
from sklearn import __version__ as sklearn_version_str
from sklearn import config_context
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    ShuffleSplit,
    StratifiedKFold,
    cross_val_predict,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.fixes import parse_version

from skcalib import (
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.calibration._cross_fit import _full_scores
from skcalib.calibration._meta import CalibratedClassifier
from skcalib.selection._auto import AutoCalibrator

sklearn_version = parse_version(sklearn_version_str)


def _data(k=2, n=1500, seed=0):
    X, y = make_classification(
        n + 500,
        n_features=10,
        n_informative=5,
        n_classes=k,
        flip_y=0.1,
        random_state=seed,
    )
    return X[:n], y[:n], X[n:], y[n:]


class RecordingLR(LogisticRegression):
    """Records the metadata its ``fit`` receives (on the fitted clone)."""

    def fit(self, X, y, sample_weight=None, tag=None):
        self.sample_weight_seen_ = sample_weight
        self.tag_seen_ = tag
        return super().fit(X, y, sample_weight=sample_weight)


# ------------------------------------------------------------- common checks
# (the default instance runs in tests/test_common.py)
@parametrize_with_checks(
    [
        CalibratedClassifier(LogisticRegression(), PlattCalibrator(), cv=3),
        CalibratedClassifier(
            GaussianNB(), IsotonicCalibrator(), cv=KFold(3), ensemble=False
        ),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# ---------------------------------------------------- parity with sklearn
@pytest.mark.parametrize("ensemble", [True, False])
def test_binary_platt_matches_sklearn_sigmoid(ensemble):
    X, y, X_test, _ = _data()
    cv = KFold(3)
    theirs = CalibratedClassifierCV(
        LogisticRegression(C=0.05), method="sigmoid", cv=cv, ensemble=ensemble
    ).fit(X, y)
    ours = CalibratedClassifier(
        LogisticRegression(C=0.05), PlattCalibrator(), cv=cv, ensemble=ensemble
    ).fit(X, y)
    np.testing.assert_allclose(
        ours.predict_proba(X_test), theirs.predict_proba(X_test), atol=1e-6
    )
    # Same fitted maps: sklearn's p = 1 / (1 + exp(A f + B)) is our (-A, -B).
    for o, t in zip(
        ours.calibrated_classifiers_, theirs.calibrated_classifiers_, strict=True
    ):
        a, b = t.calibrators[0].a_, t.calibrators[0].b_
        assert o.calibrator.coef_[0] == pytest.approx(-a, rel=1e-4, abs=1e-6)
        assert o.calibrator.intercept_[0] == pytest.approx(-b, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("ensemble", [True, False])
def test_binary_isotonic_matches_sklearn_isotonic(ensemble):
    # decision values are log-odds: the same points and interpolation; ours
    # clips to [1e-12, 1 - 1e-12].
    X, y, X_test, _ = _data()
    theirs = CalibratedClassifierCV(
        LogisticRegression(), method="isotonic", cv=KFold(3), ensemble=ensemble
    ).fit(X, y)
    ours = CalibratedClassifier(
        LogisticRegression(),
        IsotonicCalibrator(method="pav"),
        cv=KFold(3),
        ensemble=ensemble,
    ).fit(X, y)
    np.testing.assert_allclose(
        ours.predict_proba(X_test), theirs.predict_proba(X_test), atol=1.01e-12
    )


@pytest.mark.skipif(
    sklearn_version < parse_version("1.8"),
    reason="CalibratedClassifierCV(method='temperature') needs scikit-learn >= 1.8",
)
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("ensemble", [True, False])
@pytest.mark.parametrize("estimator", [LogisticRegression(C=0.1), GaussianNB()])
def test_temperature_matches_sklearn_temperature(k, ensemble, estimator):
    X, y, X_test, _ = _data(k)
    theirs = CalibratedClassifierCV(
        estimator, method="temperature", cv=StratifiedKFold(3), ensemble=ensemble
    ).fit(X, y)
    ours = CalibratedClassifier(
        estimator, TemperatureCalibrator(), cv=StratifiedKFold(3), ensemble=ensemble
    ).fit(X, y)
    np.testing.assert_allclose(
        ours.predict_proba(X_test), theirs.predict_proba(X_test), atol=1e-7
    )


def test_default_is_logistic_regression_with_temperature_and_5_folds():
    X, y, X_test, _ = _data(3)
    clf = CalibratedClassifier().fit(X, y)
    assert len(clf.calibrated_classifiers_) == 5
    pair = clf.calibrated_classifiers_[0]
    assert isinstance(pair.estimator, LogisticRegression)
    assert isinstance(pair.calibrator, TemperatureCalibrator)
    assert pair.calibrator.estimator is pair.estimator
    assert clf.response_method_ == "decision_function"
    assert clf.n_features_in_ == X.shape[1]
    # the estimator and calibrator parameters are left untouched
    assert clf.estimator is None and clf.calibrator is None


# -------------------------------------------------- hand-written references
@pytest.mark.parametrize("k", [2, 3])
def test_ensemble_equals_hand_written_loop(k):
    X, y, X_test, _ = _data(k)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    expected = np.zeros((X_test.shape[0], k))
    for train, test in cv.split(X, y):
        model = GaussianNB().fit(X[train], y[train])
        cal = VectorScalingCalibrator(estimator=model).fit(X[test], y[test])
        expected += cal.predict_proba(X_test) / 4
    ours = CalibratedClassifier(GaussianNB(), VectorScalingCalibrator(), cv=cv)
    np.testing.assert_allclose(
        ours.fit(X, y).predict_proba(X_test), expected, rtol=1e-12
    )


@pytest.mark.parametrize("method", ["decision_function", "predict_proba"])
def test_pooled_equals_cross_val_predict_then_refit(method):
    X, y, X_test, _ = _data(3)
    cv = KFold(4, shuffle=True, random_state=1)
    oof = cross_val_predict(LogisticRegression(), X, y, cv=cv, method=method)
    kind = "logit" if method == "decision_function" else "probability"
    cal = PlattCalibrator(score_type=kind).fit(oof, y)
    model = LogisticRegression().fit(X, y)
    expected = cal.predict_proba(getattr(model, method)(X_test))
    ours = CalibratedClassifier(
        LogisticRegression(),
        PlattCalibrator(),
        cv=cv,
        ensemble=False,
        response_method=method,
    ).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X_test), expected, rtol=1e-12)
    assert ours.calibrated_classifiers_[0].calibrator.score_type_ == kind


def test_sample_weight_reaches_classifier_and_calibrator_without_routing():
    X, y, X_test, _ = _data(2)
    w = np.random.default_rng(0).uniform(0.2, 3.0, y.size)
    cv = KFold(3)
    expected = np.zeros((X_test.shape[0], 2))
    for train, test in cv.split(X):
        model = LogisticRegression().fit(X[train], y[train], sample_weight=w[train])
        cal = PlattCalibrator(estimator=model)
        cal.fit(X[test], y[test], sample_weight=w[test])
        expected += cal.predict_proba(X_test) / 3
    ours = CalibratedClassifier(RecordingLR(), PlattCalibrator(), cv=cv)
    ours.fit(X, y, sample_weight=w, tag="a")
    np.testing.assert_allclose(ours.predict_proba(X_test), expected, rtol=1e-10)
    for pair, (train, _) in zip(ours.calibrated_classifiers_, cv.split(X), strict=True):
        np.testing.assert_array_equal(pair.estimator.sample_weight_seen_, w[train])
        assert pair.estimator.tag_seen_ == "a"


def test_weight_zero_is_dropped_and_two_is_duplicated():
    X, y, X_test, _ = _data(3, n=600)
    w = np.random.default_rng(3).integers(0, 3, y.size)
    folds = np.arange(y.size) % 3
    cv_w = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(3)]
    Xr, yr, fr = (np.repeat(a, w, axis=0) for a in (X, y, folds))
    cv_r = [(np.flatnonzero(fr != f), np.flatnonzero(fr == f)) for f in range(3)]
    for ensemble in (True, False):
        est = CalibratedClassifier(
            LogisticRegression(tol=1e-10, max_iter=10_000),
            PlattCalibrator(),
            ensemble=ensemble,
        )
        weighted = clone(est).set_params(cv=cv_w).fit(X, y, sample_weight=w)
        repeated = clone(est).set_params(cv=cv_r).fit(Xr, yr)
        np.testing.assert_allclose(
            weighted.predict_proba(X_test), repeated.predict_proba(X_test), atol=1e-6
        )


# ------------------------------------------------------------ missing classes
def _four_class_data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2, 3], [60, 60, 60, 20])
    X = rng.normal(size=(y.size, 3)) + np.eye(4)[y] @ rng.normal(size=(4, 3)) * 2
    class3 = np.flatnonzero(y == 3)
    others = np.flatnonzero(y != 3)
    # split 0: no class 3 in training, all of it (and 60 others) held out
    test0 = np.concatenate([class3, others[::3]])
    train0 = np.setdiff1d(np.arange(y.size), test0)
    # the other two test parts complete the partition
    splits = [(train0, test0)]
    for test in (others[1::3], others[2::3]):
        splits.append((np.setdiff1d(np.arange(y.size), test), test))
    return X, y, splits


def test_ensemble_pair_missing_a_class_gives_its_smoothed_frequency():
    X, y, cv = _four_class_data()
    clf = CalibratedClassifier(LogisticRegression(), PlattCalibrator(), cv=cv)
    clf.fit(X, y)
    pair = clf.calibrated_classifiers_[0]
    np.testing.assert_array_equal(pair.estimator.classes_, [0, 1, 2])
    test0 = cv[0][1]
    # (W_3 + 1) / (W + K): 20 of the 80 held-out samples, four classes
    expected_fill = (20 + 1) / (test0.size + 4)
    np.testing.assert_allclose(pair.fill, [0, 0, 0, expected_fill])
    proba = pair.predict_proba(X)
    np.testing.assert_allclose(proba[:, 3], expected_fill)
    # the known classes share the rest as the calibrator (fitted on the
    # held-out samples of classes 0-2 only) says
    known = np.flatnonzero(y[test0] != 3)
    ref = PlattCalibrator(estimator=pair.estimator).fit(
        X[test0[known]], y[test0[known]]
    )
    np.testing.assert_allclose(
        proba[:, :3], (1 - expected_fill) * ref.predict_proba(X), rtol=1e-12
    )
    p = clf.predict_proba(X)
    assert p.min() > 0
    np.testing.assert_allclose(p.sum(axis=1), 1)
    # scikit-learn gives that pair a hard zero for class 3
    theirs = CalibratedClassifierCV(LogisticRegression(), cv=cv).fit(X, y)
    assert np.all(theirs.calibrated_classifiers_[0].predict_proba(X)[:, 3] == 0)


def test_pooled_split_missing_a_class_gets_laplace_floor():
    X, y, _ = _four_class_data()
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    cv = KFold(4)  # unshuffled on sorted labels: the last split misses class 3
    for method in ("decision_function", "predict_proba"):
        kind = "logit" if method == "decision_function" else "probability"
        clf = CalibratedClassifier(
            LogisticRegression(),
            TemperatureCalibrator(),
            cv=cv,
            ensemble=False,
            response_method=method,
        ).fit(X, y)
        p = clf.predict_proba(X)
        assert p.min() > 0 and np.all(np.isfinite(p))
        # by hand: the split without class 3 gives it 1 / (n_train + K)
        oof = np.empty((y.size, 4))
        for train, test in cv.split(X):
            model = LogisticRegression().fit(X[train], y[train])
            s = getattr(model, method)(X[test])
            if model.classes_.size == 3:
                fill = np.array([0, 0, 0, 1 / (train.size + 4)])
                s = _full_scores(s, kind, np.arange(3), fill)
            oof[test] = s
        ref = TemperatureCalibrator(score_type=kind).fit(oof, y)
        pooled = clf.calibrated_classifiers_[0].calibrator
        assert pooled.temperature_ == pytest.approx(ref.temperature_, rel=1e-12)
    # with ensemble=True, the held-out parts of two splits hold one class only
    with pytest.warns(UserWarning, match="2 of 4 splits are left out"):
        clf = CalibratedClassifier(cv=cv).fit(X, y)
    assert len(clf.calibrated_classifiers_) == 2
    three = np.r_[0:40, 60:100, 120:160]  # classes 0, 1, 2; 40 each, sorted
    with pytest.raises(ValueError, match="No split of cv can calibrate"):
        CalibratedClassifier(cv=KFold(3)).fit(X[three], y[three])


@pytest.mark.parametrize("kind", ["logit", "probability"])
def test_full_scores_is_the_mixture_with_the_fill(kind):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5, 3))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    scores = z if kind == "logit" else p
    columns = np.array([0, 2, 3])
    fill = np.array([0, 0.1, 0, 0, 0.05])
    out = _full_scores(scores, kind, columns, fill)
    proba = np.exp(out) if kind == "logit" else out
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_allclose(proba[:, [1, 4]], np.tile([0.1, 0.05], (5, 1)))
    np.testing.assert_allclose(proba[:, columns], 0.85 * p)
    # a model that knows every class, in order: logits untouched,
    # probabilities divided by their row sums
    same = _full_scores(scores * 1.001, kind, np.arange(3), np.zeros(3))
    np.testing.assert_allclose(same, z * 1.001 if kind == "logit" else p)


def test_split_whose_test_part_has_one_class_is_left_out_with_a_warning():
    X, y, X_test, _ = _data(2, n=300)
    ones = np.flatnonzero(y == 1)
    rest = np.setdiff1d(np.arange(y.size), ones[:10])
    good = [
        (np.setdiff1d(np.arange(y.size), rest[te]), rest[te])
        for _, te in StratifiedKFold(3).split(X[rest], y[rest])
    ]
    bad = (rest, ones[:10])  # held-out part of one class only
    with pytest.warns(UserWarning, match="1 of 4 splits are left out"):
        clf = CalibratedClassifier(cv=good + [bad]).fit(X, y)
    assert len(clf.calibrated_classifiers_) == 3


# ------------------------------------------------------------------- splits
@pytest.mark.parametrize("ensemble", [True, False])
def test_splits_must_partition_the_samples(ensemble):
    X, y, _, _ = _data(2, n=200)
    with pytest.raises(ValueError, match="must partition the samples.*in no test"):
        CalibratedClassifier(
            cv=ShuffleSplit(3, test_size=0.3, random_state=0), ensemble=ensemble
        ).fit(X, y)
    folds = list(KFold(3).split(X))
    twice = folds + [folds[0]]
    with pytest.raises(ValueError, match="more than one test part"):
        CalibratedClassifier(cv=twice, ensemble=ensemble).fit(X, y)


@pytest.mark.parametrize("ensemble", [True, False])
def test_bad_splits_are_errors_naming_the_problem(ensemble):
    X, y, _, _ = _data(2, n=100)
    idx = np.arange(100)
    cases = {
        "in both its training and its test part": [(idx[:60], idx[50:])],
        "empty test part": [(idx, idx[:0])],
        "more than once": [(idx[:50], np.r_[idx[50:], 51])],
        r"outside \[0, 99\]": [(idx[:50], np.r_[idx[50:], 100])],
        "1-D array of sample indices": [(idx[:50], idx[50:].astype(float))],
    }
    for message, cv in cases.items():
        with pytest.raises(ValueError, match=message):
            CalibratedClassifier(cv=cv, ensemble=ensemble).fit(X, y)


def test_boolean_masks_are_indices():
    X, y, X_test, _ = _data(2, n=200)
    mask = np.arange(200) % 2 == 0
    a = CalibratedClassifier(cv=[(mask, ~mask), (~mask, mask)]).fit(X, y)
    b = CalibratedClassifier(
        cv=[(np.flatnonzero(mask), np.flatnonzero(~mask))] * 1
        + [(np.flatnonzero(~mask), np.flatnonzero(mask))]
    ).fit(X, y)
    np.testing.assert_allclose(a.predict_proba(X_test), b.predict_proba(X_test))


# ---------------------------------------------------------- metadata routing
def test_routing_sends_weights_params_and_groups():
    X, y, X_test, _ = _data(2, n=300)
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size)
    tag = np.arange(y.size)
    groups = np.arange(y.size) % 6
    with config_context(enable_metadata_routing=True):
        est = RecordingLR().set_fit_request(sample_weight=True, tag=True)
        clf = CalibratedClassifier(est, PlattCalibrator(), cv=GroupKFold(3))
        clf.fit(X, y, sample_weight=w, tag=tag, groups=groups)
        splits = list(GroupKFold(3).split(X, y, groups))
        for pair, (train, test) in zip(
            clf.calibrated_classifiers_, splits, strict=True
        ):
            np.testing.assert_array_equal(pair.estimator.sample_weight_seen_, w[train])
            np.testing.assert_array_equal(pair.estimator.tag_seen_, train)
            # the calibrator was fitted on the group's held-out part, weighted
            ref = PlattCalibrator(estimator=pair.estimator)
            ref.fit(X[test], y[test], sample_weight=w[test])
            np.testing.assert_allclose(pair.calibrator.coef_, ref.coef_, rtol=1e-12)
        # not requested: the classifier does not get the weights, the
        # calibrators still do
        est = RecordingLR().set_fit_request(sample_weight=False)
        clf = CalibratedClassifier(est, cv=3).fit(X, y, sample_weight=w)
        assert clf.calibrated_classifiers_[0].estimator.sample_weight_seen_ is None
        # unset request: scikit-learn's error
        with pytest.raises(UnsetMetadataPassedError):
            CalibratedClassifier(RecordingLR(), cv=3).fit(X, y, sample_weight=w)
        # the default classifier requests sample_weight
        clf = CalibratedClassifier(cv=3).fit(X, y, sample_weight=w)
        assert clf.calibrated_classifiers_[0].estimator.get_metadata_routing()


def test_without_routing_unsupported_weights_warn():
    X, y, _, _ = _data(2, n=300)
    w = np.ones(y.size)
    with pytest.warns(UserWarning, match="does not accept sample_weight"):
        CalibratedClassifier(KNeighborsClassifier(), cv=3).fit(X, y, sample_weight=w)


# ------------------------------------------------------------- parameters
def test_parameter_errors():
    X, y, _, _ = _data(2, n=200)
    with pytest.raises(InvalidParameterError, match="calibrator"):
        CalibratedClassifier(calibrator="sigmoid").fit(X, y)
    wrapped = PlattCalibrator(estimator=LogisticRegression().fit(X, y))
    with pytest.raises(ValueError, match="raw-score mode"):
        CalibratedClassifier(calibrator=wrapped).fit(X, y)
    with pytest.raises(ValueError, match="set one of them only"):
        CalibratedClassifier(
            calibrator=PlattCalibrator(response_method="predict_proba"),
            response_method="decision_function",
        ).fit(X, y)
    with pytest.raises(ValueError, match="GaussianNB has no method 'decision_fun"):
        CalibratedClassifier(GaussianNB(), response_method="decision_function").fit(
            X, y
        )
    with pytest.raises(ValueError, match="one class only"):
        CalibratedClassifier().fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="one class only with positive sample_we"):
        CalibratedClassifier().fit(X, y, sample_weight=(y == 1).astype(float))


def test_calibrator_response_method_is_used_when_ours_is_auto():
    X, y, _, _ = _data(2, n=300)
    clf = CalibratedClassifier(
        calibrator=PlattCalibrator(response_method="predict_proba"), cv=3
    ).fit(X, y)
    assert clf.response_method_ == "predict_proba"
    assert clf.calibrated_classifiers_[0].calibrator.score_type_ == "probability"


def test_string_labels_pickle_and_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, X_test, _ = _data(3, n=400)
    labels = np.array(["cat", "dog", "eel"])[y]
    Xf = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    for ensemble in (True, False):
        clf = CalibratedClassifier(cv=3, ensemble=ensemble).fit(Xf, labels)
        np.testing.assert_array_equal(clf.classes_, ["cat", "dog", "eel"])
        np.testing.assert_array_equal(clf.feature_names_in_, Xf.columns)
        again = pickle.loads(pickle.dumps(clf))
        Xt = pd.DataFrame(X_test, columns=Xf.columns)
        np.testing.assert_array_equal(again.predict_proba(Xt), clf.predict_proba(Xt))
        assert set(clf.predict(Xt)) <= {"cat", "dog", "eel"}


def test_n_jobs_gives_the_same_result():
    X, y, X_test, _ = _data(3, n=400)
    a = CalibratedClassifier(cv=3).fit(X, y).predict_proba(X_test)
    with parallel_config(backend="threading"):  # no process start-up cost
        b = CalibratedClassifier(cv=3, n_jobs=2).fit(X, y).predict_proba(X_test)
    np.testing.assert_array_equal(a, b)


def test_auto_calibrator_as_the_calibrator():
    X, y, X_test, y_test = _data(3, n=1200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # candidates' convergence notes
        clf = CalibratedClassifier(
            GaussianNB(), AutoCalibrator(cv=3), cv=3, ensemble=False
        ).fit(X, y)
    auto = clf.calibrated_classifiers_[0].calibrator
    assert auto.cv_results_["candidate"][auto.best_index_] != "identity"
    p = clf.predict_proba(X_test)
    np.testing.assert_allclose(p.sum(axis=1), 1)
