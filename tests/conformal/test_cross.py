"""CrossConformalClassifier: the CV+ sets against Vovk's cross-conformal
p-values computed one pair at a time, the split mode against
ConformalClassifier, several levels, bad input and sklearn's checks."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, LeaveOneOut, ShuffleSplit
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._cross import CrossConformalClassifier
from skcalib.conformal._cross_sets import fold_proba
from skcalib.conformal._scores import RANDOMIZABLE, prediction_sets, row_uniforms


def _data(n=90, n_classes=3, seed=0):
    X, y = make_classification(
        n + 40, n_features=6, n_informative=4, n_classes=n_classes, random_state=seed
    )
    return X[:n], y[:n], X[n:]


# ------------------------------------------------------------ reference loop
def _ref_score(p, c, method, u):
    """LAC ``1 - p_c``; APS: mass of the more probable classes, plus ``u p_c``."""
    if method == "lac":
        return 1 - p[c]
    return sum(v for v in sorted(p, reverse=True) if v > p[c]) + u * p[c]


def _ref_sets(cp, X_test, alpha, weight=None):
    """Vovk's cross-conformal p-value of every (x, y), one calibration
    sample at a time: ``p = (1 + sum_i w_i [s_i >= s(x, y; model_k(i))]) /
    (W + 1)``; ``y`` is in the set when ``p > alpha``."""
    n_cal = cp.conformity_scores_.size
    w = np.ones(n_cal) if weight is None else weight
    W = w.sum()
    mean = np.mean([m.predict_proba(X_test) for m in cp.estimators_], axis=0)
    u_test = None if cp._seed is None else row_uniforms(mean, cp._seed)
    sets = np.zeros((len(X_test), mean.shape[1]), dtype=bool)
    test_p = [m.predict_proba(X_test) for m in cp.estimators_]
    for j in range(len(X_test)):
        for c in range(mean.shape[1]):
            count = 0.0
            for i in range(n_cal):
                p = test_p[cp.fold_of_sample_[i]][j]
                if cp.method == "aps" and u_test is None:
                    # non-randomised APS: the test side is the mass above
                    # (u = 0), and a tie counts as below
                    count += w[i] * (
                        cp.conformity_scores_[i] > _ref_score(p, c, "aps", 0)
                    )
                else:
                    u = 1.0 if u_test is None else u_test[j]
                    count += w[i] * (
                        cp.conformity_scores_[i] >= _ref_score(p, c, cp.method, u)
                    )
            sets[j, c] = (1 + count) / (W + 1) > alpha
    return sets


@pytest.mark.parametrize(
    "method, randomized", [("lac", False), ("aps", False), ("aps", True)]
)
@pytest.mark.parametrize("weighted", [False, True])
def test_cv_plus_is_the_cross_conformal_p_value_rule(method, randomized, weighted):
    X, y, X_test = _data(60)
    X_test = X_test[:12]
    w = (
        np.random.default_rng(1).integers(0, 4, y.size).astype(float)
        if weighted
        else None
    )
    cp = CrossConformalClassifier(
        LogisticRegression(), cv=4, method=method, randomized=randomized, random_state=3
    ).fit(X, y, sample_weight=w)
    alphas = [0.07, 0.13, 0.31]  # no level (1 - a)(W + 1) is an integer
    got = cp.predict_set(X_test, alpha=alphas)
    for j, a in enumerate(alphas):
        np.testing.assert_array_equal(got[:, :, j], _ref_sets(cp, X_test, a, w))
    assert got.sum() > 0 and not got.all()  # neither empty nor full


def test_out_of_fold_scores_by_refitting():
    X, y, _ = _data(80)
    cv = KFold(5, shuffle=True, random_state=0)
    cp = CrossConformalClassifier(LogisticRegression(), cv=cv).fit(X, y)
    for f, (train, test) in enumerate(cv.split(X, y)):
        model = LogisticRegression().fit(X[train], y[train])
        p = model.predict_proba(X[test])
        np.testing.assert_allclose(
            cp.conformity_scores_[test], 1 - p[np.arange(test.size), y[test]]
        )
        np.testing.assert_array_equal(cp.fold_of_sample_[test], f)
        np.testing.assert_array_equal(cp.folds_[f][1], test)
    assert len(cp.estimators_) == 5


@pytest.mark.parametrize(
    "method, randomized", [("lac", False), ("aps", False), ("aps", True)]
)
@pytest.mark.parametrize("size", [0.3, 41])
def test_split_mode_is_split_conformal(method, randomized, size):
    X, y, X_test = _data(150)
    cp = CrossConformalClassifier(
        LogisticRegression(),
        cv="split",
        method=method,
        randomized=randomized,
        calibration_size=size,
        random_state=7,
    ).fit(X, y)
    (train, test), model = cp.folds_[0], cp.estimators_[0]
    assert test.size == (45 if size == 0.3 else 41) and train.size == 150 - test.size
    assert np.isnan(cp.conformity_scores_[train]).all()
    assert (cp.fold_of_sample_[train] == -1).all()
    expected = np.bincount(y) * test.size / 150  # stratified: within one
    assert np.abs(np.bincount(y[test]) - expected).max() < 1
    for alpha in (0.05, 0.1, 0.25):
        cc = ConformalClassifier(
            model, method=method, alpha=alpha, randomized=randomized, random_state=7
        ).fit(X[test], y[test])
        np.testing.assert_array_equal(
            cp.predict_set(X_test, alpha=alpha), cc.predict_set(X_test)
        )
    np.testing.assert_allclose(cp.predict_proba(X_test), model.predict_proba(X_test))


def test_several_alphas_are_nested_and_equal_single_calls():
    X, y, X_test = _data(120)
    cp = CrossConformalClassifier(LogisticRegression(), method="aps", randomized=True)
    cp.set_params(random_state=0).fit(X, y)
    alphas = [0.02, 0.1, 0.2, 0.5]
    sets = cp.predict_set(X_test, alpha=alphas)
    assert sets.shape == (40, 3, 4) and sets.dtype == bool
    for j, a in enumerate(alphas):
        np.testing.assert_array_equal(sets[:, :, j], cp.predict_set(X_test, alpha=a))
    assert (sets[:, :, 1:] <= sets[:, :, :-1]).all()  # nested
    np.testing.assert_array_equal(cp.predict_set(X_test), sets[:, :, 1])  # alpha=0.1
    np.testing.assert_array_equal(
        cp.predict_set(X_test, alpha=(0.1,))[:, :, 0], sets[:, :, 1]
    )
    # predict_set changes nothing: the same call gives the same sets
    np.testing.assert_array_equal(cp.predict_set(X_test), sets[:, :, 1])


def test_predict_proba_is_the_mean_of_the_fold_models():
    X, y, X_test = _data(100)
    cp = CrossConformalClassifier(LogisticRegression(), cv=3).fit(X, y)
    mean = np.mean([m.predict_proba(X_test) for m in cp.estimators_], axis=0)
    np.testing.assert_allclose(cp.predict_proba(X_test), mean)
    np.testing.assert_array_equal(cp.predict(X_test), np.argmax(mean, axis=1))
    plain = cp.predict_set(X_test, alpha=0.6)
    top = (
        clone(cp).set_params(include_top=True).fit(X, y).predict_set(X_test, alpha=0.6)
    )
    rows = np.arange(40)
    assert not plain[rows, np.argmax(mean, axis=1)].all()  # empty or off-top sets
    assert top[rows, np.argmax(mean, axis=1)].all()
    plain[rows, np.argmax(mean, axis=1)] = True
    np.testing.assert_array_equal(top, plain)


def test_string_labels_and_a_class_a_fold_never_saw():
    X, y, X_test = _data(90)
    y = np.array(["ant", "bee", "cow"])[y]
    y[0] = "emu"  # one sample: the model of its fold never sees it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn: 2 < n_splits
        cp = CrossConformalClassifier(LogisticRegression(), cv=5).fit(X, y)
    assert cp.classes_.tolist() == ["ant", "bee", "cow", "emu"]
    missing = [m for m in cp.estimators_ if "emu" not in m.classes_]
    assert missing  # some fold's model never saw "emu": probability 0 there
    p = cp.predict_proba(X_test)
    np.testing.assert_allclose(p.sum(axis=1), 1)
    sets = cp.predict_set(X_test, alpha=[0.1, 0.3])
    assert sets.shape == (40, 4, 2)
    assert set(cp.predict(X_test)) <= set(cp.classes_)


def test_leave_one_out_is_the_jackknife_plus():
    X, y, X_test = _data(30)
    cp = CrossConformalClassifier(LogisticRegression(), cv=LeaveOneOut()).fit(X, y)
    assert len(cp.estimators_) == 30
    np.testing.assert_array_equal(
        cp.predict_set(X_test[:5], alpha=0.2), _ref_sets(cp, X_test[:5], 0.2)
    )


def test_bad_alpha_is_refused_naming_it():
    X, y, X_test = _data(60)
    cp = CrossConformalClassifier(LogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match=r"strictly increasing, got 0.1 after 0.2"):
        cp.predict_set(X_test, alpha=[0.2, 0.1])
    with pytest.raises(ValueError, match=r"strictly increasing, got 0.1 after 0.1"):
        cp.predict_set(X_test, alpha=[0.1, 0.1])
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match=f"got {float(bad)!r} at position 1"):
            cp.predict_set(X_test, alpha=[0.05, bad])
        with pytest.raises(
            ValueError, match=f"alpha must be in \\(0, 1\\), got {bad!r}"
        ):
            cp.predict_set(X_test, alpha=bad)
    with pytest.raises(ValueError, match="empty list"):
        cp.predict_set(X_test, alpha=[])
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        cp.predict_set(X_test, alpha=[[0.1, 0.2]])
    with pytest.raises(InvalidParameterError, match="'alpha' parameter"):
        CrossConformalClassifier(LogisticRegression(), alpha=1.0).fit(X, y)


def test_bad_folds_and_parameters_are_refused():
    X, y, _ = _data(60)
    est = LogisticRegression()
    overlapping = ShuffleSplit(3, test_size=0.5, random_state=0)
    with pytest.raises(ValueError, match="partition the samples.*more than one"):
        CrossConformalClassifier(est, cv=overlapping).fit(X, y)
    half = [(np.arange(30), np.arange(30, 60))]
    with pytest.raises(ValueError, match=r"partition.*30 sample\(s\) are in no test"):
        CrossConformalClassifier(est, cv=half).fit(X, y)
    both = [(np.arange(40), np.arange(30, 60)), (np.arange(30, 60), np.arange(30))]
    with pytest.raises(ValueError, match=r"samples \[30, 31, 32, 33, 34\] in both"):
        CrossConformalClassifier(est, cv=both).fit(X, y)
    with pytest.raises(ValueError, match=r"one class only \(\[1\]\)"):
        CrossConformalClassifier(est).fit(X, np.ones(60, dtype=int))
    with pytest.raises(InvalidParameterError, match="'method' parameter"):
        CrossConformalClassifier(est, method="nope").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'cv' parameter"):
        CrossConformalClassifier(est, cv="splits").fit(X, y)


def test_too_few_calibration_samples_give_full_sets_with_a_warning():
    X, y, X_test = _data(60)
    cp = CrossConformalClassifier(
        LogisticRegression(), cv="split", calibration_size=8, random_state=0
    )
    with pytest.warns(UserWarning, match="needs at least 9 calibration samples.*got 8"):
        cp.fit(X, y)
    assert cp.predict_set(X_test).all()
    cp.set_params(alpha=0.2).fit(X, y)  # 8 samples suffice at 0.2
    with pytest.warns(UserWarning, match="alpha=0.05 needs at least 19"):
        full = cp.predict_set(X_test, alpha=[0.05, 0.2])
    assert full[:, :, 0].all() and not full[:, :, 1].all()


def test_sample_weight_reaches_the_estimator_and_the_counts():
    X, y, X_test = _data(80)
    w = np.r_[np.zeros(10), np.ones(70)]
    cp = CrossConformalClassifier(LogisticRegression(), cv="split", random_state=0)
    cp.fit(X, y, sample_weight=w)
    train, test = cp.folds_[0]
    ref = LogisticRegression().fit(X[train], y[train], sample_weight=w[train])
    np.testing.assert_allclose(cp.predict_proba(X_test), ref.predict_proba(X_test))
    assert cp._total_weight == w[test].sum()

    class NoWeights(LogisticRegression):
        def fit(self, X, y):
            return super().fit(X, y)

    with pytest.warns(UserWarning, match="does not accept sample_weight"):
        CrossConformalClassifier(NoWeights(), cv=3).fit(X, y, sample_weight=w)


#: Every set rule of ConformalClassifier: (method, randomized, include_last_label).
RULES = [
    (m, r, last)
    for m in sorted(ConformalClassifier._parameter_constraints["method"][0].options)
    for r, last in ((False, True), (True, True), (False, False))
    if m in RANDOMIZABLE or (not r and last)
]


@pytest.mark.parametrize("method, randomized, last", RULES)
def test_every_rule_is_the_count_of_the_calibration_sets_that_exclude(
    method, randomized, last
):
    """CV+ in its general form: ``y`` is kept unless at least ``(1 -
    alpha)(n + 1)`` calibration scores, used as thresholds of
    ConformalClassifier's rule under their own fold's model, leave it out."""
    X, y, X_test = _data(50, n_classes=4)
    params = dict(method=method, randomized=randomized, include_last_label=last)
    params.update(k_reg=1, lam=0.05)
    cp = CrossConformalClassifier(LogisticRegression(), cv=3, random_state=0, **params)
    cp.fit(X, y)
    mean = cp.predict_proba(X_test)
    u = row_uniforms(mean, cp._seed) if randomized else None
    set_params = {"include_last_label": last}
    if method == "raps":
        set_params.update(k_reg=1, lam=0.05)
    excluded = np.zeros((len(X_test), 4))
    for s_i, f in zip(cp.conformity_scores_, cp.fold_of_sample_, strict=True):
        p = fold_proba(cp.estimators_[f], X_test, cp.classes_)  # rows sum to 1
        excluded += ~prediction_sets(p, method, s_i, u, **set_params)
    for alpha in (0.1, 0.3):
        np.testing.assert_array_equal(
            cp.predict_set(X_test, alpha=alpha), excluded < (1 - alpha) * 51
        )


@pytest.mark.parametrize("method, randomized, last", RULES)
def test_every_rule_in_split_mode_is_conformal_classifier(method, randomized, last):
    X, y, X_test = _data(200, n_classes=4)
    params = dict(method=method, randomized=randomized, include_last_label=last)
    params.update(k_reg=1, lam=0.05, random_state=4)
    cp = CrossConformalClassifier(LogisticRegression(), cv="split", **params)
    cp.fit(X, y)
    (_, test), model = cp.folds_[0], cp.estimators_[0]
    # raw-score mode: the model's probabilities as they are (wrapper mode
    # renormalises rows that miss 1 by rounding, which moves ties)
    cc = ConformalClassifier(**params).fit(model.predict_proba(X[test]), y[test])
    alphas = [0.05, 0.1, 0.3]
    np.testing.assert_array_equal(
        cp.predict_set(X_test, alpha=alphas),
        cc.predict_set(model.predict_proba(X_test), alpha=alphas),
    )
    assert (cp.predict_set(X_test, alpha=[0.05, 0.3]).sum(axis=1) > 0).any()


def test_bad_set_options_are_refused():
    X, y, _ = _data(60)
    est = LogisticRegression()
    with pytest.raises(
        ValueError, match="method='aps' or 'raps' only, got method='lac'"
    ):
        CrossConformalClassifier(est, randomized=True).fit(X, y)
    with pytest.raises(ValueError, match="include_last_label=False applies"):
        CrossConformalClassifier(est, method="top_k", include_last_label=False).fit(
            X, y
        )
    with pytest.raises(ValueError, match="include_last_label=False applies"):
        CrossConformalClassifier(
            est, method="aps", randomized=True, include_last_label=False
        ).fit(X, y)


def test_clone_pickle_and_no_state_in_init():
    cp = CrossConformalClassifier(LogisticRegression(C=0.5), cv=3, alpha=0.2)
    twin = clone(cp)
    assert twin.get_params()["estimator"].C == 0.5 and twin.cv == 3
    X, y, X_test = _data(60)
    cp.fit(X, y)
    again = pickle.loads(pickle.dumps(cp))
    np.testing.assert_array_equal(again.predict_set(X_test), cp.predict_set(X_test))
    assert not hasattr(clone(cp), "estimators_")


@parametrize_with_checks(
    [
        CrossConformalClassifier(LogisticRegression()),
        CrossConformalClassifier(LogisticRegression(), cv="split", random_state=0),
    ]
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # the checks' tiny data sets are below the 9 samples alpha=0.1 needs
        warnings.filterwarnings("ignore", "alpha=0.1 needs at least")
        check(estimator)
