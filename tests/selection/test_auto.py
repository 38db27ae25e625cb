"""AutoCalibrator and IdentityCalibrator: the selection rule against a
hand-written cross-validation loop, modes, failures and real predictions."""

import warnings

import numpy as np
import pytest
from _data import calibrated_logits
from scipy.special import expit, softmax
from sklearn.datasets import make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import _expected_failed_checks

from skcalib import (
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.calibration._identity import IdentityCalibrator
from skcalib.metrics import brier_scorer, negative_log_likelihood
from skcalib.selection._auto import AutoCalibrator


def _logits(n=1500, k=3, scale=1.0, seed=0):
    """Calibrated logits times ``scale`` (over-confident for scale > 1)."""
    z, y = calibrated_logits(n, k, scale=1.5, seed=seed)
    return scale * z, y


class FailingCalibrator(TemperatureCalibrator):
    """Raises on fit when the data have more than ``limit`` samples."""

    def __init__(self, *, limit=0, estimator=None, score_type="auto"):
        super().__init__(estimator=estimator, score_type=score_type)
        self.limit = limit

    _parameter_constraints = {**TemperatureCalibrator._parameter_constraints}
    _parameter_constraints["limit"] = [int]

    def _fit(self, scores, y, sample_weight):
        if scores.n_samples > self.limit:
            raise RuntimeError("broken on purpose")
        super()._fit(scores, y, sample_weight)


# ------------------------------------------------------------- common checks
@parametrize_with_checks(
    [AutoCalibrator(cv=3, n_std_errors=0.0)],  # defaults: tests/test_common.py
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ identity
def test_identity_returns_the_model_probabilities():
    z, y = _logits()
    np.testing.assert_allclose(
        IdentityCalibrator().fit(z, y).predict_proba(z), softmax(z, axis=1), rtol=1e-12
    )
    s = z[:, 1] - z[:, 0]
    yb = (y == 1).astype(int)
    p1 = IdentityCalibrator().fit(s, yb).predict_proba(s)[:, 1]
    np.testing.assert_allclose(p1, expit(s), rtol=1e-12)
    probs = softmax(z, axis=1).astype(np.float32)
    out = IdentityCalibrator().fit(probs, y).predict_proba(probs)
    assert out.dtype == np.float32 and out is not probs
    np.testing.assert_allclose(out.sum(axis=1), 1, rtol=1e-6)


def test_identity_in_wrapper_mode_is_the_classifier():
    X, y = make_classification(600, random_state=0)
    clf = GaussianNB().fit(X[:300], y[:300])
    ident = IdentityCalibrator(estimator=clf).fit(X[300:], y[300:])
    np.testing.assert_allclose(
        ident.predict_proba(X[300:]), clf.predict_proba(X[300:]), rtol=1e-12
    )


# ------------------------------------------------ the rule, by hand
def _hand_cv(candidates, z, y, cv, sample_weight=None):
    """Split scores of every candidate: fit on the training part, NLL on the
    test part (negated), as written in AutoCalibrator's docstring."""
    out = np.empty((len(candidates), len(cv)))
    for f, (train, test) in enumerate(cv):
        for c, cand in enumerate(candidates):
            w_tr = None if sample_weight is None else sample_weight[train]
            w_te = None if sample_weight is None else sample_weight[test]
            fitted = cand.fit(z[train], y[train], sample_weight=w_tr)
            proba = fitted.predict_proba(z[test])
            out[c, f] = -log_loss(y[test], proba, sample_weight=w_te, labels=[0, 1, 2])
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_cv_results_match_a_hand_written_loop(weighted):
    z, y = _logits(scale=2.0)
    w = np.random.default_rng(1).uniform(0.5, 2, y.size) if weighted else None
    cands = [
        TemperatureCalibrator(score_type="logit"),
        PlattCalibrator(score_type="logit"),
        HistogramBinningCalibrator(score_type="logit"),
    ]
    cv = list(StratifiedKFold(4).split(z, y))
    auto = AutoCalibrator(cands, cv=4, n_std_errors=1.5).fit(z, y, sample_weight=w)
    res = auto.cv_results_
    assert list(res["candidate"]) == [
        "identity",
        "temperature",
        "platt",
        "histogram_binning",
    ]
    ref = _hand_cv([IdentityCalibrator(score_type="logit"), *cands], z, y, cv, w)
    for f in range(4):
        np.testing.assert_allclose(res[f"split{f}_test_score"], ref[:, f], rtol=1e-10)
        np.testing.assert_allclose(
            res[f"split{f}_test_gain"], ref[:, f] - ref[0, f], rtol=1e-9, atol=1e-12
        )
    gain = ref - ref[0]
    n_test = np.mean([len(t) for _, t in cv])
    n_train = np.mean([len(t) for t, _ in cv])
    se = gain.std(axis=1, ddof=1) * np.sqrt(1 / 4 + n_test / n_train)
    np.testing.assert_allclose(res["mean_test_score"], ref.mean(axis=1), rtol=1e-10)
    np.testing.assert_allclose(res["std_test_score"], ref.std(axis=1), rtol=1e-8)
    np.testing.assert_allclose(res["mean_test_gain"], gain.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(res["se_test_gain"], se, rtol=1e-8, atol=1e-14)
    beats = gain.mean(axis=1) > 1.5 * se
    beats[0] = False
    np.testing.assert_array_equal(res["beats_identity"], beats)
    assert beats.any()  # twice too sharp: calibration clearly helps
    best = np.flatnonzero(beats)[np.argmax(ref.mean(axis=1)[beats])]
    assert auto.best_index_ == best
    assert auto.best_score_ == pytest.approx(ref.mean(axis=1)[best])
    np.testing.assert_array_equal(
        res["rank_test_score"], np.argsort(np.argsort(-ref.mean(axis=1))) + 1
    )
    # refit on all the calibration data
    expected = type(cands[best - 1])(score_type="logit").fit(z, y, sample_weight=w)
    np.testing.assert_allclose(
        auto.predict_proba(z), expected.predict_proba(z), rtol=1e-10
    )
    assert auto.n_splits_ == 4


def test_identity_is_kept_on_calibrated_scores_and_left_on_bad_ones():
    z, y = _logits(3000, scale=1.0, seed=3)
    auto = AutoCalibrator().fit(z, y)
    assert auto.cv_results_["candidate"][auto.best_index_] == "identity"
    np.testing.assert_allclose(auto.predict_proba(z), softmax(z, axis=1))
    bad = AutoCalibrator().fit(3.0 * z, y)
    assert bad.cv_results_["candidate"][bad.best_index_] != "identity"


def test_n_std_errors_sets_how_sure_the_rule_must_be():
    z, y = _logits(800, scale=1.15, seed=4)
    greedy = AutoCalibrator(n_std_errors=0.0).fit(z, y)
    res = greedy.cv_results_
    assert greedy.best_index_ == np.nanargmax(res["mean_test_score"])
    cautious = AutoCalibrator(n_std_errors=1e6).fit(z, y)
    assert cautious.best_index_ == 0
    assert not cautious.cv_results_["beats_identity"].any()


def test_default_candidates_depend_on_the_number_of_classes():
    z, y = _logits(600, k=2)
    names = list(AutoCalibrator(cv=3).fit(z, y).cv_results_["candidate"])
    assert names == [
        "identity",
        "temperature",
        "ensemble_temperature",
        "platt",
        "beta",
        "isotonic",
        "histogram_binning",
        "spline",
    ]
    z, y = _logits(600, k=3)
    names = list(AutoCalibrator(cv=3).fit(z, y).cv_results_["candidate"])
    assert names == [
        "identity",
        "temperature",
        "ensemble_temperature",
        "platt",
        "beta",
        "isotonic",
        "histogram_binning",
        "vector_scaling",
        "dirichlet",
        "structured_matrix_scaling",
    ]


def test_candidates_names_and_validation():
    z, y = _logits(600)
    auto = AutoCalibrator(
        [
            PlattCalibrator(),
            ("sharp", TemperatureCalibrator()),
            PlattCalibrator(multi_class="top_label"),
        ],
        cv=3,
    ).fit(z, y)
    assert list(auto.cv_results_["candidate"]) == [
        "identity",
        "platt",
        "sharp",
        "platt_2",
    ]
    assert auto.cv_results_["params"][3]["multi_class"] == "top_label"
    # an explicit identity is the reference, wherever it is
    auto = AutoCalibrator([PlattCalibrator(), IdentityCalibrator()], cv=3).fit(z, y)
    assert list(auto.cv_results_["candidate"]) == ["platt", "identity"]
    assert auto.cv_results_["mean_test_gain"][1] == 0
    with pytest.raises(ValueError, match=r"candidates\[0\] must be a skcalib"):
        AutoCalibrator([LogisticRegression()]).fit(z, y)
    with pytest.raises(ValueError, match="raw-score mode"):
        AutoCalibrator([PlattCalibrator(estimator=GaussianNB())]).fit(z, y)
    with pytest.raises(ValueError, match="at least 2"):
        AutoCalibrator(cv=[(np.arange(300), np.arange(300, 600))]).fit(z, y)
    with pytest.raises(ValueError, match="not a valid scoring value"):
        AutoCalibrator(scoring="no_such_score").fit(z, y)


def test_a_failing_candidate_is_recorded_and_never_chosen():
    z, y = _logits(900, scale=3.0)
    with pytest.warns(FitFailedWarning, match="'failing' failed on 3 of 3"):
        auto = AutoCalibrator(
            [FailingCalibrator(), PlattCalibrator()], cv=3, n_std_errors=0.0
        ).fit(z, y)
    res = auto.cv_results_
    assert np.isnan(res["split0_test_score"][1]) and np.isnan(res["mean_test_score"][1])
    assert res["rank_test_score"][1] == 3  # last
    assert auto.best_index_ == 2
    # failing on some splits only is enough to be left out
    with pytest.warns(FitFailedWarning, match="failed on 1 of 3"):
        cv = [(np.arange(600), np.arange(600, 900))] + list(KFold(2).split(z[:899]))
        auto = AutoCalibrator([FailingCalibrator(limit=500)], cv=cv).fit(z, y)
    assert not auto.cv_results_["beats_identity"][1]


def test_identity_failing_on_a_split_leaves_the_split_out():
    z, y = _logits(600)
    one_class = np.flatnonzero(y == 0)[:40]
    rest = np.setdiff1d(np.arange(y.size), one_class)
    cv = [(one_class, rest)] + list(KFold(3).split(z))
    with pytest.warns(FitFailedWarning, match="split left out"):
        auto = AutoCalibrator([PlattCalibrator()], cv=cv, n_std_errors=0).fit(z, y)
    assert np.isnan(auto.cv_results_["split0_test_gain"]).all()
    assert np.isfinite(auto.cv_results_["mean_test_gain"]).all()


def test_wrapper_mode_equals_raw_mode_on_the_classifier_scores():
    X, y = make_classification(
        3000, n_informative=5, n_classes=3, random_state=0, flip_y=0.05
    )
    clf = GaussianNB().fit(X[:1000], y[:1000])
    X_cal, y_cal = X[1000:], y[1000:]
    wrapped = AutoCalibrator(estimator=clf, cv=3).fit(X_cal, y_cal)
    raw = AutoCalibrator(cv=3).fit(clf.predict_proba(X_cal), y_cal)
    assert wrapped.score_type_ == raw.score_type_ == "probability"
    np.testing.assert_allclose(
        wrapped.cv_results_["mean_test_score"], raw.cv_results_["mean_test_score"]
    )
    np.testing.assert_allclose(
        wrapped.predict_proba(X[:50]), raw.predict_proba(clf.predict_proba(X[:50]))
    )
    assert wrapped.cv_results_["candidate"][wrapped.best_index_] != "identity"


def test_classes_missing_from_y_or_from_a_training_fold():
    X, y = make_classification(
        2000, n_informative=5, n_classes=3, random_state=1, flip_y=0.05
    )
    clf = LogisticRegression().fit(X[:1000], y[:1000])
    keep = y[1000:] != 2  # the calibration data have no class 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # beta: class 2 never occurs
        auto = AutoCalibrator(estimator=clf, cv=3)
        auto.fit(X[1000:][keep], y[1000:][keep])
    np.testing.assert_array_equal(auto.best_calibrator_.classes_, [0, 1, 2])
    proba = auto.predict_proba(X[:5])
    assert proba.shape == (5, 3) and proba.min() > 0  # no hard 0 for class 2
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # a class with 2 samples is absent from the training part of some folds
    z, yk = _logits(600, k=3)
    yk[:2] = 3
    z = np.column_stack([z, np.full(600, -2.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # StratifiedKFold: 2 < 5
        auto = AutoCalibrator(cv=5).fit(z, yk)
    assert np.isfinite(auto.cv_results_["mean_test_score"][:6]).all()
    np.testing.assert_array_equal(auto.classes_, [0, 1, 2, 3])


def test_other_scorers():
    z, y = _logits(900, scale=2.0)
    auto = AutoCalibrator(cv=3, scoring=brier_scorer).fit(z, y)
    assert auto.scorer_ is brier_scorer
    assert np.all(auto.cv_results_["mean_test_score"] < 0)
    auto = AutoCalibrator(cv=3, scoring="neg_brier_score").fit(z, y)
    assert auto.best_index_ != 0


def test_string_labels():
    z, y = _logits(900, scale=2.0)
    labels = np.array(["a", "b", "c"])[y]
    auto = AutoCalibrator(cv=3).fit(z, labels)
    np.testing.assert_array_equal(auto.best_calibrator_.classes_, ["a", "b", "c"])
    assert set(auto.predict(z)) <= {"a", "b", "c"}


# ------------------------------------------------------- real predictions
@pytest.mark.parametrize(
    "relpath",
    [
        "pycalib/kitti__random_forest.npz",
        "pycalib/mnist__1layer_NN.npz",
        "netcal/wideresnet-16-4-cifar-10.npz",
    ],
)
def test_never_worse_than_uncalibrated_on_real_predictions(shared_loader, relpath):
    probs, labels = shared_loader(relpath)
    p = probs.astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    p_cal, p_test, y_cal, y_test = train_test_split(
        p, labels, test_size=0.5, stratify=labels, random_state=0
    )
    k = p.shape[1]
    cands = [
        IdentityCalibrator(),
        TemperatureCalibrator(),
        PlattCalibrator(),
        BetaCalibrator(),
        IsotonicCalibrator(),
    ] + ([VectorScalingCalibrator(), DirichletCalibrator()] if k > 2 else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoCalibrator(cands).fit(p_cal, y_cal)
    before = negative_log_likelihood(y_test, p_test)
    after = negative_log_likelihood(y_test, auto.predict_proba(p_test))
    # These models are miscalibrated: the rule leaves the identity, and the
    # test NLL drops.
    assert auto.best_index_ != 0
    assert after < before - 0.005
