"""Graphs of the one-score calibrators (Platt, beta, isotonic, histogram
binning) and of their multiclass strategies
(:mod:`skcalib.calibration._one_vs_rest`): one map on the positive class,
or one map per class then each row divided by its sum (``"ovr"``), or
top-label (:mod:`skcalib.export._onnx_top_label`).

The maps compute in float64, as the numpy code does, whatever the dtype of
the scores; bin lookups compare in the dtype of the score they look up (the
input's for probability scores), as :func:`skcalib._core.binning.lookup_bins`
does, so every score lands in the bin numpy gives it.
"""

import numpy as np

from skcalib._core.xp import to_numpy
from skcalib.calibration import (
    BetaCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
)
from skcalib.calibration._one_vs_rest import OUTPUT_EPS
from skcalib.export._onnx_graph import expit, log_expit, sorted_count
from skcalib.export._onnx_scores import log_odds

__all__ = []  # private module

#: A float32 graph is refused when rounding a map's knots to float32
#: changes the map's value at one of its own knots (or bin middles) by more.
FLOAT32_KNOT_TOLERANCE = 1e-5


def _host(array):
    return np.asarray(to_numpy(array))


# --------------------------------------------------------------------- maps
def platt_map(g, fitted, score):
    a, b = (float(v) for v in _host(fitted)[:2])
    return expit(g, g.add(g.mul(score, a), b))


def beta_map(g, fitted, score):
    """``expit(a log expit(s) - b log expit(-s) + c)``."""
    a, b, c = (float(v) for v in _host(fitted)[:3])
    z = g.sub(g.mul(log_expit(g, score), a), g.mul(log_expit(g, g.op("Neg", score)), b))
    return expit(g, g.add(z, c))


def isotonic_map(g, fitted, score):
    """``numpy.interp(s, x, y)``: constant outside the knots, and between
    knots ``j`` and ``j + 1`` the slope ``(y[j+1] - y[j]) / (x[j+1] - x[j])``
    times ``s - x[j]``, plus ``y[j]`` (numpy's formula; a score on a knot
    gets the knot's value exactly)."""
    x = _host(fitted.X_thresholds_).astype(np.float64)
    y = _host(fitted.y_thresholds_).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.append((y[1:] - y[:-1]) / (x[1:] - x[:-1]), 0.0)
    s = g.maximum(score, x[0])  # below the first knot: its value
    j = g.sub(sorted_count(g, x, s, strict=False), np.int64(1))
    xj = g.gather(x, j)
    value = g.add(g.mul(g.gather(slope, j), g.sub(s, xj)), g.gather(y, j))
    return g.where(g.compare("Equal", s, xj), g.gather(y, j), value)


def histogram_map(g, fitted, score, table=None):
    """``table[bin]`` (the map's bin values by default), the bin of a score
    the number of interior edges (in the score's dtype) below it: bins
    ``(e_j, e_j+1]``, the first ``[0, e_1]``, as
    :func:`~skcalib._core.binning.lookup_bins`."""
    edges, proba = (_host(a) for a in fitted)
    interior = np.ascontiguousarray(edges[1:-1], dtype=g.dtype(score))
    check_float32_bins(g, edges, proba, g.dtype(score))
    index = sorted_count(g, interior, score, strict=True)
    return g.gather(proba.astype(np.float64) if table is None else table, index)


def check_float32_bins(g, edges, proba, dtype):
    """Refuse float32 lookups that miss a bin: the value at the middle of
    every bin, looked up with float32 edges, must be within
    :data:`FLOAT32_KNOT_TOLERANCE` of the bin's value."""
    if np.dtype(dtype) != np.float32 or edges.size < 3:
        return
    middles = 0.5 * (edges[:-1] + edges[1:])
    interior = edges[1:-1].astype(np.float32)
    found = proba[np.searchsorted(interior, middles.astype(np.float32), side="left")]
    change = np.abs(found - proba)
    worst = int(np.argmax(change))
    if change[worst] > FLOAT32_KNOT_TOLERANCE:
        raise ValueError(
            f"{g.owner} cannot be exported with dtype=np.float32: its bin "
            f"({float(edges[worst])!r}, {float(edges[worst + 1])!r}] is too narrow "
            "for float32 "
            "(predict_proba on float32 scores, and the float32 graph, round its "
            f"edges to float32), which changes the value in its middle by "
            f"{change[worst]:.3g} > {FLOAT32_KNOT_TOLERANCE:g}. Export with "
            "dtype=np.float64."
        )


MAPS = {
    PlattCalibrator: platt_map,
    BetaCalibrator: beta_map,
    IsotonicCalibrator: isotonic_map,
    HistogramBinningCalibrator: histogram_map,
}


# --------------------------------------------------------------- strategies
def _apply(g, cal, fitted, score):
    """The map's float64 output, clipped to ``[1e-12, 1 - 1e-12]`` unless
    the map clips itself (``_OneVsRestCalibrator._apply``)."""
    out = g.cast(MAPS[type(cal)](g, fitted, score), np.float64)
    if cal._map_output_clipped:
        return out
    return g.minimum(g.maximum(out, OUTPUT_EPS), 1.0 - OUTPUT_EPS)


def _binary(g, cal, sc):
    fitted = cal.calibrators_[0]
    if type(cal) is HistogramBinningCalibrator:
        # both columns from one lookup of a two-column table in the dtype
        # of the scores (HistogramBinningCalibrator._binary_proba)
        proba = _host(fitted[1])
        table = np.column_stack((1.0 - proba, proba)).astype(sc.dtype)
        return histogram_map(g, fitted, sc.positive_proba, table)
    score = sc.positive_proba if cal._map_input == "proba" else sc.positive_log_odds
    p1 = _apply(g, cal, fitted, score)
    return g.concat_columns([g.cast(g.sub(1.0, p1), sc.dtype), g.cast(p1, sc.dtype)])


def map_scores(g, cal, sc):
    """The ``(n, K)`` scores of the per-class maps: probabilities, or the
    float64 log-odds of the log-probabilities."""
    if cal._map_input == "proba":
        return sc.proba
    return log_odds(g, g.cast(sc.log_proba, np.float64), sc.n_classes)


def one_vs_rest_graph(g, cal, sc):
    if sc.n_classes == 2 and cal.multi_class == "ovr":
        return _binary(g, cal, sc)
    if cal.multi_class != "ovr":
        from skcalib.export._onnx_top_label import top_label_graph

        return top_label_graph(g, cal, sc, map_scores(g, cal, sc), _apply)
    scores = map_scores(g, cal, sc)
    columns = [
        _apply(g, cal, fitted, g.column(scores, k))
        for k, fitted in enumerate(cal.calibrators_)
    ]
    proba = g.concat_columns(columns)
    proba = g.div(proba, g.reduce("ReduceSum", proba, 1))
    return g.cast(proba, sc.dtype)
