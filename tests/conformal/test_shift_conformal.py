"""Fast tests of the weighted conformal classifiers under label and
covariate shift: the weighted quantile against a slow obvious
implementation, equal weights against ConformalClassifier, full sets, bad
input."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skcalib import (
    ConformalClassifier,
    CovariateShiftConformalClassifier,
    LabelShiftConformalClassifier,
)
from skcalib.conformal._quantile import quantiles_of_sorted, sort_scores


def _slow_weighted_quantile(scores, weights, test_weight, alpha):
    """The smallest candidate ``t`` among the scores (and +inf) whose
    normalised weighted CDF of ``sum w_i delta_{s_i} + w delta_{inf}``
    reaches ``1 - alpha``: a loop over candidate thresholds."""
    total = weights.sum() + test_weight
    for t in sorted(set(scores.tolist())):
        if weights[scores <= t].sum() / total >= 1 - alpha - 1e-12:
            return t
    return np.inf


def _proba(rng, n, k):
    z = rng.normal(size=(n, k)) * 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(20))
def test_weighted_quantile_matches_a_loop_over_thresholds(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    scores = rng.integers(0, 5, n) / 4.0  # many ties
    weights = rng.choice([0.0, 0.5, 1.0, 2.0, 3.7], n)
    if not weights.any():
        weights[0] = 1.0
    test_weights = np.array([0.0, 0.3, 1.0, 4.0, 50.0])
    alphas = np.array([0.05, 0.1, 0.3, 0.5, 0.9])
    got = quantiles_of_sorted(
        *sort_scores(scores, weights), alphas[None, :], test_weights[:, None]
    )
    for i, tw in enumerate(test_weights):
        for j, a in enumerate(alphas):
            assert got[i, j] == _slow_weighted_quantile(scores, weights, tw, a)


def test_test_weight_one_is_split_conformal():
    rng = np.random.default_rng(0)
    s = rng.random(50)
    alphas = np.array([0.1, 0.2])
    assert np.array_equal(
        quantiles_of_sorted(*sort_scores(s), alphas),
        quantiles_of_sorted(*sort_scores(s), alphas, 1.0),
    )


CONFIGS = [
    {"method": "lac"},
    {"method": "aps", "randomized": False},
    {"method": "aps", "randomized": True, "random_state": 3},
    {"method": "aps", "randomized": False, "include_last_label": False},
]


@pytest.mark.parametrize("params", CONFIGS, ids=str)
def test_equal_weights_give_exactly_the_split_conformal_sets(params):
    rng = np.random.default_rng(1)
    P, Q = _proba(rng, 300, 4), _proba(rng, 200, 4)
    y = rng.integers(0, 4, 300)
    y[:4] = np.arange(4)
    alphas = [0.05, 0.1, 0.2, 0.4]
    plain = ConformalClassifier(**params).fit(P, y).predict_set(Q, alpha=alphas)
    priors = np.bincount(y) / y.size  # target = source priors: w_y = 1
    label = LabelShiftConformalClassifier(target_priors=priors, **params).fit(P, y)
    assert np.allclose(label.weights_, 1.0)
    assert np.array_equal(label.predict_set(Q, alpha=alphas), plain)
    for c in (1.0, 0.37):  # the ratio is known up to a constant
        cov = CovariateShiftConformalClassifier(likelihood_ratio="given", **params)
        cov.fit(P, y, calibration_weight=np.full(300, c))
        sets = cov.predict_set(Q, alpha=alphas, test_weight=np.full(200, c))
        assert np.array_equal(sets, plain)


def test_label_shift_thresholds_by_hand():
    # scores 1 - p_y: class 0: .1 .2 .3 .9, class 1: .6 .3 .45 .2
    proba = np.array(
        [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
        + [[0.3, 0.7], [0.45, 0.55], [0.2, 0.8], [0.1, 0.9]]
    )
    y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    cp = LabelShiftConformalClassifier(target_priors=[0.2, 0.8], alpha=0.3)
    cp.fit(proba, y)
    # weights .4 (class 0) and 1.6, W = 8; cumulative weights in score order
    # .4 .8 2.4 2.8 4.4 6.0 7.6 8.0; class 0: 0.7 * 8.4 = 5.88 -> 6.0 (.45),
    # class 1: 0.7 * 9.6 = 6.72 -> 7.6 (.6)
    assert np.allclose(cp.threshold_, [0.45, 0.6])
    # at alpha=0.05 class 1 needs 0.95 * 9.6 = 9.12 > 8: infinite, full
    cp005 = cp.predict_set([[0.99, 0.01]], alpha=0.05)
    assert cp005.tolist() == [[True, True]]


def test_infinite_quantile_gives_full_sets():
    rng = np.random.default_rng(2)
    P, y = _proba(rng, 40, 3), rng.integers(0, 3, 40)
    cov = CovariateShiftConformalClassifier(likelihood_ratio="given", method="aps")
    cov.fit(P, y, calibration_weight=np.ones(40))
    Q = _proba(rng, 3, 3)
    tw = np.array([1.0, 1e3, 5.0])  # 1e3 dominates the 40 calibration weights
    sets = cov.predict_set(Q, test_weight=tw)
    assert sets[1].all()
    t = cov.predict_threshold(Q, test_weight=tw)
    assert np.isinf(t[1]) and np.isfinite(t[0])
    # label shift: a class rare in calibration and frequent in the target
    y = np.r_[np.zeros(60, int), np.ones(60, int), [2]]
    P = _proba(rng, y.size, 3)
    ls = LabelShiftConformalClassifier(target_priors=[0.1, 0.1, 0.8]).fit(P, y)
    assert np.isinf(ls.threshold_[2]) and np.isfinite(ls.threshold_[:2]).all()
    assert ls.predict_set(_proba(rng, 5, 3))[:, 2].all()


def test_zero_target_prior_class_is_in_no_set():
    rng = np.random.default_rng(3)
    P, y = _proba(rng, 200, 3), rng.integers(0, 3, 200)
    ls = LabelShiftConformalClassifier(target_priors=[0.5, 0.5, 0.0], alpha=0.2)
    sets = ls.fit(P, y).predict_set(P)
    assert ls.threshold_[2] == -np.inf
    assert not sets[:, 2].any() and sets[:, :2].any()
    with_top = ls.set_params(include_top=True).fit(P, y).predict_set(P)
    assert np.array_equal(with_top[:, 2], np.argmax(P, axis=1) == 2)


def test_estimated_priors_from_target_rows():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 3000)
    logits = 2.0 * np.eye(3)[y] + rng.normal(size=(3000, 3))
    # the true posterior of uniform priors: softmax(2 * logits), calibrated
    P = np.exp(2 * logits) / np.exp(2 * logits).sum(axis=1, keepdims=True)
    yt = rng.choice(3, 3000, p=[0.7, 0.2, 0.1])
    lt = 2.0 * np.eye(3)[yt] + rng.normal(size=(3000, 3))
    Pt = np.exp(2 * lt) / np.exp(2 * lt).sum(axis=1, keepdims=True)
    for method in ("em", "bbse", "bbse_soft"):
        ls = LabelShiftConformalClassifier(prior_method=method)
        ls.fit(P, y, X_target=Pt)
        assert np.allclose(ls.target_priors_, [0.7, 0.2, 0.1], atol=0.04), method
        assert np.allclose(ls.weights_, ls.target_priors_ / ls.source_priors_)


def test_sample_weight_two_is_a_duplicated_row():
    rng = np.random.default_rng(5)
    P, y = _proba(rng, 60, 3), rng.integers(0, 3, 60)
    sw = rng.integers(0, 3, 60).astype(float)
    keep = np.repeat(np.arange(60), sw.astype(int))
    Q = _proba(rng, 30, 3)
    a = LabelShiftConformalClassifier(target_priors=[0.6, 0.3, 0.1]).fit(P, y, sw)
    b = LabelShiftConformalClassifier(target_priors=[0.6, 0.3, 0.1])
    b.fit(P[keep], y[keep])
    assert np.array_equal(a.predict_set(Q), b.predict_set(Q))
    w = rng.random(60) + 0.1
    c = CovariateShiftConformalClassifier(likelihood_ratio="given")
    c.fit(P, y, sw, calibration_weight=w)
    d = CovariateShiftConformalClassifier(likelihood_ratio="given")
    d.fit(P[keep], y[keep], calibration_weight=w[keep])
    tw = rng.random(30)
    assert np.array_equal(
        c.predict_set(Q, test_weight=tw), d.predict_set(Q, test_weight=tw)
    )


def test_domain_classifier_recovers_a_gaussian_tilt():
    rng = np.random.default_rng(6)
    Xc, Xt = rng.normal(0, 1, (4000, 1)), rng.normal(1, 1, (2000, 1))
    X = np.c_[Xc, rng.normal(size=4000)]
    lr = LogisticRegression().fit(X, (X[:, 1] > 0).astype(int))
    y = (X[:, 1] > 0).astype(int)
    cov = CovariateShiftConformalClassifier(lr)
    cov.fit(X, y, X_target=np.c_[Xt, rng.normal(size=2000)])
    true = np.exp(X[:, 0] - 0.5)  # N(1, 1) / N(0, 1)
    est = cov.calibration_weights_
    inside = np.abs(X[:, 0]) < 2
    assert np.median(np.abs(np.log(est[inside] / true[inside]))) < 0.1
    assert cov.domain_classifier_ is not None
    assert 1 / 999 <= cov.domain_classifier_.predict_proba(X)[:, 1].min()


def test_callable_ratio_applies_to_both_sides():
    rng = np.random.default_rng(7)
    P, y = _proba(rng, 100, 3), rng.integers(0, 3, 100)
    ratio = lambda X: 1.0 + X[:, 0]  # noqa: E731
    a = CovariateShiftConformalClassifier(likelihood_ratio=ratio).fit(P, y)
    b = CovariateShiftConformalClassifier(likelihood_ratio="given")
    b.fit(P, y, calibration_weight=ratio(P))
    Q = _proba(rng, 20, 3)
    assert np.array_equal(a.predict_set(Q), b.predict_set(Q, test_weight=ratio(Q)))
    assert np.array_equal(a.calibration_weights_, ratio(P))


# ----------------------------------------------------------------- bad input
def _data():
    rng = np.random.default_rng(8)
    return _proba(rng, 30, 3), np.arange(30) % 3


@pytest.mark.parametrize(
    "priors, match",
    [
        ([0.5, 0.5, 0.5], "sum to 1"),
        ([1.2, -0.1, -0.1], "non-negative; the prior of class 1"),
        ([0.5, 0.5], "one entry per class"),
        ([np.nan, 0.5, 0.5], "finite"),
    ],
)
def test_bad_target_priors(priors, match):
    P, y = _data()
    with pytest.raises(ValueError, match=match):
        LabelShiftConformalClassifier(target_priors=priors).fit(P, y)


def test_label_shift_refusals():
    P, y = _data()
    with pytest.raises(ValueError, match="X_target"):
        LabelShiftConformalClassifier().fit(P, y)
    with pytest.raises(ValueError, match="Give one of them"):
        LabelShiftConformalClassifier(target_priors="uniform").fit(P, y, X_target=P)
    with pytest.raises(ValueError, match="X_target is empty"):
        LabelShiftConformalClassifier().fit(P, y, X_target=np.empty((0, 3)))
    with pytest.raises(ValueError, match="X_target has 2 column"):
        LabelShiftConformalClassifier().fit(P, y, X_target=P[:, :2])
    with pytest.raises(ValueError, match=r"classes \[3\] have no calibration"):
        LabelShiftConformalClassifier(
            target_priors="uniform", classes=[0, 1, 2, 3]
        ).fit(np.c_[P * 0.9, np.full(30, 0.1)], y)
    lr = LogisticRegression().fit(np.arange(20.0)[:, None], np.arange(20) % 2)
    with pytest.raises(ValueError, match=r"labels \[2\] that the estimator"):
        LabelShiftConformalClassifier(lr, target_priors="uniform").fit(
            np.arange(30.0)[:, None], np.arange(30) % 3
        )


@pytest.mark.parametrize(
    "bad, match",
    [
        ([-1.0] + [1.0] * 29, r"non-negative: calibration_weight\[0\] is -1.0"),
        ([1.0] * 5 + [np.nan] + [1.0] * 24, r"finite: calibration_weight\[5\]"),
        ([1.0] * 29 + [np.inf], r"finite: calibration_weight\[29\] is inf"),
        ([0.0] * 30, "all zero"),
        ([1.0] * 29, "one weight per sample"),
    ],
)
def test_bad_calibration_weights(bad, match):
    P, y = _data()
    cov = CovariateShiftConformalClassifier(likelihood_ratio="given")
    with pytest.raises(ValueError, match=match):
        cov.fit(P, y, calibration_weight=np.array(bad))


def test_covariate_shift_refusals():
    P, y = _data()
    given = CovariateShiftConformalClassifier(likelihood_ratio="given")
    with pytest.raises(ValueError, match="calibration_weight="):
        given.fit(P, y)
    given.fit(P, y, calibration_weight=np.ones(30))
    with pytest.raises(ValueError, match="test_weight="):
        given.predict_set(P)
    with pytest.raises(ValueError, match=r"test_weight\[2\] is -0.5"):
        given.predict_set(P[:3], test_weight=[1.0, 1.0, -0.5])
    clf = CovariateShiftConformalClassifier()
    with pytest.raises(ValueError, match="X_target"):
        clf.fit(P, y)
    with pytest.raises(ValueError, match="X_target is empty"):
        clf.fit(P, y, X_target=np.empty((0, 3)))
    with pytest.raises(ValueError, match="X_target has 4 column"):
        clf.fit(P, y, X_target=np.ones((5, 4)))
    with pytest.raises(ValueError, match="calibration_weight is for"):
        clf.fit(P, y, X_target=P, calibration_weight=np.ones(30))
    clf.fit(P, y, X_target=P)
    with pytest.raises(ValueError, match="test_weight is for"):
        clf.predict_set(P, test_weight=np.ones(30))
    nan_ratio = CovariateShiftConformalClassifier(
        likelihood_ratio=lambda X: np.where(X[:, 0] > 0.95, np.nan, 1.0)
    ).fit(P * 0.5 + 1 / 6, y)
    with pytest.raises(ValueError, match=r"finite: w\(X\)\[1\] is nan"):
        nan_ratio.predict_set(np.array([[0.2, 0.3, 0.5], [0.96, 0.02, 0.02]]))


def test_wrapper_mode_equals_raw_mode_and_never_refits():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int) + (X[:, 1] > 1)
    lr = LogisticRegression().fit(X[:200], y[:200])
    coef = lr.coef_.copy()
    P = lr.predict_proba(X)
    priors = [0.2, 0.3, 0.5]
    a = LabelShiftConformalClassifier(lr, target_priors=priors).fit(
        X[200:400], y[200:400]
    )
    b = LabelShiftConformalClassifier(target_priors=priors).fit(P[200:400], y[200:400])
    assert np.array_equal(a.predict_set(X[400:]), b.predict_set(P[400:]))
    assert np.allclose(a.predict_proba(X[400:]), P[400:])
    ratio = lambda Z: 1.0 + np.abs(Z[:, 0])  # noqa: E731
    c = CovariateShiftConformalClassifier(lr, likelihood_ratio=ratio)
    c.fit(X[200:400], y[200:400])
    d = CovariateShiftConformalClassifier(likelihood_ratio="given")
    d.fit(P[200:400], y[200:400], calibration_weight=ratio(X[200:400]))
    sets = d.predict_set(P[400:], test_weight=ratio(X[400:]))
    assert np.array_equal(c.predict_set(X[400:]), sets)
    assert np.array_equal(lr.coef_, coef)  # the prefit model is never refit
    w = ratio(X[200:400])
    assert np.isclose(c.n_effective_, w.sum() ** 2 / (w**2).sum())
    flat = LabelShiftConformalClassifier(target_priors=np.bincount(y[200:400]) / 200)
    assert np.isclose(flat.fit(P[200:400], y[200:400]).n_effective_, 200)
