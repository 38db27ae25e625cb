"""Split-conformal prediction sets (LAC, APS, Mondrian) against hand-computed
values and a slow loop implementation (the coverage studies are in
test_conformal_coverage.py)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import RANGE_XFAILS, RAW_SCORE_XFAILS

from skcalib.calibration._temperature import TemperatureCalibrator
from skcalib.conformal._classifier import (
    ConformalClassifier,
    aps_mass_above,
    conformal_quantile,
    label_scores,
    prediction_sets,
)
from skcalib.conformal._metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
)
from skcalib.datasets import make_miscalibrated_scores

# Five calibration rows, three classes, computed by hand in the tests below.
CAL_P = np.array(
    [
        [0.6, 0.3, 0.1],
        [0.5, 0.3, 0.2],
        [0.2, 0.7, 0.1],
        [0.4, 0.4, 0.2],
        [0.3, 0.3, 0.4],
    ]
)
CAL_Y = np.array([0, 1, 1, 2, 0])


# ------------------------------------------------------------ reference loops
def _ref_label_score(p, y, method, u=None):
    """The definition, one sample at a time, in Python floats."""
    if method == "lac":
        return 1 - p[y]
    above = 0.0
    for v in sorted(p, reverse=True):  # the order np.cumsum adds them in
        if v > p[y]:
            above += v
    return above + (p[y] if u is None else u * p[y])


def _ref_quantile(scores, alpha, weight=None):
    weight = np.ones(len(scores)) if weight is None else weight
    level = (1 - alpha) * (weight.sum() + 1)
    cum = 0.0
    for i in sorted(range(len(scores)), key=lambda i: scores[i]):
        cum += weight[i]
        if cum >= level - 1e-9:
            return scores[i]
    return np.inf


def _ref_sets(proba, method, threshold, u=None, include_top=False):
    n, k = proba.shape
    t = np.broadcast_to(threshold, (k,))
    sets = np.zeros((n, k), dtype=bool)
    for i in range(n):
        for c in range(k):
            if method == "lac":
                sets[i, c] = 1 - proba[i, c] <= t[c]
            else:
                above = _ref_label_score(proba[i], c, "aps", 0.0)
                if u is None:
                    sets[i, c] = above < t[c]
                else:
                    sets[i, c] = above + u[i] * proba[i, c] <= t[c]
        if include_top:
            sets[i, np.argmax(proba[i])] = True
    return sets


def _make(*args, **kwargs):
    """Miscalibrated logits and their labels."""
    logits, y, _ = make_miscalibrated_scores(*args, **kwargs)
    return logits, y


def _random_proba(n, k, rng, ties=False):
    if ties:  # multiples of 1/10, like a random forest of 10 trees
        counts = rng.multinomial(10, np.ones(k) / k, size=n)
        return counts / 10.0
    return rng.dirichlet(np.full(k, 0.5), size=n)


# --------------------------------------------------------- sklearn conventions
# The default instance runs in test_common.py (tests/_discovery.py finds it);
# these are the settings that take other code paths.
@parametrize_with_checks(
    [
        ConformalClassifier(
            method="aps", randomized=True, class_conditional=True, random_state=0
        ),
        ConformalClassifier(
            method="aps", calibrator=TemperatureCalibrator(), include_top=True
        ),
    ],
    expected_failed_checks=lambda estimator: {**RAW_SCORE_XFAILS, **RANGE_XFAILS},
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # The checks' tiny random data sets leave Mondrian classes without a
        # threshold and give temperature scaling nothing to fit: expected.
        warnings.filterwarnings("ignore", message="Classes .* fewer than")
        warnings.filterwarnings("ignore", message="The likelihood is maximised")
        check(estimator)


# ------------------------------------------------------------ hand-computed
def test_quantile_by_hand():
    s = np.array([0.3, 0.1, 0.5, 0.2, 0.4])
    # n = 5: ceil(6 * 0.6) = 4th smallest; ceil(6 * 0.8) = 5th; ceil(6 * 0.5) = 3rd
    assert conformal_quantile(s, 0.4) == 0.4
    assert conformal_quantile(s, 0.2) == 0.5
    assert conformal_quantile(s, 0.5) == 0.3
    # ceil(6 * 0.9) = 6 > 5: too few samples, infinite threshold
    assert conformal_quantile(s, 0.1) == np.inf
    # (24 + 1)(1 - 0.44) = 14 exactly, 14.000000000000002 in floating point:
    # the 14th smallest, not the 15th.
    assert conformal_quantile(np.arange(1.0, 25.0), 0.44) == 14.0
    assert conformal_quantile(np.arange(1.0, 30.0), 0.1) == 27.0
    # weighted: level (1 - 0.4)(W + 1) = 0.6 * 6 = 3.6 with W = 5
    w = np.array([2.0, 0.0, 1.0, 1.0, 1.0])  # 0.3 x2, 0.1 dropped, 0.5, 0.2, 0.4
    # cumulative weights in score order 0.2, 0.3, 0.4, 0.5: 1, 3, 4, 5
    assert conformal_quantile(s, 0.4, w) == 0.4
    assert conformal_quantile(s, 0.4, np.zeros(5)) == np.inf


def test_lac_by_hand():
    # 1 - p_y: 0.4, 0.7, 0.3, 0.8, 0.7; alpha=0.4 -> 4th smallest = 0.7
    cp = ConformalClassifier(alpha=0.4).fit(CAL_P, CAL_Y)
    assert cp.threshold_ == pytest.approx(0.7)
    test = np.array(
        [[0.5, 0.25, 0.25], [0.1, 0.85, 0.05], [0.34, 0.33, 0.33], [0.5, 0.3, 0.2]]
    )
    np.testing.assert_array_equal(
        cp.predict_set(test),
        [[1, 0, 0], [0, 1, 0], [1, 1, 1], [1, 1, 0]],
    )
    # alpha=0.8: ceil(6 * 0.2) = 2nd smallest = 0.4; a flat row gets no class
    cp = ConformalClassifier(alpha=0.8).fit(CAL_P, CAL_Y)
    assert cp.threshold_ == pytest.approx(0.4)
    np.testing.assert_array_equal(cp.predict_set(test[3:]), [[False] * 3])
    top = ConformalClassifier(alpha=0.8, include_top=True).fit(CAL_P, CAL_Y)
    np.testing.assert_array_equal(top.predict_set(test[3:]), [[True, False, False]])


def test_aps_by_hand():
    # mass above the true class + its probability: 0.6, 0.5+0.3, 0.7, 0.4+0.4+0.2
    # (a tie at 0.4 counts as not above), 0.4+0.3 (tie at 0.3 not above)
    cp = ConformalClassifier(method="aps", alpha=0.4, randomized=False)
    cp.fit(CAL_P, CAL_Y)
    assert cp.threshold_ == pytest.approx(0.8)  # 4th of 0.6, 0.7, 0.7, 0.8, 1.0
    test = np.array([[0.5, 0.25, 0.25], [0.1, 0.85, 0.05], [0.5, 0.3, 0.2]])
    # row 0: mass above 0, 0.5, 0.5 -> all < 0.8 (tied classes go together);
    # row 1: above 0.85 for class 0 -> only class 1;
    # row 2: class 1 crosses 0.8 and is included, class 2 (0.8 above) is not.
    np.testing.assert_array_equal(
        cp.predict_set(test), [[1, 1, 1], [0, 1, 0], [1, 1, 0]]
    )
    np.testing.assert_allclose(
        aps_mass_above(test), [[0, 0.5, 0.5], [0.85, 0, 0.95], [0, 0.5, 0.8]]
    )


def test_class_conditional_by_hand():
    # LAC scores per class: 0 -> (0.4, 0.7); 1 -> (0.7, 0.3); 2 -> (0.8,)
    # n_k = 2, alpha=0.4: ceil(3 * 0.6) = 2nd smallest; class 2 (n=1) has none.
    with pytest.warns(UserWarning, match=r"Classes \[2\] have fewer than 2"):
        cp = ConformalClassifier(alpha=0.4, class_conditional=True).fit(CAL_P, CAL_Y)
    np.testing.assert_allclose(cp.threshold_, [0.7, 0.7, np.inf])
    sets = cp.predict_set(np.array([[0.1, 0.85, 0.05], [0.2, 0.2, 0.6]]))
    np.testing.assert_array_equal(sets, [[0, 1, 1], [0, 0, 1]])


# ------------------------------------------------------ against the slow loop
@pytest.mark.parametrize("method", ["lac", "aps"])
@pytest.mark.parametrize("class_conditional", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_equals_slow_loop(method, class_conditional, ties):
    rng = np.random.default_rng([len(method), class_conditional, ties])
    k = 4
    p_cal = _random_proba(300, k, rng, ties)
    y_cal = rng.integers(0, k, 300)
    p_test = np.vstack([_random_proba(200, k, rng, ties), p_cal[:50]])
    w = rng.integers(0, 3, 300).astype(float)
    alpha = 0.13
    for weight in (None, w):
        cp = ConformalClassifier(
            method=method,
            alpha=alpha,
            class_conditional=class_conditional,
            randomized=False,
        ).fit(p_cal, y_cal, sample_weight=weight)
        scores = [
            _ref_label_score(p, y, method) for p, y in zip(p_cal, y_cal, strict=True)
        ]
        scores = np.array(scores)
        np.testing.assert_array_equal(label_scores(p_cal, y_cal, method), scores)
        ones = np.ones(300) if weight is None else weight
        if class_conditional:
            want = [
                _ref_quantile(scores[y_cal == c], alpha, ones[y_cal == c])
                for c in range(k)
            ]
        else:
            want = _ref_quantile(scores, alpha, ones)
        np.testing.assert_array_equal(cp.threshold_, want)
        np.testing.assert_array_equal(
            cp.predict_set(p_test), _ref_sets(p_test, method, cp.threshold_)
        )


@pytest.mark.parametrize("include_top", [False, True])
def test_randomized_aps_equals_slow_loop(include_top):
    rng = np.random.default_rng(5)
    p = _random_proba(200, 5, rng, ties=True)
    y = rng.integers(0, 5, 200)
    u = rng.uniform(size=200)
    want = [_ref_label_score(p[i], y[i], "aps", u[i]) for i in range(200)]
    np.testing.assert_array_equal(label_scores(p, y, "aps", u), want)
    t = conformal_quantile(np.array(want), 0.2)
    np.testing.assert_array_equal(
        prediction_sets(p, "aps", t, u, include_top),
        _ref_sets(p, "aps", t, u, include_top),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("randomized", [False, True])
def test_sorted_path_equals_every_class_score(dtype, randomized):
    """One threshold: the sort-and-count path gives the sets of the rule
    applied to every class's score, also at thresholds equal to a score."""
    rng = np.random.default_rng(8)
    p = np.vstack([_random_proba(300, 6, rng, ties=True), _random_proba(300, 6, rng)])
    p = p.astype(dtype)
    u = rng.uniform(size=600) if randomized else None
    above = aps_mass_above(p)
    score = above if u is None else above + u[:, None] * p
    for t in [*rng.choice(score.ravel(), 20), 0.0, 1.0, np.inf]:
        want = score < t if u is None else score <= t
        np.testing.assert_array_equal(prediction_sets(p, "aps", float(t), u), want)
        per_class = np.full(6, t)
        np.testing.assert_array_equal(prediction_sets(p, "aps", per_class, u), want)


def test_blocks_give_the_same_sets(monkeypatch):
    rng = np.random.default_rng(6)
    p = _random_proba(1000, 7, rng)
    y = rng.integers(0, 7, 1000)
    u = rng.uniform(size=1000)
    whole = prediction_sets(p, "aps", 0.8, u), label_scores(p, y, "aps", u)
    monkeypatch.setattr("skcalib.conformal._scores._BLOCK_CELLS", 50)
    np.testing.assert_array_equal(prediction_sets(p, "aps", 0.8, u), whole[0])
    np.testing.assert_array_equal(label_scores(p, y, "aps", u), whole[1])


# ------------------------------------------------------------- equivalences
@pytest.mark.parametrize("method", ["lac", "aps"])
@pytest.mark.parametrize("class_conditional", [False, True])
def test_weights_are_repetitions(method, class_conditional):
    logits, y = _make(400, 3, random_state=0)
    test, _ = _make(300, 3, random_state=1)
    w = np.random.default_rng(0).integers(0, 4, 400)
    params = dict(
        method=method, alpha=0.1, class_conditional=class_conditional, randomized=False
    )
    weighted = ConformalClassifier(**params).fit(logits, y, sample_weight=w)
    repeated = ConformalClassifier(**params).fit(
        np.repeat(logits, w, axis=0), np.repeat(y, w)
    )
    np.testing.assert_array_equal(weighted.threshold_, repeated.threshold_)
    np.testing.assert_array_equal(
        weighted.predict_set(test), repeated.predict_set(test)
    )
    # weight 1 everywhere is no weight at all
    ones = ConformalClassifier(**params).fit(logits, y, sample_weight=np.ones(400))
    plain = ConformalClassifier(**params).fit(logits, y)
    np.testing.assert_array_equal(ones.threshold_, plain.threshold_)


def test_sets_of_permuted_rows_are_the_permuted_sets():
    logits, y = _make(500, 4, random_state=2)
    test, _ = _make(200, 4, random_state=3)
    for method in ("lac", "aps"):
        a = ConformalClassifier(method=method, randomized=False).fit(logits, y)
        np.testing.assert_array_equal(
            a.predict_set(test[::-1]), a.predict_set(test)[::-1]
        )


def test_binary_1d_probabilities_are_read_as_probabilities():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    s = 2.0 * (2 * y - 1) + rng.normal(scale=2.0, size=300)
    test = rng.normal(scale=3.0, size=100)
    for method in ("lac", "aps"):
        p = 1 / (1 + np.exp(-s))
        prob = ConformalClassifier(method=method).fit(p, y)
        assert prob.score_type_ == "probability"
        assert prob.predict_set(1 / (1 + np.exp(-test))).shape == (100, 2)


def test_float32_stays_float32():
    logits, y = _make(2000, 5, random_state=4)
    test, _ = _make(1000, 5, random_state=5)
    for method in ("lac", "aps"):
        c64 = ConformalClassifier(method=method, randomized=False).fit(logits, y)
        c32 = ConformalClassifier(method=method, randomized=False)
        c32.fit(logits.astype(np.float32), y)
        assert c32.predict_proba(test.astype(np.float32)).dtype == np.float32
        assert c32.threshold_ == pytest.approx(c64.threshold_, rel=1e-5)
        s32 = c32.predict_set(test.astype(np.float32))
        # the float32 arithmetic, exactly
        p32 = c32.predict_proba(test.astype(np.float32))
        np.testing.assert_array_equal(s32, prediction_sets(p32, method, c32.threshold_))
        # and the same sets as float64 but for rows at the threshold
        assert (s32 != c64.predict_set(test)).any(axis=1).mean() < 0.01


def test_string_labels_and_metrics():
    logits, y = _make(600, 3, random_state=6)
    names = np.array(["cat", "dog", "emu"])
    cp = ConformalClassifier(method="aps", random_state=0).fit(logits, names[y])
    np.testing.assert_array_equal(cp.classes_, names)
    ref = ConformalClassifier(method="aps", random_state=0).fit(logits, y)
    np.testing.assert_array_equal(cp.predict_set(logits), ref.predict_set(logits))
    assert set(cp.predict(logits)) <= set(names)
    sets = cp.predict_set(logits)
    assert set_coverage_score(names[y], sets, labels=cp.classes_) == pytest.approx(
        set_coverage_score(y, sets)
    )


# ------------------------------------------------------------------- behaviour
def test_aps_sets_are_never_empty_and_hold_the_top_class():
    rng = np.random.default_rng(7)
    p = _random_proba(2000, 10, rng)
    y = rng.integers(0, 10, 2000)
    for alpha in (0.05, 0.5, 0.9):
        cp = ConformalClassifier(method="aps", alpha=alpha, randomized=False)
        cp.fit(p[:1000], y[:1000])
        sets = cp.predict_set(p[1000:])
        assert sets[np.arange(1000), np.argmax(p[1000:], axis=1)].all()
        lac = ConformalClassifier(alpha=alpha).fit(p[:1000], y[:1000])
        if alpha == 0.9:  # uninformative scores: LAC sets are often empty
            assert (lac.predict_set(p[1000:]).sum(axis=1) == 0).any()
        rand = ConformalClassifier(
            method="aps", alpha=alpha, randomized=True, include_top=True, random_state=0
        ).fit(p[:1000], y[:1000])
        assert rand.predict_set(p[1000:]).any(axis=1).all()


def test_randomized_is_deterministic_given_random_state():
    logits, y = _make(1000, 6, random_state=8)
    test, _ = _make(500, 6, random_state=9)

    def sets(random_state):
        cp = ConformalClassifier(
            method="aps", randomized=True, random_state=random_state
        ).fit(logits, y)
        return cp.threshold_, cp.predict_set(test), cp

    t0, s0, cp = sets(0)
    t1, s1, _ = sets(0)
    assert t0 == t1
    np.testing.assert_array_equal(s0, s1)
    np.testing.assert_array_equal(cp.predict_set(test), s0)  # predict reads only
    t2, s2, _ = sets(1)
    assert t2 != t0 and (s2 != s0).any()
    _, s3, _ = sets(np.random.RandomState(0))
    np.testing.assert_array_equal(s3, s0)
    # randomised sets are smaller than the conservative ones
    plain = ConformalClassifier(method="aps", randomized=False)
    plain = plain.fit(logits, y).predict_set(test)
    assert s0.sum() < plain.sum()


def test_tiny_alpha_gives_full_sets_with_a_warning():
    logits, y = _make(50, 3, random_state=10)
    for method in ("lac", "aps"):
        with pytest.warns(UserWarning, match=r"alpha=0.01 needs at least 99"):
            cp = ConformalClassifier(method=method, alpha=0.01).fit(logits, y)
        assert cp.threshold_ == np.inf
        assert cp.predict_set(logits).all()
    # 99 samples are enough
    logits, y = _make(99, 3, random_state=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp = ConformalClassifier(alpha=0.01).fit(logits, y)
    assert cp.threshold_ == label_scores(cp.predict_proba(logits), y, "lac").max()


def test_class_conditional_covers_a_hard_class():
    """Marginal sets under-cover a hard class; Mondrian sets do not."""
    rng = np.random.default_rng(11)
    n, k = 20000, 3
    y = rng.integers(0, k, n)
    logits = 3.0 * np.eye(k)[y] + rng.normal(size=(n, k))
    hard = y == 2  # class 2 barely separable
    logits[hard] = rng.normal(size=(hard.sum(), k))
    cal, test = slice(0, n // 2), slice(n // 2, n)
    marginal = ConformalClassifier(alpha=0.1).fit(logits[cal], y[cal])
    mondrian = ConformalClassifier(alpha=0.1, class_conditional=True).fit(
        logits[cal], y[cal]
    )
    cov_m = classwise_set_coverage(y[test], marginal.predict_set(logits[test]))
    cov_c = classwise_set_coverage(y[test], mondrian.predict_set(logits[test]))
    assert cov_m[2] < 0.8  # the hard class pays for the easy ones
    assert (cov_c > 0.88).all()
    for c in range(k):  # each threshold is the quantile of that class alone
        s = label_scores(mondrian.predict_proba(logits[cal]), y[cal], "lac")
        assert mondrian.threshold_[c] == conformal_quantile(s[y[cal] == c], 0.1)


def test_predict_proba_predict_transform():
    logits, y = _make(300, 4, random_state=12)
    cp = ConformalClassifier().fit(logits, y)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(cp.predict_proba(logits), p, rtol=1e-12)
    np.testing.assert_array_equal(cp.transform(logits), cp.predict_proba(logits))
    np.testing.assert_array_equal(cp.predict(logits), np.argmax(logits, axis=1))


# ------------------------------------------------------------ calibrator, wrapper
def test_calibrator_is_fitted_on_the_scores():
    logits, y = _make(2000, 4, temperature=3.0, random_state=13)
    test, _ = _make(500, 4, temperature=3.0, random_state=14)
    cp = ConformalClassifier(
        method="aps", calibrator=TemperatureCalibrator(), randomized=False
    )
    cp.fit(logits, y)
    ts = TemperatureCalibrator().fit(logits, y)
    assert cp.calibrator_.temperature_ == pytest.approx(ts.temperature_)
    assert cp.calibrator.__dict__.get("temperature_") is None  # cloned
    np.testing.assert_allclose(cp.predict_proba(test), ts.predict_proba(test))
    s = label_scores(ts.predict_proba(logits), y, "aps")
    assert cp.threshold_ == pytest.approx(conformal_quantile(s, 0.1))
    # calibrated probabilities of an over-confident model give smaller APS sets
    raw = ConformalClassifier(method="aps", randomized=False).fit(logits, y)
    assert mean_set_size(cp.predict_set(test)) < mean_set_size(raw.predict_set(test))
    # a plain classifier on the scores works too (1-D binary scores included)
    rng = np.random.default_rng(0)
    yb = rng.integers(0, 2, 500)
    s1 = 3 * (2 * yb - 1) + rng.normal(scale=3, size=500)
    lr = ConformalClassifier(calibrator=LogisticRegression()).fit(s1, yb)
    assert lr.predict_set(s1).shape == (500, 2)
    np.testing.assert_allclose(
        lr.predict_proba(s1),
        LogisticRegression().fit(s1[:, None], yb).predict_proba(s1[:, None]),
    )


def test_prefit_calibrator_as_estimator():
    """The exact route: calibrate on one part, conformalise on another."""
    logits, y = _make(2000, 4, temperature=3.0, random_state=15)
    ts = TemperatureCalibrator().fit(logits[:1000], y[:1000])
    cp = ConformalClassifier(ts, method="aps", random_state=0)
    cp.fit(logits[1000:], y[1000:])
    assert cp.score_type_ == "probability"
    ref = ConformalClassifier(method="aps", random_state=0).fit(
        ts.predict_proba(logits[1000:]), y[1000:]
    )
    assert cp.threshold_ == ref.threshold_
    np.testing.assert_array_equal(
        cp.predict_set(logits[:500]), ref.predict_set(ts.predict_proba(logits[:500]))
    )


@pytest.mark.parametrize("response_method", ["decision_function", "predict_proba"])
def test_wrapper_mode_with_prefit_logistic_regression(response_method):
    X, y = make_classification(
        1500, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    clf = LogisticRegression().fit(X[:500], y[:500])
    coef = clf.coef_.copy()
    cp = ConformalClassifier(
        clf, method="aps", response_method=response_method, random_state=0
    )
    cp.fit(X[500:1000], y[500:1000])
    np.testing.assert_array_equal(clf.coef_, coef)  # never refitted
    scores = getattr(clf, response_method)
    ref = ConformalClassifier(
        method="aps",
        random_state=0,
        score_type="logit" if response_method == "decision_function" else "probability",
    ).fit(scores(X[500:1000]), y[500:1000])
    assert cp.threshold_ == pytest.approx(ref.threshold_, rel=1e-12)
    np.testing.assert_array_equal(
        cp.predict_set(X[1000:]), ref.predict_set(scores(X[1000:]))
    )
    assert cp.n_features_in_ == 6
    # clone keeps the prefit model; Mondrian without class 2 in y: full column
    clone_ = clone(cp)
    assert clone_.estimator is clf
    mask = y[500:1000] != 2
    with pytest.warns(UserWarning, match=r"Classes \[2\]"):
        mondrian = ConformalClassifier(clf, class_conditional=True).fit(
            X[500:1000][mask], y[500:1000][mask]
        )
    assert mondrian.predict_set(X[1000:])[:, 2].all()


def test_grid_search_and_cross_validate():
    logits, y = _make(1500, 4, random_state=16)

    def neg_size_if_covered(estimator, X, y):
        sets = estimator.predict_set(X)
        return -mean_set_size(sets) - 10 * (set_coverage_score(y, sets) < 0.85)

    search = GridSearchCV(
        ConformalClassifier(),
        {"method": ["lac", "aps"], "alpha": [0.05, 0.1]},
        scoring=neg_size_if_covered,
        cv=3,
    ).fit(logits, y)
    assert search.best_params_["alpha"] == 0.1  # larger alpha: smaller sets
    result = cross_validate(
        ConformalClassifier(method="aps"), logits, y, cv=3, scoring="accuracy"
    )
    assert np.isfinite(result["test_score"]).all()


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1])
def test_alpha_outside_the_unit_interval(alpha):
    logits, y = _make(100, 3, random_state=0)
    with pytest.raises(InvalidParameterError, match=rf"'alpha'.*Got {alpha!r}"):
        ConformalClassifier(alpha=alpha).fit(logits, y)


def test_bad_inputs_raise_clear_errors():
    logits, y = _make(100, 3, random_state=0)
    bad = logits.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ConformalClassifier().fit(bad, y)
    cp = ConformalClassifier().fit(logits, y)
    with pytest.raises(ValueError, match="NaN"):
        cp.predict_set(bad)
    with pytest.raises(ValueError, match=r"X has 2 column\(s\) but there are 3"):
        ConformalClassifier().fit(logits[:, :2], y)
    with pytest.raises(ValueError, match="'aps' or 'raps' only, got method='lac'"):
        ConformalClassifier(randomized=True).fit(logits, y)
    with pytest.raises(InvalidParameterError, match="'method'.*'rap'"):
        ConformalClassifier(method="rap").fit(logits, y)
    with pytest.raises(ValueError, match="calibrator estimator=LogisticRegression"):
        ConformalClassifier(
            calibrator=TemperatureCalibrator(LogisticRegression().fit(logits, y))
        ).fit(logits, y)
    clf = LogisticRegression().fit(logits, y)
    # a skcalib calibrator gets classes= and keeps the column of the absent
    # class (issue 30, item 11); one without classes= needs every class
    cp = ConformalClassifier(clf, calibrator=TemperatureCalibrator()).fit(
        logits[y != 2], y[y != 2]
    )
    np.testing.assert_allclose(cp.predict_proba(logits).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match=r"classes \[2\] have none"):
        ConformalClassifier(clf, calibrator=LogisticRegression()).fit(
            logits[y != 2], y[y != 2]
        )
    with pytest.raises(ValueError, match="not fitted"):
        ConformalClassifier().predict_set(logits)
