"""The drawn artists against numbers computed by hand, and the legend ECE:
the metric's value from the curve's own per-bin values, one binning pass."""

import sys

import numpy as np
import pytest
from _plot_helpers import multiclass
from numpy.testing import assert_allclose

import skcalib._core.binning as binning
from skcalib.metrics import expected_calibration_error, reliability_curve
from skcalib.plotting import ReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

# The example of reliability_curve's docstring: P(y = 1) of six samples in
# four equal bins (0, .25], (.25, .5], (.5, .75], (.75, 1] (the first with 0).
Y = np.array([0, 1, 1, 0, 1, 1])
P = np.array([0.1, 0.6, 0.8, 0.9, 0.8, 0.95])
# By hand, bin by bin: counts 1, 0, 1, 4; accuracy 0, -, 1, 3/4; mean
# probability 0.1, -, 0.6, (0.8 + 0.9 + 0.8 + 0.95) / 4 = 0.8625.
COUNTS = np.array([1.0, 0.0, 1.0, 4.0])
ACC = np.array([0.0, 1.0, 0.75])
CONF = np.array([0.1, 0.6, 0.8625])
ECE = (1 * 0.1 + 1 * 0.4 + 4 * 0.1125) / 6  # 0.158333...


def _wilson(p, n, z=1.959963984540054):
    """Textbook Wilson score interval (E. B. Wilson, JASA 1927), 95 %."""
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def _hand_display(**plot):
    return ReliabilityDisplay.from_predictions(
        Y, P, n_bins=4, kind="classwise", name="m", **plot
    )


def test_curve_gaps_and_legend_by_hand():
    disp = _hand_display(show_gaps=True)
    assert_allclose(disp.line_.get_xydata(), np.column_stack((CONF, ACC)))
    assert disp.ece == pytest.approx(ECE, rel=1e-12)
    assert disp.line_.get_label() == "m (ECE = 0.158)"
    texts = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert texts == ["Perfectly calibrated", "m (ECE = 0.158)"]
    # One gap bar per non-empty bin: the bin's width, from acc up to conf.
    bars = disp.gaps_.patches
    assert_allclose([b.get_x() for b in bars], [0.0, 0.5, 0.75])
    assert_allclose([b.get_width() for b in bars], [0.25] * 3)
    assert_allclose([b.get_y() for b in bars], ACC)
    assert_allclose([b.get_height() for b in bars], [0.1, -0.4, 0.1125])
    assert disp.ax_.get_xlim() == pytest.approx((-0.02, 1.02))
    assert disp.ax_.get_ylim() == pytest.approx((-0.02, 1.02))
    assert disp.ax_.get_xlabel() == "Mean predicted probability (class 1)"
    assert disp.ax_.get_ylabel() == "Fraction of positives"


@pytest.mark.parametrize(
    "histogram, heights, ylabel",
    [
        ("counts", COUNTS, "Count"),
        # density: count / (n * width) = count / 1.5, integrating to 1
        ("density", COUNTS / 1.5, "Density"),
    ],
)
def test_histogram_bars_by_hand(histogram, heights, ylabel):
    disp = _hand_display(show_histogram=True, histogram=histogram, histtype="bar")
    bars = disp.hist_.patches
    assert_allclose([b.get_x() for b in bars], [0.0, 0.25, 0.5, 0.75])
    assert_allclose([b.get_height() for b in bars], heights)
    # counts add up to the 6 samples; the density's area is 1
    area = sum(b.get_height() * b.get_width() for b in bars)
    assert area == pytest.approx(6 * 0.25 if histogram == "counts" else 1.0)
    assert disp.ax_hist_.get_ylabel() == ylabel
    # The x label moves under the panel.
    assert disp.ax_.get_xlabel() == ""
    assert disp.ax_hist_.get_xlabel() == "Mean predicted probability (class 1)"
    # The default step outline has the same heights on the same edges.
    step = _hand_display(show_histogram=True, histogram=histogram)
    values, edges, baseline = step.hist_.get_data()
    assert_allclose(values, heights)
    assert_allclose(edges, [0.0, 0.25, 0.5, 0.75, 1.0])
    assert baseline == 0 and not step.hist_.get_fill()


def test_point_bin_drawn_on_a_sliver():
    # A bin [0, 0] has no width: drawn 0.01 wide, its density 2 / (4 * 0.01).
    disp = ReliabilityDisplay(
        prob_true=[0.0, 0.5, 1.0],
        prob_pred=[0.0, 0.3, 0.8],
        counts=[2, 1, 1],
        edges=[0.0, 0.0, 0.5, 1.0],
    ).plot(show_histogram=True, histogram="density")
    bars = disp.hist_.patches
    assert_allclose([b.get_width() for b in bars], [0.01, 0.5, 0.5])
    assert_allclose([b.get_height() for b in bars], [50.0, 0.5, 0.5])


def test_interval_bars_by_hand():
    disp = _hand_display(show_intervals=True)
    (segments,) = disp.intervals_.lines[2]
    ends = np.array([seg[:, 1] for seg in segments.get_segments()])
    lo, hi = _wilson(np.array([0.0, 1.0, 0.75]), np.array([1.0, 1.0, 4.0]))
    assert_allclose(ends, np.column_stack((np.maximum(lo, 0), np.minimum(hi, 1))))
    # p = 0 with one sample: [0, z^2 / (1 + z^2)].
    z2 = 1.959963984540054**2
    assert ends[0, 1] == pytest.approx(z2 / (1 + z2))
    assert_allclose([seg[0, 0] for seg in segments.get_segments()], CONF)


# ---------------------------------------------------------------- legend ECE
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_legend_ece_equals_the_metric(strategy, weighted):
    y, proba = multiclass(n=1500)
    w = np.random.default_rng(3).uniform(0, 4, y.size) if weighted else None
    kw = {"n_bins": 12, "strategy": strategy, "sample_weight": w}
    disp = ReliabilityDisplay.from_predictions(y, proba, **kw)
    ece = expected_calibration_error(y, proba, **kw)
    assert disp.ece == pytest.approx(ece, rel=1e-12, abs=1e-12)
    # Top-label with a class: the confidence ECE of the samples predicted
    # as that class, in the same bins.
    for c in range(proba.shape[1]):
        disp = ReliabilityDisplay.from_predictions(
            y, proba, kind="top_label", class_index=c, **kw
        )
        sel = proba.argmax(axis=1) == c
        ref = expected_calibration_error(
            y[sel],
            proba[sel],
            labels=np.arange(proba.shape[1]),
            n_bins=12,
            strategy=strategy,
            sample_weight=None if w is None else w[sel],
        )
        assert disp.ece == pytest.approx(ref, rel=1e-12, abs=1e-12)


def _count_assign_bins(monkeypatch):
    """Count the calls to the one bin-assignment function, wherever a module
    of skcalib holds it."""
    calls = []
    original = binning.assign_bins

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("skcalib") and module is not None:
            for attr, value in list(vars(module).items()):
                if value is original:
                    monkeypatch.setattr(module, attr, counting)
    return calls


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"strategy": "quantile"},
        {"kind": "classwise", "class_index": 2},
        {"kind": "top_label", "class_index": 1, "strategy": "quantile"},
    ],
)
def test_one_binning_pass(monkeypatch, params):
    y, proba = multiclass(n=800)
    calls = _count_assign_bins(monkeypatch)
    reliability_curve(y, proba, **params)
    curve_calls = len(calls)
    assert curve_calls > 0  # the counter sees the binning
    calls.clear()

    def no_second_pass(*args, **kwargs):
        raise AssertionError("the legend ECE binned the data again")

    monkeypatch.setattr(
        "skcalib.plotting._display_data.expected_calibration_error", no_second_pass
    )
    ReliabilityDisplay.from_predictions(y, proba, **params)
    assert len(calls) == curve_calls


def test_top_label_without_class_bins_per_predicted_class(monkeypatch):
    # The one exception: the top-label ECE needs cells per predicted class,
    # which the pooled curve drawn does not have; the metric bins again.
    y, proba = multiclass(n=800)
    calls = _count_assign_bins(monkeypatch)
    reliability_curve(y, proba)
    expected_calibration_error(y, proba, kind="top_label")
    both = len(calls)
    calls.clear()
    disp = ReliabilityDisplay.from_predictions(y, proba, kind="top_label")
    assert len(calls) == both
    ece = expected_calibration_error(y, proba, kind="top_label")
    assert disp.ece == pytest.approx(ece, rel=1e-12)
