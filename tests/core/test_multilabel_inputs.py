"""The multi-label target check and the reading of multi-label
``predict_proba`` outputs (skcalib._core.multilabel)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier

from skcalib._core.multilabel import check_label_indicator, positive_proba


def test_indicator_forms():
    y = np.array([[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(check_label_indicator(y), y)
    np.testing.assert_array_equal(check_label_indicator(y.astype(bool)), y)
    np.testing.assert_array_equal(check_label_indicator(sp.csr_matrix(y)), y)
    assert check_label_indicator(y).dtype == np.int8


@pytest.mark.parametrize(
    "y, match",
    [
        (np.array([0, 1, 2]), r"shape \(3,\) \(binary or multiclass"),
        (np.array([[0, 2], [1, 0]]), r"y\[0, 1\] = 2"),
        (np.array([[0, np.nan], [1, 0]]), r"y\[0, 1\] = nan"),
        (np.array([["a", "b"]]), "dtype <U1"),
        (np.zeros((0, 3)), "empty"),
    ],
)
def test_indicator_refused(y, match):
    with pytest.raises(ValueError, match=match):
        check_label_indicator(y)


def test_indicator_label_count():
    with pytest.raises(ValueError, match="has 2 labels .* 3 expected"):
        check_label_indicator(np.eye(2), n_labels=3)


def test_list_outputs_follow_classes():
    X, Y = make_multilabel_classification(n_samples=120, n_classes=3, random_state=0)
    for clf in (
        MultiOutputClassifier(LogisticRegression()).fit(X, Y),
        KNeighborsClassifier().fit(X, Y),
    ):
        raw = clf.predict_proba(X)
        got = positive_proba(raw, clf)
        for j in range(3):
            col = list(clf.classes_[j]).index(1)
            np.testing.assert_array_equal(got[:, j], raw[j][:, col])
    ovr = OneVsRestClassifier(LogisticRegression()).fit(X, Y)
    np.testing.assert_array_equal(
        positive_proba(ovr.predict_proba(X), ovr), ovr.predict_proba(X)
    )


class _Listed:
    def __init__(self, classes):
        self.classes_ = classes


def test_class_order_and_one_class_labels():
    p = np.array([[0.8, 0.2], [0.3, 0.7]])
    # classes [1, 0]: class 1 is the first column, not the second
    got = positive_proba([p, p[:, :1]], _Listed([np.array([1, 0]), np.array([0])]))
    np.testing.assert_array_equal(got[:, 0], [0.8, 0.3])
    np.testing.assert_array_equal(got[:, 1], [0.0, 0.0])
    got = positive_proba([p[:, :1]], _Listed([np.array([1])]))
    np.testing.assert_array_equal(got[:, 0], p[:, 0])


def test_list_outputs_refused():
    p = np.array([[0.8, 0.2]])
    with pytest.raises(ValueError, match="no list classes_"):
        positive_proba([p], object())
    with pytest.raises(ValueError, match="classes 0/1 per label .* 'a'"):
        positive_proba([p], _Listed([np.array(["a", "b"])]))
    with pytest.raises(ValueError, match=r"at row 0, label 0"):
        positive_proba(np.array([[1.5]]))
    with pytest.raises(ValueError, match="non-finite"):
        positive_proba(np.array([[np.nan]]))
