"""MultilabelReliabilityGridDisplay: one panel per label of a multi-label
classifier, the numbers of the per-label curves and errors."""

import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier

from skcalib.metrics import multilabel_calibration_error, multilabel_reliability_curve
from skcalib.plotting import MultilabelReliabilityGridDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _data(n=800, n_labels=4, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.uniform(size=(n, n_labels))
    Y = (rng.uniform(size=(n, n_labels)) < P**1.5).astype(int)
    return Y, P


def _xy(curve):
    keep = curve.nonempty
    return np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep]))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_each_panel_is_the_curve_and_error_of_its_label(strategy):
    Y, P = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, Y.shape[0])
    grid = MultilabelReliabilityGridDisplay.from_predictions(
        Y, P, n_bins=6, strategy=strategy, sample_weight=w, name="m"
    )
    curves = multilabel_reliability_curve(
        Y, P, n_bins=6, strategy=strategy, sample_weight=w
    )
    errors = multilabel_calibration_error(
        Y, P, n_bins=6, strategy=strategy, sample_weight=w, average=None
    )
    assert grid.axes_.shape == (2, 3)
    assert [ax.get_visible() for ax in grid.axes_.ravel()] == [True] * 4 + [False] * 2
    for j, disp in enumerate(grid.displays_):
        assert disp.ax_ is grid.axes_.ravel()[j]
        assert_allclose(disp.line_.get_xydata(), _xy(curves[j]), rtol=1e-12)
        assert disp.ece == pytest.approx(errors[j], abs=1e-12)
        assert disp.ax_.get_title() == f"label {j}\nm (ECE = {errors[j]:.3f})"
        assert disp.ax_.get_xlabel() == "Mean predicted probability"
    assert grid.axes_[0, 1].get_ylabel() == ""  # y labels on the first column
    assert [t.get_text() for t in grid.legend_.get_texts()] == [
        "Perfectly calibrated",
        "m",
    ]


def test_label_names_columns_and_overlay():
    Y, P = _data(n_labels=3)
    sharp = np.clip(P * 1.3 - 0.15, 0, 1)
    grid = MultilabelReliabilityGridDisplay.from_predictions(
        Y, P, label_names=["cat", "dog", "bird"], n_cols=1, n_bins=5, name="a"
    )
    assert grid.axes_.shape == (3, 1)
    again = MultilabelReliabilityGridDisplay.from_predictions(
        Y, sharp, label_names=["cat", "dog", "bird"], n_bins=5, name="b",
        ax=grid.axes_,
    )  # fmt: skip
    assert again.axes_ is grid.axes_ or np.all(again.axes_ == grid.axes_)
    ece_b = multilabel_calibration_error(Y, sharp, n_bins=5, average=None)
    title = grid.axes_[2, 0].get_title().split("\n")
    assert title[0] == "bird" and title[2] == f"b (ECE = {ece_b[2]:.3f})"
    assert [t.get_text() for t in again.legend_.get_texts()] == [
        "Perfectly calibrated",
        "a",
        "b",
    ]


def test_histogram_panel_keeps_the_label_xlabel():
    Y, P = _data(n_labels=2)
    grid = MultilabelReliabilityGridDisplay.from_predictions(
        Y, P, n_bins=5, show_histogram=True
    )
    for disp in grid.displays_:
        assert disp.ax_hist_.get_xlabel() == "Mean predicted probability"
        assert disp.ax_.get_xlabel() == ""


def test_from_estimator_matrix_and_list_outputs():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    Y = (X + rng.normal(size=(400, 3)) > 0).astype(int)
    ovr = OneVsRestClassifier(LogisticRegression()).fit(X, Y)
    grid = MultilabelReliabilityGridDisplay.from_estimator(ovr, X, Y, n_bins=5)
    expected = multilabel_calibration_error(
        Y, ovr.predict_proba(X), n_bins=5, average=None
    )
    assert_allclose([d.ece for d in grid.displays_], expected, atol=1e-12)
    assert grid.displays_[0].line_.get_label().startswith("OneVsRestClassifier")
    # A list output with a label trained on one class: read by classes_.
    Y1 = Y.copy()
    Y1[:, 1] = 0
    forest = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, Y1)
    grid = MultilabelReliabilityGridDisplay.from_estimator(forest, X, Y1, n_bins=5)
    proba = forest.predict_proba(X)
    matrix = np.column_stack([proba[0][:, 1], np.zeros(400), proba[2][:, 1]])
    expected = multilabel_calibration_error(Y1, matrix, n_bins=5, average=None)
    assert_allclose([d.ece for d in grid.displays_], expected, atol=1e-12)
    assert grid.displays_[1].ece == 0.0  # p = 0 and never present


def test_errors():
    Y, P = _data(n_labels=2)
    with pytest.raises(ValueError, match="label_names has 3 names"):
        MultilabelReliabilityGridDisplay.from_predictions(
            Y, P, label_names=["a", "b", "c"]
        )
    with pytest.raises(ValueError, match="list of 2 per-label arrays"):
        MultilabelReliabilityGridDisplay.from_predictions(
            Y, [np.column_stack([1 - P[:, j], P[:, j]]) for j in range(2)]
        )
    with pytest.raises(ValueError, match=r"shape \(800,\)"):
        MultilabelReliabilityGridDisplay.from_predictions(Y[:, 0], P[:, 0])
    with pytest.raises(TypeError, match="has no predict_proba"):
        MultilabelReliabilityGridDisplay.from_estimator(object(), P, Y)
    grid = MultilabelReliabilityGridDisplay.from_predictions(Y, P)
    one = MultilabelReliabilityGridDisplay.from_predictions(Y, P, n_cols=1).axes_[:1]
    with pytest.raises(ValueError, match="fewer than the 2 labels"):
        grid.plot(ax=one)


def test_missing_matplotlib_error_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    Y, P = _data(n_labels=2)
    with pytest.raises(ImportError, match="MultilabelReliabilityGridDisplay requires"):
        MultilabelReliabilityGridDisplay.from_predictions(Y, P)
