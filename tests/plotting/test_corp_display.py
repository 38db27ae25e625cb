"""ReliabilityDisplay with the CORP (isotonic) curve, its consistency band and
the smoothed curve beside the binned one: the numbers drawn are those of the
metrics."""

import numpy as np
import pytest
from _plot_helpers import binary, legend_texts, multiclass
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import (
    corp_decomposition,
    reliability_curve,
    smooth_reliability_curve,
)
from skcalib.plotting import ReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_isotonic_strategy_draws_the_corp_curve_and_band():
    y, p = binary()
    disp = ReliabilityDisplay.from_predictions(
        y, p, kind="classwise", strategy="isotonic", name="m", random_state=3
    )
    ref = reliability_curve(y, p, kind="classwise", strategy="isotonic", random_state=3)
    assert_allclose(disp.line_.get_xdata(), ref.curve_x)
    assert_allclose(disp.line_.get_ydata(), ref.curve_y)
    assert disp.isotonic_line_ is disp.line_
    assert disp.line_.get_marker() in ("None", None, "")
    mcb = corp_decomposition(y, p, kind="classwise").miscalibration
    assert disp.mcb == pytest.approx(mcb)
    assert legend_texts(disp.ax_)[-1] == f"m (MCB = {mcb:.3f})"
    # The band: the filled polygon runs through both edges at curve_x.
    vertices = {tuple(v) for v in disp.band_.get_paths()[0].vertices.tolist()}
    for edge in (ref.band_lower, ref.band_upper):
        assert set(zip(ref.curve_x.tolist(), edge.tolist(), strict=True)) <= vertices
    assert disp.ece is None and disp.smooth_line_ is None


def test_band_off_and_no_resamples():
    y, p = binary()
    off = ReliabilityDisplay.from_predictions(
        y, p, kind="classwise", strategy="isotonic", show_band=False
    )
    none = ReliabilityDisplay.from_predictions(
        y, p, kind="classwise", strategy="isotonic", n_resamples=0
    )
    assert off.band_ is None and none.band_ is None
    assert none.curve.band_lower is None


def test_overlays_beside_the_binned_curve():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, n_bins=10, name="net", overlay=("isotonic", "smooth")
    )
    iso = reliability_curve(y, proba, strategy="isotonic")
    smooth = smooth_reliability_curve(y, proba)
    assert_allclose(disp.isotonic_line_.get_xydata()[:, 1], iso.curve_y)
    assert disp.isotonic_line_.get_color() == disp.line_.get_color()
    shown = np.isfinite(disp.smooth_line_.get_ydata())
    assert_allclose(disp.smooth_line_.get_ydata()[shown], smooth.accuracy[shown])
    assert np.all(smooth.density[shown] >= 0.01) and shown.any()
    texts = legend_texts(disp.ax_)
    assert texts[1].startswith("net (ECE = ")
    mcb = corp_decomposition(y, proba).miscalibration
    assert texts[2] == f"net CORP (MCB = {mcb:.3f})"
    assert texts[3] == f"net smooth (smECE = {smooth.smooth_ece:.3f})"
    assert disp.band_ is not None


def test_overlay_of_one_class_and_from_estimator():
    X, y = make_classification(n_samples=1500, n_classes=3, n_informative=5)
    clf = LogisticRegression(max_iter=500).fit(X[:700], y[:700])
    disp = ReliabilityDisplay.from_estimator(
        clf, X[700:], y[700:], kind="classwise", class_index=2, overlay="isotonic"
    )
    proba = clf.predict_proba(X[700:])
    ref = reliability_curve(
        y[700:], proba, kind="classwise", class_index=2, strategy="isotonic"
    )
    assert_allclose(disp.isotonic_curve.curve_y, ref.curve_y)
    assert disp.line_.get_label().startswith("LogisticRegression (ECE")


def test_bad_overlay():
    y, p = binary()
    with pytest.raises(ValueError, match="overlay"):
        ReliabilityDisplay.from_predictions(y, p, overlay=("kde",))
