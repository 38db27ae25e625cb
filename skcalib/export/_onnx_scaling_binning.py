"""The graph of :class:`~skcalib.ScalingBinningCalibrator`: the scaler (Platt
or temperature, float64), then a bin lookup of the scaled probability.

The numpy code chooses the bin of a scaled probability ``q`` from its value
rounded to 40 significant bits (``_bin_key``), which ONNX cannot round. The
rounding is monotone, so ``key(q) > e`` exactly when ``q > u(e)``, with
``u(e)`` the largest float64 whose key is at most ``e``: the graph compares
``q`` with ``u`` of every interior edge, found at export by a binary search
over the float64 values near ``e``, and the bins are the numpy code's.
"""

import numpy as np

from skcalib._core.xp import to_numpy
from skcalib.calibration._scaling_binning import _bin_key
from skcalib.export._onnx_graph import expit, softmax, sorted_count
from skcalib.export._onnx_scores import log_odds

__all__ = []  # private module


def key_upper_bounds(edges):
    """``u(e)``: the largest float64 ``q >= 0`` with ``_bin_key(q) <= e``,
    for every ``e >= 0`` of ``edges`` (float64, non-decreasing).

    Positive float64 values order as their bit patterns, so the search runs
    on the integers: from a ``lo`` whose key is at most ``e`` and a ``hi``
    whose key is above it, halving the gap until they are neighbours.
    """
    edges = np.asarray(edges, dtype=np.float64)
    lo = np.zeros(edges.shape, dtype=np.int64)  # the bits of 0.0: key 0 <= e
    hi = np.full(edges.shape, np.float64(2.0).view(np.int64))  # key 2 > e
    # Start near e (keys are within 2**-40 of their value): 52 halvings
    # would do from the whole range, about 14 from here.
    near_lo = (edges * (1.0 - 2.0**-36)).view(np.int64)
    near_hi = (edges * (1.0 + 2.0**-36) + 2.0**-1060).view(np.int64)
    lo = np.where(_key(near_lo) <= edges, near_lo, lo)
    hi = np.where(_key(near_hi) > edges, near_hi, hi)
    while np.any(hi - lo > 1):
        mid = lo + (hi - lo) // 2
        below = _key(mid) <= edges
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return lo.view(np.float64)


def _key(bits):
    return _bin_key(np.asarray(bits, dtype=np.int64).view(np.float64))


def _binned(g, cal, k, q):
    """``bin_proba_[k]`` of the bin of ``q`` (float64, shape (n,))."""
    edges = np.asarray(to_numpy(cal.bin_edges_[k]), dtype=np.float64)
    bounds = key_upper_bounds(edges[1:-1])
    index = sorted_count(g, bounds, q, strict=True)
    return g.gather(np.asarray(to_numpy(cal.bin_proba_[k]), dtype=np.float64), index)


def _scaled(g, cal, sc, mode):
    """The scaled probabilities (``ScalingBinningCalibrator._scaled``):
    shape (n,) for a binary map, (n, K) for ``"ovr"``."""
    temperature = cal.scaler_ == "temperature"
    if mode == "binary":
        s = sc.positive_log_odds
        if temperature:
            return expit(g, g.div(s, float(cal.temperature_)))
        a = float(np.asarray(to_numpy(cal.coef_))[0])
        b = float(np.asarray(to_numpy(cal.intercept_))[0])
        return expit(g, g.add(g.mul(s, a), b))
    log_proba = g.cast(sc.log_proba, np.float64)
    if temperature:
        return softmax(g, g.div(log_proba, float(cal.temperature_)))
    coef = np.asarray(to_numpy(cal.coef_), dtype=np.float64)
    intercept = np.asarray(to_numpy(cal.intercept_), dtype=np.float64)
    odds = log_odds(g, log_proba, sc.n_classes)
    return expit(g, g.add(g.mul(odds, coef), intercept))


def scaling_binning_graph(g, cal, sc):
    mode = cal._mode(sc.n_classes)
    if mode == "top_label":
        from skcalib.export._onnx_top_label import scaling_binning_top_label

        return scaling_binning_top_label(g, cal, sc, _binned)
    q = _scaled(g, cal, sc, mode)
    if mode == "binary":
        p1 = _binned(g, cal, 0, q)
        return g.concat_columns(
            [g.cast(g.sub(1.0, p1), sc.dtype), g.cast(p1, sc.dtype)]
        )
    columns = [_binned(g, cal, k, g.column(q, k)) for k in range(sc.n_classes)]
    proba = g.concat_columns(columns)
    return g.cast(g.div(proba, g.reduce("ReduceSum", proba, 1)), sc.dtype)
