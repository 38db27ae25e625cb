"""Sums of the proper scoring rules (Brier score, negative log-likelihood).

One implementation of each per-sample loss, in float64 whatever the dtype of
the probabilities. A chunk gives the additive sums ``[sum w, sum w * NLL,
sum w * Brier]`` (:func:`loss_sums`); the scores are their ratios
(:func:`brier_from_sums`, :func:`nll_from_sums`), for one array, for chunks
merged by :class:`~skcalib.metrics.CalibrationAccumulator` and for the
blocks of a Dask array alike.
"""

import numpy as np

__all__ = []  # private module

#: Rows per block of the multiclass Brier score (float64 work arrays).
_BRIER_BLOCK = 1 << 16
#: Floor of the true-class probability in the negative log-likelihood, for
#: every dtype of ``y_proba``: the machine epsilon of float64 (a zero
#: probability costs ``-log(NLL_FLOOR)`` = 36.04). scikit-learn's ``log_loss``
#: uses the same floor for float64 input (and that of float32 for float32).
NLL_FLOOR = float(np.finfo(np.float64).eps)
#: Entries of the loss sums: total weight, weighted NLL, weighted Brier sum.
LOSS_W, LOSS_NLL, LOSS_BRIER = range(3)


def multiclass_brier_sum(y, proba, w):
    """``sum_i w_i sum_k (p_ik - [y_i = k])**2`` in float64, by blocks of rows."""
    total = 0.0
    for start in range(0, y.size, _BRIER_BLOCK):
        diff = proba[start : start + _BRIER_BLOCK].astype(np.float64)
        diff[np.arange(diff.shape[0]), y[start : start + _BRIER_BLOCK]] -= 1.0
        rows = np.einsum("ij,ij->i", diff, diff)
        total += rows.sum() if w is None else rows @ w[start : start + _BRIER_BLOCK]
    return total


def sample_nll(y, proba):
    """``-log(max(p_true, NLL_FLOOR))`` of each sample, in float64.

    ``p_true`` is the probability of the true class (column ``y``; 1-D binary
    ``proba``: ``p`` for ``y == 1``, ``1 - p`` for ``y == 0``), converted to
    float64 before anything else, so that the rule is the same for every
    dtype.
    """
    if proba.ndim == 1:
        p = proba.astype(np.float64)
        p_true = np.where(y == 1, p, 1.0 - p)
    else:
        p_true = proba[np.arange(y.size), y].astype(np.float64)
    return -np.log(np.maximum(p_true, NLL_FLOOR))


def sample_brier(y, proba):
    """The Brier term of each sample, in float64: ``(p - [y = 1])**2`` of the
    positive class for two classes (1-D ``proba``, or its column 1), else
    ``sum_k (p_k - [y = k])**2`` (the terms that :func:`loss_sums` adds up)."""
    if proba.ndim == 1 or proba.shape[1] == 2:
        pos = proba if proba.ndim == 1 else proba[:, 1]
        return np.square(pos.astype(np.float64) - y)
    out = np.empty(y.size)
    for start in range(0, y.size, _BRIER_BLOCK):
        diff = proba[start : start + _BRIER_BLOCK].astype(np.float64)
        diff[np.arange(diff.shape[0]), y[start : start + _BRIER_BLOCK]] -= 1.0
        out[start : start + _BRIER_BLOCK] = np.einsum("ij,ij->i", diff, diff)
    return out


def _brier_sum(inp):
    """``sum_i w_i BS_i``: ``(p - y)**2`` of the positive class for two
    classes, ``sum_k (p_k - [y = k])**2`` otherwise."""
    p, y, w = inp.proba, inp.y, inp.sample_weight
    if inp.n_classes == 2:
        pos = p if p.ndim == 1 else p[:, 1]
        sq = np.square(pos.astype(np.float64) - y)
        return float(sq.sum() if w is None else sq @ w)
    return float(multiclass_brier_sum(y, p, w))


def loss_sums(inp, *, nll=True, brier=True):
    """``[sum w, sum w * NLL, sum w * Brier]`` of one chunk, in float64.

    The NLL of a sample is :func:`sample_nll`, the Brier term that of
    :func:`~skcalib.metrics.brier_score`; ``nll=False`` or ``brier=False``
    leaves that sum 0 (not computed). The weights are those of ``inp``
    (divided by ``inp.weight_scale``).
    """
    y, w = inp.y, inp.sample_weight
    sums = np.zeros(3)
    sums[LOSS_W] = float(y.size if w is None else w.sum())
    if nll:
        losses = sample_nll(y, inp.proba)
        sums[LOSS_NLL] = float(losses.sum() if w is None else losses @ w)
    if brier:
        sums[LOSS_BRIER] = _brier_sum(inp)
    return sums


def brier_from_sums(sums, n_classes, scale_by_half="auto"):
    """The Brier score of :func:`loss_sums` totals (as
    :func:`~skcalib.metrics.brier_score`)."""
    value = sums[LOSS_BRIER] / sums[LOSS_W]
    if n_classes == 2:
        return float(value if scale_by_half in ("auto", True) else 2.0 * value)
    return float(value / 2.0 if scale_by_half is True else value)


def nll_from_sums(sums):
    """The negative log-likelihood of :func:`loss_sums` totals."""
    return float(sums[LOSS_NLL] / sums[LOSS_W])
