"""Coverage and size of prediction sets, at one level or several, and
coverage by set size."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skcalib.conformal._metrics import (
    SizeStratifiedCoverage,
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
    size_stratified_coverage,
    size_stratified_coverage_score,
)

SETS = np.array(
    [
        [True, True, False],
        [False, True, False],
        [True, False, True],
        [False, False, False],
        [True, True, True],
    ]
)
Y = np.array([0, 2, 2, 1, 1])  # covered: yes, no, yes, no, yes


def test_values_by_hand():
    assert set_coverage_score(Y, SETS) == pytest.approx(3 / 5)
    assert mean_set_size(SETS) == pytest.approx((2 + 1 + 2 + 0 + 3) / 5)
    np.testing.assert_allclose(classwise_set_coverage(Y, SETS), [1, 1 / 2, 1 / 2])
    assert isinstance(set_coverage_score(Y, SETS), float)
    assert isinstance(mean_set_size(SETS), float)


def test_weights_by_hand_and_as_repetitions():
    w = np.array([2.0, 1.0, 0.0, 3.0, 1.0])
    assert set_coverage_score(Y, SETS, sample_weight=w) == pytest.approx(3 / 7)
    assert mean_set_size(SETS, sample_weight=w) == pytest.approx(
        (2 * 2 + 1 + 0 + 0 + 3) / 7
    )
    np.testing.assert_allclose(
        classwise_set_coverage(Y, SETS, sample_weight=w), [1, 1 / 4, 0]
    )
    rep = np.array([2, 1, 0, 3, 1])
    ys, sets = np.repeat(Y, rep), np.repeat(SETS, rep, axis=0)
    assert set_coverage_score(Y, SETS, sample_weight=w) == pytest.approx(
        set_coverage_score(ys, sets)
    )
    assert mean_set_size(SETS, sample_weight=w) == pytest.approx(mean_set_size(sets))
    # a zero weight drops a row; a class whose weight is all zero is NaN
    cw = classwise_set_coverage(Y, SETS, sample_weight=np.r_[0.0, 1, 1, 1, 1])
    assert np.isnan(cw[0])
    np.testing.assert_allclose(cw[1:], [1 / 2, 1 / 2])


def test_marginal_is_the_frequency_weighted_classwise():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 500)
    sets = rng.uniform(size=(500, 4)) < 0.6
    w = rng.uniform(0, 2, 500)
    per_class = classwise_set_coverage(y, sets, sample_weight=w)
    mass = np.bincount(y, weights=w, minlength=4)
    assert set_coverage_score(y, sets, sample_weight=w) == pytest.approx(
        per_class @ mass / mass.sum()
    )


def test_labels_strings_and_absent_classes():
    names = np.array(["ant", "bee", "cow"])
    assert set_coverage_score(names[Y], SETS) == set_coverage_score(Y, SETS)
    # columns in another order than the sorted labels
    perm = [2, 0, 1]
    assert set_coverage_score(
        names[Y], SETS[:, perm], labels=names[perm]
    ) == set_coverage_score(Y, SETS)
    # class 3 never occurs: the columns are not guessed, labels= names them
    sets4 = np.column_stack([SETS, np.ones(5, dtype=bool)])
    with pytest.raises(ValueError, match="4 columns but y_true has 3 distinct"):
        classwise_set_coverage(Y, sets4)
    cw = classwise_set_coverage(Y, sets4, labels=[0, 1, 2, 3])
    np.testing.assert_array_equal(cw[:3], classwise_set_coverage(Y, SETS))
    assert np.isnan(cw[3]) and cw.shape == (4,)
    with pytest.raises(ValueError, match=r"label\(s\) \['emu'\] that are not in"):
        set_coverage_score(np.append(names[Y][:4], "emu"), SETS, labels=names)
    msg = r"y_sets has 3 columns, but labels has 2: \[0, 1\]"
    with pytest.raises(ValueError, match=msg):
        set_coverage_score(Y, SETS, labels=[0, 1])
    with pytest.raises(ValueError, match=r"labels must be unique, got \[0, 0, 1\]"):
        set_coverage_score(Y, SETS, labels=[0, 0, 1])
    with pytest.raises(ValueError, match=r"3 columns but y_true has 2 distinct.*'a'"):
        set_coverage_score(["a", "b", "a", "b", "a"], SETS)


def test_zero_one_integers_are_sets():
    ints = SETS.astype(int)
    assert set_coverage_score(Y, ints) == set_coverage_score(Y, SETS)
    assert mean_set_size(ints.astype(float)) == mean_set_size(SETS)
    assert set_coverage_score(Y.tolist(), SETS.tolist()) == pytest.approx(0.6)


def test_non_boolean_sets_are_refused_naming_the_entry():
    proba = np.full((5, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"y_sets\[0, 0\] = 0.333.*not probabilities"):
        set_coverage_score(Y, proba)
    bad = SETS.astype(int)
    bad[3, 2] = 2
    with pytest.raises(ValueError, match=r"y_sets\[3, 2\] = 2"):
        mean_set_size(bad)
    with_nan = SETS.astype(float)
    with_nan[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"y_sets\[1, 1\] = nan"):
        classwise_set_coverage(Y, with_nan)
    with pytest.raises(ValueError, match="got dtype <U1"):
        mean_set_size(np.array([["a", "b"], ["c", "d"]]))


def test_shape_errors():
    with pytest.raises(ValueError, match=r"\(2-D or 3-D\), got shape \(5,\)"):
        set_coverage_score(Y, SETS[:, 0])
    with pytest.raises(ValueError, match=r"\(2-D or 3-D\), got shape \(5, 3, 1, 1\)"):
        mean_set_size(SETS[:, :, None, None])
    with pytest.raises(ValueError, match=r"at least one level, got shape \(5, 3, 0\)"):
        classwise_set_coverage(Y, np.zeros((5, 3, 0), dtype=bool))
    with pytest.raises(ValueError, match=r"at least 2\), got shape \(5, 1, 2\)"):
        set_coverage_score(Y, np.ones((5, 1, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"at least 2\), got shape \(5, 1\)"):
        mean_set_size(SETS[:, :1])
    with pytest.raises(ValueError, match="y_true has 4 samples but y_sets has 5"):
        set_coverage_score(Y[:4], SETS)
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(5,\)"):
        mean_set_size(SETS, sample_weight=np.ones(4))
    with pytest.raises(ValueError, match=r"sample_weight\[1\] = -1"):
        set_coverage_score(Y, SETS, sample_weight=[1, -1, 1, 1, 1])
    with pytest.raises(ValueError, match="sums to 0"):
        classwise_set_coverage(Y, SETS, sample_weight=np.zeros(5))
    with pytest.raises(ValueError, match="0 sample"):
        mean_set_size(np.zeros((0, 3), dtype=bool))
    with pytest.raises(InvalidParameterError, match="'y_sets' parameter"):
        mean_set_size("not sets")


# ------------------------------------------------------------ several levels
#: Three levels of nested sets for Y (the middle one is SETS).
LEVELS = np.stack(
    [SETS | np.eye(3, dtype=bool)[Y], SETS, SETS & [True, True, False]], 2
)


def test_several_levels_are_the_slices():
    w = np.array([2.0, 1.0, 0.0, 3.0, 1.0])
    for weight in (None, w):
        cov = set_coverage_score(Y, LEVELS, sample_weight=weight)
        size = mean_set_size(LEVELS, sample_weight=weight)
        cw = classwise_set_coverage(Y, LEVELS, sample_weight=weight)
        assert cov.shape == size.shape == (3,) and cw.shape == (3, 3)
        for j in range(3):
            s = LEVELS[:, :, j]
            assert cov[j] == set_coverage_score(Y, s, sample_weight=weight)
            assert size[j] == mean_set_size(s, sample_weight=weight)
            np.testing.assert_array_equal(
                cw[:, j], classwise_set_coverage(Y, s, sample_weight=weight)
            )
    # by hand: every set covers at the first level; the third drops class 2
    np.testing.assert_allclose(set_coverage_score(Y, LEVELS), [1, 3 / 5, 2 / 5])
    np.testing.assert_allclose(mean_set_size(LEVELS), [10 / 5, 8 / 5, 6 / 5])
    np.testing.assert_allclose(
        classwise_set_coverage(Y, LEVELS), [[1, 1, 1], [1, 1 / 2, 1 / 2], [1, 1 / 2, 0]]
    )


def test_several_levels_bad_input_names_the_entry_and_labels():
    bad = LEVELS.astype(float)
    bad[4, 0, 2] = 0.5
    with pytest.raises(ValueError, match=r"y_sets\[4, 0, 2\] = 0.5"):
        set_coverage_score(Y, bad)
    with pytest.raises(ValueError, match=r"y_sets has 3 columns, but labels has 2"):
        classwise_set_coverage(Y, LEVELS, labels=[0, 1])
    with pytest.raises(ValueError, match="y_true has 4 samples but y_sets has 5"):
        size_stratified_coverage(Y[:4], LEVELS)
    with pytest.raises(ValueError, match=r"label\(s\) \[7\] that are not in"):
        size_stratified_coverage_score(np.r_[Y[:4], 7], LEVELS, labels=[0, 1, 2])


# ------------------------------------------------- size-stratified coverage
def test_size_stratified_coverage_by_hand():
    # sizes 2 1 2 0 3; covered yes no yes no yes
    ssc = size_stratified_coverage(Y, SETS)
    assert isinstance(ssc, SizeStratifiedCoverage)
    np.testing.assert_array_equal(ssc.sizes, [0, 1, 2, 3])
    np.testing.assert_array_equal(ssc.coverage, [0, 0, 1, 1])
    np.testing.assert_array_equal(ssc.counts, [1, 1, 2, 1])
    assert size_stratified_coverage_score(Y, SETS) == 0.0
    # sizes of 1/5 of the weight and more: all; of 2/5: size 2 only
    assert size_stratified_coverage_score(Y, SETS, min_fraction=0.2) == 0.0
    assert size_stratified_coverage_score(Y, SETS, min_fraction=0.4) == 1.0
    assert np.isnan(size_stratified_coverage_score(Y, SETS, min_fraction=0.5))
    w = np.array([2.0, 1.0, 0.0, 3.0, 1.0])  # the one set of size 2 left: row 0
    ssc = size_stratified_coverage(Y, SETS, sample_weight=w)
    np.testing.assert_array_equal(ssc.sizes, [0, 1, 2, 3])
    np.testing.assert_array_equal(ssc.counts, [3, 1, 2, 1])
    ssc = size_stratified_coverage(Y, SETS, sample_weight=[1, 1, 1, 0, 1])
    np.testing.assert_array_equal(ssc.sizes, [1, 2, 3])  # no empty set weighs


def test_size_strata_add_up_to_the_marginal_coverage():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 5, 800)
    sets = rng.uniform(size=(800, 5, 2)) < [0.3, 0.6]
    w = rng.uniform(0, 2, 800)
    ssc = size_stratified_coverage(y, sets, sample_weight=w)
    assert ssc.coverage.shape == ssc.counts.shape == (ssc.sizes.size, 2)
    mean = np.nansum(ssc.coverage * ssc.counts, axis=0) / ssc.counts.sum(axis=0)
    np.testing.assert_allclose(mean, set_coverage_score(y, sets, sample_weight=w))
    np.testing.assert_allclose(ssc.counts.sum(axis=0), w.sum())
    rep = rng.integers(0, 3, 800)
    a = size_stratified_coverage(y, sets, sample_weight=rep.astype(float))
    b = size_stratified_coverage(np.repeat(y, rep), np.repeat(sets, rep, axis=0))
    for field in ("sizes", "coverage", "counts"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field))
    # each level alone: its sizes, the rows of the union that occur in it
    for j in range(2):
        one = size_stratified_coverage(y, sets[:, :, j], sample_weight=w)
        rows = np.searchsorted(ssc.sizes, one.sizes)
        np.testing.assert_allclose(ssc.coverage[rows, j], one.coverage)
        np.testing.assert_allclose(ssc.counts[rows, j], one.counts)
        absent = np.setdiff1d(np.arange(ssc.sizes.size), rows)
        assert np.isnan(ssc.coverage[absent, j]).all()
        assert (ssc.counts[absent, j] == 0).all()
    score = size_stratified_coverage_score(y, sets, sample_weight=w)
    np.testing.assert_array_equal(score, np.nanmin(ssc.coverage, axis=0))


def test_size_stratified_coverage_of_cross_conformal_sets():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from skcalib.conformal._cross import CrossConformalClassifier

    X, y = make_classification(
        900, n_classes=4, n_informative=5, class_sep=1.2, random_state=0
    )
    cp = CrossConformalClassifier(LogisticRegression(), method="aps", randomized=True)
    sets = (
        cp.set_params(random_state=0)
        .fit(X[:600], y[:600])
        .predict_set(X[600:], alpha=[0.05, 0.2])
    )
    ssc = size_stratified_coverage(y[600:], sets)
    assert (ssc.counts.sum(axis=0) == 300).all()
    np.testing.assert_allclose(
        np.nansum(ssc.coverage * ssc.counts, axis=0) / 300,
        set_coverage_score(y[600:], sets),
    )
    # the empty sets of randomised APS make the worst stratum 0
    has_empty = ssc.sizes[0] == 0 and ssc.counts[0] > 0
    worst = size_stratified_coverage_score(y[600:], sets)
    np.testing.assert_array_equal(worst == 0, has_empty)


def test_min_fraction_is_validated():
    with pytest.raises(InvalidParameterError, match="'min_fraction' parameter"):
        size_stratified_coverage_score(Y, SETS, min_fraction=1.0)


@pytest.mark.parametrize("name", ["array_api_strict", "torch"])
def test_array_api_inputs_come_back_in_their_namespace(name):
    from _xp import dispatch_reason, import_namespace

    if dispatch_reason():
        pytest.skip(dispatch_reason())
    xp = import_namespace(name)
    from sklearn import config_context

    y_x, sets_x = xp.asarray(Y), xp.asarray(LEVELS)
    with config_context(array_api_dispatch=True):
        cov = set_coverage_score(y_x, sets_x)
        ssc = size_stratified_coverage(y_x, sets_x)
        worst = size_stratified_coverage_score(y_x, sets_x)
    for got, want in (
        (cov, set_coverage_score(Y, LEVELS)),
        (ssc.coverage, size_stratified_coverage(Y, LEVELS).coverage),
        (worst, size_stratified_coverage_score(Y, LEVELS)),
    ):
        assert not isinstance(got, np.ndarray)
        np.testing.assert_allclose(np.asarray(got), want)
