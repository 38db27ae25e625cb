"""The graph of :class:`~skcalib.ConformalClassifier`: its probabilities (the
scores' own, or those of its fitted ``calibrator_``) and the LAC or top-k
prediction sets of ``predict_set`` at the fitted level."""

import numpy as np

from skcalib._core.xp import to_numpy
from skcalib.export._onnx_scores import GraphScores

__all__ = []  # private module


def check_conformal(cal):
    """Refuse the set rules a graph does not reproduce."""
    name = type(cal).__name__
    if getattr(cal, "randomized_", False):
        raise TypeError(
            f"{name}(method={cal.method!r}) with randomised sets cannot be "
            "exported: the uniform of each test row is a hash of the fitted "
            "seed, the row's position in X and its probabilities, which a graph "
            "applied to a batch cannot reproduce. Export method='lac' or "
            "'top_k' sets."
        )
    if cal.method not in ("lac", "top_k"):
        raise TypeError(
            f"{name}(method={cal.method!r}) cannot be exported: only the LAC "
            "and top-k set rules are (method='lac' or 'top_k')."
        )


def conformal_graph(g, cal, x, n_columns, build):
    """``(proba, sets)`` of a fitted ConformalClassifier on raw scores ``x``;
    ``build(g, calibrator, scores)`` writes an inner calibrator's graph."""
    n_classes = len(cal.classes_)
    sc = GraphScores(g, x, cal.score_type_, n_classes, n_columns)
    inner = cal.calibrator_
    if inner is None:
        proba = sc.proba
    else:
        inner_sc = GraphScores(
            g, sc.raw, inner.score_type_, n_classes, None if sc.one_d else n_columns
        )
        proba = g.cast(build(g, inner, inner_sc), sc.dtype)
    return proba, _sets(g, cal, proba, n_classes)


def _sets(g, cal, proba, n_classes):
    threshold = np.asarray(to_numpy(cal.threshold_), dtype=np.float64)
    if cal.method == "lac":  # 1 - p (dtype of p) <= t (float64)
        gap = g.cast(g.sub(1.0, proba), np.float64)
        sets = g.compare("LessOrEqual", gap, threshold)
    elif threshold.ndim == 0:
        sets = _top_k_marginal(g, proba, float(threshold), n_classes)
    else:  # rank (ties share the best rank) <= t_k
        above = g.compare("Greater", g.unsqueeze(proba, 1), g.unsqueeze(proba, 2))
        count = g.reduce("ReduceSum", g.cast(above, np.int64), 2, keepdims=False)
        rank = g.cast(g.add(count, np.int64(1)), np.float64)
        sets = g.compare("LessOrEqual", rank, threshold)
    if cal.include_top:
        sets = g.op("Or", sets, g.one_hot_rows(g.argmax(proba), n_classes))
    return sets


def _top_k_marginal(g, proba, threshold, n_classes):
    """The ``k`` most probable classes of every row, ``k`` the number of
    ranks ``1..K`` within the threshold, and the classes tied with the
    ``k``-th: ``p >= `` the ``k``-th largest ``p`` (no class when ``k = 0``)."""
    k = int(
        np.count_nonzero(np.arange(1, n_classes + 1, dtype=np.float64) <= threshold)
    )
    if k == 0:
        return g.compare("GreaterOrEqual", proba, np.inf)
    values, _ = g.node(
        "TopK",
        [proba, g.const([k], np.int64, "k")],
        2,
        [g.dtype(proba), np.int64],
        axis=1,
        largest=1,
        sorted=1,
    )
    return g.compare("GreaterOrEqual", proba, g.reduce("ReduceMin", values, 1))
