"""Tests of skcalib.plotting.ReliabilityDisplay: numbers and artists, no images."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _plot_helpers import DIAGONAL_GID, binary, diagonals, legend_texts, multiclass
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import expected_calibration_error, reliability_curve
from skcalib.plotting import ReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")

REPO_ROOT = Path(__file__).resolve().parents[2]
MPL_MISSING_MSG = r"ReliabilityDisplay requires matplotlib: pip install skcalib\[plot\]"


def _run_python(code):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    env.pop("MPLBACKEND", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --------------------------------------------------------------- lazy import
def test_importing_skcalib_does_not_import_matplotlib():
    result = _run_python(
        """
        import sys
        import skcalib
        import skcalib.metrics
        import skcalib.plotting
        from skcalib.plotting import ReliabilityDisplay
        # Old matplotlib wheels put a bare "mpl_toolkits" namespace module in
        # sys.modules at start-up (an nspkg .pth file): look for matplotlib
        # itself and for real mpl_toolkits submodules only.
        loaded = sorted(m for m in sys.modules
                        if m.split(".")[0] == "matplotlib"
                        or m.startswith("mpl_toolkits."))
        print(loaded)
        assert not loaded, loaded
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_matplotlib_in_fresh_interpreter():
    result = _run_python(
        """
        import sys
        sys.modules["matplotlib"] = None  # as if matplotlib were not installed
        import numpy as np
        from skcalib.plotting import ReliabilityDisplay
        try:
            ReliabilityDisplay.from_predictions([0, 1, 1], np.array([0.2, 0.7, 0.9]))
        except ImportError as exc:
            print(exc)
        else:
            raise SystemExit("no ImportError")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "ReliabilityDisplay requires matplotlib: pip install skcalib[plot]"
    )


def test_missing_matplotlib_error_message(monkeypatch):
    y, p = binary()
    disp = ReliabilityDisplay(
        prob_true=[0.5], prob_pred=[0.5], counts=[1.0], edges=[0.0, 1.0]
    )
    clf = LogisticRegression().fit(p[:, None], y)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=MPL_MISSING_MSG):
        ReliabilityDisplay.from_predictions(y, p)
    with pytest.raises(ImportError, match=MPL_MISSING_MSG):
        ReliabilityDisplay.from_estimator(clf, p[:, None], y)
    with pytest.raises(ImportError, match=MPL_MISSING_MSG):
        disp.plot()


# ------------------------------------------------------------- plotted data
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [5, 15])
def test_line_data_equals_reliability_curve(strategy, n_bins):
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, n_bins=n_bins, strategy=strategy
    )
    curve = reliability_curve(y, proba, n_bins=n_bins, strategy=strategy)
    keep = curve.nonempty
    assert keep.sum() >= 2
    assert_allclose(
        disp.line_.get_xydata(),
        np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep])),
    )
    assert_allclose(disp.prob_true, curve.accuracy)
    assert_allclose(disp.prob_pred, curve.mean_confidence)
    assert_allclose(disp.counts, curve.counts)
    assert_allclose(disp.edges, curve.edges)
    assert_allclose(disp.lower, curve.lower)
    assert_allclose(disp.upper, curve.upper)
    assert_array_equal(disp.curve.nonempty, curve.nonempty)
    assert disp.curve.kind == "confidence"
    assert disp.curve.strategy == strategy


def test_ece_value_and_legend():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(y, proba, name="sharp")
    ece = expected_calibration_error(y, proba)
    assert disp.ece == pytest.approx(ece, rel=1e-12)
    assert ece > 0.02  # the sharpened model is visibly over-confident
    assert disp.line_.get_label() == f"sharp (ECE = {ece:.3f})"
    assert f"sharp (ECE = {ece:.3f})" in legend_texts(disp.ax_)
    # Without a name the legend still shows the ECE.
    disp = ReliabilityDisplay.from_predictions(y, proba)
    assert disp.line_.get_label() == f"ECE = {ece:.3f}"


def test_ece_with_sample_weight():
    y, proba = multiclass(n=1000)
    w = np.random.default_rng(1).uniform(0, 3, size=y.size)
    disp = ReliabilityDisplay.from_predictions(y, proba, sample_weight=w)
    curve = reliability_curve(y, proba, sample_weight=w)
    assert_allclose(disp.counts, curve.counts)
    assert disp.ece == pytest.approx(
        expected_calibration_error(y, proba, sample_weight=w), rel=1e-12
    )


def test_default_artists_and_labels():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(y, proba, name="m")
    ax = disp.ax_
    assert disp.figure_ is ax.figure
    (diag,) = diagonals(ax)
    assert_allclose(diag.get_xydata(), [[0, 0], [1, 1]])
    assert diag.get_label() == "Perfectly calibrated"
    assert disp.line_.get_marker() == "s"
    # Per-bin intervals are drawn by default (their caps are the 2 more lines).
    assert disp.intervals_ is not None
    assert len(ax.get_lines()) == 2 + 2  # diagonal + curve + caps
    for attr in ("gaps_", "hist_", "ax_hist_"):
        assert getattr(disp, attr) is None
    off = ReliabilityDisplay.from_predictions(y, proba, show_intervals=False)
    assert off.intervals_ is None and len(off.ax_.get_lines()) == 2
    assert len(ax.figure.axes) == 1
    assert ax.get_xlabel() == "Mean predicted confidence"
    assert ax.get_ylabel() == "Observed accuracy (fraction correct)"
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    assert xlim == ylim
    assert -0.05 < xlim[0] < 0 and 1 < xlim[1] < 1.05
    assert ax.get_aspect() == 1.0
    assert legend_texts(ax) == ["Perfectly calibrated", disp.line_.get_label()]
    assert ax.get_legend()._loc == 4  # "lower right"


def test_constructor_only_stores_and_plot_returns_self():
    arrays = dict(
        prob_true=np.array([0.2, np.nan, 0.7]),
        prob_pred=np.array([0.25, np.nan, 0.8]),
        counts=np.array([4.0, 0.0, 6.0]),
        edges=np.array([0.0, 0.4, 0.6, 1.0]),
    )
    disp = ReliabilityDisplay(**arrays, name="stored")
    for key, value in arrays.items():
        assert getattr(disp, key) is value
    assert disp.lower is None and disp.ece is None and disp.curve is None
    assert not hasattr(disp, "line_") and not hasattr(disp, "ax_")
    assert disp.plot() is disp
    assert disp.line_.get_label() == "stored"  # no ECE given: no ECE shown
    assert_allclose(disp.line_.get_xydata(), [[0.25, 0.2], [0.8, 0.7]])
    disp.plot(name="renamed")
    assert disp.line_.get_label() == "renamed"
    assert disp.name == "stored"


def test_line_kwargs_and_aliases():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, color="tab:green", ls="--", marker="o", label="custom"
    )
    assert disp.line_.get_linestyle() == "--"
    assert disp.line_.get_marker() == "o"
    assert disp.line_.get_label() == "custom"
    assert matplotlib.colors.same_color(disp.line_.get_color(), "tab:green")
    with pytest.raises(TypeError):
        ReliabilityDisplay.from_predictions(y, proba, ls="--", linestyle=":")


# ---------------------------------------------------------------- overlays
def test_overlay_two_displays_one_diagonal():
    y, proba = multiclass()
    _, calibrated = multiclass(sharpen=1.0)
    d1 = ReliabilityDisplay.from_predictions(
        y, proba, name="sharp", show_intervals=False
    )
    d2 = ReliabilityDisplay.from_predictions(
        y, calibrated, name="calibrated", ax=d1.ax_, show_intervals=False
    )
    ax = d1.ax_
    assert d2.ax_ is ax and d2.figure_ is d1.figure_
    assert len(diagonals(ax)) == 1
    model_lines = [line for line in ax.get_lines() if line.get_gid() != DIAGONAL_GID]
    assert model_lines == [d1.line_, d2.line_]
    assert legend_texts(ax) == [
        "Perfectly calibrated",
        d1.line_.get_label(),
        d2.line_.get_label(),
    ]
    assert d2.ece < d1.ece
    # Different default colours from the property cycle.
    assert not matplotlib.colors.same_color(d1.line_.get_color(), d2.line_.get_color())


def test_ref_line_false():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(y, proba, ref_line=False)
    assert diagonals(disp.ax_) == []
    assert legend_texts(disp.ax_) == [disp.line_.get_label()]
    # A later display with ref_line=True adds it once.
    ReliabilityDisplay.from_predictions(y, proba, ax=disp.ax_)
    ReliabilityDisplay.from_predictions(y, proba, ax=disp.ax_)
    assert len(diagonals(disp.ax_)) == 1


def test_plot_on_given_axes():
    y, proba = multiclass()
    fig, (ax1, ax2) = plt.subplots(1, 2)
    disp = ReliabilityDisplay.from_predictions(y, proba, ax=ax2)
    assert disp.ax_ is ax2 and disp.figure_ is fig
    assert ax1.get_lines() == []


# --------------------------------------------------------------- histogram
def test_histogram_counts_panel():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, n_bins=10, show_histogram=True, histtype="bar"
    )
    ax, ax_hist = disp.ax_, disp.ax_hist_
    assert ax_hist is not None and ax_hist is not ax
    assert ax_hist in disp.figure_.axes and len(disp.figure_.axes) == 2
    heights = [patch.get_height() for patch in disp.hist_.patches]
    assert_allclose(heights, disp.curve.counts)
    assert_allclose([patch.get_x() for patch in disp.hist_.patches], disp.edges[:-1])
    assert_allclose(
        [patch.get_width() for patch in disp.hist_.patches], np.diff(disp.edges)
    )
    assert sum(heights) == pytest.approx(y.size)
    assert ax_hist.get_ylabel() == "Count"
    # The x label moves to the panel; the panel shares x and sits below.
    assert ax_hist.get_xlabel() == "Mean predicted confidence"
    assert ax.get_xlabel() == ""
    assert ax_hist.get_xlim() == ax.get_xlim()
    disp.figure_.canvas.draw()
    main_box, hist_box = ax.get_position(), ax_hist.get_position()
    assert hist_box.y1 <= main_box.y0
    assert hist_box.x0 == pytest.approx(main_box.x0)
    assert hist_box.x1 == pytest.approx(main_box.x1)


def test_histogram_density():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y,
        proba,
        strategy="quantile",
        show_histogram=True,
        histogram="density",
        histtype="bar",
    )
    heights = np.array([patch.get_height() for patch in disp.hist_.patches])
    widths = np.diff(disp.edges)
    assert_allclose(heights, disp.counts / (disp.counts.sum() * widths))
    assert np.sum(heights * widths) == pytest.approx(1.0)
    assert disp.ax_hist_.get_ylabel() == "Density"


def test_overlay_histograms_share_one_panel():
    y, proba = multiclass()
    _, calibrated = multiclass(sharpen=1.0)
    d1 = ReliabilityDisplay.from_predictions(y, proba, show_histogram=True)
    d2 = ReliabilityDisplay.from_predictions(
        y, calibrated, show_histogram=True, ax=d1.ax_
    )
    assert d2.ax_hist_ is d1.ax_hist_
    assert len(d1.figure_.axes) == 2
    # One step outline per display, in the display's colour.
    assert list(d1.ax_hist_.patches) == [d1.hist_, d2.hist_]
    assert_allclose(d2.hist_.get_data().values, d2.counts)
    for d in (d1, d2):
        assert matplotlib.colors.same_color(
            d.hist_.get_edgecolor(), d.line_.get_color()
        )


def test_histogram_panel_added_by_later_display():
    y, proba = multiclass()
    d1 = ReliabilityDisplay.from_predictions(y, proba)
    assert d1.ax_.get_xlabel() == "Mean predicted confidence"
    d2 = ReliabilityDisplay.from_predictions(y, proba, ax=d1.ax_, show_histogram=True)
    assert d2.ax_hist_ is not None
    assert d1.ax_.get_xlabel() == ""
    assert d2.ax_hist_.get_xlabel() == "Mean predicted confidence"
    # A third display without histogram keeps the label on the panel.
    d3 = ReliabilityDisplay.from_predictions(y, proba, ax=d1.ax_)
    assert d3.ax_hist_ is None and d3.hist_ is None
    assert d1.ax_.get_xlabel() == ""
    assert d2.ax_hist_.get_xlabel() == "Mean predicted confidence"


# --------------------------------------------------------- gaps, intervals
def test_gaps():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(y, proba, n_bins=10, show_gaps=True)
    keep = disp.curve.nonempty
    patches = disp.gaps_.patches
    assert len(patches) == keep.sum()
    assert_allclose([p.get_x() for p in patches], disp.edges[:-1][keep])
    assert_allclose([p.get_width() for p in patches], np.diff(disp.edges)[keep])
    # From the accuracy (bottom) to the diagonal at the mean confidence (top).
    assert_allclose([p.get_y() for p in patches], disp.prob_true[keep])
    assert_allclose([p.get_y() + p.get_height() for p in patches], disp.prob_pred[keep])
    assert disp.gaps_.get_label().startswith("_")  # no legend entry
    # Weighted mean gap height is the ECE.
    gap = np.abs([p.get_height() for p in patches])
    assert np.sum(disp.counts[keep] * gap) / disp.counts.sum() == pytest.approx(
        disp.ece
    )
    assert legend_texts(disp.ax_) == ["Perfectly calibrated", disp.line_.get_label()]


def test_gap_kwargs():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, show_gaps=True, gap_kwargs={"fc": "tab:red", "alpha": 0.5}
    )
    patch = disp.gaps_.patches[0]
    assert matplotlib.colors.same_color(patch.get_facecolor()[:3], "tab:red")
    assert patch.get_alpha() == 0.5


def test_intervals():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, n_bins=8, show_intervals=True, confidence_level=0.9
    )
    curve = reliability_curve(y, proba, n_bins=8, confidence_level=0.9)
    keep = curve.nonempty
    (segments,) = disp.intervals_.lines[2]
    segs = np.asarray(segments.get_segments())
    assert segs.shape == (keep.sum(), 2, 2)
    assert_allclose(segs[:, 0, 0], curve.mean_confidence[keep])
    assert_allclose(segs[:, 0, 1], curve.lower[keep])
    assert_allclose(segs[:, 1, 1], curve.upper[keep])
    assert np.all(curve.lower[keep] <= curve.accuracy[keep])
    assert np.all(curve.accuracy[keep] <= curve.upper[keep])


def test_intervals_need_bounds():
    disp = ReliabilityDisplay(
        prob_true=[0.5], prob_pred=[0.5], counts=[1.0], edges=[0.0, 1.0]
    )
    with pytest.raises(ValueError, match="lower and upper"):
        disp.plot(show_intervals=True)


def test_all_options_together():
    y, proba = multiclass()
    disp = ReliabilityDisplay.from_predictions(
        y, proba, show_histogram=True, show_gaps=True, show_intervals=True
    )
    assert disp.hist_ is not None
    assert disp.gaps_ is not None
    assert disp.intervals_ is not None
    disp.figure_.canvas.draw()  # renders without error


# ------------------------------------------------------------- empty bins
def test_empty_bins():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.9, 1.0, size=500)  # all in the last bins of 10
    y = (rng.random(500) < p).astype(int)
    disp = ReliabilityDisplay.from_predictions(
        y,
        np.column_stack((1 - p, p)),
        n_bins=10,
        show_histogram=True,
        show_gaps=True,
        show_intervals=True,
        histtype="bar",
    )
    keep = disp.curve.nonempty
    assert keep.sum() == 1 and keep[-1]
    assert np.isnan(disp.prob_true[:-1]).all()
    xy = disp.line_.get_xydata()
    assert xy.shape == (1, 2) and np.isfinite(xy).all()
    assert len(disp.gaps_.patches) == 1
    heights = [patch.get_height() for patch in disp.hist_.patches]
    assert_allclose(heights, [0] * 9 + [500])
    disp.figure_.canvas.draw()


def test_constructor_all_nan_bins_do_not_crash():
    disp = ReliabilityDisplay(
        prob_true=[np.nan, np.nan],
        prob_pred=[np.nan, np.nan],
        counts=[0.0, 0.0],
        edges=[0.0, 0.5, 1.0],
        lower=[np.nan, np.nan],
        upper=[np.nan, np.nan],
    ).plot(
        show_gaps=True,
        show_intervals=True,
        show_histogram=True,
        histogram="density",
        histtype="bar",
    )
    assert disp.line_.get_xydata().shape == (0, 2)
    assert [p.get_height() for p in disp.hist_.patches] == [0.0, 0.0]
    disp.figure_.canvas.draw()
