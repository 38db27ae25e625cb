"""Coverage and size of prediction sets."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skcalib.conformal._metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
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
    with pytest.raises(ValueError, match=r"2-D boolean array.*got shape \(5,\)"):
        set_coverage_score(Y, SETS[:, 0])
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
