"""ReliabilityDisplay and ReliabilityGridDisplay: per-bin Clopper-Pearson
intervals, the bootstrap band, n_bins rules (artists checked, no images)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalib.metrics import expected_calibration_error
from skcalib.plotting import ReliabilityDisplay, ReliabilityGridDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _binary(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return (rng.uniform(size=n) < p).astype(int), p


def _band_path_y(poly):
    """The y values of a fill_between polygon, lower and upper sides."""
    verts = poly.get_paths()[0].vertices
    return verts[:, 0], verts[:, 1]


@pytest.mark.parametrize("band", ["pointwise", "simultaneous"])
def test_display_draws_the_bootstrap_band(band):
    y, p = _binary()
    disp = ReliabilityDisplay.from_predictions(
        y, p, n_bins=8, band=band, n_resamples=200
    )
    from matplotlib.collections import PolyCollection

    assert isinstance(disp.bootstrap_band_, PolyCollection)
    assert disp.bootstrap_band_ in disp.ax_.collections
    c = disp.curve
    x, yv = _band_path_y(disp.bootstrap_band_)
    keep = c.nonempty
    # The polygon spans the bins' mean confidence, between the band's ends.
    assert x.min() == pytest.approx(c.mean_confidence[keep].min())
    assert x.max() == pytest.approx(c.mean_confidence[keep].max())
    assert yv.min() == pytest.approx(np.nanmin(c.band_lower))
    assert yv.max() == pytest.approx(np.nanmax(c.band_upper))
    assert_allclose(disp.bootstrap_band_.get_facecolor()[0][:3],
                    matplotlib.colors.to_rgb(disp.line_.get_color()))  # fmt: skip
    assert disp.band_ is None  # no CORP band here


def test_no_band_unless_asked_or_when_hidden():
    y, p = _binary()
    assert ReliabilityDisplay.from_predictions(y, p).bootstrap_band_ is None
    disp = ReliabilityDisplay.from_predictions(
        y, p, band="simultaneous", n_resamples=50, show_band=False
    )
    assert disp.bootstrap_band_ is None and disp.curve.band == "simultaneous"
    from matplotlib.collections import PolyCollection

    assert not any(isinstance(a, PolyCollection) for a in disp.ax_.collections)


def test_clopper_pearson_error_bars_are_the_curve_bounds():
    y, p = _binary(300)
    disp = ReliabilityDisplay.from_predictions(
        y, p, n_bins=6, interval="clopper-pearson"
    )
    c = disp.curve
    assert c.interval == "clopper-pearson"
    segments = disp.intervals_.lines[2][0].get_segments()
    keep = c.nonempty
    assert_allclose([s[0][1] for s in segments], c.lower[keep])
    assert_allclose([s[1][1] for s in segments], c.upper[keep])


def test_band_from_estimator_and_with_a_corp_overlay():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 3))
    y = (X[:, 0] + rng.normal(size=800) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    disp = ReliabilityDisplay.from_estimator(
        clf, X, y, n_bins=6, band="pointwise", n_resamples=50, overlay=("isotonic",)
    )
    assert disp.bootstrap_band_ is not None and disp.band_ is not None
    assert disp.bootstrap_band_ is not disp.band_


def test_rule_name_is_resolved_once_for_the_legend():
    y, p = _binary(1000)
    disp = ReliabilityDisplay.from_predictions(y, p, n_bins="sturges", name="m")
    assert disp.curve.n_bins == 11 == disp.curve.edges.size - 1
    ece = expected_calibration_error(y, p, n_bins=11, kind="classwise")
    assert disp.ece == pytest.approx(ece, abs=1e-12)
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(3), size=600)
    yy = rng.integers(0, 3, size=600)
    disp = ReliabilityDisplay.from_predictions(
        yy, proba, n_bins="sqrt", kind="top_label", legend_interval=True
    )
    assert disp.curve.n_bins == 25
    assert disp.ece == pytest.approx(
        expected_calibration_error(yy, proba, n_bins=25, kind="top_label")
    )


def test_grid_draws_a_band_per_panel():
    rng = np.random.default_rng(2)
    proba = rng.dirichlet(np.ones(3), size=900)
    y = (rng.random(900)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
    grid = ReliabilityGridDisplay.from_predictions(
        y, proba, n_bins=5, band="simultaneous", n_resamples=50,
        interval="clopper-pearson",
    )  # fmt: skip
    for disp in grid.displays_:
        assert disp.bootstrap_band_ is not None
        assert disp.curve.interval == "clopper-pearson"
        assert disp.curve.band == "simultaneous"
