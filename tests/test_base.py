"""The shared base: modes, score types, equivalences, sklearn integration, errors."""

import numpy as np
import pytest
from _data import binary_logits, classification_split, multiclass_logits
from _discovery import default_instance, score_calibrator_classes
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils._param_validation import InvalidParameterError

from skcalib import (
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)

CALIBRATORS = [
    PlattCalibrator,
    TemperatureCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
]
ALL = pytest.mark.parametrize("cls", CALIBRATORS, ids=lambda c: c.__name__)


class CountingGaussianNB(GaussianNB):
    n_fit_calls = 0

    def fit(self, X, y, sample_weight=None):
        type(self).n_fit_calls += 1
        return super().fit(X, y, sample_weight=sample_weight)


# ------------------------------------------------------------- score types
def test_auto_rule():
    s, y = binary_logits()
    assert PlattCalibrator().fit(s, y).score_type_ == "logit"
    p = 1 / (1 + np.exp(-s))
    assert PlattCalibrator().fit(p, y).score_type_ == "probability"
    z, yk = multiclass_logits()
    assert TemperatureCalibrator().fit(z, yk).score_type_ == "logit"
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert TemperatureCalibrator().fit(probs, yk).score_type_ == "probability"
    # values in [0, 1] whose rows do not sum to 1 are never silently logits
    with pytest.raises(ValueError, match="score_type='logit'"):
        TemperatureCalibrator().fit(probs * 0.9, yk)
    assert (
        TemperatureCalibrator(score_type="logit").fit(probs * 0.9, yk).score_type_
        == "logit"
    )
    # float32 softmax rows within sqrt(eps) of 1 are probabilities
    p32 = probs.astype(np.float32)
    assert TemperatureCalibrator().fit(p32, yk).score_type_ == "probability"


def test_score_type_is_decided_at_fit_only():
    s, y = binary_logits()
    cal = PlattCalibrator().fit(s, y)
    # test logits that happen to lie in [0, 1] are still logits
    np.testing.assert_allclose(
        cal.predict_proba(np.array([0.2, 0.7]))[:, 1],
        1 / (1 + np.exp(-(cal.coef_[0] * np.array([0.2, 0.7]) + cal.intercept_[0]))),
    )


@ALL
def test_logits_and_probabilities_give_the_same_calibration(cls):
    z, y = multiclass_logits()
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    a = default_instance(cls).fit(z, y).predict_proba(z)
    b = default_instance(cls).fit(probs, y).predict_proba(probs)
    np.testing.assert_allclose(a, b, atol=1e-6)


# -------------------------------------------------------------- edge cases
@ALL
def test_extreme_logits_give_valid_probabilities(cls):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    X = rng.choice([-1e4, 0.0, 1e4], size=(200, 3))
    p = default_instance(cls).fit(X, y).predict_proba(X)
    assert np.isfinite(p).all() and (p >= 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


@ALL
def test_constant_scores_give_valid_probabilities(cls):
    y = np.arange(60) % 3
    cal = cls(score_type="logit").fit(np.zeros((60, 3)), y)
    p = cal.predict_proba(np.zeros((5, 3)))
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # all-zero scores lie in [0, 1]: under "auto" they are not silently logits
    with pytest.raises(ValueError, match=r"row 0 sums to 0 .*score_type='logit'"):
        default_instance(cls).fit(np.zeros((60, 3)), y)


@ALL
def test_string_labels_and_predict(cls):
    X, y = multiclass_logits()
    names = np.array(["cat", "dog", "eel"])[y]
    cal = default_instance(cls).fit(X, names)
    np.testing.assert_array_equal(cal.classes_, ["cat", "dog", "eel"])
    pred = cal.predict(X)
    assert set(pred) <= {"cat", "dog", "eel"}
    assert cal.score(X, names) == np.mean(pred == names)


# ---------------------------------------------------------------- wrapper mode
@ALL
def test_wrapper_mode_never_refits_and_uses_estimator_classes(cls):
    X_fit, y_fit, X_cal, y_cal = classification_split()
    CountingGaussianNB.n_fit_calls = 0
    clf = CountingGaussianNB().fit(X_fit, y_fit)
    assert CountingGaussianNB.n_fit_calls == 1
    cal = cls(estimator=clf).fit(X_cal, y_cal)
    cal.predict_proba(X_cal)
    clone(cal).fit(X_cal, y_cal)
    GridSearchCV(cls(estimator=clf), {"score_type": ["auto", "probability"]}, cv=3).fit(
        X_cal, y_cal
    )
    cross_validate(cls(estimator=clf), X_cal, y_cal, cv=3, scoring="neg_log_loss")
    assert CountingGaussianNB.n_fit_calls == 1
    np.testing.assert_array_equal(cal.classes_, clf.classes_)
    assert cal.score_type_ == "probability"  # GaussianNB has no decision_function
    assert cal.n_features_in_ == 8


@ALL
def test_wrapper_equals_raw_scores(cls):
    X_fit, y_fit, X_cal, y_cal = classification_split()
    clf = LogisticRegression(max_iter=1000).fit(X_fit, y_fit)
    wrapped = cls(estimator=clf).fit(X_cal, y_cal)
    assert wrapped.score_type_ == "logit"
    raw = default_instance(cls).fit(clf.decision_function(X_cal), y_cal)
    np.testing.assert_allclose(
        wrapped.predict_proba(X_cal), raw.predict_proba(clf.decision_function(X_cal))
    )
    via_proba = cls(estimator=clf, response_method="predict_proba").fit(X_cal, y_cal)
    assert via_proba.score_type_ == "probability"


def test_wrapper_rejects_labels_the_estimator_does_not_know():
    X_fit, y_fit, X_cal, y_cal = classification_split()
    clf = GaussianNB().fit(X_fit, y_fit)
    y_bad = y_cal.copy()
    y_bad[3] = 7
    with pytest.raises(ValueError, match=r"labels \[7\].*classes_ are \[0, 1, 2\]"):
        PlattCalibrator(estimator=clf).fit(X_cal, y_bad)


class _DriftingProba(GaussianNB):
    """predict_proba rows off 1 by ``drift`` (rounding of a real model)."""

    def __init__(self, drift=5e-8):
        super().__init__()
        self.drift = drift

    def predict_proba(self, X):
        return super().predict_proba(X) * (1.0 + self.drift)


def test_wrapper_renormalises_predict_proba_rounding_drift():
    X_fit, y_fit, X_cal, y_cal = classification_split()
    ref = PlattCalibrator(estimator=GaussianNB().fit(X_fit, y_fit)).fit(X_cal, y_cal)
    drifting = _DriftingProba().fit(X_fit, y_fit)
    cal = PlattCalibrator(estimator=drifting).fit(X_cal, y_cal)
    np.testing.assert_allclose(
        cal.predict_proba(X_cal), ref.predict_proba(X_cal), atol=1e-7
    )
    # a drift beyond rounding is still an error naming the row
    broken = _DriftingProba(drift=0.01).fit(X_fit, y_fit)
    with pytest.raises(ValueError, match=r"scores of _DriftingProba must hold.*row"):
        PlattCalibrator(estimator=broken).fit(X_cal, y_cal)


def test_wrapper_unfitted_estimator_and_missing_method():
    from sklearn.exceptions import NotFittedError

    X_fit, y_fit, X_cal, y_cal = classification_split()
    with pytest.raises(NotFittedError):
        PlattCalibrator(estimator=GaussianNB()).fit(X_cal, y_cal)
    clf = GaussianNB().fit(X_fit, y_fit)
    with pytest.raises(ValueError, match="has no method 'decision_function'"):
        PlattCalibrator(estimator=clf, response_method="decision_function").fit(
            X_cal, y_cal
        )


def test_grid_search_over_n_bins_in_wrapper_mode():
    X_fit, y_fit, X_cal, y_cal = classification_split()
    clf = GaussianNB().fit(X_fit, y_fit)
    search = GridSearchCV(
        HistogramBinningCalibrator(estimator=clf),
        {"n_bins": [5, 10, 20], "strategy": ["uniform", "quantile"]},
        scoring="neg_log_loss",
        cv=3,
    ).fit(X_cal, y_cal)
    assert search.best_params_["n_bins"] in (5, 10, 20)
    assert search.best_estimator_.estimator is clf
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_pipeline_sees_transformed_scores_and_set_output():
    z, y = multiclass_logits()
    pipe = make_pipeline(
        FunctionTransformer(lambda a: 2.0 * a), TemperatureCalibrator()
    )
    pipe.fit(z, y)
    assert pipe.named_steps["temperaturecalibrator"].temperature_ > 1
    pd = pytest.importorskip("pandas")
    out = TemperatureCalibrator().set_output(transform="pandas").fit(z, y).transform(z)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["proba_0", "proba_1", "proba_2"]


# ------------------------------------------------------------------ bad input
#: Every public calibrator of the shared base (raw-score mode by default).
EVERY = pytest.mark.parametrize(
    "cls",
    score_calibrator_classes(),
    ids=lambda c: c.__name__,
)


@EVERY
@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.array([[0.1, np.nan], [0.3, 0.7]]), [0, 1], "NaN"),
        (np.array([[0.1, np.inf], [0.3, 0.7]]), [0, 1], "infinity"),
        (np.zeros((4, 3)), [0, 1, 0, 1], r"3 column\(s\) but there are 2 classes"),
        (np.zeros((4, 2, 2)), [0, 1, 0, 1], "dim"),
        (np.array([0.2, 0.4, 0.6]), [1, 1, 1], "one class"),
        (np.zeros((0, 2)), [], "0 sample"),
        (np.array([0.2, 0.4, 0.6]), [0, 1], "samples"),
    ],
)
def test_bad_input_errors(cls, X, y, match):
    with pytest.raises(ValueError, match=match):
        default_instance(cls).fit(X, np.asarray(y))


@EVERY
def test_non_finite_scores_at_predict_name_the_input(cls):
    # The finiteness check is the min/max of the scores (no separate pass);
    # the message is scikit-learn's, for raw X and for a wrapped model's scores.
    rng = np.random.default_rng(0)
    p = rng.uniform(size=40)
    cal = default_instance(cls).fit(
        np.column_stack((1 - p, p)), (rng.uniform(size=40) < p).astype(int)
    )
    with pytest.raises(ValueError, match=f"(?s)Input X contains NaN.*{cls.__name__}"):
        cal.predict_proba(np.array([[0.2, 0.8], [np.nan, 0.5]]))
    with pytest.raises(ValueError, match="Input X contains infinity"):
        cal.predict_proba(np.array([[0.2, -np.inf], [0.5, 0.5]]))


def test_wrapped_model_non_finite_scores_are_named():
    X, y = make_classification(60, random_state=0)
    clf = LogisticRegression().fit(X, y)

    class NaNScores(LogisticRegression):
        def decision_function(self, X):
            out = super().decision_function(X)
            out[1] = np.nan
            return out

    bad = NaNScores().fit(X, y)
    match = r"NaNScores\.decision_function\(X\) contains NaN"
    with pytest.raises(ValueError, match=match):
        PlattCalibrator(estimator=bad).fit(X, y)
    cal = PlattCalibrator(estimator=clf).fit(X, y)
    assert np.isfinite(cal.predict_proba(X)).all()


@pytest.mark.parametrize(
    "labels",
    [[0, 1], [1, 2], [-1, 0], [3, 7], [0, 1, 2], [0, 2, 5], [-3, 4], [5], [-128, 127]],
)
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16])
def test_label_encoding_matches_numpy_unique(labels, dtype):
    from skcalib._base import _unique_inverse

    if np.dtype(dtype).kind == "u" and min(labels) < 0:
        pytest.skip("negative labels in an unsigned dtype")
    rng = np.random.default_rng(0)
    y = rng.choice(np.array(labels), 200).astype(dtype)
    y[: len(labels)] = labels  # every label present
    classes, inverse = _unique_inverse(y)
    ref_classes, ref_inverse = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(classes, ref_classes)
    assert classes.dtype == y.dtype
    np.testing.assert_array_equal(inverse, ref_inverse)


@ALL
def test_bad_probabilities_and_weights(cls):
    p = np.array([[0.2, 0.7], [0.5, 0.5], [0.9, 0.1]])
    y = np.array([0, 1, 0])
    with pytest.raises(ValueError, match="row 0 sums to 0.9"):
        cls(score_type="probability").fit(p, y)
    with pytest.raises(ValueError, match=r"\[0, 1\]; row 1"):
        cls(score_type="probability").fit(np.array([0.2, 1.5, 0.1]), y)
    good = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    with pytest.raises(ValueError, match="(?i)negative"):
        default_instance(cls).fit(good, y, sample_weight=[1, -1, 1])
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(2,\)"):
        default_instance(cls).fit(good, y, sample_weight=[1, 1])
    with pytest.raises(ValueError, match="(?i)zero"):
        default_instance(cls).fit(good, y, sample_weight=[0, 0, 0])
    fitted = default_instance(cls).fit(good, y)
    with pytest.raises(ValueError, match="X has 3 features.* expecting 2"):
        fitted.predict_proba(np.ones((2, 3)) / 3)


@ALL
def test_invalid_parameters(cls):
    with pytest.raises(InvalidParameterError, match="score_type"):
        cls(score_type="odds").fit(np.array([0.2, 0.8]), [0, 1])


def test_method_specific_invalid_parameters():
    with pytest.raises(InvalidParameterError, match="n_bins"):
        HistogramBinningCalibrator(n_bins=0).fit(np.array([0.2, 0.8]), [0, 1])
    with pytest.raises(InvalidParameterError, match="strategy"):
        HistogramBinningCalibrator(strategy="kmeans").fit(np.array([0.2, 0.8]), [0, 1])
    with pytest.raises(InvalidParameterError, match="multi_class"):
        PlattCalibrator(multi_class="multinomial").fit(np.array([0.2, 0.8]), [0, 1])
    with pytest.raises(InvalidParameterError, match="max_iter"):
        TemperatureCalibrator(max_iter=0).fit(np.array([0.2, 0.8]), [0, 1])
