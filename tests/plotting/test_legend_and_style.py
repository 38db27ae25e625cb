"""The legend ECE (its kind, its interval), one colour per method across a
figure, and the histogram's step outlines and count scale."""

import numpy as np
import pytest
from _plot_helpers import binary, multiclass
from numpy.testing import assert_allclose

from skcalib.metrics import calibration_error_interval, expected_calibration_error
from skcalib.plotting import ReliabilityDisplay
from skcalib.plotting._drawing import LOG_SCALE_RATIO

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")
same_color = matplotlib.colors.same_color


# ------------------------------------------------- legend ECE: kind, interval
def _one_class_ece(y, proba, k, **params):
    """The ECE of class k's one-vs-rest curve, from the metric."""
    return expected_calibration_error(
        (y == k).astype(int), proba[:, k], kind="classwise", **params
    )


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_legend_ece_has_the_kind_of_the_curve(strategy):
    y, proba = multiclass(n=1500)
    params = dict(n_bins=8, strategy=strategy)
    cases = [
        ({}, expected_calibration_error(y, proba, kind="confidence", **params)),
        (
            {"kind": "top_label"},
            expected_calibration_error(y, proba, kind="top_label", **params),
        ),
    ]
    if strategy == "uniform":
        # The metric's binary classwise ECE averages the class's curve with
        # its mirror image (the other class): the same bins when no
        # probability is on an edge, true of uniform edges here but not of
        # quantile edges (data values); test_classwise_ece_from_plotted_bins
        # checks those by hand.
        cases += [
            (
                {"kind": "classwise", "class_index": 2},
                _one_class_ece(y, proba, 2, **params),
            ),
            ({"pos_label": 1}, _one_class_ece(y, proba, 1, **params)),
        ]
    for extra, want in cases:
        disp = ReliabilityDisplay.from_predictions(y, proba, **params, **extra)
        assert disp.ece == pytest.approx(want, rel=1e-12), extra


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"kind": "top_label"},
        {"kind": "classwise", "class_index": 2},
        {"kind": "top_label", "class_index": 1},
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_legend_interval_is_that_of_the_legend_ece(extra, weighted, strategy):
    y, proba = multiclass(n=1200)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size) if weighted else None
    disp = ReliabilityDisplay.from_predictions(
        y,
        proba,
        n_bins=6,
        strategy=strategy,
        legend_interval=True,
        sample_weight=w,
        **extra,
    )
    ci = disp.ece_interval
    # Same kind, bins and weights: its statistic is the ECE of the legend
    # (one class with quantile bins: the metric's binary classwise ECE, which
    # averages in the mirror curve, moves at most one sample per edge).
    one_class_quantile = "class_index" in extra and strategy == "quantile"
    tol = dict(abs=6 / y.size) if one_class_quantile else dict(rel=1e-10, abs=1e-15)
    assert ci.statistic == pytest.approx(disp.ece, **tol)
    assert ci.low <= ci.estimate <= ci.high
    assert ci.confidence_level == 0.95
    label = disp.line_.get_label()
    assert label == f"ECE = {disp.ece:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def test_legend_interval_equals_the_metric_interval():
    y, p = binary()
    disp = ReliabilityDisplay.from_predictions(
        y, p, n_bins=10, legend_interval=True, confidence_level=0.9, name="m"
    )
    want = calibration_error_interval(
        y,
        p,
        n_bins=10,
        kind="classwise",
        confidence_level=0.9,
        n_resamples=1000,
        random_state=0,
    )
    got = disp.ece_interval
    assert (got.low, got.high, got.statistic) == pytest.approx(
        (want.low, want.high, want.statistic), rel=1e-12
    )
    assert disp.line_.get_label().startswith(f"m (ECE = {want.statistic:.3f} [")
    # Off by default, and never for a CORP curve (its legend shows MCB).
    assert ReliabilityDisplay.from_predictions(y, p).ece_interval is None
    corp = ReliabilityDisplay.from_predictions(
        y, p, strategy="isotonic", legend_interval=True, n_resamples=0
    )
    assert corp.ece_interval is None and "MCB" in corp.line_.get_label()
    assert corp.intervals_ is None  # the band, not per-block bars, by default


# --------------------------------------------------------------- colours
def test_one_colour_per_method_across_panels():
    y, proba = multiclass(n=1000)
    _, flat = multiclass(n=1000, sharpen=1.0)
    fig, (ax1, ax2) = plt.subplots(1, 2)
    a1 = ReliabilityDisplay.from_predictions(
        y, proba, name="A", ax=ax1, show_histogram=True, show_gaps=True
    )
    b1 = ReliabilityDisplay.from_predictions(y, flat, name="B", ax=ax1)
    # The other panel draws B first: B keeps its colour, A too.
    b2 = ReliabilityDisplay.from_predictions(y, flat, name="B", ax=ax2)
    a2 = ReliabilityDisplay.from_predictions(
        y, proba, name="A", ax=ax2, overlay=("smooth",)
    )
    assert same_color(a1.line_.get_color(), a2.line_.get_color())
    assert same_color(b1.line_.get_color(), b2.line_.get_color())
    assert not same_color(a1.line_.get_color(), b1.line_.get_color())
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    assert same_color(a1.line_.get_color(), cycle[0])
    assert same_color(b1.line_.get_color(), cycle[1])
    # Every part of a display shares its colour.
    color = a1.line_.get_color()
    assert same_color(a1.hist_.get_edgecolor(), color)
    assert same_color(a1.gaps_.patches[0].get_facecolor()[:3], color)
    assert same_color(a1.intervals_.lines[2][0].get_color()[0], color)
    assert same_color(a2.smooth_line_.get_color(), color)
    # A colour passed is kept for the name on that figure.
    c1 = ReliabilityDisplay.from_predictions(y, proba, name="C", ax=ax1, c="tab:olive")
    c2 = ReliabilityDisplay.from_predictions(y, proba, name="C", ax=ax2)
    assert same_color(c1.line_.get_color(), "tab:olive")
    assert same_color(c2.line_.get_color(), "tab:olive")
    # A new figure starts the assignment again.
    b3 = ReliabilityDisplay.from_predictions(y, flat, name="B")
    assert same_color(b3.line_.get_color(), cycle[0])


# ------------------------------------------------------- histogram scale
def _hist_display(counts, **plot):
    k = len(counts)
    return ReliabilityDisplay(
        prob_true=np.full(k, 0.5),
        prob_pred=(np.arange(k) + 0.5) / k,
        counts=np.asarray(counts, dtype=float),
        edges=np.linspace(0, 1, k + 1),
    ).plot(show_histogram=True, **plot)


def test_hist_scale_auto_rule_and_override():
    # Smallest non-empty bar under 2% of the tallest: log, and visible.
    disp = _hist_display([5000, 3, 0, 40])
    assert 3 / 5000 < LOG_SCALE_RATIO
    assert disp.ax_hist_.get_yscale() == "log"
    bottom, top = disp.ax_hist_.get_ylim()
    assert bottom <= 3 / 2 and top >= 5000
    # Every non-empty bin is at least 2% of the tallest: linear from 0.
    flat = _hist_display([50, 3, 0, 40])
    assert flat.ax_hist_.get_yscale() == "linear"
    assert flat.ax_hist_.get_ylim()[0] == 0
    # Overridden either way.
    assert _hist_display([5000, 3], hist_scale="linear").ax_hist_.get_yscale() == (
        "linear"
    )
    assert _hist_display([50, 40], hist_scale="log").ax_hist_.get_yscale() == "log"


def test_hist_scale_follows_every_overlaid_display():
    first = _hist_display([50, 40, 30, 20])
    assert first.ax_hist_.get_yscale() == "linear"
    ReliabilityDisplay(
        prob_true=[0.5, 0.5],
        prob_pred=[0.25, 0.75],
        counts=[1.0, 4000.0],
        edges=[0, 0.5, 1],
        name="tiny bin",
    ).plot(ax=first.ax_, show_histogram=True)
    assert first.ax_hist_.get_yscale() == "log"
    assert first.ax_hist_.get_ylim()[0] <= 0.5


def test_step_histogram_is_an_outline_in_the_curve_colour():
    y, proba = multiclass(n=800)
    disp = ReliabilityDisplay.from_predictions(y, proba, n_bins=10, show_histogram=True)
    values, edges, _ = disp.hist_.get_data()
    assert_allclose(values, disp.counts)
    assert_allclose(edges, disp.edges)
    assert not disp.hist_.get_fill()
    assert same_color(disp.hist_.get_edgecolor(), disp.line_.get_color())
    bars = ReliabilityDisplay.from_predictions(
        y, proba, n_bins=10, show_histogram=True, histtype="bar"
    )
    assert len(bars.hist_.patches) == 10
