"""Prediction sets at several levels in one call: ``predict_set(X, alpha=...)``."""

import warnings

import numpy as np
import pytest

from skcalib import ConformalClassifier
from skcalib.conformal._quantile import (
    check_alphas,
    conformal_quantile,
    quantiles_of_sorted,
    sort_scores,
)
from skcalib.datasets import make_miscalibrated_scores

ALPHAS = [0.02, 0.05, 0.1, 0.2, 0.5]
SETTINGS = [
    {"method": "lac"},
    {"method": "aps", "randomized": False},
    {"method": "aps", "include_last_label": False},
    {"method": "aps", "randomized": True, "random_state": 0},
    {"method": "raps", "k_reg": 1, "lam": 0.05, "randomized": False},
    {"method": "raps", "randomized": True, "random_state": 1, "k_reg": 2, "lam": 0.1},
    {"method": "top_k"},
]


@pytest.fixture(scope="module")
def data():
    logits, y, _ = make_miscalibrated_scores(1500, 6, temperature=0.7, random_state=0)
    test, _, _ = make_miscalibrated_scores(400, 6, temperature=0.7, random_state=1)
    return logits, y, test


@pytest.mark.parametrize("params", SETTINGS)
@pytest.mark.parametrize("class_conditional", [False, True])
def test_each_level_is_the_fit_at_that_level(data, params, class_conditional):
    logits, y, test = data
    params = {**params, "class_conditional": class_conditional}
    cp = ConformalClassifier(alpha=0.1, **params).fit(logits, y)
    sets = cp.predict_set(test, alpha=ALPHAS)
    assert sets.shape == (400, 6, len(ALPHAS)) and sets.dtype == bool
    # nested: the set of a larger alpha is within the set of a smaller one
    assert (sets[:, :, 1:] <= sets[:, :, :-1]).all()
    assert (sets[:, :, 0].sum() > sets[:, :, -1].sum()) or params["method"] == "top_k"
    for a, alpha in enumerate(ALPHAS):
        np.testing.assert_array_equal(sets[:, :, a], cp.predict_set(test, alpha=alpha))
        refit = ConformalClassifier(alpha=alpha, **params).fit(logits, y)
        np.testing.assert_array_equal(sets[:, :, a], refit.predict_set(test))
        np.testing.assert_array_equal(
            cp._thresholds(np.array([alpha]))[0], refit.threshold_
        )
    np.testing.assert_array_equal(cp.predict_set(test, alpha=None), sets[:, :, 2])
    np.testing.assert_array_equal(cp.predict_set(test), sets[:, :, 2])


def test_weighted_thresholds_at_several_levels():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    w = rng.integers(0, 4, 200).astype(float)
    for weight in (None, w):
        got = quantiles_of_sorted(*sort_scores(s, weight), ALPHAS)
        want = [conformal_quantile(s, a, weight) for a in ALPHAS]
        np.testing.assert_array_equal(got, want)
        assert (np.diff(got) <= 0).all()
    assert np.isinf(quantiles_of_sorted(*sort_scores(s[:5]), [0.01, 0.5])[0])
    assert quantiles_of_sorted(*sort_scores(np.array([])), [0.5]).tolist() == [np.inf]


def test_levels_without_a_finite_threshold_warn(data):
    logits, y, test = data
    cp = ConformalClassifier(alpha=0.1).fit(logits[:60], y[:60])
    with pytest.warns(UserWarning, match=r"alpha=0.01 needs at least 99"):
        sets = cp.predict_set(test, alpha=[0.01, 0.1])
    assert sets[:, :, 0].all() and not sets[:, :, 1].all()
    mondrian = ConformalClassifier(alpha=0.2, class_conditional=True).fit(
        logits[:60], y[:60]
    )
    with pytest.warns(UserWarning, match=r"Classes \[.*\] have fewer than"):
        mondrian.predict_set(test, alpha=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp.predict_set(test, alpha=[0.1, 0.3])  # finite thresholds: no warning


@pytest.mark.parametrize(
    "alpha, match",
    [
        (0.0, r"alpha must be in \(0, 1\), got 0.0"),
        (1, r"alpha must be in \(0, 1\), got 1"),
        ([0.1, 1.2], r"got 1.2 at position 1 of \[0.1, 1.2\]"),
        ([0.1, np.nan], r"got nan at position 1"),
        ([0.2, 0.1], r"strictly increasing, got 0.1 after 0.2 \(position 1"),
        ([0.1, 0.1], r"strictly increasing, got 0.1 after 0.1"),
        ([], r"alpha is an empty list"),
        ([[0.1, 0.2]], r"1-D list of floats, got an array of shape \(1, 2\)"),
        ("low", r"a float in \(0, 1\) or a list of them, got 'low'"),
    ],
)
def test_bad_levels_raise_clear_errors(data, alpha, match):
    logits, y, test = data
    cp = ConformalClassifier().fit(logits, y)
    with pytest.raises(ValueError, match=match):
        cp.predict_set(test, alpha=alpha)


def test_check_alphas():
    assert check_alphas(0.1)[1] is True
    alphas, scalar = check_alphas(np.array([0.05, 0.1]))
    assert not scalar and alphas.tolist() == [0.05, 0.1]
    assert check_alphas((0.3,))[0].tolist() == [0.3]
