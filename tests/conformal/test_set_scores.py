"""RAPS, top-k and APS without the last label: hand-computed values, a slow
loop implementation of the definitions, and the choice of k_reg and lam."""

import warnings

import numpy as np
import pytest
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import RANGE_XFAILS, RAW_SCORE_XFAILS

from skcalib import ConformalClassifier
from skcalib.conformal._quantile import conformal_quantile
from skcalib.conformal._raps_tuning import (
    LAMBDA_GRID,
    choose_k_reg,
    choose_lam,
    tuning_split,
)
from skcalib.conformal._scores import class_ranks, label_scores, prediction_sets
from skcalib.datasets import make_miscalibrated_scores

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
TEST_P = np.array([[0.5, 0.3, 0.2], [0.1, 0.85, 0.05], [0.5, 0.25, 0.25]])


# ------------------------------------------------------------ reference loops
def _rank(p, c):
    return 1 + sum(v > p[c] for v in p)


def _above(p, c):
    above = 0.0
    for v in sorted(p, reverse=True):  # the order np.cumsum adds them in
        if v > p[c]:
            above += v
    return above


def _ref_score(p, y, method, u=None, k_reg=0, lam=0.0):
    if method == "top_k":
        return float(_rank(p, y))
    score = _above(p, y) + (p[y] if u is None else u * p[y])
    if method == "raps":
        score += lam * max(_rank(p, y) - k_reg, 0)
    return score


def _ref_in_set(p, c, method, t, u=None, k_reg=0, lam=0.0, last=True):
    if method == "top_k":
        return _rank(p, c) <= t
    pen = lam if method == "raps" else 0.0
    start = _above(p, c) + pen * max(_rank(p, c) - 1 - k_reg, 0)
    if u is not None:
        return _ref_score(p, c, method, u, k_reg, lam) <= t
    if last:
        return start < t
    return _ref_score(p, c, method, None, k_reg, lam) <= t and start < t


def _ref_sets(proba, method, threshold, u=None, **params):
    n, k = proba.shape
    t = np.broadcast_to(threshold, (k,))
    return np.array(
        [
            [
                _ref_in_set(
                    proba[i], c, method, t[c], None if u is None else u[i], **params
                )
                for c in range(k)
            ]
            for i in range(n)
        ]
    )


def _random_proba(n, k, rng, ties=False):
    if ties:  # multiples of 1/10, like a random forest of 10 trees
        return rng.multinomial(10, np.ones(k) / k, size=n) / 10.0
    return rng.dirichlet(np.full(k, 0.5), size=n)


# --------------------------------------------------------- sklearn conventions
@parametrize_with_checks(
    [
        ConformalClassifier(method="raps", random_state=0),
        ConformalClassifier(
            method="raps", randomized=True, class_conditional=True, random_state=0
        ),
        ConformalClassifier(method="top_k"),
        ConformalClassifier(method="aps", include_last_label=False, k_reg=2),
    ],
    expected_failed_checks=lambda estimator: {**RAW_SCORE_XFAILS, **RANGE_XFAILS},
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Classes .* fewer than")
        warnings.filterwarnings("ignore", message="alpha=.* needs at least")
        check(estimator)


# ------------------------------------------------------------ hand-computed
def test_raps_by_hand():
    # k_reg=1, lam=0.1: ranks 1, 2, 1, 3, 2 (the tie at 0.3 shares rank 2);
    # scores .6, .8 + .1, .7, 1.0 + .2, .7 + .1; alpha=0.4: 4th smallest = .9
    cp = ConformalClassifier(
        method="raps", k_reg=1, lam=0.1, alpha=0.4, randomized=False
    )
    cp.fit(CAL_P, CAL_Y)
    assert cp.threshold_ == pytest.approx(0.9)
    assert (cp.k_reg_, cp.lam_, cp.n_tuning_) == (1, 0.1, 0)
    # row 0: class 2 starts at .8 + .1 (one rank beyond k_reg) = .9, not < .9
    # row 1: class 0 starts at .85 < .9 (in), class 2 at .95 + .1
    # row 2: the tied classes 1, 2 start at .5 < .9
    np.testing.assert_array_equal(
        cp.predict_set(TEST_P), [[1, 1, 0], [1, 1, 0], [1, 1, 1]]
    )
    # without the last label: a class's own score must be <= .9
    # row 0: .5, .8 + .1 (in, equal), row 1: class 0 scores .95 + .1 (out)
    # row 2: the tied classes score .5 + .25 + .1 = .85 (in)
    nolast = ConformalClassifier(
        method="raps", k_reg=1, lam=0.1, alpha=0.4, include_last_label=False
    ).fit(CAL_P, CAL_Y)
    np.testing.assert_array_equal(
        nolast.predict_set(TEST_P), [[1, 1, 0], [0, 1, 0], [1, 1, 1]]
    )
    # lam=0 is APS, whatever k_reg
    aps = ConformalClassifier(method="aps", alpha=0.4, random_state=0)
    aps.fit(CAL_P, CAL_Y)
    raps0 = ConformalClassifier(
        method="raps", k_reg=0, lam=0.0, alpha=0.4, random_state=0
    )
    raps0.fit(CAL_P, CAL_Y)
    assert raps0.threshold_ == aps.threshold_
    np.testing.assert_array_equal(raps0.predict_set(TEST_P), aps.predict_set(TEST_P))


def test_top_k_by_hand():
    # ranks of the true labels 1, 2, 1, 3, 2; alpha=0.4: 4th smallest = 2
    cp = ConformalClassifier(method="top_k", alpha=0.4).fit(CAL_P, CAL_Y)
    assert cp.threshold_ == 2.0
    # the two most probable classes; the tied second and third both
    np.testing.assert_array_equal(
        cp.predict_set(TEST_P), [[1, 1, 0], [1, 1, 0], [1, 1, 1]]
    )
    np.testing.assert_array_equal(label_scores(CAL_P, CAL_Y, "top_k"), [1, 2, 1, 3, 2])
    np.testing.assert_array_equal(
        class_ranks(TEST_P), [[0, 1, 2], [1, 0, 2], [0, 1, 1]]
    )


def test_aps_without_the_last_label_by_hand():
    # APS scores .6, .8, .7, 1.0, .7; alpha=0.4: .8
    cp = ConformalClassifier(method="aps", alpha=0.4, include_last_label=False)
    cp.fit(CAL_P, CAL_Y)
    assert cp.threshold_ == pytest.approx(0.8)
    # row 0: .5, .8 (in, equal), 1.0; row 1: .85 > .8, nothing (empty set);
    # row 2: the tied classes both score .5 + .25 = .75 (ties are treated
    # alike: the mass before the block, plus their own probability)
    np.testing.assert_array_equal(
        cp.predict_set(TEST_P), [[1, 1, 0], [0, 0, 0], [1, 1, 1]]
    )
    top = ConformalClassifier(
        method="aps", alpha=0.4, include_last_label=False, include_top=True
    ).fit(CAL_P, CAL_Y)
    assert top.predict_set(TEST_P)[1].tolist() == [False, True, False]
    # a class that adds no mass is not in the set
    p = np.array([[0.9, 0.1, 0.0]])
    assert prediction_sets(p, "aps", 1.0, include_last_label=False).tolist() == [
        [True, True, False]
    ]


# ------------------------------------------------------ against the slow loop
PARAMS = [
    ("raps", {"k_reg": 1, "lam": 0.05}),
    ("raps", {"k_reg": 0, "lam": 0.3}),
    ("top_k", {}),
    ("aps", {}),
]


@pytest.mark.parametrize("method, params", PARAMS)
@pytest.mark.parametrize("class_conditional", [False, True])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("mode", ["last", "no_last", "randomized"])
def test_equals_slow_loop(method, params, class_conditional, ties, mode):
    if method == "top_k" and mode != "last":
        pytest.skip("top-k has one set rule")
    rng = np.random.default_rng([len(method), class_conditional, ties, len(mode)])
    k = 4
    p_cal = _random_proba(200, k, rng, ties)
    y_cal = rng.integers(0, k, 200)
    p_test = np.vstack([_random_proba(100, k, rng, ties), p_cal[:30]])
    u_cal = rng.uniform(size=200) if mode == "randomized" else None
    u_test = rng.uniform(size=130) if mode == "randomized" else None
    scores = label_scores(p_cal, y_cal, method, u_cal, **params)
    want = [
        _ref_score(
            p_cal[i], y_cal[i], method, None if u_cal is None else u_cal[i], **params
        )
        for i in range(200)
    ]
    np.testing.assert_array_equal(scores, want)
    if class_conditional:
        t = np.array([conformal_quantile(scores[y_cal == c], 0.2) for c in range(k)])
    else:
        t = conformal_quantile(scores, 0.2)
    last = mode != "no_last"
    got = prediction_sets(p_test, method, t, u_test, include_last_label=last, **params)
    np.testing.assert_array_equal(
        got, _ref_sets(p_test, method, t, u_test, last=last, **params)
    )


@pytest.mark.parametrize("method, params", PARAMS[:3])
@pytest.mark.parametrize("mode", ["last", "no_last", "randomized"])
def test_sorted_path_equals_every_class_score(method, params, mode):
    """One threshold: the sort-and-count path gives the sets of the rule
    applied to every class's score, also at thresholds equal to a score."""
    rng = np.random.default_rng(8)
    p = np.vstack([_random_proba(300, 6, rng, ties=True), _random_proba(300, 6, rng)])
    u = rng.uniform(size=600) if mode == "randomized" else None
    last = mode != "no_last"
    per_class_scores = np.stack(
        [label_scores(p, np.full(600, c), method, u, **params) for c in range(6)], 1
    )
    for t in [*rng.choice(per_class_scores.ravel(), 20), 0.0, 1.0, 2.5, np.inf]:
        marginal = prediction_sets(
            p, method, float(t), u, include_last_label=last, **params
        )
        per_class = prediction_sets(
            p, method, np.full(6, t), u, include_last_label=last, **params
        )
        np.testing.assert_array_equal(marginal, per_class)


def test_no_last_sets_are_subsets_and_cover():
    logits, y, _ = make_miscalibrated_scores(4000, 8, temperature=0.5, random_state=0)
    for method in ("aps", "raps"):
        params = dict(method=method, k_reg=1, lam=0.01, randomized=False)
        last = ConformalClassifier(**params).fit(logits[:2000], y[:2000])
        nolast = ConformalClassifier(include_last_label=False, **params)
        nolast.fit(logits[:2000], y[:2000])
        assert last.threshold_ == nolast.threshold_  # same scores
        a, b = last.predict_set(logits[2000:]), nolast.predict_set(logits[2000:])
        assert (b <= a).all() and b.sum() < a.sum()


# ---------------------------------------------------------- k_reg and lam
def test_auto_k_reg_and_lam_follow_the_tuning_split():
    logits, y, _ = make_miscalibrated_scores(1000, 10, temperature=0.5, random_state=1)
    cp = ConformalClassifier(
        method="raps", random_state=4, tuning_size=0.3, randomized=False
    )
    cp.fit(logits, y)
    proba = cp.predict_proba(logits)
    seed = check_random_state(4).randint(np.iinfo(np.int32).max)
    cal, tune = tuning_split(1000, 0.3, seed)
    # a random permutation by position: exactly ceil(0.3 * 1000) tuning rows
    perm = np.random.default_rng(seed).permutation(1000)
    np.testing.assert_array_equal(tune, np.sort(perm[:300]))
    assert tune.size == cp.n_tuning_ == 300
    assert np.intersect1d(cal, tune).size == 0 and cal.size + tune.size == 1000
    ranks = label_scores(proba[tune], y[tune], "top_k")
    assert (
        cp.k_reg_
        == conformal_quantile(ranks, 0.1)
        == choose_k_reg(proba[tune], y[tune], 0.1)
    )
    sizes = []
    for lam in LAMBDA_GRID:
        s = label_scores(proba[tune], y[tune], "raps", k_reg=cp.k_reg_, lam=lam)
        t = conformal_quantile(s, 0.1)
        sets = prediction_sets(proba[tune], "raps", t, k_reg=cp.k_reg_, lam=lam)
        sizes.append(sets.sum(axis=1).mean())
    assert cp.lam_ == LAMBDA_GRID[int(np.argmin(sizes))]
    # the threshold is that of the other rows only
    s = label_scores(proba[cal], y[cal], "raps", k_reg=cp.k_reg_, lam=cp.lam_)
    assert cp.threshold_ == conformal_quantile(s, 0.1)
    # deterministic given random_state; a given value is used as it is
    again = ConformalClassifier(
        method="raps", random_state=4, tuning_size=0.3, randomized=False
    )
    assert again.fit(logits, y).threshold_ == cp.threshold_
    fixed = ConformalClassifier(method="raps", k_reg=3, random_state=4).fit(logits, y)
    assert fixed.k_reg_ == 3 and fixed.n_tuning_ == 200  # default tuning_size=0.2
    both = ConformalClassifier(method="raps", k_reg=3, lam=0.2).fit(logits, y)
    assert both.n_tuning_ == 0


def test_tuning_split_is_the_same_for_identical_rows():
    """Before: the split hashed each row's probabilities, so identical rows
    all fell on one side and the tuning part was empty (numpy RuntimeWarnings
    from a mean of no rows). Now ceil(0.2 n) rows by position, no warning."""
    p = np.tile([0.5, 0.3, 0.2], (100, 1))
    y = np.random.default_rng(0).choice(3, size=100, p=[0.5, 0.3, 0.2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp = ConformalClassifier(method="raps", random_state=0, randomized=False)
        cp.fit(p, y)
    _, tune = tuning_split(100, 0.2, check_random_state(0).randint(2**31 - 1))
    assert cp.n_tuning_ == tune.size == 20
    assert cp.k_reg_ == choose_k_reg(p[tune], y[tune], 0.1)


def test_tuning_needs_rows_on_both_sides():
    p = np.array([[0.7, 0.3], [0.4, 0.6]])
    with pytest.raises(ValueError, match="tuning_size=0.6 sets 2 of the 2"):
        ConformalClassifier(method="raps", tuning_size=0.6).fit(p, [0, 1])
    logits, y, _ = make_miscalibrated_scores(30, 3, random_state=0)
    with pytest.warns(UserWarning, match="gives 6 tuning rows, fewer than the 9"):
        cp = ConformalClassifier(method="raps", lam=0.1, random_state=0)
        cp.fit(logits, y)
    assert cp.k_reg_ == 3 and cp.n_tuning_ == 6


def test_choose_lam_ties_keep_the_smallest():
    # one class is always right with probability 1: every lam gives size 1
    p = np.tile([1.0, 0.0, 0.0], (50, 1))
    assert choose_lam(p, np.zeros(50, dtype=int), 0.1, 1) == LAMBDA_GRID[0]
    # too few tuning rows for a finite top-k threshold: k_reg = K
    assert choose_k_reg(p[:5], np.zeros(5, dtype=int), 0.1) == 3


def test_raps_steadies_the_sets_of_a_flat_tail():
    """Many classes, an under-confident model (a long flat tail): the
    regularisation of randomised RAPS makes the set sizes far less variable
    than randomised APS's, at a small cost in mean size (Angelopoulos et
    al. 2021, their Table 2 shows the same trade-off)."""
    logits, y, _ = make_miscalibrated_scores(
        6000, 50, temperature=0.5, class_sep=3.0, random_state=2
    )
    common = dict(randomized=True, random_state=0)
    aps = ConformalClassifier(method="aps", **common).fit(logits[:3000], y[:3000])
    raps = ConformalClassifier(method="raps", k_reg=5, lam=0.1, **common)
    raps.fit(logits[:3000], y[:3000])
    size_aps = aps.predict_set(logits[3000:]).sum(axis=1)
    size_raps = raps.predict_set(logits[3000:]).sum(axis=1)
    assert size_raps.mean() <= 1.1 * size_aps.mean()  # 6.68 and 6.36
    assert size_raps.std() < 0.5 * size_aps.std()  # 0.80 and 2.38


# ---------------------------------------------------------------------- errors
def test_bad_set_options_raise_clear_errors():
    logits, y, _ = make_miscalibrated_scores(100, 3, random_state=0)
    with pytest.raises(ValueError, match="'aps' or 'raps' only, got method='top_k'"):
        ConformalClassifier(method="top_k", randomized=True).fit(logits, y)
    with pytest.raises(ValueError, match="include_last_label=False applies to"):
        ConformalClassifier(include_last_label=False).fit(logits, y)
    with pytest.raises(ValueError, match="non-randomised sets"):
        ConformalClassifier(
            method="aps", include_last_label=False, randomized=True
        ).fit(logits, y)
    with pytest.raises(InvalidParameterError, match="'k_reg'"):
        ConformalClassifier(method="raps", k_reg=-1).fit(logits, y)
    with pytest.raises(InvalidParameterError, match="'lam'"):
        ConformalClassifier(method="raps", lam=-0.1).fit(logits, y)
    with pytest.raises(InvalidParameterError, match="'tuning_size'"):
        ConformalClassifier(method="raps", tuning_size=1.0).fit(logits, y)
