"""Tests of ReliabilityDisplay.from_predictions / from_estimator: binary,
multiclass, the three kinds, class selection and bad input."""

import numpy as np
import pytest
from _plot_helpers import binary, diagonals, multiclass
from numpy.testing import assert_allclose
from sklearn.calibration import calibration_curve
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skcalib import TemperatureCalibrator
from skcalib.metrics import expected_calibration_error, reliability_curve
from skcalib.plotting import ReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


# ------------------------------------------------- binary, multiclass, kinds
def test_binary_1d_equals_2d():
    y, p = binary()
    for kind in (None, "confidence"):
        d1 = ReliabilityDisplay.from_predictions(y, p, n_bins=10, kind=kind)
        d2 = ReliabilityDisplay.from_predictions(
            y, np.column_stack((1 - p, p)), n_bins=10, kind=kind
        )
        assert_allclose(d1.line_.get_xydata(), d2.line_.get_xydata())
        assert d1.ece == pytest.approx(d2.ece)
    # Top-1 confidence of a binary model is at least 1/2 (kind="confidence").
    assert np.all(d1.line_.get_xydata()[:, 0] >= 0.5)


def test_binary_classwise_matches_sklearn_calibration_curve():
    y, p = binary()
    disp = ReliabilityDisplay.from_predictions(y, p, n_bins=10, kind="classwise")
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10)
    assert_allclose(disp.line_.get_xydata(), np.column_stack((prob_pred, prob_true)))
    assert disp.ax_.get_xlabel() == "Mean predicted probability (class 1)"
    assert disp.ax_.get_ylabel() == "Fraction of positives"
    # 2-D input with class_index=1 and pos_label=1 give the same curve.
    for extra in ({"class_index": 1}, {"pos_label": 1}):
        other = ReliabilityDisplay.from_predictions(
            y, np.column_stack((1 - p, p)), n_bins=10, kind="classwise", **extra
        )
        assert_allclose(other.line_.get_xydata(), disp.line_.get_xydata())
        assert other.ece == pytest.approx(disp.ece)


def test_classwise_ece_from_plotted_bins():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, kind="classwise", class_index=2
    )
    curve = reliability_curve(y, proba, kind="classwise", class_index=2)
    keep = curve.nonempty
    expected = np.sum(
        curve.counts[keep] * np.abs(curve.accuracy[keep] - curve.mean_confidence[keep])
    ) / np.sum(curve.counts[keep])
    assert disp.ece == pytest.approx(expected)
    assert f"ECE = {expected:.3f}" in disp.line_.get_label()
    assert_allclose(
        disp.line_.get_xydata(),
        np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep])),
    )
    # One-vs-rest: the same as sklearn's binary curve of column 2.
    prob_true, prob_pred = calibration_curve(y == 2, proba[:, 2], n_bins=15)
    assert_allclose(disp.line_.get_xydata(), np.column_stack((prob_pred, prob_true)))


def test_classwise_pos_label_with_string_labels():
    y, proba = multiclass(k=3)
    names = np.array(["cat", "dog", "fish"])
    y_str = names[y]
    by_label = ReliabilityDisplay.from_predictions(
        y_str, proba, kind="classwise", pos_label="dog"
    )
    by_index = ReliabilityDisplay.from_predictions(
        y_str, proba, kind="classwise", class_index=1
    )
    assert_allclose(by_label.line_.get_xydata(), by_index.line_.get_xydata())
    assert by_label.ece == pytest.approx(by_index.ece)
    assert by_label.class_label == by_index.class_label == "dog"
    assert by_label.ax_.get_xlabel() == "Mean predicted probability (class dog)"
    # Explicit labels decide the column order.
    reordered = ReliabilityDisplay.from_predictions(
        y_str,
        proba[:, [1, 0, 2]],
        kind="classwise",
        pos_label="dog",
        labels=["dog", "cat", "fish"],
    )
    assert_allclose(reordered.line_.get_xydata(), by_label.line_.get_xydata())


def test_top_label_one_class():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, kind="top_label", class_index=0
    )
    curve = reliability_curve(y, proba, kind="top_label", class_index=0)
    keep = curve.nonempty
    assert_allclose(
        disp.line_.get_xydata(),
        np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep])),
    )
    # By hand: samples predicted as class 0, their confidence and correctness.
    predicted = proba.argmax(axis=1) == 0
    assert disp.counts.sum() == pytest.approx(predicted.sum())
    assert disp.ax_.get_xlabel() == "Mean predicted confidence (predicted class 0)"
    assert disp.ax_.get_ylabel() == "Observed accuracy (fraction correct)"


def test_multiclass_confidence_by_hand():
    y, proba = multiclass(n=4000, k=5)
    disp = ReliabilityDisplay.from_predictions(y, proba, n_bins=5)
    conf = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y
    # Right-closed bins (lo, hi], first bin [0, 0.2].
    bins = np.clip(np.ceil(conf * 5).astype(int) - 1, 0, 4)
    for j in np.flatnonzero(disp.curve.nonempty):
        in_bin = bins == j
        assert disp.counts[j] == in_bin.sum()
        assert disp.prob_true[j] == pytest.approx(correct[in_bin].mean())
        assert disp.prob_pred[j] == pytest.approx(conf[in_bin].mean())


# ------------------------------------------------------------ from_estimator
def _estimator_data(n_classes=3):
    X, y = make_classification(
        n_samples=3000,
        n_features=8,
        n_informative=5,
        n_classes=n_classes,
        random_state=0,
    )
    return (X[:1000], y[:1000]), (X[1000:2000], y[1000:2000]), (X[2000:], y[2000:])


def test_from_estimator_plain_sklearn_classifier():
    (Xt, yt), _, (Xe, ye) = _estimator_data()
    clf = LogisticRegression().fit(Xt, yt)
    disp = ReliabilityDisplay.from_estimator(clf, Xe, ye, show_histogram=True)
    ref = ReliabilityDisplay.from_predictions(ye, clf.predict_proba(Xe))
    assert_allclose(disp.line_.get_xydata(), ref.line_.get_xydata())
    assert disp.ece == pytest.approx(ref.ece)
    assert disp.line_.get_label() == f"LogisticRegression (ECE = {ref.ece:.3f})"


def test_from_estimator_wrapper_mode_calibrator():
    (Xt, yt), (Xc, yc), (Xe, ye) = _estimator_data()
    clf = LogisticRegression().fit(Xt, yt)
    cal = TemperatureCalibrator(estimator=clf).fit(Xc, yc)
    disp = ReliabilityDisplay.from_estimator(
        cal, Xe, ye, name="temperature", show_gaps=True
    )
    curve = reliability_curve(ye, cal.predict_proba(Xe))
    keep = curve.nonempty
    assert_allclose(
        disp.line_.get_xydata(),
        np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep])),
    )
    assert disp.ece == pytest.approx(
        expected_calibration_error(ye, cal.predict_proba(Xe))
    )
    assert disp.line_.get_label().startswith("temperature (ECE = ")
    # Default name is the class name.
    other = ReliabilityDisplay.from_estimator(cal, Xe, ye, ax=disp.ax_)
    assert other.line_.get_label().startswith("TemperatureCalibrator (ECE = ")
    assert len(diagonals(disp.ax_)) == 1


def test_from_estimator_pos_label_uses_classes():
    (Xt, yt), _, (Xe, ye) = _estimator_data(n_classes=2)
    names = np.array(["ham", "spam"])
    clf = LogisticRegression().fit(Xt, names[yt])
    disp = ReliabilityDisplay.from_estimator(
        clf, Xe, names[ye], kind="classwise", pos_label="spam"
    )
    prob_true, prob_pred = calibration_curve(
        names[ye], clf.predict_proba(Xe)[:, 1], n_bins=15, pos_label="spam"
    )
    assert_allclose(disp.line_.get_xydata(), np.column_stack((prob_pred, prob_true)))
    assert disp.class_label == "spam"
    assert disp.ax_.get_xlabel() == "Mean predicted probability (class spam)"
    ham = ReliabilityDisplay.from_estimator(
        clf, Xe, names[ye], kind="classwise", pos_label="ham"
    )
    assert ham.class_label == "ham"


def test_from_estimator_raw_score_calibrator():
    y, proba = multiclass()
    logits = np.log(proba)
    cal = TemperatureCalibrator().fit(logits[:1500], y[:1500])
    disp = ReliabilityDisplay.from_estimator(cal, logits[1500:], y[1500:])
    ref = reliability_curve(y[1500:], cal.predict_proba(logits[1500:]))
    assert_allclose(disp.counts, ref.counts)
    uncal = ReliabilityDisplay.from_predictions(y[1500:], proba[1500:])
    assert disp.ece < uncal.ece


def test_from_estimator_without_predict_proba():
    class NoProba:
        classes_ = np.array([0, 1])

    with pytest.raises(TypeError, match="predict_proba"):
        ReliabilityDisplay.from_estimator(NoProba(), np.zeros((3, 1)), [0, 1, 1])


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "params, match",
    [
        ({"kind": "unknown"}, "kind"),
        ({"kind": "classwise", "class_index": 7}, "class_index"),
        ({"kind": "top_label", "class_index": -1}, "class_index"),
        ({"kind": "classwise", "pos_label": 9}, "pos_label"),
        ({"kind": "classwise", "pos_label": 1, "class_index": 1}, "not both"),
        ({"kind": "confidence", "class_index": 1}, "kind='confidence'"),
        ({"kind": "confidence", "pos_label": 1}, "kind='confidence'"),
        ({"histtype": "filled"}, "histtype"),
        ({"hist_scale": "symlog"}, "hist_scale"),
        ({"histogram": "percent"}, "histogram"),
    ],
)
def test_bad_input(params, match):
    y, proba = multiclass()
    with pytest.raises(ValueError, match=match):
        ReliabilityDisplay.from_predictions(y, proba, **params)


def test_top_label_all_classes_shows_top_label_ece():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(y, proba, kind="top_label")
    pooled = ReliabilityDisplay.from_predictions(y, proba)
    assert pooled.curve.kind == "confidence"  # the multiclass default
    # The curve drawn pools the classes: the confidence curve.
    assert_allclose(disp.line_.get_xydata(), pooled.line_.get_xydata())
    ece = expected_calibration_error(y, proba, kind="top_label")
    assert disp.ece == pytest.approx(ece, rel=1e-12)
    assert disp.line_.get_label() == f"ECE = {ece:.3f}"
    assert disp.ax_.get_xlabel() == "Mean predicted confidence"
