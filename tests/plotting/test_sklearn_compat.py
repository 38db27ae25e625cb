"""ReliabilityDisplay against scikit-learn's CalibrationDisplay: the binary
default curve (the positive class on [0, 1]), pos_label, the positive-class
rule and its refusal to guess."""

import numpy as np
import pytest
from _plot_helpers import binary
from numpy.testing import assert_allclose
from sklearn.calibration import CalibrationDisplay, calibration_curve
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import expected_calibration_error
from skcalib.plotting import ReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


@pytest.mark.parametrize(
    "strategy, n_bins", [("uniform", 5), ("uniform", 10), ("quantile", 4)]
)
def test_binary_default_is_calibration_display(strategy, n_bins):
    y, p = binary()
    ours = ReliabilityDisplay.from_predictions(y, p, n_bins=n_bins, strategy=strategy)
    theirs = CalibrationDisplay.from_predictions(y, p, n_bins=n_bins, strategy=strategy)
    assert_allclose(ours.line_.get_xydata(), theirs.line_.get_xydata(), rtol=1e-12)
    assert ours.curve.kind == "classwise" and ours.curve.class_index == 1
    # On [0, 1], not the top-1 confidence's [0.5, 1].
    assert ours.line_.get_xdata().min() < 0.5
    assert ours.ax_.get_xlabel() == "Mean predicted probability (class 1)"
    # The legend ECE is the positive-class ECE of the same bins.
    want = expected_calibration_error(
        y, p, n_bins=n_bins, strategy=strategy, kind="classwise"
    )
    assert ours.ece == pytest.approx(want, rel=1e-12)


def _fitted(labels=(0, 1)):
    X, y = make_classification(n_samples=2000, random_state=0)
    y = np.asarray(labels)[y]
    clf = LogisticRegression().fit(X[:1000], y[:1000])
    return clf, X[1000:], y[1000:]


@pytest.mark.parametrize("pos_label", [None, 0, 1])
def test_from_estimator_pos_label_as_calibration_display(pos_label):
    clf, X, y = _fitted()
    ours = ReliabilityDisplay.from_estimator(clf, X, y, n_bins=8, pos_label=pos_label)
    theirs = CalibrationDisplay.from_estimator(clf, X, y, n_bins=8, pos_label=pos_label)
    assert_allclose(ours.line_.get_xydata(), theirs.line_.get_xydata(), rtol=1e-12)
    assert ours.class_label == (1 if pos_label is None else pos_label)


def test_from_estimator_string_classes_use_classes_order():
    clf, X, y = _fitted(labels=("spam", "ham"))  # classes_ == ["ham", "spam"]
    ours = ReliabilityDisplay.from_estimator(clf, X, y, n_bins=6)
    theirs = CalibrationDisplay.from_estimator(clf, X, y, n_bins=6)
    assert_allclose(ours.line_.get_xydata(), theirs.line_.get_xydata(), rtol=1e-12)
    assert ours.class_label == clf.classes_[1] == "spam"


def test_from_predictions_1d_pos_label_names_the_column():
    # As in scikit-learn, a 1-D y_proba with pos_label is P(y == pos_label).
    y, p = binary()
    ours = ReliabilityDisplay.from_predictions(y, 1 - p, n_bins=10, pos_label=0)
    prob_true, prob_pred = calibration_curve(y, 1 - p, n_bins=10, pos_label=0)
    assert_allclose(ours.line_.get_xydata(), np.column_stack((prob_pred, prob_true)))
    assert ours.class_label == 0
    # 2-D input: pos_label picks the column.
    two_d = ReliabilityDisplay.from_predictions(
        y, np.column_stack((1 - p, p)), n_bins=10, pos_label=0
    )
    assert_allclose(two_d.line_.get_xydata(), ours.line_.get_xydata())


def test_string_labels_without_order_ask_for_pos_label():
    y, p = binary()
    names = np.array(["no", "yes"])[y]
    with pytest.raises(ValueError, match="pos_label="):
        ReliabilityDisplay.from_predictions(names, p)
    with pytest.raises(ValueError, match="pos_label="):
        ReliabilityDisplay.from_predictions(names, p, kind="classwise")
    by_pos = ReliabilityDisplay.from_predictions(names, p, n_bins=10, pos_label="yes")
    by_labels = ReliabilityDisplay.from_predictions(
        names, p, n_bins=10, labels=["no", "yes"]
    )
    prob_true, prob_pred = calibration_curve(names, p, n_bins=10, pos_label="yes")
    for disp in (by_pos, by_labels):
        assert_allclose(
            disp.line_.get_xydata(), np.column_stack((prob_pred, prob_true))
        )
        assert disp.class_label == "yes"
    # The pooled top-1 curve needs no positive class.
    pooled = ReliabilityDisplay.from_predictions(names, p, kind="confidence")
    assert pooled.line_.get_xdata().min() >= 0.5


def test_multiclass_default_stays_top1_and_pos_label_selects_a_class():
    X, y = make_classification(
        n_samples=1500, n_classes=3, n_informative=4, random_state=0
    )
    clf = LogisticRegression().fit(X, y)
    pooled = ReliabilityDisplay.from_estimator(clf, X, y)
    assert pooled.curve.kind == "confidence"
    one = ReliabilityDisplay.from_estimator(clf, X, y, pos_label=2, n_bins=5)
    prob_true, prob_pred = calibration_curve(
        y == 2, clf.predict_proba(X)[:, 2], n_bins=5
    )
    assert_allclose(one.line_.get_xydata(), np.column_stack((prob_pred, prob_true)))
