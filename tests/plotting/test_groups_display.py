"""GroupReliabilityDisplay: one panel per group (or every group on one axes)
drawing exactly the curves of calibration_by_group, titled with the group,
its rows and its ECE."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.svm import LinearSVC

from skcalib.monitoring import calibration_by_group
from skcalib.plotting import GroupReliabilityDisplay

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _data(n=1200, k=2, seed=0):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(k), size=n)
    y = (rng.random(n)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
    g = rng.choice(np.array(["a", "b", "c", "d"], dtype="<U4"), size=n)
    g[:4] = "tiny"  # below min_group_size: no interval
    return np.minimum(y, k - 1), proba, g


def _xy(curve):
    keep = curve.nonempty
    return np.column_stack((curve.mean_confidence[keep], curve.accuracy[keep]))


def test_one_panel_per_group_with_its_curve_and_title():
    y, p, g = _data()
    disp = GroupReliabilityDisplay.from_predictions(
        y, p, g, n_bins=8, n_resamples=100, random_state=0
    )
    res = disp.result
    assert res.groups.tolist() == ["a", "b", "c", "d", "tiny"]
    assert disp.axes_.shape == (2, 3)
    visible = [ax.get_visible() for ax in disp.axes_.ravel()]
    assert visible == [True] * 5 + [False]
    assert len(disp.figure_.axes) == 6
    assert len(disp.displays_) == 5
    for i, (d, ax) in enumerate(zip(disp.displays_, disp.axes_.ravel(), strict=False)):
        assert d.ax_ is ax
        assert_allclose(d.line_.get_xydata(), _xy(res.curves[i]))
        assert d.intervals_ is not None  # per-bin intervals on panels
        head = f"{res.groups[i]} (n = {res.n[i]})"
        if res.note[i]:
            ece = f"ECE = {res.ece[i]:.3f}"
        else:
            ece = (
                f"ECE = {res.ece[i]:.3f} [{res.ece_low[i]:.3f}, {res.ece_high[i]:.3f}]"
            )
        assert ax.get_title() == f"{head}\n{ece}"
        # the diagonal and the curve; no legend on the panel
        curves = [ln for ln in ax.get_lines() if ln.get_marker() == "s"]
        assert len(curves) == 1 and ax.get_legend() is None
    assert disp.axes_[0, 1].get_ylabel() == ""
    assert disp.axes_[0, 0].get_ylabel() != ""
    assert [t.get_text() for t in disp.legend_.get_texts()] == ["Perfectly calibrated"]


def test_a_second_model_overlays_panel_by_panel():
    y, p, g = _data()
    sharp = p**2 / (p**2).sum(axis=1, keepdims=True)
    kw = {"n_bins": 6, "n_resamples": 50, "random_state": 0}
    first = GroupReliabilityDisplay.from_predictions(y, p, g, name="raw", **kw)
    second = GroupReliabilityDisplay.from_predictions(
        y, sharp, g, name="sharp", ax=first.axes_, **kw
    )
    assert second.axes_.ravel().tolist() == first.axes_.ravel().tolist()
    texts = [t.get_text() for t in second.legend_.get_texts()]
    assert texts == ["Perfectly calibrated", "raw", "sharp"]
    title = first.axes_[0, 0].get_title().splitlines()
    assert title[0].startswith("a (n = ")
    assert title[1].startswith("raw (ECE = ") and title[2].startswith("sharp (ECE = ")
    # one colour per model on every panel
    colors = {d.line_.get_color() for d in second.displays_}
    assert len(colors) == 1
    assert colors != {d.line_.get_color() for d in first.displays_}


def test_overlay_draws_every_group_on_one_axes():
    y, p, g = _data()
    disp = GroupReliabilityDisplay.from_predictions(
        y, p, g, n_bins=8, n_resamples=50, layout="overlay", show_histogram=True
    )
    res = disp.result
    assert disp.axes_.shape == (1, 1)
    ax = disp.axes_[0, 0]
    assert all(d.ax_ is ax for d in disp.displays_)
    assert len(disp.displays_) == len(res) == 5
    # the diagonal and one curve per group, no error bars by default
    assert len(ax.get_lines()) == 1 + len(res)
    assert all(d.intervals_ is None for d in disp.displays_)
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    assert labels[0] == "Perfectly calibrated"
    assert labels[1] == (
        f"a (n = {res.n[0]}) (ECE = {res.ece[0]:.3f} "
        f"[{res.ece_low[0]:.3f}, {res.ece_high[0]:.3f}])"
    )
    assert len(disp.figure_.axes) == 2  # the axes and the shared histogram panel
    for i, d in enumerate(disp.displays_):
        assert_allclose(d.line_.get_xydata(), _xy(res.curves[i]))


def test_classwise_panels_hold_every_class():
    y, p, g = _data(k=3)
    res = calibration_by_group(y, p, g, kind="classwise", n_bins=5, n_resamples=30)
    disp = GroupReliabilityDisplay.from_result(res)
    assert len(disp.displays_) == 3 * len(res)
    texts = [t.get_text() for t in disp.legend_.get_texts()]
    assert texts == ["Perfectly calibrated", "class 0", "class 1", "class 2"]
    for i, ax in enumerate(disp.axes_.ravel()[: len(res)]):
        panel = disp.displays_[3 * i : 3 * i + 3]
        for c, d in enumerate(panel):
            assert d.ax_ is ax
            assert_allclose(d.line_.get_xydata(), _xy(res.class_curves[i][c]))
        assert ax.get_title().splitlines()[1].startswith("classwise ECE = ")
    with pytest.raises(ValueError, match="layout='overlay' draws one curve per group"):
        GroupReliabilityDisplay.from_result(res, layout="overlay")


def test_bad_arguments():
    y, p, g = _data()
    res = calibration_by_group(y, p, g, n_resamples=20)
    with pytest.raises(ValueError, match="layout must be one of"):
        GroupReliabilityDisplay(result=res).plot(layout="grid")
    plt = matplotlib.pyplot
    _, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="ax holds 2 axes, fewer than the 5 groups"):
        GroupReliabilityDisplay(result=res).plot(ax=axes)
    svc = LinearSVC().fit(p, y)
    with pytest.raises(TypeError, match="LinearSVC has no predict_proba"):
        GroupReliabilityDisplay.from_estimator(svc, p, y, g)


def test_the_constructor_only_stores():
    y, p, g = _data()
    res = calibration_by_group(y, p, g, n_resamples=20)
    disp = GroupReliabilityDisplay(result=res, name="m")
    assert disp.result is res and disp.name == "m"
    assert not hasattr(disp, "axes_")
