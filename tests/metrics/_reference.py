"""Naive per-sample Python reference implementations of the binned metrics.

Written independently of skcalib's vectorised code (plain loops, dicts), to
check it value for value. Slow: for a few hundred samples only.
"""

import math

import numpy as np


def ref_edges(values, n_bins, strategy="uniform", weights=None):
    """Bin edges: uniform, or the (weighted) inverted-CDF quantiles of the
    values of positive weight, merged, without an edge at the largest value
    (it would open an empty top bin); a quantile at 0 gives the bin [0, 0]."""
    if strategy == "uniform":
        return [float(e) for e in np.linspace(0.0, 1.0, n_bins + 1)]
    if len(values) == 0:
        return [0.0, 1.0]
    qs = [k / n_bins for k in range(1, n_bins)]
    if weights is None:
        weights = [1.0] * len(values)
    pairs = sorted(
        ((float(v), float(w)) for v, w in zip(values, weights, strict=True) if w > 0),
        key=lambda vw: vw[0],
    )
    if not pairs:
        return [0.0, 1.0]
    total = sum(w for _, w in pairs)
    cum, acc = [], 0.0
    for _, w in pairs:
        acc += w
        cum.append(acc / total)
    interior = []
    for q in qs:
        i = next((i for i, c in enumerate(cum) if c >= q), len(pairs) - 1)
        interior.append(pairs[i][0])
    # An edge at the largest score of positive weight is dropped; an edge at
    # 0 is kept (the first bin is then [0, 0]), as skcalib._core.binning.
    top = min(1.0, max(v for v, _ in pairs))
    interior = sorted({e for e in interior if e < top})
    return [0.0, *interior, 1.0]


def ref_bin(value, edges, dtype):
    """Right-closed bin of ``value``: first ``j`` with ``value <= e[j + 1]``,
    comparing in ``dtype``."""
    e = np.asarray(edges, dtype=np.float64).astype(dtype)
    v = dtype(value)
    for j in range(len(edges) - 2):
        if v <= e[j + 1]:
            return j
    return len(edges) - 2


def ref_bins(values, targets, weights, edges, dtype):
    """Per-bin [weight, sum w*value, sum w*target, sum w**2, count]."""
    stats = {j: [0.0, 0.0, 0.0, 0.0, 0] for j in range(len(edges) - 1)}
    for v, t, w in zip(values, targets, weights, strict=True):
        s = stats[ref_bin(v, edges, dtype)]
        s[0] += w
        s[1] += w * float(v)
        s[2] += w * float(t)
        s[3] += w * w
        s[4] += 1
    return [stats[j] for j in range(len(edges) - 1)]


def _group_error(bins, total, norm, debias):
    """Error of one group's bins, shares relative to ``total`` weight."""
    if norm == "max":
        return max(
            (abs(s[2] / s[0] - s[1] / s[0]) for s in bins if s[0] > 0), default=0.0
        )
    acc = 0.0
    for w, sv, st, w2, _ in bins:
        if w <= 0:
            continue
        gap = st / w - sv / w
        if norm == "l1":
            acc += w / total * abs(gap)
        else:
            term = gap * gap
            if debias:
                n_eff = w * w / w2
                a = st / w
                term = term - a * (1 - a) / (n_eff - 1) if n_eff >= 2 else 0.0
            acc += w / total * term
    if norm == "l1":
        return acc
    return math.copysign(math.sqrt(abs(acc)), acc)


def _top1(row):
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:
            best = j
    return best


def ref_ece(
    y,
    proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    norm="l1",
    debias=False,
    weights=None,
):
    """Reference calibration error; ``y`` are column indices (0..K-1).

    ``proba`` 1-D (binary, P(class 1)) or 2-D. Top-label is computed per
    predicted class and combined with the class shares (Gupta & Ramdas), not
    pooled, as an independent check of the pooled formula.
    """
    proba = np.asarray(proba)
    dtype = proba.dtype.type
    if proba.ndim == 1:
        proba2 = [[dtype(1) - p, p] for p in proba]
    else:
        proba2 = [list(r) for r in proba]
    n, k = len(proba2), len(proba2[0])
    w = [1.0] * n if weights is None else [float(v) for v in weights]
    total = sum(w)
    if kind == "classwise":
        errors = []
        for c in range(k):
            vals = [r[c] for r in proba2]
            tgts = [int(yi == c) for yi in y]
            edges = ref_edges(vals, n_bins, strategy, weights)
            errors.append(
                _group_error(ref_bins(vals, tgts, w, edges, dtype), total, norm, debias)
            )
        return sum(errors) / k
    pred = [_top1(r) for r in proba2]
    conf = [r[p] for r, p in zip(proba2, pred, strict=True)]
    correct = [int(p == yi) for p, yi in zip(pred, y, strict=True)]
    if kind == "confidence":
        edges = ref_edges(conf, n_bins, strategy, weights)
        return _group_error(
            ref_bins(conf, correct, w, edges, dtype), total, norm, debias
        )
    per_class = []
    for c in range(k):
        idx = [i for i in range(n) if pred[i] == c]
        if not idx:
            continue
        wc = [w[i] for i in idx]
        vals = [conf[i] for i in idx]
        edges = ref_edges(vals, n_bins, strategy, None if weights is None else wc)
        bins = ref_bins(vals, [correct[i] for i in idx], wc, edges, dtype)
        share = sum(wc) / total
        per_class.append((share, _group_error(bins, sum(wc), norm, debias)))
    if norm == "max":
        return max(e for _, e in per_class)
    if norm == "l1":
        return sum(s * e for s, e in per_class)
    sq = sum(s * math.copysign(e * e, e) for s, e in per_class)
    return math.copysign(math.sqrt(abs(sq)), sq)


def vec_ece_l1(y, proba, n_bins=15, kind="confidence", weights=None):
    """Vectorised reference for large inputs (uniform bins, L1): numpy argmax,
    ``np.searchsorted`` on the dtype-rounded edges, ``np.bincount`` sums."""
    interior = np.linspace(0, 1, n_bins + 1)[1:-1].astype(proba.dtype)
    w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=float)

    def err(values, targets, groups, n_groups):
        cells = groups * n_bins + np.searchsorted(interior, values, side="left")
        size = n_groups * n_bins
        gap = np.bincount(cells, weights=w * targets, minlength=size) - np.bincount(
            cells, weights=w * values, minlength=size
        )
        return np.abs(gap).sum() / w.sum()

    zeros = np.zeros(y.size, dtype=int)
    if kind == "classwise":
        k = proba.shape[1]
        return float(np.mean([err(proba[:, c], y == c, zeros, 1) for c in range(k)]))
    pred, conf = proba.argmax(axis=1), proba.max(axis=1)
    groups = pred if kind == "top_label" else zeros
    return float(err(conf, pred == y, groups, proba.shape[1]))
