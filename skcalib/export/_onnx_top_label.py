"""Top-label graphs: the predicted class gets the calibrated confidence and
the other classes share the rest in proportion to their probabilities,
capped so that the predicted class is kept
(:func:`skcalib.calibration._one_vs_rest.share_rest`, step for step)."""

import numpy as np

from skcalib._core.xp import to_numpy
from skcalib.export._onnx_graph import expit, log_softmax
from skcalib.export._onnx_scores import log_odds

__all__ = []  # private module


def either(g, cond, a, b):
    """``where(cond, a, b)`` of booleans (onnxruntime has no boolean Where)."""
    return g.op("Or", g.op("And", cond, a), g.op("And", g.op("Not", cond), b))


def take(g, x, index):
    """``x[rows, index]`` of a 2-D ``x`` (1-D result)."""
    picked = g.op("GatherElements", x, g.unsqueeze(index, 1), axis=1)
    return g.reduce("ReduceSum", picked, 1, keepdims=False)


def top_label_graph(g, cal, sc, scores, apply):
    """One-score maps with ``multi_class="top_label"``: map ``k`` calibrates
    the confidence of the rows whose predicted class is ``k``; a class
    without a map keeps its confidence."""
    log_proba = sc.log_proba
    top = g.argmax(log_proba)
    conf = take(g, scores, top)
    calibrated = g.exp(g.cast(take(g, log_proba, top), np.float64))
    for k, fitted in enumerate(cal.calibrators_):
        if fitted is None:
            continue
        mine = g.compare("Equal", top, np.int64(k))
        calibrated = g.where(mine, apply(g, cal, fitted, conf), calibrated)
    return share_rest(g, log_proba, top, calibrated, sc.n_classes, sc.dtype)


def scaling_binning_top_label(g, cal, sc, binned):
    """ScalingBinningCalibrator's top-label mode: the scaled confidence
    binned with one set of bins, the rest shared by the uncalibrated (Platt)
    or tempered (temperature) probabilities."""
    log_proba = g.cast(sc.log_proba, np.float64)
    top = g.argmax(log_proba)
    if cal.scaler_ == "temperature":
        shares = log_softmax(g, g.div(log_proba, float(cal.temperature_)))
        q = g.exp(take(g, shares, top))
    else:
        a = float(np.asarray(to_numpy(cal.coef_))[0])
        b = float(np.asarray(to_numpy(cal.intercept_))[0])
        conf = take(g, log_odds(g, log_proba, sc.n_classes), top)
        q = expit(g, g.add(g.mul(conf, a), b))
        shares = sc.log_proba
    return share_rest(g, shares, top, binned(g, cal, 0, q), sc.n_classes, sc.dtype)


def share_rest(g, log_proba, top, calibrated, n_classes, dtype):
    """The graph of :func:`~skcalib.calibration._one_vs_rest.share_rest`."""
    is_top = g.one_hot_rows(top, n_classes)
    calibrated = g.unsqueeze(g.maximum(calibrated, 1.0 / n_classes), 1)
    rest = g.where(is_top, -np.inf, g.cast(log_proba, np.float64))
    peak = g.reduce("ReduceMax", rest, 1)
    finite = g.compare("Less", g.op("Abs", peak), np.inf)
    share = g.exp(g.sub(rest, g.where(finite, peak, 0.0)))
    share = g.where(is_top, 0.0, g.where(finite, share, 1.0))
    total = g.reduce("ReduceSum", share, 1)
    remaining = g.sub(1.0, calibrated)
    over = g.compare("Greater", remaining, g.mul(calibrated, total))
    share = g.mul(share, g.div(remaining, total))
    capped = _cap_shares(g, share, is_top, calibrated, n_classes)
    share = g.where(is_top, calibrated, g.where(over, capped, share))
    return _break_ties(g, g.cast(share, dtype), top, n_classes)


def _cap_shares(g, share, is_top, cap, n_classes):
    """Water-filling (``_cap_shares``), computed for every row: shares
    ``min(cap, lambda * share)`` of the same total; ``cap`` is (n, 1)."""
    m = n_classes - 1
    total = g.reduce("ReduceSum", share, 1)
    # the top column's share is 0, the smallest: the m largest of the row
    # are the other classes' shares, sorted
    s = g.node(
        "TopK",
        [share, g.const([m], np.int64, "k")],
        2,
        [np.float64, np.int64],
        axis=1,
        largest=1,
        sorted=1,
    )[0]
    tail = g.op("CumSum", s, g.const(1, np.int64, "axis"), reverse=1)
    n_capped = np.arange(m, dtype=np.float64)
    left = g.sub(total, g.mul(cap, n_capped))
    positive = g.compare("Greater", tail, 0.0)
    scale = g.where(positive, g.div(left, g.where(positive, tail, 1.0)), 0.0)
    even = g.div(left, (m - n_capped).astype(np.float64))
    fits = either(
        g,
        positive,
        g.compare("LessOrEqual", g.mul(scale, s), cap),
        g.compare("LessOrEqual", even, cap),
    )
    last = np.zeros(m, dtype=bool)
    last[-1] = True
    fits = g.op("Or", fits, last)
    first = g.argmax(g.cast(fits, np.int32))
    lam, first_tail, first_even = (take(g, a, first) for a in (scale, tail, even))
    lam, first_tail, first_even = (
        g.unsqueeze(a, 1) for a in (lam, first_tail, first_even)
    )
    spread = g.where(g.compare("Greater", share, 0.0), cap, first_even)
    out = g.where(
        g.compare("Greater", first_tail, 0.0), g.minimum(cap, g.mul(lam, share)), spread
    )
    return g.where(is_top, 0.0, out)


def _break_ties(g, proba, top, n_classes):
    """Entries that would win ``argmax`` over the top class (above its
    value, or equal at a lower index) become the next float below it,
    ``c - c * 2**-p`` (exact: ``p`` the mantissa width plus one)."""
    c = g.unsqueeze(take(g, proba, top), 1)
    cols = g.const(np.arange(n_classes, dtype=np.int64), np.int64, "range")
    before = g.compare("Less", cols, g.unsqueeze(top, 1))
    reach = either(
        g, before, g.compare("GreaterOrEqual", proba, c), g.compare("Greater", proba, c)
    )
    half_ulp = 2.0**-24 if g.dtype(proba) == np.float32 else 2.0**-53
    below = g.sub(c, g.mul(c, half_ulp))
    return g.where(reach, below, proba)
