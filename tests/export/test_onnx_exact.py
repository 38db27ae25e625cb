"""Where the ONNX graphs agree with the numpy code exactly, and where not.

Exactly: the bin of every given probability, at every edge and its float
neighbours (right-closed bins, the first one closed); isotonic values at
the knots of a 1-D logit; the searchsorted counts, numpy's row sums (so
renormalised probabilities are the same floats); scaling-binning's bins of
40-bit keys; top-label shares, capped and tie-broken. Not exactly: a bin
or knot lookup of a value computed through exp and log, which onnxruntime
and numpy round differently; a row that changes bins is within a few
units in the last place of an edge.
"""

import warnings

import numpy as np
import pytest

pytest.importorskip(
    "onnx", reason="the onnx extra is not installed (pip install '.[onnx]')"
)

from onnx import helper  # noqa: E402

from skcalib import (  # noqa: E402
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    ScalingBinningCalibrator,
)
from skcalib.calibration._scaling_binning import _bin_key  # noqa: E402
from skcalib.datasets import load_predictions  # noqa: E402
from skcalib.export import to_onnx  # noqa: E402
from skcalib.export._onnx_graph import Graph, sorted_count, tensor_type  # noqa: E402
from skcalib.export._onnx_scaling_binning import (  # noqa: E402
    _binned,
    key_upper_bounds,
)
from skcalib.export._onnx_scores import numpy_row_sum  # noqa: E402


def _model(g, x_dtype, out, shape_in=("N",)):
    """A model of the builder's nodes, input ``X``, output ``Y``."""
    g.nodes.append(helper.make_node("Identity", [out], ["Y"]))
    graph = helper.make_graph(
        g.nodes,
        "test",
        [helper.make_tensor_value_info("X", tensor_type(x_dtype), list(shape_in))],
        [helper.make_tensor_value_info("Y", tensor_type(g.dtype(out)), None)],
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", g.opset)]
    return helper.make_model(
        graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)
    )


def _neighbours(values, dtype):
    """Each value, in ``dtype``, with its next float below and above."""
    v = np.asarray(values, dtype=dtype)
    return np.concatenate(
        [np.nextafter(v, dtype(-np.inf)), v, np.nextafter(v, dtype(2))]
    )


# ------------------------------------------------------------------ bins
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "params",
    [
        {"strategy": "uniform", "n_bins": 4},  # one comparison per edge
        {"strategy": "uniform", "n_bins": 10},  # the binary search
        {"strategy": "quantile", "n_bins": 15},
        {"strategy": "hybrid", "n_bins": 20},
        {"strategy": "uniform", "n_bins": 100},
    ],
)
def test_given_probabilities_take_numpys_bin_at_every_edge(run_onnx, params, dtype):
    data = load_predictions("kitti_random_forest")  # 195 distinct values
    p, y = data.probs[:3000, 1].astype(np.float64), data.labels[:3000]
    cal = HistogramBinningCalibrator(**params).fit(p, y)
    edges = cal.bin_edges_[0]
    values = np.clip(_neighbours(np.r_[edges, p[:200]], dtype), 0, 1).astype(dtype)
    for X in (values, np.column_stack((1 - values, values))):
        model = to_onnx(cal, dtype=dtype, n_features=None if X.ndim == 1 else 2)
        out = run_onnx(model, X)["probabilities"]
        # binary histogram binning returns a table row: bit for bit
        np.testing.assert_array_equal(out, cal.predict_proba(X))
    # on every edge: the value of the bin that ends there (right-closed)
    on_edges = np.asarray(edges[1:-1], dtype=dtype)
    if dtype == np.float64:
        np.testing.assert_array_equal(
            run_onnx(to_onnx(cal, dtype=dtype), on_edges)["probabilities"][:, 1],
            cal.bin_proba_[0][: on_edges.size],
        )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_multiclass_probabilities_take_numpys_bins_at_edges(run_onnx, dtype):
    rng = np.random.default_rng(0)
    k = 4
    y = rng.integers(0, k, 2000)
    z = 2.0 * (rng.normal(size=(2000, k)) + np.eye(k)[y])
    p = np.round(np.exp(z) / np.exp(z).sum(1, keepdims=True), 2)
    p /= p.sum(axis=1, keepdims=True)  # renormalised rows: numpy's row sums
    cal = HistogramBinningCalibrator(strategy="quantile", n_bins=12).fit(p, y)
    edges = np.unique(np.concatenate(cal.bin_edges_))
    v = np.clip(_neighbours(edges, dtype), 0, 1).astype(np.float64)
    rows = np.column_stack([v] + [(1 - v) / (k - 1)] * (k - 1)).astype(dtype)
    rows = np.vstack([rows, p.astype(dtype)])
    out = run_onnx(to_onnx(cal, dtype=dtype), rows)["probabilities"]
    tol = 1e-12 if dtype == np.float64 else 1e-6  # a bin apart is > 1e-3 here
    assert np.abs(out - cal.predict_proba(rows)).max() <= tol


def test_numpy_row_sum_adds_in_numpys_order(run_onnx):
    rng = np.random.default_rng(0)
    for k in (2, 3, 7, 8, 9, 16, 17, 100, 129, 300):
        x = rng.random((500, k)) * rng.choice([1e-9, 1.0, 1e3], (500, k))
        g = Graph(18)
        g.declare("X", np.float64)
        total = numpy_row_sum(g, [g.column("X", j) for j in range(k)])
        out = run_onnx(_model(g, np.float64, total, ("N", k)), x)["Y"]
        np.testing.assert_array_equal(out, x.sum(axis=1))


@pytest.mark.parametrize("size", [0, 1, 4, 5, 32, 33, 64, 100, 255, 256])
def test_sorted_count_is_searchsorted(run_onnx, size):
    rng = np.random.default_rng(size)
    table = np.sort(np.round(rng.random(size), 2))  # ties
    x = np.r_[rng.random(300), table, np.nextafter(table, 2), np.nextafter(table, -1)]
    for strict, side in ((True, "left"), (False, "right")):
        g = Graph(18)
        g.declare("X", np.float64)
        model = _model(g, np.float64, sorted_count(g, table, "X", strict))
        np.testing.assert_array_equal(
            run_onnx(model, x)["Y"], np.searchsorted(table, x, side=side)
        )


def test_scaling_binning_key_bounds_give_numpys_bins(run_onnx):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 3000)
    s = 2.0 * rng.normal(size=3000) + 2.0 * y
    cal = ScalingBinningCalibrator(n_bins=50).fit(s, y)
    edges = cal.bin_edges_[0][1:-1]
    bounds = key_upper_bounds(edges)
    assert np.all(_bin_key(bounds) <= edges)
    assert np.all(_bin_key(np.nextafter(bounds, 2.0)) > edges)
    # q on, and a few ulps around, every edge and bound
    near = [edges, bounds]
    for _ in range(3):
        near += [np.nextafter(near[-2], 2.0), np.nextafter(near[-1], -1.0)]
    q = np.concatenate(near + [rng.random(500)])
    g = Graph(18)
    g.declare("X", np.float64)
    out = run_onnx(_model(g, np.float64, _binned(g, cal, 0, "X")), q)["Y"]
    full = cal.bin_edges_[0]
    expected = cal.bin_proba_[0][np.searchsorted(full[1:-1], _bin_key(q), side="left")]
    np.testing.assert_array_equal(out, expected)


# ----------------------------------------------------------------- knots
def test_isotonic_is_numpy_interp_at_its_knots(run_onnx):
    data = load_predictions("kitti_random_forest")
    p = data.probs[:3000, 1].astype(np.float64)
    s = np.log(np.maximum(p, 1e-12)) - np.log(np.maximum(1 - p, 1e-12))
    for method in ("pav", "centered"):
        cal = IsotonicCalibrator(method=method).fit(s, data.labels[:3000])
        knots = cal.calibrators_[0].X_thresholds_
        x = np.r_[_neighbours(knots, np.float64), knots[0] - 5, knots[-1] + 5]
        out = run_onnx(to_onnx(cal, dtype=np.float64), x)["probabilities"]
        assert np.abs(out - cal.predict_proba(x)).max() <= 1e-15


def test_computed_lookups_change_bins_only_next_to_an_edge(run_onnx):
    # logits of a random forest's probabilities: discrete log-odds, whose
    # expit (exp rounded by onnxruntime or numpy) sits on the quantile edges
    data = load_predictions("kitti_random_forest")
    p = data.probs[:3000].astype(np.float64)
    logits = 1.3 * np.log(np.maximum(p, 1e-12))
    s = logits[:, 1] - logits[:, 0]
    cal = HistogramBinningCalibrator(strategy="quantile", n_bins=100).fit(
        s, data.labels[:3000]
    )
    out = run_onnx(to_onnx(cal, dtype=np.float64), s)["probabilities"][:, 1]
    expected = cal.predict_proba(s)[:, 1]
    moved = np.flatnonzero(out != expected)
    assert moved.size <= 0.05 * s.size  # 2.1% with numpy 2.4, onnxruntime 1.32
    for i in moved:  # the graph's value is numpy's a few ulps away
        nearby = [s[i]]
        for _ in range(4):
            nearby += [np.nextafter(nearby[-1], np.inf)]
        nearby += [s[i]]
        for _ in range(4):
            nearby += [np.nextafter(nearby[-1], -np.inf)]
        assert out[i] in cal.predict_proba(np.array(nearby))[:, 1]


# ------------------------------------------------------------- top label
def test_top_label_shares_are_capped_and_tie_broken_as_numpy(run_onnx):
    # predictions mostly wrong: calibrated confidences below the other
    # classes' shares, so water-filling caps them, and below 1 / K
    rng = np.random.default_rng(0)
    k, n = 4, 3000
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[(y + 1) % k]  # wrong top
    z[:, 0] += 0.7 * np.eye(k)[y][:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = PlattCalibrator(multi_class="top_label").fit(z, y)
    proba = cal.predict_proba(z)
    top = np.argmax(z, axis=1)
    rows = np.arange(n)
    others = proba.copy()
    others[rows, top] = -1
    capped = np.isclose(others.max(axis=1), proba[rows, top], rtol=1e-12, atol=0)
    assert capped.sum() > 50  # the water-filling path runs
    assert np.array_equal(np.argmax(proba, axis=1), top)
    for dtype in (np.float64, np.float32):
        X = z.astype(dtype)
        out = run_onnx(to_onnx(cal, dtype=dtype), X)
        tol = 1e-12 if dtype == np.float64 else 1e-6
        assert np.abs(out["probabilities"] - cal.predict_proba(X)).max() <= tol
        # the predicted class is kept, ties broken towards it
        assert np.array_equal(np.argmax(out["probabilities"], axis=1), top)
