"""Scaling-binning on an array-API namespace (torch, CuPy, array-api-strict):
the Platt scaler and the equal-mass bins of its output on the device.

The counterpart of :class:`~skcalib.calibration.ScalingBinningCalibrator`'s
numpy fit and predict for ``scaler="platt"`` (the default), ``split=None``
(the default) and the binary and one-vs-rest maps, step for step: the
scalers' Newton passes of :func:`~skcalib._core.xp.solvers_logistic.xp_fit_platt`,
the bin keys of :func:`_xp_bin_key` (the scaled probabilities rounded to 40
significant bits, as numpy's ``frexp``/``ldexp``), the weighted quantile
edges and per-bin sums of :mod:`skcalib._core.xp.binning`.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcalib._core.xp import to_numpy
from skcalib._core.xp.binning import (
    sorted_scores,
    xp_binned_sums,
    xp_lookup_bins,
    xp_quantile_edges,
)
from skcalib._core.xp.solvers_logistic import xp_fit_platt
from skcalib._core.xp.weights import xp_unit_weights
from skcalib.calibration._one_vs_rest import OUTPUT_EPS, _xp_columns, _xp_log_odds

__all__ = []  # private module


def _times_power_of_two(x, e):
    """``x * 2**e`` for a float array ``e`` of integers, in two factors so
    that neither overflows or underflows (one rounding, as ``ldexp``)."""
    half = e // 2.0
    return (x * 2.0**half) * 2.0 ** (e - half)


def _xp_bin_key(xp, q):
    """:func:`~skcalib.calibration._scaling_binning._bin_key` on the device:
    ``q`` (float64, in ``[0, 1]``) rounded to 40 significant bits. The
    exponent of ``frexp`` is ``floor(log2 q) + 1``, corrected by one where
    ``log2`` rounds across a power of two."""
    positive = q > 0
    safe = xp.where(positive, q, 1.0)
    e = xp.floor(xp.log2(safe)) + 1.0
    m = _times_power_of_two(safe, -e)
    e = xp.where(m >= 1.0, e + 1.0, xp.where(m < 0.5, e - 1.0, e))
    m = _times_power_of_two(safe, -e)  # in [0.5, 1): exact
    key = _times_power_of_two(xp.round(m * 2.0**40), e - 40.0)
    return xp.where(positive, key, q)


def device_fit(est, scores, y, sample_weight):
    """Fit the Platt scaler and the bins of ``est`` on the device."""
    ns, xp = scores.ns, scores.xp
    acc = ns.accumulate_dtype
    n = scores.n_samples
    w = sample_weight
    if w is None:
        w = xp.ones(n, dtype=acc, device=ns.device)
    keep = w > 0
    if not bool(xp.all(keep)):  # the rows of positive weight, for both steps
        w, y = w[keep], y[keep]
        odds = [s[keep] for s in _map_log_odds(scores)]
    else:
        odds = _map_log_odds(scores)
    binary = len(odds) == 1
    coef, intercept = [], []
    for k, s in enumerate(odds):
        a, b, _, converged = xp_fit_platt(ns, s, y == (1 if binary else k), w)
        if not converged:
            warnings.warn(
                "Platt scaling did not converge.", ConvergenceWarning, stacklevel=6
            )
        coef.append(float(a))
        intercept.append(float(b))
    est.coef_, est.intercept_ = np.array(coef), np.array(intercept)
    w2 = xp_unit_weights(ns, w)[0]
    est.bin_edges_, est.bin_proba_, est.bin_counts_ = [], [], []
    for s, a, b in zip(odds, coef, intercept, strict=True):
        q = 1.0 / (1.0 + xp.exp(-(a * s + b)))
        order, key, wk = sorted_scores(ns, _xp_bin_key(xp, q), w2)
        edges = xp_quantile_edges(ns, key, est.n_bins, wk)
        counts, sums = xp_binned_sums(ns, key, edges, wk, xp.take(q, order))
        midpoints = 0.5 * (edges[:-1] + edges[1:])
        filled = counts > 0
        proba = np.where(filled, sums / np.where(filled, counts, 1.0), midpoints)
        est.bin_edges_.append(edges)
        est.bin_proba_.append(np.clip(proba, OUTPUT_EPS, 1.0 - OUTPUT_EPS))
        est.bin_counts_.append(counts)


def _map_log_odds(scores):
    """The log-odds each Platt map scales (accumulation dtype): the positive
    class's for two classes, every class's for one-vs-rest."""
    xp = scores.xp
    if scores.n_classes == 2:
        return [scores.positive_log_odds]
    log_proba = xp.astype(scores.log_proba, scores.ns.accumulate_dtype)
    return _xp_columns(xp, _xp_log_odds(xp, log_proba))


def device_predict_proba(est, scores):
    """``est.predict_proba`` on the device (binary and one-vs-rest)."""
    ns, xp = scores.ns, scores.xp
    coef = np.asarray(to_numpy(est.coef_), dtype=np.float64)
    intercept = np.asarray(to_numpy(est.intercept_), dtype=np.float64)
    columns = []
    for k, s in enumerate(_map_log_odds(scores)):
        q = 1.0 / (1.0 + xp.exp(-(float(coef[k]) * s + float(intercept[k]))))
        key = _xp_bin_key(xp, q)
        columns.append(xp_lookup_bins(ns, key, est.bin_edges_[k], est.bin_proba_[k]))
    if len(columns) == 1:
        p1 = xp.astype(columns[0], ns.accumulate_dtype)
        return xp.astype(xp.stack((1.0 - p1, p1), axis=1), scores.dtype)
    proba = xp.astype(xp.stack(columns, axis=1), ns.accumulate_dtype)
    return xp.astype(proba / xp.sum(proba, axis=1, keepdims=True), scores.dtype)
