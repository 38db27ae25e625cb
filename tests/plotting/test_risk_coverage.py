"""Tests of skcalib.plotting.RiskCoverageDisplay: numbers and artists, no images."""

import sys

import numpy as np
import pytest
from _plot_helpers import binary, legend_texts, multiclass
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from skcalib.metrics import aurc, risk_coverage_curve
from skcalib.plotting import RiskCoverageDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


def test_from_predictions_stores_the_curve_and_draws_it():
    y, p = multiclass(n=800, seed=1)
    disp = RiskCoverageDisplay.from_predictions(y, p, name="sharp")
    curve = risk_coverage_curve(y, p)
    assert_allclose(disp.coverage, curve.coverage)
    assert_allclose(disp.risk, curve.risk)
    assert_allclose(disp.curve.thresholds, curve.thresholds)
    assert disp.aurc == pytest.approx(aurc(y, p), abs=1e-15)
    # the line starts at coverage 0 with the risk of the most confident rows
    assert_allclose(disp.line_.get_xdata(), np.append(0, curve.coverage))
    assert_allclose(disp.line_.get_ydata(), np.append(curve.risk[0], curve.risk))
    assert disp.line_.get_label() == f"sharp (AURC = {aurc(y, p):.3f})"
    assert disp.oracle_line_ is None
    assert disp.ax_.get_xlabel() == "Coverage"
    assert disp.ax_.get_ylabel() == "Selective risk (error rate)"
    assert disp.figure_ is disp.ax_.figure


def test_oracle_curve_is_the_best_ranking():
    y, p = multiclass(n=800, seed=2)
    wrong = (p.argmax(axis=1) != y).astype(float)
    disp = RiskCoverageDisplay.from_predictions(y, p, plot_oracle=True, name="m")
    best = risk_coverage_curve(y, p, confidence=-wrong)
    assert_allclose(disp.oracle_line_.get_xdata(), np.append(0, best.coverage))
    assert_allclose(disp.oracle_line_.get_ydata(), np.append(0, best.risk))
    assert disp.oracle_aurc == pytest.approx(aurc(y, p, confidence=-wrong))
    assert disp.oracle_line_.get_color() == disp.line_.get_color()
    assert disp.oracle_line_.get_linestyle() == "--"
    assert legend_texts(disp.ax_)[1].startswith("m oracle (AURC = ")


def test_overlay_on_one_axes():
    y, p = binary(n=1500, seed=3)
    X = np.column_stack([p, np.random.default_rng(0).normal(size=p.size)])
    lr = LogisticRegression().fit(X[:700], y[:700])
    nb = GaussianNB().fit(X[:700], y[:700])
    first = RiskCoverageDisplay.from_estimator(lr, X[700:], y[700:])
    second = RiskCoverageDisplay.from_estimator(
        nb, X[700:], y[700:], ax=first.ax_, plot_oracle=True, color="tab:red"
    )
    assert second.ax_ is first.ax_
    assert len(first.ax_.get_lines()) == 3
    texts = legend_texts(first.ax_)
    assert texts[0].startswith("LogisticRegression (AURC = ")
    assert texts[1].startswith("GaussianNB (AURC = ")
    assert second.line_.get_color() == "tab:red"
    assert second.aurc == pytest.approx(
        aurc(y[700:], nb.predict_proba(X[700:]), labels=nb.classes_)
    )


def test_from_estimator_uses_the_classes_of_the_estimator():
    y, p = multiclass(n=600, k=3, seed=4)
    X = np.log(p)
    clf = LogisticRegression(max_iter=500).fit(X, y)
    rows = y != 2  # y misses a class: the columns still follow classes_
    disp = RiskCoverageDisplay.from_estimator(clf, X[rows], y[rows], loss="brier")
    want = aurc(y[rows], clf.predict_proba(X[rows]), loss="brier", labels=[0, 1, 2])
    assert disp.aurc == pytest.approx(want)
    assert disp.ax_.get_ylabel() == "Selective risk (Brier score)"


def test_custom_confidence_weights_and_callable_loss():
    y, p = multiclass(n=500, seed=5)
    w = np.random.default_rng(1).uniform(0, 2, y.size)
    score = -np.sort(p, axis=1)[:, -2]

    def squared(y_true, y_proba):
        return (1 - y_proba[np.arange(y_true.size), y_true]) ** 2

    disp = RiskCoverageDisplay.from_predictions(
        y, p, confidence=score, loss=squared, sample_weight=w
    )
    want = aurc(y, p, confidence=score, loss=squared, sample_weight=w)
    assert disp.aurc == pytest.approx(want)
    assert disp.ax_.get_ylabel() == "Selective risk"
    assert disp.line_.get_label() == f"AURC = {want:.3f}"


def test_plot_without_oracle_values_raises():
    disp = RiskCoverageDisplay(coverage=[0.5, 1.0], risk=[0.0, 0.5])
    with pytest.raises(ValueError, match="plot_oracle=True needs oracle_coverage"):
        disp.plot(plot_oracle=True)
    disp.plot(name="x")
    assert disp.line_.get_label() == "x"


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match="confidence must be one of"):
        RiskCoverageDisplay.from_predictions([0, 1], [0.2, 0.9], confidence="entropy")
    with pytest.raises(ValueError, match="loss must be one of"):
        RiskCoverageDisplay.from_predictions([0, 1], [0.2, 0.9], loss="hinge")
    with pytest.raises(TypeError, match="loss must be a str or a callable"):
        RiskCoverageDisplay.from_predictions([0, 1], [0.2, 0.9], loss=3)
    with pytest.raises(TypeError, match="has no predict_proba"):
        RiskCoverageDisplay.from_estimator(object(), [[0]], [0])


def test_importing_does_not_import_matplotlib_and_missing_matplotlib(monkeypatch):
    import skcalib.plotting._risk_coverage as module

    assert "matplotlib" not in module.__dict__
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="requires matplotlib"):
        RiskCoverageDisplay.from_predictions([0, 1], [0.2, 0.9])
