"""ReliabilityGridDisplay: one panel per class, the same numbers as the
single-class curves, one colour per model across the panels."""

import numpy as np
import pytest
from _plot_helpers import multiclass
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import reliability_curve
from skcalib.plotting import ReliabilityDisplay, ReliabilityGridDisplay
from skcalib.plotting._annotations import ece_of_curve

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
same_color = matplotlib.colors.same_color


def _xy(curve):
    keep = curve.nonempty
    return np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep]))


@pytest.mark.parametrize("kind", ["classwise", "top_label"])
def test_each_panel_is_the_curve_of_its_class(kind):
    y, proba = multiclass(n=2000, k=4)
    grid = ReliabilityGridDisplay.from_predictions(y, proba, kind=kind, n_bins=8)
    assert grid.axes_.shape == (2, 3)
    assert [ax.get_visible() for ax in grid.axes_.ravel()] == [True] * 4 + [False] * 2
    assert [d.class_label for d in grid.displays_] == [0, 1, 2, 3]
    for k, disp in enumerate(grid.displays_):
        curve = reliability_curve(y, proba, kind=kind, class_index=k, n_bins=8)
        assert_allclose(disp.line_.get_xydata(), _xy(curve))
        assert disp.ece == pytest.approx(ece_of_curve(curve), rel=1e-12)
        assert disp.intervals_ is not None  # per-bin intervals by default
        assert disp.ax_ is grid.axes_.ravel()[k]
        assert disp.ax_.get_title() == f"class {k}\nECE = {disp.ece:.3f}"
    # The y label on the first column only.
    assert grid.axes_[0, 1].get_ylabel() == ""
    assert grid.axes_[0, 0].get_ylabel() != ""


def test_class_list_string_labels_and_overlay_colours():
    y, proba = multiclass(n=1500, k=3)
    _, flat = multiclass(n=1500, k=3, sharpen=1.0)
    names = np.array(["cat", "dog", "fish"])
    grid = ReliabilityGridDisplay.from_predictions(
        names[y], proba, classes=["fish", "cat"], name="sharp", n_bins=6
    )
    assert grid.axes_.shape == (1, 2)
    fish = reliability_curve(y, proba, kind="classwise", class_index=2, n_bins=6)
    assert_allclose(grid.displays_[0].line_.get_xydata(), _xy(fish))
    over = ReliabilityGridDisplay.from_predictions(
        names[y],
        flat,
        classes=["fish", "cat"],
        name="calibrated",
        n_bins=6,
        ax=grid.axes_,
        show_histogram=True,
    )
    assert over.figure_ is grid.figure_
    for a, b in zip(grid.displays_, over.displays_, strict=True):
        assert b.ax_ is a.ax_
        # One colour per model on every panel, distinct between models.
        assert same_color(a.line_.get_color(), grid.displays_[0].line_.get_color())
        assert same_color(b.line_.get_color(), over.displays_[0].line_.get_color())
        assert same_color(b.hist_.get_edgecolor(), b.line_.get_color())
        assert not same_color(a.line_.get_color(), b.line_.get_color())


def test_from_estimator_and_pooled_top_label_view():
    X, y = make_classification(
        n_samples=1500, n_classes=3, n_informative=4, random_state=0
    )
    clf = LogisticRegression().fit(X, y)
    grid = ReliabilityGridDisplay.from_estimator(
        clf, X, y, kind="top_label", n_bins=5, legend_interval=True
    )
    proba = clf.predict_proba(X)
    for k, disp in enumerate(grid.displays_):
        curve = reliability_curve(y, proba, kind="top_label", class_index=k, n_bins=5)
        assert_allclose(disp.line_.get_xydata(), _xy(curve))
        assert disp.line_.get_label().startswith("LogisticRegression (ECE = ")
        assert disp.ece_interval.statistic == pytest.approx(disp.ece, rel=1e-10)
    # The pooled top-label view stays one diagram.
    pooled = ReliabilityDisplay.from_estimator(clf, X, y, kind="top_label")
    assert pooled.curve.class_index is None


def _overlaps(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("show_histogram", [False, True])
def test_one_legend_per_figure_above_the_panels(show_histogram):
    """Ten panels, then a second model on them: one figure legend naming
    the diagonal and both models, outside every panel and title; no panel
    legend; each panel's title holds its class and each model's ECE."""
    y, sharp = multiclass(n=2000, k=10)
    _, flat = multiclass(n=2000, k=10, sharpen=1.0)
    grid = ReliabilityGridDisplay.from_predictions(
        y, sharp, name="sharp", n_bins=8, show_histogram=show_histogram
    )
    assert len(grid.figure_.legends) == 1
    over = ReliabilityGridDisplay.from_predictions(
        y, flat, name="flat", n_bins=8, ax=grid.axes_
    )
    fig = over.figure_
    panels = list(grid.axes_.ravel()[:10])
    hists = [d.ax_hist_ for d in grid.displays_ if d.ax_hist_ is not None]
    assert len(hists) == (10 if show_histogram else 0)
    assert fig.legends == [over.legend_]
    assert [ax.get_legend() for ax in fig.axes] == [None] * len(fig.axes)
    texts = [t.get_text() for t in over.legend_.get_texts()]
    assert texts == ["Perfectly calibrated", "sharp", "flat"]
    # the legend's handles are the curves (their colours)
    handles = over.legend_.legend_handles
    assert same_color(handles[1].get_color(), grid.displays_[0].line_.get_color())
    assert same_color(handles[2].get_color(), over.displays_[0].line_.get_color())
    for k, ax in enumerate(panels):
        a, b = (
            reliability_curve(y, p, kind="classwise", class_index=k, n_bins=8)
            for p in (sharp, flat)
        )
        assert ax.get_title().splitlines() == [
            f"class {k}",
            f"sharp (ECE = {ece_of_curve(a):.3f})",
            f"flat (ECE = {ece_of_curve(b):.3f})",
        ]
    # Drawn: the legend and each title clear every panel (and histogram).
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_window_extent(renderer) for ax in panels + hists]
    legend_box = over.legend_.get_window_extent(renderer)
    assert legend_box.y1 <= fig.bbox.y1 + 1
    assert not any(_overlaps(legend_box, box) for box in boxes)
    for ax in panels:
        title = ax.title.get_window_extent(renderer)
        assert not _overlaps(title, legend_box)
        assert not any(_overlaps(title, box) for box in boxes)
        assert title.y1 <= fig.bbox.y1


def test_a_nameless_curve_has_no_legend_entry():
    y, proba = multiclass(n=600, k=3)
    grid = ReliabilityGridDisplay.from_predictions(y, proba, n_bins=5)
    assert [t.get_text() for t in grid.legend_.get_texts()] == ["Perfectly calibrated"]
    assert all(ax.get_legend() is None for ax in grid.figure_.axes)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"classes": ["bird"]}, "classes must be"),
        ({"classes": []}, "classes must be"),
        ({"kind": "confidence"}, "kind must be"),
    ],
)
def test_bad_input(params, match):
    y, proba = multiclass(n=300)
    with pytest.raises(ValueError, match=match):
        ReliabilityGridDisplay.from_predictions(y, proba, **params)


def test_1d_input_and_too_few_axes():
    y, proba = multiclass(n=300, k=3)
    with pytest.raises(ValueError, match="one column of y_proba per class"):
        ReliabilityGridDisplay.from_predictions(y % 2, proba[:, 1])
    small = ReliabilityGridDisplay.from_predictions(y, proba, classes=[0, 1])
    with pytest.raises(ValueError, match="fewer than the 3 classes"):
        ReliabilityGridDisplay.from_predictions(y, proba, ax=small.axes_)
